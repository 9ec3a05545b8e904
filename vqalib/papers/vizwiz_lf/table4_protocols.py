"""VizWiz-LF Table 4 (§5): the scoring protocols the paper leaves open (METEOR, l_r + l′_c reference, labels of l′_c,
population, no-Answer rule), their grid, the declared protocol (:data:`CHOICES`, each from the paper's text or
fitted to its numbers; a cell a fitted choice touches counts as fitted), the seed spread of the 120-question sample."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from tqdm import tqdm

from vqalib.core import registry

from vqalib.core.metrics.cache import cached_scores
from vqalib.core.metrics.catalog import metric as metric_spec
from vqalib.papers.vizwiz_lf.table4 import (NO_ANSWER_RULES, _apply_no_answer_rule, answer_sentences_text,
                                            evaluation_pairs, sample_draws, score_pairs, summarize, table4_rows)

OPTIONS: dict[str, tuple[str, ...]] = {
    "meteor": ("meteor", "meteor_nltk"),
    "long_reference": ("l_r", "l_r_prime"),
    "answer_labels": ("released", "classifier_gpt4v", "classifier"),
    "population": ("all", "answerable"),
    "no_answer": NO_ANSWER_RULES,
}


@dataclass(frozen=True)
class Protocol:
    """One way to score Table 4's ROUGE and METEOR cells; the defaults are ours."""

    meteor: str = "meteor"
    long_reference: str = "l_r"
    answer_labels: str = "released"
    population: str = "all"
    no_answer: str = "zero"

    def __post_init__(self):
        for f in fields(self):
            if getattr(self, f.name) not in OPTIONS[f.name]:
                raise ValueError(f"Protocol.{f.name} must be one of {OPTIONS[f.name]}, not {getattr(self, f.name)!r}")

    def label(self) -> str:
        """The protocol in one line, e.g. ``meteor_nltk · l_r_prime · classifier_gpt4v · all · exclude``."""
        return " · ".join(str(v) for v in asdict(self).values())


DEFAULT = Protocol()
DECLARED = Protocol(meteor="meteor_nltk", long_reference="l_r_prime", answer_labels="classifier_gpt4v",
                    population="all", no_answer="exclude")

CHOICES: dict[tuple[str, str], tuple[str, str]] = {  # (option, value) -> (basis, why)
    ("long_reference", "l_r_prime"): ("paper", "the Table 4 caption names the expert's extracted Answer sentences "
                                               "(l′_r) as a reference"),
    ("population", "all"): ("paper", "§5 samples 360 answers balanced across the question categories, "
                                     "unanswerable questions included"),
    ("meteor", "meteor_nltk"): ("fitted", f"{metric_spec('meteor_nltk').label} is chosen only because it comes "
                                          "closer to the paper's METEOR columns (figures/vizwiz-lf_table04_protocol_grid"
                                          ".csv); nothing in the paper's text supports it: the paper does not name its "
                                          "METEOR implementation, and WordNet synonym matching, switched off here, "
                                          "normally raises METEOR, so the paper is unlikely to have used this variant"),
    ("answer_labels", "classifier_gpt4v"): ("fitted", "GPT-4V's released Answer labels are misaligned with their "
                                                      "sentences; the offline classifier's labels for GPT-4V alone "
                                                      "come closest to the paper (figures/vizwiz-lf_table04_protocol_grid.csv)"),
    ("no_answer", "exclude"): ("fitted", "the paper does not say how an answer without an Answer sentence is "
                                         "scored; leaving it out comes closest (figures/vizwiz-lf_table04_protocol_grid.csv)"),
}
AFFECTS = {  # which Table 4 cells (metric, reference, candidate) each option can change
    "meteor": lambda metric, ref, cand: metric == "METEOR",
    "long_reference": lambda metric, ref, cand: ref == "l_r" and cand == "l_c_prime",
    "answer_labels": lambda metric, ref, cand: cand == "l_c_prime",
    "no_answer": lambda metric, ref, cand: cand == "l_c_prime",
    "population": lambda metric, ref, cand: True,
}


RULE_STEM = "vizwiz-lf_table04_declared_protocol"  # the registry entry whose tolerance judges Table 4's cells


def paper_rules(paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 4 cells with the registry's ``tolerance`` and compared ``decimals`` of each."""
    rules = registry.cell_rules(registry.table(RULE_STEM), paper)
    return paper.assign(tolerance=[t for t, _ in rules], decimals=[d for _, d in rules])


def cell_relation(protocol: Protocol, *, metric: str, reference: str, candidate: str, source: str) -> str:
    """One Table 4 cell's relation to the paper under ``protocol``: "same" or "fitted: <option> = <value>, ..."."""
    fitted = []
    for option, value in asdict(protocol).items():
        if value == getattr(DEFAULT, option) and (option, value) not in CHOICES:
            continue
        if not AFFECTS[option](metric, reference, candidate):
            continue
        if option == "answer_labels" and value == "classifier_gpt4v" and source != "GPT-4V":
            continue
        if CHOICES.get((option, value), ("fitted", ""))[0] == "fitted":
            fitted.append(f"{option} = {value}")
    return "fitted: " + ", ".join(fitted) if fitted else "same"


def choices_table(protocol: Protocol = DECLARED) -> pd.DataFrame:
    """The declared protocol's choices beside our default, with the basis of each (Table 4, notebook 03).

    Parameters
    ----------
    protocol : Protocol, default DECLARED
    """
    rows = []
    for option, value in asdict(protocol).items():
        basis, why = CHOICES.get((option, value), ("default", "our default"))
        rows.append({"option": option, "default": getattr(DEFAULT, option), "declared": value, "basis": basis,
                     "why": why})
    return pd.DataFrame(rows)


def classifier_sentences(sentences: pd.DataFrame, predictions: pd.DataFrame) -> pd.DataFrame:
    """The release's sentences with roles from the offline classifier's out-of-fold predictions (Table 4 l′_c).

    Parameters
    ----------
    sentences : pandas.DataFrame
    predictions : pandas.DataFrame
        Role predictions of :func:`vqalib.papers.vizwiz_lf.classifier_cv.cross_validate`.
    """
    keys = ["source", "question_id", "sentence_index"]
    predicted = predictions.set_index(keys)["predicted"]
    index = pd.MultiIndex.from_frame(sentences[keys])
    roles = predicted.reindex(index).to_numpy()
    return sentences.assign(roles=[r if isinstance(r, tuple) else () for r in roles])


def protocol_pairs(answers: pd.DataFrame, sentences: pd.DataFrame, classified: pd.DataFrame, *,
                   protocol: Protocol, sources: list[str], reference_source: str = "Expert") -> pd.DataFrame:
    """Table 4's evaluation pairs of ``sources`` under a protocol's label and reference choices; an l_r + l′_c pair
    whose l′_r reference is empty loses its candidate too, so the no-Answer rule treats it alike.

    Parameters
    ----------
    answers, sentences : pandas.DataFrame
    classified : pandas.DataFrame
        :func:`classifier_sentences` output.
    protocol : Protocol
    sources : list of str
    reference_source : str, default "Expert"
    """
    if protocol.answer_labels == "released":
        labelled = sentences
    elif protocol.answer_labels == "classifier":
        labelled = classified
    else:
        labelled = pd.concat([sentences[sentences["source"] != "GPT-4V"], classified[classified["source"] == "GPT-4V"]],
                             ignore_index=True)
    pairs = evaluation_pairs(answers, labelled, sources=sources, reference_source=reference_source)
    if protocol.long_reference == "l_r_prime":
        prime = answer_sentences_text(labelled[labelled["source"] == reference_source]).droplevel(0)
        rows = pairs["reference_kind"].eq("l_r") & pairs["candidate_kind"].eq("l_c_prime")
        reference = pairs.loc[rows, "question_id"].map(prime)
        if protocol.no_answer == "whole_answer":
            whole = answers[answers["source"] == reference_source].set_index("question_id")["answer"]
            reference = reference.fillna(pairs.loc[rows, "question_id"].map(whole))
        pairs.loc[rows, "reference"] = reference
        pairs.loc[rows & pairs["reference"].isna(), "candidate"] = None
        pairs.loc[rows & pairs["reference"].isna(), "reference"] = ""
    return pairs


def protocol_scores(pairs: pd.DataFrame, *, protocol: Protocol, cache_dir: Path | None = None) -> pd.DataFrame:
    """Per-answer ROUGE and METEOR scores of Table 4 under ``protocol``, restricted to its population.

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`protocol_pairs` output for the same protocol.
    protocol : Protocol
    cache_dir : Path, optional
    """
    scores = score_pairs(pairs, metrics=("rouge", protocol.meteor), no_answer=protocol.no_answer,
                         cache_dir=cache_dir, progress=False)
    scores["metric"] = scores["metric"].replace({"meteor_nltk": "meteor"})
    return _in_population(scores, protocol.population)


def _in_population(scores: pd.DataFrame, population: str) -> pd.DataFrame:
    """The scores of a :class:`Protocol`'s population: every answer, or the answerable questions' only."""
    if population == "answerable":
        scores = scores[scores["answerability"] == "answerable"]
    return scores.reset_index(drop=True)


def cell_means(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean per Table 4 cell of per-answer scores (missing scores left out), keyed as the paper prints it.

    Parameters
    ----------
    scores : pandas.DataFrame
        :func:`protocol_scores` output.
    """
    means = scores.groupby(["source", "metric", "reference_kind", "candidate_kind"], sort=False)["score"].mean()
    return table4_rows(means.rename("mean").reset_index(), implementation={}).drop(columns="implementation")


def _pairs_key(protocol: Protocol) -> tuple:
    """What :func:`protocol_pairs` depends on: two protocols with the same key have the same pairs."""
    return (protocol.answer_labels, protocol.long_reference,
            protocol.long_reference == "l_r_prime" and protocol.no_answer == "whole_answer")


def _score_once(pair_sets: list[tuple[pd.DataFrame, Protocol]], *, cache_dir: Path | None) -> None:
    """Fill the per-pair score cache for many protocols in one call per metric (one tokenizer, one METEOR JVM)."""
    scorable = [(_apply_no_answer_rule(pairs, no_answer=p.no_answer)[1], p.meteor) for pairs, p in pair_sets]
    for metric in ("rouge", *OPTIONS["meteor"]):
        frames = [rows for rows, meteor in scorable if metric in ("rouge", meteor)]
        union = pd.concat(frames)[["reference", "candidate"]].astype(str).drop_duplicates()
        cached_scores(metric, tuple(union["reference"]), tuple(union["candidate"]), None, cache_dir=cache_dir)


def protocol_grid(answers: pd.DataFrame, sentences: pd.DataFrame, classified: pd.DataFrame, paper: pd.DataFrame, *,
                  sources: list[str], cache_dir: Path | None = None, progress: bool = True) -> pd.DataFrame:
    """Every protocol of :data:`OPTIONS` on all questions, each ROUGE/METEOR cell beside the paper's (Table 4); cached.

    Parameters
    ----------
    answers, sentences, paper : pandas.DataFrame
    classified : pandas.DataFrame
        :func:`classifier_sentences` output.
    sources : list of str
    cache_dir : Path, optional
    progress : bool, default True
    """
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    key = content_key(code=("vqalib",), packages=("pycocoevalcap", "nltk", "numpy"), answers=answers,
                      sentences=sentences, classified=classified, paper=paper, sources=list(sources))
    return cached_frame(Path(cache_dir or cache_root("metrics")) / "table4-protocol-grid" / f"{key[:32]}.parquet",
                        kind="Table 4 protocol grid cache",
                        compute=lambda: _protocol_grid(answers, sentences, classified, paper, sources=sources,
                                                       cache_dir=cache_dir, progress=progress))


def _protocol_grid(answers: pd.DataFrame, sentences: pd.DataFrame, classified: pd.DataFrame, paper: pd.DataFrame, *,
                   sources: list[str], cache_dir: Path | None, progress: bool) -> pd.DataFrame:
    """:func:`protocol_grid` without its own cache."""
    cells = paper_rules(paper[paper["metric"].isin(["ROUGE", "METEOR"]) & paper["paper"].notna()])
    cells = cells[["source", "metric", "reference", "candidate", "paper", "tolerance", "decimals"]]
    rows = []
    protocols = [Protocol(*values) for values in itertools.product(*OPTIONS.values())]
    # build each distinct pair set and score set once; the population only filters
    pairs_of, unfiltered = {}, {}  # pairs key -> pairs; score key -> a protocol of population "all"
    for p in protocols:
        if _pairs_key(p) not in pairs_of:
            pairs_of[_pairs_key(p)] = protocol_pairs(answers, sentences, classified, protocol=p, sources=sources)
        unfiltered.setdefault((_pairs_key(p), p.meteor, p.no_answer), replace(p, population="all"))
    _score_once([(pairs_of[key[0]], p) for key, p in unfiltered.items()], cache_dir=cache_dir)
    scored = {key: protocol_scores(pairs_of[key[0]], protocol=p, cache_dir=cache_dir) for key, p in unfiltered.items()}
    for protocol in tqdm(protocols, desc="Table 4 protocols", unit="protocol", disable=not progress):
        scores = _in_population(scored[(_pairs_key(protocol), protocol.meteor, protocol.no_answer)], protocol.population)
        rows.append(cells.merge(cell_means(scores), how="left").assign(**asdict(protocol)))
    grid = pd.concat(rows, ignore_index=True)
    grid["diff"] = [round(v, d) for v, d in zip(grid["value"], grid["decimals"])] - grid["paper"]
    grid["within"] = grid["diff"].abs() <= grid["tolerance"] + 1e-9
    return grid[[*OPTIONS, "source", "metric", "reference", "candidate", "value", "paper", "diff", "within"]]


def grid_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per protocol, how many of the paper's ROUGE/METEOR cells it reaches within the tolerance (Table 4 grid).

    Parameters
    ----------
    grid : pandas.DataFrame
        :func:`protocol_grid` output.
    """
    summary = grid.groupby(list(OPTIONS), sort=False)["within"].agg(["sum", "size"]).reset_index()
    summary = summary.rename(columns={"sum": "within", "size": "cells"})
    summary["within"] = summary["within"].astype(int)
    for name, protocol in (("declared", DECLARED), ("default", DEFAULT)):
        summary[name] = np.logical_and.reduce([summary[k].eq(v) for k, v in asdict(protocol).items()])
    return summary.sort_values("within", ascending=False, kind="stable").reset_index(drop=True)


def declared_rows(scores: pd.DataFrame, *, protocol: Protocol, default: pd.DataFrame, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Table 4's ROUGE/METEOR cells under one protocol with bootstrap CIs, relation and the ``default``'s value.

    Parameters
    ----------
    scores : pandas.DataFrame
        :func:`protocol_scores` under ``protocol``.
    protocol : Protocol
    default : pandas.DataFrame
    n_resamples, seed : int
    """
    summary = summarize(scores, n_resamples=n_resamples, seed=seed)
    table = table4_rows(summary, implementation={})
    table = table.merge(default[["source", "metric", "reference", "candidate", "value"]]
                        .rename(columns={"value": "default_protocol"}), how="left")
    table["protocol"] = protocol.label()
    table["relation"] = [cell_relation(protocol, metric=m, reference=r, candidate=c, source=s)
                         for s, m, r, c in zip(table["source"], table["metric"], table["reference"], table["candidate"])]
    return table[["source", "metric", "reference", "candidate", "value", "n", "ci_low", "ci_high", "default_protocol",
                  "protocol", "relation"]]


def seed_sweep(scores: dict[str, pd.DataFrame], answers: pd.DataFrame, paper: pd.DataFrame, *, n_draws: int = 1000,
               per_category: int = 30, sources: tuple[str, ...] = ("GPT-4V", "Gemini", "Expert"),
               seed_of_sample: int = 0) -> pd.DataFrame:
    """The spread of Table 4's cells over ``n_draws`` draws of the paper's balanced design (seed k = draw k), with the
    percentile of the paper's value and of our sample (seed ``seed_of_sample``, notebook 03's).

    Parameters
    ----------
    scores : dict of str to pandas.DataFrame
        Protocol name -> per-answer scores.
    answers, paper : pandas.DataFrame
    n_draws, per_category : int, default 1000, 30
    sources : tuple of str
        Sources that must all have answered a drawn question.
    seed_of_sample : int, default 0
    """
    draws = sample_draws(answers, seeds=range(n_draws), per_category=per_category, sources=sources)
    ids = np.array(draws)  # one row of question ids per draw (each draw takes the same count per category)
    rows = []
    for name, frame in scores.items():
        keys = ["source", "metric", "reference_kind", "candidate_kind"]
        frame = frame[frame["source"].isin(sources)]
        for key, group in frame.groupby(keys, sort=False):
            values = group.set_index("question_id")["score"]
            # one index matrix: row k holds draw k's scores (NaN for a question without one)
            positions = values.index.get_indexer(ids.ravel())
            matrix = np.append(values.to_numpy(dtype=float), np.nan)[positions].reshape(ids.shape)
            with np.errstate(invalid="ignore"):
                means = np.nanmean(matrix, axis=1) if np.isnan(matrix).any() else matrix.mean(axis=1)
            rows.append({"protocol": name, **dict(zip(keys, key)), "n_draws": len(draws),
                         "draw_mean": float(np.mean(means)), "draw_sd": float(np.std(means, ddof=1)),
                         "draw_p025": float(np.percentile(means, 2.5)), "draw_p975": float(np.percentile(means, 97.5)),
                         "seed0_value": float(means[seed_of_sample]),
                         "seed0_percentile": float(scistats.percentileofscore(means, means[seed_of_sample], kind="mean")),
                         "_means": means})
    table = table4_rows(pd.DataFrame(rows), implementation={})
    table = table.merge(paper_rules(paper[paper["paper"].notna()])[
        ["source", "metric", "reference", "candidate", "paper", "tolerance", "decimals"]], how="left")
    table["paper_percentile"] = [float(scistats.percentileofscore(m, p, kind="mean")) if pd.notna(p) else np.nan
                                 for m, p in zip(table["_means"], table["paper"])]
    table["share_within"] = [float(np.mean(np.abs(np.round(m, int(d)) - p) <= t + 1e-9) * 100) if pd.notna(p) else np.nan
                             for m, p, t, d in zip(table["_means"], table["paper"], table["tolerance"], table["decimals"])]
    return table.drop(columns="_means")[
        ["protocol", "source", "metric", "reference", "candidate", "n_draws", "draw_mean", "draw_sd", "draw_p025",
         "draw_p975", "paper", "paper_percentile", "seed0_value", "seed0_percentile", "share_within"]]

