"""Declared limits on what an outside answers file may make the reader do (line length, JSON nesting, the inflation
of a workbook or an Inspect log, the length of one answer, unknown ids), checked before the work starts: each function
returns why a value is over its limit (naming the setting that changes it) or None, and the reader raises it naming
the file and line."""

from __future__ import annotations

import re
import zipfile

import numpy as np

from vqalib.core import config

LINE_SETTING, DEPTH_SETTING = "VQALIB_MAX_LINE_BYTES", "VQALIB_MAX_JSON_DEPTH"
XLSX_SETTING, RATIO_SETTING = "VQALIB_MAX_XLSX_BYTES", "VQALIB_MAX_XLSX_RATIO"
UNKNOWN_SETTING = "VQALIB_MAX_UNKNOWN_SHARE"
EVAL_SETTING, ANSWER_SETTING = "VQALIB_MAX_EVAL_BYTES", "VQALIB_MAX_ANSWER_CHARS"
# an answer: 20,000 characters, over six times the longest released long-form answer (3,030 characters)
DEFAULTS = {LINE_SETTING: 16 << 20, DEPTH_SETTING: 64, XLSX_SETTING: 256 << 20, RATIO_SETTING: 100,
            EVAL_SETTING: 1 << 30, ANSWER_SETTING: 20_000}
DEFAULT_UNKNOWN_SHARE = 0.5
RATIO_FLOOR = 1 << 20  # a workbook under 1 MiB uncompressed is never refused for its ratio
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def limit(name: str) -> int:
    """The current value of a whole-number limit (a key of :data:`DEFAULTS`).

    Parameters
    ----------
    name : str
    """
    return config.get_int(name, DEFAULTS[name])


def line_problem(length: int) -> str | None:
    """Why a line of ``length`` bytes is too long to read, or None."""
    most = limit(LINE_SETTING)
    if length <= most:
        return None
    return (f"the line is too long: {length:,} bytes, over the limit of {most:,} bytes per line "
            f"(set {LINE_SETTING} to read longer lines)")


def nesting_problem(text: str | bytes, *, most: int | None = None) -> str | None:
    """Why a JSON text nests deeper than the declared limit, or None (brackets inside strings do not count).

    Parameters
    ----------
    text : str or bytes
    most : int, optional
        The limit (default the setting's current value).
    """
    most = limit(DEPTH_SETTING) if most is None else most
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if data.count(b"[") + data.count(b"{") <= most:  # cannot be deeper: no scan
        return None
    codes = np.frombuffer(_STRINGS.sub(b"", data), dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int32) - np.isin(codes, (ord("]"), ord("}")))
    depth = int(np.cumsum(steps).max()) if len(steps) else 0
    if depth <= most:
        return None
    return (f"JSON nested {depth:,} levels deep, over the limit of {most} (set {DEPTH_SETTING} to read deeper "
            "values)")


def nesting_line(data: bytes, *, most: int) -> int:
    """The 1-based line of JSON ``data`` where nesting first passes ``most`` (slower; for the error message).

    Parameters
    ----------
    data : bytes
    most : int
    """
    masked = _STRINGS.sub(lambda m: b"_" * len(m.group()), data)
    codes = np.frombuffer(masked, dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int32) - np.isin(codes, (ord("]"), ord("}")))
    over = np.flatnonzero(np.cumsum(steps) > most)
    return data.count(b"\n", 0, int(over[0])) + 1 if len(over) else 1


def answer_problem(length: int) -> str | None:
    """Why an answer of ``length`` characters is too long to score, or None."""
    most = limit(ANSWER_SETTING)
    if length <= most:
        return None
    return (f"the answer is {length:,} characters, over the limit of {most:,} characters per answer (set "
            f"{ANSWER_SETTING} to score longer answers)")


def _zip_directory(handle) -> list[zipfile.ZipInfo] | None:
    """The members a zip's directory lists (an open seekable ``handle``, rewound after), or None for no readable zip."""
    try:
        with zipfile.ZipFile(handle) as archive:
            return archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return None
    finally:
        handle.seek(0)


def workbook_problem(handle) -> str | None:
    """Why an .xlsx workbook (an open seekable ``handle``, rewound after) would inflate past the declared limits, read
    from its zip directory; or None."""
    infos = _zip_directory(handle)
    if infos is None:
        return None
    inflated, packed = sum(i.file_size for i in infos), sum(i.compress_size for i in infos)
    most, ratio_most = limit(XLSX_SETTING), limit(RATIO_SETTING)
    if inflated > most:
        return (f"the workbook declares {inflated:,} bytes uncompressed, over the limit of {most:,} "
                f"(set {XLSX_SETTING} to read larger workbooks)")
    ratio = inflated / max(packed, 1)
    if inflated > RATIO_FLOOR and ratio > ratio_most:
        return (f"the workbook inflates {ratio:,.0f} times ({packed:,} bytes to {inflated:,}), over the limit of "
                f"{ratio_most} (a zip bomb?; set {RATIO_SETTING} to read it)")
    return None


def eval_log_problem(handle) -> str | None:
    """Why an Inspect ``.eval`` log (a zip; an open seekable ``handle``, rewound after) declares more uncompressed bytes
    in all than the declared limit, read from its zip directory before any member is inflated; or None."""
    infos = _zip_directory(handle)
    if not infos:
        return None
    inflated, most = sum(i.file_size for i in infos), limit(EVAL_SETTING)
    if inflated <= most:
        return None
    big = max(infos, key=lambda i: i.file_size)
    return (f"the log declares {inflated:,} bytes uncompressed in all (its largest member, {big.filename!r}, "
            f"{big.file_size:,} bytes from {big.compress_size:,} compressed), over the limit of {most:,} (set "
            f"{EVAL_SETTING} to read larger logs)")


def inflation_problem(member: str, *, declared: int, seen: int, packed: int) -> str:
    """Why a zip member that inflated past its declared size (stopped at ``seen`` bytes) is refused."""
    return (f"member {member!r} inflates past the {declared:,} bytes it declares (stopped at {seen:,} bytes, from "
            f"{packed:,} compressed): a damaged or crafted log, not read, since the declared sizes, limited by "
            f"{EVAL_SETTING} ({limit(EVAL_SETTING):,} bytes), would not bound it")


def unknown_share() -> float:
    """The largest share, in (0, 1], of answer rows with ids the dataset lacks before scoring stops."""
    return config.get_share(UNKNOWN_SETTING, DEFAULT_UNKNOWN_SHARE)
