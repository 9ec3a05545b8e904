"""Images for answer generation: VizWiz URLs, CommVQA's images.zip, a GQA folder (VizWiz-LF §3, CommVQA §3,
AFGV Methods).

The question files name their images three ways: VizWiz-LF by URL (``image_url``),
CommVQA by file name inside the authors' ``images.zip``, AFGV/GQA by image id inside the
GQA images folder. Each becomes one *source* string that :class:`ImageStore` opens:

- ``http(s)://...``: streamed into a temporary file in the cache folder, decoded, and only
  then renamed into place, with a sidecar ``<file>.json`` recording the URL, SHA-256 and size;
  later loads read the cache and refuse a file whose hash no longer matches the recorded one;
- ``zip:<archive>!<member>``: a member of a zip archive (CommVQA ``images.zip``);
- anything else: a local file path (a GQA ``images/`` folder, a CommVQA folder).

Every source is untrusted data. A body or file larger than the byte cap is refused (a download
is cut as soon as it passes the cap, so memory stays bounded whatever the server sends); an
image with more pixels than the pixel cap is refused from its header, before decoding (a
"decompression bomb": a few KB of PNG can declare 16000 x 16000 pixels); only regular files are
opened (a named pipe would block forever, a device never end); only bytes that decode as an
image are cached, so an HTML page served for an image is refused, never cached, and fetched
again when the question is retried (``--retry-errors``). A cached entry that does not decode
(written by an older version) is dropped and fetched again.

A source that cannot be read, is refused or does not decode raises :class:`ImageError`; the
runner (:func:`vqalib.runner.answering.answer_item`) turns it into an error record for that question (never a crash,
never a silent skip).

Configuration: ``VQALIB_IMAGE_CACHE`` (download cache; default ``$VQALIB_CACHE_DIR/images``
or ``<project>/.cache/vqalib/images``), ``VQALIB_IMAGE_TIMEOUT`` (seconds, default 30),
``VQALIB_IMAGE_MAX_BYTES`` (byte cap of a download, file or zip member; default 50 MiB),
``VQALIB_IMAGE_MAX_PIXELS`` (pixel cap; default Pillow's own ``Image.MAX_IMAGE_PIXELS``,
89,478,485), ``VQALIB_COMMVQA_IMAGES`` (CommVQA ``images.zip`` or folder),
``VQALIB_GQA_IMAGES`` (GQA ``images/`` folder).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tempfile
import threading
import warnings
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import requests

from vqalib.core.io import cache_root, write_atomic
from vqalib.core import config

IMAGE_CACHE_ENV = "VQALIB_IMAGE_CACHE"
IMAGE_TIMEOUT_ENV = "VQALIB_IMAGE_TIMEOUT"
IMAGE_MAX_BYTES_ENV = "VQALIB_IMAGE_MAX_BYTES"
IMAGE_MAX_PIXELS_ENV = "VQALIB_IMAGE_MAX_PIXELS"
DEFAULT_MAX_BYTES = 50 * 2**20  # far above any VizWiz, GQA or CommVQA image
DEFAULT_MAX_PIXELS = 1024 * 1024 * 1024 // 4 // 3  # Pillow's own MAX_IMAGE_PIXELS default, stated here
_CHUNK = 1 << 16
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


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _megabytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def default_cache_dir() -> Path:
    """``$VQALIB_IMAGE_CACHE``, else ``$VQALIB_CACHE_DIR/images``, else ``<project>/.cache/vqalib/images``."""
    return config.get_path(IMAGE_CACHE_ENV, cache_root("images"))


def commvqa_source(name: str, *, images: str | Path | None) -> str:
    """The source of CommVQA image ``name`` in ``images`` (``images.zip`` or a folder) (CommVQA §3).

    Parameters
    ----------
    name : str
        The image's file name in the annotations (``image``).
    images : str or Path or None
        The authors' ``images.zip`` (a ``.zip`` suffix) or a folder of the images; None raises
        :class:`ImageError` naming ``--images`` and ``$VQALIB_COMMVQA_IMAGES``.

    Returns
    -------
    str
        ``zip:<images>!<name>`` for an archive, else ``<images>/<name>``.
    """
    if images is None:
        raise ImageError(f"CommVQA image {name!r}: no images location; pass --images path/to/images.zip "
                         f"or set {COMMVQA_IMAGES_ENV}")
    images = Path(images)
    if images.suffix.lower() == ".zip":
        return f"zip:{images}!{name}"
    return str(images / name)


def gqa_source(image_id: str, *, images: str | Path | None) -> str:
    """The source of GQA image ``image_id`` (``<images>/<id>.jpg``) (AFGV Methods, GQA images).

    Parameters
    ----------
    image_id : str
        The GQA image id (``imageId`` of the GQA questions).
    images : str or Path or None
        The GQA ``images/`` folder; None raises :class:`ImageError` naming ``--images`` and
        ``$VQALIB_GQA_IMAGES``.

    Returns
    -------
    str
        The image's path (not checked here: a missing file fails when it is loaded).
    """
    if images is None:
        raise ImageError(f"GQA image {image_id!r}: no images folder; pass --images path/to/gqa/images "
                         f"or set {GQA_IMAGES_ENV}")
    return str(Path(images) / f"{image_id}.jpg")


class ImageStore:
    """Opens image sources; downloads URLs once into a hash-recorded cache (VizWiz-LF §3 images).

    ``max_bytes`` and ``max_pixels`` (default ``$VQALIB_IMAGE_MAX_BYTES``, 50 MiB, and
    ``$VQALIB_IMAGE_MAX_PIXELS``, Pillow's 89,478,485) cap what one source may be. ``downloads``
    counts bodies cached, ``rejected`` bodies fetched and refused (too large, not an image, too
    many pixels), ``evicted`` cached entries dropped because they no longer decode.
    """

    def __init__(self, *, cache_dir: str | Path | None = None, timeout: float | None = None,
                 max_bytes: int | None = None, max_pixels: int | None = None) -> None:
        from PIL import Image

        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.timeout = timeout if timeout is not None else float(config.get(IMAGE_TIMEOUT_ENV) or 30.0)
        self.max_bytes = int(max_bytes) if max_bytes is not None else config.get_int(IMAGE_MAX_BYTES_ENV,
                                                                                       DEFAULT_MAX_BYTES)
        self.max_pixels = int(max_pixels) if max_pixels is not None else config.get_int(IMAGE_MAX_PIXELS_ENV,
                                                                                          DEFAULT_MAX_PIXELS)
        if self.max_bytes < 1 or self.max_pixels < 1:
            raise ValueError(f"max_bytes ({self.max_bytes}) and max_pixels ({self.max_pixels}) must be >= 1")
        if Image.MAX_IMAGE_PIXELS is not None and self.max_pixels > Image.MAX_IMAGE_PIXELS:
            # Pillow's process-wide check would refuse what this store was told to accept: raise it to match
            Image.MAX_IMAGE_PIXELS = self.max_pixels
        self.downloads = 0
        self.rejected = 0
        self.evicted = 0
        self._zips: dict[str, zipfile.ZipFile] = {}
        self._lock = threading.Lock()
        self._session: requests.Session | None = None

    # -- bytes ------------------------------------------------------------------------------
    def cached_path(self, url: str) -> Path:
        """Where the download of ``url`` lives: a hash of the URL plus its file extension (VizWiz-LF §3 images).

        Parameters
        ----------
        url : str
            The image URL.

        Returns
        -------
        Path
            ``<cache_dir>/<first 32 hex digits of the URL's SHA-256><suffix>``: the URL's image suffix
            (query string ignored), else ``.img``; its hash record is the same name plus ``.json``.
        """
        suffix = Path(url.split("?", 1)[0]).suffix.lower()
        suffix = suffix if suffix in {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp"} else ".img"
        return self.cache_dir / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()[:32]}{suffix}"

    def _read_file(self, path: str | Path, *, source: str, what: str = "image file") -> bytes:
        """A regular file's bytes, at most ``max_bytes``; anything else is an ImageError, never a hang."""
        try:
            info = os.stat(path)
        except OSError as error:
            raise ImageError(f"{source}: cannot read {what} ({error})") from error
        if not stat.S_ISREG(info.st_mode):
            raise ImageError(f"{source}: cannot read {what}: {path} is {_file_kind(info.st_mode)}, not a regular file")
        if info.st_size > self.max_bytes:
            raise ImageError(f"{source}: {what} of {_megabytes(info.st_size)} is over the "
                             f"{_megabytes(self.max_bytes)} cap ({IMAGE_MAX_BYTES_ENV})")
        try:
            # O_NONBLOCK: should a pipe have replaced the file since the stat, opening it must not wait for a writer
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as error:
            raise ImageError(f"{source}: cannot read {what} ({error})") from error
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ImageError(f"{source}: cannot read {what}: {path} is {_file_kind(info.st_mode)}, "
                                 f"not a regular file")
            try:
                data = handle.read(self.max_bytes + 1)
            except OSError as error:
                raise ImageError(f"{source}: cannot read {what} ({error})") from error
        if len(data) > self.max_bytes:
            raise ImageError(f"{source}: {what} is over the {_megabytes(self.max_bytes)} cap ({IMAGE_MAX_BYTES_ENV})")
        return data

    def _cached(self, url: str) -> bytes | None:
        """The cached bytes of ``url`` (hash-checked), or None when it is not cached."""
        path = self.cached_path(url)
        meta_path = path.with_name(path.name + ".json")
        if not (path.exists() and meta_path.exists()):
            return None
        data = self._read_file(path, source=url, what="cached file")
        try:
            recorded = json.loads(self._read_file(meta_path, source=url, what="hash record"))["sha256"]
        except (ValueError, KeyError, TypeError) as error:
            raise ImageError(f"{url}: hash record {meta_path} unreadable ({error})") from error
        if hashlib.sha256(data).hexdigest() != recorded:
            raise ImageError(f"{url}: cached file {path} no longer matches its recorded SHA-256 "
                             f"(delete it and its .json to download again)")
        return data

    def _download(self, url: str) -> tuple[bytes, Any]:
        """Stream ``url`` into a temporary file (cut past ``max_bytes``), decode it, and only then cache it."""
        path = self.cached_path(url)
        if self._session is None:
            self._session = requests.Session()
        try:
            response = self._session.get(url, timeout=self.timeout, stream=True)
        except requests.RequestException as error:
            raise ImageError(f"{url}: download failed ({error})") from error
        with response:  # closing drops the connection: an unread body is never drained
            try:
                response.raise_for_status()
            except requests.RequestException as error:
                raise ImageError(f"{url}: download failed ({error})") from error
            content_type = response.headers.get("Content-Type", "no Content-Type")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                self.rejected += 1
                raise ImageError(f"{url}: the server announces {_megabytes(int(declared))}, over the "
                                 f"{_megabytes(self.max_bytes)} cap ({IMAGE_MAX_BYTES_ENV}); not downloaded")
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
            try:
                size = 0
                with os.fdopen(handle, "wb") as sink:
                    try:
                        for chunk in response.iter_content(chunk_size=_CHUNK):
                            size += len(chunk)
                            if size > self.max_bytes:  # checked per chunk: memory and disk stay bounded
                                self.rejected += 1
                                raise ImageError(f"{url}: body over the {_megabytes(self.max_bytes)} cap "
                                                 f"({IMAGE_MAX_BYTES_ENV}); download stopped, nothing cached")
                            sink.write(chunk)
                    except requests.RequestException as error:
                        raise ImageError(f"{url}: download failed while reading the body ({error})") from error
                with open(tmp_name, "rb") as written:
                    data = written.read()
                try:
                    image = self._decode(data, source=url)
                except ImageError as error:
                    self.rejected += 1
                    start = "" if content_type.startswith("image/") else f" starting {data[:32]!r}"
                    raise ImageError(f"{error} [the server sent {content_type}, {size} bytes{start}; "
                                     f"not cached]") from error
                os.chmod(tmp_name, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
                os.replace(tmp_name, path)
            finally:
                Path(tmp_name).unlink(missing_ok=True)
        self.downloads += 1
        meta = {"url": url, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                "content_type": content_type, "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        # the record after the bytes: a crash between them leaves an unrecorded file, which is fetched again
        write_atomic(path.with_name(path.name + ".json"), json.dumps(meta).encode("utf-8"))
        return data, image

    def _fetch_url(self, url: str) -> tuple[bytes, Any]:
        """The bytes and decoded image of ``url``, from the cache or downloaded (and then cached)."""
        data = self._cached(url)
        if data is not None:
            try:
                return data, self._decode(data, source=url)
            except ImageError:
                # cached by an older version that kept whatever the server sent (an HTML page): fetch again
                path = self.cached_path(url)
                path.unlink(missing_ok=True)
                path.with_name(path.name + ".json").unlink(missing_ok=True)
                self.evicted += 1
        return self._download(url)

    def _read_zip(self, source: str) -> bytes:
        archive, _, member = source[len("zip:"):].partition("!")
        with self._lock:  # ZipFile handles are shared; reads must not interleave
            try:
                if archive not in self._zips:
                    info = os.stat(archive)
                    if not stat.S_ISREG(info.st_mode):
                        raise ImageError(f"{source}: archive {archive} is {_file_kind(info.st_mode)}, "
                                         f"not a regular file")
                    self._zips[archive] = zipfile.ZipFile(archive)
                handle = self._zips[archive]
                try:
                    entry = handle.getinfo(member)
                except KeyError:
                    # the authors' archive keeps images below a top folder: match on the base name
                    hits = [i for i in handle.infolist() if i.filename.rsplit("/", 1)[-1] == member]
                    if len(hits) != 1:
                        raise ImageError(f"{member!r} not found in {archive}") from None
                    entry = hits[0]
                if entry.file_size > self.max_bytes:  # the declared size bounds what zipfile will inflate
                    raise ImageError(f"{source}: member of {_megabytes(entry.file_size)} is over the "
                                     f"{_megabytes(self.max_bytes)} cap ({IMAGE_MAX_BYTES_ENV})")
                return handle.read(entry)
            except (OSError, zipfile.BadZipFile) as error:
                raise ImageError(f"{source}: cannot read archive ({error})") from error

    def read_bytes(self, source: str) -> bytes:
        """The raw bytes of ``source`` (URL via the cache, zip member, or file), at most ``max_bytes``.

        Parameters
        ----------
        source : str
            ``http(s)://...``, ``zip:<archive>!<member>`` or a local file path.

        Returns
        -------
        bytes
            The bytes; a URL's are downloaded and cached first (only if they decode as an image). A source
            that cannot be read, or is over the cap, raises :class:`ImageError`.
        """
        if source.startswith(("http://", "https://")):
            return self._fetch_url(source)[0]
        if source.startswith("zip:"):
            return self._read_zip(source)
        return self._read_file(source, source=source)

    # -- images -----------------------------------------------------------------------------
    def _decode(self, data: bytes, *, source: str) -> Any:
        """The RGB image in ``data``: refused from its header when over ``max_pixels``, else fully decoded."""
        from PIL import Image

        try:
            with warnings.catch_warnings():
                # Pillow only warns between its limit and twice it; here a bomb is an error either way
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data)) as opened:
                    width, height = opened.size
                    if width * height > self.max_pixels:
                        raise ImageError(f"{source}: {width} x {height} = {width * height:,} pixels, over the "
                                         f"{self.max_pixels:,} pixel cap ({IMAGE_MAX_PIXELS_ENV}); "
                                         f"refused before decoding (a decompression bomb?)")
                    return opened.convert("RGB")  # convert() forces the full decode: truncated files fail here
        except ImageError:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:  # Pillow's check came first
            raise ImageError(f"{source}: over the {self.max_pixels:,} pixel cap ({IMAGE_MAX_PIXELS_ENV}); refused "
                             f"before decoding (a decompression bomb?): {error}") from error
        except Exception as error:  # noqa: BLE001 - untrusted bytes: any decoder failure is this image's, not the run's
            raise ImageError(f"{source}: not a decodable image ({type(error).__name__}: {error})") from error

    def load(self, source: str) -> LoadedImage:
        """The decoded RGB image of ``source``; :class:`ImageError` if absent, changed, refused or undecodable.

        The images of every run: VizWiz-LF §3 URLs, CommVQA §3 ``images.zip``, AFGV's GQA folder.

        Parameters
        ----------
        source : str
            ``http(s)://...``, ``zip:<archive>!<member>`` or a local file path.

        Returns
        -------
        LoadedImage
            The RGB image, the SHA-256 of the bytes it was decoded from, and ``source``.
        """
        if source.startswith(("http://", "https://")):
            data, image = self._fetch_url(source)
        else:
            data = self.read_bytes(source)
            image = self._decode(data, source=source)
        return LoadedImage(image=image, sha256=hashlib.sha256(data).hexdigest(), source=source)

    def close(self) -> None:
        """Close open zip archives and the HTTP session."""
        for handle in self._zips.values():
            handle.close()
        self._zips.clear()
        if self._session is not None:
            self._session.close()
            self._session = None
