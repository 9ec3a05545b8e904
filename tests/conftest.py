"""Shared fixtures: the real release (fetched from the mirror if needed) and small hand-made files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vqalib import datasets

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """data/raw with every registered file, fetched from $VQALIB_DATA_MIRROR (or upstream) if absent."""
    path = datasets.default_data_dir()
    datasets.fetch(data_dir=path, mirror=datasets.default_mirror(), progress=False)
    return path


@pytest.fixture(scope="session")
def vizwiz(data_dir):
    return datasets.load_vizwiz_lf(data_dir=data_dir)


@pytest.fixture
def small_file(tmp_path) -> Path:
    """A copy of the hand-made three-entry VizWiz-LF file in a scratch folder."""
    target = tmp_path / "small.json"
    shutil.copy(FIXTURES / "vizwiz_small.json", target)
    return target
