"""Prompt texts stored as package data (``<package>/prompts/<file>.json``): the one loader for every prompt file,
named prompts ``{"prompts": {name: {"source": ..., "text": ...}}}`` (:func:`load_prompt`) or a whole-file prompt
(:func:`prompt_file`). Tests pin the texts' SHA-256."""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

FOLDER = "prompts"
_FILE_NAME = re.compile(r"[a-z0-9_]+")


@functools.lru_cache(maxsize=None)
def _text(package: str, file: str) -> str:
    if not _FILE_NAME.fullmatch(file):
        raise ValueError(f"not a prompt file name: {file!r} (lower-case letters, digits and _ only)")
    path = resources.files(package).joinpath(FOLDER, f"{file}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no prompt file {FOLDER}/{file}.json in package {package}")
    return path.read_text(encoding="utf-8")


def prompt_file(package: str, file: str) -> dict[str, Any]:
    """The whole prompt file ``<package>/prompts/<file>.json`` (``file``: lower-case letters, digits, ``_``), parsed
    afresh (a caller's copy).

    Parameters
    ----------
    package : str
    file : str
    """
    return json.loads(_text(package, file))


def load_prompt(package: str, file: str, name: str) -> Any:
    """The text (or mapping of templates) of prompt ``name`` in ``<package>/prompts/<file>.json``, a copy.

    Parameters
    ----------
    package : str
    file : str
    name : str
        The prompt's name in the file's ``prompts`` mapping; an unknown one is a KeyError.
    """
    entries = prompt_file(package, file)["prompts"]
    if name not in entries:
        raise KeyError(f"no prompt {name!r} in {FOLDER}/{file}.json; it has: {', '.join(entries)}")
    return entries[name]["text"]
