"""`vqalib export` (vqalib.runner.toolkit_export): lmms-eval task folders and VLMEvalKit TSVs with the runner's
prompts, deterministic, every question once; a VLMEvalKit prediction file built from the TSV scores like a plain file.
The folder accumulates exports, only where its manifest lists every file unchanged, and never through a link."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from vqalib.compendium import score as scoring
from vqalib.compendium.cli import main
from vqalib.core import out_folders
from vqalib.core.out_folders import MANIFEST, UnsafeOutput
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf
from vqalib.runner import strategies
from vqalib.runner.images import ImageError
from vqalib.runner.questions import dataset_items
from vqalib.runner.toolkit_export import export_inspect, export_lmms_eval, export_vlmevalkit


def placeholder_images(folder, names):
    """Tiny PNGs under the names the items' images have (the toolkit tests need files, not pictures)."""
    folder.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (4, 4), "white")
    for name in names:
        image.save(folder / name, format="PNG")
    return folder


def _yaml(path):
    """An exported task's YAML parsed back, lmms-eval's ``!function`` tags as text."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)


def _files(folder):
    """Every entry under ``folder``, links not followed: a file's bytes, a link's target, or what it is."""
    found = {}
    for top, folders, names in os.walk(folder):
        for name in folders + names:
            path = Path(top) / name
            key = path.relative_to(folder).as_posix()
            found[key] = (("link", os.readlink(path)) if path.is_symlink() else path.read_bytes() if path.is_file()
                          else "folder")
    return found


def vizwiz_image_names():
    return [url.rsplit("/", 1)[-1] for url in dataset_items("vizwiz-lf")["image"]]


def test_lmms_eval_tasks_are_deterministic_and_carry_the_runner_prompts(tmp_path):
    first = export_lmms_eval("vizwiz-lf", out=tmp_path / "a")
    assert [p.stem for p in first] == ["vizwiz_lf_vanilla", "vizwiz_lf_abstention"]
    export_lmms_eval("vizwiz-lf", out=tmp_path / "b")  # a second export, elsewhere: the same bytes but its own path
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 8 and files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*")
                                               if p.is_file())
    for name in (f for f in files if f.name != MANIFEST):  # the manifest holds the hashes of the YAML, path and all
        a, b = (tmp_path / "a" / name).read_bytes(), (tmp_path / "b" / name).read_bytes()
        assert a.replace(str(tmp_path / "a").encode(), b"DIR") == b.replace(str(tmp_path / "b").encode(), b"DIR")
    folder = tmp_path / "a" / "vizwiz_lf_abstention"
    docs = [json.loads(line) for line in (folder / "vizwiz_lf_abstention.jsonl").read_text().splitlines()]
    assert len(docs) == 600 and len({d["item_id"] for d in docs}) == 600
    assert docs[0]["prompt"] == strategies.abstention_prompt(docs[0]["question"])
    yaml = _yaml(folder / "vizwiz_lf_abstention.yaml")
    assert yaml["dataset_path"] == "json" and yaml["output_type"] == "generate_until"
    assert yaml["process_results"] == "!function utils.process_results"
    assert yaml["dataset_kwargs"]["data_files"]["test"] == str(folder / "vizwiz_lf_abstention.jsonl")
    assert len(yaml["metadata"]["data_sha256"]) == 64
    utils = (folder / "utils.py").read_text()
    assert 'METRIC = "words"' in utils and '"item_id": doc["item_id"]' in utils
    vanilla = [json.loads(line) for line in
               (tmp_path / "a" / "vizwiz_lf_vanilla" / "vizwiz_lf_vanilla.jsonl").read_text().splitlines()]
    assert vanilla[0]["prompt"] == strategies.vanilla_prompt(vanilla[0]["question"])


def test_afgv_and_commvqa_tasks(tmp_path):
    afgv = export_lmms_eval("afgv", out=tmp_path / "afgv")
    assert [p.stem for p in afgv] == ["afgv_simplified", "afgv_baseline", "afgv_complex"]
    docs = [json.loads(line) for line in (tmp_path / "afgv" / "afgv_baseline" / "afgv_baseline.jsonl").open()]
    assert {d["tier"] for d in docs} == {"baseline"} and docs[0]["prompt"].endswith(
        "Answer the question using a single word or phrase.")
    commvqa = export_lmms_eval("commvqa", out=tmp_path / "c")
    contextual = json.loads((tmp_path / "c" / "commvqa_contextual" / "commvqa_contextual.jsonl").open().readline())
    assert "website" in contextual["prompt"] and contextual["image"].startswith("missing:")
    assert [p.stem for p in commvqa] == ["commvqa_baseline", "commvqa_contextual"]


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_vlmevalkit_tsv_round_trip(tmp_path):
    images = placeholder_images(tmp_path / "img", vizwiz_image_names())
    tsvs = export_vlmevalkit("vizwiz-lf", out=tmp_path / "LMUData", images=images)
    assert [p.name for p in tsvs] == ["VizwizLfVanilla_openended.tsv", "VizwizLfAbstention_openended.tsv"]
    table = pd.read_csv(tsvs[0], sep="\t", dtype=str)
    assert len(table) == 600 and table["item_id"].is_unique and table["index"].tolist()[:2] == ["0", "1"]
    assert table.loc[0, "question"] == strategies.vanilla_prompt(
        load_vizwiz_lf(sources=["expert"]).answers.set_index("question_id").loc[int(table.loc[0, "question_id"]),
                                                                                  "question"])
    # VLMEvalKit's infer_data_job keeps the dataset's columns, drops `image`, adds `prediction`
    answers = load_vizwiz_lf().answers
    llava = answers[answers["source"] == "LLaVA"].set_index(answers.loc[answers["source"] == "LLaVA", "question_id"]
                                                              .astype(str))["answer"]
    predictions = table.assign(prediction=table["item_id"].map(llava))
    path = tmp_path / "LLaVA_VizwizLfVanilla_openended.xlsx"
    predictions.to_excel(path, index=False)
    plain = tmp_path / "plain.csv"
    pd.DataFrame({"question_id": llava.index, "answer": llava.to_numpy()}).to_csv(plain, index=False)
    kit = scoring.score([path], dataset="vizwiz-lf", model="M", compare=False, n_resamples=50)
    ref = scoring.score([plain], dataset="vizwiz-lf", model="M", compare=False, n_resamples=50)
    assert kit.sources[0]["format"] == "vlmevalkit"
    for stem in ("vizwiz-lf_table01_word_counts", "vizwiz-lf_table04_full_set_bootstrap"):
        pd.testing.assert_frame_equal(kit.tables[stem], ref.tables[stem])
    by_index = predictions.drop(columns=["item_id", "question_id"])  # joined on `index` through the exported TSV
    by_index.to_csv(tmp_path / "p.tsv", sep="\t", index=False)
    joined = scoring.score([tmp_path / "p.tsv"], dataset="vizwiz-lf", model="M", compare=False, n_resamples=50,
                           task_data=tsvs[0])
    pd.testing.assert_frame_equal(joined.tables["vizwiz-lf_table01_word_counts"],
                                  ref.tables["vizwiz-lf_table01_word_counts"])


def test_a_missing_image_is_named(tmp_path):
    images = placeholder_images(tmp_path / "img", vizwiz_image_names()[1:])  # the first image absent
    with pytest.raises(ImageError, match=r"item 1: VizWiz_\w+\.jpg is not in"):
        export_vlmevalkit("vizwiz-lf", out=tmp_path / "LMUData", images=images)


def test_vlmevalkit_download_error_names_images_and_what_the_folder_holds(tmp_path, monkeypatch):
    """Offline, the export stops at the first image download; the error says --images solves it and what goes there."""
    from vqalib.runner.images import ImageStore

    def offline(self, source):
        raise ImageError(f"{source}: download failed (URLError: no network)")
    monkeypatch.setattr(ImageStore, "read_bytes", offline)
    with pytest.raises(ImageError, match=r"--images FOLDER, a folder holding each item's image file under its own "
                                         r"name \(e\.g\. VizWiz_\w+\.jpg\)"):
        export_vlmevalkit("vizwiz-lf", out=tmp_path / "out")


def test_an_export_never_writes_through_a_planted_link(tmp_path, capsys):
    out = tmp_path / "E"
    export_lmms_eval("vizwiz-lf", out=out)
    other = tmp_path / "other"  # someone else's folder, linked in place of a task folder
    other.mkdir()
    (other / "utils.py").write_text("my own code\n")
    for path in (out / "vizwiz_lf_vanilla").iterdir():
        path.unlink()
    (out / "vizwiz_lf_vanilla").rmdir()
    (out / "vizwiz_lf_vanilla").symlink_to(other)
    before, theirs = _files(out), _files(other)
    assert main(["export", "lmms-eval", "--dataset", "vizwiz-lf", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: vqalib export --out {out}: refused, ") and err.count("\n") == 1, err
    assert "vizwiz_lf_vanilla (a symbolic link)" in err and "Traceback" not in err
    assert _files(out) == before and _files(other) == theirs


def test_a_link_planted_after_the_check_is_not_followed(tmp_path, monkeypatch):
    out = tmp_path / "E"
    export_lmms_eval("vizwiz-lf", out=out)
    other = tmp_path / "other"
    other.mkdir()
    real_check, checks = out_folders.check_out, []

    def check_then_plant(path, *, kind):  # the link appears after the last check (under the lock), before the writes
        checked = real_check(path, kind=kind)
        checks.append(path)
        if len(checks) == 2:
            os.rename(out / "vizwiz_lf_vanilla", tmp_path / "moved")
            (out / "vizwiz_lf_vanilla").symlink_to(other)
        return checked

    monkeypatch.setattr(out_folders, "check_out", check_then_plant)
    with pytest.raises(UnsafeOutput, match=r"vizwiz_lf_vanilla is a symbolic link \(to .*other\), not a folder"):
        export_lmms_eval("vizwiz-lf", out=out)
    assert list(other.iterdir()) == []


def test_an_export_refuses_files_it_did_not_write_or_that_changed(tmp_path):
    out = tmp_path / "E"
    export_lmms_eval("vizwiz-lf", out=out)
    export_inspect("vizwiz-lf", out=out)  # exports accumulate in one folder, one manifest
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert {"vqalib-export.json", "vizwiz_lf_vanilla/utils.py", "vizwiz_lf_vanilla.py"} <= set(listed)
    assert "pending" not in json.loads((out / MANIFEST).read_text())
    (out / "notes.md").write_text("mine\n")
    (out / "vizwiz_lf_abstention" / "utils.py").write_text("# my edit\n")
    before = _files(out)
    with pytest.raises(UnsafeOutput) as refused:
        export_lmms_eval("vizwiz-lf", out=out)
    assert "notes.md (not written by vqalib export)" in str(refused.value)
    assert "vizwiz_lf_abstention/utils.py (changed since vqalib export wrote it)" in str(refused.value)
    assert _files(out) == before


def test_an_interrupted_export_is_written_again(tmp_path, monkeypatch):
    out = tmp_path / "E"
    real = out_folders.write_inside
    calls = []

    def killed(folder, relative, data):  # stopped after the pending manifest and one file, a temporary file left
        calls.append(relative)
        if len(calls) == 3:
            (Path(folder) / relative).parent.mkdir(parents=True, exist_ok=True)
            (Path(folder) / relative).with_name(f".{Path(relative).name}.1a2b3c4d.part").write_bytes(data[:5])
            raise KeyboardInterrupt
        return real(folder, relative, data)

    monkeypatch.setattr(out_folders, "write_inside", killed)
    with pytest.raises(KeyboardInterrupt):
        export_lmms_eval("vizwiz-lf", out=out)
    assert "pending" in json.loads((out / MANIFEST).read_text())
    monkeypatch.setattr(out_folders, "write_inside", real)
    export_lmms_eval("vizwiz-lf", out=out)
    manifest = json.loads((out / MANIFEST).read_text())
    assert "pending" not in manifest and not list(out.rglob("*.part"))
    assert set(manifest["files"]) == {k for k, v in _files(out).items() if v != "folder"} - {MANIFEST}


def test_a_path_with_a_yaml_comment_sign_stays_whole(tmp_path):
    out = tmp_path / "my tasks #1: 'v2'" / "E"
    folder = export_lmms_eval("vizwiz-lf", out=out)[0].parent
    yaml = _yaml(folder / "vizwiz_lf_vanilla.yaml")
    assert yaml["dataset_kwargs"]["data_files"]["test"] == str(folder / "vizwiz_lf_vanilla.jsonl")
    assert yaml["task"] == "vizwiz_lf_vanilla" and yaml["generation_kwargs"]["max_new_tokens"] == 512
    assert yaml["metric_list"][0]["metric"] == "words" and yaml["metadata"]["vqalib_version"]
