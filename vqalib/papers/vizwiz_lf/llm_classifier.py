"""The paper's few-shot LLM sentence classifier (VizWiz-LF Appendix A.2.2, Tables 11-14); prompts in ``prompts/``."""

from __future__ import annotations

import re

import pandas as pd

from vqalib.core.prompts import prompt_file
from vqalib.papers.vizwiz_lf import taxonomy

PROMPT_NAMES: tuple[str, ...] = ("role_classifier", "info_classifier")


def _examples(name: str) -> tuple:
    """``(question, sentences, labels per sentence)`` tuples of a prompt's examples."""
    return tuple((ex["question"], tuple(ex["sentences"]), tuple(tuple(labels) for labels in ex["labels"]))
                 for ex in prompt_file(__package__, name)["examples"])


ROLE_INSTRUCTION: str = prompt_file(__package__, "role_classifier")["instruction"]
INFO_INSTRUCTION: str = prompt_file(__package__, "info_classifier")["instruction"]
# (question, sentences, labels per sentence) as in Tables 11-12 (roles) and 13-14 (information types)
ROLE_EXAMPLES: tuple = _examples("role_classifier")
INFO_EXAMPLES: tuple = _examples("info_classifier")


class LabelParseError(ValueError):
    """An LLM classifier reply that cannot be read as one label list per sentence."""


def _numbered(sentences) -> str:
    return " ".join(f"[{i}] {s.strip()}" for i, s in enumerate(sentences))


def classification_messages(*, question: str, sentences: list[str], kind: str = "role") -> list[dict]:
    """The paper's few-shot prompt (A.2.2, Tables 11-14): a system message with the definitions, a user message with 8
    examples and the new answer's numbered sentences; ``kind`` other than ``"role"`` gives the information-type one."""
    instruction, examples, header = ((ROLE_INSTRUCTION, ROLE_EXAMPLES, "Roles") if kind == "role"
                                     else (INFO_INSTRUCTION, INFO_EXAMPLES, "Types"))
    shots = [f"Question: {q} Answer: {_numbered(s)} {header}: "
             + " ".join(f"[{i}] {', '.join(lab) if lab else 'N/A'}" for i, lab in enumerate(labels))
             for q, s, labels in examples]
    shots.append(f"Question: {question.strip()} Answer: {_numbered(sentences)} {header}:")
    return [{"role": "system", "content": instruction}, {"role": "user", "content": "\n\n".join(shots)}]


_ITEM = re.compile(r"\[(\d+)\]\s*([^\[]*)")


def parse_labels(text: str, *, n_sentences: int, kind: str = "role") -> list[tuple[str, ...]]:
    """Canonical label tuples, one per sentence, from a reply like ``[0] Answer [1] Suggestion`` (A.2.2); strict: raises
    :class:`LabelParseError` on missing, repeated or out-of-range numbers, unknown labels, or no role."""
    text = (text or "").split("Roles:")[-1].split("Types:")[-1]
    found = _ITEM.findall(text)
    numbers = [int(n) for n, _ in found]
    if sorted(numbers) != list(range(n_sentences)):
        raise LabelParseError(f"expected labels for sentences 0..{n_sentences - 1}, got {numbers}")
    out: list[tuple[str, ...]] = [()] * n_sentences
    for number, body in found:
        names = [x.strip().strip(".") for x in re.split(r",|;", body.strip()) if x.strip().strip(".")]
        labels = []
        for name in names:
            if kind == "info" and name.upper() in ("N/A", "NA", "NONE"):
                continue
            canonical, status = taxonomy.canonical_label(name, kind=kind)
            if status == "unknown":
                raise LabelParseError(f"sentence {number}: unknown {kind} label {name!r}")
            if canonical not in labels:
                labels.append(canonical)
        if kind == "role" and not labels:
            raise LabelParseError(f"sentence {number}: no role")
        out[int(number)] = tuple(labels)
    return out


def llm_classify(answers: pd.DataFrame, *, judge, kind: str = "role", progress: bool = True) -> pd.DataFrame:
    """Label each answer's sentences with the paper's few-shot LLM classifier, one row per sentence (A.2.2).

    A reply that fails to parse leaves that answer's labels empty and is counted, never repaired.

    Parameters
    ----------
    answers : pandas.DataFrame
        ``question`` and ``sentences`` (list of str) plus any id columns.
    judge : CachedJudge
        Anything with ``complete(messages)`` and ``summary()``.
    kind : {"role", "info"}, default "role"
    progress : bool, default True
        Show a progress bar.
    """
    from tqdm import tqdm

    rows, errors = [], 0
    ids = [c for c in answers.columns if c not in ("question", "sentences")]
    for row in tqdm(answers.to_dict("records"), desc=f"LLM {kind} classifier", disable=not progress):
        sentences = list(row["sentences"])
        reply = judge.complete(classification_messages(question=row["question"], sentences=sentences, kind=kind))
        try:
            labels, status = parse_labels(reply, n_sentences=len(sentences), kind=kind), "ok"
        except LabelParseError as err:
            labels, status = [()] * len(sentences), f"unparseable: {err}"
            errors += 1
        for k, (sentence, lab) in enumerate(zip(sentences, labels)):
            rows.append({**{c: row[c] for c in ids}, "sentence_index": k, "sentence": sentence,
                         "labels": lab, "status": status})
    print(f"{judge.summary()}; {errors} of {len(answers)} replies unparseable")
    return pd.DataFrame(rows)


def llm_sample(sentences: pd.DataFrame, answers: pd.DataFrame, *, n: int) -> pd.DataFrame:
    """The first ``n`` answers (``sentences``, ``question``) as :func:`llm_classify` takes them (VizWiz-LF A.2.2).

    Parameters
    ----------
    sentences : pandas.DataFrame
        Sentences with ``source``, ``question_id`` and ``sentence`` (in answer order).
    answers : pandas.DataFrame
        Answers with ``source``, ``question_id`` and ``question``.
    n : int
    """
    return (sentences.dropna(subset=["sentence"]).groupby(["source", "question_id"], sort=False)["sentence"]
            .agg(list).rename("sentences").reset_index().head(n)
            .merge(answers[["source", "question_id", "question"]], on=["source", "question_id"]))
