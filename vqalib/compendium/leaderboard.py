"""One leaderboard per dataset: the released models and every scorecard on the papers' measures (VizWiz-LF Tables 1,
2, 4 and 5, CommVQA Table 1), each with its 95% interval, ranked into tiers only where a paired test separates them
(:data:`RULE`; ``vqalib leaderboard``, notebook 10). AFGV releases no predictions: its leaderboard holds scorecards
only (tier accuracy per question set)."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from vqalib.compendium.scorecard_schema import scorecard_folders
from vqalib.core.inference import bootstrap_mean_cis, mean_ci
from vqalib.core.judge.settings import ENABLE_HINT
from vqalib.papers.vizwiz_lf import leaderboard_measures as measures

DATASETS = ("vizwiz-lf", "commvqa", "afgv")
TITLES = {"vizwiz-lf": "VizWiz-LF", "commvqa": "CommVQA", "afgv": "AFGV"}
ALPHA = 0.05
WORDS = measures.WORDS
REPORTED = {WORDS, *(m for m in measures.PROPORTIONS if m not in measures.RANKED)}  # described, not ranked
RULE = ("Per measure the models are sorted by their estimate, best first. The first model opens tier 1; each next model "
        "stays in the current tier unless it is distinguishable from that tier's first model, and then opens the next "
        "tier. Distinguishable means both: a two-sided Wilcoxon signed-rank test of the per-question scores on the "
        "questions both models answered, Holm-corrected over every tested pair of the measure, gives an adjusted "
        "p < 0.05, and the 95% paired bootstrap interval of the mean difference excludes 0. A pair with no test "
        "(equal scores on every question; a scorecard written without per-question scores; a corpus-level measure "
        "with no per-question scores) is never separated. So two models whose difference's interval contains 0 are "
        "never split by that pair, and a model in a lower tier scores below the first model of the tier above it; it "
        "need not differ from every model of that tier. Answer length, the share of answers with each functional "
        "role and how often a model abstains on answerable and on unanswerable questions are reported, not ranked: "
        "the papers name no better value. Abstention accuracy (abstaining exactly on the questions the crowd found "
        "unanswerable) is ranked twice: on the released role labels (released models only) and on the offline "
        "classifier's labels (every model, so a scorecard is compared with the released models on the same "
        "labeller's output).")
VIZWIZ_METRICS = ("ROUGE", "METEOR", "BERTScore", "GPT-4 (LAVE)")  # Table 4 with the whole answer (l_c)
COLUMNS = ["metric", "reference", "model", "kind", "n", "value", "ci_low", "ci_high", "tier", "origin", "note"]
ESTIMATES = ["metric", "reference", "model", "n", "value", "ci_low", "ci_high"]  # a row before kind, tier and origin
SCORES = ["metric", "reference", "model", "question_id", "score"]  # per-question scores, every model's
NO_TEST = "not ranked: a corpus-level score, no per-question scores to pair"
LAVE_NOTE = (f"GPT-4 (LAVE) of the released models: not run: no LLM judge configured; {ENABLE_HINT}. A scorecard "
             "scored with a judge is ranked on it")
ALONE = "not ranked: no other model has per-question scores on this measure"
AFGV_NOT_RUN = ("not run: no AFGV model predictions are released (the paper prints its tier accuracies, notebook 06 "
                "compares them); score a model's answers to the tiers with `vqalib score ANSWERS --dataset afgv --out "
                "scores/NAME` (or `vqalib run` them) and run `vqalib leaderboard --scores scores/`.")
OLD_CARD = "not tested: the scorecard keeps no per-question scores (written before they were kept; score it again)"


def measure_rows(per_question: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """One row per model and measure from per-question scores: the mean with a t interval, or for a proportion (0/1
    scores, :data:`~vqalib.papers.vizwiz_lf.leaderboard_measures.PROPORTIONS`) its Wilson interval.

    Parameters
    ----------
    per_question : pandas.DataFrame
        ``metric``, ``reference``, ``model``, ``question_id``, ``score``.
    confidence : float, default 0.95
    """
    rows = []
    for (metric, reference, model), part in per_question.groupby(["metric", "reference", "model"], sort=False):
        values = part["score"].to_numpy(dtype=float)
        if metric in measures.PROPORTIONS:
            hits = int(values.sum())
            value = hits / len(values)
            bounds = proportion_confint(hits, len(values), alpha=1 - confidence, method="wilson")
            low, high = (min(max(float(b), 0.0), 1.0) for b in bounds)  # no -4e-17 below an estimate of 0
        else:
            value, _, low, high = mean_ci(values, confidence=confidence)
        rows.append({"metric": metric, "reference": reference, "model": model, "n": len(values), "value": value,
                     "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=ESTIMATES)


def vizwiz_lf_released(data, *, backbone=None, judge=None, question_ids=None, n_resamples: int = 1000,
                       seed: int = 0):
    """The seven released VizWiz-LF sources' rows and per-question scores: Table 4 with ``l_c`` by notebook 03's
    functions and seed, answer words (Table 1), abstention on the released labels (Table 5) and, on the offline
    classifier's out-of-fold labels (what a scorecard of the same answers gets), abstention and role shares.

    Parameters
    ----------
    data : VizWizLF
        ``papers.vizwiz_lf.loading.load_vizwiz_lf()``.
    backbone : Backbone, optional
        BERTScore's; default ``bertscore_backbone()``.
    judge : CachedJudge, optional
        LAVE's judge (notebook 03's); None: no LAVE rows.
    question_ids : iterable of int, optional
        Only these questions (a smoke run); None: all.
    n_resamples, seed : int
        Notebook 03's bootstrap settings.
    """
    from vqalib.core.metrics.bertscore import bertscore_backbone
    from vqalib.papers.vizwiz_lf import table4
    from vqalib.papers.vizwiz_lf.classifier_choice import NAMES, selected, selected_cv
    from vqalib.papers.vizwiz_lf.scoring_labels import label_model_answers

    pairs = table4.evaluation_pairs(data.answers, data.sentences, question_ids=question_ids)
    pairs = pairs[pairs["candidate_kind"] == "l_c"]
    scores = table4.score_pairs(pairs, metrics=("rouge", "meteor", "bertscore"),
                                backbone=backbone or bertscore_backbone(), progress=False)
    if judge is not None:  # notebook 03's judge and rule for an answer without an Answer sentence (none: l_c)
        scores = pd.concat([scores, table4.score_with_judge(pairs, judge=judge, progress=False)], ignore_index=True)
    named = scores.assign(metric=scores["metric"].map(table4.METRIC_NAMES)).dropna(subset=["score"])
    summary = table4.summarize(named, n_resamples=n_resamples, seed=seed)
    rows = pd.DataFrame([{"metric": r.metric, "reference": r.reference_kind, "model": r.source,
                          "n": r.n, "value": r.mean, "ci_low": r.ci_low, "ci_high": r.ci_high,
                          "origin": "released answers (Table 4, notebook 03)" + (
                              f"; judged by {judge.backend.name}:{judge.backend.model}" if r.metric == "GPT-4 (LAVE)"
                              else "")} for r in summary.itertuples(index=False)])
    answers = data.answers if question_ids is None else data.answers[data.answers["question_id"].isin(question_ids)]
    parts, origins = [], {}
    classifier = f"released answers labelled out of fold by the offline classifier ({NAMES[selected()]}, notebook 05)"
    cv = selected_cv(data.sentences, data.answers)  # read once for the seven sources
    for source, part in answers.groupby("source", sort=False):
        _, labelled = label_model_answers(part, model=source, released_answers=data.answers,
                                          released_sentences=data.sentences, cv=cv)
        released = measures.label_measures(part, labels=measures.RELEASED_LABELS)
        for frame in (measures.word_measures(part), released[released["metric"].isin(measures.RANKED)],
                      measures.label_measures(labelled, labels=measures.CLASSIFIER_LABELS)):
            parts.append(frame.assign(model=source))
        origins[source] = {WORDS: "released answers (Table 1, notebook 01)",
                           measures.RELEASED_LABELS: "released answers and role labels (Tables 2 and 5, notebook 05)",
                           measures.CLASSIFIER_LABELS: classifier}
    parts += [measures.table4_measures(part).assign(model=source) for source, part in scores.groupby("source", sort=False)]
    per_question = pd.concat(parts, ignore_index=True)
    described = measure_rows(per_question[~per_question["metric"].isin(VIZWIZ_METRICS)])
    described["origin"] = [origins[m][WORDS if metric == WORDS else reference] for metric, reference, m in
                           zip(described["metric"], described["reference"], described["model"])]
    return pd.concat([rows, described], ignore_index=True).assign(kind="released"), per_question


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
    return rows, _commvqa_per_question(corrected.per_question, model=None)


def _commvqa_per_question(pq: pd.DataFrame, *, model: str | None) -> pd.DataFrame:
    """CommVQA per-question scores with each row named by :func:`commvqa_label` (``model`` overrides the rows')."""
    names = pq["model"] if model is None else pd.Series(model, index=pq.index)
    return pd.DataFrame({"metric": pq["metric"], "reference": "",
                         "model": [commvqa_label(m, c) for m, c in zip(names, pq["condition"])],
                         "question_id": pq["question_id"], "score": pq["score"]})


def _origin(card: dict, folder: Path) -> str:
    """Where a scorecard's rows came from: its answers files and vqalib's version (text of a checked card)."""
    sources = card["source"] if isinstance(card["source"], list) else [card["source"]]
    files = "; ".join(f"{s.get('path')} ({s.get('format')}{', ' + str(s['toolkit']) if s.get('toolkit') else ''}"
                      f"{' ' + str(s['version']) if s.get('version') else ''}, SHA-256 {s.get('sha256')})"
                      for s in sources)
    return f"scorecard scores/{folder.name}: {files}; vqalib {card.get('vqalib_version')}"


def _judged(full: pd.DataFrame) -> str:
    """The LAVE judge of a scorecard's Table 4 rows, or "" when LAVE was not run."""
    lave = full[(full["metric"] == "GPT-4 (LAVE)") & full["value"].notna()] if "value" in full else full.iloc[:0]
    return str(lave["implementation"].iloc[0]) if len(lave) and "implementation" in lave else ""


def scorecard_rows(folder: str | Path, *, dataset: str,
                   question_ids: set[int] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A scorecard's leaderboard rows and per-question scores (empty when it has none: a scorecard written before
    they were kept), or empty frames when it scores another dataset; every file is checked first, whatever the
    dataset (``scorecard_files.read_card``, ``read_per_question``), and a bad one is a ``ScorecardError`` naming it.

    Parameters
    ----------
    folder : str or Path
        A folder written by ``vqalib score`` (its ``scorecard.json``).
    dataset : str
    question_ids : set of int, optional
        The question ids of the scorecard's dataset (default read from the data).
    """
    from vqalib.compendium.scorecard_files import read_card, read_per_question

    folder = Path(folder)
    card = read_card(folder)
    per_question = read_per_question(folder, card=card, question_ids=question_ids) if "per_question" in card else None
    empty = pd.DataFrame(columns=SCORES)
    if card["dataset"] != dataset:
        return pd.DataFrame(columns=COLUMNS), empty
    tables, model, origin = card["tables"], card["model"], _origin(card, folder)
    coverage = card.get("coverage") or {}
    notes = []
    if any(c.get("matched", 0) < c.get("questions", 0) for c in coverage.get("by_condition", [coverage])):
        matched = sum(c.get("matched", 0) for c in coverage.get("by_condition", [coverage]))
        questions = sum(c.get("questions", 0) for c in coverage.get("by_condition", [coverage]))
        notes.append(f"answers {matched} of {questions} questions: compared on the questions both models answered")
    if per_question is None:
        notes.append(OLD_CARD)
    elif dataset != "commvqa":  # CommVQA names each row by model and condition below
        per_question = per_question.assign(model=model)
    if dataset == "vizwiz-lf":
        full = pd.DataFrame(tables["vizwiz-lf_table04_full_set_bootstrap"])
        judge = _judged(full)
        full = full[full["metric"].isin(VIZWIZ_METRICS) & (full["candidate"] == "l_c") & full["value"].notna()]
        rows = pd.DataFrame([{"metric": r.metric, "reference": r.reference, "model": model, "n": r.n, "value": r.value,
                              "ci_low": r.ci_low, "ci_high": r.ci_high} for r in full.itertuples(index=False)],
                            columns=ESTIMATES)
        error = pd.DataFrame(tables.get("classifier_error") or [])
        labels = f"; role labels by the offline classifier {error['classifier'].iloc[0]}" if len(error) else ""
        origin += labels + (f"; LAVE judged by {judge}" if judge else "")
        if per_question is not None:
            rows = pd.concat([rows, measure_rows(per_question[~per_question["metric"].isin(VIZWIZ_METRICS)])],
                             ignore_index=True)
    elif dataset == "afgv":
        from vqalib.papers.afgv.scorecard import ACCURACY, tier_reference

        acc = pd.DataFrame(tables.get("afgv_tier_accuracy_predictions") or [])
        question_set = card.get("settings", {}).get("question_set", "VizWiz-LF")
        rows = pd.DataFrame([{"metric": ACCURACY, "reference": tier_reference(r.tier, question_set), "model": model,
                              "n": r.n, "value": r.accuracy, "ci_low": r.ci95_low, "ci_high": r.ci95_high}
                             for r in acc.itertuples(index=False)] if "accuracy" in acc else [], columns=ESTIMATES)
    else:
        bench = pd.DataFrame(tables["commvqa_table01_benchmark"])
        bench = bench[bench["protocol"] == "corrected"]
        rows = pd.DataFrame([{"metric": r.metric, "reference": "", "model": commvqa_label(model, r.condition),
                              "n": r.n_rows, "value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high}
                             for r in bench.itertuples(index=False)], columns=ESTIMATES)
        if per_question is not None:
            per_question = _commvqa_per_question(per_question, model=model)
    out = rows.assign(kind="scorecard", origin=origin, note="; ".join(notes))
    return out, empty if per_question is None else per_question[SCORES]


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
                d = (both[a] - both[b]).to_numpy(dtype=float, copy=True)
                d[np.abs(d) < 1e-12] = 0.0  # float noise (CommVQA ROUGE pairs), not a difference
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
    gc.freeze()  # statsmodels' Holm runs gc.collect(): ~0.2 s a call over a notebook's heap, nothing once frozen
    try:
        for _, part in pairs.groupby(["metric", "reference"], sort=False):
            tested = part["p"].notna()
            if tested.any():
                pairs.loc[part.index[tested], "p_holm"] = multipletests(part.loc[tested, "p"], method="holm")[1]
    finally:
        gc.unfreeze()
    excludes = (pairs["ci_low"] > 0) | (pairs["ci_high"] < 0)
    return pairs.assign(distinguishable=(pairs["p_holm"] < alpha) & excludes)


def assign_tiers(rows: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """``rows`` sorted per measure, best first, with the tier :data:`RULE` gives (:data:`REPORTED` measures: none).

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
            if metric in REPORTED or pd.isna(value) or (metric, reference) not in tested:
                tiers.append(pd.NA)
                continue
            if leader is not None and (metric, reference, frozenset((leader, model))) in separated:
                tier, leader = tier + 1, model
            leader = leader or model
            tiers.append(tier)
        out.append(part.assign(tier=pd.array(tiers, dtype="Int64")))
    return pd.concat(out, ignore_index=True)


def leaderboard(dataset: str, *, scores_dir: str | Path | None = None, data=None, judge=None, question_ids=None,
                n_resamples: int = 1000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The leaderboard of ``dataset``: ``table`` (one row per model and measure, with tiers) and ``pairs`` (every
    paired comparison of a ranked measure, released models and scorecards alike, with its Holm-adjusted p).

    Parameters
    ----------
    dataset : {"vizwiz-lf", "commvqa", "afgv"}
    scores_dir : str or Path, optional
        A folder of scorecard folders (``scores/``); None: the released models only.
    data : optional
        The loaded dataset (``load_vizwiz_lf()`` or ``load_commvqa()``); None: loaded here.
    judge : CachedJudge, optional
        VizWiz-LF: LAVE's judge for the released answers (``core.judge.cache.judge_from_env()``); None: not run.
    question_ids : iterable of int, optional
        VizWiz-LF: only these questions (a smoke run).
    n_resamples, seed : int
        The notebooks' bootstrap settings.
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, not {dataset!r}")
    # every scorecard checked before the work, whatever its dataset: one bad scorecard stops the leaderboard (README)
    folders = scorecard_folders(scores_dir) if scores_dir is not None else []
    cards = [(folder, *scorecard_rows(folder, dataset=dataset)) for folder in folders]
    if dataset == "vizwiz-lf":
        from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

        rows, per_question = vizwiz_lf_released(data or load_vizwiz_lf(), judge=judge, question_ids=question_ids,
                                                n_resamples=n_resamples, seed=seed)
    elif dataset == "commvqa":
        from vqalib.papers.commvqa.loading import load_commvqa

        rows, per_question = commvqa_released(data or load_commvqa(), n_resamples=n_resamples, seed=seed)
    else:  # AFGV: no released predictions, scorecards only
        rows, per_question = pd.DataFrame(columns=[*ESTIMATES, "origin", "kind"]), pd.DataFrame(columns=SCORES)
    all_rows, all_scores = [rows.assign(note="")], [per_question]
    for folder, card_rows, card_scores in cards:
        if len(card_rows) and set(card_rows["model"]) & set(pd.concat(all_rows)["model"]):
            raise ValueError(f"{folder / 'scorecard.json'}: model {card_rows['model'].iloc[0]!r} is already on the "
                             f"{dataset} leaderboard; give each scorecard its own model name")
        all_rows.append(card_rows)
        all_scores.append(card_scores)
    per_question = pd.concat(all_scores, ignore_index=True)
    pairs = with_holm(paired_tests(per_question[~per_question["metric"].isin(REPORTED)], n_resamples=n_resamples,
                                   seed=seed))
    if not any(len(r) for r in all_rows):  # AFGV without a scorecard
        return {"table": pd.DataFrame(columns=COLUMNS), "pairs": pairs}
    table = assign_tiers(pd.concat([r for r in all_rows if len(r)], ignore_index=True), pairs)
    table["n"] = table["n"].astype(int)
    table["tier"] = table["tier"].map(lambda t: "" if pd.isna(t) else str(int(t)))
    untested = (table["tier"] == "") & ~table["metric"].isin(REPORTED) & (table["note"] == "")
    paired = set(zip(per_question["metric"], per_question["reference"]))
    table.loc[untested, "note"] = [NO_TEST if key not in paired else ALONE
                                   for key in zip(table.loc[untested, "metric"], table.loc[untested, "reference"])]
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
