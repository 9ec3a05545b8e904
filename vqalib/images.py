"""Images for answer generation: VizWiz URLs, CommVQA's images.zip, a GQA folder (VizWiz-LF §3, CommVQA §3, AFGV Methods).

The question files name their images three ways: VizWiz-LF by URL (``image_url``),
CommVQA by file name inside the authors' ``images.zip``, AFGV/GQA by image id inside the
GQA images folder. Each becomes one *source* string that :class:`ImageStore` opens:

- ``http(s)://...``: downloaded once into the cache folder (atomic write) with a sidecar
  ``<file>.json`` recording the URL, SHA-256 and size; later loads read the cache and
  refuse a file whose hash no longer matches the recorded one;
- ``zip:<archive>!<member>``: a member of a zip archive (CommVQA ``images.zip``);
- anything else: a local file path (a GQA ``images/`` folder, a CommVQA folder).

A source that cannot be read or decoded raises :class:`ImageError`; the runner in
:mod:`vqalib.vqa` turns it into an error record for that question (never a crash, never a
silent skip).

Configuration: ``VQALIB_IMAGE_CACHE`` (download cache; default ``$VQALIB_CACHE_DIR/images``
or ``<project>/.cache/vqalib/images``), ``VQALIB_IMAGE_TIMEOUT`` (seconds, default 30),
``VQALIB_COMMVQA_IMAGES`` (CommVQA ``images.zip`` or folder), ``VQALIB_GQA_IMAGES`` (GQA
``images/`` folder).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import requests

from vqalib.datasets import cache_root, write_atomic

IMAGE_CACHE_ENV = "VQALIB_IMAGE_CACHE"
IMAGE_TIMEOUT_ENV = "VQALIB_IMAGE_TIMEOUT"
COMMVQA_IMAGES_ENV = "VQALIB_COMMVQA_IMAGES"
GQA_IMAGES_ENV = "VQALIB_GQA_IMAGES"


class ImageError(RuntimeError):
    """An image that cannot be fetched, found, verified or decoded (recorded as an error row)."""


@dataclass(frozen=True)
class LoadedImage:
    """A decoded RGB image and the SHA-256 of the bytes it came from."""

    image: Any  # PIL.Image.Image
    sha256: str
    source: str


def default_cache_dir() -> Path:
    """``$VQALIB_IMAGE_CACHE``, else ``$VQALIB_CACHE_DIR/images``, else ``<project>/.cache/vqalib/images``."""
    if os.environ.get(IMAGE_CACHE_ENV):
        return Path(os.environ[IMAGE_CACHE_ENV])
    return cache_root() / "images"


def commvqa_source(name: str, *, images: str | Path | None) -> str:
    """The source of CommVQA image ``name`` in ``images`` (``images.zip`` or a folder) (CommVQA §3)."""
    if images is None:
        raise ImageError(f"CommVQA image {name!r}: no images location; pass --images path/to/images.zip "
                         f"or set {COMMVQA_IMAGES_ENV}")
    images = Path(images)
    if images.suffix.lower() == ".zip":
        return f"zip:{images}!{name}"
    return str(images / name)


def gqa_source(image_id: str, *, images: str | Path | None) -> str:
    """The source of GQA image ``image_id`` (``<images>/<id>.jpg``) (AFGV Methods, GQA images)."""
    if images is None:
        raise ImageError(f"GQA image {image_id!r}: no images folder; pass --images path/to/gqa/images "
                         f"or set {GQA_IMAGES_ENV}")
    return str(Path(images) / f"{image_id}.jpg")


class ImageStore:
    """Opens image sources; downloads URLs once into a hash-recorded cache (VizWiz-LF §3 images)."""

    def __init__(self, *, cache_dir: str | Path | None = None, timeout: float | None = None) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.timeout = timeout if timeout is not None else float(os.environ.get(IMAGE_TIMEOUT_ENV) or 30.0)
        self.downloads = 0
        self._zips: dict[str, zipfile.ZipFile] = {}
        self._lock = threading.Lock()
        self._session: requests.Session | None = None

    # -- bytes ------------------------------------------------------------------------------
    def cached_path(self, url: str) -> Path:
        """Where the download of ``url`` lives: a hash of the URL plus its file extension."""
        suffix = Path(url.split("?", 1)[0]).suffix.lower()
        suffix = suffix if suffix in {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp"} else ".img"
        return self.cache_dir / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()[:32]}{suffix}"

    def _fetch_url(self, url: str) -> bytes:
        path = self.cached_path(url)
        meta_path = path.with_name(path.name + ".json")
        if path.exists() and meta_path.exists():
            data = path.read_bytes()
            try:
                recorded = json.loads(meta_path.read_text(encoding="utf-8"))["sha256"]
            except (OSError, ValueError, KeyError) as error:
                raise ImageError(f"{url}: hash record {meta_path} unreadable ({error})") from error
            if hashlib.sha256(data).hexdigest() != recorded:
                raise ImageError(f"{url}: cached file {path} no longer matches its recorded SHA-256 "
                                 f"(delete it and its .json to download again)")
            return data
        if self._session is None:
            self._session = requests.Session()
        try:
            response = self._session.get(url, timeout=self.timeout)
            response.raise_for_status()
        except requests.RequestException as error:
            raise ImageError(f"{url}: download failed ({error})") from error
        data = response.content
        self.downloads += 1
        meta = {"url": url, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        # write bytes then record, each atomically: a crash leaves no half file and no stale hash
        write_atomic(path, data)
        write_atomic(meta_path, json.dumps(meta).encode("utf-8"))
        return data

    def _read_zip(self, source: str) -> bytes:
        archive, _, member = source[len("zip:"):].partition("!")
        with self._lock:  # ZipFile handles are shared; reads must not interleave
            try:
                if archive not in self._zips:
                    self._zips[archive] = zipfile.ZipFile(archive)
                handle = self._zips[archive]
                try:
                    return handle.read(member)
                except KeyError:
                    # the authors' archive keeps images below a top folder: match on the base name
                    hits = [n for n in handle.namelist() if n.rsplit("/", 1)[-1] == member]
                    if len(hits) != 1:
                        raise ImageError(f"{member!r} not found in {archive}") from None
                    return handle.read(hits[0])
            except (OSError, zipfile.BadZipFile) as error:
                raise ImageError(f"{source}: cannot read archive ({error})") from error

    def read_bytes(self, source: str) -> bytes:
        """The raw bytes of ``source`` (URL via the cache, zip member, or file)."""
        if source.startswith(("http://", "https://")):
            return self._fetch_url(source)
        if source.startswith("zip:"):
            return self._read_zip(source)
        try:
            return Path(source).read_bytes()
        except OSError as error:
            raise ImageError(f"{source}: cannot read image file ({error})") from error

    # -- images -----------------------------------------------------------------------------
    def load(self, source: str) -> LoadedImage:
        """The decoded RGB image of ``source``; :class:`ImageError` if absent, changed or undecodable."""
        from PIL import Image, UnidentifiedImageError

        data = self.read_bytes(source)
        try:
            with Image.open(io.BytesIO(data)) as opened:
                image = opened.convert("RGB")  # convert() forces the full decode: truncated files fail here
        except (UnidentifiedImageError, OSError, ValueError) as error:
            raise ImageError(f"{source}: not a decodable image ({error})") from error
        return LoadedImage(image=image, sha256=hashlib.sha256(data).hexdigest(), source=source)

    def close(self) -> None:
        """Close open zip archives and the HTTP session."""
        for handle in self._zips.values():
            handle.close()
        self._zips.clear()
        if self._session is not None:
            self._session.close()
            self._session = None
