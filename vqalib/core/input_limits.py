"""Declared limits on what an answers file may make the reader do, checked before the work starts.

A file from outside (``vqalib score``, ``vqalib import``) could hold a line of many megabytes, a JSON value nested
a hundred thousand deep (which ``json.loads`` meets with a ``RecursionError``), a workbook that inflates a 1 MB
zip into gigabytes, or a million rows that name no question of the dataset. Each limit is a setting of
:mod:`vqalib.core.config` (listed in the README); each function here returns why a value is over its limit (the
limit and the setting that changes it) or None, and the reader raises that as a
:class:`~vqalib.core.io.DataFormatError` naming the file and line, so this module needs nothing of ``io``.
"""

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
    """The current value of one of the whole-number limits (:data:`DEFAULTS`).

    Parameters
    ----------
    name : str
        A key of :data:`DEFAULTS`.

    Returns
    -------
    int
    """
    return config.get_int(name, DEFAULTS[name])


def line_problem(length: int) -> str | None:
    """Why a line of ``length`` bytes is too long to read, or None.

    Parameters
    ----------
    length : int
        The line's length in bytes.

    Returns
    -------
    str or None
    """
    most = limit(LINE_SETTING)
    if length <= most:
        return None
    return (f"the line is too long: {length:,} bytes, over the limit of {most:,} bytes per line "
            f"(set {LINE_SETTING} to read longer lines)")


def nesting_problem(text: str | bytes, *, most: int | None = None) -> str | None:
    """Why a JSON text nests deeper than the declared limit, or None (strings are skipped, so brackets in
    answers do not count).

    Parameters
    ----------
    text : str or bytes
        One JSON document or line.
    most : int, optional
        The limit (default the setting's current value; a reader of many lines reads it once).

    Returns
    -------
    str or None
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
    """The 1-based line of a JSON document where its nesting first passes ``most`` (for the error message only:
    strings are masked in place, which is slower than :func:`nesting_problem`'s scan).

    Parameters
    ----------
    data : bytes
        The document.
    most : int
        The limit.

    Returns
    -------
    int
    """
    masked = _STRINGS.sub(lambda m: b"_" * len(m.group()), data)
    codes = np.frombuffer(masked, dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int32) - np.isin(codes, (ord("]"), ord("}")))
    over = np.flatnonzero(np.cumsum(steps) > most)
    return data.count(b"\n", 0, int(over[0])) + 1 if len(over) else 1


def workbook_problem(handle) -> str | None:
    """Why an .xlsx workbook would inflate past the declared limits (its zip directory, read before any sheet),
    or None; a file that is not a zip is left to the workbook reader's own message.

    Parameters
    ----------
    handle : binary file
        The open workbook (seekable); it is rewound after the check.

    Returns
    -------
    str or None
    """
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
    """The largest share of answer rows whose ids the dataset lacks before scoring stops (``VQALIB_MAX_UNKNOWN_SHARE``).

    Returns
    -------
    float
        In (0, 1]; 1 never stops.
    """
    return config.get_share(UNKNOWN_SETTING, DEFAULT_UNKNOWN_SHARE)
