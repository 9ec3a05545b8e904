"""Shared fixtures: the real release (fetched from the mirror if needed) and small hand-made files."""

from __future__ import annotations

import collections
import contextlib
import functools
import http.server
import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from vqalib.core import fetch, io
from vqalib.papers.vizwiz_lf import classifier, classifier_features, loading, taxonomy

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``stage`` first, ``model_outputs`` last: `make test` runs two workers (pytest-xdist,
    work stealing), so one starts the full notebook run, whose first stage is most of the suite's model
    work, at once, and the tests that read the same model outputs come late and find them cached."""
    rank = {"stage": 0, "model_outputs": 2}
    items.sort(key=lambda item: min((rank[m.name] for m in item.iter_markers() if m.name in rank), default=1))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """data/raw with every registered file, fetched from $VQALIB_DATA_MIRROR (or upstream) if absent."""
    path = io.default_data_dir()
    fetch.fetch(data_dir=path, mirror=io.default_mirror(), progress=False)
    return path


@pytest.fixture(scope="session")
def vizwiz(data_dir):
    return loading.load_vizwiz_lf(data_dir=data_dir)


@pytest.fixture
def small_file(tmp_path) -> Path:
    """A copy of the hand-made three-entry VizWiz-LF file in a scratch folder."""
    target = tmp_path / "small.json"
    shutil.copy(FIXTURES / "vizwiz_small.json", target)
    return target


@contextlib.contextmanager
def local_file_server(directory: Path):
    """Serve ``directory`` over HTTP on 127.0.0.1 (no network); yields (base URL, GET counts per path)."""
    hits: dict[str, int] = {}

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits[self.path] = hits.get(self.path, 0) + 1
            super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", hits
    finally:
        httpd.shutdown()


def completion(text):
    """An OpenAI chat-completions response body holding ``text``."""
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


class ScriptedHandler(http.server.BaseHTTPRequestHandler):
    """Records each request, then answers with the next scripted (status, payload, delay[, options]);
    "Rating: 3" when none. ``options`` (optional): ``headers`` (extra response headers), ``body``
    (raw bytes sent instead of the JSON payload: non-JSON or empty bodies), ``trickle`` (seconds
    between single bytes of the body: a server that keeps every read alive but never finishes)."""

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        script = self.server.script
        status, payload, delay, *rest = script.popleft() if script else (200, completion("Rating: 3"), 0)
        options = rest[0] if rest else {}
        time.sleep(delay)
        data = options["body"] if "body" in options else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in options.get("headers", {}).items():
                self.send_header(name, value)
            self.end_headers()
            if options.get("trickle"):
                for k in range(len(data)):
                    self.wfile.write(data[k:k + 1])
                    time.sleep(options["trickle"])
            else:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def openai_server():
    """A local OpenAI-compatible chat endpoint on 127.0.0.1 (no network); ``.url`` is its base URL,
    ``.seen`` the requests, ``.script`` a deque of replies to give before the default."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ScriptedHandler)
    httpd.seen, httpd.script = [], collections.deque()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def bomb_png(*, width: int = 16000, height: int = 16000) -> bytes:
    """A valid 1-bit PNG declaring ``width`` x ``height`` black pixels: 31 KB at 16000 x 16000, 768 MB as RGB
    (a decompression bomb), built row by row so the test itself never holds the pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte + packed bits
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # bit depth 1, greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def streamed_body(total: int, *, declare_length: bool, content_type: str = "image/jpeg"):
    """A route answering with ``total`` bytes made on the fly (never held in memory), with or without a
    Content-Length; ``handler.server.sent[path]`` records how many bytes the client took before leaving."""
    def respond(handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        if declare_length:
            handler.send_header("Content-Length", str(total))
        handler.end_headers()
        block, sent = b"\xff\xd8\xff\xe0" + bytes(65532), 0  # a JPEG start, then zeros
        try:
            while sent < total:
                n = min(len(block), total - sent)
                handler.wfile.write(block[:n])
                sent += n
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client refused the body and hung up
        handler.server.sent[handler.path] = sent
    return respond


def gated_body(data: bytes, *, gate: threading.Event, content_type: str = "image/png"):
    """A route that answers only once ``gate`` is set: holds a run at a known question, whatever the machine."""
    def respond(handler) -> None:
        gate.wait(timeout=600)
        serve_bytes(handler, data, content_type=content_type)
    return respond


def serve_bytes(handler, data: bytes, *, content_type: str) -> None:
    try:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


@contextlib.contextmanager
def route_server(routes: dict):
    """An HTTP server on 127.0.0.1 (no network) answering GET ``path`` from ``routes`` (mutable while it runs):
    ``(content_type, bytes)`` or a callable taking the request handler; 404 otherwise. Yields an object with
    ``.url`` (base URL), ``.hits`` (GETs per path) and ``.sent`` (bytes of streamed bodies actually sent)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.server.hits[self.path] = self.server.hits.get(self.path, 0) + 1
            route = routes.get(self.path)
            if route is None:
                self.send_error(404)
            elif callable(route):
                route(self)
            else:
                serve_bytes(self, route[1], content_type=route[0])

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.hits, httpd.sent = {}, {}
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def cv_inputs():
    """Random features and role labels of 80 sentences in 40 questions, two grouped folds and the
    parameters of a fast (logistic-regression, untuned) cross-validation: the inputs of the
    classifiers' out-of-fold step (``vqalib.papers.vizwiz_lf.classifier_cv._out_of_fold``)."""
    import numpy as np
    import pandas as pd


    n = 80
    rng = np.random.default_rng(0)
    width = classifier_features.EMBED_DIM * (2 + len(classifier_features.HIDDEN_LAYERS)) + len(classifier_features.CONTEXT_FEATURES)
    units = pd.DataFrame({"source": ["A"] * n, "question_id": np.arange(n) // 2, "sentence_index": np.arange(n) % 2,
                          "sentence": [f"sentence {k}" for k in range(n)], "question": "a question?"})
    units["answer_id"] = "A|" + units["question_id"].astype(str)
    params = dict(kind="role", seed=0, estimator="logreg", exclude_sources=(), tune=False, inner_splits=2,
                  encoder="test")
    return (rng.normal(size=(n, width)), (rng.uniform(size=(n, len(taxonomy.ROLES))) < 0.4).astype(int), units,
            classifier.question_folds(units, n_splits=2, seed=0), params)


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one intra-op thread for a module's tiny models (2 shared cores: more threads only contend); the
    runner test modules use it for all their tests (``pytestmark``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
