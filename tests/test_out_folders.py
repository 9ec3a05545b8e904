"""Output folders (vqalib.core.out_folders): `vqalib score --out` and the other writers of folders refuse a folder
they did not write, in a throwaway clone, and leave it and `git status` as they were; their own folder is
replaced whole, only when its manifest lists every file in it unchanged (a user's file, an edit, a link or a pipe is
named and kept), a committed one only by `vqalib reproduce`, and what a killed write left beside it is removed."""

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from vqalib.compendium import scorecard_files
from vqalib.compendium.cli import main
from vqalib.core.io import project_root
from vqalib.core.out_folders import MANIFEST, PARTIAL, UnsafeOutput, check_out, record_written, replace_folder
from vqalib.core.report import IN_PLACE_ENV
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
    assert {p.name for p in out.iterdir()} == first  # replaced whole, its manifest among them
    assert json.loads((out / "scorecard.json").read_text())["coverage"]["matched"] == 2
    assert sorted(p.name for p in (tmp_path / "scores").iterdir()) == [".m.notours1", "m"]
    (out / "notes.txt").write_text("my notes\n")  # a file a scorecard does not write: replacing would delete it
    with pytest.raises(UnsafeOutput, match=r"it holds 1 file vqalib score did not write there or that changed since "
                                           r"\(notes\.txt \(not written by vqalib score\)\)"):
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


def _files(folder):
    """Every entry under ``folder``, links not followed: a file's bytes, a link's target, or what it is."""
    found = {}
    for top, folders, names in os.walk(folder):
        for name in folders + names:
            path = Path(top) / name
            key = path.relative_to(folder).as_posix()
            found[key] = (("link", os.readlink(path)) if path.is_symlink() else path.read_bytes() if path.is_file()
                          else "folder" if path.is_dir() else "other")
    return found


def _scorecard(folder, text="1"):
    """A stand-in for a scorecard's files (no scoring): the marker, a table, its figure and a stylesheet."""
    (folder / "scorecard.json").write_text(json.dumps({"format": scorecard_files.FORMAT, "model": "m", "n": text}))
    (folder / "vizwiz-lf_table01_word_counts.csv").write_text(f"value\n{text}\n")
    (folder / "vizwiz-lf_table01_word_counts.md").write_text(f"# Table 1\n\n{text}\n")
    (folder / "table04_reference_shift.png").write_bytes(b"\x89PNG\r\n" + text.encode())
    (folder / "table04_reference_shift.alt.txt").write_text("a figure\n")
    (folder / "assets").mkdir()
    (folder / "assets" / "site.css").write_text("body {}\n")


def _answers(tmp_path):
    path = tmp_path / "answers.csv"  # never read: the --out check comes first
    path.write_text("question_id,answer\n1,a dog\n")
    return path


def _refused(capsys, option, folder):
    """The one-line message of a refused command, after checking that it is one line and no traceback."""
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option} {folder}: refused, ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_a_rescore_refuses_a_scorecard_holding_the_users_files(tmp_path, capsys):
    out = tmp_path / "S"
    replace_folder(out, kind=scorecard_files.SCORECARD, fill=_scorecard)
    mine = {"my_notes.md": b"# my notes\n", "results.csv": b"model,score\nmine,1\n", "holiday.png": b"\x89PNG beach",
            "paper.alt.txt": b"my own alt text\n"}
    for name, data in mine.items():
        (out / name).write_bytes(data)
    before = _files(out)
    assert main(["score", str(_answers(tmp_path)), "--dataset", "vizwiz-lf", "--model", "m", "--out", str(out)]) == 1
    err = _refused(capsys, "vqalib score --out", out)
    assert "it holds 4 files vqalib score did not write there" in err
    for name in mine:
        assert f"{name} (not written by vqalib score)" in err
    with pytest.raises(UnsafeOutput, match="holiday.png"):  # the writer itself checks again, under its lock
        replace_folder(out, kind=scorecard_files.SCORECARD, fill=_scorecard)
    assert _files(out) == before


def test_a_new_leaderboard_refuses_an_old_one_holding_the_users_files(tmp_path, capsys):
    from vqalib.compendium import leaderboard_files

    def board(folder):
        (folder / "leaderboard.json").write_text(json.dumps({"format": leaderboard_files.FORMAT}))
        for name in ("leaderboard_vizwiz-lf.csv", "leaderboard_vizwiz-lf.md", "pairs_vizwiz-lf.csv",
                     "leaderboard_vizwiz-lf_rouge.png", "index.html"):
            (folder / name).write_text(name)

    out = tmp_path / "lb"
    replace_folder(out, kind=leaderboard_files.LEADERBOARD, fill=board)
    mine = ("leaderboard_mynotes.md", "pairs_draft.csv", "leaderboard_talk.png")
    for name in mine:
        (out / name).write_text(f"my own {name}\n")
    before = _files(out)
    assert main(["leaderboard", "--out", str(out)]) == 1
    err = _refused(capsys, "vqalib leaderboard --out", out)
    assert all(f"{name} (not written by vqalib leaderboard)" in err for name in mine)
    with pytest.raises(UnsafeOutput, match="pairs_draft.csv"):
        replace_folder(out, kind=leaderboard_files.LEADERBOARD, fill=board)
    assert _files(out) == before


def test_a_changed_hidden_or_special_file_is_named(tmp_path):
    out = replace_folder(tmp_path / "S", kind=scorecard_files.SCORECARD, fill=_scorecard)
    (out / "vizwiz-lf_table01_word_counts.csv").write_text("value\n2\n")  # same size, other bytes
    (out / ".hidden").write_text("mine\n")
    os.mkfifo(out / "pipe")
    (out / "assets" / "code.css").symlink_to(tmp_path / "elsewhere.css")
    before = _files(out)
    with pytest.raises(UnsafeOutput) as refused:
        check_out(out, kind=scorecard_files.SCORECARD)
    for named in ("vizwiz-lf_table01_word_counts.csv (changed since vqalib score wrote it)",
                  ".hidden (not written by vqalib score)", "pipe (a named pipe (FIFO))",
                  "assets/code.css (a symbolic link)"):
        assert named in str(refused.value)
    assert _files(out) == before


def test_its_own_folder_is_replaced_and_the_manifest_is_the_same_bytes_each_time(tmp_path):
    out = replace_folder(tmp_path / "a", kind=scorecard_files.SCORECARD, fill=_scorecard)
    first = (out / MANIFEST).read_bytes()
    manifest = json.loads(first)
    assert manifest["format"] == "vqalib-manifest/1" and manifest["written_by"] == "scorecard"
    files = {k: v for k, v in _files(out).items() if v != "folder" and k != MANIFEST}
    assert manifest["files"] == {k: {"sha256": hashlib.sha256(v).hexdigest(), "size": len(v)} for k, v in files.items()}
    replace_folder(out, kind=scorecard_files.SCORECARD, fill=lambda folder: _scorecard(folder, "2"))
    assert json.loads((out / "scorecard.json").read_text())["n"] == "2"
    replace_folder(out, kind=scorecard_files.SCORECARD, fill=_scorecard)
    assert (out / MANIFEST).read_bytes() == first
    other = replace_folder(tmp_path / "elsewhere" / "b", kind=scorecard_files.SCORECARD, fill=_scorecard)
    assert (other / MANIFEST).read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "elsewhere"]


def test_a_folder_an_older_vqalib_wrote_is_refused_and_left_as_it_was(tmp_path, capsys):
    old = tmp_path / "old"
    old.mkdir()
    _scorecard(old)  # a scorecard's files, as vqalib wrote them before manifests
    before = _files(old)
    assert main(["score", str(_answers(tmp_path)), "--dataset", "vizwiz-lf", "--model", "m", "--out", str(old)]) == 1
    err = _refused(capsys, "vqalib score --out", old)
    assert f"it has no {MANIFEST}: an older vqalib wrote it without listing its files" in err
    assert "move your files out of it and delete it, or give a new folder" in err
    assert _files(old) == before


@pytest.mark.parametrize("manifest, why", [
    ("{", "cannot be read"),
    (json.dumps({"format": "other/1", "files": {}}), "is not tagged 'vqalib-manifest/1'"),
    (json.dumps({"format": "vqalib-manifest/1", "written_by": "leaderboard", "files": {}}),
     "says a 'leaderboard' wrote the folder, not a scorecard"),
    (json.dumps({"format": "vqalib-manifest/1", "written_by": "scorecard",
                 "files": {"../x.csv": {"sha256": "0" * 64, "size": 1}}}),
     "entry '../x.csv' is not a relative path"),
])
def test_a_manifest_that_is_not_one_refuses_the_folder(tmp_path, manifest, why):
    out = tmp_path / "S"
    out.mkdir()
    (out / MANIFEST).write_text(manifest)
    with pytest.raises(UnsafeOutput, match=re.escape(f"its {MANIFEST} ") + ".*" + re.escape(why)):
        check_out(out, kind=scorecard_files.SCORECARD)


def test_score_refuses_the_committed_scorecard(clone, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(clone)
    monkeypatch.delenv(IN_PLACE_ENV, raising=False)
    target = clone / "scores" / "llava-released"
    before = _files(target)
    assert main(["score", str(_answers(tmp_path)), "--dataset", "vizwiz-lf", "--model", "other", "--out",
                 "scores/llava-released"]) == 1
    err = _refused(capsys, "vqalib score --out", "scores/llava-released")
    assert re.search(r"it holds \d+ files tracked by git \(e\.g\. scores/llava-released/", err), err
    assert "only `vqalib reproduce` rewrites" in err
    assert _files(target) == before and _git_status(clone) in ("", "?? mine/\n")


def _git_repository(folder):
    """A tiny git checkout whose committed ``scores/card`` a vqalib older than manifests wrote."""
    card = folder / "scores" / "card"
    card.mkdir(parents=True)
    _scorecard(card)
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "card"], check=True)
    return card


def test_reproduce_alone_replaces_a_committed_folder_and_only_when_committed_unmodified(tmp_path, monkeypatch):
    card = _git_repository(tmp_path / "repo")
    kind = scorecard_files.SCORECARD
    before = _files(card)
    monkeypatch.delenv(IN_PLACE_ENV, raising=False)
    with pytest.raises(UnsafeOutput, match=r"it holds 6 files tracked by git \(e\.g\. scores/card/"):
        replace_folder(card, kind=kind, fill=_scorecard)
    monkeypatch.setenv(IN_PLACE_ENV, "1")  # as `vqalib reproduce` sets it for its kernels
    (card / "vizwiz-lf_table01_word_counts.md").write_text("edited\n")
    (card / "notes.txt").write_text("mine\n")
    with pytest.raises(UnsafeOutput, match=r"word_counts\.md \(modified since committed\)") as refused:
        replace_folder(card, kind=kind, fill=_scorecard)
    assert "notes.txt (not tracked by git)" in str(refused.value)
    assert {k: v for k, v in _files(card).items() if k != "notes.txt"} != before
    (card / "notes.txt").unlink()
    (card / "vizwiz-lf_table01_word_counts.md").write_bytes(before["vizwiz-lf_table01_word_counts.md"])
    replace_folder(card, kind=kind, fill=lambda folder: _scorecard(folder, "2"))  # committed, unmodified: replaced
    assert json.loads((card / MANIFEST).read_text())["written_by"] == "scorecard"
    replace_folder(card, kind=kind, fill=_scorecard)  # now by its manifest
    assert {k: v for k, v in _files(card).items() if k != MANIFEST} == before


def test_a_killed_write_is_cleaned_only_when_ours(tmp_path):
    kind = scorecard_files.SCORECARD
    out = replace_folder(tmp_path / "card", kind=kind, fill=_scorecard)
    set_aside = tmp_path / ".card.old"  # killed between its two renames: the earlier folder, whole, with its manifest
    shutil.copytree(out, set_aside)
    foreign = tmp_path / ".card.notours1"  # a marker, but files no manifest lists
    foreign.mkdir()
    _scorecard(foreign)
    replace_folder(out, kind=kind, fill=_scorecard)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".card.notours1", "card"]


def test_a_classifier_folder_other_than_the_committed_one_follows_its_manifest(tmp_path):
    from vqalib.papers.vizwiz_lf.classifier import MODEL_DIR
    from vqalib.papers.vizwiz_lf.classifier_fits import MODELS

    assert check_out(MODEL_DIR, kind=MODELS) == MODEL_DIR  # committed, rewritten in place by `vqalib classify train`
    out = tmp_path / "models"
    (out / "cv").mkdir(parents=True)
    written = [out / MODELS.marker, out / "cv" / f"{'a' * 32}.npz"]
    for path in written:
        path.write_bytes(b"fitted")
    record_written(out, kind=MODELS, paths=written)
    assert check_out(out, kind=MODELS) == out
    (out / "cv" / "mine.npz").write_bytes(b"my own")
    with pytest.raises(UnsafeOutput, match=r"cv/mine\.npz \(not written by vqalib classify train\)"):
        check_out(out, kind=MODELS)
