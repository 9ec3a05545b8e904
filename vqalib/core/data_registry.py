"""The registry of upstream data files (VizWiz-LF §3, CommVQA §3, the LAVE demonstrations) and their verification.

Every upstream file the compendium reads is in :data:`REGISTRY` with the repository,
the pinned commit, the path there and its SHA-256 (README "Data provenance").
:func:`verified_path` gives the local path of a registered file after checking its hash;
:func:`verify_file` raises :class:`DataIntegrityError` naming the file and both hashes.
Fetching the files is :mod:`vqalib.core.fetch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vqalib.core.io import MIRROR_ENV, default_data_dir, sha256_of

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

VIZWIZ_LF_REPO = "UT-CS-HCI/lfvqa"
VIZWIZ_LF_COMMIT = "358d12904635bbf612558da10febfe5e35967540"
COMMVQA_REPO = "nnaik39/commvqa"
COMMVQA_COMMIT = "97e5b27e6caf61197d9feca3fe3841df3ac28f24"
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


def _vizwiz(stem: str, sha256: str) -> DataFile:
    return DataFile(f"vizwiz-lf/{stem}.json", "vizwiz-lf", VIZWIZ_LF_REPO, VIZWIZ_LF_COMMIT,
                    f"data/{stem}.json", sha256)


def _commvqa(key: str, upstream_path: str, sha256: str) -> DataFile:
    return DataFile(f"commvqa/{key}", "commvqa", COMMVQA_REPO, COMMVQA_COMMIT, upstream_path, sha256)


def _lave(name: str, sha256: str) -> DataFile:
    return DataFile(f"lave/{name}", "lave", LAVE_REPO, LAVE_COMMIT, f"data/{name}", sha256)


REGISTRY: tuple[DataFile, ...] = (
    _vizwiz("expert", "be3ee44681e30e307977468e046fbd108f2283a3ed63d40ba0a688b9043d2330"),
    _vizwiz("gpt-4v", "79d5fef8ffbdbe96a12b17b683ca93b32374b8ac15bd82dffa9026f429def9ef"),
    _vizwiz("gemini", "6d688ec21c9d760e8e764879208e2451ac46d8ed97a193ded7162a6c87b7ef31"),
    _vizwiz("llava", "8a56c2743d448aace3f3c128a45306d0936191b9fcf59adf46795259b3e472df"),
    _vizwiz("qwen", "b1968eb4e970e987ede99298d3a57dc0dd0684689efa75bd388b74e6467ceeb6"),
    _vizwiz("blip2", "4c1217730f6607a6ff23210cb752457ee58eed546ffb766aa3368af52368ea4c"),
    _vizwiz("instruct_blip", "a05093b51f8d16615284d3cf792327fe43af1db0d0283caebc4324aa4f6ec698"),
    _commvqa("annotations.json", "CommVQA_dataset/annotations.json",
             "9a3a0a6dedbd0ff91241a5e494170ac4073d86d596bb786441454f276dc29f60"),
    _commvqa("results/blip2_baseline_results.csv", "models/blip2/results/blip2_baseline_results.csv",
             "2b426dc882bc2af74f7549ac90502bcb84273195ee1674c6ecc7a1e40b2d490c"),
    _commvqa("results/blip2_contextual_results.csv", "models/blip2/results/blip2_contextual_results.csv",
             "14dccff72626cf383a0d4b73c5b1317f3c74e9593b61df988e240967a456912c"),
    _commvqa("results/idefics_baseline_results.csv", "models/idefics/results/idefics_baseline_results.csv",
             "717f7273efda2b1726722cde3a384d98609deb9cabcc957b094a3a3ebf5127a5"),
    _commvqa("results/idefics_contextual_results.csv", "models/idefics/results/idefics_contextual_results.csv",
             "47648d40ba5fd78c88982e96fb6b070795fe497a9d4530ba06620a7f0d684374"),
    _commvqa("results/llava_baseline_results.csv", "models/LLaVA/results/llava_baseline_results.csv",
             "660ba2663a1a2e60f1bc8f0274a97b1e48eaa32f87a1d7f06c61eb007ab5e0a8"),
    _commvqa("results/llava_contextual_results.csv", "models/LLaVA/results/llava_contextual_results.csv",
             "2ab6bc9cce5a9c9064f1dc3d9b3de546e19d84ff7c32f8b3c80298f7fff23d81"),
    # the authors' eval_metrics.py names mplug_owl_context_description_results.csv, which the release lacks;
    # the contextual file is the one whose scores match the printed mPLUG-Owl (Contextual) row
    _commvqa("results/mplug_owl_baseline_results.csv", "models/mPLUG-Owl/results/mplug_owl_baseline_results.csv",
             "49b98938bff834fa13aa39f3b5e7639314fe09cae4de502d8862e0c2cccfee42"),
    _commvqa("results/mplug_owl_contextual_results.csv", "models/mPLUG-Owl/results/mplug_owl_contextual_results.csv",
             "dc7078579ea6f760ad05051719367a407c71359c789f595102157a254cc5acd0"),
    _lave("lave_demos.json", "80f68aee0a5e53f243274013061f86889fa2b5fef810d071a97f9965cba0a888"),
    _lave("lave_demos_binary.json", "d69c618e917c1d0eacc051d4854cc07abcc43a79935fcc716b681ba38980fe6b"),
)
_BY_KEY = {f.key: f for f in REGISTRY}


def registry_frame() -> pd.DataFrame:
    """The registry as a table (README "Data provenance", notebook 01).

    Returns
    -------
    pandas.DataFrame
        One row per registered file: the :class:`DataFile` fields and its ``url``.
    """
    import pandas as pd

    return pd.DataFrame([{**f.__dict__, "url": f.url} for f in REGISTRY])


def spec_for(key: str) -> DataFile:
    """The registered file under ``key`` (its path below ``data/raw/``).

    Parameters
    ----------
    key : str
        E.g. ``"vizwiz-lf/expert.json"``.

    Returns
    -------
    DataFile
        Its registry entry; an unknown key raises ``KeyError`` listing the known ones.
    """
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"{key!r} is not a registered data file; known: {sorted(_BY_KEY)}") from None


def verify_file(path: Path, *, expected: str, name: str) -> None:
    """Raise :class:`DataIntegrityError` naming the file and both hashes on a mismatch.

    Parameters
    ----------
    path : Path
        The file to hash.
    expected : str
        The registered SHA-256 (hex digest).
    name : str
        How the error message names the file.
    """
    actual = sha256_of(path)
    if actual != expected:
        error = DataIntegrityError(
            f"{name}: SHA-256 mismatch: expected {expected}, actual {actual}. "
            "This is not the pinned upstream release; it was refused and nothing was written."
        )
        error.expected, error.actual = expected, actual
        raise error


def verified_path(key: str, *, data_dir: Path | None = None) -> Path:
    """Local path of a registered file, after checking it exists and its hash is right.

    Parameters
    ----------
    key : str
        The registered key (path below the data folder).
    data_dir : Path, optional
        The data folder; default :func:`~vqalib.core.io.default_data_dir`.

    Returns
    -------
    Path
        ``data_dir / key``; a missing file raises ``FileNotFoundError``, a wrong hash
        :class:`DataIntegrityError`.
    """
    spec = spec_for(key)
    path = (Path(data_dir) if data_dir is not None else default_data_dir()) / key
    if not path.exists():
        raise FileNotFoundError(f"{key}: {path} does not exist; run `make data` (or set {MIRROR_ENV}).")
    verify_file(path, expected=spec.sha256, name=key)
    return path
