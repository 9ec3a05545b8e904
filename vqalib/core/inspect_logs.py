"""Inspect AI eval logs (``.eval``) as JSON lines, read by inspect_ai's own ``read_eval_log``: inspect_ai lives in
its own venv (its pins clash with ours), so ``vqalib score`` runs this file as a script with that venv's Python
(``VQALIB_INSPECT_PYTHON``, default ``build/inspect-venv/bin/python`` from ``make inspect-env``). Run as a script it
imports nothing of vqalib; one line per sample: id, epoch, metadata, ``output.completion``, inspect_ai's version."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

INSPECT_PYTHON_ENV = "VQALIB_INSPECT_PYTHON"
SAMPLE_KEY = "inspect_sample_id"  # what marks a converted line
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


def inspect_python() -> Path:
    """The Python that has inspect_ai: ``VQALIB_INSPECT_PYTHON``, else the project's ``build/inspect-venv``."""
    from vqalib.core import config
    from vqalib.core.io import project_root

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
    python = inspect_python()
    if not python.is_file():
        raise FileNotFoundError(f"{path}: an Inspect eval log is read with inspect_ai's own reader, and {python} is "
                                f"missing: `make inspect-env` installs inspect_ai there (or set {INSPECT_PYTHON_ENV} "
                                f"to a Python that has inspect_ai)")
    done = subprocess.run([str(python), __file__, str(path)], capture_output=True, text=True, timeout=1800)
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
