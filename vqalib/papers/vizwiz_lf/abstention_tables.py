"""Assembling VizWiz-LF Tables 5 and 26 and the alt text of Fig. 3 (§7, A.4.4; notebook 05) in the paper's
long format, with a "not run" row wherever a model run or a judge is missing."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vqalib.core.report import fill_not_run, not_run_rows
from vqalib.papers.vizwiz_lf.abstention import (ABSTAIN_ROLE, METRICS, ans_acc, label_runs, long_format,
                                                majority_baseline, strategy_metrics)


# --- assembling Tables 5 and 26 (notebook 05) -------------------------------------------------

TABLE26_STRATEGIES = ("instruction", "correction", "consistency", "instruct.+consist.")
TABLE5_PAPER_NAMES = {"InstructBLIP": "InstBLIP"}  # as Table 5 prints it
FIG3_ENABLE = ("vqalib run --dataset vizwiz-lf --strategy abstention --model <key> "
               "--out runs/<name>.jsonl (README, 'Generating model answers')")  # how Fig. 3's runs arise
_KEYS = ["model", "method", "metric"]


def _cells(models, *, method: str, metrics) -> pd.DataFrame:
    """One row per (model, metric) of a Table 5/26 method: ``model``, ``method``, ``metric``."""
    return pd.DataFrame([{"model": m, "method": method, "metric": metric} for m in models for metric in metrics],
                        columns=_KEYS)


def run_rows(run_metrics: pd.DataFrame, method: str, *, as_method: str) -> pd.DataFrame:
    """Long-format rows of one ``method``'s model runs, named ``as_method`` (Tables 5, 26; §7); empty without runs."""
    part = run_metrics[run_metrics["method"] == method]
    return long_format(part, method=as_method) if not part.empty else pd.DataFrame()


def score_runs(records: pd.DataFrame | None, answers: pd.DataFrame, *,
               labeller) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(sentences, answers, metrics)`` of labelled, scored model runs (Tables 5/26, Fig. 3); empty if no ``records``.

    Parameters
    ----------
    records : pandas.DataFrame or None
    answers : pandas.DataFrame
        The release's answers; the Expert rows give question and answerability.
    labeller : callable
        As in ``label_runs``.
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
        ``random_baseline`` output; its expectation row is used.
    per_source : pandas.DataFrame
        ``abstention_metrics`` with ``source`` renamed to ``model``.
    unanswerable : numpy.ndarray of bool
    """
    return pd.concat([random_rows.iloc[[0]].drop(columns="variant"),
                      pd.DataFrame([{"model": "Majority", **majority_baseline(unanswerable)}]),
                      per_source.drop(columns="n")], ignore_index=True)


def vanilla_ans_acc_pairs(answers: pd.DataFrame, sentences: pd.DataFrame) -> pd.DataFrame:
    """The pairs behind Table 5's vanilla ans-acc (§7): long answer (l_c) vs crowd answer (s_r).

    Parameters
    ----------
    answers, sentences : pandas.DataFrame
    """
    from vqalib.papers.vizwiz_lf.table4 import evaluation_pairs  # Table 4's pairing; imported late (heavy)
    pairs = evaluation_pairs(answers, sentences)
    return pairs[(pairs["reference_kind"] == "s_r") & (pairs["candidate_kind"] == "l_c")]


def table5(vanilla: pd.DataFrame, per_source: pd.DataFrame, run_metrics: pd.DataFrame, *, lave: pd.DataFrame | None = None,
           run_lave: pd.DataFrame | None = None, enable: str = "") -> pd.DataFrame:
    """Assemble VizWiz-LF Table 5 (§7) in long format (with ``status``), before comparison with the paper. The "prompt"
    column is "not run" except for Expert unless abstention-instruction runs fill it.

    Parameters
    ----------
    vanilla, per_source : pandas.DataFrame
        :func:`vanilla_rows`; ``abstention_metrics`` with ``source`` renamed to ``model``.
    run_metrics : pandas.DataFrame
        ``strategy_metrics`` of the model runs (may be empty).
    lave, run_lave : pandas.DataFrame, optional
        Judge scores of the vanilla and of the instructed runs' ans-acc pairs (None: not run).
    enable : str
        How to configure a judge (shown in the "not run" cells).
    """
    models = list(per_source["model"])
    if lave is None:
        ans = not_run_rows(_cells(models, method="vanilla", metrics=["ans-acc"]),
                           reason=f"ans-acc is LAVE against the crowd answer; {enable}")
    else:
        ans = ans_acc(lave, by=("source",)).rename(columns={"source": "model"}).assign(method="vanilla")
    other = not_run_rows(_cells([m for m in models if m != "Expert"], method="prompt", metrics=(*METRICS, "ans-acc")),
                         reason="no abstention-instruction outputs in runs/ (`vqalib run` writes them)")
    table = pd.concat([long_format(vanilla), ans, other], ignore_index=True)
    table = fill_not_run(table, run_rows(run_metrics, "instruction", as_method="prompt"), keys=_KEYS)
    if run_lave is not None:  # ans-acc of the instructed runs: LAVE against the crowd answer
        table = fill_not_run(table, ans_acc(run_lave).assign(method="prompt")[[*_KEYS, "value"]], keys=_KEYS)
    table["model"] = table["model"].replace(TABLE5_PAPER_NAMES)
    return table


def table26(vanilla: pd.DataFrame, per_source: pd.DataFrame, run_metrics: pd.DataFrame, *,
            strategies: tuple[str, ...] = TABLE26_STRATEGIES) -> pd.DataFrame:
    """Assemble VizWiz-LF Table 26 (§7, A.4.4) in long format (with ``status``), before comparison with the paper.
    Runs' vanilla rows are added as "vanilla (run)" beside the release's, never replacing them.

    Parameters
    ----------
    vanilla, per_source : pandas.DataFrame
        :func:`vanilla_rows`; ``abstention_metrics`` with ``source`` renamed to ``model``.
    run_metrics : pandas.DataFrame
        ``strategy_metrics`` of the model runs (may be empty).
    strategies : tuple of str
    """
    models = [m for m in per_source["model"] if m != "Expert"]
    table = pd.concat([long_format(per_source.drop(columns="n"))] + [
        not_run_rows(_cells(models, method=s, metrics=METRICS),
                     reason=f"no '{s}' outputs in runs/ (`vqalib run` writes them)")
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
        ``strategy_role_mix`` output.
    """
    failure = role_mix[role_mix["label"] == ABSTAIN_ROLE].set_index("source")["percent"]
    return ("Stacked horizontal bars, two per model (vanilla, then with the abstention instruction), showing the "
            "percentage of functional-role annotations of each role, labelled by the offline classifier. "
            "Answer Failure share: " + "; ".join(f"{k} {v:.0f}%" for k, v in failure.items()) + ".")
