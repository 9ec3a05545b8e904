"""Inspect AI eval logs (``.eval``) as JSON lines, read by inspect_ai's own ``read_eval_log``: inspect_ai lives in
its own venv (its pins clash with ours), so ``vqalib score`` runs this file as a script with that venv's Python
(``VQALIB_INSPECT_PYTHON``, default ``build/inspect-venv/bin/python`` from ``make inspect-env``). Run as a script it
imports nothing of vqalib; one line per sample: id, epoch, metadata, ``output.completion``, inspect_ai's version.
Before inspect_ai reads a log, its zip directory is checked against ``VQALIB_MAX_EVAL_BYTES`` and each member is
inflated, streamed, to see that it holds no more than it declares (here for the methods this Python inflates, and
again in inspect_ai's venv, whose zipfile also inflates the methods inspect_ai writes)."""

from __future__ import annotations

import copy
import json
import sys
import zipfile
import zlib
from pathlib import Path

INSPECT_PYTHON_ENV = "VQALIB_INSPECT_PYTHON"
SAMPLE_KEY = "inspect_sample_id"  # what marks a converted line
INFLATES_PAST = 3  # the converter's exit status for a member that inflates past its declared size (stderr: JSON)
_CONVERTED: dict[tuple, list[dict]] = {}  # (path, size, mtime) -> its records: rows() and version() convert once


def is_eval_log(path: Path) -> bool:
    """Whether ``path`` is an Inspect ``.eval`` log: the suffix, or a zip holding Inspect's header or journal."""
    if path.suffix.lower() == ".eval":
        return True
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist()[:4096])
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    return "header.json" in names or "_journal/start.json" in names


def inflated_past(path) -> dict | None:
    """The first member of the zip at ``path`` that inflates past the size its directory declares, as ``member``,
    ``declared``, ``seen`` and ``packed``; each member is streamed and stopped one byte past its declared size. A
    member this Python cannot inflate (another method, damage), or a file that is no zip, is left to the reader.

    Parameters
    ----------
    path : str, Path or binary file
        The zip (an Inspect ``.eval`` log), or an open seekable file of it.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        return None  # not a zip: inspect_ai's reader says so
    with archive:
        for info in archive.infolist():
            probe = copy.copy(info)
            probe.file_size, probe.CRC = info.file_size + 1, None  # read one byte past it; the reader checks CRCs
            # zipfile bounds a deflate read by its output; other decompressors inflate a whole read: small reads
            step = 1 << 20 if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) else 1 << 12
            seen = 0
            try:
                with archive.open(probe) as member:
                    while seen <= info.file_size and (chunk := member.read1(step)):
                        seen += len(chunk)
            except (NotImplementedError, RuntimeError, zipfile.BadZipFile, EOFError, OSError, zlib.error):
                continue
            if seen > info.file_size:
                return {"member": info.filename, "declared": info.file_size, "seen": seen,
                        "packed": info.compress_size}
    return None


def _log_problem(path: Path) -> str | None:
    """Why the log is not handed to inspect_ai: over the declared limit, or a member inflating past its size."""
    from vqalib.core.input_limits import eval_log_problem, inflation_problem
    from vqalib.core.io import open_regular

    with open_regular(path, what="Inspect eval log") as handle:  # a pipe is refused, not waited on
        problem = eval_log_problem(handle)
        if problem is None and (found := inflated_past(handle)):
            problem = inflation_problem(found["member"], declared=found["declared"], seen=found["seen"],
                                        packed=found["packed"])
    return problem


def inspect_python() -> Path:
    """The Python that has inspect_ai: ``VQALIB_INSPECT_PYTHON``, else the project's ``build/inspect-venv``."""
    from vqalib.core import config
    from vqalib.core.io import project_root

    value = config.get(INSPECT_PYTHON_ENV)
    if value is not None and not Path(value).expanduser().exists():
        return Path(value)  # named as missing, with how to make it, when the log is read
    return config.get_path(INSPECT_PYTHON_ENV, project_root() / "build" / "inspect-venv" / "bin" / "python")


def converted_records(path: Path) -> list[dict]:
    """The log's samples as this script writes them, each with ``_line`` (its sample number), converted once per
    file version; a missing inspect_ai, a failed read or a bad line is an error naming the log."""
    import subprocess

    from vqalib.core.io import DataFormatError

    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _CONVERTED:
        return _CONVERTED[key]
    problem = _log_problem(path)
    if problem:
        raise DataFormatError(f"{path}: {problem}")
    python = inspect_python()
    if not python.is_file():
        raise FileNotFoundError(f"{path}: an Inspect eval log is read with inspect_ai's own reader, and {python} is "
                                f"missing: `make inspect-env` installs inspect_ai there (or set {INSPECT_PYTHON_ENV} "
                                f"to a Python that has inspect_ai)")
    done = subprocess.run([str(python), __file__, str(path)], capture_output=True, text=True, timeout=1800)
    if done.returncode == INFLATES_PAST:  # a member only inspect_ai's zipfile inflates (its compression method)
        from vqalib.core.input_limits import inflation_problem

        try:
            found = json.loads(done.stderr.strip().splitlines()[-1])
            problem = inflation_problem(found["member"], declared=found["declared"], seen=found["seen"],
                                        packed=found["packed"])
        except (ValueError, LookupError, TypeError):
            problem = None  # not the converter's report: the message below quotes what it said
        if problem:
            raise DataFormatError(f"{path}: {problem}")
    if done.returncode != 0:
        raise DataFormatError(f"{path}: inspect_ai's read_eval_log (run by {python}) failed: "
                              f"{done.stderr.strip()[-1500:]}")
    records = []
    for number, line in enumerate(done.stdout.splitlines(), start=1):
        try:
            records.append({**json.loads(line), "_line": number})
        except ValueError as err:
            raise DataFormatError(f"{path}: sample {number}: the converter wrote no JSON ({err})") from None
    if not records:
        raise DataFormatError(f"{path}: the Inspect log holds no samples (an eval that stopped before any, or a "
                              f"header-only log)")
    _CONVERTED[key] = records
    return records


def _write_samples(log_path: str, out) -> None:
    """Each sample of the log as one JSON line (run in inspect_ai's venv)."""
    from importlib.metadata import version

    try:
        import zipfile_zstd  # noqa: F401  (registers the zstd method with zipfile, as inspect_ai's reader does)
    except ImportError:
        pass
    found = inflated_past(log_path)  # before inspect_ai's reader inflates anything
    if found:
        print(json.dumps(found), file=sys.stderr)
        sys.exit(INFLATES_PAST)
    from inspect_ai.log import read_eval_log

    log = read_eval_log(log_path)
    ran = (log.eval.packages or {}).get("inspect_ai") or version("inspect_ai")  # the version that ran the eval
    for sample in log.samples or []:
        out.write(json.dumps({SAMPLE_KEY: sample.id, "epoch": sample.epoch, "metadata": sample.metadata or {},
                              "completion": sample.output.completion if sample.output else None,
                              "error": sample.error.message if sample.error else None, "task": log.eval.task,
                              "inspect_ai_version": ran}, ensure_ascii=False, default=str) + "\n")


if __name__ == "__main__":
    _write_samples(sys.argv[1], sys.stdout)
