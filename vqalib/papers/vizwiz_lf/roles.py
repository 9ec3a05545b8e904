"""Functional roles and information sources of long-form answers (VizWiz-LF §4.1, A.2.3).

Pure functions from the loader's frames to tidy tables: the share of answers with each
label by answerability (Tables 2 and 3), the share of all label annotations per source
(Tables 15 and 16), and role x information-source co-occurrence (Fig. 5).
"""

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
    """Percent of answers having at least one sentence with each label (Tables 2 and 3).

    Parameters
    ----------
    answers : pandas.DataFrame
        One row per answer with ``source``, ``by`` and the label tuples (``roles`` or ``info_sources``).
    kind : {"role", "info"}, default "role"
        Which labels (Table 2: roles, Table 3: information sources).
    by : str, default "answerability"
        The column to split answers by.

    Returns
    -------
    pandas.DataFrame
        One row per (source, label, ``by`` value) with ``n_answers``, ``n_with_label`` and
        ``percent`` (0-100). Sources keep their order of appearance in ``answers``, labels taxonomy order.
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
    """Share of all label annotations per source (Tables 15 and 16).

    An annotation is one label on one sentence. ``n_annotations`` is the source's count
    of canonical labels.

    Parameters
    ----------
    sentences : pandas.DataFrame
        One row per sentence with ``source`` and the label tuples (``roles`` or ``info_sources``);
        labels outside the taxonomy are not counted.
    kind : {"role", "info"}, default "role"
        Which labels (Table 15: roles, Table 16: information sources).
    totals : dict of str to list of str or None, optional
        Pooled rows to add, name -> sources to pool (``None``: all); the paper's ``Total`` pools
        GPT-4V, Gemini and Expert.

    Returns
    -------
    pandas.DataFrame
        One row per (source or pool, label): ``source``, ``n_annotations``, ``label``, ``count`` and
        ``percent`` (0-100; NaN for a source without annotations).
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
    """Sentences carrying each (role, information source) pair (Fig. 5).

    A matrix with roles as rows and information sources as columns; a sentence with two
    roles and one source adds one to two cells.

    Parameters
    ----------
    sentences : pandas.DataFrame
        One row per sentence with ``roles`` and ``info_sources`` tuples; labels outside the taxonomy
        are left out.

    Returns
    -------
    pandas.DataFrame
        Sentence counts, index :data:`~vqalib.papers.vizwiz_lf.taxonomy.ROLES`, columns
        :data:`~vqalib.papers.vizwiz_lf.taxonomy.INFO_SOURCES` (missing pairs 0).
    """
    pairs = sentences[["roles", "info_sources"]].explode("roles").explode("info_sources").dropna()
    pairs = pairs[pairs["roles"].isin(taxonomy.ROLES) & pairs["info_sources"].isin(taxonomy.INFO_SOURCES)]
    matrix = pd.crosstab(pairs["roles"], pairs["info_sources"])
    return matrix.reindex(index=list(taxonomy.ROLES), columns=list(taxonomy.INFO_SOURCES), fill_value=0)


def implied_paper_counts(comparison: pd.DataFrame) -> pd.DataFrame:
    """The annotation counts the paper's Tables 15 and 16 imply: its percentage of its own total
    (``paper`` × ``paper_n_annotations`` / 100), beside our count (VizWiz-LF A.2.3).

    A printed percentage of a printed total is a whole number of annotations give or take the rounding; where it
    is, ``count_diff`` says how many annotations of each label the paper counted fewer (negative) or more than
    the release holds, which is what moves its percentages.

    Parameters
    ----------
    comparison : pandas.DataFrame
        :func:`vqalib.core.report.compare` of :func:`annotation_distribution` (``count``, ``paper``,
        ``paper_n_annotations``).

    Returns
    -------
    pandas.DataFrame
        ``comparison`` with ``paper_count_exact`` (the product), ``paper_count`` (it rounded) and
        ``count_diff`` (our count minus ``paper_count``); missing where the paper prints no value.
    """
    exact = comparison["paper"] * pd.to_numeric(comparison["paper_n_annotations"]) / 100.0
    return comparison.assign(paper_count_exact=exact, paper_count=exact.round(),
                             count_diff=comparison["count"] - exact.round())
