"""A new model's VizWiz-LF answers scored into Tables 1-5 (§3-§7) by the notebooks' functions (``vqalib score --dataset
vizwiz-lf``), labelled by the offline classifier, with paired differences to each released model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats

from vqalib.core import report
from vqalib.papers.vizwiz_lf import table4
from vqalib.papers.vizwiz_lf import leaderboard_measures as measures
from vqalib.papers.vizwiz_lf.abstention import abstention_metrics
from vqalib.papers.vizwiz_lf.roles import answers_with_label
from vqalib.papers.vizwiz_lf.scoring_labels import label_model_answers
from vqalib.papers.vizwiz_lf.wordcounts import TABLE1_COLUMNS, count_words, long_format, word_count_table

TABLE4_METRICS = ("lex_overlap", "rouge", "meteor", "bertscore")
CLASSIFIER_NOTE = ("labels from the selected offline classifier (data/models/, vizwiz-lf_classifier_selection); "
                   "its measured error is in the classifier_error table")
LABELLED_CANDIDATE = "l_c_prime"  # the Answer sentences of an answer: the only Table 4 candidate that needs labels
SELF_NOTE = "self-comparison: same answers, no test"
SELF_LABELS_NOTE = "self-comparison: same answers; the difference comes from the classifier's Answer-sentence labels"
EQUAL_NOTE = "equal scores on every question, no test"
# what a VizWiz-LF scorecard holds (the leaderboard and the site check a scorecard folder against it): its tables, and
# the (condition, metric, reference) of its per-question scores (no condition: one prompt)
SCORECARD_TABLES = ("vizwiz-lf_table01_word_counts", "vizwiz-lf_table02_roles_by_answerability",
                    "vizwiz-lf_table03_info_sources", "vizwiz-lf_table04_full_set_bootstrap",
                    "vizwiz-lf_table05_abstention", "classifier_error", "labelled_by", "paired_differences",
                    "round_trip")
PER_QUESTION_KEYS = frozenset(
    {("", measures.WORDS, "")} | {("", m, measures.CLASSIFIER_LABELS) for m in measures.PROPORTIONS}
    | {("", table4.METRIC_NAMES[m], r) for m in ("rouge", "meteor", "bertscore", "lave")
       for r, c in table4.SETTINGS if c == "l_c"})


def scorecard_question_ids(settings: dict, *, data_dir: Path | None = None) -> set[int]:
    """The question ids a VizWiz-LF scorecard's per-question scores may name: the release's 600 questions (§3).

    Parameters
    ----------
    settings : dict
        The scorecard's settings (one question set: not read).
    data_dir : Path, optional
    """
    from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

    return set(load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers["question_id"].astype(int))


def model_answers(matched: pd.DataFrame, *, model: str, released: pd.DataFrame) -> pd.DataFrame:
    """A model's answers in the release's layout, question fields and references from the Expert rows."""
    expert = released[released["source"] == "Expert"].drop_duplicates("question_id").set_index("question_id")
    ids = matched["item_id"].astype(int).to_numpy()
    rows = expert.loc[ids].reset_index()
    keep = ["question_id", "question", "question_type", "answerability", "question_words", "crowd_answers",
            "crowd_answer_words", "crowd_majority", "image_url"]
    rows = rows[keep].assign(source=model, answer=matched["answer"].to_numpy())
    rows["answer_words"] = rows["answer"].map(count_words)
    return rows[["source", *keep[:4], "answer", "question_words", "answer_words", *keep[5:]]]


def table1_rows(answers: pd.DataFrame, *, model: str, released: pd.DataFrame) -> pd.DataFrame:
    """Table 1 word statistics of the model's answers per category, in ``figures/``' long layout."""
    frame = pd.concat([released[released["source"] == "Expert"], answers], ignore_index=True)
    table = word_count_table(frame, columns={model: model})
    table = long_format(table[table["column"] == model]).rename(columns={"words": "value"})
    return table.assign(source=model)[["category", "dataset", "column", "source", "statistic", "n", "value"]]


def label_rows(answers: pd.DataFrame, *, kind: str) -> pd.DataFrame:
    """Table 2 (``kind`` role) or Table 3 (info) of the model: percent of answers with each label."""
    rows = answers_with_label(answers, kind=kind).rename(columns={"percent": "value"})
    return rows.rename(columns={"label": "role" if kind == "role" else "info_source"})


def table5_row(answers: pd.DataFrame) -> pd.DataFrame:
    """Table 5's vanilla abstention row of the model, in ``figures/``' long layout (§7)."""
    wide = abstention_metrics(answers).rename(columns={"source": "model"})
    return wide.melt(id_vars=["model", "n"], var_name="metric", value_name="value").assign(method="vanilla")[
        ["model", "method", "metric", "n", "value"]]


def classifier_error(*, figures_dir: str | Path | None = None) -> pd.DataFrame:
    """The offline classifier's measured error beside every classifier-derived number (Tables 2, 3, 5), read from
    notebook 05's committed tables: abstention agreement per released model and per-label F1, with 95% intervals."""
    from vqalib.papers.vizwiz_lf import classifier_choice

    folder = report.figures_dir(figures_dir)
    chosen = classifier_choice.NAMES[classifier_choice.selected()]
    rows = []
    agreement = pd.read_csv(folder / "vizwiz-lf_table05_abstention_offline_classifier.csv")
    for r in agreement.itertuples(index=False):
        rows.append({"table": "Table 5", "label": "abstains", "measure": "agreement with the released labels",
                     "source": r.source, "value": r.agreement, "ci_low": r.agreement_ci_low,
                     "ci_high": r.agreement_ci_high})
    for stem, table, label in (("vizwiz-lf_table09_role_classifier_f1", "Table 2", "role"),
                               ("vizwiz-lf_table10_info_classifier_f1", "Table 3", "info_source")):
        f1 = pd.read_csv(folder / f"{stem}.csv")
        for r in f1[f1["model"] == chosen].itertuples(index=False):
            rows.append({"table": table, "label": getattr(r, label), "measure": "F1 (out of fold)",
                         "source": "all released models", "value": r.reproduced, "ci_low": r.ci_low,
                         "ci_high": r.ci_high})
    return pd.DataFrame(rows).assign(classifier=chosen)


def paired_differences(scores: pd.DataFrame, *, model: str, n_resamples: int = 1000, seed: int = 0,
                       confidence: float = 0.95) -> pd.DataFrame:
    """The model minus each released model per Table 4 setting, on the questions both answered (§5). The paper compares
    without a test; here each difference gets Table 4's seeded bootstrap CI and a Wilcoxon p."""
    keys = ["metric", "reference_kind", "candidate_kind", "question_id"]
    mine = scores[scores["source"] == model]
    pairs = [mine.merge(scores[scores["source"] == versus], on=keys, suffixes=("", "_other")).assign(versus=versus)
             for versus in dict.fromkeys(scores["source"]) if versus != model]
    both = pd.concat(pairs, ignore_index=True).dropna(subset=["score", "score_other"])
    both["score"] = both["score"] - both["score_other"]  # the per-question difference, bootstrapped as Table 4's means
    by = ("versus", "metric", "reference_kind", "candidate_kind")
    out = table4.summarize(both, by=by, n_resamples=n_resamples, confidence=confidence, seed=seed)
    out["wilcoxon_p"] = [float(scistats.wilcoxon(group["score"]).pvalue) if group["score"].ne(0).any() else np.nan
                         for _, group in both.groupby(list(by), sort=False)]
    out = out.rename(columns={"reference_kind": "reference", "candidate_kind": "candidate", "mean": "difference"})
    out = out.assign(model=model)[["model", "versus", "metric", "reference", "candidate", "n", "difference",
                                   "ci_low", "ci_high", "wilcoxon_p"]]
    out["metric"] = out["metric"].map(table4.METRIC_NAMES)
    return with_notes(out)


def same_answer_sources(diffs: pd.DataFrame) -> list[str]:
    """The released models whose answers these are: every label-free difference is 0 on every question.

    Parameters
    ----------
    diffs : pandas.DataFrame
        :func:`paired_differences` output (or its saved table).
    """
    whole = diffs[diffs["candidate"].astype(str) != LABELLED_CANDIDATE]
    zero = whole["wilcoxon_p"].isna() & whole[["difference", "ci_low", "ci_high"]].eq(0).all(axis=1)
    same = zero.groupby(whole["versus"], sort=False).all()
    return [versus for versus, is_same in same.items() if is_same]


def with_notes(diffs: pd.DataFrame) -> pd.DataFrame:
    """:func:`paired_differences` with a ``note`` for each untested row (self-comparison or equal scores).

    Parameters
    ----------
    diffs : pandas.DataFrame
        :func:`paired_differences` output (or its saved table).
    """
    same = diffs["versus"].isin(same_answer_sources(diffs))
    labelled = diffs["candidate"].astype(str) == LABELLED_CANDIDATE
    untested = diffs["wilcoxon_p"].isna()
    note = np.select([same & labelled, same, untested], [SELF_LABELS_NOTE, SELF_NOTE, EQUAL_NOTE], default="")
    return diffs.assign(note=note)


def score_vizwiz_lf(matched: pd.DataFrame, *, model: str, data, backbone=None, judge=None,
                    n_resamples: int = 1000, seed: int = 0, cross_fit: bool = True, compare: bool = True,
                    cache_dir: Path | None = None) -> dict[str, pd.DataFrame]:
    """Every VizWiz-LF table of a new model, keyed by ``figures/`` stem (``vqalib score``), plus ``round_trip`` when the
    answers are a released model's.

    Parameters
    ----------
    matched : pandas.DataFrame
        The model's answers matched to the questions (``item_id``, ``answer``).
    model : str
    data : VizWizLF
    backbone : Backbone, optional
    judge : optional
        A configured LAVE judge; None gives "not run" rows.
    n_resamples, seed : int
    cross_fit : bool, default True
        Out-of-fold labels for answers equal to a released answer.
    compare : bool, default True
        Also score the released answers and compute :func:`paired_differences`.
    cache_dir : Path, optional
    """
    from vqalib.core.judge.settings import ENABLE_HINT
    from vqalib.core.metrics.bertscore import bertscore_backbone
    from vqalib.papers.vizwiz_lf.table4_tables import implementations

    if model in set(data.answers["source"]):
        raise ValueError(f"model name {model!r} is a source of the release; name the scored model differently "
                         f"(e.g. {model + ' (scored)'!r})")
    answers = model_answers(matched, model=model, released=data.answers)
    sentences, labelled = label_model_answers(answers, model=model, released_answers=data.answers,
                                              released_sentences=data.sentences, cross_fit=cross_fit,
                                              cache_dir=cache_dir)
    backbone = backbone or bertscore_backbone()
    pool = pd.concat([data.answers, labelled], ignore_index=True)
    pool_sentences = pd.concat([data.sentences, sentences], ignore_index=True)
    sources = None if compare else [model]
    pairs = table4.evaluation_pairs(pool, pool_sentences, question_ids=labelled["question_id"], sources=sources)
    scores = table4.score_pairs(pairs, metrics=TABLE4_METRICS, backbone=backbone, progress=False)
    implementation = implementations(backbone, judge)
    mine = scores[scores["source"] == model]
    full = table4.table4_rows(table4.summarize(mine, n_resamples=n_resamples, seed=seed), implementation=implementation)
    per_question = [measures.word_measures(answers), measures.table4_measures(mine),
                    measures.label_measures(labelled, labels=measures.CLASSIFIER_LABELS)]
    if judge is not None:
        judged = table4.score_with_judge(pairs[pairs["source"] == model], judge=judge, progress=False)
        full = pd.concat([full, table4.table4_rows(table4.summarize(judged, n_resamples=n_resamples, seed=seed),
                                                   implementation=implementation)], ignore_index=True)
        per_question.append(measures.table4_measures(judged))
    else:
        cells = table4.metric_cells(sources=[model], metric="lave")
        full = pd.concat([full, report.not_run_rows(cells, reason=f"no LLM judge configured; {ENABLE_HINT}")],
                         ignore_index=True)
    tables = {
        "vizwiz-lf_table01_word_counts": table1_rows(answers, model=model, released=data.answers),
        "vizwiz-lf_table02_roles_by_answerability": label_rows(labelled, kind="role").assign(note=CLASSIFIER_NOTE),
        "vizwiz-lf_table03_info_sources": label_rows(labelled, kind="info").assign(note=CLASSIFIER_NOTE),
        "vizwiz-lf_table04_full_set_bootstrap": full,
        "vizwiz-lf_table05_abstention": table5_row(labelled).assign(note=CLASSIFIER_NOTE),
        "classifier_error": classifier_error(),
        "labelled_by": labelled["labelled_by"].value_counts().rename_axis("labelled_by").reset_index(name="answers"),
        "per_question": pd.concat(per_question, ignore_index=True),  # the leaderboard's, kept beside the tables
    }
    if compare:
        tables["paired_differences"] = paired_differences(scores, model=model, n_resamples=n_resamples, seed=seed)
        same = same_answer_sources(tables["paired_differences"])
        if len(same) == 1 and set(answers["question_id"]) == set(data.answers["question_id"]):
            tables["round_trip"] = round_trip(tables, source=same[0])  # a released model's answers given back
    return tables


def round_trip(tables: dict[str, pd.DataFrame], *, source: str, figures_dir: str | Path | None = None) -> pd.DataFrame:
    """A released model's answers scored as a new model (``tables``) beside its ``figures/`` numbers (Tables 1, 4, 5);
    a cell with no released value (Expert's answers against l_r, which they are) has ``equal_4dp`` empty.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
    source : str
    figures_dir : str or Path, optional
    """
    folder = report.figures_dir(figures_dir)
    rows = []
    words = pd.read_csv(folder / "vizwiz-lf_table01_word_counts.csv")
    mine = tables["vizwiz-lf_table01_word_counts"]
    column = {released: paper for paper, released in TABLE1_COLUMNS.items()}.get(source, source)  # Expert: Human
    for r in mine[mine["statistic"] == "mean_words"].itertuples(index=False):
        theirs = words[(words["column"] == column) & (words["category"] == r.category)
                       & (words["statistic"] == "mean_words")]["reproduced"]
        rows.append(("Table 1 mean words", r.category, r.value, theirs.iloc[0] if len(theirs) else np.nan))
    full = pd.read_csv(folder / "vizwiz-lf_table04_full_set_bootstrap.csv", keep_default_na=False, na_values=[""])
    mine = tables["vizwiz-lf_table04_full_set_bootstrap"]
    for r in mine[mine["metric"].isin(["ROUGE", "METEOR"]) & (mine["candidate"] == "l_c")].itertuples(index=False):
        theirs = full[(full["source"] == source) & (full["metric"] == r.metric) & (full["reference"] == r.reference)
                      & (full["candidate"] == "l_c")]["reproduced"]
        rows.append(("Table 4 full set", f"{r.metric} {r.reference} + l_c", r.value,
                     theirs.iloc[0] if len(theirs) else np.nan))
    offline = pd.read_csv(folder / "vizwiz-lf_table05_abstention_offline_classifier.csv").set_index("source")
    for r in tables["vizwiz-lf_table05_abstention"].itertuples(index=False):
        theirs = offline[r.metric].get(source, np.nan) if r.metric in offline else np.nan
        rows.append(("Table 5 (offline classifier)", r.metric, r.value, theirs))
    out = pd.DataFrame(rows, columns=["table", "cell", "scored", "figures"])
    equal, compared = out["scored"].round(4) == out["figures"].round(4), out["figures"].notna()
    out["equal_4dp"] = equal if compared.all() else equal.astype(object).where(compared, None)
    return out


def round_trip_summary(frame: pd.DataFrame) -> dict:
    """``equal`` of ``n``: how many cells of a saved round-trip table with a released value in ``figures/`` equal it to
    4 decimals (README status); a cell without one compares nothing and is not counted.

    Parameters
    ----------
    frame : pandas.DataFrame
    """
    compared = frame["figures"].notna()
    return {"equal": int((frame["equal_4dp"].astype(str).eq("True") & compared).sum()), "n": int(compared.sum())}
