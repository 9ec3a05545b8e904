"""Abstention of long-form answers (VizWiz-LF §7, Tables 5 and 26, A.4.1).

An answer abstains when at least one of its sentences has the Answer Failure role
(§7.1). Gold answerability is VizWiz's crowd label; abstaining is the positive class.
Metrics: abs-acc, abs-prec, abs-recall, abs-f1 (scikit-learn) and abs-% (share of
answers that abstain, in percent). Baselines: Random (abstain at the unanswerable rate)
and Majority (always answer).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, precision_recall_fscore_support

from vqalib.core.report import fill_not_run
from vqalib.papers.vizwiz_lf.roles import annotation_distribution

METRICS = ("abs-acc", "abs-prec", "abs-recall", "abs-f1", "abs-%")
ABSTAIN_ROLE = "Answer Failure"


def abstains(roles: pd.Series) -> pd.Series:
    """True where an answer's role set contains Answer Failure (§7.1)."""
    return roles.map(lambda r: ABSTAIN_ROLE in r).astype(bool)


def abstention_scores(*, unanswerable: np.ndarray, abstained: np.ndarray) -> dict[str, float]:
    """abs-acc, abs-prec, abs-recall, abs-f1 and abs-% of one set of decisions (Table 5).

    Precision of a model that never abstains is 0 (scikit-learn's ``zero_division=0``), as
    the paper's Majority row prints.
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

    ``answers`` needs ``answerability`` and the decision column; returns one row per
    group with ``n`` and the five metrics.
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
    """
    gold = np.asarray(unanswerable, dtype=bool)
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
    """Always answer (the majority class, answerable): Table 5's Majority row."""
    gold = np.asarray(unanswerable, dtype=bool)
    return abstention_scores(unanswerable=gold, abstained=np.zeros_like(gold))


def long_format(frame: pd.DataFrame, *, model: str = "model", method: str = "vanilla") -> pd.DataFrame:
    """One row per (model, method, metric): the layout of ``paper_tables`` Tables 5 and 26."""
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

    ``by_labels`` and ``by_classifier`` have ``source`` and the :data:`METRICS` columns
    (:func:`abstention_metrics`); ``paper`` is Table 5 from :func:`vqalib.report.load_paper_table`;
    ``paper_names`` maps our source names to the paper's (``InstructBLIP`` -> ``InstBLIP``).
    One row per (model, metric) with both values, the paper's, and which one is closer to it.
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

    ``records`` are final runner records (``vqalib.vqa.load_run(..., finals_only=True)``);
    ``gold`` has question_id, question and answerability; ``labeller`` turns a frame with id
    columns, question and answer into ``(sentences, answers)`` as
    :func:`vqalib.classify.label_answers` does. Returns those two frames with ``model`` (the
    paper's name), ``run_model``, ``strategy``, ``method`` (Table 26's name) and, per answer,
    ``answerability``. Error records are kept as answer rows with ``kind == "error"`` (counted,
    not scored); records of questions not in ``gold`` are dropped and counted in ``not_in_gold``.
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

    ``answers`` is the second frame of :func:`label_runs`; error rows are counted in
    ``errors``, not scored.
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
    answer (Table 5 ans-acc, "prompt" column), shaped for :func:`vqalib.metrics.score_with_judge`.

    ``run_answers`` is the second frame of :func:`label_runs` (error rows are left out);
    ``answers`` the release's answers (crowd_majority and crowd_answers per question).
    """
    crowd = (answers.drop_duplicates("question_id")[["question_id", "crowd_majority", "crowd_answers"]]
             .assign(question_id=lambda f: f["question_id"].astype(str)))
    scored = run_answers[run_answers["kind"] != "error"]
    pairs = scored[["model", "run_model", "strategy", "method", "question_id", "question", "answer"]].merge(
        crowd, on="question_id", how="left")
    return pairs.rename(columns={"crowd_majority": "reference"}).assign(
        source=pairs["model"], candidate=pairs["answer"], whole_answer=pairs["answer"])


def ans_acc(scores: pd.DataFrame, *, by: tuple[str, ...] = ("model", "strategy", "method")) -> pd.DataFrame:
    """Mean LAVE score per group of judge-scored pairs (Table 5 ans-acc): the run pairs of
    :func:`ans_acc_pairs` by default, or the released answers' pairs ``by=("source",)``."""
    return (scores.groupby(list(by), sort=False)["score"].mean().rename("value").reset_index()
            .assign(metric="ans-acc"))


def strategy_role_mix(sentences: pd.DataFrame, *, methods: tuple[str, ...] = ("vanilla", "instruction"),
                      released: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of role annotations per model before and after the abstention instruction (Fig. 3).

    ``sentences`` is the first frame of :func:`label_runs`. A model with an instruction run
    but no vanilla run gets its "before" bar from ``released`` (the release's sentences with
    ``source`` and ``roles``) when the release has that model. One row per (model, method,
    role) with ``source`` = "<model> · <method>", ``origin`` ("run" or "release"), count
    and percent, models in order of appearance.
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


# --- assembling Tables 5 and 26 (notebook 05) -------------------------------------------------

TABLE26_STRATEGIES = ("instruction", "correction", "consistency", "instruct.+consist.")
TABLE5_PAPER_NAMES = {"InstructBLIP": "InstBLIP"}  # as Table 5 prints it
FIG3_ENABLE = ("python -m vqalib.vqa run --dataset vizwiz-lf --strategy abstention --model <key> "
               "--out runs/<name>.jsonl (README, 'Generating model answers')")  # how Fig. 3's runs arise
_KEYS = ["model", "method", "metric"]


def not_run_rows(models, *, method: str, metrics, status: str) -> pd.DataFrame:
    """"Not run" cells of Tables 5 and 26 (VizWiz-LF §7): one row per (model, metric) with ``status``.

    Parameters
    ----------
    models, metrics : iterable of str
        Model names in table order; metric names (e.g. :data:`METRICS`).
    method : str
        The table's method (column group), e.g. ``"prompt"``.
    status : str
        Why the cell has no value and how to enable it.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``method``, ``metric``, ``status``.
    """
    return pd.DataFrame([{"model": m, "method": method, "metric": metric, "status": status}
                         for m in models for metric in metrics], columns=[*_KEYS, "status"])


def run_rows(run_metrics: pd.DataFrame, method: str, *, as_method: str) -> pd.DataFrame:
    """Long-format rows of one strategy's model runs (Tables 5 and 26 strategy cells, VizWiz-LF §7).

    Parameters
    ----------
    run_metrics : pandas.DataFrame
        :func:`strategy_metrics` of the runs (``model``, ``method`` and the metric columns).
    method, as_method : str
        The runs' method (Table 26's name) and the name the rows get in the table (Table 5: "prompt").

    Returns
    -------
    pandas.DataFrame
        :func:`long_format` rows, or an empty frame when there are no runs of ``method``.
    """
    part = run_metrics[run_metrics["method"] == method]
    return long_format(part, method=as_method) if not part.empty else pd.DataFrame()


def score_runs(records: pd.DataFrame | None, answers: pd.DataFrame, *,
               labeller) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Label and score VizWiz-LF model runs (input of Tables 5/26 strategy cells and Fig. 3, §7).

    Parameters
    ----------
    records : pandas.DataFrame or None
        Final runner records (``vqalib.vqa.load_run(..., finals_only=True)``); None: no runs.
    answers : pandas.DataFrame
        The release's answers; the Expert rows give question and answerability.
    labeller : callable
        As in :func:`label_runs` (:func:`vqalib.classify.label_answers`).

    Returns
    -------
    tuple of pandas.DataFrame
        ``(sentences, answers, metrics)`` of :func:`label_runs` and :func:`strategy_metrics`
        (empty, with key columns, when ``records`` is None).
    """
    if records is None:
        return (pd.DataFrame(columns=["model", "method", "roles"]), pd.DataFrame(columns=["model", "method", "kind"]),
                pd.DataFrame(columns=["model", "method"]))
    gold = answers.loc[answers["source"] == "Expert", ["question_id", "question", "answerability"]]
    sentences, labelled = label_runs(records, gold, labeller=labeller)
    return sentences, labelled, strategy_metrics(labelled)


def vanilla_rows(random_rows: pd.DataFrame, per_source: pd.DataFrame, unanswerable: np.ndarray) -> pd.DataFrame:
    """The vanilla rows of VizWiz-LF Table 5, wide: Random (expectation), Majority, then each source.

    Parameters
    ----------
    random_rows : pandas.DataFrame
        :func:`random_baseline`; its first row (the expectation) is used.
    per_source : pandas.DataFrame
        :func:`abstention_metrics` with ``source`` renamed to ``model``.
    unanswerable : numpy.ndarray
        Gold answerability per question (True: unanswerable), for the Majority baseline.

    Returns
    -------
    pandas.DataFrame
        ``model`` and the :data:`METRICS` columns, one row per model.
    """
    return pd.concat([random_rows.iloc[[0]].drop(columns="variant"),
                      pd.DataFrame([{"model": "Majority", **majority_baseline(unanswerable)}]),
                      per_source.drop(columns="n")], ignore_index=True)


def vanilla_ans_acc_pairs(answers: pd.DataFrame, sentences: pd.DataFrame) -> pd.DataFrame:
    """The pairs behind Table 5's vanilla ans-acc (VizWiz-LF §7): long answer (l_c) vs crowd answer (s_r).

    Parameters
    ----------
    answers, sentences : pandas.DataFrame
        The release's answers and sentences.

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`vqalib.metrics.evaluation_pairs` with reference_kind "s_r" and candidate_kind "l_c".
    """
    from vqalib.papers.vizwiz_lf.table4 import evaluation_pairs  # Table 4's pairing; imported late (heavy)
    pairs = evaluation_pairs(answers, sentences)
    return pairs[(pairs["reference_kind"] == "s_r") & (pairs["candidate_kind"] == "l_c")]


def table5(vanilla: pd.DataFrame, per_source: pd.DataFrame, run_metrics: pd.DataFrame, *, lave: pd.DataFrame | None = None,
           run_lave: pd.DataFrame | None = None, enable: str = "") -> pd.DataFrame:
    """Assemble VizWiz-LF Table 5 (§7) in long format, before comparison with the paper.

    Vanilla rows (baselines and sources), their ans-acc (judge-scored, or "not run"), and the
    "prompt" column: "not run" for every model but Expert unless runs of the abstention
    instruction exist, whose metrics (and, with ``run_lave``, ans-acc) fill it.

    Parameters
    ----------
    vanilla, per_source : pandas.DataFrame
        :func:`vanilla_rows`; :func:`abstention_metrics` with ``source`` renamed to ``model``.
    run_metrics : pandas.DataFrame
        :func:`strategy_metrics` of the model runs (may be empty).
    lave, run_lave : pandas.DataFrame, optional
        Judge scores of :func:`vanilla_ans_acc_pairs` (None: ans-acc not run) and of the
        instructed runs' :func:`ans_acc_pairs`.
    enable : str
        How to configure a judge (shown in the "not run" ans-acc cells).

    Returns
    -------
    pandas.DataFrame
        ``model``, ``method``, ``metric``, ``value`` and ``status``; InstructBLIP named as
        Table 5 prints it.
    """
    models = list(per_source["model"])
    if lave is None:
        ans = not_run_rows(models, method="vanilla", metrics=["ans-acc"],
                           status=f"not run: ans-acc is LAVE against the crowd answer; {enable}")
    else:
        ans = ans_acc(lave, by=("source",)).rename(columns={"source": "model"}).assign(method="vanilla")
    other = not_run_rows([m for m in models if m != "Expert"], method="prompt", metrics=(*METRICS, "ans-acc"),
                         status="not run: no abstention-instruction outputs in runs/ (the VLM runner, "
                                "issue #8, writes them)")
    table = pd.concat([long_format(vanilla), ans, other], ignore_index=True)
    table = fill_not_run(table, run_rows(run_metrics, "instruction", as_method="prompt"), keys=_KEYS)
    if run_lave is not None:  # ans-acc of the instructed runs: LAVE against the crowd answer
        table = fill_not_run(table, ans_acc(run_lave).assign(method="prompt")[[*_KEYS, "value"]], keys=_KEYS)
    table["model"] = table["model"].replace(TABLE5_PAPER_NAMES)
    return table


def table26(vanilla: pd.DataFrame, per_source: pd.DataFrame, run_metrics: pd.DataFrame, *,
            strategies: tuple[str, ...] = TABLE26_STRATEGIES) -> pd.DataFrame:
    """Assemble VizWiz-LF Table 26 (§7, A.4.4) in long format, before comparison with the paper.

    Baselines (Random, Majority, Expert as methods of model "Baseline"), each source's vanilla
    rows, "not run" rows for every strategy, filled from model runs where they exist; the
    vanilla rows of runs are added as "vanilla (run)" beside the release's, never replacing them.

    Parameters
    ----------
    vanilla, per_source : pandas.DataFrame
        :func:`vanilla_rows`; :func:`abstention_metrics` with ``source`` renamed to ``model``.
    run_metrics : pandas.DataFrame
        :func:`strategy_metrics` of the model runs (may be empty).
    strategies : tuple of str
        Table 26's strategy methods.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``method``, ``metric``, ``value`` and ``status``.
    """
    models = [m for m in per_source["model"] if m != "Expert"]
    table = pd.concat([long_format(per_source.drop(columns="n"))] + [
        not_run_rows(models, method=s, metrics=METRICS,
                     status=f"not run: no '{s}' outputs in runs/ (the VLM runner, issue #8, writes them)")
        for s in strategies], ignore_index=True)
    table = fill_not_run(table, pd.concat([run_rows(run_metrics, m, as_method=m) for m in strategies]), keys=_KEYS)
    table = pd.concat([table, run_rows(run_metrics, "vanilla", as_method="vanilla (run)")], ignore_index=True)
    baselines = long_format(vanilla[vanilla["model"].isin(["Random", "Majority", "Expert"])])
    return pd.concat([baselines.assign(method=baselines["model"], model="Baseline"),
                      table[table["model"] != "Expert"]], ignore_index=True)


def role_mix_alt_text(role_mix: pd.DataFrame) -> str:
    """Alt text of VizWiz-LF Fig. 3 (role mix before/after the abstention instruction, §7).

    Parameters
    ----------
    role_mix : pandas.DataFrame
        :func:`strategy_role_mix` (``source``, ``label``, ``percent``).

    Returns
    -------
    str
        A description of the stacked bars with each bar's Answer Failure share.
    """
    failure = role_mix[role_mix["label"] == ABSTAIN_ROLE].set_index("source")["percent"]
    return ("Stacked horizontal bars, two per model (vanilla, then with the abstention instruction), showing the "
            "percentage of functional-role annotations of each role, labelled by the offline classifier. "
            "Answer Failure share: " + "; ".join(f"{k} {v:.0f}%" for k, v in failure.items()) + ".")
