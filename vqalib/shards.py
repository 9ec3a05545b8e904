"""The content-addressed on-disk store of float64 rows: moved to :mod:`vqalib.core.shards` (issue 17); this name keeps working."""

from vqalib.core.shards import (
    item_key,
    ShardStore,
)

__all__ = ["item_key", "ShardStore"]
