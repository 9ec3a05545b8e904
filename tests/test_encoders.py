"""The shared sentence encoder (vqalib.core.encoders): offline packaged MiniLM, loaded once per process."""

from pathlib import Path

import pytest

from vqalib.core import config, encoders
from vqalib.core.metrics import bertscore


def test_packaged_minilm_is_a_local_sentence_transformers_folder():
    path = Path(encoders.packaged_minilm_path())
    assert path.is_dir() and (path / "config.json").exists()


def test_encoder_is_loaded_once_and_gives_unit_vectors(tmp_path):
    path = encoders.packaged_minilm_path()
    assert encoders._float64_encoder(path) is encoders._float64_encoder(path)
    vectors = encoders.embed(["a red cup", "a blue car"], cache_dir=tmp_path)
    assert vectors.shape == (2, 384)
    assert float((vectors[0] ** 2).sum()) == pytest.approx(1.0)


TEXTS = ["What is this?", "A blurry photo of a cereal box on a kitchen table, taken from above at night.",
         "Red.", "The label says 'Campbell's tomato soup', 10.75 oz; the expiry date is not visible.",
         "Is the stove on or off?", "It appears to be a can of beans."]


def test_embed_is_float64_rounded_and_independent_of_batching_and_cache_history(tmp_path):
    import numpy as np

    one = encoders.embed(TEXTS, layers=(2, 4), batch_size=1, cache_dir=tmp_path / "a")
    many = encoders.embed(TEXTS, layers=(2, 4), batch_size=64, cache_dir=tmp_path / "b")
    assert one.dtype == np.float64 and one.shape == (len(TEXTS), 3 * 384)
    assert np.array_equal(one, many)  # padding in a batch changes nothing after rounding
    assert np.array_equal(np.round(one, encoders.DECIMALS), one)
    encoders.embed(TEXTS[2:3], cache_dir=tmp_path / "c")  # another history, another spec folder
    assert np.array_equal(encoders.embed(TEXTS, layers=(2, 4), cache_dir=tmp_path / "a"), one)
    assert not any(tmp_path.rglob("*.pkl")) and not any(tmp_path.rglob("*.joblib"))


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_embed_and_bertscore_are_identical_on_another_cpu_kernel_and_one_thread(tmp_path):
    """The reproduction contract: AVX2 kernels, one thread (ATEN, MKL, OpenBLAS) give the same bits as
    this machine's defaults, for the embeddings and for BERTScore."""
    import os
    import subprocess
    import sys

    import numpy as np


    script = (
        "import sys, numpy as np\n"
        "from vqalib.core import encoders\n"
        "from vqalib.core.metrics import bertscore\n"
        f"texts = {TEXTS!r}\n"
        "np.save(sys.argv[1], encoders.embed(texts, layers=(2, 4), cache_dir=sys.argv[2]))\n"
        "np.save(sys.argv[3], bertscore.bertscore_f1(texts[:3], texts[3:], backbone=bertscore.bertscore_backbone()))\n"
    )
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell"}
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "e.npy"), str(tmp_path / "cache"),
                    str(tmp_path / "b.npy")], check=True, env=env, timeout=600)
    here = encoders.embed(TEXTS, layers=(2, 4), cache_dir=tmp_path / "here")
    assert np.array_equal(np.load(tmp_path / "e.npy"), here)
    bert = bertscore.bertscore_f1(TEXTS[:3], TEXTS[3:], backbone=bertscore.bertscore_backbone())
    assert np.array_equal(np.load(tmp_path / "b.npy"), bert)


class _Planted:
    """Unpickling this creates ``marker``: the side effect of a pickle someone planted in a cache."""

    def __init__(self, marker: Path) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_planted_pickles_in_the_embedding_cache_are_never_run(tmp_path):
    """A pickle placed where a shard is, or an object array inside a shard, is not
    unpickled; the shard is discarded with a warning naming it and its texts are encoded again."""
    import pickle

    import numpy as np

    pickle.loads(pickle.dumps(_Planted(tmp_path / "proof")))
    assert (tmp_path / "proof").exists()  # the payload is live: unpickling it would leave the marker
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    first = encoders.embed(TEXTS[:2], cache_dir=cache)
    [shard] = list(cache.rglob("shard-*.npz"))
    shard.write_bytes(pickle.dumps(_Planted(marker)))
    objects = shard.parent / "shard-objects.npz"
    np.savez(objects, keys=np.array([_Planted(marker)], dtype=object), vectors=np.zeros((1, 384)))
    with pytest.warns(UserWarning, match="discarding embedding cache entry") as caught:
        again = encoders.embed(TEXTS[:2], cache_dir=cache)
    assert not marker.exists()
    assert np.array_equal(again, first)
    named = " ".join(str(w.message) for w in caught)
    assert str(shard) in named and str(objects) in named
    import io

    from vqalib.core.caches import read_entry

    with np.load(io.BytesIO(read_entry(shard, kind="x")), allow_pickle=False) as rewritten:  # replaced by real arrays
        assert rewritten["vectors"].shape == (2, 384)


def test_a_warm_cache_serves_embeddings_with_model_calls_forbidden(tmp_path, monkeypatch):
    """With VQALIB_NO_MODEL_CALLS=1 (how `make bench` runs the warm `make reproduce`) cached texts
    are served and a text missing from the cache fails loudly instead of being encoded."""

    first = encoders.embed(TEXTS[:2], cache_dir=tmp_path)
    monkeypatch.setenv("VQALIB_NO_MODEL_CALLS", "1")
    assert (encoders.embed(list(reversed(TEXTS[:2])), cache_dir=tmp_path) == first[::-1]).all()
    with pytest.raises(config.ModelCallForbidden, match="sentence encoder"):
        encoders.embed(TEXTS[:3], cache_dir=tmp_path)
