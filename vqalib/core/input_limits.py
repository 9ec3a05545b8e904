"""Declared limits on what an outside answers file may make the reader do (line length, JSON nesting, workbook
inflation, unknown ids), checked before the work starts: each function returns why a value is over its limit
(naming the setting that changes it) or None, and the reader raises it naming the file and line."""

from __future__ import annotations

import re
import zipfile

import numpy as np

from vqalib.core import config

LINE_SETTING, DEPTH_SETTING = "VQALIB_MAX_LINE_BYTES", "VQALIB_MAX_JSON_DEPTH"
XLSX_SETTING, RATIO_SETTING = "VQALIB_MAX_XLSX_BYTES", "VQALIB_MAX_XLSX_RATIO"
UNKNOWN_SETTING = "VQALIB_MAX_UNKNOWN_SHARE"
DEFAULTS = {LINE_SETTING: 16 << 20, DEPTH_SETTING: 64, XLSX_SETTING: 256 << 20, RATIO_SETTING: 100}
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
    """The 1-based line of JSON ``data`` where nesting first passes ``most`` (slower; for the error message)."""
    masked = _STRINGS.sub(lambda m: b"_" * len(m.group()), data)
    codes = np.frombuffer(masked, dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int32) - np.isin(codes, (ord("]"), ord("}")))
    over = np.flatnonzero(np.cumsum(steps) > most)
    return data.count(b"\n", 0, int(over[0])) + 1 if len(over) else 1


def workbook_problem(handle) -> str | None:
    """Why an .xlsx workbook (an open seekable ``handle``, rewound after) would inflate past the declared limits, read
    from its zip directory; or None."""
    try:
        with zipfile.ZipFile(handle) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return None
    finally:
        handle.seek(0)
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


def unknown_share() -> float:
    """The largest share, in (0, 1], of answer rows with ids the dataset lacks before scoring stops."""
    return config.get_share(UNKNOWN_SETTING, DEFAULT_UNKNOWN_SHARE)
