"""CommVQA names every module shares (CommVQA §3, §4, Table 1): the six contexts and their
spellings in the release, the benchmarked models and conditions, Table 1's metrics and
protocols, the result files' columns, and the two populations every
analysis runs on (the benchmark subset and the full release).
"""

from __future__ import annotations

import pandas as pd

CONTEXTS: tuple[str, ...] = ("shopping", "travel", "science magazines", "news", "health", "social media")
CONTEXT_LABELS = {"shopping": "Shopping", "travel": "Travel", "science magazines": "Science Magazines",
                  "news": "News", "health": "Health", "social media": "Social Media"}
# spellings met in the release -> canonical (the annotations' spelling)
CONTEXT_ALIASES = {"science_journals": "science magazines", "science journals": "science magazines",
                   "science_magazines": "science magazines", "social_media": "social media"}
# released result files -> Table 1 row names: all four benchmarked models (the first two first, so the
# bootstrap and subset draws of IDEFICS and BLIP-2 are those of the two-model release they were made with)
MODELS = {"idefics": "IDEFICS", "blip2": "BLIP-2", "llava": "LLaVA", "mplug_owl": "mPLUG-Owl"}
PAPER_ORDER = ("IDEFICS", "mPLUG-Owl", "LLaVA", "BLIP-2")  # Table 1's row order
CONDITIONS = ("baseline", "contextual")
METRICS: tuple[str, ...] = ("BLEU-1", "BLEU-4", "METEOR", "ROUGE", "CIDEr")  # Table 1 columns we score
PROTOCOLS = ("authors", "corrected")
SUBSETS = ("benchmark", "release")
RESULT_COLUMNS = ("image", "context", "question", "answers", "generated_answer")
# pandas' default ``na_values`` of read_csv (documented list): the authors read the result CSVs
# with pandas' defaults, so a generated answer spelled like one of these became a missing value
PANDAS_DEFAULT_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                               "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})


def result_key(model: str, condition: str) -> str:
    """Registry key of a released result file (CommVQA Table 1 input).

    Parameters
    ----------
    model : str
        A key of :data:`MODELS` (``idefics``, ``blip2``, ``llava``, ``mplug_owl``).
    condition : str
        One of :data:`CONDITIONS` (``baseline``, ``contextual``).

    Returns
    -------
    str
        ``commvqa/results/{model}_{condition}_results.csv``, a key of :mod:`vqalib.core.data_registry`.
    """
    return f"commvqa/results/{model}_{condition}_results.csv"


def canonical_context(raw: str) -> tuple[str, str]:
    """(canonical context, status) with status ``exact``, ``alias`` or ``unknown`` (CommVQA §3).

    Parameters
    ----------
    raw : str
        A context as spelled in the release; compared after stripping and lower-casing.

    Returns
    -------
    tuple of str
        The name in :data:`CONTEXTS` with ``exact`` (spelled so already) or ``alias`` (another case or
        white space, or a spelling of :data:`CONTEXT_ALIASES`); else ``raw`` unchanged with ``unknown``.
    """
    name = raw.strip().lower()
    if name in CONTEXTS:
        return name, "exact" if name == raw else "alias"
    if name in CONTEXT_ALIASES:
        return CONTEXT_ALIASES[name], "alias"
    return raw, "unknown"


def subsets_of(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The two populations every analysis is run on: the 1,215-question benchmark subset
    (questions that appear in the result files) and the full release (CommVQA §3, §4).

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows with a boolean ``in_benchmark`` column (e.g. ``CommVQA.annotations`` or ``CommVQA.answers``).

    Returns
    -------
    list of (str, pandas.DataFrame)
        ``[("benchmark", rows in the benchmark subset), ("release", frame)]``.
    """
    return [("benchmark", frame[frame["in_benchmark"]]), ("release", frame)]
