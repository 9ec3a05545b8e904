"""Output folders (vqalib.core.out_folders): `vqalib score --out` and the other writers of folders refuse a folder
they did not write, in a throwaway clone, and leave it and `git status` as they were; their own folder is
replaced whole, and what a killed write left beside it is removed."""

import json
import shutil
import subprocess

import pandas as pd
import pytest

from vqalib.compendium import scorecard_files
from vqalib.compendium.cli import main
from vqalib.core.io import project_root
from vqalib.core.out_folders import PARTIAL, UnsafeOutput, check_out, replace_folder
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

ROOT = project_root()
QUICK = ["--no-compare", "--n-resamples", "20"]


def _snapshot(folder):
    """Every path under ``folder`` with its size and modification time."""
    return sorted((str(p.relative_to(folder)), p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*"))


def _git_status(folder):
    return subprocess.run(["git", "-C", str(folder), "status", "--porcelain"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if not (ROOT / ".git").exists():
        pytest.skip("the project is not a git checkout: nothing to clone")
    folder = tmp_path_factory.mktemp("clone") / "vqa"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(folder)], check=True)
    return folder


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    released = load_vizwiz_lf().answers
    path = tmp_path_factory.mktemp("answers") / "answers.csv"
    released[released["source"] == "LLaVA"][["question_id", "answer"]].head(3).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("out", [".", "figures", "notebooks", "data", "mine", "$HOME", "/", ".git", ".."])
def test_score_refuses_a_folder_it_did_not_write(out, clone, answers, tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "settings.ini").write_text("mine\n")
    monkeypatch.setenv("HOME", str(home))  # a throwaway home, never the real one
    monkeypatch.chdir(clone)
    (clone / "mine").mkdir(exist_ok=True)
    (clone / "mine" / "results.txt").write_text("my own results\n")
    given = str(home) if out == "$HOME" else out
    target = (clone / given).resolve()
    before = _snapshot(target) if target != target.parent else None  # "/" is not walked
    assert main(["score", str(answers), "--dataset", "vizwiz-lf", "--model", "m", "--out", given, *QUICK]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: vqalib score --out {given}: refused, "), err
    if before is not None:
        assert _snapshot(target) == before
    assert _git_status(clone) in ("", "?? mine/\n")
    assert (clone / ".git").is_dir() and (home / ".config" / "settings.ini").read_text() == "mine\n"


def test_messages_say_why(clone, monkeypatch, tmp_path):
    monkeypatch.chdir(clone)
    kind = scorecard_files.SCORECARD
    for out, why in [(".", "it is the root of a git repository"), ("/", "it is the filesystem root"),
                     ("figures", r"it holds \d+ files tracked by git \(e\.g\. figures/"), ("..", "it holds the root of a git repository"),
                     (".git", "inside the git repository's own folder")]:
        with pytest.raises(UnsafeOutput, match=why):
            check_out(out, kind=kind)
    (tmp_path / "a file").write_text("x")
    with pytest.raises(UnsafeOutput, match="it is a file, not a folder"):
        check_out(tmp_path / "a file", kind=kind)
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeOutput, match="it is a symbolic link"):
        check_out(tmp_path / "link", kind=kind)
    (tmp_path / "empty").mkdir()
    assert check_out(tmp_path / "empty", kind=kind) == tmp_path / "empty"
    assert check_out(tmp_path / "new" / "card", kind=kind) == tmp_path / "new" / "card"


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_a_new_folder_then_the_same_folder_again(answers, tmp_path, capsys):
    out = tmp_path / "scores" / "m"
    assert main(["score", str(answers), "--dataset", "vizwiz-lf", "--model", "m", "--out", str(out), *QUICK]) == 0
    first = {p.name for p in out.iterdir()}
    assert json.loads((out / "scorecard.json").read_text())["format"] == scorecard_files.FORMAT
    (out / "stale.csv").write_text("a table an earlier scorecard had\n")  # a name the scorecard writes
    left = tmp_path / "scores" / ".m.k1lled00"  # what a SIGKILL during a write leaves
    left.mkdir()
    (left / PARTIAL).touch()
    (left / "scorecard.json").write_text("{")
    foreign = tmp_path / "scores" / ".m.notours1"  # same pattern, not ours: kept
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    other = pd.read_csv(answers).head(2)
    other.to_csv(tmp_path / "two.csv", index=False)
    assert main(["score", str(tmp_path / "two.csv"), "--dataset", "vizwiz-lf", "--model", "m", "--out", str(out),
                 *QUICK]) == 0
    assert "scored on 2 of 600" in capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == first  # replaced whole: the stale table is gone
    assert json.loads((out / "scorecard.json").read_text())["coverage"]["matched"] == 2
    assert sorted(p.name for p in (tmp_path / "scores").iterdir()) == [".m.notours1", "m"]
    (out / "notes.txt").write_text("my notes\n")  # a file a scorecard does not write: replacing would delete it
    with pytest.raises(UnsafeOutput, match=r"it holds 1 files a scorecard does not write \(notes\.txt\)"):
        check_out(out, kind=scorecard_files.SCORECARD)


def test_replace_folder_keeps_the_old_folder_when_the_writer_fails(tmp_path):
    kind = scorecard_files.SCORECARD
    out = tmp_path / "card"

    def fill(folder, text="1"):
        (folder / "scorecard.json").write_text(json.dumps({"format": scorecard_files.FORMAT, "n": text}))

    replace_folder(out, kind=kind, fill=fill)

    def broken(folder):
        fill(folder, "2")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        replace_folder(out, kind=kind, fill=broken)
    assert json.loads((out / "scorecard.json").read_text())["n"] == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card"]


def test_the_site_export_import_and_classifier_folders_are_guarded(tmp_path, capsys):
    from vqalib.compendium.site import build

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "results.txt").write_text("my own results\n")
    before = _snapshot(mine)
    with pytest.raises(UnsafeOutput, match="is not a reviewer site"):
        build(out=mine)
    for argv in (["export", "lmms-eval", "--dataset", "vizwiz-lf", "--out", str(mine)],
                 ["classify", "train", "--out", str(mine)]):
        assert main(argv) == 1 and str(mine) in capsys.readouterr().err
    not_a_run = mine / "results.txt"
    assert main(["import", str(not_a_run), "--dataset", "vizwiz-lf", "--model", "m", "--out", str(not_a_run),
                 "--overwrite"]) == 1
    assert "it is not a run file of vqalib" in capsys.readouterr().err
    assert _snapshot(mine) == before
    out = tmp_path / "tasks"
    assert main(["export", "lmms-eval", "--dataset", "afgv", "--out", str(out)]) == 0
    assert main(["export", "lmms-eval", "--dataset", "commvqa", "--out", str(out)]) == 0  # its own folder, again
    assert (out / "vqalib-export.json").is_file()


def test_a_scorecard_written_before_the_format_tag_is_still_replaced(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(ROOT / "scores" / "llava-released", old)
    data = json.loads((old / "scorecard.json").read_text())
    data.pop("format", None)
    (old / "scorecard.json").write_text(json.dumps(data))
    assert check_out(old, kind=scorecard_files.SCORECARD) == old
    (old / "scorecard.json").write_text(json.dumps({"model": "x"}))  # not a scorecard's keys
    with pytest.raises(UnsafeOutput, match="is not a scorecard"):
        check_out(old, kind=scorecard_files.SCORECARD)
