"""The claims check: every number in the prose (README, notebooks' Markdown, known differences) is structural
(:data:`STRUCTURAL`) or bound by a row of ``data/claims/*.csv`` to its source. Claim kinds:

``result``/``paper``: equals the selected value of ``figures/<source>.csv``/``data/paper/<source>.csv``;
``cited``: occurs as written in the source file (known differences cite the tables they name without a claim);
``method`` (a constant set in ``source``) and ``derived`` (arithmetic ``source`` states): presence only.
A claim whose snippet left the prose fails, and so does a number nothing accounts for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from vqalib.core.io import project_root

KINDS = ("result", "paper", "cited", "method", "derived")
# a number: not glued to letters, hyphens or slashes ("GPT-4V", "BLIP-2", "BLEU-1/4", "6B" are names)
NUMBER = re.compile(r"(?<![\w\-/.=′'])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e-?\d+)?(?:%|[kM]\b)?"
                    r"(?![\w\-/′]|\.\d)")
STRUCTURAL = re.compile("|".join([
    r"```[\s\S]*?```",                                               # fenced code blocks (commands, BibTeX)
    r"`[^`\n]*`",                                                    # code spans: file names, commands, parameters
    r"(?:\b(?:Tables?|Figs?\.|Figures?|Sections?|Appendix|A\.)|§)\s*[\dA-Z](?![a-z])[\d.]*"
    r"(?:\s*(?:[–\-]|,|and|&)\s*[\dA-Z](?![a-z])[\d.]*)*",           # Table 4, Tables 2, 3, 15, 16, Figs. 3, 5, §7.2
    r"\bCC BY(?:-[A-Z]+)* \d\.\d",                                   # licence versions
    r"\b[A-Z]\.\d+(?:\.\d+)*",                                       # A.2.2
    r"\bnotebooks?\s+0\d(?:\s*(?:[–\-]|,|and)\s*0\d)*",              # notebook 05, notebooks 03-07
    r"\b0\d_[a-z_]+",                                                # 05_abstention
    r"\b(?:issue|#)\s*#?\d+",                                        # an issue or pull-request number ("#" and digits)
    r"(?<![\d.])(?<!\d,)(?:19|20)\d\d(?![\d%]|[.,]\d)",                # years
    r"\b(?:Python|Java|pip|torch|CUDA|Debian)\s*[=<>]*\s*\d[\d.]*",  # versions
    r"^\s*(?:#+\s*)?\d+(?:\.|\s·)\s",                                # list items and numbered headings
    r"https?://\S+",                                                 # addresses
    r"\b\d+(?:\.\d+)?%\s+(?:CI|CIs|confidence|interval|intervals|bootstrap)\b",  # the 95% of a CI: a convention
]), re.MULTILINE)


@dataclass(frozen=True)
class Claim:
    file: str
    text: str
    number: str
    kind: str
    source: str = ""
    where: str = ""
    column: str = ""
    format: str = ""


def claims_dir() -> Path:
    return project_root() / "data" / "claims"


def load_claims(directory: Path | None = None) -> list[Claim]:
    """Every row of ``data/claims/*.csv`` (or ``directory``), by file then row; a malformed file raises
    ``ValueError``."""
    rows = []
    for path in sorted(Path(directory or claims_dir()).glob("*.csv")):
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        missing = {"file", "text", "number", "kind"} - set(table.columns)
        if missing:
            raise ValueError(f"{path}: no column(s) {sorted(missing)}")
        for i, row in enumerate(table.to_dict("records"), start=2):
            if row["kind"] not in KINDS:
                raise ValueError(f"{path}, line {i}: kind {row['kind']!r} is not one of {KINDS}")
            rows.append(Claim(**{k: row.get(k, "") for k in Claim.__dataclass_fields__}))
    return rows


# --- prose ------------------------------------------------------------------------------------

def prose(file: str, *, root: Path | None = None) -> list[str]:
    """The prose units of ``file``: Markdown cells, the README without its status table, or known-difference
    explanations."""
    from vqalib.compendium import status

    root = root or project_root()
    path = root / file
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    if path.name == "known_differences.csv":
        return list(pd.read_csv(path, dtype=str)["explanation"])
    text = path.read_text(encoding="utf-8")
    if status.STATUS_BEGIN in text:  # generated from figures/, checked by regenerating it
        head, rest = text.split(status.STATUS_BEGIN, 1)
        text = head + rest.split(status.STATUS_END, 1)[1]
    return [text]


def prose_files(root: Path | None = None) -> list[str]:
    """The files, relative to ``root``, whose numbers the claims check covers."""
    root = root or project_root()
    return (["README.md"] + [f"notebooks/{p.name}" for p in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
            + ["data/paper/known_differences.csv"])


def _pattern(text: str) -> re.Pattern:
    """A claim's text as a pattern in which any white space matches any white space (prose wraps lines)."""
    return re.compile(r"\s+".join(map(re.escape, text.split())))


def _masked(text: str) -> str:
    """``text`` with structural numbers blanked (same length, so positions still match)."""
    return STRUCTURAL.sub(lambda m: " " * len(m.group(0)), text)


def _normal(number: str) -> str:
    return number.replace("−", "-").replace(",", "")


def _canonical(number: str) -> str:
    """A written number without sign, separators or trailing zeros: prose cites "-41.0000" as "41 fewer"."""
    text = _normal(number).rstrip("%").lstrip("-")
    return text.rstrip("0").rstrip(".") if "." in text else text


# --- checking ---------------------------------------------------------------------------------

def value_of(claim: Claim, *, root: Path | None = None) -> str:
    """The number a ``result`` or ``paper`` claim should print, read from its source and formatted; ``ValueError``
    unless its ``where`` selects one row."""
    root = root or project_root()
    folder = root / ("figures" if claim.kind == "result" else "data/paper")
    table = pd.read_csv(folder / f"{claim.source}.csv")
    rows = table.query(claim.where, engine="python") if claim.where else table
    if len(rows) != 1:
        raise ValueError(f"{claim.source}.csv: {len(rows)} rows match {claim.where!r} (claim {claim.text!r})")
    value = rows.iloc[0][claim.column]
    return format(value, claim.format) if claim.format else str(value)


def check_claim(claim: Claim, units: list[str], *, root: Path | None = None) -> str | None:
    """None if the claim holds (its text in one of ``units``, its value right), else what is wrong."""
    root = root or project_root()
    where = f"{claim.file}: claim {claim.text!r}"
    if not any(_pattern(claim.text).search(unit) for unit in units):
        return f"{where}: the text is no longer in the prose (update data/claims/)"
    if claim.number not in claim.text:
        return f"{where}: its number {claim.number!r} is not in its text"
    if claim.kind in ("result", "paper"):
        try:
            expected = value_of(claim, root=root)
        except (KeyError, ValueError, FileNotFoundError) as err:
            return f"{where}: {err}"
        if _normal(expected).rstrip("%") != _normal(claim.number).rstrip("%"):  # "57%" prints the value 57
            return f"{where}: says {claim.number}, {claim.source}.csv gives {expected}"
    elif claim.kind == "cited":
        path = root / claim.source if "/" in claim.source else root / "figures" / f"{claim.source}.csv"
        if not path.exists():
            return f"{where}: cites {path.relative_to(root)}, which does not exist"
        if _normal(claim.number).lstrip("-") not in path.read_text(encoding="utf-8").replace(",", ""):
            return f"{where}: {claim.number} does not occur in {path.relative_to(root)}"
    elif not claim.source:
        return f"{where}: a {claim.kind} claim must say where the number comes from (source)"
    return None


CITED_FILE = re.compile(r"([\w\-]+)\.csv")


def _cited_numbers(unit: str, *, root: Path, implied: tuple[str, ...] = ()) -> set[str]:
    """The numbers written in the tables a known-difference explanation names or explains."""
    numbers: set[str] = set()
    for stem in set(CITED_FILE.findall(unit)) | set(implied):
        for folder in ("figures", "data/paper"):
            path = root / folder / f"{stem}.csv"
            if path.exists():
                numbers |= _numbers_in(path, path.stat().st_mtime_ns)
    return numbers


@lru_cache(maxsize=None)
def _numbers_in(path: Path, version: int) -> frozenset[str]:
    """The numbers in a table's rows (not header, not ids' digits); ``version`` (mtime) rereads a rewritten file."""
    cells = pd.read_csv(path, dtype=str, keep_default_na=False).to_numpy().ravel()
    return frozenset(_canonical(n) for cell in cells for n in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])", cell))


def _explained_tables(root: Path) -> list[tuple[str, ...]]:
    """For each row of known_differences.csv: the figures table and paper table it explains."""
    from vqalib.core import registry

    by_id = {}
    for spec in registry.TABLES.values():
        if spec.known:
            by_id.setdefault(spec.known, []).extend([spec.stem, spec.paper_table or ""])
    table = pd.read_csv(root / "data" / "paper" / "known_differences.csv", dtype=str)
    return [tuple(s for s in by_id.get(t, []) if s) for t in table["table"]]


def unaccounted(file: str, claims: list[Claim], *, root: Path | None = None) -> list[str]:
    """The numbers of ``file``'s prose that are neither structural, nor claimed, nor cited by a known difference, one
    line each with the text around it."""
    root = root or project_root()
    mine = [c for c in claims if c.file == file]
    out = []
    units = prose(file, root=root)
    explained = _explained_tables(root) if file.endswith("known_differences.csv") else [()] * len(units)
    for unit, implied in zip(units, explained):
        masked = _masked(unit)
        cited = _cited_numbers(unit, root=root, implied=implied) if file.endswith("known_differences.csv") else set()
        covered = [False] * len(unit)
        for claim in mine:
            for found in _pattern(claim.text).finditer(unit):
                for m in NUMBER.finditer(unit, found.start(), found.end()):
                    if _normal(m.group(0)) == _normal(claim.number):
                        for k in range(m.start(), m.end()):
                            covered[k] = True
        for m in NUMBER.finditer(masked):
            if _canonical(m.group(0)) in cited:
                continue
            if not all(covered[m.start():m.end()]):
                line = unit[max(0, m.start() - 60):m.end() + 40].replace("\n", " ")
                out.append(f"{file}: {m.group(0)!r} in …{line}…")
    return out


def check(*, root: Path | None = None, claims: list[Claim] | None = None) -> list[str]:
    """Every problem: failing claims and unaccounted numbers, over all prose files (``vqalib claims``).

    Parameters
    ----------
    root : Path, optional
        The project folder; default :func:`~vqalib.core.io.project_root`.
    claims : list of Claim, optional
        Default :func:`load_claims` of ``<root>/data/claims``.

    Returns
    -------
    list of str
        Empty when every number is accounted for.
    """
    root = root or project_root()
    claims = load_claims(root / "data" / "claims") if claims is None else claims
    problems = []
    for file in prose_files(root):
        units = prose(file, root=root)
        problems += [p for c in claims if c.file == file for p in [check_claim(c, units, root=root)] if p]
        problems += unaccounted(file, claims, root=root)
    known = set(prose_files(root))
    problems += [f"{c.file}: not a prose file ({sorted(known)})" for c in claims if c.file not in known]
    return problems
