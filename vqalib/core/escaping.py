"""Text from a user (a model's name, file names, answers, toolkit metadata) made safe for the file it lands in.

Markdown: one line (line breaks and other control characters become spaces), ``<``, ``>`` and ``&`` as HTML
entities (a Markdown viewer renders raw HTML) and the characters that make emphasis, code, links or table cells
backslash-escaped (:func:`markdown_text`, :func:`markdown_frame`). CSV: a text cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return would run as a formula in a spreadsheet, so it is written with a leading
``'``, and so is a cell that already starts with one, which makes the quoting reversible
(:func:`csv_formula_safe`, :func:`csv_formula_unquoted`). HTML is escaped where pages are built
(``html.escape`` in the site's templates).
"""

from __future__ import annotations

import html
import re

import pandas as pd

_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
_MARKDOWN = re.compile(r"([\\`*_\[\]|#])")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def _map_text(frame: pd.DataFrame, change) -> pd.DataFrame:
    """A copy of ``frame`` with ``change`` applied to every text column name and text cell (numbers left alone)."""
    def one(value: object) -> object:
        return change(value) if isinstance(value, str) else value

    out = frame.copy()
    out.columns = [one(c) for c in out.columns]
    for column in out.columns:
        if pd.api.types.is_object_dtype(out[column]) or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(one)
    return out


def markdown_text(value: object) -> str:
    """``value`` as one line of Markdown that shows as the text it is (no markup, no forged line or cell).

    Parameters
    ----------
    value : object
        Any value; ``str()`` of it is escaped.

    Returns
    -------
    str
    """
    text = _BREAKS.sub(" ", str(value))
    return _MARKDOWN.sub(r"\\\1", html.escape(text, quote=False))


def markdown_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column name and text cell of ``frame`` through :func:`markdown_text` (numbers are left as they are).

    Parameters
    ----------
    frame : pandas.DataFrame
        A table about to be written with ``to_markdown``.

    Returns
    -------
    pandas.DataFrame
        A copy.
    """
    return _map_text(frame, markdown_text)


def csv_formula_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names cannot run as spreadsheet formulas.

    Parameters
    ----------
    frame : pandas.DataFrame
        A table about to be written with ``to_csv``.

    Returns
    -------
    pandas.DataFrame
        Text starting with ``= + - @``, a tab, a carriage return or ``'`` gets a leading ``'``.
    """
    return _map_text(frame, lambda text: "'" + text if text.startswith(_FORMULA_START) else text)


def csv_formula_unquoted(frame: pd.DataFrame) -> pd.DataFrame:
    """The inverse of :func:`csv_formula_safe`, for a table read back.

    Parameters
    ----------
    frame : pandas.DataFrame
        A table read from a CSV file :func:`csv_formula_safe` wrote.

    Returns
    -------
    pandas.DataFrame
        A copy with one leading ``'`` removed from each text cell and column name that has it.
    """
    return _map_text(frame, lambda text: text[1:] if text.startswith("'") else text)
