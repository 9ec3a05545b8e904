"""Outside files are opened only when regular (vqalib.core.io.open_regular): a named pipe, a folder or a file
over a cap is refused at once with the path and what it is, never waited on; a path a message names is shown relative
to the project (vqalib.core.io.shown_path)."""

import os

import pytest

from vqalib.core import io


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"abc")
    assert io.read_regular(path, what="test file") == b"abc"
    assert io.read_regular(path, what="test file", max_bytes=3) == b"abc"


@pytest.mark.parametrize("kind", ["fifo", "folder", "too large"])
def test_what_is_not_a_regular_file_is_refused_by_name(tmp_path, kind):
    path = tmp_path / "x"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"x" * 10)
    expected = {"fifo": "named pipe", "folder": "directory", "too large": "over the cap of 5"}[kind]
    with pytest.raises(io.NotRegularFile, match=f"{path}: cannot read this test file: .*{expected}"):
        io.read_regular(path, what="test file", max_bytes=5)


def test_strict_readers_and_hashing_refuse_a_pipe(tmp_path):
    path = tmp_path / "data.json"
    os.mkfifo(path)
    for read in (io.read_json, io.read_csv_text, io.sha256_of):
        with pytest.raises(io.NotRegularFile, match="named pipe"):
            read(path)


def test_fetch_names_a_pipe_in_the_mirror_and_in_the_data_folder(tmp_path):
    from vqalib.core import fetch
    from vqalib.core.upstream import FILES

    spec = FILES[0]
    mirror, data = tmp_path / "mirror", tmp_path / "data"
    (mirror / spec.key).parent.mkdir(parents=True)
    os.mkfifo(mirror / spec.key)
    with pytest.raises(fetch.FetchError, match="named pipe"):
        fetch.fetch([spec.key], data_dir=data, mirror=mirror, progress=False)
    (data / spec.key).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(data / spec.key)
    with pytest.raises(fetch.FetchError, match="named pipe"):
        fetch.fetch([spec.key], data_dir=data, mirror=mirror, progress=False)


def test_word_vectors_that_are_a_pipe_are_refused_by_name(tmp_path, monkeypatch):
    from vqalib.papers.afgv import vectors

    path = tmp_path / "vectors.txt"
    os.mkfifo(path)
    with pytest.raises(io.NotRegularFile, match="word-vector file .*named pipe"):
        vectors.load_word_vectors(str(path))


def test_a_path_is_shown_relative_to_the_project_when_inside_it(tmp_path):
    page = io.project_root() / "build" / "explore" / "09_score_a_model" / "scores" / "m" / "index.html"
    assert io.shown_path(page) == "build/explore/09_score_a_model/scores/m/index.html"
    assert io.shown_path(tmp_path / "a.csv") == str(tmp_path / "a.csv")  # outside the project: as given


def test_write_inside_never_follows_a_link_on_the_way(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "utils.py").write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "task").symlink_to(other)
    (out / "file.txt").symlink_to(other / "utils.py")
    (out / "folder").mkdir()
    with pytest.raises(io.UnsafePath, match=r"out/task is a symbolic link \(to .*other\), not a folder"):
        io.write_inside(out, "task/utils.py", b"overwritten")
    with pytest.raises(io.UnsafePath, match=r"out/file\.txt is a symbolic link \(to .*utils\.py\), not a regular file"):
        io.write_inside(out, "file.txt", b"overwritten")
    with pytest.raises(io.UnsafePath, match=r"out/folder is a directory, not a regular file"):
        io.write_inside(out, "folder", b"overwritten")
    with pytest.raises(ValueError, match="not a relative path"):
        io.write_inside(out, "../other/utils.py", b"overwritten")
    assert (other / "utils.py").read_text() == "mine\n" and sorted(p.name for p in other.iterdir()) == ["utils.py"]
    assert io.write_inside(out, "new/deeper/x.txt", b"ok").read_bytes() == b"ok"
    assert sorted(p.name for p in (out / "new" / "deeper").iterdir()) == ["x.txt"]  # no temporary file left
