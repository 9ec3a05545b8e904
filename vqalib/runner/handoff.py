"""Hand-off to the notebooks: finding run files and reading them as tables.

Notebooks 05, 06 and 08 use :func:`discover_runs` and :func:`load_run` to fill the model rows of
VizWiz-LF Tables 5 and 26 and Fig. 3 (notebook 05), AFGV Table 1 (notebook 06) and CommVQA
Table 1 (notebook 08) from the runner's output.

Configuration: ``VQALIB_RUNS_DIR`` (default ``<project>/runs``) for :func:`discover_runs`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import pandas as pd

from vqalib.core import config
from vqalib.core.io import project_root
from vqalib.runner.runfiles import scan_run

RUNS_DIR_ENV = "VQALIB_RUNS_DIR"


def default_runs_dir() -> Path:
    """``$VQALIB_RUNS_DIR`` or ``<project>/runs``."""
    return config.get_path(RUNS_DIR_ENV, project_root() / "runs")


def latest_blocks(records: list[dict]) -> dict[str, list[dict]]:
    """Each question's latest block of records (a question written again, e.g. by ``--retry-errors``, is
    represented by its last block), in the order of those last blocks. Blocks are cut by their
    ``item_records`` count, so a block written right after an earlier one of the same question stays apart.
    Used by :func:`load_run` and :func:`discover_runs` (the model rows of VizWiz-LF Tables 5/26, CommVQA
    Table 1, AFGV Table 1).

    Parameters
    ----------
    records : list of dict
        Complete records of a run file in file order (:attr:`vqalib.runner.runfiles.ScanResult.records`).

    Returns
    -------
    dict of str to list of dict
        ``item_key`` -> that question's last block of records.
    """
    latest: dict[str, list[dict]] = {}
    start = 0
    while start < len(records):
        end = start + max(int(records[start].get("item_records") or 1), 1)
        block = records[start:end]
        latest.pop(block[0]["item_key"], None)
        latest[block[0]["item_key"]] = block
        start = end
    return latest


def load_run(path: str | Path | Iterable[str | Path], *, finals_only: bool = False) -> pd.DataFrame:
    """The records of one run file (or several, e.g. shards) as a table (input of VizWiz-LF Tables 5/26,
    CommVQA Table 1, AFGV Table 1).

    Incomplete questions and damaged lines are left out; when a question appears twice (a
    rerun with ``--retry-errors``) its later records win. ``finals_only`` keeps one row per
    question: its answer, aggregate or error.

    Parameters
    ----------
    path : str, Path or iterable of them
        One run file or several (their blocks in order: a later file's block of a question wins).
    finals_only : bool
        Keep only the final record of each question.

    Returns
    -------
    pandas.DataFrame
        One row per record with the record's fields and ``run_file``; empty when there are none.
    """
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    groups: dict[str, list[dict]] = {}  # item_key -> its latest complete block of records
    for p in paths:
        for key, block in latest_blocks(scan_run(p).records).items():
            groups.pop(key, None)  # re-insert: a later file's block wins and moves last
            groups[key] = [{**r, "run_file": str(p)} for r in block]
    frame = pd.DataFrame([r for block in groups.values() for r in block])
    if frame.empty:
        return frame
    if finals_only:
        frame = frame[frame["final"]].reset_index(drop=True)
    return frame


def discover_runs(runs_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per run file under ``runs_dir`` with model, strategy, dataset, record and error counts
    (how notebooks 05, 06 and 08 find model outputs for VizWiz-LF Tables 5/26, AFGV Table 1, CommVQA Table 1).

    ``records`` counts every complete record line; ``answers`` and ``errors`` count each question's
    latest outcome, so they add up to ``questions`` even when a question was written again.

    Parameters
    ----------
    runs_dir : str or Path, optional
        The folder searched (recursively) for ``*.jsonl`` files; default :func:`default_runs_dir`.

    Returns
    -------
    pandas.DataFrame
        One row per run file, sorted by path.
    """
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    rows = []
    for path in sorted(runs_dir.glob("**/*.jsonl")):
        scan = scan_run(path)
        frame = pd.DataFrame(scan.records)
        # outcomes of each question's latest block: a question written twice counts once
        latest = pd.DataFrame([r for block in latest_blocks(scan.records).values() for r in block])

        def values(column: str) -> str:
            return ",".join(sorted(map(str, frame[column].dropna().unique()))) if column in frame else ""
        finals = latest[latest["final"]] if not latest.empty else latest
        errors = finals[finals["kind"] == "error"] if not latest.empty else latest
        stages = errors["error"].map(lambda e: e["stage"]).value_counts().to_dict() if not errors.empty else {}
        rows.append({"path": str(path), "name": path.stem, "model": values("model"), "model_id": values("model_id"),
                     "revision": values("revision"), "strategy": values("strategy"), "dataset": values("dataset"),
                     "test_model": bool(frame["test_model"].any()) if "test_model" in frame else False,
                     "records": len(scan.records), "questions": len(scan.finished),
                     "answers": int(len(finals) - len(errors)), "errors": int(len(errors)),
                     "image_errors": int(stages.get("image", 0)), "model_errors": int(stages.get("model", 0)),
                     "judge_errors": int(stages.get("judge", 0)), "damaged_lines": scan.bad_lines,
                     "modified": datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")})
    columns = ["path", "name", "model", "model_id", "revision", "strategy", "dataset", "test_model", "records",
               "questions", "answers", "errors", "image_errors", "model_errors", "judge_errors", "damaged_lines",
               "modified"]
    return pd.DataFrame(rows, columns=columns)
