"""Image sources for answer generation (vqalib.images): URL cache with hash records, zip members, files."""

from __future__ import annotations

import json
import zipfile

import pytest

from conftest import local_file_server
from vqalib.images import ImageError, ImageStore, commvqa_source, gqa_source


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("images")
    Image.new("RGB", (40, 30), (200, 10, 10)).save(root / "good.png")
    (root / "text.png").write_bytes(b"this is not an image")
    with zipfile.ZipFile(root / "images.zip", "w") as archive:
        archive.write(root / "good.png", "images/good.png")  # the authors' archive has a top folder
    return root


@pytest.fixture(scope="module")
def server(folder):
    """A local HTTP server on 127.0.0.1 (no network); counts GET requests per path."""
    with local_file_server(folder) as served:
        yield served


def test_urls_are_downloaded_once_and_hash_recorded(server, tmp_path):
    base, hits = server
    store = ImageStore(cache_dir=tmp_path / "cache")
    first = store.load(f"{base}/good.png")
    second = ImageStore(cache_dir=tmp_path / "cache").load(f"{base}/good.png")  # a new process: cache only
    assert hits["/good.png"] == 1 and store.downloads == 1
    assert first.sha256 == second.sha256 and first.image.size == (40, 30) and first.image.mode == "RGB"
    cached = store.cached_path(f"{base}/good.png")
    meta = json.loads(cached.with_name(cached.name + ".json").read_text())
    assert meta["sha256"] == first.sha256 and meta["url"] == f"{base}/good.png" and meta["bytes"] > 0
    assert not list((tmp_path / "cache").glob("*.part"))  # atomic writes leave no partial files


def test_changed_missing_and_undecodable_images_raise_image_error(server, folder, tmp_path):
    base, _ = server
    store = ImageStore(cache_dir=tmp_path / "cache")
    store.load(f"{base}/good.png")
    cached = store.cached_path(f"{base}/good.png")
    cached.write_bytes(cached.read_bytes() + b"tampered")
    with pytest.raises(ImageError, match="no longer matches"):
        store.load(f"{base}/good.png")
    with pytest.raises(ImageError, match="download failed"):
        store.load(f"{base}/absent.png")
    with pytest.raises(ImageError, match="cannot read image file"):
        store.load(str(folder / "absent.png"))
    with pytest.raises(ImageError, match="not a decodable image"):
        store.load(str(folder / "text.png"))
    with pytest.raises(ImageError, match="not found"):
        store.load(f"zip:{folder / 'images.zip'}!absent.png")


def test_commvqa_zip_and_gqa_folder_sources(folder):
    store = ImageStore(cache_dir=folder / "cache")
    source = commvqa_source("good.png", images=folder / "images.zip")
    assert source == f"zip:{folder / 'images.zip'}!good.png" and store.load(source).image.size == (40, 30)
    assert commvqa_source("good.png", images=folder) == str(folder / "good.png")
    assert gqa_source("2354786", images="/data/gqa/images") == "/data/gqa/images/2354786.jpg"
    with pytest.raises(ImageError, match="images.zip"):
        commvqa_source("good.png", images=None)
    with pytest.raises(ImageError, match="GQA"):
        gqa_source("1", images=None)
    store.close()
