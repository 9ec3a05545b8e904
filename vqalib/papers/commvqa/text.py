"""CommVQA question and answer text analyses (§3, §4.2, §4.3, Appendix A.2.2): counts per context, answer length,
hedges, trigrams, polar questions and interrogative words, on the benchmark subset and the full release."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from scipy import stats as scistats

from vqalib.core.inference import mean_ci
from vqalib.papers.commvqa.names import CONTEXTS, subsets_of

def context_counts(annotations: pd.DataFrame) -> pd.DataFrame:
    """Questions, answers, images and image-context pairs per subset and context, then ``all`` (CommVQA §3, §4).

    Parameters
    ----------
    annotations : pandas.DataFrame
        ``CommVQA.annotations``.
    """
    rows = []
    for subset, ann in subsets_of(annotations):
        for context in (*CONTEXTS, "all"):
            part = ann if context == "all" else ann[ann["context"] == context]
            rows.append({"subset": subset, "context": context, "questions": len(part),
                         "answered_questions": int((part["n_answers"] > 0).sum()),
                         "unanswerable_flagged": int(part["unanswerable"].sum()),
                         "answers": int(part["n_answers"].sum()), "images": part["image"].nunique(),
                         "image_context_pairs": len(part[["image", "context"]].drop_duplicates())})
    return pd.DataFrame(rows)


def answer_length(answers: pd.DataFrame) -> pd.DataFrame:
    """Words and characters per human answer with a 95% t interval, per subset and context (CommVQA §4.3).

    Parameters
    ----------
    answers : pandas.DataFrame
        ``CommVQA.answers``.
    """
    rows = []
    for subset, part in subsets_of(answers):
        for context in ("all", *CONTEXTS):
            p = part if context == "all" else part[part["context"] == context]
            for unit in ("words", "chars"):
                mean, sd, lo, hi = mean_ci(p[unit].to_numpy())
                rows.append({"subset": subset, "context": context, "unit": unit, "n_answers": len(p),
                             "mean": mean, "sd": sd, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


# Hedges and expressions of uncertainty (§4.3). Each is a case-insensitive regular expression
# on word boundaries; the first two are the paper's trigrams.
HEDGES: dict[str, str] = {
    "appear(s) to be": r"\bappears? to be\b",
    "it looks like": r"\bit looks like\b",
    "looks like": r"\blooks? like\b",
    "seem(s) to": r"\bseems? to\b",
    "might/may/could be": r"\b(?:might|may|could) be\b",
    "maybe / perhaps": r"\b(?:maybe|perhaps)\b",
    "probably / possibly / likely": r"\b(?:probably|possibly|likely)\b",
    "I think / I believe / I guess": r"\bi (?:think|believe|guess)\b",
    "not sure / hard to tell / can't tell":
        r"\b(?:not sure|hard to (?:tell|say)|(?:can't|cannot|can not) (?:tell|see))\b",
}


def hedge_counts(answers: pd.DataFrame, *, hedges: dict[str, str] | None = None) -> pd.DataFrame:
    """Occurrences of each hedge and the share of answers with one, per subset and context (CommVQA §4.3).

    Parameters
    ----------
    answers : pandas.DataFrame
        ``CommVQA.answers``.
    hedges : dict of str to str, optional
        Name -> regular expression on the lower-cased answer (default :data:`HEDGES`).
    """
    hedges = hedges or HEDGES
    rows = []
    for subset, part in subsets_of(answers):
        for context in ("all", *CONTEXTS):
            p = part if context == "all" else part[part["context"] == context]
            text = p["answer"].str.lower()
            any_hedge = np.zeros(len(p), dtype=bool)
            for name, pattern in hedges.items():
                hits = text.str.count(pattern).to_numpy()
                any_hedge |= hits > 0
                rows.append({"subset": subset, "context": context, "hedge": name, "occurrences": int(hits.sum()),
                             "answers_with": int((hits > 0).sum()), "n_answers": len(p),
                             "share_of_answers": float((hits > 0).mean()) if len(p) else math.nan})
            rows.append({"subset": subset, "context": context, "hedge": "any of the above",
                         "occurrences": math.nan, "answers_with": int(any_hedge.sum()), "n_answers": len(p),
                         "share_of_answers": float(any_hedge.mean()) if len(p) else math.nan})
    return pd.DataFrame(rows)


def top_trigrams(answers: pd.DataFrame, *, k: int = 10) -> pd.DataFrame:
    """The ``k`` most common word trigrams of the human answers, per subset (CommVQA §4.3).

    Parameters
    ----------
    answers : pandas.DataFrame
        ``CommVQA.answers``.
    k : int, default 10
        Trigrams kept per subset (ties broken alphabetically).
    """
    from sklearn.feature_extraction.text import CountVectorizer

    rows = []
    for subset, part in subsets_of(answers):
        vec = CountVectorizer(ngram_range=(3, 3), lowercase=True, token_pattern=r"(?u)\b\w[\w']*\b")
        counts = np.asarray(vec.fit_transform(part["answer"]).sum(axis=0)).ravel()
        names = vec.get_feature_names_out()
        order = sorted(range(len(names)), key=lambda i: (-counts[i], names[i]))[:k]
        rows += [{"subset": subset, "rank": r + 1, "trigram": names[i], "occurrences": int(counts[i])}
                 for r, i in enumerate(order)]
    return pd.DataFrame(rows)


# A question is polar when its first word is an auxiliary or modal verb (below) and it offers
# no alternatives (" or "): "Is the guitar electric or acoustic?" is not polar.
POLAR_FIRST_WORDS = frozenset(
    "is are was were am do does did can could will would should shall has have had may might must "
    "isn't aren't wasn't weren't don't doesn't didn't can't couldn't won't wouldn't shouldn't hasn't haven't".split())
YES_NO = frozenset({"yes", "no", "yeah", "yep", "nope"})


def is_polar(question: str) -> bool:
    """Rule-based polar (yes/no) question detection (CommVQA Appendix A.2.2)."""
    words = re.findall(r"[a-z']+", question.lower().replace("’", "'"))
    return bool(words) and words[0] in POLAR_FIRST_WORDS and " or " not in f" {question.lower()} "


def answer_kind(answer: str) -> str:
    """How a polar question's answer is built (A.2.2): ``yes/no only``, ``yes/no + more`` or ``no yes/no``."""
    words = re.findall(r"[a-z']+", answer.lower().replace("’", "'"))
    if not words or words[0] not in YES_NO:
        return "no yes/no"
    return "yes/no only" if len(words) == 1 else "yes/no + more"


def polar_answers(annotations: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """Polar questions and how their answers go beyond yes/no, one row per subset (Appendix A.2.2).

    ``polar_questions_incl_or`` drops the " or " exclusion, a sensitivity figure ("Any trees or bushes?" is polar).

    Parameters
    ----------
    annotations : pandas.DataFrame
        ``CommVQA.annotations``.
    answers : pandas.DataFrame
        ``CommVQA.answers``.
    """
    polar_ids = set(annotations.loc[annotations["question"].map(is_polar), "question_id"])
    rows = []
    for (subset, ann), (_, ans) in zip(subsets_of(annotations), subsets_of(answers)):
        q = ann[ann["question_id"].isin(polar_ids)]
        a = ans[ans["question_id"].isin(polar_ids)]
        kinds = a["answer"].map(answer_kind).value_counts()
        with_or = ann["question"].map(lambda x: is_polar(x.lower().replace(" or ", " also ")))
        rows.append({"subset": subset, "questions": len(ann), "polar_questions": len(q),
                     "polar_questions_incl_or": int(with_or.sum()),
                     "answered_polar_questions": int((q["n_answers"] > 0).sum()),
                     "polar_share": len(q) / max(len(ann), 1), "answers": len(a),
                     "mean_chars": float(a["chars"].mean()) if len(a) else math.nan,
                     "mean_words": float(a["words"].mean()) if len(a) else math.nan,
                     **{f"share {k}": float(kinds.get(k, 0) / max(len(a), 1))
                        for k in ("yes/no only", "yes/no + more", "no yes/no")},
                     "yes_no_only": int(kinds.get("yes/no only", 0))})
    return pd.DataFrame(rows)


INTERROGATIVES: tuple[str, ...] = ("what", "who", "where", "when", "why", "how", "which")


def interrogative_tests(annotations: pd.DataFrame, *, words: tuple[str, ...] = INTERROGATIVES) -> pd.DataFrame:
    """Share of questions with each interrogative word per context, Welch's t-test against the rest (CommVQA §4.2).

    Parameters
    ----------
    annotations : pandas.DataFrame
        ``CommVQA.annotations``.
    words : tuple of str, default INTERROGATIVES
        Lower-case words tested.

    Returns
    -------
    pandas.DataFrame
        One row per subset, word and context; ``t``, ``df``, ``p`` NaN below 2 questions a side.
    """
    rows = []
    for subset, ann in subsets_of(annotations):
        tokens = ann["question"].map(lambda q: set(re.findall(r"[a-z]+", q.lower())))
        for word in words:
            has = tokens.map(lambda t: word in t).to_numpy(dtype=float)
            for context in CONTEXTS:
                inside = (ann["context"] == context).to_numpy()
                a, b = has[inside], has[~inside]
                if min(len(a), len(b)) < 2:  # too few questions for a t-test (small fixtures, smoke runs)
                    t = df = p = math.nan
                else:
                    test = scistats.ttest_ind(a, b, equal_var=False)
                    t, df, p = float(test.statistic), float(test.df), float(test.pvalue)
                rows.append({"subset": subset, "word": word, "context": context, "n_context": len(a),
                             "n_rest": len(b), "share_context": float(a.mean()) if len(a) else math.nan,
                             "share_rest": float(b.mean()) if len(b) else math.nan, "t": t, "df": df, "p": p})
    return pd.DataFrame(rows)


def paper_interrogative_cells(tests: pd.DataFrame) -> pd.DataFrame:
    """The :func:`interrogative_tests` cells of the paper's tests: "who", "what" in social media, shopping (§4.2).

    Parameters
    ----------
    tests : pandas.DataFrame
        :func:`interrogative_tests` output.
    """
    return tests[(tests["word"].isin(["who", "what"])) & (tests["context"].isin(["social media", "shopping"]))]
