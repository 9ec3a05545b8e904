"""Prompt texts and chat templates stored as package data (``vqalib/runner/prompts/*.json``).

Serves the prompts of VizWiz-LF Tables 22-24 (``vizwiz_lf.json``), CommVQA Appendix A.1
(``commvqa.json``), the AFGV short-answer templates (``afgv.json``) and the chat templates of the
test models (``chat_templates.json``). Each file maps a prompt name to ``{"source": ..., "text": ...}``:
``source`` says where the text comes from, ``text`` is the text itself (a string, or for a set of
templates a mapping), byte-identical to what the runner used when the texts were Python literals.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

PROMPTS_PACKAGE = "vqalib.runner"
PROMPTS_FOLDER = "prompts"


@functools.lru_cache(maxsize=None)
def prompt_file(file: str) -> dict[str, dict]:
    """All entries of ``prompts/<file>.json`` (name -> ``{"source", "text"}``).

    Parameters
    ----------
    file : str
        The file's name without ``.json``: ``vizwiz_lf``, ``commvqa``, ``afgv`` or ``chat_templates``.

    Returns
    -------
    dict
        The parsed file. Raises ``FileNotFoundError`` naming the file when there is none.
    """
    path = resources.files(PROMPTS_PACKAGE).joinpath(PROMPTS_FOLDER, f"{file}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no prompt file {PROMPTS_FOLDER}/{file}.json in package {PROMPTS_PACKAGE}")
    return json.loads(path.read_text(encoding="utf-8"))


def prompt(file: str, name: str) -> Any:
    """The text of prompt ``name`` in ``prompts/<file>.json`` (a string, or a mapping of templates).

    Parameters
    ----------
    file : str
        The prompt file's name without ``.json``.
    name : str
        The prompt's name in that file, e.g. ``abstention_instruction``.

    Returns
    -------
    str or dict
        The stored text, exactly as stored (mappings are copied, so callers cannot change the cache).
    """
    entries = prompt_file(file)
    if name not in entries:
        raise KeyError(f"no prompt {name!r} in {PROMPTS_FOLDER}/{file}.json; it has: {', '.join(entries)}")
    text = entries[name]["text"]
    return dict(text) if isinstance(text, dict) else text
