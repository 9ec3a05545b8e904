"""Word counts of questions and answers (VizWiz-LF Table 1, §3); a word is a run of non-white-space
characters (``str.split()``), the definition that reproduces the paper's Table 1."""

from __future__ import annotations

import pandas as pd

from vqalib.papers.vizwiz_lf import taxonomy

TABLE1_COLUMNS: dict[str, str] = {  # paper column -> answer source (None: VizWiz columns)
    "Human": "Expert", "GPT-4V": "GPT-4V", "Gemini": "Gemini", "LLaVA": "LLaVA",
    "QWEN": "QWEN", "BLIP-2": "BLIP-2", "InstructBLIP": "InstructBLIP",
}


def count_words(text: str) -> int:
    """Number of white-space separated tokens (Table 1's unit).

    Parameters
    ----------
    text : str
    """
    return len(text.split())


def _summary(values: pd.Series) -> dict:
    values = values.astype("float64")
    return {"n": int(values.size), "mean_words": float(values.mean()), "sd_words": float(values.std(ddof=1))}


def word_count_table(answers: pd.DataFrame, *, question_source: str = "Expert",
                     columns: dict[str, str] | None = None) -> pd.DataFrame:
    """Mean and sample SD of words per category and in total (VizWiz-LF Table 1): ``Question``, ``Answer`` (the ten
    crowd answers per question, pooled) and each long-form source of ``columns``.

    Parameters
    ----------
    answers : pandas.DataFrame
    question_source : str, default "Expert"
        The source whose rows give the questions and crowd answers; ValueError when it has none.
    columns : dict of str to str, default :data:`TABLE1_COLUMNS`
    """
    questions = answers[answers["source"] == question_source]
    if questions.empty:
        raise ValueError(f"no answers from {question_source!r} to take the questions from")
    rows = []
    for category in (*taxonomy.QUESTION_TYPES, "Total"):
        def pick(frame: pd.DataFrame) -> pd.DataFrame:
            return frame if category == "Total" else frame[frame["question_type"] == category]
        q = pick(questions)
        rows.append({"category": category, "dataset": "VizWiz", "column": "Question",
                     **_summary(q["question_words"])})
        crowd = q["crowd_answer_words"].explode().astype("int64")
        rows.append({"category": category, "dataset": "VizWiz", "column": "Answer", **_summary(crowd)})
        for column, source in (TABLE1_COLUMNS if columns is None else columns).items():
            of_source = answers[answers["source"] == source]
            if of_source.empty:  # source not loaded: no column (a loaded source without answers in a category: n=0)
                continue
            a = pick(of_source)
            rows.append({"category": category, "dataset": "VizWiz-LF", "column": column,
                         **_summary(a["answer_words"])})
    return pd.DataFrame(rows)


def long_format(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 with one row per cell: ``statistic`` is ``mean_words`` or ``sd_words``.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`word_count_table` output.
    """
    return table.melt(id_vars=["category", "dataset", "column", "n"], value_vars=["mean_words", "sd_words"],
                      var_name="statistic", value_name="words")


def paper_layout(table: pd.DataFrame, *, decimals: int = 1) -> pd.DataFrame:
    """Table 1 as printed: categories as rows, columns as columns, cells "mean (SD)".

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`word_count_table` output.
    decimals : int, default 1
    """
    cells = table.assign(cell=[f"{m:.{decimals}f} ({s:.{decimals}f})"
                               for m, s in zip(table["mean_words"], table["sd_words"])])
    wide = cells.pivot(index="category", columns="column", values="cell")
    return wide.reindex(index=list(dict.fromkeys(table["category"])), columns=list(dict.fromkeys(table["column"])))


def pair_agreement(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per (category, column) mean/SD pair of a Table 1 comparison, whether both judged cells are within tolerance."""
    pairs = (comparison.dropna(subset=["within_tolerance"])
             .groupby(["category", "column"], sort=False)["within_tolerance"]
             .agg(cells="size", within="sum").reset_index())
    pairs["pair_within"] = pairs["within"] == pairs["cells"]
    return pairs
