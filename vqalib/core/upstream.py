"""The upstream data files (each paper's ``[upstream]`` declarations and the LAVE demonstrations), each
with repository, pinned commit, path and SHA-256, and their verification; :mod:`vqalib.core.fetch` fetches them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vqalib.core.declarations import upstream
from vqalib.core.io import MIRROR_ENV, default_data_dir, sha256_of

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

LAVE_REPO = "mair-lab/lave"  # the LAVE reference implementation: its in-context demonstrations (vqalib.core.judge)
LAVE_COMMIT = "253640bfb7c328a507cb8bd0f34e17146ec3161a"


class DataIntegrityError(RuntimeError):
    """A file's SHA-256 is not the registered one."""


@dataclass(frozen=True)
class DataFile:
    """One upstream file: where it comes from, where it lives locally, its hash."""

    key: str  # path below data/raw/ and below a mirror folder
    dataset: str
    repo: str
    commit: str
    upstream_path: str
    sha256: str

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.upstream_path}"


def _lave(name: str, sha256: str) -> DataFile:
    return DataFile(f"lave/{name}", "lave", LAVE_REPO, LAVE_COMMIT, f"data/{name}", sha256)


FILES: tuple[DataFile, ...] = (
    *(DataFile(f["key"], f["dataset"], f["repo"], f["commit"], f["path"], f["sha256"]) for f in upstream()),
    _lave("lave_demos.json", "80f68aee0a5e53f243274013061f86889fa2b5fef810d071a97f9965cba0a888"),
    _lave("lave_demos_binary.json", "d69c618e917c1d0eacc051d4854cc07abcc43a79935fcc716b681ba38980fe6b"),
)
_BY_KEY = {f.key: f for f in FILES}


def files_frame() -> pd.DataFrame:
    """The upstream files as a table: one row per registered file, its :class:`DataFile` fields and ``url``."""
    import pandas as pd

    return pd.DataFrame([{**f.__dict__, "url": f.url} for f in FILES])


def spec_for(key: str) -> DataFile:
    """The registered file under ``key`` (path below ``data/raw/``); an unknown key: KeyError listing the known ones."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"{key!r} is not a registered data file; known: {sorted(_BY_KEY)}") from None


def verify_file(path: Path, *, expected: str, name: str) -> None:
    """Raise :class:`DataIntegrityError` (naming ``name``, both hashes) if ``path``'s SHA-256 is not ``expected``."""
    actual = sha256_of(path)
    if actual != expected:
        error = DataIntegrityError(
            f"{name}: SHA-256 mismatch: expected {expected}, actual {actual}. "
            "This is not the pinned upstream release; it was refused and nothing was written."
        )
        error.expected, error.actual = expected, actual
        raise error


def verified_path(key: str, *, data_dir: Path | None = None) -> Path:
    """Local path ``data_dir / key`` of a registered file, after checking it exists and its hash is right.

    Parameters
    ----------
    key : str
    data_dir : Path, optional
        The data folder; default :func:`~vqalib.core.io.default_data_dir`.
    """
    spec = spec_for(key)
    path = (Path(data_dir) if data_dir is not None else default_data_dir()) / key
    if not path.exists():
        raise FileNotFoundError(f"{key}: {path} does not exist; run `make data` (or set {MIRROR_ENV}).")
    verify_file(path, expected=spec.sha256, name=key)
    return path
