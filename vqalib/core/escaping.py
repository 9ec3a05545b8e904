"""User text (model names, file names, answers, toolkit metadata) made safe for its file: one escaped line of
Markdown (no markup, no forged line or cell), and CSV cells that cannot run as spreadsheet formulas (a leading
``'``, also before an existing one, so the quoting is reversible)."""

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
    """``str(value)`` as one Markdown line that shows as the text it is (no markup, no forged line or cell).

    Parameters
    ----------
    value : object
    """
    text = _BREAKS.sub(" ", str(value))
    return _MARKDOWN.sub(r"\\\1", html.escape(text, quote=False))


def markdown_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every column name and text cell through :func:`markdown_text` (for ``to_markdown``).

    Parameters
    ----------
    frame : pandas.DataFrame
    """
    return _map_text(frame, markdown_text)


def csv_formula_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text starting with ``= + - @``, a tab, a carriage return or ``'`` gets a leading ``'``.

    Parameters
    ----------
    frame : pandas.DataFrame
    """
    return _map_text(frame, lambda text: "'" + text if text.startswith(_FORMULA_START) else text)


def csv_formula_unquoted(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` without one leading ``'`` in each text cell and column name (undoes csv_formula_safe).

    Parameters
    ----------
    frame : pandas.DataFrame
    """
    return _map_text(frame, lambda text: text[1:] if text.startswith("'") else text)
