"""CommVQA's stated numbers (§3–§5, Appendix A.2) beside ours (registry entry ``commvqa_text_facts``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vqalib.papers.commvqa.names import CONTEXTS, subsets_of

def load_text_facts(directory: str | Path | None = None) -> pd.DataFrame:
    """``data/paper/commvqa_text_facts.csv`` in the layout :func:`vqalib.core.report.compare` expects (CommVQA §3–§5).

    Parameters
    ----------
    directory : str or Path, optional
        Folder of the CSV (default: :func:`vqalib.core.report.paper_dir`).
    """
    from vqalib.core.report import paper_dir

    table = pd.read_csv(Path(directory or paper_dir()) / "commvqa_text_facts.csv", dtype=str, keep_default_na=False)
    printed = table["value"].str.strip()
    table["paper"] = pd.to_numeric(printed, errors="coerce")
    table["paper_decimals"] = printed.map(lambda s: len(s.split(".")[1]) if "." in s else 0)
    return table.drop(columns=["value"])


@dataclass(frozen=True)
class Fact:
    """One number we compute that the paper states (``relation``: ``same`` or ``analogous: why``)."""

    fact_id: str
    subset: str
    reproduced: float
    relation: str
    how: str


def compare_text_facts(facts: list[Fact], paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's stated numbers beside ours (§3–§5, A.2); only ``same`` quantities are judged.

    Parameters
    ----------
    facts : list of Fact
        :func:`paper_facts` output.
    paper : pandas.DataFrame
        :func:`load_text_facts` output.
    """
    from vqalib.core.report import compare

    ours = pd.DataFrame([f.__dict__ for f in facts])
    return compare(ours, "commvqa_text_facts", value="reproduced", paper=paper[paper["fact_id"].isin(set(ours["fact_id"]))])


def paper_facts(*, annotations: pd.DataFrame, answers: pd.DataFrame, hedges: pd.DataFrame, polar: pd.DataFrame,
                interrogatives: pd.DataFrame, classifier: pd.DataFrame | None = None,
                pairwise: pd.DataFrame | None = None, interaction: pd.DataFrame | None = None,
                overlap: pd.DataFrame | None = None) -> list[Fact]:
    """Our numbers for the paper's stated facts, per subset, percentages in percent (§3–§5, A.2).

    Only the benchmark subset is the paper's dataset, so only its numbers are ``same``; the release's are analogous.

    Parameters
    ----------
    annotations, answers : pandas.DataFrame
        ``CommVQA.annotations`` and ``CommVQA.answers``.
    hedges, polar, interrogatives : pandas.DataFrame
        :mod:`~vqalib.papers.commvqa.text` outputs.
    classifier, pairwise : pandas.DataFrame, optional
        Context classifier accuracies (6-way; pairwise).
    interaction : pandas.DataFrame, optional
        :func:`~vqalib.papers.commvqa.entities.org_person_interaction` output.
    overlap : pandas.DataFrame, optional
        :func:`~vqalib.papers.commvqa.entities.entity_overlap` output.
    """
    facts: list[Fact] = []

    def add(fact_id: str, subset: str, value: float, relation: str = "same", how: str = "") -> None:
        if subset == "release" and relation == "same":
            relation = "analogous: the full release, a larger population than the paper's dataset"
        facts.append(Fact(fact_id, subset, float(value), relation, how))

    for subset, ann in subsets_of(annotations):
        answered = ann[ann["n_answers"] > 0]
        pairs = ann.groupby(["image", "context"]).size()
        add("CV01", subset, len(ann), how="annotation rows (questions)")
        add("CV02", subset, answered["n_answers"].min(), how="fewest answers of an answered question")
        add("CV03", subset, ann["image"].nunique(), how="distinct images")
        add("CV04", subset, ann.groupby("image")["context"].nunique().mode().iloc[0],
            how="most common number of contexts per image")
        add("CV05", subset, pairs.min(), how="fewest questions of an image-context pair")
        add("CV07", subset, int(ann["n_answers"].sum()), how="human answers")
        add("CV08", subset, ann["context"].nunique(), how="distinct contexts")
        add("CV27", subset, len(pairs), how="distinct image-context pairs")
        add("CV30", subset, ann.drop_duplicates("image")["description"].str.len().mean(),
            "analogous: mean length of the released (final) descriptions, edited or not",
            "characters per description, one per image")
        ans = answers[answers["in_benchmark"]] if subset == "benchmark" else answers
        add("CV42", subset, ans["words"].mean(), how="mean white-space words per human answer")
        h = hedges[(hedges["subset"] == subset) & (hedges["context"] == "all")].set_index("hedge")["occurrences"]
        add("CV45", subset, h["appear(s) to be"], how="occurrences of 'appear to be' + 'appears to be'")
        add("CV46", subset, h["it looks like"], how="occurrences of 'it looks like'")
        p = polar[polar["subset"] == subset].iloc[0]
        add("CV62", subset, p["mean_chars"], how="mean characters of answers to polar questions (rule)")
        add("CV63", subset, 100 * p["share yes/no only"],
            how="% of answers to polar questions that are only yes/no")
        add("CV64", subset, p["polar_questions"], how="polar questions (rule: auxiliary first word, no 'or')")
        it = interrogatives[interrogatives["subset"] == subset].set_index(["word", "context"])
        add("CV38", subset, it.loc[("who", "social media"), "t"],
            how=f"Welch t, 'who' in social media vs rest (df {it.loc[('who', 'social media'), 'df']:.0f})")
        add("CV40", subset, it.loc[("what", "shopping"), "t"],
            how=f"Welch t, 'what' in shopping vs rest (df {it.loc[('what', 'shopping'), 'df']:.0f})")
        if interaction is not None:
            i = interaction[interaction["subset"] == subset].iloc[0]
            add("CV47", subset, i["log_odds_ratio"],
                how="interaction coefficient of a saturated Poisson log-linear model (statsmodels GLM): ORG vs "
                    "PERSON mentions x travel vs science magazines (reference levels ORG, science magazines)")
            add("CV48", subset, i["se"],
                how="SE of that interaction coefficient (model-based; the Wald SE of the 2 x 2 log odds ratio)")
        if subset == "release":
            add("CV25", subset, int(ann["unanswerable"].sum()),
                "analogous: rows flagged unanswerable in the release (the paper: questions excluded before release)",
                how="annotation rows with the unanswerable flag")
    add("CV36", "all", 100 / len(CONTEXTS), how="1/6 in percent (the paper prints 16)")
    if classifier is not None:
        add("CV37", "release", 100 * classifier["accuracy"].iloc[0],
            "analogous: MiniLM embeddings + logistic regression, not fine-tuned BERT", "6-way CV accuracy, %")
    if pairwise is not None:
        pw = pairwise.set_index(["context_a", "context_b"])["accuracy"]
        pick = lambda a, b: pw.get((a, b), pw.get((b, a), math.nan))  # noqa: E731
        add("CV31", "release", 100 * pick("shopping", "science magazines"),
            "analogous: MiniLM + logistic regression", "pairwise CV accuracy, %")
        add("CV32", "release", 100 * pick("science magazines", "news"),
            "analogous: MiniLM + logistic regression", "pairwise CV accuracy, %")
    if overlap is not None:
        o = overlap[overlap["model"] == "IDEFICS"].set_index("condition")
        rule = "analogous: spaCy entities, found = text in a human answer of the same question"
        if "baseline" in o.index:
            add("CV58", "benchmark", 100 * o.at["baseline", "share_found"], rule, "% of unique entities found")
        if "contextual" in o.index:
            add("CV59", "benchmark", 100 * o.at["contextual", "share_found"], rule, "% of unique entities found")
            add("CV60", "benchmark", 100 * o.at["contextual", "share_numeric_of_not_found"], rule,
                "% CARDINAL/ORDINAL/QUANTITY among entities not found")
            add("CV61", "benchmark", 100 * o.at["contextual", "share_date_time_of_not_found"], rule,
                "% DATE/TIME among entities not found")
    return facts


def text_facts_view(text_facts: pd.DataFrame, *, decimals: int = 3) -> pd.DataFrame:
    """The columns of the paper-facts comparison a reader needs, rounded (CommVQA §3–§5, A.2).

    Parameters
    ----------
    text_facts : pandas.DataFrame
        :func:`compare_text_facts` output.
    decimals : int
        Decimals of the numeric columns.
    """
    return text_facts[["fact_id", "subset", "description", "how", "reproduced", "paper", "diff", "within_tolerance",
                       "relation"]].round(decimals)
