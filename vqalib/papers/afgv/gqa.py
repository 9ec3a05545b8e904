"""Fetching GQA's official questions (AFGV Methods, the GQA question set; ``make data-gqa``) and the
command line ``python -m vqalib.afgv fetch-gqa``.
"""

from __future__ import annotations

from pathlib import Path

from vqalib.datasets import project_root

GQA_QUESTIONS_URL = "https://downloads.cs.stanford.edu/nlp/data/gqa/questions1.2.zip"


def fetch_gqa_questions(*, dest: Path | None = None) -> Path:
    """Download GQA's official questions archive (online users; `make data-gqa`) and unpack it.

    GQA publishes no checksum for the archive; its SHA-256 is printed so a run can record it.
    """
    import hashlib
    import urllib.request
    import zipfile

    dest = dest or project_root() / "data" / "raw" / "gqa"
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "questions1.2.zip"
    if not archive.exists():
        tmp = archive.with_suffix(".part")
        urllib.request.urlretrieve(GQA_QUESTIONS_URL, tmp)
        tmp.replace(archive)
    print(f"{archive}: sha256 {hashlib.sha256(archive.read_bytes()).hexdigest()}")
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            if name.endswith("balanced_questions.json"):
                z.extract(name, dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    """``python -m vqalib.afgv fetch-gqa``: download and unpack GQA's questions (:func:`fetch_gqa_questions`).

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the module name (default: ``sys.argv[1:]``); only ``["fetch-gqa"]`` is accepted.

    Returns
    -------
    int
        0 on success; other arguments raise ``SystemExit`` with the usage line.
    """
    import sys

    if (sys.argv[1:] if argv is None else list(argv)) != ["fetch-gqa"]:
        raise SystemExit("usage: python -m vqalib.afgv fetch-gqa")
    print(f"GQA questions in {fetch_gqa_questions()}")
    return 0
