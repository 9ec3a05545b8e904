"""User text (model names, file names, answers, toolkit metadata) made safe for its file: one escaped line of
Markdown (no markup, no forged line or cell), CSV cells that cannot run as spreadsheet formulas (a leading
``'``, also before an existing one, so the quoting is reversible), and terminal text whose control characters show
as escapes instead of acting."""

from __future__ import annotations

import argparse
import contextlib
import html
import re
import warnings

import pandas as pd

_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
_MARKDOWN = re.compile(r"([\\`*_\[\]|#])")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")
# C0 and C1 controls but newline and tab, DEL, bidirectional overrides, lone surrogates (undecodable file names)
_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


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


def terminal_text(value: object) -> str:
    """``str(value)`` for a terminal: every control character but newline and tab (ESC, BEL, CR, backspace, CSI
    ``\\x9b``, ...), bidirectional override and lone surrogate shown as an escape such as ``\\x1b``, so no text from a
    file or the command line can move the cursor, retitle the window or hide what precedes it.

    Parameters
    ----------
    value : object
    """
    return _TERMINAL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                         str(value))


@contextlib.contextmanager
def escaped_warnings():
    """Within the block, every warning shown has its text through :func:`terminal_text` (warnings name files, ids)."""
    original = warnings.formatwarning
    warnings.formatwarning = lambda *args, **kwargs: terminal_text(original(*args, **kwargs))
    try:
        yield
    finally:
        warnings.formatwarning = original


class TerminalParser(argparse.ArgumentParser):
    """An argparse parser whose messages (usage errors quote the command line) go through :func:`terminal_text`."""

    def _print_message(self, message: str, file=None) -> None:
        super()._print_message(terminal_text(message) if message else message, file)
