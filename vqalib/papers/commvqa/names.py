"""CommVQA names every module shares (CommVQA §3, §4, Table 1): contexts, models, conditions, metrics, protocols,
result columns and the two populations (benchmark subset, full release)."""

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
    """Registry key of a released result file of ``model`` and ``condition`` (CommVQA Table 1 input)."""
    return f"commvqa/results/{model}_{condition}_results.csv"


def canonical_context(raw: str) -> tuple[str, str]:
    """(canonical context, status ``exact``, ``alias`` or ``unknown``) of a context as the release spells it (§3)."""
    name = raw.strip().lower()
    if name in CONTEXTS:
        return name, "exact" if name == raw else "alias"
    if name in CONTEXT_ALIASES:
        return CONTEXT_ALIASES[name], "alias"
    return raw, "unknown"


def subsets_of(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The two populations of every analysis: the 1,215-question benchmark subset and the full release (CommVQA §3)."""
    return [("benchmark", frame[frame["in_benchmark"]]), ("release", frame)]
