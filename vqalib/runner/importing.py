"""``vqalib import``: a model's answers made elsewhere (lmms-eval, VLMEvalKit, a plain table) written as a schema-1
run file with their provenance, so the notebooks fill VizWiz-LF Tables 5/26 and Fig. 3, CommVQA Table 1 and AFGV
tier rows from it as from a ``vqalib run``. Question text and reference come from the dataset, not the file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import json

from vqalib.core.io import open_regular, write_atomic
from vqalib.core.out_folders import UnsafeOutput, tracked_files
from vqalib.runner.runfiles import SCHEMA_VERSION, encode_block, item_key

DEFAULT_STRATEGY = {"vizwiz-lf": "vanilla", "afgv": "short-answer"}
COMMVQA_STRATEGY = {"baseline": "commvqa-baseline", "contextual": "commvqa-contextual"}


def import_records(matched: pd.DataFrame, *, items: pd.DataFrame, dataset: str, model: str, strategy: str,
                   source: dict) -> list[dict]:
    """Run records (schema 1) of imported answers, one final ``answer`` record per question.

    Parameters
    ----------
    matched : pandas.DataFrame
        ``item_id`` and ``answer`` per answered question.
    items : pandas.DataFrame
        The dataset's items (:mod:`vqalib.runner.questions`).
    dataset : str
        ``vizwiz-lf``, ``commvqa`` or ``afgv``.
    model : str
        The model's name.
    strategy : str
        The records' strategy (what the notebooks select runs by).
    source : dict
        The answers file's provenance.
    """
    table = items.assign(item_id=items["item_id"].astype(str)).set_index("item_id")
    records = []
    for item_id, answer in zip(matched["item_id"].astype(str), matched["answer"]):
        item = table.loc[item_id]
        records.append({
            "schema": SCHEMA_VERSION, "dataset": dataset, "item_id": item_id,
            "question_id": None if pd.isna(item.get("question_id")) else str(item["question_id"]),
            "tier": item.get("tier") if isinstance(item.get("tier"), str) else None,
            "question": item["question"], "reference": _reference(item.get("reference")),
            "image": None, "image_sha256": None, "model": model, "model_id": None, "revision": None,
            "test_model": False, "dtype": None, "device": None, "strategy": strategy,
            "item_key": item_key(dataset=dataset, item_id=item_id, model=model, strategy=strategy),
            "generation": None, "kind": "answer", "sample": 0, "final": True, "prompt": None, "answer": answer,
            "seed": None, "stages": None, "judge": None, "error": None, "item_records": 1, "seconds": None,
            "model_seconds": None, "started_at": None, "engine": "import", "shard": "0/1",
            "imported_from": {k: source.get(k) for k in ("path", "format", "toolkit", "version", "sha256")}})
    return records


def _reference(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return list(value)
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else value


def write_run(records: list[dict], out: str | Path, *, overwrite: bool = False) -> Path:
    """Write imported records as a run file, whole (temporary file and rename); never appended to.

    Parameters
    ----------
    records : list of dict
        :func:`import_records`.
    out : str or Path
        The run file (``runs/<name>.jsonl``).
    overwrite : bool, default False
        Replace an existing run file.
    """
    out = Path(out)
    check_run_out(out, overwrite=overwrite)
    return write_atomic(out, b"".join(encode_block([r]) for r in records))


def _is_run_file(path: Path) -> bool:
    """Whether the first line of ``path`` is a run-file record (``schema`` and ``item_key``)."""
    try:
        with open_regular(path, what="run file") as handle:
            record = json.loads(handle.readline(1 << 20))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(record, dict) and "schema" in record and "item_key" in record


def check_run_out(out: str | Path, *, overwrite: bool = False) -> None:
    """Refuse an import's ``--out`` that is not a new path or (with ``overwrite``) an untracked run file.

    Parameters
    ----------
    out : str or Path
        The run file to write.
    overwrite : bool, default False
        Whether an existing run file may be replaced.
    """
    out = Path(out)
    refuse = f"vqalib import --out {out}: refused, "
    if out.is_symlink():
        raise UnsafeOutput(refuse + "it is a symbolic link; give the file itself")
    if not out.exists():
        return
    if not out.is_file():
        raise UnsafeOutput(refuse + "it is a folder or not a regular file; give a run file, e.g. runs/NAME.jsonl")
    if not overwrite:
        raise FileExistsError(f"{out} exists; give another --out or --overwrite")
    if not _is_run_file(out):
        raise UnsafeOutput(refuse + "it is not a run file of vqalib (its first line has no `schema` and `item_key`); "
                           "--overwrite replaces only a run file")
    if tracked_files(out):
        raise UnsafeOutput(refuse + "git tracks it; a committed file is not overwritten by an import")
