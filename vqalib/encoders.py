"""The shared embedding service: moved to :mod:`vqalib.core.encoders` (issue 17); this name keeps working."""

from vqalib.core.encoders import (
    DECIMALS,
    PACKAGED_PACKAGE,
    EMBED_VERSION,
    packaged_minilm_path,
    _float64_encoder,
    model_identity,
    _encode,
    embed,
)

__all__ = ["DECIMALS", "PACKAGED_PACKAGE", "EMBED_VERSION", "packaged_minilm_path", "_float64_encoder", "model_identity", "_encode", "embed"]
