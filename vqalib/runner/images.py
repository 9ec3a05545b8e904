"""Opening the images of every run (VizWiz-LF §3 URLs, CommVQA §3 ``images.zip``, AFGV's GQA folder): a URL via a
hash-recorded download cache, a zip member or a regular file, each untrusted and capped in bytes, pixels and
download time; a refused or unreadable source is an :class:`ImageError`, which becomes the question's error record."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import stat
import threading
import warnings
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import requests
import urllib3

from vqalib.core.io import NotRegularFile, cache_root, file_kind, open_regular, write_atomic
from vqalib.core import config
from vqalib.runner.image_downloads import DownloadBody, cut_download, download_session, forget_download

IMAGE_CACHE_ENV = "VQALIB_IMAGE_CACHE"
IMAGE_TIMEOUT_ENV = "VQALIB_IMAGE_TIMEOUT"
IMAGE_DEADLINE_ENV = "VQALIB_IMAGE_DEADLINE"
IMAGE_MAX_BYTES_ENV = "VQALIB_IMAGE_MAX_BYTES"
IMAGE_MAX_PIXELS_ENV = "VQALIB_IMAGE_MAX_PIXELS"
DEFAULT_MAX_BYTES = 50 * 2**20  # far above any VizWiz, GQA or CommVQA image
DEFAULT_MAX_PIXELS = 1024 * 1024 * 1024 // 4 // 3  # Pillow's own MAX_IMAGE_PIXELS default, stated here
_CHUNK = 1 << 16


class ImageError(RuntimeError):
    """An image that cannot be fetched, found, verified or decoded (recorded as an error row)."""


@dataclass(frozen=True)
class LoadedImage:
    """A decoded RGB image and the SHA-256 of the bytes it came from."""

    image: Any  # PIL.Image.Image
    sha256: str
    source: str


def _megabytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def default_cache_dir() -> Path:
    """``$VQALIB_IMAGE_CACHE``, else ``$VQALIB_CACHE_DIR/images``, else ``<project>/.cache/vqalib/images``."""
    return config.get_path(IMAGE_CACHE_ENV, cache_root("images"))


class ImageStore:
    """Opens image sources; downloads URLs once into a hash-recorded cache (VizWiz-LF §3 images).

    Caps default to the ``VQALIB_IMAGE_*`` settings; ``downloads``, ``uncached``, ``rejected``, ``late``, ``evicted``
    count bodies cached, used uncached, refused, cut at the deadline and dropped from the cache.
    """

    def __init__(self, *, cache_dir: str | Path | None = None, timeout: float | None = None,
                 max_bytes: int | None = None, max_pixels: int | None = None, deadline: float | None = None) -> None:
        from PIL import Image

        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.timeout = float(timeout) if timeout is not None else config.get_seconds(IMAGE_TIMEOUT_ENV, 30.0)
        self.deadline = float(deadline) if deadline is not None else config.get_seconds(IMAGE_DEADLINE_ENV, 120.0)
        if not (self.timeout > 0 and self.deadline > 0):
            raise ValueError(f"timeout ({self.timeout}) and deadline ({self.deadline}) must be > 0 seconds")
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
        self.uncached = 0
        self.rejected = 0
        self.late = 0
        self.evicted = 0
        self._warned_cache = False
        self._zips: dict[str, zipfile.ZipFile] = {}
        self._lock = threading.Lock()
        self._session: requests.Session | None = None

    # -- bytes ------------------------------------------------------------------------------
    def cached_path(self, url: str) -> Path:
        """Where the download of ``url`` lives: a hash of the URL plus its image suffix (else ``.img``).

        Parameters
        ----------
        url : str
            The image URL.

        Returns
        -------
        Path
            In ``cache_dir``; its hash record is the same name plus ``.json``.
        """
        suffix = Path(url.split("?", 1)[0]).suffix.lower()
        suffix = suffix if suffix in {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp"} else ".img"
        return self.cache_dir / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()[:32]}{suffix}"

    def _read_file(self, path: str | Path, *, source: str, what: str = "image file") -> bytes:
        """A regular file's bytes, at most ``max_bytes``; anything else is an ImageError, never a hang."""
        try:
            with open_regular(path, what=what) as handle:  # a pipe or device is refused without being waited on
                size = os.fstat(handle.fileno()).st_size
                if size > self.max_bytes:
                    raise ImageError(f"{source}: {what} of {_megabytes(size)} is over the "
                                     f"{_megabytes(self.max_bytes)} cap ({IMAGE_MAX_BYTES_ENV})")
                data = handle.read(self.max_bytes + 1)
        except NotRegularFile as error:
            raise ImageError(f"{source}: {error}") from None
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

    def _receive(self, url: str, state: dict, cancel: threading.Event, lock: threading.Lock) -> None:
        """Stream ``url`` into a :class:`DownloadBody` in a worker thread (the caller stops waiting at the deadline);
        leaves ``state["body"]`` or ``state["error"]``, or nothing once ``cancel`` is set.
        """
        body = None
        try:
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
                with lock:
                    if cancel.is_set():
                        return
                    body = state["pending"] = DownloadBody(self.cached_path(url))
                while not cancel.is_set():
                    try:
                        # read1: one socket read at a time, so the cancel flag is seen between a trickle's reads
                        chunk = response.raw.read1(_CHUNK, decode_content=True)
                    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
                        raise ImageError(f"{url}: download failed while reading the body ({error})") from error
                    if not chunk:
                        break
                    if body.size + len(chunk) > self.max_bytes:  # checked per read: memory and disk stay bounded
                        self.rejected += 1
                        raise ImageError(f"{url}: body over the {_megabytes(self.max_bytes)} cap "
                                         f"({IMAGE_MAX_BYTES_ENV}); download stopped, nothing cached")
                    body.write(chunk)
                    state["bytes"] = body.size
            with lock:
                if not cancel.is_set():
                    state["body"], state["content_type"], body = body, content_type, None
        except ImageError as error:
            state["error"] = error
        except Exception as error:  # noqa: BLE001 - a failing download is this image's error, never the run's
            state["error"] = ImageError(f"{url}: download failed ({type(error).__name__}: {error})")
        finally:
            forget_download()
            if body is not None:
                body.discard()

    def _download(self, url: str) -> tuple[bytes, Any]:
        """Download ``url`` within the deadline, decode it, and only then cache it (or warn and use it uncached)."""
        if self._session is None:
            self._session = download_session()
        state: dict = {"bytes": 0}
        cancel, lock = threading.Event(), threading.Lock()
        worker = threading.Thread(target=self._receive, args=(url, state, cancel, lock), daemon=True,
                                  name="vqalib image download")
        worker.start()
        worker.join(self.deadline)
        with lock:
            late = "body" not in state and "error" not in state
            if late:
                # shut its connection (its read returns, it keeps nothing) and drop its temporary file
                cancel.set()
                cut_download(worker)
                if state.get("pending") is not None and state["pending"].tmp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(state["pending"].tmp)
        if late:
            self.late += 1
            raise ImageError(f"{url}: download not finished within the deadline of {self.deadline:g} s "
                             f"({IMAGE_DEADLINE_ENV}; {state['bytes']} bytes received); stopped, nothing cached")
        if "error" in state:
            raise state["error"]
        body, content_type = state["body"], state["content_type"]
        try:
            try:
                data = body.data()
            except OSError as error:
                raise ImageError(f"{url}: cannot read the downloaded body back ({error})") from error
            try:
                image = self._decode(data, source=url)
            except ImageError as error:
                self.rejected += 1
                start = "" if content_type.startswith("image/") else f" starting {data[:32]!r}"
                raise ImageError(f"{error} [the server sent {content_type}, {len(data)} bytes{start}; "
                                 f"not cached]") from error
            self._cache(body, url=url, data=data, content_type=content_type)
        finally:
            body.discard()
        return data, image

    def _cache(self, body: DownloadBody, *, url: str, data: bytes, content_type: str) -> None:
        """Rename a decoded body into the cache and record its hash; a cache that cannot take it is warned about."""
        path = body.target
        problem = body.problem
        if problem is None:
            try:
                body.keep()
                meta = {"url": url, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                        "content_type": content_type,
                        "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
                # the record after the bytes: a crash between them leaves an unrecorded file, which is fetched again
                write_atomic(path.with_name(path.name + ".json"), json.dumps(meta).encode("utf-8"))
                self.downloads += 1
                return
            except OSError as error:
                problem = error
                with contextlib.suppress(OSError):  # an unrecorded file is never read: free its space
                    path.unlink(missing_ok=True)
        self.uncached += 1
        if not self._warned_cache:
            self._warned_cache = True
            warnings.warn(f"image cache {self.cache_dir} cannot be written ({problem}); {url} and any later image "
                          f"this cache cannot take are used without being cached (free space, fix the folder's "
                          f"permissions, or point {IMAGE_CACHE_ENV} / --image-cache elsewhere)",
                          RuntimeWarning, stacklevel=2)

    def _fetch_url(self, url: str) -> tuple[bytes, Any]:
        """The bytes and decoded image of ``url``, from the cache or downloaded (and then cached)."""
        data = self._cached(url)
        if data is not None:
            try:
                return data, self._decode(data, source=url)
            except ImageError:
                # cached by an older version that kept whatever the server sent (an HTML page): fetch again
                path = self.cached_path(url)
                with contextlib.suppress(OSError):  # a read-only cache keeps it; the download below is used
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
                        raise ImageError(f"{source}: archive {archive} is {file_kind(info.st_mode)}, "
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
            A source that cannot be read, or is over the cap, raises :class:`ImageError`.
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
        """The decoded RGB image of ``source`` (VizWiz-LF §3, CommVQA §3, AFGV); :class:`ImageError` if it cannot be.

        Parameters
        ----------
        source : str
            ``http(s)://...``, ``zip:<archive>!<member>`` or a local file path.
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
