"""Fetching GQA's official questions (AFGV Methods, the GQA question set): ``vqalib fetch-gqa``."""

from __future__ import annotations

from pathlib import Path

from vqalib.core.io import project_root

GQA_QUESTIONS_URL = "https://downloads.cs.stanford.edu/nlp/data/gqa/questions1.2.zip"
# limits of that download: the archive is about 1.4 GB, so these only stop a runaway server
GQA_MAX_BYTES = 4 << 30
GQA_DEADLINE = 4 * 3600.0


def fetch_gqa_questions(*, dest: Path | None = None) -> Path:
    """Download and unpack GQA's questions into ``dest``, printing the SHA-256 (GQA publishes none; AFGV Methods).

    Parameters
    ----------
    dest : Path, optional
        Download folder, created if needed (default ``<project>/data/raw/gqa``).
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
