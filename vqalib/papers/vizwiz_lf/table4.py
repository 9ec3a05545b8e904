"""VizWiz-LF Table 4 (§5), Table 18 (A.3.1): reference-based metrics. References ``s_r`` (crowd majority), ``l_r``
(expert); candidates ``l_c`` (whole answer), ``l_c_prime`` (its Answer sentences). ROUGE-L, METEOR 1.5 (PTB tokens);
BERTScore F1 unrescaled, no IDF (as the paper's 0.8-0.9); the paper leaves Lex-Overlap undefined."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from tqdm import tqdm

from vqalib.core import config
from vqalib.core.metrics.bertscore import Backbone, bertscore_backbone
from vqalib.core.metrics.cache import cached_scores
from vqalib.core.metrics.catalog import metric as metric_spec
from vqalib.core.metrics.lexical_overlap import DEFAULT_LEXICAL_OVERLAP, LEXICAL_OVERLAP_DEFINITIONS, lexical_overlap
from vqalib.core.inference import TWO_LEVELS, bootstrap_mean_cis, star_mark

SETTINGS: tuple[tuple[str, str], ...] = (("s_r", "l_c"), ("s_r", "l_c_prime"), ("l_r", "l_c"), ("l_r", "l_c_prime"))
METRIC_NAMES = {  # our metric id -> the paper's column name (Table 4)
    "lex_overlap": "Lex-Overlap (Unigram)",
    "rouge": "ROUGE",
    "meteor": "METEOR",
    "meteor_nltk": metric_spec("meteor_nltk").label,  # a variant: its name is the catalog's
    "meteor_nltk_wordnet": metric_spec("meteor_nltk_wordnet").label,
    "bertscore": "BERTScore",
    "lave": "GPT-4 (LAVE)",
}
NO_ANSWER_RULES = ("zero", "exclude", "whole_answer")


def nltk_meteor_variants() -> tuple[str, ...]:
    """Table 4's METEOR variants from NLTK, scored beside METEOR 1.5: ``meteor_nltk`` (no WordNet, offline), and
    ``meteor_nltk_wordnet`` too with ``VQALIB_METEOR_WORDNET=1`` (needs NLTK's WordNet data, online)."""
    return ("meteor_nltk",) + (("meteor_nltk_wordnet",) if config.get("VQALIB_METEOR_WORDNET") == "1" else ())


# --- evaluation pairs ----------------------------------------------------------------

def answer_sentences_text(sentences: pd.DataFrame) -> pd.Series:
    """l'_c: each answer's Answer sentences joined in order, by (source, question_id); none: absent (Table 4)."""
    has_answer = sentences["roles"].map(lambda roles: "Answer" in roles) & sentences["sentence"].notna()
    kept = sentences[has_answer].sort_values(["source", "question_id", "sentence_index"], kind="stable")
    joined: dict[tuple, list[str]] = {}  # a plain loop: a groupby with a Python join is 20x slower here
    for key, text in zip(zip(kept["source"], kept["question_id"]), kept["sentence"]):
        joined.setdefault(key, []).append(text.strip())
    index = pd.MultiIndex.from_tuples(list(joined), names=["source", "question_id"])
    return pd.Series([" ".join(parts) for parts in joined.values()], index=index, name="sentence")


def evaluation_pairs(answers: pd.DataFrame, sentences: pd.DataFrame, *, question_ids=None,
                     sources: list[str] | None = None, reference_source: str = "Expert") -> pd.DataFrame:
    """One row per (answer, setting): the reference and candidate texts of Table 4. ``candidate`` is NaN where an
    l'_c answer has no Answer sentence; no l_r rows for ``reference_source`` (whose answer is ``l_r``).

    Parameters
    ----------
    answers, sentences : DataFrame
        The VizWiz-LF answers and their labelled sentences.
    question_ids : collection, optional
        Questions kept (default: all).
    sources : list of str, optional
        Answer sources kept (default: all).
    reference_source : str
    """
    a = answers
    if question_ids is not None:
        a = a[a["question_id"].isin(set(question_ids))]
    if sources is not None:
        a = a[a["source"].isin(sources)]
    long_ref = answers[answers["source"] == reference_source].set_index("question_id")["answer"]
    answer_part = answer_sentences_text(sentences)
    rows = []
    for r in a.itertuples(index=False):
        prime = answer_part.get((r.source, r.question_id))
        candidates = {"l_c": r.answer, "l_c_prime": prime}
        references = {"s_r": r.crowd_majority, "l_r": long_ref.get(r.question_id)}
        for ref_kind, cand_kind in SETTINGS:
            if ref_kind == "l_r" and (r.source == reference_source or references["l_r"] is None):
                continue
            rows.append({"source": r.source, "question_id": r.question_id, "question_type": r.question_type,
                         "answerability": r.answerability, "question": r.question,
                         "reference_kind": ref_kind, "candidate_kind": cand_kind,
                         "reference": references[ref_kind], "candidate": candidates[cand_kind],
                         "crowd_answers": r.crowd_answers, "whole_answer": r.answer})
    return pd.DataFrame(rows)


def paper_sample(answers: pd.DataFrame, *, per_category: int = 30, seed: int = 0,
                 sources: tuple[str, ...] = ("GPT-4V", "Gemini", "Expert")) -> list[int]:
    """Sorted ids of a seeded sample balanced over the 4 question types (Table 4's 120 questions; the release does not
    say which 120 the paper scored), among questions all ``sources`` answered.

    Parameters
    ----------
    answers : DataFrame
    per_category : int
    seed : int
    sources : tuple of str
    """
    return sample_draws(answers, seeds=[seed], per_category=per_category, sources=sources)[0]


def sample_draws(answers: pd.DataFrame, *, seeds, per_category: int = 30,
                 sources: tuple[str, ...] = ("GPT-4V", "Gemini", "Expert")) -> list[list[int]]:
    """:func:`paper_sample` for each of ``seeds`` (Table 4's seed sweep)."""
    have = answers[answers["source"].isin(sources)].groupby("question_id")["source"].nunique()
    complete = set(have[have == len(sources)].index)
    questions = (answers[answers["question_id"].isin(complete)]
                 .drop_duplicates("question_id").sort_values("question_id"))
    groups = [group["question_id"].to_numpy() for _, group in questions.groupby("question_type", sort=True)]
    draws = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        chosen = []
        for ids in groups:
            chosen += rng.choice(ids, size=min(per_category, len(ids)), replace=False).tolist()
        draws.append(sorted(int(i) for i in chosen))
    return draws


def _apply_no_answer_rule(pairs: pd.DataFrame, *, no_answer: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pairs with a ``status`` column and the rows that get scored, under a no-answer rule."""
    if no_answer not in NO_ANSWER_RULES:
        raise ValueError(f"no_answer must be one of {NO_ANSWER_RULES}, not {no_answer!r}")
    frame = pairs.copy()
    missing = frame["candidate"].isna()
    frame["status"] = np.where(missing, f"no Answer sentence: {no_answer}", "scored")
    if no_answer == "whole_answer":
        frame.loc[missing, "candidate"] = frame.loc[missing, "whole_answer"]
    return frame, frame[frame["candidate"].notna()]


def score_pairs(pairs: pd.DataFrame, *, metrics: tuple[str, ...] = ("rouge", "meteor", "bertscore"),
                backbone: Backbone | None = None, no_answer: str = "zero",
                lexical_definition: str = DEFAULT_LEXICAL_OVERLAP, cache_dir: Path | None = None,
                progress: bool = True) -> pd.DataFrame:
    """Score every evaluation pair with each metric (Table 4 inputs), long format. An l'_c candidate without Answer
    sentence scores 0 by default; Lex-Overlap, a property of the long answer, is scored once on its s_r + l_c row.

    Parameters
    ----------
    pairs : DataFrame
        :func:`evaluation_pairs` output.
    metrics : tuple of str
        Metric ids: ``lex_overlap``, ``rouge``, ``meteor``, ``meteor_nltk``, ``meteor_nltk_wordnet``, ``bertscore``.
    backbone : Backbone, optional
        BERTScore backbone (default :func:`bertscore_backbone`).
    no_answer : {"zero", "exclude", "whole_answer"}
    lexical_definition : str
        Lex-Overlap definition (:data:`LEXICAL_OVERLAP_DEFINITIONS`).
    cache_dir : Path, optional
    progress : bool
    """
    frame, scorable = _apply_no_answer_rule(pairs, no_answer=no_answer)
    backbone = backbone or (bertscore_backbone() if any(metric_spec(m).uses_backbone for m in metrics) else None)
    out = []
    for metric in tqdm(metrics, desc="metrics", unit="metric", disable=not progress):
        spec = metric_spec(metric)
        if spec.texts is None:  # a property of the long answer (Lex-Overlap): once per answer
            rows = frame[(frame["reference_kind"] == "s_r") & (frame["candidate_kind"] == "l_c")]
            scores = pd.Series(spec.score(rows, definition=lexical_definition), index=rows.index)
            part = frame.loc[rows.index].assign(reference_kind="", candidate_kind="")
        else:
            refs = tuple(scorable["reference"].astype(str))
            cands = tuple(scorable["candidate"].astype(str))
            values = cached_scores(metric, refs, cands, backbone if spec.uses_backbone else None, cache_dir=cache_dir)
            scores = pd.Series(values, index=scorable.index)
            part = frame
        part = part.assign(metric=metric, score=scores.reindex(part.index),
                           backbone=backbone.label if spec.uses_backbone and backbone else "")
        if spec.texts is not None and no_answer == "zero":
            part.loc[part["candidate"].isna(), "score"] = 0.0
        out.append(part)
    return pd.concat(out, ignore_index=True).drop(columns=["crowd_answers", "whole_answer"])


# --- summaries -----------------------------------------------------------------------

def summarize(scores: pd.DataFrame, *, by: tuple[str, ...] = ("source", "metric", "reference_kind", "candidate_kind"),
              n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Mean per group with a seeded percentile bootstrap CI over answers (Table 4, full set); missing scores not in n.

    Parameters
    ----------
    scores : DataFrame
        :func:`score_pairs` output.
    by : tuple of str
    n_resamples : int
    confidence : float
    seed : int
    """
    rows, varying = [], []
    for key, group in scores.groupby(list(by), sort=False):
        values = group["score"].dropna().to_numpy(dtype=float)
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row.update(n=len(values), mean=float(values.mean()) if len(values) else float("nan"))
        row.update(ci_low=row["mean"], ci_high=row["mean"])
        if len(values) > 1 and np.ptp(values) > 0:
            varying.append((len(rows), values))
        rows.append(row)
    intervals = bootstrap_mean_cis([v for _, v in varying], n_resamples=n_resamples, confidence=confidence, seed=seed)
    for (i, _), (low, high) in zip(varying, intervals):
        rows[i].update(ci_low=float(low), ci_high=float(high))
    return pd.DataFrame(rows)


def significance_stars(p: float) -> str:
    """Table 18's marks: ** for p < 0.01, * for p < 0.05."""
    return star_mark(p, levels=TWO_LEVELS)


def human_correlation(scores: pd.DataFrame, human: pd.DataFrame, *, rating: str = "correctness") -> pd.DataFrame:
    """Pearson r (with p and stars) between each metric setting and human correctness (Table 18); needs 3 rated scores.

    Parameters
    ----------
    scores : DataFrame
        :func:`score_pairs` output.
    human : DataFrame
        One rating per answer: ``source``, ``question_id`` and ``rating``.
    rating : str
    """
    merged = scores.merge(human[["source", "question_id", rating]], on=["source", "question_id"], how="inner")
    rows = []
    for (metric, ref, cand), group in merged.groupby(["metric", "reference_kind", "candidate_kind"], sort=False):
        g = group.dropna(subset=["score", rating])
        if len(g) < 3:
            continue
        result = scistats.pearsonr(g["score"], g[rating])
        rows.append({"metric": metric, "reference_kind": ref, "candidate_kind": cand, "n": len(g),
                     "r": float(result.statistic), "p": float(result.pvalue),
                     "stars": significance_stars(float(result.pvalue))})
    return pd.DataFrame(rows)


def score_with_judge(pairs: pd.DataFrame, *, judge, no_answer: str = "zero", progress: bool = True) -> pd.DataFrame:
    """LAVE scores of every evaluation pair via a judge (Table 4); an unreadable reply: missing, ``status`` says why.

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`evaluation_pairs` output, or pairs of that shape.
    judge : CachedJudge
        A configured judge (:mod:`vqalib.core.judge`).
    no_answer : {"zero", "exclude", "whole_answer"}, default "zero"
    progress : bool, default True
    """
    from vqalib.core.judge.batch import lave

    frame, scorable = _apply_no_answer_rule(pairs, no_answer=no_answer)
    judged = lave(scorable[["question", "reference", "candidate"]].reset_index(drop=True), judge=judge,
                  progress=progress)
    judged.index = scorable.index
    frame["score"] = judged["score"].reindex(frame.index)
    # each reply's own status (unparseable with its reason, timeout, http <code>, ...), counted per item
    failed = judged["judge_status"].ne("parsed").to_numpy() if "judge_status" in judged else \
        judged["status"].eq("unparseable").to_numpy()
    frame.loc[scorable.index[failed], "status"] = ("judge: " + judged.loc[failed, "judge_status"]).to_numpy() \
        if "judge_status" in judged else "unparseable reply"
    if no_answer == "zero":
        frame.loc[frame["candidate"].isna(), "score"] = 0.0
    frame["metric"] = "lave"
    frame["backbone"] = f"{judge.backend.name}:{judge.backend.model}"
    return frame.drop(columns=["crowd_answers", "whole_answer"])


def table4_rows(summary: pd.DataFrame, *, implementation: dict[str, str]) -> pd.DataFrame:
    """Summaries keyed like the paper's Table 4 (source, metric, reference, candidate).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`summarize` output.
    implementation : dict of str to str
        Metric id -> text of the ``implementation`` column.
    """
    out = summary.rename(columns={"reference_kind": "reference", "candidate_kind": "candidate", "mean": "value"})
    out["implementation"] = out["metric"].map(implementation)
    out["metric"] = out["metric"].map(METRIC_NAMES)
    return out


def metric_cells(*, sources: list[str], metric: str, reference_source: str = "Expert") -> pd.DataFrame:
    """The Table 4 cells of one metric: every source x setting but the reference source against itself."""
    return pd.DataFrame([{"source": s, "metric": METRIC_NAMES[metric], "reference": r, "candidate": c}
                         for s in sources for r, c in SETTINGS if not (r == "l_r" and s == reference_source)],
                        columns=["source", "metric", "reference", "candidate"])


def paper_in_ci(frame: pd.DataFrame) -> pd.Series:
    """Whether the paper's value lies inside [ci_low, ci_high] (Table 4); missing where ``paper`` or ``ci_low`` is.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows with ``paper``, ``ci_low`` and ``ci_high``.
    """
    inside = (frame["paper"] >= frame["ci_low"] - 1e-12) & (frame["paper"] <= frame["ci_high"] + 1e-12)
    return inside.astype("boolean").where(frame["paper"].notna() & frame["ci_low"].notna())


def compare_lexical_definitions(pairs: pd.DataFrame, paper: pd.Series) -> pd.DataFrame:
    """Each plausible Lex-Overlap definition's mean per source beside the paper's column, with ``mae`` (Table 4).

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`evaluation_pairs` output.
    paper : pandas.Series
        Source -> reported value.
    """
    rows = pairs[(pairs["reference_kind"] == "s_r") & (pairs["candidate_kind"] == "l_c")]
    rows = rows[rows["source"].isin(paper.index)]
    out = []
    for name, text in LEXICAL_OVERLAP_DEFINITIONS.items():
        means = rows.assign(v=lexical_overlap(rows, definition=name)).groupby("source", sort=False)["v"].mean()
        out.append({"definition": name, "description": text, **means.to_dict(),
                    "mae": float((means.reindex(paper.index) - paper).abs().mean())})
    table = pd.DataFrame(out)
    table["closest"] = table["mae"] == table["mae"].min()
    table["used_in_table4"] = table["definition"] == DEFAULT_LEXICAL_OVERLAP
    return table
