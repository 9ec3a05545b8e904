"""The shared sentence encoder (vqalib.encoders): offline packaged MiniLM, loaded once per process."""

from pathlib import Path

from vqalib import encoders


def test_packaged_minilm_is_a_local_sentence_transformers_folder():
    path = Path(encoders.packaged_minilm_path())
    assert path.is_dir() and (path / "config.json").exists()


def test_encoder_is_loaded_once_and_gives_unit_vectors():
    first = encoders.load_sentence_encoder(encoders.packaged_minilm_path())
    assert encoders.load_sentence_encoder(encoders.packaged_minilm_path()) is first
    vectors = first.encode(["a red cup", "a blue car"], normalize_embeddings=True)
    assert vectors.shape == (2, 384)
    assert abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-5
