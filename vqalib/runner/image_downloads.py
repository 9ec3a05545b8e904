"""The pieces of an image download that make its limits hold (VizWiz-LF §3 images, for ``ImageStore``): a session
whose connection :func:`cut_download` can shut at the deadline, wherever the download is, and a
:class:`DownloadBody` that falls back to memory when the cache folder cannot be written."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
from pathlib import Path

import requests
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_OPEN: dict[int, socket.socket] = {}  # thread id -> the socket of the download it is making
_OPEN_LOCK = threading.Lock()


def _recorded(base: type) -> type:
    class Recorded(base):
        def connect(self) -> None:
            super().connect()
            with _OPEN_LOCK:
                _OPEN[threading.get_ident()] = self.sock
    return Recorded


class _Pool(HTTPConnectionPool):
    ConnectionCls = _recorded(HTTPConnection)


class _SecurePool(HTTPSConnectionPool):
    ConnectionCls = _recorded(HTTPSConnection)


class _Adapter(requests.adapters.HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - requests' own signature
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _SecurePool}


def download_session() -> requests.Session:
    """A session for image downloads whose connections :func:`cut_download` can shut from another thread.

    ``Connection: close``: a thread's recorded connection is the one it reads (through a proxy none is recorded).
    """
    session = requests.Session()
    session.headers["Connection"] = "close"
    adapter = _Adapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def cut_download(thread: threading.Thread) -> None:
    """Shut the connection a download thread is reading (its blocked read returns at once); nothing if it has none.

    Parameters
    ----------
    thread : threading.Thread
        A thread downloading through :func:`download_session`.
    """
    with _OPEN_LOCK:
        sock = _OPEN.pop(thread.ident, None)
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed by its reader
            sock.shutdown(socket.SHUT_RDWR)


def forget_download() -> None:
    """Drop the calling thread's recorded connection (when its download ends, however it ends)."""
    with _OPEN_LOCK:
        _OPEN.pop(threading.get_ident(), None)


class DownloadBody:
    """A download's bytes as they arrive: in a temporary file beside ``target``, or in memory once the folder cannot be
    written (``problem`` says why); the caller's byte cap bounds both.
    """

    def __init__(self, target: Path) -> None:
        self.target, self.tmp, self.fd, self.size = Path(target), None, None, 0
        self.memory: bytearray | None = None
        self.problem: OSError | None = None
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.fd, self.tmp = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".part",
                                                 dir=self.target.parent)
        except OSError as error:
            self._to_memory(error)

    def write(self, chunk: bytes) -> None:
        """Keep ``chunk``; a write the disk refuses moves the body to memory, losing nothing.

        Parameters
        ----------
        chunk : bytes
            The next bytes of the body.
        """
        rest = memoryview(chunk)
        if self.memory is None:
            try:
                while rest:
                    written = os.write(self.fd, rest)
                    self.size, rest = self.size + written, rest[written:]
                return
            except OSError as error:  # ENOSPC, EFBIG, EDQUOT: keep what was written, go on in memory
                self._to_memory(error)
        self.memory += rest
        self.size += len(rest)

    def _to_memory(self, error: OSError) -> None:
        self.problem = error
        kept = os.pread(self.fd, self.size, 0) if self.fd is not None else b""
        self.discard()
        self.memory = bytearray(kept)

    def data(self) -> bytes:
        """The whole body (OSError if the temporary file no longer holds it)."""
        data = bytes(self.memory) if self.memory is not None else os.pread(self.fd, self.size, 0)
        if len(data) != self.size:
            raise OSError(f"read back {len(data)} of {self.size} bytes from {self.tmp}")
        return data

    def keep(self) -> None:
        """Rename the temporary file to ``target`` (OSError when the folder cannot take it)."""
        os.fchmod(self.fd, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
        os.replace(self.tmp, self.target)
        self.tmp = None

    def discard(self) -> None:
        """Close the temporary file and remove it (if it was not kept)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None
