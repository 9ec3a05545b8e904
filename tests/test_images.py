"""Image sources for answer generation (vqalib.runner.images): URL cache with hash records, zip members, files, and
hostile sources (decompression bombs, HTML for an image, huge bodies, special files) against a real HTTP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import warnings
import zipfile
from pathlib import Path

import pytest

from conftest import bomb_png, local_file_server, route_server, streamed_body
from vqalib.runner.image_sources import commvqa_source, gqa_source
from vqalib.runner.images import DEFAULT_MAX_BYTES, IMAGE_MAX_BYTES_ENV, ImageError, ImageStore

HTML = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in.</body></html>"
HUGE = 300 * 2**20  # a 300 MB body


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


# --- hostile sources --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_png(folder) -> bytes:
    return (folder / "good.png").read_bytes()


@pytest.fixture
def hostile(good_png):
    """A real local HTTP server: a good image, a 31 KB PNG of 16000 x 16000, an HTML page served as .jpg, and
    300 MB bodies made on the fly, with and without a Content-Length."""
    routes = {"/good.png": ("image/png", good_png), "/bomb.png": ("image/png", bomb_png()),
              "/page.jpg": ("text/html; charset=utf-8", HTML),
              "/huge.jpg": streamed_body(HUGE, declare_length=False),
              "/huge-declared.jpg": streamed_body(HUGE, declare_length=True)}
    with route_server(routes) as server:
        server.routes = routes
        yield server


def cache_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def test_decompression_bombs_are_refused_before_decoding_and_never_cached(hostile, tmp_path):
    bomb = bomb_png()
    assert len(bomb) < 32 * 1024  # a 31 KB PNG of 16000 x 16000
    store = ImageStore(cache_dir=tmp_path / "cache")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Pillow's DecompressionBombWarning must not leak either
        with pytest.raises(ImageError, match=r"over the 89,478,485 pixel cap .*256000000 pixels.*not cached"):
            store.load(f"{hostile.url}/bomb.png")  # Pillow's own check (above twice its limit) is an ImageError too
        # between Pillow's limit and twice it Pillow only warns (and would then decode 300 MB): refused too
        (tmp_path / "mid.png").write_bytes(bomb_png(width=10000, height=10000))
        with pytest.raises(ImageError, match=r"over the 89,478,485 pixel cap .*100000000 pixels"):
            store.load(str(tmp_path / "mid.png"))
    assert store.rejected == 1 and store.downloads == 0 and cache_files(tmp_path / "cache") == []
    # the cap is explicit and configurable; a store that allows more raises Pillow's own check to match
    with pytest.raises(ImageError, match="40 x 30 = 1,200 pixels, over the 1,000 pixel cap"):
        ImageStore(cache_dir=tmp_path / "cache", max_pixels=1000).load(f"{hostile.url}/good.png")
    assert ImageStore(cache_dir=tmp_path / "cache").load(f"{hostile.url}/good.png").image.size == (40, 30)


def test_html_served_for_an_image_is_refused_never_cached_and_fetched_again(hostile, good_png, tmp_path):
    store = ImageStore(cache_dir=tmp_path / "cache")
    for attempt in (1, 2):  # a retry asks the server again: nothing bad was cached
        with pytest.raises(ImageError, match=r"not a decodable image .*the server sent text/html.*not cached"):
            store.load(f"{hostile.url}/page.jpg")
        assert hostile.hits["/page.jpg"] == attempt and cache_files(tmp_path / "cache") == []
    hostile.routes["/page.jpg"] = ("image/jpeg", good_png)  # the server is fixed
    assert store.load(f"{hostile.url}/page.jpg").image.size == (40, 30)
    assert ImageStore(cache_dir=tmp_path / "cache").load(f"{hostile.url}/page.jpg").image.size == (40, 30)
    assert hostile.hits["/page.jpg"] == 3 and store.downloads == 1 and store.rejected == 2


def test_a_non_image_cached_by_an_older_version_is_dropped_and_fetched_again(hostile, tmp_path):
    store = ImageStore(cache_dir=tmp_path / "cache")
    url = f"{hostile.url}/good.png"
    cached = store.cached_path(url)  # what the old cache kept: the HTML, with a matching hash record
    cached.parent.mkdir(parents=True)
    cached.write_bytes(HTML)
    cached.with_name(cached.name + ".json").write_text(json.dumps({"url": url, "sha256": __import__(
        "hashlib").sha256(HTML).hexdigest(), "bytes": len(HTML)}))
    assert store.load(url).image.size == (40, 30)
    assert store.evicted == 1 and store.downloads == 1 and hostile.hits["/good.png"] == 1
    assert cached.read_bytes() != HTML


def test_oversized_bodies_are_cut_while_streaming_and_never_cached(hostile, tmp_path):
    store = ImageStore(cache_dir=tmp_path / "cache")
    assert store.max_bytes == DEFAULT_MAX_BYTES == 50 * 2**20
    with pytest.raises(ImageError, match=r"body over the 50.0 MiB cap \(VQALIB_IMAGE_MAX_BYTES\); download stopped"):
        store.load(f"{hostile.url}/huge.jpg")
    with pytest.raises(ImageError, match=r"announces 300.0 MiB, over the 50.0 MiB cap"):
        store.load(f"{hostile.url}/huge-declared.jpg")  # refused from the header, body not read
    assert store.rejected == 2 and cache_files(tmp_path / "cache") == []  # no .part files left either
    for path in ("/huge.jpg", "/huge-declared.jpg"):  # the server's writes stop soon after the client leaves
        for _ in range(100):
            if path in hostile.sent:
                break
            threading.Event().wait(0.05)
    assert hostile.sent["/huge.jpg"] < 100 * 2**20 and hostile.sent["/huge-declared.jpg"] < 100 * 2**20
    # files and zip members have the same cap
    small = ImageStore(cache_dir=tmp_path / "cache", max_bytes=64)
    big = tmp_path / "big.png"
    from PIL import Image

    Image.effect_noise((64, 64), 50).save(big)
    with pytest.raises(ImageError, match="image file of .* is over the 0.0 MiB cap"):
        small.load(str(big))
    with zipfile.ZipFile(tmp_path / "images.zip", "w") as archive:
        archive.write(big, "images/big.png")
    with pytest.raises(ImageError, match="member of .* is over the"):
        small.load(f"zip:{tmp_path / 'images.zip'}!big.png")


def peak_rss_mb(command: list[str]) -> tuple[float, str]:
    """Run ``command`` and return its peak RSS in MB and its output. Measured as RUSAGE_CHILDREN of a small
    wrapper process: a child forked straight from this (large) test process would report the parent's size."""
    wrapper = ("import resource, subprocess, sys\n"
               "run = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(run.stdout + run.stderr)\n"
               "print(run.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    done = subprocess.run([sys.executable, "-c", wrapper, *command], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    *output, last = done.stdout.strip().splitlines()
    code, kilobytes = map(int, last.split())
    assert code == 0, "\n".join(output)
    return kilobytes / 1024, "\n".join(output)  # ru_maxrss is in kilobytes on Linux


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss units and fork accounting are Linux's")
def test_memory_stays_bounded_for_a_300_mb_body(hostile, tmp_path):
    """A fresh process refuses the 300 MB body with its peak RSS under 200 MB (and no more than importing costs)."""
    load = ("import sys\nfrom vqalib.runner.images import ImageStore, ImageError\n"
            "try:\n    ImageStore(cache_dir=sys.argv[2]).load(sys.argv[1])\n"
            "except ImageError as error:\n    print(error)\n")
    peak, output = peak_rss_mb([sys.executable, "-c", load, f"{hostile.url}/huge.jpg", str(tmp_path / "cache")])
    assert "download stopped" in output
    imports, _ = peak_rss_mb([sys.executable, "-c", "import vqalib.runner.images, PIL.Image, requests"])
    assert peak < 200, f"peak RSS {peak:.0f} MB while refusing a 300 MB body"
    assert peak - imports < 30, f"peak RSS {peak:.0f} MB, {imports:.0f} MB of it imports"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX named pipes")
def test_special_files_are_refused_without_being_opened(folder, tmp_path):
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    store = ImageStore(cache_dir=tmp_path / "cache")
    cases = {str(fifo): "named pipe", str(tmp_path): "directory", os.devnull: "character device",
             f"zip:{fifo}!good.png": "named pipe"}
    outcome: dict[str, str] = {}

    def load_all() -> None:  # in a thread: a regression would block on the pipe, not hang the test run
        for source in cases:
            try:
                store.load(source)
            except ImageError as error:
                outcome[source] = str(error)
    worker = threading.Thread(target=load_all, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "loading a special file blocked"
    for source, kind in cases.items():
        assert kind in outcome[source] and "not a regular file" in outcome[source]


def test_image_limits_from_the_environment_are_checked(monkeypatch, tmp_path):
    monkeypatch.setenv(IMAGE_MAX_BYTES_ENV, "fifty")
    with pytest.raises(ValueError, match="VQALIB_IMAGE_MAX_BYTES='fifty': expected a whole number >= 1"):
        ImageStore(cache_dir=tmp_path)
    monkeypatch.setenv(IMAGE_MAX_BYTES_ENV, "1000")
    assert ImageStore(cache_dir=tmp_path).max_bytes == 1000


# --- the download deadline and a cache that cannot be written ----------------------------------------

def trickle(data: bytes, *, every: float, headers_too: bool = False):
    """A route sending ``data`` two bytes at a time every ``every`` seconds (each read well within any timeout);
    with ``headers_too`` the status line and headers trickle as well. Stops when the client leaves."""
    def respond(handler) -> None:
        head = (b"HTTP/1.0 200 OK\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n" % len(data))
        slow = head + data if headers_too else data
        try:
            if not headers_too:
                handler.wfile.write(head)
                handler.wfile.flush()
            for k in range(0, len(slow), 2):
                handler.wfile.write(slow[k:k + 2])
                handler.wfile.flush()
                threading.Event().wait(every)
        except (BrokenPipeError, ConnectionResetError):
            pass
        handler.close_connection = True
    return respond


def download_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "vqalib image download"]


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers"])
@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_a_trickling_download_is_cut_at_the_deadline_and_nothing_cached(headers_too, good_png, tmp_path, monkeypatch):
    """2 bytes/s, each read far within the 5 s timeout: without a deadline one image would hold the run for minutes."""
    monkeypatch.setenv("VQALIB_IMAGE_DEADLINE", "1.5")
    with route_server({"/slow.png": trickle(good_png, every=1.0, headers_too=headers_too)}) as server:
        url = f"{server.url}/slow.png"
        store = ImageStore(cache_dir=tmp_path / "cache", timeout=5)
        assert store.deadline == 1.5  # from VQALIB_IMAGE_DEADLINE
        started = time.monotonic()
        with pytest.raises(ImageError) as refused:
            store.load(url)
        assert time.monotonic() - started < 15  # the deadline, not len(good_png) / 2 seconds
        message = str(refused.value)
        assert message.startswith(f"{url}: download not finished within the deadline of 1.5 s (VQALIB_IMAGE_DEADLINE")
        assert "nothing cached" in message
        assert store.late == 1 and store.downloads == 0 and cache_files(tmp_path / "cache") == []
        for _ in range(200):  # the abandoned reader stops at its next read and leaves nothing either
            if not download_threads():
                break
            threading.Event().wait(0.05)
        assert not download_threads() and cache_files(tmp_path / "cache") == []


def test_the_deadline_setting_is_checked(monkeypatch, tmp_path):
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv("VQALIB_IMAGE_DEADLINE", bad)
        with pytest.raises(ValueError, match=f"VQALIB_IMAGE_DEADLINE='{bad}': expected a positive finite number"):
            ImageStore(cache_dir=tmp_path)
    monkeypatch.delenv("VQALIB_IMAGE_DEADLINE")
    assert ImageStore(cache_dir=tmp_path).deadline == 120.0


def test_an_unwritable_cache_warns_naming_it_and_the_image_is_still_used(server, tmp_path):
    base, hits = server
    (tmp_path / "blocker").write_text("a file where the cache folder should be")
    cache = tmp_path / "blocker" / "cache"  # mkdir fails (not a directory), whoever runs the test
    store = ImageStore(cache_dir=cache)
    with pytest.warns(RuntimeWarning, match=rf"image cache {cache} cannot be written .*used without being cached"):
        loaded = store.load(f"{base}/good.png")
    assert loaded.image.size == (40, 30) and store.uncached == 1 and store.downloads == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per store, not once per image
        assert store.load(f"{base}/good.png").sha256 == loaded.sha256
    assert store.uncached == 2 and hits["/good.png"] >= 2


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and EFBIG as on Linux")
def test_a_full_disk_while_caching_keeps_the_image(tmp_path):
    """A real write failure in the middle of the body: a child process may write files of at most 1000 bytes
    (RLIMIT_FSIZE; the kernel answers EFBIG, as it answers ENOSPC on a full disk). The image is used, whole, and
    the warning names the cache; nothing half-written is left in it."""
    from PIL import Image

    Image.effect_noise((64, 64), 50).convert("RGB").save(tmp_path / "noise.png")
    data = (tmp_path / "noise.png").read_bytes()
    assert len(data) > 5000
    script = (
        "import hashlib, resource, sys, warnings\n"
        "from vqalib.runner.images import ImageStore\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        "store = ImageStore(cache_dir=sys.argv[2])\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    loaded = store.load(sys.argv[1])\n"
        "print(loaded.sha256, loaded.image.size, store.uncached, store.downloads)\n"
        "print(*[str(w.message) for w in seen], sep='\\n')\n")
    with route_server({"/noise.png": ("image/png", data)}) as served:
        done = subprocess.run([sys.executable, "-c", script, f"{served.url}/noise.png", str(tmp_path / "cache")],
                              capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-3000:]
    first, warning = done.stdout.splitlines()[:2]
    import hashlib

    assert first == f"{hashlib.sha256(data).hexdigest()} (64, 64) 1 0"
    assert warning.startswith(f"image cache {tmp_path / 'cache'} cannot be written ([Errno 27] File too large)")
    assert cache_files(tmp_path / "cache") == []
