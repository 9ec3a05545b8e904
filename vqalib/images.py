"""Images for answer generation: VizWiz URLs, CommVQA's images.zip, a GQA folder (VizWiz-LF §3, CommVQA §3, AFGV Methods): moved to :mod:`vqalib.runner.images` (issue 17); this name keeps working."""

from vqalib.runner.images import (
    IMAGE_CACHE_ENV,
    IMAGE_TIMEOUT_ENV,
    IMAGE_MAX_BYTES_ENV,
    IMAGE_MAX_PIXELS_ENV,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    _CHUNK,
    COMMVQA_IMAGES_ENV,
    GQA_IMAGES_ENV,
    ImageError,
    LoadedImage,
    _file_kind,
    _megabytes,
    default_cache_dir,
    commvqa_source,
    gqa_source,
    ImageStore,
)

__all__ = ["IMAGE_CACHE_ENV", "IMAGE_TIMEOUT_ENV", "IMAGE_MAX_BYTES_ENV", "IMAGE_MAX_PIXELS_ENV", "DEFAULT_MAX_BYTES", "DEFAULT_MAX_PIXELS", "_CHUNK", "COMMVQA_IMAGES_ENV", "GQA_IMAGES_ENV", "ImageError", "LoadedImage", "_file_kind", "_megabytes", "default_cache_dir", "commvqa_source", "gqa_source", "ImageStore"]
