"""Abstention of long-form answers (VizWiz-LF §7, Tables 5, 26, A.4.1): an answer abstains when a sentence has the
Answer Failure role (§7.1); crowd-unanswerable is the positive class; baselines Random (at that rate), Majority."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, precision_recall_fscore_support

from vqalib.papers.vizwiz_lf.roles import annotation_distribution

METRICS = ("abs-acc", "abs-prec", "abs-recall", "abs-f1", "abs-%")
ABSTAIN_ROLE = "Answer Failure"


def abstains(roles: pd.Series) -> pd.Series:
    """True where an answer's role collection contains Answer Failure (§7.1).

    Parameters
    ----------
    roles : pandas.Series
    """
    return roles.map(lambda r: ABSTAIN_ROLE in r).astype(bool)


def abstention_scores(*, unanswerable: np.ndarray, abstained: np.ndarray) -> dict[str, float]:
    """The :data:`METRICS` of one set of decisions (Table 5); never abstaining gives precision 0 as the paper prints."""
    y_true = np.asarray(unanswerable, dtype=bool)
    y_pred = np.asarray(abstained, dtype=bool)
    if y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(f"need two equally long, non-empty arrays, got {y_true.shape} and {y_pred.shape}")
    prec, rec, f1, _ = precision_recall_fscore_support(y_true, y_pred, average="binary", pos_label=True,
                                                       zero_division=0)
    return {"abs-acc": float(accuracy_score(y_true, y_pred)), "abs-prec": float(prec), "abs-recall": float(rec),
            "abs-f1": float(f1), "abs-%": 100.0 * float(y_pred.mean())}


def abstention_metrics(answers: pd.DataFrame, *, decision: str = "abstains", by: str = "source") -> pd.DataFrame:
    """Abstention metrics per ``by`` group from a boolean ``decision`` column (Table 5 vanilla rows).

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per answer with ``answerability``, ``decision`` and ``by`` columns.
    decision : str, default "abstains"
    by : str, default "source"
    """
    rows = []
    for key, group in answers.groupby(by, sort=False):
        scores = abstention_scores(unanswerable=group["answerability"].eq("unanswerable").to_numpy(),
                                   abstained=group[decision].to_numpy(dtype=bool))
        rows.append({by: key, "n": len(group), **scores})
    return pd.DataFrame(rows)


def random_baseline(unanswerable: np.ndarray, *, n_draws: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The Random baseline (Table 5): its expectation and the mean and SD of seeded draws; cached by content.

    Parameters
    ----------
    unanswerable : numpy.ndarray of bool
    n_draws : int, default 1000
    seed : int, default 0
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
    """Always answer (the majority class): Table 5's Majority row, from gold answerability (True: unanswerable)."""
    gold = np.asarray(unanswerable, dtype=bool)
    return abstention_scores(unanswerable=gold, abstained=np.zeros_like(gold))


def long_format(frame: pd.DataFrame, *, model: str = "model", method: str = "vanilla") -> pd.DataFrame:
    """One row per (model, method, metric): the layout of the paper's Tables 5 and 26 in ``data/paper/``."""
    out = frame.melt(id_vars=[model], value_vars=[m for m in METRICS if m in frame.columns],
                     var_name="metric", value_name="value")
    out = out.rename(columns={model: "model"}).assign(method=method)
    out["_m"] = out["metric"].map({m: k for k, m in enumerate(METRICS)})
    out["_s"] = out["model"].map({s: k for k, s in enumerate(dict.fromkeys(frame[model]))})
    return out.sort_values(["_s", "_m"], kind="stable").drop(columns=["_m", "_s"])[["model", "method", "metric", "value"]]


def decision_comparison(*, by_labels: pd.DataFrame, by_classifier: pd.DataFrame, paper: pd.DataFrame,
                        paper_names: dict[str, str] | None = None) -> pd.DataFrame:
    """Table 5's vanilla metrics decided by the released labels and by the offline classifier, beside the ``paper``.

    Parameters
    ----------
    by_labels, by_classifier : pandas.DataFrame
        :func:`abstention_metrics` output of each decision.
    paper : pandas.DataFrame
    paper_names : dict of str to str, optional
        Our source names -> the paper's.
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

    Parameters
    ----------
    answers : pandas.DataFrame
        The release's answers with ``source``, ``answerability`` and ``abstains``.
    source : str, default "Expert"
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
    """Abstention metrics per source under the alternative :data:`DEFINITIONS` (Table 5 diagnosis).

    Parameters
    ----------
    answers : pandas.DataFrame
        The release's answers (``source``, ``question_id``, ``answerability``).
    sentences : pandas.DataFrame
        The release's sentences; an answer without sentences never abstains.
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
    """``(sentences, answers)`` of model runs' final answers labelled by ``labeller`` (Tables 5/26, Fig. 3); errors stay
    as ``kind == "error"`` rows, questions not in ``gold`` are counted in ``attrs["not_in_gold"]``."""
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
    """Abstention metrics of model runs per (model, strategy) (Tables 5, 26 strategy rows); errors counted."""
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
    """LAVE pairs for the ans-acc of model runs: each run answer against the crowd majority (Table 5 ans-acc).

    Parameters
    ----------
    run_answers : pandas.DataFrame
        The second frame of :func:`label_runs`.
    answers : pandas.DataFrame
        The release's answers (``crowd_majority`` and ``crowd_answers``).
    """
    crowd = (answers.drop_duplicates("question_id")[["question_id", "crowd_majority", "crowd_answers"]]
             .assign(question_id=lambda f: f["question_id"].astype(str)))
    scored = run_answers[run_answers["kind"] != "error"]
    pairs = scored[["model", "run_model", "strategy", "method", "question_id", "question", "answer"]].merge(
        crowd, on="question_id", how="left")
    return pairs.rename(columns={"crowd_majority": "reference"}).assign(
        source=pairs["model"], candidate=pairs["answer"], whole_answer=pairs["answer"])


def ans_acc(scores: pd.DataFrame, *, by: tuple[str, ...] = ("model", "strategy", "method")) -> pd.DataFrame:
    """Mean LAVE score per group of judge-scored pairs (Table 5 ans-acc)."""
    return (scores.groupby(list(by), sort=False)["score"].mean().rename("value").reset_index()
            .assign(metric="ans-acc"))


def strategy_role_mix(sentences: pd.DataFrame, *, methods: tuple[str, ...] = ("vanilla", "instruction"),
                      released: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of role annotations per model before and after the abstention instruction (Fig. 3); without a vanilla run
    the "before" bar (first of ``methods``) comes from ``released``.

    Parameters
    ----------
    sentences : pandas.DataFrame
        The first frame of :func:`label_runs`.
    methods : tuple of str, default ("vanilla", "instruction")
    released : pandas.DataFrame, optional
        The release's sentences (``source`` and ``roles``).
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
