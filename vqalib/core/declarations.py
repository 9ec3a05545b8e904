"""The papers' declarations, read as data from each ``vqalib/papers/*/declarations.toml``, so core names no paper.
Blocks: ``[paper]``, ``[upstream]``, ``[[table]]``/``[[figure]]`` (:class:`~vqalib.core.specs.Spec` fields),
``[[setting]]``, ``[[judge_prompt]]``, ``[[answer_format]]``, ``[[question_alias]]`` (another name of a dataset's
questions: a builder, named as a dotted string, returns ``(alias, id)`` pairs); ``"@name"`` is the text of
``[reasons].name``. A bad field is a ValueError naming the file, the entry and the field."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from vqalib.core.specs import ModelDerived, Relation, Repeats, Spec, Tolerance

PAPERS_DIR = Path(__file__).resolve().parent.parent / "papers"
FILE_NAME = "declarations.toml"
NESTED = {"tolerance": Tolerance, "relation": Relation, "model_derived": ModelDerived, "repeats": Repeats}


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _resolve(value, reasons: dict, where: str):
    if isinstance(value, str) and value.startswith("@"):
        if value[1:] not in reasons:
            raise ValueError(f"{where}: no [reasons].{value[1:]} for {value!r}")
        return reasons[value[1:]]
    return [_resolve(v, reasons, where) for v in value] if isinstance(value, list) else value


def _spec(raw: dict, *, paper: str, kind: str, reasons: dict, path: Path) -> Spec:
    where = f"{path}: [[{kind}]] {raw.get('stem', '(no stem)')}"
    fields = {}
    for name, value in raw.items():
        if name in NESTED:
            try:
                if name == "model_derived" and "also" in value:  # further rows' rules, each a block of its own
                    value = {**value, "also": [NESTED[name](**{k: _tuples(_resolve(v, reasons, f"{where}, also.{k}"))
                                                               for k, v in other.items()}) for other in value["also"]]}
                value = NESTED[name](**{k: v if k == "also" else _tuples(_resolve(v, reasons, f"{where}, {name}.{k}"))
                                        for k, v in value.items()})
            except TypeError as error:
                raise ValueError(f"{where}, field {name}: {error}") from None
        fields[name] = _tuples(_resolve(value, reasons, f"{where}, field {name}"))
    try:
        return Spec(paper=paper, kind=kind, **fields)
    except TypeError as error:
        raise ValueError(f"{where}: {error}") from None


@functools.cache
def _read() -> tuple[dict, ...]:
    files = sorted(PAPERS_DIR.glob(f"*/{FILE_NAME}"))
    if not files:
        raise FileNotFoundError(f"no {FILE_NAME} under {PAPERS_DIR}: the package is incomplete")
    out = []
    for path in files:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        if not {"name", "title", "order"} <= set(data.get("paper", {})):
            raise ValueError(f"{path}: [paper] needs name, title and order")
        data["_path"] = path
        out.append(data)
    return tuple(sorted(out, key=lambda d: d["paper"]["order"]))


def papers() -> dict[str, str]:
    """The papers reproduced, name -> title, in the order the site and README present them."""
    return {d["paper"]["name"]: d["paper"]["title"] for d in _read()}


@functools.cache
def entries() -> tuple[Spec, ...]:
    """Every registry entry of every paper, in notebook order (an entry's order within its file kept)."""
    specs = []
    for data in _read():
        reasons = data.get("reasons", {})
        for kind in ("table", "figure"):
            specs += [_spec(raw, paper=data["paper"]["name"], kind=kind, reasons=reasons, path=data["_path"])
                      for raw in data.get(kind, [])]
    return tuple(sorted(specs, key=lambda s: s.notebook))


# the extension blocks: required and optional fields
EXTENSIONS = {
    "setting": ({"name", "default", "meaning"}, {"kind", "choices"}),
    "judge_prompt": ({"name", "file"}, {"default"}),
    "answer_format": ({"name", "shape", "answer"}, {"columns", "kind"}),
    "question_alias": ({"name", "dataset", "what", "builder"}, set()),
}


def extensions(kind: str) -> list[dict]:
    """The ``[[kind]]`` blocks (``kind`` a key of :data:`EXTENSIONS`) of every paper in paper order, each with ``paper``
    and ``folder`` added.

    Parameters
    ----------
    kind : str
    """
    required, optional = EXTENSIONS[kind]
    out = []
    for data in _read():
        for raw in data.get(kind, []):
            where = f"{data['_path']}: [[{kind}]] {raw.get('name', '(no name)')}"
            if missing := required - set(raw):
                raise ValueError(f"{where}: missing field(s) {sorted(missing)}")
            if unknown := set(raw) - required - optional:
                raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
            out.append({**raw, "paper": data["paper"]["name"], "folder": data["_path"].parent})
    return out


def upstream() -> list[dict]:
    """The upstream files the papers read: ``key`` (below ``data/raw/``), ``dataset``, ``repo``, ``commit``, ``path``, ``sha256``."""
    out = []
    for data in _read():
        block = data.get("upstream")
        if block:
            out += [{"dataset": block["dataset"], "repo": block["repo"], "commit": block["commit"], **f}
                    for f in block["files"]]
    return out
