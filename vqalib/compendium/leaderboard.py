"""One leaderboard per dataset: the released models and every scorecard on the papers' measures (VizWiz-LF Tables 1
and 4, CommVQA Table 1), each with its 95% interval, ranked into tiers only where a paired test separates them
(:data:`RULE`; ``vqalib leaderboard``, notebook 10). AFGV has no leaderboard yet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from statsmodels.stats.multitest import multipletests

from vqalib.core.inference import bootstrap_mean_cis, mean_ci

DATASETS = ("vizwiz-lf", "commvqa")
ALPHA = 0.05
RULE = ("Per measure the models are sorted by their estimate, best first. The first model opens tier 1; each next model "
        "stays in the current tier unless it is distinguishable from that tier's first model, and then opens the next "
        "tier. Distinguishable means both: a two-sided Wilcoxon signed-rank test of the per-question scores on the "
        "questions both models answered, Holm-corrected over every tested pair of the measure, gives an adjusted "
        "p < 0.05, and the 95% paired bootstrap interval of the mean difference excludes 0. A pair with no test "
        "(equal scores on every question; two scorecards, which keep no per-question scores; a corpus-level measure "
        "with no per-question scores) is never separated. So two models whose difference's interval contains 0 are "
        "never split by that pair, and a model in a lower tier scores below the first model of the tier above it; it "
        "need not differ from every model of that tier. Answer length is reported, not ranked: the papers name no "
        "better length.")
VIZWIZ_METRICS = ("ROUGE", "METEOR", "BERTScore")  # Table 4 with the whole answer (l_c): no classifier labels needed
WORDS = "answer words"
COLUMNS = ["metric", "reference", "model", "kind", "n", "value", "ci_low", "ci_high", "tier", "origin", "note"]
NO_TEST = "not ranked: a corpus-level score, no per-question scores to pair"
LAVE_NOTE = "GPT-4 (LAVE): not run: no judge's per-question scores; `vqalib score` with a judge adds it to a scorecard"


def _words_row(model: str, values, *, origin: str) -> dict:
    mean, _, low, high = mean_ci(np.asarray(values, dtype=float))
    return {"metric": WORDS, "reference": "", "model": model, "n": len(values), "value": mean, "ci_low": low,
            "ci_high": high, "origin": origin}


def vizwiz_lf_released(data, *, backbone=None, n_resamples: int = 1000, seed: int = 0):
    """The seven released VizWiz-LF sources' rows (Table 1 answer length, Table 4 full set with ``l_c``) and their
    per-question scores, by notebook 03's functions and seed (scores from the metric cache when warm).

    Parameters
    ----------
    data : VizWizLF
        ``papers.vizwiz_lf.loading.load_vizwiz_lf()``.
    backbone : Backbone, optional
        BERTScore's; default ``bertscore_backbone()``.
    n_resamples, seed : int
        Notebook 03's bootstrap settings.
    """
    from vqalib.core.metrics.bertscore import bertscore_backbone
    from vqalib.papers.vizwiz_lf import table4

    pairs = table4.evaluation_pairs(data.answers, data.sentences)
    pairs = pairs[pairs["candidate_kind"] == "l_c"]
    scores = table4.score_pairs(pairs, metrics=("rouge", "meteor", "bertscore"),
                                backbone=backbone or bertscore_backbone(), progress=False)
    scores = scores.assign(metric=scores["metric"].map(table4.METRIC_NAMES)).dropna(subset=["score"])
    summary = table4.summarize(scores, n_resamples=n_resamples, seed=seed)
    rows = [{"metric": r.metric, "reference": r.reference_kind, "model": r.source, "n": r.n, "value": r.mean,
             "ci_low": r.ci_low, "ci_high": r.ci_high, "origin": "released answers (Table 4, notebook 03)"}
            for r in summary.itertuples(index=False)]
    for source, part in data.answers.groupby("source", sort=False):
        rows.append(_words_row(source, part["answer_words"], origin="released answers (Table 1, notebook 01)"))
    per_question = scores[["metric", "reference_kind", "source", "question_id", "score"]].rename(
        columns={"source": "model", "reference_kind": "reference"})
    return pd.DataFrame(rows).assign(kind="released"), per_question


def commvqa_label(model: str, condition: str) -> str:
    """One CommVQA leaderboard row's name: a model under one prompt condition (Table 1)."""
    return f"{model} ({condition})"


def commvqa_released(data, *, n_resamples: int = 1000, seed: int = 0):
    """The four released CommVQA models under both conditions: Table 1's corrected protocol (notebook 08) and its
    per-question METEOR, ROUGE and CIDEr scores (BLEU is corpus-level: no per-question score, no tier).

    Parameters
    ----------
    data : CommVQA
        ``papers.commvqa.loading.load_commvqa()``.
    n_resamples, seed : int
        Notebook 08's bootstrap settings.
    """
    from vqalib.papers.commvqa.table1 import score_protocol

    corrected = score_protocol(data.results, protocol="corrected", n_resamples=n_resamples, seed=seed, progress=False)
    rows = pd.DataFrame({"metric": corrected.scores["metric"], "reference": "",
                         "model": [commvqa_label(m, c) for m, c in corrected.scores[["model", "condition"]].itertuples(
                             index=False)],
                         "n": corrected.scores["n_rows"], "value": corrected.scores["value"],
                         "ci_low": corrected.scores["ci_low"], "ci_high": corrected.scores["ci_high"],
                         "origin": "released results (Table 1, corrected protocol, notebook 08)", "kind": "released"})
    pq = corrected.per_question
    per_question = pd.DataFrame({"metric": pq["metric"], "reference": "",
                                 "model": [commvqa_label(m, c) for m, c in pq[["model", "condition"]].itertuples(
                                     index=False)],
                                 "question_id": pq["question_id"], "score": pq["score"]})
    return rows, per_question


def _origin(card: dict, folder: Path) -> str:
    sources = card["source"] if isinstance(card["source"], list) else [card["source"]]
    files = "; ".join(f"{s.get('path')} ({s.get('format')}{', ' + str(s['toolkit']) if s.get('toolkit') else ''}"
                      f"{' ' + str(s['version']) if s.get('version') else ''}, SHA-256 {s.get('sha256')})"
                      for s in sources)
    return f"scorecard scores/{folder.name}: {files}; vqalib {card.get('vqalib_version')}"


def scorecard_rows(folder: str | Path, *, dataset: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A scorecard's leaderboard rows and its paired tests against the released models, or empty frames when it scores
    another dataset.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``vqalib score`` (its ``scorecard.json``).
    dataset : str
    """
    folder = Path(folder)
    card = json.loads((folder / "scorecard.json").read_text(encoding="utf-8"))
    if card.get("dataset") != dataset:
        return pd.DataFrame(columns=COLUMNS), pd.DataFrame()
    tables, model, origin = card["tables"], card["model"], _origin(card, folder)
    coverage = card.get("coverage") or {}
    note = ""
    if coverage and coverage.get("matched", 0) < coverage.get("questions", 0):
        note = (f"answers {coverage['matched']} of {coverage['questions']} questions: compared on the questions "
                "both models answered")
    if dataset == "vizwiz-lf":
        full = pd.DataFrame(tables["vizwiz-lf_table04_full_set_bootstrap"])
        full = full[full["metric"].isin(VIZWIZ_METRICS) & (full["candidate"] == "l_c")]
        rows = [{"metric": r.metric, "reference": r.reference, "model": model, "n": r.n, "value": r.value,
                 "ci_low": r.ci_low, "ci_high": r.ci_high} for r in full.itertuples(index=False)]
        words = pd.DataFrame(tables["vizwiz-lf_table01_word_counts"])
        total = words[words["category"] == "Total"].set_index("statistic")
        n, mean, sd = int(total.loc["mean_words", "n"]), total.loc["mean_words", "value"], total.loc["sd_words", "value"]
        low, high = scistats.t.interval(0.95, n - 1, loc=mean, scale=sd / np.sqrt(n)) if n > 1 and sd > 0 else (mean,
                                                                                                               mean)
        rows.append({"metric": WORDS, "reference": "", "model": model, "n": n, "value": mean, "ci_low": low,
                     "ci_high": high})
        error = pd.DataFrame(tables.get("classifier_error") or [])
        if len(error):
            origin += f"; classifier {error['classifier'].iloc[0]} (labels not used by these measures)"
        diffs = pd.DataFrame(tables.get("paired_differences") or [])
        if len(diffs):
            diffs = diffs[diffs["metric"].isin(VIZWIZ_METRICS) & (diffs["candidate"] == "l_c")]
            diffs = diffs.rename(columns={"wilcoxon_p": "p"})[
                ["metric", "reference", "model", "versus", "n", "difference", "ci_low", "ci_high", "p", "note"]]
    else:
        bench = pd.DataFrame(tables["commvqa_table01_benchmark"])
        bench = bench[bench["protocol"] == "corrected"]
        rows = [{"metric": r.metric, "reference": "", "model": commvqa_label(model, r.condition), "n": r.n_rows,
                 "value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high} for r in bench.itertuples(index=False)]
        diffs = pd.DataFrame()
        note = "; ".join(filter(None, [note, "not tested: the scorecard keeps no per-question scores"]))
    out = pd.DataFrame(rows).assign(kind="scorecard", origin=origin, note=note)
    return out, diffs


def paired_tests(per_question: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0,
                 confidence: float = 0.95) -> pd.DataFrame:
    """Every pair of models per measure on the questions both answered: mean difference with a paired bootstrap
    interval and a Wilcoxon signed-rank p (no test where the scores are equal on every question).

    Parameters
    ----------
    per_question : pandas.DataFrame
        ``metric``, ``reference``, ``model``, ``question_id``, ``score``.
    n_resamples, seed, confidence :
        The bootstrap's settings.
    """
    rows, samples = [], []
    for (metric, reference), part in per_question.groupby(["metric", "reference"], sort=False):
        wide = part.pivot_table(index="question_id", columns="model", values="score", aggfunc="first")
        models = list(dict.fromkeys(part["model"]))
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                both = wide[[a, b]].dropna()
                d = (both[a] - both[b]).to_numpy(dtype=float)
                tested = bool(len(d) > 1 and np.any(d != 0))
                rows.append({"metric": metric, "reference": reference, "model": a, "versus": b, "n": len(d),
                             "difference": float(d.mean()) if len(d) else np.nan, "ci_low": np.nan, "ci_high": np.nan,
                             "p": float(scistats.wilcoxon(d).pvalue) if tested else np.nan,
                             "note": "" if tested else "equal scores on every question, no test"})
                samples.append(d if tested else None)
    tested = [i for i, d in enumerate(samples) if d is not None]
    intervals = bootstrap_mean_cis([samples[i] for i in tested], n_resamples=n_resamples, confidence=confidence,
                                   seed=seed)
    for i, (low, high) in zip(tested, intervals):
        rows[i].update(ci_low=float(low), ci_high=float(high))
    for i, row in enumerate(rows):
        if samples[i] is None:
            row.update(ci_low=row["difference"], ci_high=row["difference"])
    return pd.DataFrame(rows, columns=["metric", "reference", "model", "versus", "n", "difference", "ci_low",
                                       "ci_high", "p", "note"])


def with_holm(pairs: pd.DataFrame, *, alpha: float = ALPHA) -> pd.DataFrame:
    """``p_holm`` (Holm over the tested pairs of each measure) and ``distinguishable`` (:data:`RULE`).

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`paired_tests` rows (a scorecard's tests appended).
    alpha : float
    """
    pairs = pairs.reset_index(drop=True).assign(p_holm=np.nan)
    for _, part in pairs.groupby(["metric", "reference"], sort=False):
        tested = part["p"].notna()
        if tested.any():
            pairs.loc[part.index[tested], "p_holm"] = multipletests(part.loc[tested, "p"], method="holm")[1]
    excludes = (pairs["ci_low"] > 0) | (pairs["ci_high"] < 0)
    return pairs.assign(distinguishable=(pairs["p_holm"] < alpha) & excludes)


def assign_tiers(rows: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """``rows`` sorted per measure, best first, with the tier :data:`RULE` gives (answer length: no tier).

    Parameters
    ----------
    rows : pandas.DataFrame
        Leaderboard rows (``metric``, ``reference``, ``model``, ``kind``, ``value``).
    pairs : pandas.DataFrame
        :func:`with_holm` output.
    """
    separated = {(r.metric, r.reference, frozenset((r.model, r.versus)))
                 for r in pairs[pairs["distinguishable"]].itertuples(index=False)} if len(pairs) else set()
    tested = set(zip(pairs["metric"], pairs["reference"])) if len(pairs) else set()  # BLEU: corpus-level only
    out = []
    for (metric, reference), part in rows.groupby(["metric", "reference"], sort=False):
        # equal to 10 decimals is a tie (a released answer file scored again), the released model first
        part = part.assign(_value=part["value"].round(10), _released=part["kind"] != "released").sort_values(
            ["_value", "_released", "model"], ascending=[False, True, True], na_position="last").drop(
            columns=["_value", "_released"])
        tiers, tier, leader = [], 1, None
        for model, value in zip(part["model"], part["value"]):
            if metric == WORDS or pd.isna(value) or (metric, reference) not in tested:
                tiers.append(pd.NA)
                continue
            if leader is not None and (metric, reference, frozenset((leader, model))) in separated:
                tier, leader = tier + 1, model
            leader = leader or model
            tiers.append(tier)
        out.append(part.assign(tier=pd.array(tiers, dtype="Int64")))
    return pd.concat(out, ignore_index=True)


def leaderboard(dataset: str, *, scores_dir: str | Path | None = None, data=None, n_resamples: int = 1000,
                seed: int = 0) -> dict[str, pd.DataFrame]:
    """The leaderboard of ``dataset``: ``table`` (one row per model and measure, with tiers) and ``pairs`` (every
    paired comparison with its Holm-adjusted p).

    Parameters
    ----------
    dataset : {"vizwiz-lf", "commvqa"}
    scores_dir : str or Path, optional
        A folder of scorecard folders (``scores/``); None: the released models only.
    data : optional
        The loaded dataset (``load_vizwiz_lf()`` or ``load_commvqa()``); None: loaded here.
    n_resamples, seed : int
        The notebooks' bootstrap settings.
    """
    if dataset == "vizwiz-lf":
        from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

        rows, per_question = vizwiz_lf_released(data or load_vizwiz_lf(), n_resamples=n_resamples, seed=seed)
    elif dataset == "commvqa":
        from vqalib.papers.commvqa.loading import load_commvqa

        rows, per_question = commvqa_released(data or load_commvqa(), n_resamples=n_resamples, seed=seed)
    else:
        raise ValueError(f"dataset must be one of {DATASETS}, not {dataset!r}")
    pairs = paired_tests(per_question, n_resamples=n_resamples, seed=seed)
    all_rows, all_pairs = [rows.assign(note="")], [pairs]
    folders = sorted(p.parent for p in Path(scores_dir).glob("*/scorecard.json")) if scores_dir else []
    for folder in folders:
        if folder.name.startswith("."):  # a scorecard being swapped in
            continue
        card_rows, card_pairs = scorecard_rows(folder, dataset=dataset)
        if len(card_rows) and set(card_rows["model"]) & set(pd.concat(all_rows)["model"]):
            raise ValueError(f"{folder / 'scorecard.json'}: model {card_rows['model'].iloc[0]!r} is already on the "
                             f"{dataset} leaderboard; give each scorecard its own model name")
        all_rows.append(card_rows)
        all_pairs.append(card_pairs)
    pairs = with_holm(pd.concat([p for p in all_pairs if len(p)], ignore_index=True))
    table = assign_tiers(pd.concat([r for r in all_rows if len(r)], ignore_index=True), pairs)
    table["n"] = table["n"].astype(int)
    table["tier"] = table["tier"].map(lambda t: "" if pd.isna(t) else str(int(t)))
    untested = table["tier"].isna() & (table["metric"] != WORDS)
    table.loc[untested, "note"] = table.loc[untested, "note"].where(table.loc[untested, "note"] != "", NO_TEST)
    return {"table": table[COLUMNS], "pairs": pairs}


def wide_view(table: pd.DataFrame, *, decimals: int = 3) -> pd.DataFrame:
    """One row per model, one column per measure: ``value [ci_low, ci_high]`` and its tier (notebook 10, the site).

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`leaderboard`'s ``table``.
    decimals : int
    """
    measure = table["metric"] + table["reference"].map(lambda r: f" ({r})" if r else "")
    tier = table["tier"].map(lambda t: "" if pd.isna(t) or t == "" else f" · tier {int(t)}")
    cell = [f"{v:.{decimals}f} [{lo:.{decimals}f}, {hi:.{decimals}f}]{t}"
            for v, lo, hi, t in zip(table["value"], table["ci_low"], table["ci_high"], tier)]
    wide = table.assign(measure=measure, cell=cell).pivot_table(index="model", columns="measure", values="cell",
                                                                aggfunc="first", sort=False)
    return wide.reindex(columns=list(dict.fromkeys(measure))).fillna("")
