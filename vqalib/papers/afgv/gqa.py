"""Fetching GQA's official questions (AFGV Methods, the GQA question set): the function behind
``vqalib fetch-gqa`` (:mod:`vqalib.compendium.cli`), which ``make data-gqa`` runs.
"""

from __future__ import annotations

from pathlib import Path

from vqalib.core.io import project_root

GQA_QUESTIONS_URL = "https://downloads.cs.stanford.edu/nlp/data/gqa/questions1.2.zip"
# limits of that download: the archive is about 1.4 GB, so these only stop a runaway server
GQA_MAX_BYTES = 4 << 30
GQA_DEADLINE = 4 * 3600.0


def fetch_gqa_questions(*, dest: Path | None = None) -> Path:
    """Download GQA's official questions archive (online users; ``vqalib fetch-gqa``) and unpack it
    (AFGV Methods).

    GQA publishes no checksum for the archive; its SHA-256 is printed so a run can record it.
    An archive already in ``dest`` is not downloaded again; only the ``*balanced_questions.json``
    members are extracted.

    Parameters
    ----------
    dest : Path, optional
        Download folder, created if needed (default ``<project>/data/raw/gqa``).

    Returns
    -------
    Path
        ``dest``, holding ``questions1.2.zip`` and the extracted files.
    """
    import hashlib
    import zipfile

    from vqalib.core.fetch import download

    dest = dest or project_root() / "data" / "raw" / "gqa"
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "questions1.2.zip"
    if not archive.exists():
        tmp = archive.with_suffix(".part")
        with open(tmp, "wb") as out:
            download(GQA_QUESTIONS_URL, out, max_bytes=GQA_MAX_BYTES, deadline=GQA_DEADLINE, desc="GQA questions")
        tmp.replace(archive)
    print(f"{archive}: sha256 {hashlib.sha256(archive.read_bytes()).hexdigest()}")
    with zipfile.ZipFile(archive) as z:
        for name in z.namelist():
            if name.endswith("balanced_questions.json"):
                z.extract(name, dest)
    return dest
