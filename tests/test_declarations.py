"""The papers' declarations (vqalib.core.declarations): read as data, every entry usable, bad ones named."""

import pytest

from vqalib.core import upstream, declarations, registry
from vqalib.core.io import project_root


def test_each_paper_folder_declares_its_paper_its_upstream_files_and_its_entries():
    folders = sorted(p.parent.name for p in declarations.PAPERS_DIR.glob(f"*/{declarations.FILE_NAME}"))
    assert folders == ["afgv", "commvqa", "vizwiz_lf"]
    assert list(declarations.papers()) == ["VizWiz-LF", "AFGV", "CommVQA"]  # the site's and README's order
    assert {s.paper for s in declarations.entries()} == set(declarations.papers())
    assert [s.notebook for s in declarations.entries()] == sorted(s.notebook for s in declarations.entries())
    assert len(registry.TABLES) + len(registry.FIGURES) == len(declarations.entries())
    keys = {f["key"] for f in declarations.upstream()}
    assert keys == {f.key for f in upstream.FILES if f.dataset != "lave"}


def test_core_holds_no_registry_entry_of_its_own():
    core = project_root() / "vqalib" / "core"
    assert not any("paper_table=" in p.read_text(encoding="utf-8") for p in core.rglob("*.py"))


_ENTRY = '[[table]]\nstem = "x_table"\nnotebook = "01_x"\nreproduces = ""\ntitle = "t"\nbuilder = "m.f"\n'


@pytest.mark.parametrize("read, text, message", [
    ("entries", _ENTRY + 'colour = "red"\n', r"x_table: .*colour"),
    ("entries", _ENTRY + '[table.model_derived]\ncolumns = [["value", 0.1]]\nwhy = "@nowhere"\n',
     r"x_table, model_derived.why: no \[reasons\].nowhere"),
    ("entries", _ENTRY + '[table.tolerance]\nunit = 2\n', r"x_table, field tolerance: .*unit"),
    ("setting", '[[setting]]\nname = "VQALIB_X"\ndefault = "unset"\n',
     r"\[\[setting\]\] VQALIB_X: missing field\(s\) \['meaning'\]"),
    ("answer_format", '[[answer_format]]\nname = "f"\nshape = "s"\ncolumns = ["a"]\nanswer = "a"\nsheet = 1\n',
     r"\[\[answer_format\]\] f: unknown field\(s\) \['sheet'\]"),
])
def test_a_bad_declaration_is_an_error_naming_the_file_the_entry_and_the_field(tmp_path, monkeypatch, read, text,
                                                                               message):
    folder = tmp_path / "somepaper"
    folder.mkdir()
    (folder / declarations.FILE_NAME).write_text('[paper]\nname = "P"\ntitle = "T"\norder = 1\n' + text, encoding="utf-8")
    monkeypatch.setattr(declarations, "PAPERS_DIR", tmp_path)
    declarations._read.cache_clear()
    declarations.entries.cache_clear()
    try:
        with pytest.raises(ValueError, match=message) as error:
            declarations.entries() if read == "entries" else declarations.extensions(read)
        assert str(folder / declarations.FILE_NAME) in str(error.value)
    finally:
        monkeypatch.undo()
        declarations._read.cache_clear()
        declarations.entries.cache_clear()


def test_papers_declare_their_settings_judge_prompt_and_result_format():
    from vqalib.core import answer_formats, config
    from vqalib.core.judge import prompts

    declared = {b["name"]: b["paper"] for b in declarations.extensions("setting")}
    assert declared == {"VQALIB_COMMVQA_IMAGES": "CommVQA", "VQALIB_WORD_VECTORS": "AFGV", "VQALIB_GQA_IMAGES": "AFGV"}
    assert set(declared) <= set(config.SETTINGS)
    assert config.SETTINGS["VQALIB_JUDGE_PROMPT"].choices == ("vizwiz-lf", "lave-reference")
    assert config.SETTINGS["VQALIB_JUDGE_PROMPT"].default == "vizwiz-lf"
    assert prompts.declared_prompts()["vizwiz-lf"].paper == "VizWiz-LF"
    # declared formats before the generic keyed JSON and the catch-all
    assert list(answer_formats.FORMATS)[-4:] == ["vizwiz-lf-release", "commvqa-results", "keyed-json", "plain"]
