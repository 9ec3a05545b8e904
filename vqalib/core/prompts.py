"""Prompt texts stored as package data: the one loader for every prompt file of the compendium.

A prompt file is ``<package>/prompts/<file>.json``. Files of named prompts hold ``{"prompts": {name:
{"source": ..., "text": ...}}}`` (``source`` says where the text comes from, ``text`` is the text, or a mapping of
templates), optionally beside ``name`` and ``description``; they are read by :func:`load_prompt`:

- ``vqalib.core.judge``, ``lave``: the LAVE judge prompts (VizWiz-LF Table 17, mair-lab/lave's reference prompt);
- ``vqalib.runner``, ``vizwiz_lf`` / ``commvqa`` / ``afgv`` / ``chat_templates``: the runner's prompts
  (VizWiz-LF Tables 22-24, CommVQA Appendix A.1, AFGV's short-answer templates, test models' chat templates).

A file that is one prompt as a whole (the few-shot classifier prompts of VizWiz-LF Tables 11-14 in
``vqalib.papers.vizwiz_lf``, ``role_classifier`` / ``info_classifier``) is read by :func:`prompt_file`. Texts
are byte-identical to what the code used when they were Python literals (tests pin their SHA-256).
"""

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
    """The whole prompt file ``<package>/prompts/<file>.json``, parsed afresh (a caller's copy).

    Parameters
    ----------
    package : str
        The package that holds the ``prompts`` folder, e.g. ``"vqalib.runner"``.
    file : str
        The file's name without ``.json`` (lower-case letters, digits and ``_``).

    Returns
    -------
    dict
        The parsed file; changing it changes nothing for other callers. A name that is not a plain file name is a
        ``ValueError``; a missing file a ``FileNotFoundError`` naming it.
    """
    return json.loads(_text(package, file))


def load_prompt(package: str, file: str, name: str) -> Any:
    """The text of the named prompt ``name`` in ``<package>/prompts/<file>.json``.

    Parameters
    ----------
    package : str
        The package that holds the ``prompts`` folder, e.g. ``"vqalib.core.judge"``.
    file : str
        The file's name without ``.json``, e.g. ``"lave"``.
    name : str
        The prompt's name in the file's ``prompts`` mapping, e.g. ``"vizwiz_lf_instruction"``.

    Returns
    -------
    str or dict or list
        The stored text, a caller's copy (a mapping of templates or a list of demonstrations where the file holds
        one). An unknown name is a ``KeyError`` listing the known ones.
    """
    entries = prompt_file(package, file)["prompts"]
    if name not in entries:
        raise KeyError(f"no prompt {name!r} in {FOLDER}/{file}.json; it has: {', '.join(entries)}")
    return entries[name]["text"]
