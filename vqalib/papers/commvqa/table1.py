"""CommVQA Table 1 (§5): the five metrics of every result file under the two protocols (pycocoevalcap, the
authors' 80% subsets, percentile bootstrap), the step-by-step protocol comparison and the paired context effect.

Per protocol, one PTB tokenizer pass and one METEOR JVM serve every file, subset and resample; scores are cached.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from tqdm import tqdm

from vqalib.core.io import cache_root
from vqalib.core import config
from vqalib.core.metrics.meteor import MeteorSession, meteor_additive
from vqalib.papers.commvqa.names import METRICS
from vqalib.papers.commvqa.protocols import authors_subsets, protocol_inputs, tokenize_inputs
from vqalib.papers.commvqa.table1_cache import (ProtocolScores, load_protocol_scores, protocol_cache_key,
                                                save_protocol_scores)

def _bleu_statistics(candidates: list[str], references: list[list[str]]) -> np.ndarray:
    """Per-question BLEU statistics from pycocoevalcap's BleuScorer (the counts its corpus BLEU sums)."""
    from pycocoevalcap.bleu.bleu_scorer import BleuScorer

    scorer = BleuScorer(n=4)
    for cand, refs in zip(candidates, references):
        scorer += (cand, refs)
    rows = [[c["testlen"], scorer._single_reflen(c["reflen"], "closest", c["testlen"]), *c["guess"], *c["correct"]]
            for c in scorer.ctest]
    return np.array(rows, dtype=float).reshape(-1, 10)


def _bleu_from_pooled(pooled: np.ndarray) -> np.ndarray:
    """Corpus BLEU-1..4 of each row of summed statistics, computed by BleuScorer itself."""
    from pycocoevalcap.bleu.bleu_scorer import BleuScorer

    out = []
    for row in np.atleast_2d(pooled):
        scorer = BleuScorer(n=4)
        # one pseudo-segment holding the sums: BleuScorer's corpus formula sums exactly these
        scorer.crefs = [([row[1]], {})]
        scorer.ctest = [{"testlen": row[0], "reflen": [row[1]], "guess": list(row[2:6]), "correct": list(row[6:10])}]
        out.append(scorer.compute_score(option="closest", verbose=0)[0])
    return np.array(out, dtype=float)


class FileStatistics:
    """Per-question statistics of one result file under one protocol, computed once (Table 1).

    BLEU and METEOR keep per-question sums, ROUGE-L segment scores; CIDEr-D is recomputed per set of rows.
    """

    def __init__(self, refs: list[list[str]], cands: list[str], *, meteor: MeteorSession) -> None:
        from pycocoevalcap.rouge.rouge import Rouge

        self.refs, self.cands, self.meteor = refs, cands, meteor
        self.meteor_text = meteor.statistics(cands, refs)
        self.meteor_stats = meteor_additive(np.array([[float(x) for x in s.split()] for s in self.meteor_text]))
        self.bleu_stats = _bleu_statistics(cands, refs)
        _, rouge = Rouge().compute_score({i: list(r) for i, r in enumerate(refs)},
                                         {i: [c] for i, c in enumerate(cands)})
        self.rouge = np.asarray(rouge, dtype=float)
        self._cooked = None  # each row's CIDEr n-gram counts, made at the first cider()

    def cider(self, rows: list[int]) -> tuple[float, np.ndarray]:
        """CIDEr-D of the rows (corpus score, segment scores), with the document frequencies of those rows: what
        ``Cider().compute_score`` does, each row's n-grams counted once per file instead of once per set of rows."""
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.cider.cider_scorer import CiderScorer

        settings = Cider()
        if self._cooked is None:
            self._cooked = [CiderScorer(cand, list(refs), n=settings._n, sigma=settings._sigma)
                            for cand, refs in zip(self.cands, self.refs)]
        scorer = CiderScorer(n=settings._n, sigma=settings._sigma)
        for r in rows:
            scorer += self._cooked[r]
        score, segments = scorer.compute_score()
        return float(score), np.asarray(segments, dtype=float)

    def scores(self, rows: list[int]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        """The five Table 1 scores of the rows, and the segment scores of METEOR, ROUGE and CIDEr."""
        bleu = _bleu_from_pooled(self.bleu_stats[rows].sum(axis=0))[0]
        meteor, meteor_seg = self.meteor.evaluate([self.meteor_text[i] for i in rows])
        cider, cider_seg = self.cider(rows)
        values = {"BLEU-1": float(bleu[0]), "BLEU-4": float(bleu[3]), "METEOR": meteor,
                  "ROUGE": float(np.mean(self.rouge[rows])), "CIDEr": cider}
        return values, {"METEOR": meteor_seg, "ROUGE": self.rouge[rows], "CIDEr": cider_seg}


def resample_weights(n: int, *, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap resamples of ``n`` questions as multiplicities, shape (n_resamples, n) (Table 1's CIs)."""
    idx = rng.integers(0, n, size=(n_resamples, n))
    weights = np.zeros((n_resamples, n))
    np.add.at(weights, (np.repeat(np.arange(n_resamples), n), idx.ravel()), 1)
    return weights


def score_protocol(results: pd.DataFrame, *, protocol: str, n_resamples: int = 1000, seed: int = 0,
                   subset_seeds: tuple[int, ...] = (0, 1, 2), fraction: float = 0.8,
                   meteor: MeteorSession | None = None, progress: bool = True) -> ProtocolScores:
    """The five Table 1 metrics of every result file under one protocol, with the authors' subsets (Table 1).

    ``corrected`` adds a percentile bootstrap CI over questions, the same resamples for every file (paired);
    CIDEr-D's document frequencies stay those of all rows, as a resample's repeats would count references twice.

    Parameters
    ----------
    results : pandas.DataFrame
        ``CommVQA.results`` or rows of :func:`~vqalib.papers.commvqa.table1_runs.run_results`.
    protocol : str
        ``authors`` or ``corrected``.
    n_resamples : int
        Bootstrap resamples of the ``corrected`` protocol (0: no CIs).
    seed : int
        Seed of the bootstrap generator.
    subset_seeds : tuple of int
        Seeds of the authors' random subsets.
    fraction : float
        Share of rows in each subset.
    meteor : MeteorSession, optional
        An open METEOR process to reuse; default one for this call.
    progress : bool

    Returns
    -------
    ProtocolScores
        Cached by content under ``<cache>/commvqa/table1/``.
    """
    raw = protocol_inputs(results, protocol=protocol)
    key = protocol_cache_key(raw, protocol=protocol, n_resamples=n_resamples, seed=seed, subset_seeds=subset_seeds,
                             fraction=fraction)
    cached = load_protocol_scores(cache_root("commvqa", "table1", key), protocol=protocol)
    if cached is not None:  # the same inputs and settings were scored before: no tokenizer, METEOR or bootstrap
        return cached
    config.model_call(f"CommVQA Table 1 scoring ({protocol} protocol)")
    inputs = tokenize_inputs(raw)
    rng = np.random.default_rng(seed)
    score_rows, subset_rows, per_q, resamples = [], [], [], {}
    index_cache: dict[int, np.ndarray] = {}  # one set of resamples per number of rows: paired across files
    groups = list(inputs.groupby(["model", "condition"], sort=False))
    own = meteor is None
    meteor = meteor or MeteorSession()
    try:
        for (model, condition), part in tqdm(groups, desc=f"Table 1 ({protocol})", unit="file", disable=not progress):
            n = len(part)
            stats = FileStatistics(list(part["ref_tokens"]), list(part["cand_tokens"]), meteor=meteor)
            # the authors' subsets (their protocol; also scored with the other protocol's references)
            for k, (s, rows) in enumerate(zip(subset_seeds, authors_subsets(n, seeds=subset_seeds, fraction=fraction))):
                values, _ = stats.scores(rows)
                subset_rows += [{"protocol": protocol, "model": model, "condition": condition, "subset": k,
                                 "seed": s, "n_rows": len(rows), "metric": m, "value": values[m]} for m in METRICS]
            full, segments = stats.scores(list(range(n)))
            per_q += [part[["model", "condition", "row", "question_id"]].assign(metric=m, score=segments[m])
                      for m in segments]
            if protocol == "corrected" and n_resamples > 0:
                if n not in index_cache:
                    index_cache[n] = resample_weights(n, n_resamples=n_resamples, rng=rng)
                weights = index_cache[n]  # (B, n): how often each question is drawn in each resample
                boot_bleu = _bleu_from_pooled(weights @ stats.bleu_stats)
                boot = {"BLEU-1": boot_bleu[:, 0], "BLEU-4": boot_bleu[:, 3],
                        "METEOR": meteor.evaluate_pooled(weights @ stats.meteor_stats),
                        "ROUGE": weights @ segments["ROUGE"] / n, "CIDEr": weights @ segments["CIDEr"] / n}
                for m in METRICS:
                    resamples[(model, condition, m)] = boot[m]
            for m in METRICS:
                if protocol == "authors":
                    vals = [r["value"] for r in subset_rows
                            if (r["model"], r["condition"], r["metric"]) == (model, condition, m)]
                    row = {"value": float(np.mean(vals)), "ci_low": math.nan, "ci_high": math.nan,
                           "subset_min": min(vals), "subset_max": max(vals)}
                else:
                    b = resamples.get((model, condition, m))
                    lo, hi = (np.percentile(b, [2.5, 97.5]) if b is not None else (math.nan, math.nan))
                    row = {"value": float(full[m]), "ci_low": float(lo), "ci_high": float(hi),
                           "subset_min": math.nan, "subset_max": math.nan}
                score_rows.append({"protocol": protocol, "model": model, "condition": condition, "metric": m,
                                   **row, "n_rows": n,
                                   "n_empty_candidates": int((part["candidate"].str.strip() == "").sum())})
    finally:
        if own:
            meteor.close()
    scored = ProtocolScores(protocol=protocol, scores=pd.DataFrame(score_rows), subsets=pd.DataFrame(subset_rows),
                            per_question=pd.concat(per_q, ignore_index=True), resamples=resamples)
    save_protocol_scores(cache_root("commvqa", "table1", key), scored)
    return scored


def protocol_steps(authors: ProtocolScores, corrected: ProtocolScores, *,
                   paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """What changes between the protocols, one step at a time, per model, condition and metric (Table 1).

    Parameters
    ----------
    authors, corrected : ProtocolScores
        :func:`score_protocol` of the two protocols.
    paper : pandas.DataFrame, optional
        The paper's Table 1; its ``paper`` column is added (left join).
    """
    a = authors.scores.set_index(["model", "condition", "metric"])["value"].rename("authors")
    same_subsets = (corrected.subsets.groupby(["model", "condition", "metric"], sort=False)["value"].mean()
                    .rename("parsed_references_same_subsets"))
    c = corrected.scores.set_index(["model", "condition", "metric"])[["value", "ci_low", "ci_high"]].rename(
        columns={"value": "corrected_all_rows"})
    out = pd.concat([a, same_subsets, c], axis=1).reset_index()
    out["change_parsing"] = out["parsed_references_same_subsets"] - out["authors"]
    out["change_all_rows"] = out["corrected_all_rows"] - out["parsed_references_same_subsets"]
    if paper is not None:
        keys = ["model", "condition", "metric"]
        out = out.merge(paper[keys + ["paper"]], on=keys, how="left")
    return out


def protocol_alt_text(steps: pd.DataFrame, compared: pd.DataFrame) -> str:
    """The long description of the protocol figure (CommVQA Table 1, ``commvqa_table01_protocols``).

    Parameters
    ----------
    steps : pandas.DataFrame
        :func:`protocol_steps` with ``paper``.
    compared : pandas.DataFrame
        Table 1 compared with the paper (:func:`vqalib.core.report.compare`).
    """
    higher = int((steps["corrected_all_rows"] > steps["authors"]).sum())
    largest = steps.loc[(steps["corrected_all_rows"] - steps["authors"]).idxmax()]
    models = list(dict.fromkeys(steps["model"]))
    off = compared[compared["within_tolerance"].eq(False)]
    same_rank = sum(part["authors"].rank().equals(part["corrected_all_rows"].rank())
                    for _, part in steps.groupby("metric"))
    return (
        f"Five panels, one per metric (BLEU-1, BLEU-4, METEOR, ROUGE-L, CIDEr), each with {len(steps) // 5} rows: "
        f"{', '.join(models[:-1])} and {models[-1]}, each with the baseline and the contextual prompt. Each row shows "
        "the paper's value (a cross), the value under the authors' protocol (a circle, on the cross except "
        + ", ".join(f"{r.model} {r.condition} {r.metric}" for r in off.itertuples())
        + ") and the corrected protocol's value with its 95% bootstrap interval (a square). The corrected value is "
        f"higher in {higher} of {len(steps)} cells, most for {largest['model']} {largest['condition']} "
        f"{largest['metric']} (+{largest['corrected_all_rows'] - largest['authors']:.3f}), because the authors' comma "
        f"split turns answers into short fragments; the ranking of the {len(steps) // 5} rows is the same under both "
        f"protocols for {same_rank} of the 5 metrics.")


def context_effect(corrected: ProtocolScores, *, confidence: float = 0.95) -> pd.DataFrame:
    """Contextual minus baseline per model and metric with a paired bootstrap CI (Table 1, §5 claim).

    Parameters
    ----------
    corrected : ProtocolScores
        Scores of the ``corrected`` protocol with bootstrap resamples.
    confidence : float
        Level of the percentile interval.
    """
    s = corrected.scores.set_index(["model", "condition", "metric"])["value"]
    rows = []
    for model in dict.fromkeys(corrected.scores["model"]):
        for m in METRICS:
            base = corrected.resamples.get((model, "baseline", m))
            ctx = corrected.resamples.get((model, "contextual", m))
            if base is None or ctx is None or len(base) != len(ctx):
                continue
            diff = ctx - base
            lo, hi = np.percentile(diff, [50 * (1 - confidence), 50 * (1 + confidence)])
            rows.append({"model": model, "metric": m, "baseline": s[(model, "baseline", m)],
                         "contextual": s[(model, "contextual", m)],
                         "difference": s[(model, "contextual", m)] - s[(model, "baseline", m)],
                         "ci_low": float(lo), "ci_high": float(hi), "excludes_zero": bool(lo > 0 or hi < 0)})
    return pd.DataFrame(rows)


def table1_rows(scores: pd.DataFrame) -> pd.DataFrame:
    """Protocol scores keyed like the paper's Table 1: ``model``, ``condition``, ``metric``, ``value`` (CommVQA §5)."""
    return scores[["model", "condition", "metric", "value"]].copy()
