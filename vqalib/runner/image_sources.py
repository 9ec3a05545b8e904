"""Where a dataset's images are: a name from a question file turned into a source :class:`~vqalib.runner.images.ImageStore`
opens (CommVQA §3 ``images.zip`` or folder, AFGV Methods GQA ``images/`` folder).

Image names come from question files, which are untrusted data like the images: a name is only ever looked up
*inside* the folder given with ``--images``. :func:`image_in_folder` resolves the joined path (``..`` components and
symbolic links included) and refuses one that lands outside the folder, so an ``image_id`` such as
``../../secret`` or ``/etc/passwd``, or a link in the folder pointing elsewhere, becomes an :class:`ImageError` naming
the id, which the question loaders turn into an error record of that question (never a file read outside the folder).

Configuration: ``VQALIB_COMMVQA_IMAGES`` (CommVQA ``images.zip`` or folder), ``VQALIB_GQA_IMAGES`` (GQA ``images/``
folder); read by :mod:`vqalib.runner.questions`.
"""

from __future__ import annotations

import os
from pathlib import Path

from vqalib.runner.images import ImageError

COMMVQA_IMAGES_ENV = "VQALIB_COMMVQA_IMAGES"
GQA_IMAGES_ENV = "VQALIB_GQA_IMAGES"


def image_in_folder(folder: str | Path, name: str, *, what: str | None = None) -> str:
    """The path of image ``name`` inside ``folder``, resolved; :class:`ImageError` if it would leave the folder.

    Parameters
    ----------
    folder : str or Path
        The images folder (``--images``).
    name : str
        The file name or relative path the question file gives.
    what : str, optional
        How errors name the image (default ``image '<name>'``; e.g. ``GQA image id '2354786'``).

    Returns
    -------
    str
        The fully resolved path (symbolic links followed; not checked to exist: a missing file fails when it is
        loaded). A name that is absolute, climbs out with ``..``, holds a NUL byte, or ends at a symbolic link whose
        target is outside ``folder`` raises :class:`ImageError` naming ``name`` and the folder.
    """
    what = what or f"image {name!r}"
    root = Path(os.path.realpath(folder))
    try:
        # realpath follows every link, the last component's too: a link inside the folder pointing out is caught
        resolved = Path(os.path.realpath(root / name))
    except (ValueError, OSError) as error:  # a NUL byte, a link loop
        raise ImageError(f"{what}: not a usable file name in {folder} ({error}); refused") from None
    if Path(name).is_absolute() or not resolved.is_relative_to(root) or resolved == root:
        raise ImageError(f"{what}: resolves to {resolved}, outside the images folder {root} (--images); "
                         f"refused: image names are looked up only inside that folder")
    return str(resolved)


def commvqa_source(name: str, *, images: str | Path | None) -> str:
    """The source of CommVQA image ``name`` in ``images`` (``images.zip`` or a folder) (CommVQA §3).

    Parameters
    ----------
    name : str
        The image's file name in the annotations (``image``).
    images : str or Path or None
        The authors' ``images.zip`` (a ``.zip`` suffix) or a folder of the images; None raises
        :class:`ImageError` naming ``--images`` and ``$VQALIB_COMMVQA_IMAGES``.

    Returns
    -------
    str
        ``zip:<images>!<name>`` for an archive (a member is looked up by name, never on disk), else the resolved path
        inside the folder (:func:`image_in_folder`; a name leaving it raises :class:`ImageError`).
    """
    if images is None:
        raise ImageError(f"CommVQA image {name!r}: no images location; pass --images path/to/images.zip "
                         f"or set {COMMVQA_IMAGES_ENV}")
    images = Path(images)
    if images.suffix.lower() == ".zip":
        return f"zip:{images}!{name}"
    return image_in_folder(images, str(name), what=f"CommVQA image {name!r}")


def gqa_source(image_id: str, *, images: str | Path | None) -> str:
    """The source of GQA image ``image_id`` (``<images>/<id>.jpg``) (AFGV Methods, GQA images).

    Parameters
    ----------
    image_id : str
        The GQA image id (``imageId`` of the GQA questions).
    images : str or Path or None
        The GQA ``images/`` folder; None raises :class:`ImageError` naming ``--images`` and
        ``$VQALIB_GQA_IMAGES``.

    Returns
    -------
    str
        The image's resolved path inside the folder (not checked to exist: a missing file fails when it is loaded); an
        id that would leave the folder (``../../secret``, an absolute path, a link pointing out) raises
        :class:`ImageError` naming the id.
    """
    if images is None:
        raise ImageError(f"GQA image {image_id!r}: no images folder; pass --images path/to/gqa/images "
                         f"or set {GQA_IMAGES_ENV}")
    return image_in_folder(images, f"{image_id}.jpg", what=f"GQA image id {image_id!r}")
