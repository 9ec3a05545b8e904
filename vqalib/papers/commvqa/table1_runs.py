"""CommVQA Table 1 rows beyond the released answers (§5, Table 1): the VLM runner's answers shaped like the
authors' result files, and the cells we cannot compute."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vqalib.papers.commvqa.names import CONDITIONS, MODELS, PANDAS_DEFAULT_NA
from vqalib.papers.commvqa.table1 import table1_rows

# runner model keys and strategies (vqalib.runner) -> Table 1's model and condition names
# (runs of released models get their own "(run)" rows beside the released answers)
RUN_MODELS = {"idefics-9b-instruct": "IDEFICS (run)", "blip2-opt-2.7b": "BLIP-2 (run)", "llava-1.5-13b": "LLaVA (run)"}
RUN_CONDITIONS = {"commvqa-baseline": "baseline", "commvqa-contextual": "contextual"}


def run_results(records: pd.DataFrame, *, annotations: pd.DataFrame, benchmark: pd.Series) -> pd.DataFrame:
    """The VLM runner's answers as rows shaped like the authors' result files (CommVQA Table 1).

    Only benchmark questions are kept, so scores compare with the paper's; ``attrs["counts"]`` counts records dropped.

    Parameters
    ----------
    records : pandas.DataFrame
        Final runner records; only the strategies of :data:`RUN_CONDITIONS` are used.
    annotations : pandas.DataFrame
        ``CommVQA.annotations``.
    benchmark : pandas.Series
        The benchmark question ids.
    """
    columns = ["model", "condition", "file", "row", "image", "context", "question", "answers_raw", "references",
               "generated_answer", "pandas_na", "description", "question_id", "match", "run_model"]
    if "strategy" not in records:  # no records at all (no run files): no rows
        out = pd.DataFrame(columns=columns)
        out.attrs["counts"] = {"records": 0, "errors": 0, "outside_benchmark": 0, "question_text_differs": 0}
        return out
    frame = records[records["strategy"].isin(RUN_CONDITIONS)].copy()
    frame["question_id"] = pd.to_numeric(frame["question_id"], errors="coerce")
    counts = {"records": len(frame), "errors": int((frame["kind"] == "error").sum())}
    frame = frame[frame["kind"] != "error"]
    inside = frame["question_id"].isin(set(benchmark))
    counts["outside_benchmark"] = int((~inside).sum())
    frame = frame[inside].merge(annotations[["question_id", "image", "context", "description", "question", "answers"]],
                                on="question_id", how="left", suffixes=("_run", ""))
    same = frame["question_run"].astype(str).str.strip() == frame["question"].astype(str).str.strip()
    counts["question_text_differs"] = int((~same).sum())
    frame = frame[same]
    out = pd.DataFrame({
        "model": frame["model"].map(lambda m: RUN_MODELS.get(m, m)), "run_model": frame["model"],
        "condition": frame["strategy"].map(RUN_CONDITIONS), "file": frame["run_file"].map(lambda f: Path(f).name),
        "image": frame["image"], "context": frame["context"], "question": frame["question"],
        "answers_raw": frame["answers"].map(lambda a: repr(list(a))), "references": frame["answers"].map(tuple),
        "generated_answer": frame["answer"].fillna("").astype(str),
        "description": frame["description"], "question_id": frame["question_id"].astype(int), "match": "run"})
    out["pandas_na"] = out["generated_answer"].isin(PANDAS_DEFAULT_NA)
    out = out.sort_values(["model", "condition", "question_id"], kind="stable").reset_index(drop=True)
    out["row"] = out.groupby(["model", "condition"], sort=False).cumcount()
    out = out[columns]
    out.attrs["counts"] = counts
    return out


CLIPSCORE_NOT_RUN = ("CLIPScore needs the images (images.zip is not in the pinned release) and a CLIP model "
                     "(ViT-B/32); enable by adding both to the data registry and configuring a local CLIP model")


def clipscore_cells() -> pd.DataFrame:
    """The CLIPScore cells of CommVQA Table 1 (§5), which need the images and a CLIP model."""
    return pd.DataFrame([{"model": m, "condition": c, "metric": "CLIPScore"} for m in MODELS.values()
                         for c in CONDITIONS])


def benchmark_runs(runs: pd.DataFrame, *, include_test_runs: bool = False) -> pd.DataFrame:
    """The VLM runner's CommVQA run files whose answers become Table 1 rows (CommVQA Table 1, §5).

    Parameters
    ----------
    runs : pandas.DataFrame
        Run files found by ``vqalib.runner.handoff.discover_runs``.
    include_test_runs : bool
        Also keep runs of the runner's tiny random TEST models (tests only).
    """
    return runs[(runs["dataset"] == "commvqa") & (include_test_runs | ~runs["test_model"])]


def assemble_table1(scores: pd.DataFrame, *, run_scores: pd.DataFrame | None = None,
                    run_answers: pd.DataFrame | None = None) -> pd.DataFrame:
    """CommVQA Table 1 as reproduced (§5): released answers (authors' protocol), cells not run and the runner's rows.

    Parameters
    ----------
    scores : pandas.DataFrame
        ``score_protocol(results, protocol="authors").scores`` of the released result files.
    run_scores : pandas.DataFrame, optional
        The same of the runner's answers.
    run_answers : pandas.DataFrame, optional
        :func:`run_results` of the runner's records (counted in ``status``).
    """
    from vqalib.core.report import fill_not_run, not_run_rows

    table = pd.concat([table1_rows(scores).assign(status="reproduced (authors' protocol)"),
                       not_run_rows(clipscore_cells(), reason=CLIPSCORE_NOT_RUN)],
                      ignore_index=True)
    if run_scores is None or run_answers is None or run_answers.empty:
        return table
    run_rows = table1_rows(run_scores).merge(
        run_answers.groupby(["model", "condition"]).size().rename("n").reset_index(), on=["model", "condition"])
    run_rows = run_rows.assign(
        status=lambda f: "from runs/ (authors' protocol, " + f["n"].astype(str) + " of the benchmark rows)")
    return fill_not_run(table, run_rows.drop(columns="n"), keys=["model", "condition", "metric"])
