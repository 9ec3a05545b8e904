"""Abstention of long-form answers (VizWiz-LF §7, Tables 5 and 26, A.4.1).

An answer abstains when at least one of its sentences has the Answer Failure role
(§7.1). Gold answerability is VizWiz's crowd label; abstaining is the positive class.
Metrics: abs-acc, abs-prec, abs-recall, abs-f1 (scikit-learn) and abs-% (share of
answers that abstain, in percent). Baselines: Random (abstain at the unanswerable rate)
and Majority (always answer). Tables 5 and 26 are assembled from them in
:mod:`vqalib.papers.vizwiz_lf.abstention_tables`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, precision_recall_fscore_support

from vqalib.papers.vizwiz_lf.roles import annotation_distribution

METRICS = ("abs-acc", "abs-prec", "abs-recall", "abs-f1", "abs-%")
ABSTAIN_ROLE = "Answer Failure"


def abstains(roles: pd.Series) -> pd.Series:
    """True where an answer's role set contains Answer Failure (§7.1).

    Parameters
    ----------
    roles : pandas.Series
        One role collection (tuple or set of str) per answer.

    Returns
    -------
    pandas.Series
        bool, aligned with ``roles``.
    """
    return roles.map(lambda r: ABSTAIN_ROLE in r).astype(bool)


def abstention_scores(*, unanswerable: np.ndarray, abstained: np.ndarray) -> dict[str, float]:
    """abs-acc, abs-prec, abs-recall, abs-f1 and abs-% of one set of decisions (Table 5).

    Precision of a model that never abstains is 0 (scikit-learn's ``zero_division=0``), as
    the paper's Majority row prints.

    Parameters
    ----------
    unanswerable : numpy.ndarray
        Gold answerability per answer (True: unanswerable, the positive class).
    abstained : numpy.ndarray
        Whether each answer abstains; same non-zero length as ``unanswerable`` (else ValueError).

    Returns
    -------
    dict of str to float
        The :data:`METRICS`; abs-acc to abs-f1 in 0-1, abs-% in percent.
    """
    y_true = np.asarray(unanswerable, dtype=bool)
    y_pred = np.asarray(abstained, dtype=bool)
    if y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(f"need two equally long, non-empty arrays, got {y_true.shape} and {y_pred.shape}")
    prec, rec, f1, _ = precision_recall_fscore_support(y_true, y_pred, average="binary", pos_label=True,
                                                       zero_division=0)
    return {"abs-acc": float(accuracy_score(y_true, y_pred)), "abs-prec": float(prec), "abs-recall": float(rec),
            "abs-f1": float(f1), "abs-%": 100.0 * float(y_pred.mean())}


def abstention_metrics(answers: pd.DataFrame, *, decision: str = "abstains", by: str = "source") -> pd.DataFrame:
    """Abstention metrics per source from a boolean ``decision`` column (Table 5 vanilla rows).

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per answer with ``answerability`` ("unanswerable" is the positive class), the
        ``decision`` column and the ``by`` column.
    decision : str, default "abstains"
        The boolean column saying whether an answer abstains.
    by : str, default "source"
        The grouping column (groups in order of appearance).

    Returns
    -------
    pandas.DataFrame
        One row per group: ``by``, ``n`` and the five metrics.
    """
    rows = []
    for key, group in answers.groupby(by, sort=False):
        scores = abstention_scores(unanswerable=group["answerability"].eq("unanswerable").to_numpy(),
                                   abstained=group[decision].to_numpy(dtype=bool))
        rows.append({by: key, "n": len(group), **scores})
    return pd.DataFrame(rows)


def random_baseline(unanswerable: np.ndarray, *, n_draws: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The Random baseline two ways (Table 5): its expectation and a seeded mean over draws.

    Each answer abstains independently with probability p, the unanswerable rate. In
    expectation accuracy is p^2 + (1-p)^2 and precision = recall = F1 = p; the seeded
    mean over ``n_draws`` draws shows what single draws scatter around.

    Parameters
    ----------
    unanswerable : numpy.ndarray
        Gold answerability per question (True: unanswerable).
    n_draws : int, default 1000
        Number of seeded draws.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    pandas.DataFrame
        Three rows (``model`` "Random", ``variant``: the expectation, the mean and the SD of the
        draws) with the :data:`METRICS` columns; cached by content (``$VQALIB_CACHE_DIR/vizwiz-lf``).
    """
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    gold = np.asarray(unanswerable, dtype=bool)
    key = content_key(code=("vqalib",), packages=("numpy", "scikit-learn"), gold=gold,
                      n_draws=n_draws, seed=seed)
    return cached_frame(cache_root("vizwiz-lf", "random-baseline") / f"{key[:32]}.parquet", kind="random baseline cache",
                        compute=lambda: _random_baseline(gold, n_draws=n_draws, seed=seed))


def _random_baseline(gold: np.ndarray, *, n_draws: int, seed: int) -> pd.DataFrame:
    """:func:`random_baseline` without its cache."""
    p = float(gold.mean())
    expected = {"abs-acc": p * p + (1 - p) * (1 - p), "abs-prec": p, "abs-recall": p, "abs-f1": p, "abs-%": 100 * p}
    rng = np.random.default_rng(seed)
    draws = pd.DataFrame([abstention_scores(unanswerable=gold, abstained=rng.random(gold.size) < p)
                          for _ in range(n_draws)])
    mean, sd = draws.mean(), draws.std(ddof=1)
    return pd.DataFrame([
        {"model": "Random", "variant": "expectation", **expected},
        {"model": "Random", "variant": f"mean of {n_draws} seeded draws (seed {seed})", **mean.to_dict()},
        {"model": "Random", "variant": f"SD of {n_draws} seeded draws", **sd.to_dict()},
    ])


def majority_baseline(unanswerable: np.ndarray) -> dict[str, float]:
    """Always answer (the majority class, answerable): Table 5's Majority row.

    Parameters
    ----------
    unanswerable : numpy.ndarray
        Gold answerability per question (True: unanswerable).

    Returns
    -------
    dict of str to float
        :func:`abstention_scores` of never abstaining.
    """
    gold = np.asarray(unanswerable, dtype=bool)
    return abstention_scores(unanswerable=gold, abstained=np.zeros_like(gold))


def long_format(frame: pd.DataFrame, *, model: str = "model", method: str = "vanilla") -> pd.DataFrame:
    """One row per (model, method, metric): the layout of the paper's Tables 5 and 26 in ``data/paper/``.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per model with the :data:`METRICS` columns it has.
    model : str, default "model"
        The column naming the model (renamed to ``model``).
    method : str, default "vanilla"
        The method every row gets.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``method``, ``metric``, ``value``; models in order of appearance, metrics in
        :data:`METRICS` order.
    """
    out = frame.melt(id_vars=[model], value_vars=[m for m in METRICS if m in frame.columns],
                     var_name="metric", value_name="value")
    out = out.rename(columns={model: "model"}).assign(method=method)
    out["_m"] = out["metric"].map({m: k for k, m in enumerate(METRICS)})
    out["_s"] = out["model"].map({s: k for k, s in enumerate(dict.fromkeys(frame[model]))})
    return out.sort_values(["_s", "_m"], kind="stable").drop(columns=["_m", "_s"])[["model", "method", "metric", "value"]]


def decision_comparison(*, by_labels: pd.DataFrame, by_classifier: pd.DataFrame, paper: pd.DataFrame,
                        paper_names: dict[str, str] | None = None) -> pd.DataFrame:
    """Table 5's vanilla metrics per source two ways, beside the paper: abstention decided by the
    released labels and by the offline classifier (VizWiz-LF Table 5; the diagnosis of its GPT-4V row).

    Parameters
    ----------
    by_labels, by_classifier : pandas.DataFrame
        ``source`` and the :data:`METRICS` columns (:func:`abstention_metrics`), decided by the
        released labels and by the offline classifier.
    paper : pandas.DataFrame
        Table 5 from :func:`vqalib.core.report.load_paper_table` (its ``vanilla`` rows are used).
    paper_names : dict of str to str, optional
        Maps our source names to the paper's (``InstructBLIP`` -> ``InstBLIP``).

    Returns
    -------
    pandas.DataFrame
        One row per (model, metric): ``released_labels``, ``offline_classifier``, ``paper`` and
        ``closer_to_paper`` ("released labels", "offline classifier", "tie" or None without a paper value).
    """
    names = paper_names or {}
    out = (long_format(by_labels, model="source").rename(columns={"value": "released_labels"})
           .merge(long_format(by_classifier, model="source").rename(columns={"value": "offline_classifier"}),
                  on=["model", "method", "metric"], how="outer", sort=False))
    printed = paper.loc[paper["method"] == "vanilla", ["model", "metric", "paper"]]
    out = out.assign(_paper_model=out["model"].replace(names)).merge(
        printed.rename(columns={"model": "_paper_model"}), on=["_paper_model", "metric"], how="left").drop(columns="_paper_model")
    gap_labels, gap_classifier = (out["released_labels"] - out["paper"]).abs(), (out["offline_classifier"] - out["paper"]).abs()
    out["closer_to_paper"] = np.select([out["paper"].isna(), gap_labels < gap_classifier, gap_classifier < gap_labels],
                                       [None, "released labels", "offline classifier"], default="tie")
    order = {m: k for k, m in enumerate(dict.fromkeys(by_labels["source"]))}  # outer merges sort: restore rows
    out = out.assign(_s=out["model"].map(order), _m=out["metric"].map({m: k for k, m in enumerate(METRICS)}))
    out = out.sort_values(["_s", "_m"], kind="stable", na_position="last").reset_index(drop=True)
    return out[["model", "metric", "released_labels", "offline_classifier", "paper", "closer_to_paper"]]


def answerability_agreement(answers: pd.DataFrame, *, source: str = "Expert") -> pd.DataFrame:
    """Expert abstention vs crowd answerability: the counts behind §7.2's "52%", "99 of 230", "61 of 370".

    An expert "answers" a question when the expert's answer does not abstain.

    Parameters
    ----------
    answers : pandas.DataFrame
        The release's answers with ``source``, ``answerability`` and ``abstains``.
    source : str, default "Expert"
        The source compared with the crowd.

    Returns
    -------
    pandas.DataFrame
        ``quantity``, ``count`` and ``share`` (missing where no share applies).
    """
    a = answers[answers["source"] == source]
    crowd_unans = a["answerability"].eq("unanswerable")
    expert_abstains = a["abstains"].astype(bool)
    agree = (crowd_unans == expert_abstains)
    rows = [
        ("questions", len(a), None),
        ("expert and crowd agree on answerability", int(agree.sum()), float(agree.mean())),
        ("crowd unanswerable", int(crowd_unans.sum()), None),
        ("crowd unanswerable, answered by the expert", int((crowd_unans & ~expert_abstains).sum()),
         float((crowd_unans & ~expert_abstains).sum() / max(crowd_unans.sum(), 1))),
        ("crowd answerable", int((~crowd_unans).sum()), None),
        ("crowd answerable, not answered by the expert", int((~crowd_unans & expert_abstains).sum()),
         float((~crowd_unans & expert_abstains).sum() / max((~crowd_unans).sum(), 1))),
    ]
    return pd.DataFrame(rows, columns=["quantity", "count", "share"])


DEFINITIONS: dict[str, str] = {
    "any Answer Failure (paper, §7.1)": "at least one sentence has Answer Failure",
    "Answer Failure and no Answer": "at least one Answer Failure sentence and no Answer sentence",
    "any failure role": "at least one sentence has Answer Failure or Auxiliary Failure",
    "half the sentences Answer Failure": "at least half of the labelled sentences have Answer Failure",
    "first sentence Answer Failure": "the first labelled sentence has Answer Failure",
}


def definition_variants(answers: pd.DataFrame, sentences: pd.DataFrame) -> pd.DataFrame:
    """Abstention metrics per source under alternative abstention definitions (Table 5 diagnosis).

    Each row of :data:`DEFINITIONS` is applied to the released sentence labels; used to test
    whether a different definition explains a paper cell that the §7.1 rule does not.

    Parameters
    ----------
    answers : pandas.DataFrame
        The release's answers (``source``, ``question_id``, ``answerability``).
    sentences : pandas.DataFrame
        The release's sentences (``source``, ``question_id``, ``sentence_index``, ``roles``); an answer
        without sentences does not abstain under any definition.

    Returns
    -------
    pandas.DataFrame
        :func:`abstention_metrics` rows per source with ``definition``, one block per definition.
    """
    per_sentence = sentences.assign(
        af=sentences["roles"].map(lambda r: ABSTAIN_ROLE in r),
        fail=sentences["roles"].map(lambda r: ABSTAIN_ROLE in r or "Auxiliary Failure" in r),
        ans=sentences["roles"].map(lambda r: "Answer" in r))
    grouped = per_sentence.sort_values("sentence_index").groupby(["source", "question_id"], sort=False)
    flags = pd.DataFrame({
        "any Answer Failure (paper, §7.1)": grouped["af"].any(),
        "Answer Failure and no Answer": grouped["af"].any() & ~grouped["ans"].any(),
        "any failure role": grouped["fail"].any(),
        "half the sentences Answer Failure": grouped["af"].mean() >= 0.5,
        "first sentence Answer Failure": grouped["af"].first(),
    })
    merged = answers[["source", "question_id", "answerability"]].merge(
        flags.reset_index(), on=["source", "question_id"], how="left").fillna({k: False for k in DEFINITIONS})
    rows = []
    for name in DEFINITIONS:
        m = abstention_metrics(merged.assign(decision=merged[name].astype(bool)), decision="decision")
        rows.append(m.assign(definition=name))
    return pd.concat(rows, ignore_index=True)


# runner strategy -> the method names of Tables 5 and 26
TABLE26_METHODS = {"vanilla": "vanilla", "abstention": "instruction", "self-correction": "correction",
                   "self-consistency": "consistency", "abstention-consistency": "instruct.+consist."}
PAPER_MODELS = {"llava-1.5-13b": "LLaVA", "llava-1.5-7b": "LLaVA", "blip2-flan-t5-xxl": "BLIP-2",
                "instructblip-flan-t5-xxl": "InstructBLIP", "qwen2-vl-7b-instruct": "QWEN"}


def label_runs(records: pd.DataFrame, gold: pd.DataFrame, *, labeller) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Label the final answers of VizWiz-LF model runs (input of Tables 5/26 strategy rows and Fig. 3).

    Error records are kept as answer rows with ``kind == "error"`` (counted, not scored); records of
    questions not in ``gold`` are dropped and counted in ``answers.attrs["not_in_gold"]``.

    Parameters
    ----------
    records : pandas.DataFrame
        Final runner records (``vqalib.runner.handoff.load_run(..., finals_only=True)``).
    gold : pandas.DataFrame
        ``question_id``, ``question`` and ``answerability`` per question.
    labeller : callable
        Turns a frame with id columns, question and answer into ``(sentences, answers)`` as
        :func:`vqalib.papers.vizwiz_lf.labelling.label_answers` does.

    Returns
    -------
    tuple of pandas.DataFrame
        ``(sentences, answers)`` of the labeller with ``model`` (the paper's name), ``run_model``,
        ``strategy``, ``method`` (Table 26's name) and, per answer, ``kind`` and ``answerability``.
    """
    ids = ["run_model", "strategy", "question_id"]
    finals = records.assign(run_model=records["model"], question_id=records["question_id"].astype(str))
    gold = gold.assign(question_id=gold["question_id"].astype(str))  # run records carry ids as text
    known = finals["question_id"].isin(gold["question_id"])
    finals = finals[known].merge(gold[["question_id", "question", "answerability"]], on="question_id",
                                 how="left", suffixes=("_run", ""))
    answered = finals["kind"] != "error"
    frame = finals.loc[answered, ids + ["question"]].assign(
        answer=finals.loc[answered, "answer"].fillna("").astype(str))
    sentences, labelled = labeller(frame.reset_index(drop=True))
    errors = finals.loc[~answered, ids].assign(kind="error")
    answers = pd.concat([labelled.assign(kind="answer"), errors], ignore_index=True)
    answers = answers.merge(gold[["question_id", "answerability"]], on="question_id", how="left")
    answers.attrs["not_in_gold"] = int((~known).sum())
    for frame_ in (sentences, answers):
        frame_["model"] = frame_["run_model"].map(lambda m: PAPER_MODELS.get(m, m))
        frame_["method"] = frame_["strategy"].map(lambda s: TABLE26_METHODS.get(s, s))
    return sentences, answers


def strategy_metrics(answers: pd.DataFrame) -> pd.DataFrame:
    """Abstention metrics of model runs per (model, strategy) (Tables 5 and 26 strategy rows).

    Parameters
    ----------
    answers : pandas.DataFrame
        The second frame of :func:`label_runs`; error rows are counted in ``errors``, not scored.

    Returns
    -------
    pandas.DataFrame
        One row per (run model, strategy) with scored answers: ``run_model``, ``model``, ``strategy``,
        ``method``, ``n``, ``errors`` and the :data:`METRICS`.
    """
    rows = []
    for (run_model, strategy), group in answers.groupby(["run_model", "strategy"], sort=False):
        scored = group[group["kind"] != "error"]
        if scored.empty:
            continue
        scores = abstention_scores(unanswerable=scored["answerability"].eq("unanswerable").to_numpy(),
                                   abstained=scored["abstains"].to_numpy(dtype=bool))
        rows.append({"run_model": run_model, "model": group["model"].iloc[0], "strategy": strategy,
                     "method": group["method"].iloc[0], "n": len(scored), "errors": int(len(group) - len(scored)),
                     **scores})
    return pd.DataFrame(rows)


def ans_acc_pairs(run_answers: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """LAVE pairs for the ans-acc of model runs: each run answer against the question's crowd
    answer (Table 5 ans-acc, "prompt" column), shaped for :func:`vqalib.papers.vizwiz_lf.table4.score_with_judge`.

    Parameters
    ----------
    run_answers : pandas.DataFrame
        The second frame of :func:`label_runs` (error rows are left out).
    answers : pandas.DataFrame
        The release's answers (``crowd_majority`` and ``crowd_answers`` per question).

    Returns
    -------
    pandas.DataFrame
        One row per scored run answer: ids, ``question``, ``answer``, ``reference`` (the crowd
        majority), ``crowd_answers``, ``source`` (the paper's model name), ``candidate`` and ``whole_answer``.
    """
    crowd = (answers.drop_duplicates("question_id")[["question_id", "crowd_majority", "crowd_answers"]]
             .assign(question_id=lambda f: f["question_id"].astype(str)))
    scored = run_answers[run_answers["kind"] != "error"]
    pairs = scored[["model", "run_model", "strategy", "method", "question_id", "question", "answer"]].merge(
        crowd, on="question_id", how="left")
    return pairs.rename(columns={"crowd_majority": "reference"}).assign(
        source=pairs["model"], candidate=pairs["answer"], whole_answer=pairs["answer"])


def ans_acc(scores: pd.DataFrame, *, by: tuple[str, ...] = ("model", "strategy", "method")) -> pd.DataFrame:
    """Mean LAVE score per group of judge-scored pairs (Table 5 ans-acc).

    Parameters
    ----------
    scores : pandas.DataFrame
        Judge scores (``score``) of :func:`ans_acc_pairs` or of the released answers' pairs.
    by : tuple of str, default ("model", "strategy", "method")
        Grouping columns: the run pairs' default, or ``("source",)`` for the released answers.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, ``value`` (the mean score) and ``metric`` = "ans-acc".
    """
    return (scores.groupby(list(by), sort=False)["score"].mean().rename("value").reset_index()
            .assign(metric="ans-acc"))


def strategy_role_mix(sentences: pd.DataFrame, *, methods: tuple[str, ...] = ("vanilla", "instruction"),
                      released: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of role annotations per model before and after the abstention instruction (Fig. 3).

    A model with an instruction run but no vanilla run gets its "before" bar from ``released``
    when the release has that model.

    Parameters
    ----------
    sentences : pandas.DataFrame
        The first frame of :func:`label_runs`.
    methods : tuple of str, default ("vanilla", "instruction")
        The methods compared; the first is the "before" bar.
    released : pandas.DataFrame, optional
        The release's sentences (``source`` and ``roles``).

    Returns
    -------
    pandas.DataFrame
        One row per (model, method, role): ``source`` = "<model> · <method>", ``model``, ``method``,
        ``origin`` ("run" or "release"), ``label``, ``count``, ``n_annotations`` and ``percent``,
        models in order of appearance.
    """
    parts = []
    runs = sentences[sentences["method"].isin(methods)]
    for model in dict.fromkeys(runs["model"]):
        mine = runs[runs["model"] == model]
        for method in methods:
            chosen = mine[mine["method"] == method].assign(origin="run")
            if chosen.empty and method == methods[0] and released is not None:
                chosen = released[released["source"] == model].assign(origin="release")
            if not chosen.empty:
                parts.append(chosen[["roles", "origin"]].assign(source=f"{model} · {method}", model=model,
                                                                method=method))
    if not parts:
        return pd.DataFrame(columns=["source", "model", "method", "origin", "label", "count", "n_annotations",
                                     "percent"])
    pooled = pd.concat(parts, ignore_index=True)
    out = annotation_distribution(pooled, kind="role")
    keys = pooled.drop_duplicates("source").set_index("source")[["model", "method", "origin"]]
    return out.join(keys, on="source")[["source", "model", "method", "origin", "label", "count", "n_annotations",
                                          "percent"]]
