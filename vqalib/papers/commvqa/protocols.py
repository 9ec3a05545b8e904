"""The two Table 1 protocols of CommVQA (§5, Table 1), how they build references and candidates, and their effects.

``authors``: as the authors' ``models/eval_metrics.py``: answers cell split on commas, missing answers empty,
mean over three random 80% subsets. ``corrected``: the cell parsed as the Python list it is, answers as written,
all rows, percentile-bootstrap 95% CIs over questions.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd

from vqalib.papers.commvqa.names import PROTOCOLS

def authors_references(cell: str) -> list[str]:
    """References as the authors' script builds them from an ``answers`` cell (Table 1): comma-split fragments, three
    kept if there are exactly three, else the first two; one fragment is returned as is (their script fails on it)."""
    pieces = [p.replace("'", "").replace('"', "").lower().strip()
              for p in cell.replace("]", "").replace("[", "").split(",")]
    return pieces if len(pieces) == 3 else pieces[:2]


def authors_candidate(answer: object, *, pandas_na: bool = False) -> str:
    """A generated answer as the authors' script scores it (Table 1): missing (or ``pandas_na``) -> '', else
    lower-cased and stripped."""
    if pandas_na or answer is None or (isinstance(answer, float) and math.isnan(answer)) or answer is pd.NA:
        return ""
    return str(answer).lower().strip()


def authors_subsets(n: int, *, seeds: tuple[int, ...] = (0, 1, 2), fraction: float = 0.8) -> list[list[int]]:
    """Row positions of the authors' three 80% subsets (Table 1): ``Random(i).sample(range(n), k)`` selects the rows
    their ``random.seed(i); random.sample(...)`` does."""
    k = int(fraction * n)
    return [random.Random(s).sample(range(n), k) for s in seeds]


def protocol_inputs(results: pd.DataFrame, *, protocol: str) -> pd.DataFrame:
    """References and candidate of every result row under ``protocol``, before tokenization (Table 1)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
    frame = results[["model", "condition", "file", "row", "question_id"]].copy()
    if protocol == "authors":
        frame["references"] = [authors_references(c) for c in results["answers_raw"]]
        frame["candidate"] = [authors_candidate(a, pandas_na=na)
                              for a, na in zip(results["generated_answer"], results["pandas_na"])]
    else:
        frame["references"] = [list(r) for r in results["references"]]
        frame["candidate"] = results["generated_answer"].fillna("").astype(str).tolist()
    return frame


def tokenize_inputs(inputs: pd.DataFrame) -> pd.DataFrame:
    """``inputs`` with ``ref_tokens`` and ``cand_tokens``, PTB-tokenized in one pass (CommVQA Table 1)."""
    from vqalib.core.metrics.tokenize import ptb_tokenize

    flat = [t for refs in inputs["references"] for t in refs] + list(inputs["candidate"])
    tokens = ptb_tokenize(flat)
    refs, pos = [], 0
    for r in inputs["references"]:
        refs.append(tokens[pos:pos + len(r)])
        pos += len(r)
    return inputs.assign(ref_tokens=refs, cand_tokens=tokens[pos:])


def reference_parsing_effects(results: pd.DataFrame) -> pd.DataFrame:
    """How the authors' comma-split references differ from the parsed lists, over one file's rows (Table 1).

    Parameters
    ----------
    results : pandas.DataFrame
        ``CommVQA.results``.
    """
    first = results[results["file"] == results["file"].iloc[0]]
    checks = {
        "rows": lambda r, a: True,
        "an answer contains a comma (split into fragments)": lambda r, a: any("," in x for x in r),
        "references differ from the parsed list (after the same lower-casing)":
            lambda r, a: a != [x.replace("'", "").replace('"', "").lower().strip() for x in r],
        "fewer references than answers (only the first two fragments kept)":
            lambda r, a: len(a) < len(r),
        "a reference is a fragment, not a whole answer":
            lambda r, a: any(x not in [y.replace("'", "").replace('"', "").lower().strip() for y in r] for x in a),
        "the third answer is dropped": lambda r, a: len(r) == 3 and len(a) == 2,
        "an apostrophe is removed (it's -> its)": lambda r, a: any("'" in x for x in r),
        "a reference holds a Python escape (e.g. \\n, \\xa0) as text": lambda r, a: any("\\" in x for x in a),
    }
    rows = []
    for name, test in checks.items():
        hits = [(r, raw) for r, raw in zip(first["references"], first["answers_raw"])
                if test(list(r), authors_references(raw))]
        example = ""
        if hits and name != "rows":
            r, raw = hits[0]
            example = f"{list(r)} -> {authors_references(raw)}"
        rows.append({"difference": name, "rows": len(hits), "share": len(hits) / max(len(first), 1),
                     "example": example[:300]})
    return pd.DataFrame(rows)


def bleu_variants(results: pd.DataFrame, *, model: str, condition: str, subset_seeds: tuple[int, ...] = (0, 1, 2),
                  fraction: float = 0.8) -> pd.DataFrame:
    """BLEU-1 and BLEU-4 of one result file under variants of the authors' protocol, cached (Table 1).

    Parameters
    ----------
    results : pandas.DataFrame
        ``CommVQA.results``.
    model : str
        Table 1 model name, e.g. ``IDEFICS``.
    condition : str
        ``baseline`` or ``contextual``.
    subset_seeds : tuple of int, default (0, 1, 2)
        Seeds of the authors' subsets.
    fraction : float, default 0.8
        Share of rows per subset.
    """
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    part = results[(results["model"] == model) & (results["condition"] == condition)]
    key = content_key(code=("vqalib",),
                      packages=("pycocoevalcap",), part=part.reset_index(drop=True), model=model, condition=condition,
                      subset_seeds=list(subset_seeds), fraction=fraction)
    return cached_frame(cache_root("commvqa", "bleu-variants") / f"{key[:32]}.parquet", kind="BLEU variants cache",
                        compute=lambda: _bleu_variants(part, model=model, condition=condition,
                                                       subset_seeds=subset_seeds, fraction=fraction))


def _bleu_variants(part: pd.DataFrame, *, model: str, condition: str, subset_seeds: tuple[int, ...],
                   fraction: float) -> pd.DataFrame:
    """:func:`bleu_variants` of one file's rows, without the cache."""
    from pycocoevalcap.bleu.bleu import Bleu

    authors = tokenize_inputs(protocol_inputs(part, protocol="authors"))
    corrected = tokenize_inputs(protocol_inputs(part, protocol="corrected"))
    nan_text = tokenize_inputs(protocol_inputs(part, protocol="authors").assign(
        candidate=[c if c else "nan" for c in protocol_inputs(part, protocol="authors")["candidate"]]))
    subsets = authors_subsets(len(part), seeds=subset_seeds, fraction=fraction)

    def bleu(frame: pd.DataFrame, rows: list[int] | None = None, option: str = "closest",
             sentence_mean: bool = False) -> tuple[float, float]:
        rows = list(range(len(frame))) if rows is None else rows
        gts = {i: list(frame["ref_tokens"].iloc[r]) for i, r in enumerate(rows)}
        res = {i: [frame["cand_tokens"].iloc[r]] for i, r in enumerate(rows)}
        scorer = Bleu(4)
        if option == "closest" and not sentence_mean:
            s, _ = scorer.compute_score(gts, res, verbose=0)
            return s[0], s[3]
        from pycocoevalcap.bleu.bleu_scorer import BleuScorer

        bs = BleuScorer(n=4)
        for i in gts:
            bs += (res[i][0], gts[i])
        s, per = bs.compute_score(option=option, verbose=0)
        return (float(np.mean(per[0])), float(np.mean(per[3]))) if sentence_mean else (s[0], s[3])

    def mean_over_subsets(frame: pd.DataFrame, **kw) -> tuple[float, float]:
        vals = [bleu(frame, rows, **kw) for rows in subsets]
        return float(np.mean([v[0] for v in vals])), float(np.mean([v[1] for v in vals]))

    nonempty = [i for i, c in enumerate(authors["candidate"]) if c]
    rows = [("authors' protocol (mean of 3 subsets)", mean_over_subsets(authors))]
    rows += [(f"authors' subset {k} (seed {s})", bleu(authors, r))
             for k, (s, r) in enumerate(zip(subset_seeds, subsets))]
    rows += [("all rows, authors' references", bleu(authors)),
             ("3 subsets, reference length 'shortest'", mean_over_subsets(authors, option="shortest")),
             ("3 subsets, reference length 'average'", mean_over_subsets(authors, option="average")),
             ("3 subsets, mean of sentence BLEU", mean_over_subsets(authors, sentence_mean=True)),
             ("3 subsets, missing answers as the text 'nan'", mean_over_subsets(nan_text)),
             ("all rows without missing answers", bleu(authors, nonempty)),
             ("3 subsets, references parsed as lists", mean_over_subsets(corrected)),
             ("all rows, references parsed as lists (corrected)", bleu(corrected))]
    return pd.DataFrame([{"model": model, "condition": condition, "variant": name, "BLEU-1": b1, "BLEU-4": b4}
                         for name, (b1, b4) in rows])
