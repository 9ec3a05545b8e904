"""A new model's CommVQA answers scored into Table 1 under both protocols, with the paired context effect (§5).

``vqalib score --dataset commvqa`` scores as notebook 08 does, so the release's IDEFICS baseline file given back
gives IDEFICS's row of ``figures/commvqa_table01_benchmark``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from vqalib.papers.commvqa.names import CONDITIONS

STRATEGY = {"baseline": "commvqa-baseline", "contextual": "commvqa-contextual"}
# what a CommVQA scorecard holds (the leaderboard and the site check a scorecard folder against it): its tables, and
# the (condition, metric, reference) of its per-question scores (Table 1's metrics; BLEU is corpus-level)
SCORECARD_TABLES = ("commvqa_table01_benchmark", "commvqa_table01_context_effect")
PER_QUESTION_KEYS = frozenset((c, m, "") for c in CONDITIONS for m in ("METEOR", "ROUGE", "CIDEr"))


def scorecard_question_ids(settings: dict, *, data_dir: Path | None = None) -> set[int]:
    """The question ids a CommVQA scorecard's per-question scores may name: the rows of ``annotations.json`` (§3).

    Parameters
    ----------
    settings : dict
        The scorecard's settings (one question set: not read).
    data_dir : Path, optional
    """
    from vqalib.core import io, upstream

    raw = io.read_json(upstream.verified_path("commvqa/annotations.json", data_dir=data_dir))
    return set(range(len(raw))) if isinstance(raw, list) else set()


def results_from_answers(matched: pd.DataFrame, *, model: str, condition: str, annotations: pd.DataFrame,
                         benchmark: pd.Series, file: str, released: pd.DataFrame | None = None) -> pd.DataFrame:
    """Answers keyed by annotation row as rows of the authors' result layout (Table 1 input).

    Parameters
    ----------
    matched : pandas.DataFrame
        ``item_id`` (the annotation row as text) and ``answer``.
    model : str
    condition : {"baseline", "contextual"}
    annotations : pandas.DataFrame
        ``CommVQA.annotations``.
    benchmark : pandas.Series
        The benchmark question ids; others are counted in ``attrs["counts"]`` and left out.
    file : str
        The answers file's name.
    released : pandas.DataFrame, optional
        ``CommVQA.results``: references are then the released files' (as the authors scored every model).
    """
    from vqalib.papers.commvqa.table1_runs import run_results

    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {CONDITIONS}, not {condition!r}")
    ids = matched["item_id"].astype(int)
    questions = annotations.set_index("question_id")["question"]
    records = pd.DataFrame({"strategy": STRATEGY[condition], "kind": "answer", "question_id": ids.to_numpy(),
                            "question": questions.reindex(ids).to_numpy(), "model": model, "run_file": file,
                            "answer": matched["answer"].to_numpy()})
    rows = run_results(records, annotations=annotations, benchmark=benchmark)
    if released is not None and len(rows):
        same = released[released["condition"] == condition].dropna(subset=["question_id"])
        same = same.drop_duplicates("question_id")
        refs = same.set_index(same["question_id"].astype(int))
        ids = rows["question_id"].astype(int)
        counts = rows.attrs.get("counts", {})
        rows = rows.assign(answers_raw=refs["answers_raw"].reindex(ids).to_numpy(),
                           references=refs["references"].reindex(ids).to_numpy())
        rows.attrs["counts"] = counts
    return rows


def results_from_authors_csv(path: str | Path, *, model: str, condition: str, data_dir: Path | None = None):
    """A result CSV in the authors' layout, read and matched to the annotations as the release's files are (Table 1).

    Parameters
    ----------
    path : str or Path
    model : str
    condition : {"baseline", "contextual"}
    data_dir : Path, optional
        The data folder holding the verified ``annotations.json``.
    """
    from vqalib.papers.commvqa.loading import load_commvqa

    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {CONDITIONS}, not {condition!r}")
    return load_commvqa(data_dir=data_dir, result_paths={(model, condition): Path(path)})


def score_commvqa(results: pd.DataFrame, *, n_resamples: int = 1000, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Table 1 rows of a new model under both protocols and, with both conditions, the context effect (§5).

    Parameters
    ----------
    results : pandas.DataFrame
        Rows of one model in the authors' result layout, one or both conditions.
    n_resamples, seed : int
        Bootstrap settings of the corrected protocol.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``commvqa_table01_benchmark``, ``per_question`` (the corrected protocol's per-question scores) and, with
        both conditions, ``commvqa_table01_context_effect``.
    """
    from vqalib.core.metrics.meteor import MeteorSession
    from vqalib.papers.commvqa.table1 import context_effect, score_protocol

    with MeteorSession() as meteor:
        authors = score_protocol(results, protocol="authors", seed=seed, meteor=meteor, progress=False)
        corrected = score_protocol(results, protocol="corrected", n_resamples=n_resamples, seed=seed, meteor=meteor,
                                   progress=False)
    columns = ["model", "condition", "metric", "protocol", "value", "ci_low", "ci_high", "n_rows",
               "n_empty_candidates"]
    table = pd.concat([authors.scores, corrected.scores], ignore_index=True)[columns]
    pq = corrected.per_question
    tables = {"commvqa_table01_benchmark": table,  # and the leaderboard's per-question scores, kept beside the tables
              "per_question": pd.DataFrame({"condition": pq["condition"], "metric": pq["metric"], "reference": "",
                                            "question_id": pq["question_id"], "score": pq["score"]})}
    conditions = set(results["condition"])
    if conditions == set(CONDITIONS):
        ids = [set(results.loc[results["condition"] == c, "question_id"]) for c in CONDITIONS]
        if ids[0] == ids[1]:
            tables["commvqa_table01_context_effect"] = context_effect(corrected)
        else:  # paired only on the questions both conditions answered
            common = ids[0] & ids[1]
            both = results[results["question_id"].isin(common)]
            paired = score_protocol(both, protocol="corrected", n_resamples=n_resamples, seed=seed, progress=False)
            tables["commvqa_table01_context_effect"] = context_effect(paired).assign(
                note=f"paired on the {len(common)} questions answered under both conditions")
    return tables
