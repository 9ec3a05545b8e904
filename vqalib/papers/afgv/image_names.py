"""AFGV's VizWiz-LF question set keyed by VizWiz image file name and tier (Methods; ``[[question_alias]]`` of ``vqalib
score``): an item ``<question_id>/<tier>`` is also ``<image file name>/<tier>``, the image named by the VizWiz-LF
release (:mod:`vqalib.papers.vizwiz_lf.image_names`)."""

from __future__ import annotations

from pathlib import Path

from vqalib.papers.vizwiz_lf.image_names import image_file_names


def image_tier_aliases(ids: list[str], *, question_set: str | None = None,
                       data_dir: Path | None = None) -> list[tuple[str, str]]:
    """``(image file name/tier, item id)`` for each of ``ids`` of the VizWiz-LF question set (none for another set,
    whose question ids are not VizWiz-LF's).

    Parameters
    ----------
    ids : list of str
        The item ids, ``<question_id>/<tier>``.
    question_set : str, optional
        AFGV's question set (default VizWiz-LF).
    data_dir : Path, optional
    """
    if (question_set or "VizWiz-LF") != "VizWiz-LF":
        return []
    names = image_file_names(data_dir=data_dir)
    out = []
    for item in ids:
        question, _, tier = item.partition("/")
        if question in names and tier:
            out.append((f"{names[question]}/{tier}", item))
    return out
