"""VizWiz image file names as VizWiz-LF question ids (§3; ``[[question_alias]]`` of ``vqalib score``): the release
links each question to its VizWiz image (``image_url``), whose file name (``VizWiz_train_00014902.jpg``) is the id most
VizWiz users key their answers by."""

from __future__ import annotations

import functools
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse

from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf


def image_file_names(*, data_dir: Path | None = None) -> dict[str, str]:
    """Each question id of the release -> the file name of its image (the Expert file's ``image_url``, as the exported
    toolkit tasks use it).

    Parameters
    ----------
    data_dir : Path, optional
    """
    return dict(_image_file_names(None if data_dir is None else str(data_dir)))


@functools.cache
def _image_file_names(data_dir: str | None) -> tuple[tuple[str, str], ...]:
    """Read once per process: the release's files are hash-checked and do not change under it."""
    answers = load_vizwiz_lf(data_dir=None if data_dir is None else Path(data_dir), sources=["expert"]).answers
    return tuple((str(q), PurePosixPath(urlparse(url).path).name)
                 for q, url in zip(answers["question_id"], answers["image_url"]))


def image_aliases(ids: list[str], *, question_set: str | None = None,
                  data_dir: Path | None = None) -> list[tuple[str, str]]:
    """``(image file name, question id)`` for each of ``ids`` the release links to an image (a ``[[question_alias]]``
    builder).

    Parameters
    ----------
    ids : list of str
        The dataset's question ids.
    question_set : str, optional
        Not read: VizWiz-LF has one question set.
    data_dir : Path, optional
    """
    names = image_file_names(data_dir=data_dir)
    return [(names[i], i) for i in ids if i in names]
