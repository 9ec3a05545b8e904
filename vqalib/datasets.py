"""Verified upstream data and the VizWiz-LF loader (VizWiz-LF §3–§4, CommVQA §3): a facade.

The code lives in
:mod:`vqalib.core.io` (project paths, :func:`write_atomic`, strict :func:`read_json` /
:func:`read_csv_text`, :class:`DataFormatError`),
:mod:`vqalib.core.data_registry` (:data:`REGISTRY` of upstream files at pinned commits with
their SHA-256, :func:`verified_path`),
:mod:`vqalib.core.fetch` (:func:`fetch`, :class:`FetchError`, the command line) and
:mod:`vqalib.papers.vizwiz_lf.loading` (:func:`load_vizwiz_lf`).
This module re-exports their names so ``from vqalib.datasets import ...`` keeps working,
and ``python -m vqalib.datasets fetch`` (``make data``) / ``verify`` runs :func:`main`.

Configuration (README, "Data"): ``VQALIB_DATA_DIR`` (default ``<project>/data/raw``)
and ``VQALIB_DATA_MIRROR`` (a folder laid out like ``data/raw``; when set, files are
copied from it instead of downloaded).
"""

from __future__ import annotations

import sys

from vqalib.core.data_registry import (COMMVQA_COMMIT, COMMVQA_REPO, LAVE_COMMIT, LAVE_REPO, REGISTRY,
                                       VIZWIZ_LF_COMMIT, VIZWIZ_LF_REPO, DataFile, DataIntegrityError,
                                       registry_frame, spec_for, verified_path, verify_file)
from vqalib.core.fetch import PART_SUFFIX, FetchError, fcntl, fetch, main, remove_stale_parts
from vqalib.core.io import (DATA_DIR_ENV, JSON_TYPES, MIRROR_ENV, DataFormatError, cache_root, default_data_dir,
                            default_mirror, json_type, json_where, project_root, read_csv_text, read_json,
                            require_fields, sha256_of, undecoded_csv_cells, write_atomic)
from vqalib.papers.vizwiz_lf.loading import (NON_ANSWER_MAJORITIES, VIZWIZ_LF_FIELDS, VizWizLF, load_vizwiz_lf,
                                             merge_fragments, parse_vizwiz_lf, vizwiz_lf_question_ids)

__all__ = [
    # vqalib.core.io
    "DATA_DIR_ENV", "MIRROR_ENV", "DataFormatError", "project_root", "default_data_dir", "cache_root",
    "default_mirror", "sha256_of", "write_atomic", "JSON_TYPES", "json_type", "json_where", "read_json",
    "read_csv_text", "undecoded_csv_cells", "require_fields",
    # vqalib.core.data_registry
    "VIZWIZ_LF_REPO", "VIZWIZ_LF_COMMIT", "COMMVQA_REPO", "COMMVQA_COMMIT", "LAVE_REPO", "LAVE_COMMIT",
    "DataIntegrityError", "DataFile", "REGISTRY", "registry_frame", "spec_for", "verify_file", "verified_path",
    # vqalib.core.fetch (``fcntl``: None where file locks are unavailable; tests skip on it)
    "FetchError", "PART_SUFFIX", "remove_stale_parts", "fetch", "main", "fcntl",
    # vqalib.papers.vizwiz_lf.loading
    "VIZWIZ_LF_FIELDS", "NON_ANSWER_MAJORITIES", "VizWizLF", "merge_fragments", "parse_vizwiz_lf",
    "vizwiz_lf_question_ids", "load_vizwiz_lf",
]


if __name__ == "__main__":
    sys.exit(main())
