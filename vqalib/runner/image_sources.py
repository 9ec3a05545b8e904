"""Image names from question files turned into sources :class:`~vqalib.runner.images.ImageStore` opens (CommVQA §3
``images.zip`` or folder, AFGV's GQA ``images/`` folder). Names are untrusted: one is looked up only inside
``--images``, and one that would leave it (``..``, an absolute path, a link pointing out) is an :class:`ImageError`."""

from __future__ import annotations

import os
from pathlib import Path

from vqalib.runner.images import ImageError

COMMVQA_IMAGES_ENV = "VQALIB_COMMVQA_IMAGES"
GQA_IMAGES_ENV = "VQALIB_GQA_IMAGES"


def image_in_folder(folder: str | Path, name: str, *, what: str | None = None) -> str:
    """The resolved path of image ``name`` inside ``folder``; :class:`ImageError` if it would leave the folder.

    Parameters
    ----------
    folder : str or Path
        The images folder (``--images``).
    name : str
        The file name or relative path the question file gives.
    what : str, optional
        How errors name the image (default ``image '<name>'``).

    Returns
    -------
    str
        Symbolic links followed; not checked to exist (a missing file fails when loaded).
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
    """The source of CommVQA image ``name`` in ``images.zip`` or a folder (CommVQA §3).

    Parameters
    ----------
    name : str
        The image's file name in the annotations.
    images : str or Path or None
        The authors' ``images.zip`` or a folder; None raises :class:`ImageError` naming the fix.
    """
    if images is None:
        raise ImageError(f"CommVQA image {name!r}: no images location; pass --images path/to/images.zip "
                         f"or set {COMMVQA_IMAGES_ENV}")
    images = Path(images)
    if images.suffix.lower() == ".zip":
        return f"zip:{images}!{name}"
    return image_in_folder(images, str(name), what=f"CommVQA image {name!r}")


def gqa_source(image_id: str, *, images: str | Path | None) -> str:
    """The source of GQA image ``image_id``, ``<images>/<id>.jpg`` (AFGV Methods).

    Parameters
    ----------
    image_id : str
        The GQA image id.
    images : str or Path or None
        The GQA ``images/`` folder; None raises :class:`ImageError` naming the fix.
    """
    if images is None:
        raise ImageError(f"GQA image {image_id!r}: no images folder; pass --images path/to/gqa/images "
                         f"or set {GQA_IMAGES_ENV}")
    return image_in_folder(images, f"{image_id}.jpg", what=f"GQA image id {image_id!r}")
