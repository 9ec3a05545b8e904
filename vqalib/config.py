"""Every setting the package reads from the environment: moved to :mod:`vqalib.core.config` (issue 17); `from vqalib import config` keeps working."""

from vqalib.core.config import (
    Setting,
    _ALL,
    SETTINGS,
    THREAD_VARIABLES,
    POOL_VARIABLES,
    get,
    get_path,
    get_int,
    set_default,
    snapshot,
    ModelCallForbidden,
    model_call,
)

__all__ = ["Setting", "_ALL", "SETTINGS", "THREAD_VARIABLES", "POOL_VARIABLES", "get", "get_path", "get_int", "set_default", "snapshot", "ModelCallForbidden", "model_call"]
