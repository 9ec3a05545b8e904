"""Functional roles and information sources of long-form answers (VizWiz-LF §4.1, A.2.3): shares by
answerability (Tables 2-3), annotation shares per source (Tables 15-16), role x source counts (Fig. 5)."""

from __future__ import annotations

import pandas as pd

from vqalib.papers.vizwiz_lf import taxonomy


def _labels_and_names(kind: str) -> tuple[tuple[str, ...], str]:
    if kind == "role":
        return taxonomy.ROLES, "roles"
    if kind == "info":
        return taxonomy.INFO_SOURCES, "info_sources"
    raise ValueError(f"kind must be 'role' or 'info', not {kind!r}")


def answers_with_label(answers: pd.DataFrame, *, kind: str = "role",
                       by: str = "answerability") -> pd.DataFrame:
    """Percent of answers with a sentence of each label per source and ``by`` value: roles (Table 2), info (Table 3).

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per answer with ``source``, ``by`` and the label tuples.
    kind : {"role", "info"}, default "role"
    by : str, default "answerability"
    """
    labels, column = _labels_and_names(kind)
    rows = []
    for (source, level), group in answers.groupby(["source", by], sort=False):
        sets = group[column].map(set)
        for label in labels:
            hits = int(sets.map(lambda s, lab=label: lab in s).sum())
            rows.append({"source": source, "label": label, by: level, "n_answers": len(group),
                         "n_with_label": hits, "percent": 100.0 * hits / len(group)})
    out = pd.DataFrame(rows)
    out["label"] = pd.Categorical(out["label"], categories=labels, ordered=True)
    source_order = list(dict.fromkeys(answers["source"]))
    out["_s"] = out["source"].map({s: k for k, s in enumerate(source_order)})
    out = out.sort_values(["_s", "label", by], kind="stable").drop(columns="_s").reset_index(drop=True)
    out["label"] = out["label"].astype(str)
    return out


def annotation_distribution(sentences: pd.DataFrame, *, kind: str = "role",
                            totals: dict[str, list[str] | None] | None = None) -> pd.DataFrame:
    """Share of label annotations per source: roles (Table 15), info sources (Table 16); unknown labels not counted.

    Parameters
    ----------
    sentences : pandas.DataFrame
        One row per sentence with ``source`` and the label tuples.
    kind : {"role", "info"}, default "role"
    totals : dict of str to list of str or None, optional
        Pooled rows to add, name -> sources (None: all); the paper's ``Total`` pools GPT-4V, Gemini and Expert.
    """
    labels, column = _labels_and_names(kind)
    exploded = sentences[["source", column]].explode(column).dropna()
    exploded = exploded[exploded[column].isin(labels)]
    counts = (exploded.groupby(["source", column], sort=False).size()
              .unstack(fill_value=0).reindex(columns=list(labels), fill_value=0))
    counts = counts.reindex(list(dict.fromkeys(sentences["source"])))
    per_source = counts.copy()
    for name, pool in (totals or {}).items():
        counts.loc[name] = (per_source.loc[pool] if pool is not None else per_source).sum()
    rows = []
    for source, row in counts.iterrows():
        n = int(row.sum())
        for label in labels:
            rows.append({"source": source, "n_annotations": n, "label": label, "count": int(row[label]),
                         "percent": 100.0 * row[label] / n if n else float("nan")})
    return pd.DataFrame(rows)


def role_info_cooccurrence(sentences: pd.DataFrame) -> pd.DataFrame:
    """Sentences carrying each (role, information source) pair, roles as rows (Fig. 5); unknown labels left out.

    Parameters
    ----------
    sentences : pandas.DataFrame
        One row per sentence with ``roles`` and ``info_sources``.
    """
    pairs = sentences[["roles", "info_sources"]].explode("roles").explode("info_sources").dropna()
    pairs = pairs[pairs["roles"].isin(taxonomy.ROLES) & pairs["info_sources"].isin(taxonomy.INFO_SOURCES)]
    matrix = pd.crosstab(pairs["roles"], pairs["info_sources"])
    return matrix.reindex(index=list(taxonomy.ROLES), columns=list(taxonomy.INFO_SOURCES), fill_value=0)


def implied_paper_counts(comparison: pd.DataFrame) -> pd.DataFrame:
    """The annotation counts the paper's Tables 15 and 16 imply (its percentage of its own total), beside ours (A.2.3):
    ``count_diff`` is how many annotations of each label the paper counted fewer or more than the release holds.

    Parameters
    ----------
    comparison : pandas.DataFrame
        The comparison of :func:`annotation_distribution` with the paper (``paper_n_annotations``).
    """
    exact = comparison["paper"] * pd.to_numeric(comparison["paper_n_annotations"]) / 100.0
    return comparison.assign(paper_count_exact=exact, paper_count=exact.round(),
                             count_diff=comparison["count"] - exact.round())


def label_total_gap(table: pd.DataFrame) -> dict:
    """The source whose label total the paper's Table 15 or 16 puts farthest from the release's (README status):
    ``source``, ``paper_n`` (its total), ``n`` (the release's), ``gap`` ("324 more" or "58 fewer").

    Parameters
    ----------
    table : pandas.DataFrame
        The saved Table 15 or 16 comparison (``paper_n_annotations``, ``n_annotations`` per source).
    """
    totals = (table[~table["source"].astype(str).str.startswith("Total")]
              .dropna(subset=["paper_n_annotations"]).drop_duplicates("source"))
    diff = pd.to_numeric(totals["paper_n_annotations"]) - pd.to_numeric(totals["n_annotations"])
    row, gap = totals.loc[diff.abs().idxmax()], int(diff.loc[diff.abs().idxmax()])
    return {"source": row["source"], "paper_n": int(row["paper_n_annotations"]), "n": int(row["n_annotations"]),
            "gap": f"{abs(gap):,} {'more' if gap > 0 else 'fewer'}"}
