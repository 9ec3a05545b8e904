"""Cache entries are verified when read (vqalib.core.caches) and every cache built on them discards a
truncated, edited, planted or non-regular entry with a warning naming it, then recomputes; a cache that
cannot be written warns and the result is still returned."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest

from vqalib.core import caches
from vqalib.core.shards import ShardStore, item_key


def test_a_sealed_entry_round_trips_and_any_change_is_caught(tmp_path):
    path = tmp_path / "e.json"
    assert caches.write_entry(path, b'{"a": 1}', kind="test cache")
    assert caches.read_entry(path, kind="test cache") == b'{"a": 1}'
    data = path.read_bytes()
    for changed in (data[:-1], data.replace(b"1}", b"2}"), b'{"a": 1}', b""):
        path.write_bytes(changed)
        with pytest.warns(UserWarning, match=f"discarding test cache entry {path}"):
            assert caches.read_entry(path, kind="test cache") is None
        assert not path.exists()  # discarded, so the next run recomputes it without a word


def test_a_missing_entry_is_a_silent_miss(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert caches.read_entry(tmp_path / "absent.json", kind="test cache") is None


def test_a_pipe_in_an_entry_place_is_discarded_not_waited_on(tmp_path):
    path = tmp_path / "e.json"
    os.mkfifo(path)
    with pytest.warns(UserWarning, match="named pipe"):
        assert caches.read_entry(path, kind="test cache") is None
    assert not path.exists()


def test_an_unwritable_cache_warns_and_goes_on(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the cache folder should be: every write fails
    with pytest.warns(UserWarning, match=f"could not write test cache entry {blocker / 'sub' / 'e.json'}"):
        assert caches.write_entry(blocker / "sub" / "e.json", b"x", kind="test cache") is False


def test_a_table_round_trips_with_its_dtypes_and_one_that_would_not_is_not_cached(tmp_path):
    frame = pd.DataFrame({"n": [1, 2, 3], "x": [0.5, np.nan, 1e-300], "s": ["a", "b", "é"],
                          "mixed": pd.Series([np.nan, "word", np.nan], dtype=object),  # float NaN and text
                          "none": pd.Series([None, None, None], dtype=object), "nan": pd.Series([np.nan] * 3, dtype=object),
                          "tier": pd.Categorical(["b", "a", "b"], categories=["b", "a"], ordered=True)})
    path = tmp_path / "t.parquet"
    assert caches.write_frame(path, frame, kind="test cache")
    back = caches.read_frame(path, kind="test cache")
    pd.testing.assert_frame_equal(back, frame, check_exact=True)
    assert back["mixed"].dtype == object and back["tier"].cat.ordered
    assert [type(v) for v in back["none"]] == [type(None)] * 3 and [type(v) for v in back["nan"]] == [float] * 3
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.warns(UserWarning, match="discarding test cache entry"):
        assert caches.read_frame(path, kind="test cache") is None
    with pytest.warns(UserWarning, match="does not read back equal"):  # None and NaN in one column: not both back
        assert not caches.write_frame(path, pd.DataFrame({"s": pd.Series([np.nan, None], dtype=object)}),
                                      kind="test cache")
    assert not path.exists()


def test_a_content_key_follows_every_input_the_code_and_nothing_else(tmp_path, monkeypatch):
    frame = pd.DataFrame({"n": [1, 2], "refs": [["x"], ["y", "z"]]})  # a column of lists is hashed too
    (tmp_path / "keyed_code.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def key(**inputs):
        return caches.content_key(code=("keyed_code",), **{"table": frame, "seed": 0, **inputs})

    base = key()
    assert base == key(table=frame.copy())
    others = [key(table=frame.assign(n=[1, 3])), key(table=frame.assign(refs=[["x"], ["z", "y"]])),
              key(table=frame.astype({"n": float})), key(table=frame.set_axis([5, 6])), key(seed=1),
              caches.content_key(table=frame, seed=0)]
    (tmp_path / "keyed_code.py").write_text("X = 2\n")
    others.append(key())
    assert len({base, *others}) == len(others) + 1


def test_a_shard_store_recomputes_an_edited_shard_and_returns_rows_when_the_disk_refuses(tmp_path, monkeypatch):
    store = ShardStore(tmp_path / "s", kind="test cache")
    keys = [item_key("a"), item_key("b")]
    calls = []

    def compute(missing):
        calls.append(list(missing))
        return np.array([[1.0, 2.0] if k == keys[0] else [3.0, 4.0] for k in missing])

    first = store.rows(keys, compute)
    [shard] = list((tmp_path / "s").glob("shard-*.npz"))
    data = bytearray(shard.read_bytes())
    data[-40] ^= 0xFF  # one flipped byte inside the arrays
    shard.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match=f"discarding test cache entry {shard}"):
        again = store.rows(keys, compute)
    assert np.array_equal(first, again) and len(calls) == 2

    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(caches, "write_atomic", full_disk)
    fresh = ShardStore(tmp_path / "t", kind="test cache")
    with pytest.warns(UserWarning, match="No space left on device"):
        rows = fresh.rows(keys, compute)
    assert np.array_equal(rows, first)


def _scores():
    from vqalib.papers.commvqa.table1_cache import ProtocolScores

    frame = pd.DataFrame({"model": ["m"], "score": [0.5]})
    return ProtocolScores(protocol="p", scores=frame, subsets=frame, per_question=frame,
                          resamples={("m", "c", "x"): np.array([0.1, 0.2])})


@pytest.mark.parametrize("damage", ["truncate", "edit", "remove", "manifest"])
def test_a_damaged_table1_cache_folder_is_discarded_by_name(tmp_path, damage):
    """A truncated or missing Parquet file failed every later run (ArrowInvalid, BadZipFile, no file
    named) and an edited value (0.999) was served as real; now each is discarded by name and rescored."""
    from vqalib.papers.commvqa.table1_cache import load_protocol_scores, save_protocol_scores

    folder = tmp_path / "table1" / "k"
    save_protocol_scores(folder, _scores())
    loaded = load_protocol_scores(folder, protocol="p")
    pd.testing.assert_frame_equal(loaded.scores, _scores().scores)
    target = folder / ("resamples.npz" if damage == "edit" else "scores.parquet")
    if damage == "truncate":
        target.write_bytes(target.read_bytes()[:20])
    elif damage == "edit":
        np.savez(target, **{"m|c|x": np.array([0.999, 0.2])})
    elif damage == "remove":
        target.unlink()
    else:
        (folder / caches.MANIFEST).write_text("0" * 64 + "  scores.parquet\n")
    with pytest.warns(UserWarning, match=f"discarding CommVQA Table 1 cache entry {folder}"):
        assert load_protocol_scores(folder, protocol="p") is None
    assert not folder.exists()


def test_a_table1_cache_that_cannot_be_written_warns(tmp_path):
    from vqalib.papers.commvqa.table1_cache import save_protocol_scores

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.warns(UserWarning, match="could not write CommVQA Table 1 cache entry"):
        save_protocol_scores(blocker / "table1" / "k", _scores())
