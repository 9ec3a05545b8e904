"""Every setting the package takes from the environment: the only module that reads ``os.environ``, so each is
declared in :data:`SETTINGS` (the README's table is checked against it) and read at call time by :func:`get`;
typed readers name the variable, its value and what it accepts in a ``ValueError``."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from vqalib.core import declarations


@dataclass(frozen=True)
class Setting:
    """One environment variable: its default (as the README says it) and what it sets."""

    name: str
    default: str
    meaning: str
    external: bool = False  # read by a library (torch, BLAS, huggingface_hub), not only by vqalib
    kind: str = "text"  # what :func:`problems` checks: see KINDS
    choices: tuple[str, ...] = ()


MAX_INT = 2**31 - 1  # past any sane count or byte limit, and within what a read() or a pool size takes
MAX_SECONDS = 10**6  # about 12 days: past any sane timeout, and within what a socket or a sleep takes
KINDS = {  # kind -> what a value must be
    "text": "any text",
    "flag": "1 (or unset)",
    "int": f"a whole number >= 1 and at most {MAX_INT} (digits 0-9)",
    "seconds": f"a positive finite number of seconds, at most {MAX_SECONDS} (digits 0-9, a point, an exponent)",
    "folder": "a folder, or a path where one can be made (not a file)",
    "existing": "an existing file or folder",
    "existing-folder": "an existing folder",
    "model": "a model name, or an existing local path when it starts with /, ./, ../ or ~",
    "choice": "one of the listed values",
    "share": "a number greater than 0 and at most 1",
}
_WHOLE = re.compile(r"[0-9]{1,10}")  # ASCII only: int() and str.isdigit() also take '²' or '١'
_DECIMAL = re.compile(r"([0-9]{1,20}(\.[0-9]{0,20})?|\.[0-9]{1,20})([eE][+-]?[0-9]{1,3})?")


class SettingError(ValueError):
    """A setting whose value its kind does not accept: the message names the variable, the value and the form."""


# what chooses torch's and BLAS's kernels and thread counts (recorded in provenance)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "ATEN_CPU_CAPABILITY",
                    "MKL_ENABLE_INSTRUCTIONS", "OPENBLAS_CORETYPE", "MKL_CBWR")
POOL_VARIABLES = THREAD_VARIABLES[:3]  # the thread pools `make reproduce` sizes per kernel

# LAVE prompts: those the papers declare, then mair-lab/lave's own; the default is the one declared default
_PROMPTS = (*[b["name"] for b in declarations.extensions("judge_prompt")], "lave-reference")
_DEFAULT_PROMPT = next((b["name"] for b in declarations.extensions("judge_prompt") if b.get("default")), _PROMPTS[-1])

_ALL = [
    # data and caches
    Setting("VQALIB_DATA_MIRROR", "unset: download from upstream", "a folder laid out like data/raw/ to copy and hash-check the releases from", kind="existing-folder"),
    Setting("VQALIB_DATA_DIR", "data/raw", "where the verified data files live", kind="folder"),
    Setting("VQALIB_CACHE_DIR", ".cache/vqalib", "model outputs cached by content (embeddings, scores, entities, judge replies)", kind="folder"),
    Setting("VQALIB_REWRITE_FIGURES", "unset", "1: rewrite a table even when only model noise within tolerance moved", kind="flag"),
    Setting("VQALIB_REPRODUCE_JOBS", "2", "notebooks `make reproduce` runs at once", kind="int"),
    Setting("VQALIB_REPRODUCE_IN_PLACE", "unset (`vqalib reproduce` sets it for its full run's kernels)", "1: a notebook with figures_dir None writes figures/ (else build/explore/<notebook>/figures)", kind="flag"),
    Setting("VQALIB_SAVED_BY_LOG", "unset (`vqalib reproduce` sets it per kernel)", "file each save of a table or figure is logged to, with its cell number (vqalib.core.saved_by)"),
    Setting("VQALIB_REFIT", "unset", "1: refit the classifiers' cross-validation instead of reading its committed result (data/models/cv/)", kind="flag"),
    Setting("VQALIB_NO_MODEL_CALLS", "unset", "1: any model forward pass or fit raises (proves a warm run is served from caches)", kind="flag"),
    # limits on an answers file (vqalib score / import)
    Setting("VQALIB_MAX_LINE_BYTES", "16777216", "longest line of a JSON-lines answers or task file", kind="int"),
    Setting("VQALIB_MAX_JSON_DEPTH", "64", "deepest nesting of a JSON value in an answers file", kind="int"),
    Setting("VQALIB_MAX_XLSX_BYTES", "268435456", "largest uncompressed size an .xlsx answers workbook may declare", kind="int"),
    Setting("VQALIB_MAX_XLSX_RATIO", "100", "largest compression ratio of an .xlsx over 1 MiB uncompressed", kind="int"),
    Setting("VQALIB_MAX_EVAL_BYTES", "1073741824", "largest uncompressed size an Inspect .eval log may declare in all (each member is also inflated to check it holds no more than it declares)", kind="int"),
    Setting("VQALIB_MAX_ANSWER_CHARS", "20000", "longest single answer, in characters, read before scoring (over six times the longest released long-form answer, 3,030 characters)", kind="int"),
    Setting("VQALIB_MAX_UNKNOWN_SHARE", "0.5", "largest share of answer rows with ids the dataset lacks before scoring stops", kind="share"),
    Setting("VQALIB_INSPECT_PYTHON", "build/inspect-venv/bin/python (`make inspect-env`)", "a Python with inspect_ai, which reads Inspect eval logs (.eval) for vqalib score", kind="existing"),
    # limits on a scorecard folder (vqalib leaderboard, the reviewer site)
    Setting("VQALIB_MAX_SCORECARD_BYTES", "67108864", "largest file read from a scorecard folder (scorecard.json, per_question.csv, a table)", kind="int"),
    # models of the analyses
    Setting("VQALIB_BERTSCORE_MODEL", "the packaged all-MiniLM-L6-v2", "BERTScore backbone (Table 4)", kind="model"),
    Setting("VQALIB_METEOR_WORDNET", "unset: METEOR (NLTK, no WordNet) only", "1: also score METEOR (NLTK, WordNet), which needs NLTK's WordNet data (`python -m nltk.downloader wordnet`, online)", kind="flag"),
    Setting("VQALIB_BERTSCORE_LAYERS", "4 for the packaged MiniLM", "the layer BERTScore uses", kind="int"),
    Setting("VQALIB_CLASSIFY_ENCODER", "the packaged all-MiniLM-L6-v2", "sentence encoder of the role/information classifiers", kind="model"),
    Setting("VQALIB_SENTENCE_MODEL", "the packaged all-MiniLM-L6-v2", "sentence encoder of the similarity and clustering analyses", kind="model"),
    # LLM judge
    Setting("VQALIB_JUDGE_BASE_URL", "unset", "OpenAI-compatible endpoint of the LAVE judge"),
    Setting("VQALIB_JUDGE_MODEL", "unset", "model name at that endpoint"),
    Setting("VQALIB_JUDGE_API_KEY", "unset", "its key (else OPENAI_API_KEY)"),
    Setting("OPENAI_API_KEY", "unset", "the judge's key when VQALIB_JUDGE_API_KEY is unset", external=True),
    Setting("VQALIB_JUDGE_TIMEOUT", "60", "seconds one socket read or connect may block", kind="seconds"),
    Setting("VQALIB_JUDGE_DEADLINE", "300", "seconds one judge call may take in all", kind="seconds"),
    Setting("VQALIB_JUDGE_MAX_RETRY_AFTER", "60", "longest wait before a retry", kind="seconds"),
    Setting("VQALIB_JUDGE_MAX_REPLY_BYTES", "1048576", "largest judge reply body read", kind="int"),
    Setting("VQALIB_JUDGE_PROMPT", _DEFAULT_PROMPT, "LAVE prompt: " + " or ".join(_PROMPTS), kind="choice", choices=_PROMPTS),
    Setting("VQALIB_JUDGE_UNPARSEABLE", "drop", "unreadable LAVE reply: drop or reference", kind="choice", choices=("drop", "reference")),
    Setting("VQALIB_JUDGE_HF_MODEL", "unset", "a local transformers model as judge"),
    Setting("VQALIB_JUDGE_DEVICE", "cpu", "device of that local judge"),
    # VLM runner
    Setting("VQALIB_RUNS_DIR", "runs/", "where notebooks 05, 06 and 08 look for runner output", kind="folder"),
    Setting("VQALIB_VQA_DEVICE", "cuda if available, else cpu", "device of the VLM runner"),
    Setting("VQALIB_MODEL_PLUGINS", "unset", "comma-separated Python modules imported to register extra runner models (vqalib.runner.model_specs.register)"),
    Setting("VQALIB_IMAGE_CACHE", "$VQALIB_CACHE_DIR/images", "downloaded question images", kind="folder"),
    Setting("VQALIB_IMAGE_TIMEOUT", "30", "image download timeout (s)", kind="seconds"),
    Setting("VQALIB_IMAGE_DEADLINE", "120", "seconds one image download may take in all", kind="seconds"),
    Setting("VQALIB_IMAGE_MAX_BYTES", "52428800", "largest image body read", kind="int"),
    Setting("VQALIB_IMAGE_MAX_PIXELS", "89478485", "most pixels an image may declare", kind="int"),
    # read by libraries; recorded in provenance (they choose kernels and threads)
    Setting("HF_HUB_OFFLINE", "unset (set to 1 when a local model folder is loaded)", "huggingface_hub never goes online", external=True),
    *[Setting(name, "unset", "threads or kernels of torch and BLAS (provenance)", external=True)
      for name in THREAD_VARIABLES],
]
# the settings the papers declare (their declarations.toml, [[setting]])
_ALL += [Setting(b["name"], b["default"], b["meaning"], kind=b.get("kind", "text"), choices=tuple(b.get("choices", ())))
         for b in declarations.extensions("setting")]
SETTINGS: dict[str, Setting] = {s.name: s for s in _ALL}


def get(name: str) -> str | None:
    """The value of declared setting ``name`` (stripped), or None when unset or blank.

    Parameters
    ----------
    name : str
        A variable of :data:`SETTINGS`; another name is a KeyError.
    """
    if name not in SETTINGS:
        raise KeyError(f"{name} is not a declared setting (vqalib.core.config.SETTINGS)")
    value = os.environ.get(name)
    return value.strip() if value is not None and value.strip() else None


def get_path(name: str, default: Path) -> Path:
    """Setting ``name`` as a path as written (not resolved), else ``default``; a value its kind refuses (a file
    where a folder is expected, a name too long for the file system, ...) is a :class:`SettingError`.

    Parameters
    ----------
    name : str
        A variable of :data:`SETTINGS`.
    default : Path
        What an unset or blank variable gives.
    """
    value = get(name)
    if value is None:
        return default
    _refuse(name, value)
    return Path(value)


def get_int(name: str, default: int, *, minimum: int = 1) -> int:
    """Setting ``name`` as a whole number >= ``minimum`` (ASCII digits, at most :data:`MAX_INT`), else ``default``;
    another value is a :class:`SettingError`.

    Parameters
    ----------
    name : str
        A variable of :data:`SETTINGS`.
    default : int
        What an unset or blank variable gives (not checked against ``minimum``).
    minimum : int, default 1
        The smallest value accepted.
    """
    value = get(name)
    if value is None:
        return default
    number = _whole_number(value)
    if number is None or number < minimum:
        raise SettingError(f"{name}={value!r}: expected a whole number >= {minimum} and at most {MAX_INT} (digits 0-9)")
    return number


def get_share(name: str, default: float) -> float:
    """Setting ``name`` as a share in (0, 1], else ``default``; another value is a :class:`SettingError`.

    Parameters
    ----------
    name : str
        A variable of :data:`SETTINGS`.
    default : float
        What an unset or blank variable gives.
    """
    return _decimal_setting(name, default)


def get_seconds(name: str, default: float) -> float:
    """Setting ``name`` as a positive number of seconds (at most :data:`MAX_SECONDS`), else ``default``; another value
    is a :class:`SettingError`.

    Parameters
    ----------
    name : str
        A variable of :data:`SETTINGS` of kind ``seconds``.
    default : float
        What an unset or blank variable gives.
    """
    return _decimal_setting(name, default)


def _decimal_setting(name: str, default: float) -> float:
    """Setting ``name`` as the decimal its kind accepts, else ``default``; another value is a :class:`SettingError`."""
    value = get(name)
    if value is None:
        return default
    _refuse(name, value)
    return _decimal(value)


def _refuse(name: str, value: str) -> None:
    """Raise :class:`SettingError` when :func:`_problem` has a reason against ``value``."""
    why = _problem(SETTINGS[name], value)
    if why:
        raise SettingError(f"{name}={value!r}: {why}")


def set_default(name: str, value: str) -> None:
    """Give setting ``name`` a value for this process and its children unless the user set one (read by a library).

    Parameters
    ----------
    name : str
        A variable of :data:`SETTINGS`; another name is a KeyError.
    value : str
        The value to set when the variable is absent from the environment.
    """
    if name not in SETTINGS:
        raise KeyError(f"{name} is not a declared setting (vqalib.core.config.SETTINGS)")
    os.environ.setdefault(name, value)


def snapshot(names: tuple[str, ...] | None = None) -> dict[str, str]:
    """The raw value of every setting (or of ``names``), '' when unset: the configuration as one object.

    Parameters
    ----------
    names : tuple of str, optional
        The variables to record; default every one of :data:`SETTINGS`.
    """
    return {name: os.environ.get(name, "") for name in (names or tuple(SETTINGS))}


class ModelCallForbidden(RuntimeError):
    """A model forward pass or fit was about to run while ``VQALIB_NO_MODEL_CALLS=1``."""


def model_call(what: str) -> None:
    """Declare that a model forward pass or fit is about to run; with ``VQALIB_NO_MODEL_CALLS=1`` raise
    :class:`ModelCallForbidden` instead, so a warm run whose cache misses fails loudly.

    Parameters
    ----------
    what : str
        The model call, for the error message.
    """
    if get("VQALIB_NO_MODEL_CALLS") == "1":
        raise ModelCallForbidden(f"model call while VQALIB_NO_MODEL_CALLS=1: {what} (a cache missed)")


def _whole_number(value: str) -> int | None:
    """``value`` as a whole number of ASCII digits at most :data:`MAX_INT`, else None."""
    return int(value) if _WHOLE.fullmatch(value) and int(value) <= MAX_INT else None


def _decimal(value: str) -> float | None:
    """``value`` as a finite number written with ASCII digits (no sign, no ``inf``/``nan``), else None."""
    number = float(value) if _DECIMAL.fullmatch(value) else math.nan
    return number if math.isfinite(number) else None


def _problem(setting: Setting, value: str) -> str | None:
    """Why ``value`` is not allowed for ``setting`` (None when it is); never raises, whatever the value."""
    kind = setting.kind
    if kind == "flag" and value != "1":
        return "set it to 1, or leave it unset"
    if kind == "int" and not (_whole_number(value) or 0) >= 1:
        return f"expected {KINDS['int']}"
    if kind in ("seconds", "share"):
        number, most = _decimal(value), MAX_SECONDS if kind == "seconds" else 1
        if number is None or not 0 < number <= most:
            return f"expected {KINDS[kind]}"
    if kind == "choice" and value not in setting.choices:
        return f"expected one of {', '.join(setting.choices)}"
    if kind in ("folder", "existing", "existing-folder") or (
            kind == "model" and value.startswith(("/", "./", "../", "~"))):
        why = _path_problem(kind, value)
        return f"{why}; expected {KINDS[kind]}" if why else None
    return None


def _path_problem(kind: str, value: str) -> str | None:
    """Why ``value`` is not a path of ``kind``; an error of the file system is a reason, never raised."""
    try:
        if "\x00" in value:
            return "a path cannot hold a NUL byte"
        path = Path(value).expanduser()  # RuntimeError for ~user without a home
        if kind == "folder":
            return None if path.is_dir() else "this is a file; give a folder" if path.exists() else _unmakeable(path)
        if kind == "existing-folder":
            return None if path.is_dir() else "no such folder"
        if not path.exists():
            return ("no such local path (a model name without a leading / or . is read from the hub or the package)"
                    if kind == "model" else "no such file or folder")
    except (OSError, ValueError, RuntimeError) as err:
        return f"not a usable path: {getattr(err, 'strerror', None) or err}"
    return None


def _unmakeable(path: Path) -> str | None:
    """Why no folder can be made at missing ``path``: a file on the way, or a name or path too long for the file
    system."""
    absolute = path.absolute()
    existing = next(p for p in absolute.parents if p.exists())
    if not existing.is_dir():
        return f"{existing} is a file, so no folder can be made in it"
    longest = os.pathconf(existing, "PC_NAME_MAX")
    names = [n for n in absolute.relative_to(existing).parts if len(os.fsencode(n)) > longest]
    if names:
        return f"the name {names[0][:24]}... is longer than the file system's {longest} bytes"
    if len(os.fsencode(str(absolute))) > os.pathconf(existing, "PC_PATH_MAX"):
        return f"the path is longer than the file system's {os.pathconf(existing, 'PC_PATH_MAX')} bytes"
    return None


def problems() -> list[str]:
    """Every declared vqalib setting whose value is not allowed (:data:`KINDS`), one message each."""
    out = []
    for setting in _ALL:
        value = None if setting.external else get(setting.name)
        if value is None:
            continue
        why = _problem(setting, value)
        if why:
            out.append(f"{setting.name}={value!r}: {why} ({setting.meaning})")
    return out


def check() -> None:
    """Stop with every setting problem (:func:`problems`) named, before a command does any work."""
    found = problems()
    if found:
        raise SystemExit("invalid settings:\n  " + "\n  ".join(found))
