"""Which notebook cell saved each table and figure: the log :func:`vqalib.core.report.save` and
:func:`vqalib.core.figure_files.save_figure` append to under ``vqalib reproduce``, and the record it writes from
it, ``figures/SAVED_BY.json``, by which the reviewer site links each result to its cell.
"""

from __future__ import annotations

import json
from pathlib import Path

from vqalib.core import config
from vqalib.core.io import write_atomic

FILE = "SAVED_BY.json"  # in a figures folder: file -> {"notebook", "cell"} (the cell's id)
LOG_ENV = "VQALIB_SAVED_BY_LOG"  # set by `vqalib reproduce` for each kernel; unset, nothing is logged


def _cell_number() -> int | None:
    """The number (``In [n]``) of the notebook cell running now; None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    history = getattr(get_ipython(), "history_manager", None)
    return len(history.input_hist_raw) - 1 if history is not None else None  # the running cell is stored first


def log(path: Path, outcome: str, **note) -> None:
    """Append the file, what the save did and the running cell's number to ``$VQALIB_SAVED_BY_LOG`` (unset: nothing).

    Parameters
    ----------
    path : Path
    outcome : str
        "written", "kept" or "unchanged".
    **note
        More fields of the line.
    """
    target = config.get(LOG_ENV)
    if target is not None:
        with open(target, "a", encoding="utf-8") as out:
            out.write(json.dumps({"file": Path(path).name, "cell": _cell_number(), "outcome": outcome, **note}) + "\n")


def logged(path: Path | None = None) -> list[dict]:
    """The lines logged so far ([] without a log).

    Parameters
    ----------
    path : Path, optional
        Default ``$VQALIB_SAVED_BY_LOG``.
    """
    path = path or config.get(LOG_ENV)
    if path is None or not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def cells(lines: list[dict], nb) -> dict[str, str]:
    """Each logged file's cell id in the executed notebook, by execution count (a file's last save wins).

    Parameters
    ----------
    lines : list of dict
    nb : nbformat.NotebookNode
    """
    ids = {c.execution_count: c.id for c in nb.cells if c.cell_type == "code" and c.get("execution_count")}
    return {line["file"]: ids[line["cell"]] for line in lines if line.get("cell") in ids}


def read(figures: Path) -> dict[str, dict]:
    """The record of a figures folder: file name -> ``{"notebook", "cell"}`` ({} without one).

    Parameters
    ----------
    figures : Path
    """
    path = Path(figures) / FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def write(figures: Path, saved: dict[str, dict[str, str]]) -> Path:
    """Write the record whole, the entries of the notebooks in ``saved`` replaced, the others' kept.

    Parameters
    ----------
    figures : Path
    saved : dict of str to dict
        Notebook name -> :func:`cells` of its run.
    """
    record = {f: e for f, e in read(figures).items() if e["notebook"] not in saved}
    record.update({f: {"notebook": nb, "cell": cell} for nb, files in saved.items() for f, cell in files.items()})
    lines = ",\n".join(f" {json.dumps(f)}: {json.dumps(record[f], sort_keys=True)}" for f in sorted(record))
    return write_atomic(Path(figures) / FILE, f"{{\n{lines}\n}}\n".encode("utf-8"))  # one line per file
