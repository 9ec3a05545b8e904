"""Saving and loading the offline classifiers (VizWiz-LF Tables 9-10 models, ``data/models/*.skops``).

Pipeline, thresholds, encoder name and metadata in skops' format (no pickle, never encoder weights), byte-identical
for the same model; :func:`load` admits only :data:`TRUSTED_MODEL_TYPES`. Training records the SHA-256 of every file
it writes in the folder's :data:`HASH_RECORD`; a model is loaded only when its bytes are the ones recorded."""

from __future__ import annotations

import copy
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, LabelBinarizer, StandardScaler

from vqalib.core.io import DataFormatError, read_regular, sha256_of, shown_path, write_atomic
from vqalib.papers.vizwiz_lf.classifier import MODEL_DIR, SentenceClassifier

# MLP state only for continued training (Adam moments, early-stopping copies), 3x the weights: not saved
_TRAINING_STATE = ("_optimizer", "_best_coefs", "_best_intercepts")


# the format tag in every saved model: a name, not an import path; it stays as the committed files carry it
MODEL_FORMAT = "vqalib.classify.SentenceClassifier/skops-1"
# The types of make_pipeline()'s two pipelines, nothing else: load() checks a file against them before skops
# constructs anything (skops on its own trusts every scikit-learn estimator).
TRUSTED_MODEL_TYPES: tuple[str, ...] = tuple(f"{t.__module__}.{t.__qualname__}" for t in (
    Pipeline, ColumnTransformer, PCA, FunctionTransformer, StandardScaler, MLPClassifier, LabelBinarizer,
    OneVsRestClassifier, LogisticRegression))
_SAFE_MODEL_TYPES = frozenset({
    *TRUSTED_MODEL_TYPES, "builtins.dict", "builtins.list", "builtins.tuple", "builtins.slice", "builtins.str",
    "builtins.int", "builtins.float", "builtins.bool", "numpy.ndarray", "numpy.random.mtrand.RandomState",
    *(f"numpy.{t}" for t in ("float64", "float32", "int64", "int32", "bool", "bool_", "str_"))})
_MODEL_FIELDS = ("kind", "labels", "pipeline", "thresholds", "min_labels", "encoder", "encoder_name", "metadata")


HASH_RECORD = "SHA256SUMS"  # `sha256sum` format: "<SHA-256>  <path relative to the folder>" per file training wrote
_RECORD_LINE = re.compile(r"([0-9a-f]{64})  ([^\n]+)")
_FIX = "restore the committed files with `git checkout -- data/models`, or retrain (`vqalib classify train`, with " \
       "`--finetuned` for the fine-tuned weights)"


class ModelFileError(DataFormatError):
    """A classifier file that :func:`load` refuses: not a skops model of this package, holding other types, or not the
    bytes recorded at training."""


def record_hashes(folder: Path, files: list[Path]) -> Path:
    """Write ``folder``'s :data:`HASH_RECORD`: the SHA-256 of each of ``files`` (inside ``folder``), as training wrote
    them (``cd folder && sha256sum -c SHA256SUMS`` checks them too); returns its path.

    Parameters
    ----------
    folder : Path
        The folder training wrote (``data/models`` or its ``finetuned``).
    files : list of Path
        Every file it wrote there.
    """
    folder = Path(folder)
    names = {Path(f).resolve().relative_to(folder.resolve()).as_posix(): f for f in files}
    lines = [f"{sha256_of(names[name])}  {name}\n" for name in sorted(names)]
    return write_atomic(folder / HASH_RECORD, "".join(lines).encode("utf-8"))


def recorded_hashes(folder: Path) -> dict[str, str] | None:
    """``folder``'s :data:`HASH_RECORD` as {relative path: SHA-256}, None when it has none; a malformed line is a
    :class:`ModelFileError` naming it.

    Parameters
    ----------
    folder : Path
    """
    record = Path(folder) / HASH_RECORD
    if not record.exists():
        return None
    try:
        lines = read_regular(record, what="hash record", max_bytes=1 << 20).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ModelFileError(f"{shown_path(record)}: not a readable hash record ({err}); {_FIX}") from None
    out = {}
    for number, line in enumerate(lines, 1):
        found = _RECORD_LINE.fullmatch(line)
        if not found:
            raise ModelFileError(f"{shown_path(record)}, line {number}: {line[:80]!r} is not '<SHA-256>  <file>'; "
                                 f"{_FIX}")
        out[found[2]] = found[1]
    return out


def hash_problems(folder: Path) -> list[str]:
    """Every file of ``folder``'s :data:`HASH_RECORD` that is missing or not bit for bit the bytes recorded at training,
    one line each (what ``vqalib classify check`` reports before any refit).

    Parameters
    ----------
    folder : Path
    """
    folder = Path(folder)
    recorded = recorded_hashes(folder)
    if recorded is None:
        return [f"{shown_path(folder / HASH_RECORD)}: missing, so the committed files cannot be checked bit for bit; "
                f"{_FIX}"]
    problems = []
    for name, expected in recorded.items():
        path = folder / name
        try:
            actual = sha256_of(path)
        except (OSError, ValueError) as err:
            problems.append(f"{shown_path(path)}: recorded in {HASH_RECORD} but not readable ({err}); {_FIX}")
            continue
        if actual != expected:
            problems.append(_changed(path, expected, actual))
    return problems


def _changed(path: Path, expected: str, actual: str) -> str:
    """The message for a file whose bytes are not the recorded ones: both hashes and how to fix it."""
    return (f"{shown_path(path)}: SHA-256 {actual}, not the {expected} recorded in "
            f"{shown_path(path.parent / HASH_RECORD)} at training (the file changed); {_FIX}")


def verify_recorded(path: Path) -> None:
    """Refuse ``path`` (:class:`ModelFileError`, naming both hashes) unless its SHA-256 is the one recorded beside it at
    training, before anything parses it; a file of ``data/models`` must be recorded, another only if its folder has a
    record.

    Parameters
    ----------
    path : Path
        A model file: skops classifier or fine-tuned weights.
    """
    path = Path(path)
    recorded = recorded_hashes(path.parent)
    committed = path.resolve().is_relative_to(MODEL_DIR.resolve())
    if recorded is None and not committed:
        return
    if recorded is None or path.name not in recorded:
        raise ModelFileError(f"{shown_path(path)}: its SHA-256 is not recorded in "
                             f"{shown_path(path.parent / HASH_RECORD)}, so it is not a file training wrote; {_FIX}")
    actual = sha256_of(path)
    if actual != recorded[path.name]:
        raise ModelFileError(_changed(path, recorded[path.name], actual))


def _canonical_skops(data: bytes) -> bytes:
    """skops' zip with ids, member names and timestamps made sequential and fixed: same model, same bytes."""
    source = zipfile.ZipFile(io.BytesIO(data))
    schema = json.loads(source.read("schema.json"))
    members = set(source.namelist())
    ids: dict[object, int] = {}
    files: dict[str, str] = {}  # new member name -> skops' member name

    def renumber(node):
        if isinstance(node, dict):
            if node.get("__loader__") in ("JsonNode", "NdArrayNode"):
                node["__id__"] = ids[object()] = len(ids) + 1
            elif "__id__" in node:
                node["__id__"] = ids.setdefault(node["__id__"], len(ids) + 1)
            if isinstance(node.get("file"), str) and node["file"] in members:
                name = f"{len(files) + 1:04d}{Path(node['file']).suffix}"
                files[name], node["file"] = node["file"], name
            for value in node.values():
                renumber(value)
        elif isinstance(node, list):
            for value in node:
                renumber(value)

    renumber(schema)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        entries = [("schema.json", json.dumps(schema, indent=1).encode("utf-8")),
                   *[(new, source.read(old)) for new, old in files.items()]]
        for name, content in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type, info.create_system, info.external_attr = zipfile.ZIP_DEFLATED, 3, 0o644 << 16
            target.writestr(info, content, compresslevel=6)
    return out.getvalue()


def save(model: SentenceClassifier, path: Path) -> Path:
    """Write a fitted classifier as a skops zip without the optimiser state, atomically; returns ``path`` (Tables 9-10).

    Parameters
    ----------
    model : SentenceClassifier
        A fitted classifier (left unchanged).
    path : Path
        Conventionally ``*.skops``.
    """
    import skops.io

    from vqalib.core.io import write_atomic

    path = Path(path)
    pipeline = copy.deepcopy(model.pipeline)
    for name in _TRAINING_STATE:
        if hasattr(pipeline[-1], name):
            delattr(pipeline[-1], name)
    state = {"format": MODEL_FORMAT, **{name: getattr(model, name) for name in _MODEL_FIELDS}}
    state.update(labels=list(model.labels), thresholds=np.asarray(model.thresholds, dtype=float),
                 pipeline=pipeline)
    write_atomic(path, _canonical_skops(skops.io.dumps(state)))
    return path


_SAFE_SKOPS_LOADERS = frozenset({"JsonNode", "DictNode", "ListNode", "TupleNode", "SliceNode", "TypeNode",
                                 "NdArrayNode", "RandomStateNode", "ObjectNode"})


def _schema_types(node, found: set[str]) -> set[str]:
    """Every type a skops schema names (JSON values aside): what loading it would construct."""
    if isinstance(node, dict):
        if "__loader__" in node and node["__loader__"] != "JsonNode":
            found.add(f"{node.get('__module__')}.{node.get('__class__')}")
            if node["__loader__"] not in _SAFE_SKOPS_LOADERS:
                found.add(f"skops {node['__loader__']}")
            if node["__loader__"] == "NdArrayNode" and node.get("type") != "numpy":
                found.add(f"numpy.ndarray of Python objects ({node.get('type')})")
        for value in node.values():
            _schema_types(value, found)
    elif isinstance(node, list):
        for value in node:
            _schema_types(value, found)
    return found


def load(path: Path) -> SentenceClassifier:
    """Read a classifier written by :func:`save` without unpickling, its schema's types checked first (Tables 9-10);
    anything else raises :class:`ModelFileError`."""
    path = Path(path)
    verify_recorded(path)  # first: a changed committed file costs no parsing
    import skops.io

    try:
        with zipfile.ZipFile(path) as archive:
            schema = json.loads(archive.read("schema.json"))
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFileError(
            f"{path}: not a classifier saved by vqalib.papers.vizwiz_lf.classifier_io.save (a skops zip) ({err}); pickle and joblib "
            "files are never loaded, as unpickling can run code: retrain with `vqalib classify train`"
        ) from None
    untrusted = sorted(_schema_types(schema, set()) - _SAFE_MODEL_TYPES)
    if untrusted:
        raise ModelFileError(f"{path}: refused, it holds types outside vqalib.papers.vizwiz_lf.classifier_io.TRUSTED_MODEL_TYPES: "
                             f"{', '.join(untrusted)}")
    try:
        state = skops.io.load(path, trusted=list(TRUSTED_MODEL_TYPES))
    except Exception as err:  # skops' own audit, or a malformed file
        raise ModelFileError(f"{path}: not a loadable skops classifier: {err}") from None
    if not isinstance(state, dict) or state.get("format") != MODEL_FORMAT or set(state) != {"format", *_MODEL_FIELDS}:
        raise ModelFileError(f"{path}: a skops file, but not a {MODEL_FORMAT} (keys: "
                             f"{sorted(state) if isinstance(state, dict) else type(state).__name__})")
    if not isinstance(state["pipeline"], Pipeline):
        raise ModelFileError(f"{path}: the pipeline is a {type(state['pipeline']).__name__}, not a Pipeline")
    metadata = state["metadata"]
    recorded = {k: metadata[k] for k in ("estimator", "seed") if isinstance(metadata, dict) and k in metadata}
    model = SentenceClassifier(state["kind"], encoder=state["encoder"], encoder_name=state["encoder_name"], **recorded)
    return model._set_fitted(labels=tuple(state["labels"]), pipeline=state["pipeline"], thresholds=state["thresholds"],
                             min_labels=state["min_labels"], metadata=metadata)
