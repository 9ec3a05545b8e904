"""Sentence-embedding analyses of CommVQA: context from the question (§4.2, Figure 2) and answer-description
similarity (§5, Figure 4).

The paper fine-tuned BERT with LoRA (20 folds, 200 epochs); here a logistic regression on frozen MiniLM
embeddings (cached, :func:`vqalib.core.encoders.embed`) is cross-validated: an analogue, not a reproduction.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from tqdm import tqdm

from vqalib.core.inference import mean_ci, star_mark
from vqalib.papers.commvqa.names import CONTEXTS
from vqalib.core import config
from vqalib.core import encoders

SENTENCE_MODEL_ENV = "VQALIB_SENTENCE_MODEL"


def sentence_model(model: str | None = None) -> tuple[str | None, str]:
    """The sentence model and its table label for CommVQA Figures 2 and 4.

    Parameters
    ----------
    model : str, optional
        A local folder or hub name; default ``$VQALIB_SENTENCE_MODEL``, else the packaged all-MiniLM-L6-v2.

    Returns
    -------
    tuple of (str or None, str)
        The model argument for :func:`vqalib.core.encoders.embed` and its label.
    """
    model = model or config.get(SENTENCE_MODEL_ENV)
    if model:
        return model, model
    return None, "all-MiniLM-L6-v2 (packaged, offline)"


def embed(texts: list[str], *, model: str | None = None, cache_dir: Path | None = None,
          progress: bool = True) -> np.ndarray:
    """Unit-length float64 sentence embeddings of ``texts``, one row each, cached on disk (CommVQA Figures 2 and 4).

    Parameters
    ----------
    texts : list of str
    model : str, optional
        Sentence model (:func:`sentence_model` resolves the default).
    cache_dir : Path, optional
    progress : bool, default True
    """
    return encoders.embed(texts, model=sentence_model(model)[0], cache_dir=cache_dir, progress=progress)


def questions_for_classifier(annotations: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct (context, question) of the release (CommVQA §4.2, Figure 2).

    Duplicates within a context are kept once so that no question sits in both a training and a test fold.

    Parameters
    ----------
    annotations : pandas.DataFrame
        ``CommVQA.annotations``.
    """
    q = annotations.assign(question=annotations["question"].str.strip())
    return q.drop_duplicates(["context", "question"])[["question_id", "context", "question", "in_benchmark"]]


def _classifier(seed: int):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=2000, C=1.0, random_state=seed)


def context_classifier(embeddings: np.ndarray, contexts: pd.Series | list[str], *, n_splits: int = 20,
                       seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """6-way context prediction from question embeddings, cross-validated (§4.2: BERT 57% vs 16% chance).

    Parameters
    ----------
    embeddings : numpy.ndarray
        One row per question.
    contexts : pandas.Series or list of str
        Each question's context.
    n_splits : int, default 20
        Cross-validation folds.
    seed : int, default 0
        Seed of the fold shuffle and of the logistic regression.

    Returns
    -------
    tuple of pandas.DataFrame
        ``(summary, confusion)``: accuracy, fold mean and SD, chance, binomial p; true contexts as rows.
    """
    from sklearn.metrics import confusion_matrix
    from sklearn.model_selection import StratifiedKFold

    labels = np.asarray(contexts)
    folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    predicted = _context_predictions(embeddings, labels, n_splits=n_splits, seed=seed)
    correct = predicted == labels
    fold_acc = [correct[test].mean() for _, test in folds.split(embeddings, labels)]
    classes = [c for c in CONTEXTS if c in set(labels)]
    chance = 1 / len(classes)
    summary = pd.DataFrame([{
        "n_questions": len(labels), "n_contexts": len(classes), "folds": n_splits, "accuracy": correct.mean(),
        "fold_mean": float(np.mean(fold_acc)), "fold_sd": float(np.std(fold_acc, ddof=1)), "chance": chance,
        "majority_share": pd.Series(labels).value_counts(normalize=True).iloc[0],
        "p_binomial_vs_chance": scistats.binomtest(int(correct.sum()), len(labels), chance,
                                                   alternative="greater").pvalue}])
    confusion = pd.DataFrame(confusion_matrix(labels, predicted, labels=classes), index=classes, columns=classes)
    return summary, confusion


def _context_predictions(embeddings: np.ndarray, labels: np.ndarray, *, n_splits: int, seed: int) -> np.ndarray:
    """The out-of-fold predictions of :func:`context_classifier`, cached by content."""
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    def compute() -> pd.DataFrame:
        from sklearn.model_selection import StratifiedKFold, cross_val_predict
        from threadpoolctl import threadpool_limits

        folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        with threadpool_limits(1):  # small dense fits: BLAS threads only add overhead (40x on 2 busy cores)
            return pd.DataFrame({"predicted": cross_val_predict(_classifier(seed), embeddings, labels, cv=folds)})

    key = content_key(code=("vqalib",), packages=("numpy", "scikit-learn", "scipy"),
                      embeddings=np.asarray(embeddings), contexts=[str(c) for c in labels], n_splits=n_splits,
                      seed=seed)
    frame = cached_frame(cache_root("commvqa", "context-classifier") / f"{key[:32]}.parquet",
                         kind="context classifier cache", compute=compute)
    return frame["predicted"].to_numpy(dtype=object)


def pairwise_accuracy(embeddings: np.ndarray, contexts: pd.Series | list[str], *, n_splits: int = 20,
                      seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """Cross-validated accuracy of a binary classifier for each pair of contexts, cached (CommVQA Figure 2).

    Parameters
    ----------
    embeddings : numpy.ndarray
        One row per question.
    contexts : pandas.Series or list of str
        Each question's context.
    n_splits : int, default 20
        Cross-validation folds per pair.
    seed : int, default 0
        Seed of the fold shuffle and of the logistic regression.
    progress : bool, default True
    """
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    key = content_key(code=("vqalib",), packages=("numpy", "scikit-learn", "scipy"),
                      embeddings=np.asarray(embeddings), contexts=[str(c) for c in contexts], n_splits=n_splits,
                      seed=seed)
    return cached_frame(cache_root("commvqa", "pairwise-accuracy") / f"{key[:32]}.parquet",
                        kind="context classifier cache",
                        compute=lambda: _pairwise_accuracy(embeddings, contexts, n_splits=n_splits, seed=seed,
                                                           progress=progress))


def _pairwise_accuracy(embeddings: np.ndarray, contexts, *, n_splits: int, seed: int, progress: bool) -> pd.DataFrame:
    """:func:`pairwise_accuracy` without its cache."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from threadpoolctl import threadpool_limits

    labels = np.asarray(contexts)
    classes = [c for c in CONTEXTS if c in set(labels)]
    rows = []
    for a, b in tqdm(list(itertools.combinations(classes, 2)), desc="context pairs", unit="pair",
                     disable=not progress):
        mask = (labels == a) | (labels == b)
        folds = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        with threadpool_limits(1):
            acc = cross_val_score(_classifier(seed), embeddings[mask], labels[mask], cv=folds, scoring="accuracy")
        share = pd.Series(labels[mask]).value_counts(normalize=True).iloc[0]
        rows.append({"context_a": a, "context_b": b, "n_questions": int(mask.sum()), "accuracy": float(acc.mean()),
                     "fold_sd": float(acc.std(ddof=1)), "majority_share": float(share)})
    return pd.DataFrame(rows)


def pairwise_matrix(pairs: pd.DataFrame) -> pd.DataFrame:
    """The symmetric context x context accuracy matrix of CommVQA Figure 2 (diagonal empty).

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`pairwise_accuracy` output.
    """
    classes = [c for c in CONTEXTS if c in set(pairs["context_a"]) | set(pairs["context_b"])]
    matrix = pd.DataFrame(np.nan, index=classes, columns=classes)
    for r in pairs.itertuples(index=False):
        matrix.loc[r.context_a, r.context_b] = matrix.loc[r.context_b, r.context_a] = r.accuracy
    return matrix


def similarity_pairs(annotations: pd.DataFrame, answers: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """(answer, description) pairs of Figure 4 on the benchmark questions; a missing answer is kept as None.

    Parameters
    ----------
    annotations, answers, results : pandas.DataFrame
        :func:`~vqalib.papers.commvqa.loading.load_commvqa`'s frames.
    """
    bench = annotations[annotations["in_benchmark"]].set_index("question_id")
    human = answers[answers["in_benchmark"]]
    rows = [{"source": "Human", "condition": "human", "question_id": r.question_id, "context": r.context,
             "answer": r.answer, "description": bench.at[r.question_id, "description"]}
            for r in human.itertuples(index=False)]
    for r in results[results["question_id"].isin(bench.index)].itertuples(index=False):
        qid = int(r.question_id)
        rows.append({"source": r.model, "condition": r.condition, "question_id": qid, "context": r.context,
                     "answer": r.generated_answer, "description": bench.at[qid, "description"]})
    return pd.DataFrame(rows)


def description_similarity(pairs: pd.DataFrame, *, model: str | None = None, cache_dir: Path | None = None,
                           progress: bool = True) -> pd.DataFrame:
    """``pairs`` with the cosine ``similarity`` of each answer and its image description (CommVQA Figure 4).

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`similarity_pairs` output; a blank answer counts as missing.
    model : str, optional
        Sentence model (see :func:`sentence_model`).
    cache_dir : Path, optional
    progress : bool, default True
    """
    have = _has_answer(pairs)
    sims = pd.Series(np.nan, index=pairs.index)
    if have.any():
        emb = embed(description_texts(pairs), model=model, cache_dir=cache_dir, progress=progress)
        n = int(have.sum())
        sims[have] = np.einsum("ij,ij->i", emb[:n].astype(np.float64), emb[n:].astype(np.float64))
    return pairs.assign(similarity=sims)


def _has_answer(pairs: pd.DataFrame) -> pd.Series:
    """Pairs whose answer is there and not blank (Figure 4)."""
    return pairs["answer"].notna() & pairs["answer"].astype(str).str.strip().ne("")


def description_texts(pairs: pd.DataFrame) -> list[str]:
    """The texts :func:`description_similarity` embeds: every present answer, then their descriptions (Figure 4).

    Parameters
    ----------
    pairs : pandas.DataFrame
        :func:`similarity_pairs` output.
    """
    have = _has_answer(pairs)
    return list(pairs.loc[have, "answer"].astype(str)) + list(pairs.loc[have, "description"])


def similarity_summary(similarity: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Mean answer-description similarity per source and condition with a t-based CI (CommVQA Figure 4).

    Parameters
    ----------
    similarity : pandas.DataFrame
        :func:`description_similarity` output.
    confidence : float, default 0.95
        Level of the interval.
    """
    rows = []
    for (source, condition), g in similarity.groupby(["source", "condition"], sort=False):
        v = g["similarity"].dropna().to_numpy()
        mean, sd, lo, hi = mean_ci(v, confidence=confidence)
        rows.append({"source": source, "condition": condition, "n_answers": len(v),
                     "missing_answers": int(g["similarity"].isna().sum()), "mean": mean, "sd": sd,
                     "ci_low": float(lo), "ci_high": float(hi)})
    return pd.DataFrame(rows)


def stars(p: float) -> str:
    """CommVQA Figure 4's significance marks: *** p < 0.001, ** p < 0.01, * p < 0.05, else n.s."""
    return star_mark(p, otherwise="n.s.")


def similarity_tests(similarity: pd.DataFrame) -> pd.DataFrame:
    """Baseline vs contextual description similarity per model: Welch's and paired t-tests (CommVQA Figure 4).

    Welch's test stands for the paper's "two-sample t-test"; the paired test is shown beside it, since both
    conditions answer the same questions.

    Parameters
    ----------
    similarity : pandas.DataFrame
        :func:`description_similarity` output.
    """
    rows = []
    for source in [s for s in dict.fromkeys(similarity["source"]) if s != "Human"]:
        part = similarity[similarity["source"] == source]
        base = part[part["condition"] == "baseline"].set_index("question_id")["similarity"]
        ctx = part[part["condition"] == "contextual"].set_index("question_id")["similarity"]
        welch = scistats.ttest_ind(ctx.dropna(), base.dropna(), equal_var=False)
        both = pd.concat([base, ctx], axis=1, keys=["b", "c"]).dropna()
        paired = scistats.ttest_rel(both["c"], both["b"])
        rows.append({"source": source, "baseline_mean": base.mean(), "contextual_mean": ctx.mean(),
                     "difference": ctx.mean() - base.mean(), "welch_t": float(welch.statistic),
                     "welch_df": float(welch.df), "welch_p": float(welch.pvalue), "stars": stars(float(welch.pvalue)),
                     "paired_n": len(both), "paired_t": float(paired.statistic), "paired_p": float(paired.pvalue)})
    return pd.DataFrame(rows)


def fig02_alt_text(pairwise: pd.DataFrame) -> str:
    """The long description of CommVQA Figure 2 (§4.2).

    Parameters
    ----------
    pairwise : pandas.DataFrame
        :func:`pairwise_accuracy` output.
    """
    best, worst = pairwise.loc[pairwise["accuracy"].idxmax()], pairwise.loc[pairwise["accuracy"].idxmin()]
    return (
        "Heatmap of six contexts by six contexts; each cell is the cross-validated accuracy of a classifier "
        "(MiniLM sentence embeddings and logistic regression) that tells the questions of the two contexts apart, "
        f"chance being about 0.5. The easiest pair is {best['context_a']} vs {best['context_b']} "
        f"({best['accuracy']:.2f}), the hardest {worst['context_a']} vs {worst['context_b']} "
        f"({worst['accuracy']:.2f}); {int((pairwise['accuracy'] > pairwise['majority_share']).sum())} of "
        f"{len(pairwise)} pairs are above the majority-class rate, so the context leaves a trace in the wording "
        "of the questions.")


def fig04_alt_text(summary: pd.DataFrame, tests: pd.DataFrame) -> str:
    """The long description of CommVQA Figure 4 (§5).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`similarity_summary` output.
    tests : pandas.DataFrame
        :func:`similarity_tests` output.
    """
    s = summary.set_index(["source", "condition"])["mean"]
    models = [m for m in dict.fromkeys(summary["source"]) if m != "Human"]
    least = tests.loc[tests["difference"].idxmin(), "source"]
    closer = tests[tests["difference"] > 0]["source"].tolist()
    return (
        "Bar chart of the mean cosine similarity between answers and the image description, with 95% intervals: "
        f"human answers {s[('Human', 'human')]:.2f}; "
        + "; ".join(f"{m} baseline {s[(m, 'baseline')]:.2f} and contextual {s[(m, 'contextual')]:.2f}" for m in models)
        + ". Stars over each model's pair mark a significant baseline vs contextual difference (Welch's t-test); "
        f"{len(closer)} of {len(models)} models move closer to the description with the context prompt, {least} the "
        "least.")
