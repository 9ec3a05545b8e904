"""Hand-off to notebooks 05, 06 and 08 (VizWiz-LF Tables 5/26 and Fig. 3, AFGV Table 1, CommVQA Table 1): finding
run files and reading them as tables. Only regular files are read; a record failing the schema is skipped,
counted by file and line (``attrs["report"]``) and warned about, so the notebooks go on with the valid ones."""

from __future__ import annotations

import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import pandas as pd

from vqalib.core import config
from vqalib.core.io import NotRegularFile, json_type, project_root
from vqalib.core.validation import ValidationReport
from vqalib.runner.runfiles import ScanResult, scan_run

RUNS_DIR_ENV = "VQALIB_RUNS_DIR"
# the fields every consumer of run records relies on (notebooks 05, 06, 08; vqalib score), and their JSON types
REQUIRED_FIELDS = {"item_key": (str,), "item_records": (int,), "dataset": (str,), "item_id": (str,),
                   "question_id": (str, int, type(None)), "question": (str,), "model": (str,), "strategy": (str,),
                   "kind": (str,), "final": (bool,), "answer": (str, type(None))}
KINDS = ("answer", "draw", "aggregate", "error")
CHECK = "run record"  # the check's name in the validation report


def default_runs_dir() -> Path:
    """``$VQALIB_RUNS_DIR`` or ``<project>/runs``."""
    return config.get_path(RUNS_DIR_ENV, project_root() / "runs")


def latest_blocks(records: list[dict]) -> dict[str, list[dict]]:
    """Each question's latest block of records (a question written again is its last block), cut by ``item_records``.

    Parameters
    ----------
    records : list of dict
        Complete records of a run file in file order.

    Returns
    -------
    dict of str to list of dict
        ``item_key`` -> that question's last block, in the order of those blocks.
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


def record_problems(record: dict) -> list[str]:
    """What is wrong with one run record against the schema (``runs/README.md``); empty when it is valid.

    Parameters
    ----------
    record : dict
        One parsed line of a run file.
    """
    problems = []
    for name, kinds in REQUIRED_FIELDS.items():
        if name not in record:
            problems.append(f"lacks required field {name!r}")
        elif not isinstance(record[name], kinds) or (isinstance(record[name], bool) and bool not in kinds):
            expected = " or ".join(json_type(kind()) if kind is not type(None) else "null" for kind in kinds)
            problems.append(f"field {name!r} is {json_type(record[name])}, expected {expected}")
    if isinstance(record.get("kind"), str) and record["kind"] not in KINDS:
        problems.append(f"field 'kind' is {record['kind']!r}, expected one of {', '.join(KINDS)}")
    if record.get("kind") == "error" and not (isinstance(record.get("error"), dict)
                                              and isinstance(record["error"].get("stage"), str)):
        problems.append("an error record without error.stage")
    return problems


def checked_blocks(path: str | Path, *, report: ValidationReport) -> tuple[dict[str, list[dict]], ScanResult]:
    """Each question's latest block of one run file, records failing :func:`record_problems` left out and counted.

    Parameters
    ----------
    path : str or Path
        The run file (not a regular file: ``NotRegularFile``).
    report : ValidationReport
        Gets one count per skipped record, with its line as example.

    Returns
    -------
    tuple
        ``item_key`` -> the valid records of its latest block, and the file's :class:`ScanResult`.
    """
    scan = scan_run(path)
    line_of = {id(record): line for record, line in zip(scan.records, scan.lines)}
    kept: dict[str, list[dict]] = {}
    for key, block in latest_blocks(scan.records).items():
        valid = []
        for record in block:
            problems = record_problems(record)
            if problems:
                report.add(file=str(path), check=CHECK, detail="; ".join(problems), action="record skipped",
                           example=f"line {line_of.get(id(record), '?')}")
            else:
                valid.append(record)
        if valid:
            kept[key] = valid
    return kept, scan


def _warn_skipped(path: str | Path, report: ValidationReport) -> int:
    skipped = report.total(check=CHECK, file=str(path))
    if skipped:
        shown = "; ".join(f"{', '.join(report.examples.get(key, []))}: {key[2]}" for key in report.counts
                          if key[0] == str(path) and key[1] == CHECK)
        warnings.warn(f"run file {path}: {skipped} record(s) skipped, not read: {shown[:1500]}", RuntimeWarning,
                      stacklevel=3)
    return skipped


def load_run(path: str | Path | Iterable[str | Path], *, finals_only: bool = False) -> pd.DataFrame:
    """The records of one run file, or several (shards), as a table (VizWiz-LF Tables 5/26, CommVQA Table 1, AFGV).

    Parameters
    ----------
    path : str, Path or iterable of them
        One run file or several (a later file's block of a question wins).
    finals_only : bool
        Keep only the final record of each question.

    Returns
    -------
    pandas.DataFrame
        One row per record plus ``run_file``; ``attrs["report"]`` and ``attrs["skipped_records"]`` the skipped.
    """
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    groups: dict[str, list[dict]] = {}  # item_key -> its latest complete block of records
    report = ValidationReport()
    for p in paths:
        blocks, _ = checked_blocks(p, report=report)
        _warn_skipped(p, report)
        for key, block in blocks.items():
            groups.pop(key, None)  # re-insert: a later file's block wins and moves last
            groups[key] = [{**r, "run_file": str(p)} for r in block]
    frame = pd.DataFrame([r for block in groups.values() for r in block])
    if not frame.empty and finals_only:
        frame = frame[frame["final"]].reset_index(drop=True)
    frame.attrs["report"] = report
    frame.attrs["skipped_records"] = report.total(check=CHECK)
    return frame


def discover_runs(runs_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per run file with model, strategy, dataset, record and error counts (what notebooks 05, 06, 08 find).

    Parameters
    ----------
    runs_dir : str or Path, optional
        The folder searched recursively for ``*.jsonl``; default :func:`default_runs_dir`.

    Returns
    -------
    pandas.DataFrame
        One row per run file; ``answers`` + ``errors`` (latest outcomes) = ``questions``.
    """
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    rows = []
    for path in sorted(runs_dir.glob("**/*.jsonl")):
        report = ValidationReport()
        try:
            blocks, scan = checked_blocks(path, report=report)
        except NotRegularFile as error:
            warnings.warn(f"{error}: skipped (a run file must be a regular file)", RuntimeWarning, stacklevel=2)
            continue
        except FileNotFoundError:  # removed since the listing
            continue
        skipped = _warn_skipped(path, report)
        valid = [r for block in blocks.values() for r in block]

        def values(column: str) -> str:
            return ",".join(sorted({str(r[column]) for r in valid if r.get(column) is not None}))
        # outcomes of each question's latest block: a question written twice counts once
        finals = [r for r in valid if r["final"]]
        errors = [r for r in finals if r["kind"] == "error"]
        stages = pd.Series([r["error"]["stage"] for r in errors], dtype=object).value_counts().to_dict()
        rows.append({"path": str(path), "name": path.stem, "model": values("model"), "model_id": values("model_id"),
                     "revision": values("revision"), "strategy": values("strategy"), "dataset": values("dataset"),
                     "test_model": any(r.get("test_model") is True for r in valid),
                     "records": len(scan.records), "questions": len(blocks),
                     "answers": len(finals) - len(errors), "errors": len(errors),
                     "image_errors": int(stages.get("image", 0)), "model_errors": int(stages.get("model", 0)),
                     "judge_errors": int(stages.get("judge", 0)), "damaged_lines": scan.bad_lines,
                     "skipped_records": skipped,
                     "modified": datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")})
    columns = ["path", "name", "model", "model_id", "revision", "strategy", "dataset", "test_model", "records",
               "questions", "answers", "errors", "image_errors", "model_errors", "judge_errors", "damaged_lines",
               "skipped_records", "modified"]
    return pd.DataFrame(rows, columns=columns)
