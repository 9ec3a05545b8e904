"""Prompts and prompting strategies of the runner: VizWiz-LF §7 / A.4.2 (Tables 22-26, Table 25 settings),
CommVQA §5 / A.1 (baseline, contextual; greedy) and AFGV Methods (short-answer templates per model family).
The texts are package data (``prompts/*.json``); this module lays them out as the papers' tables do."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vqalib.runner.model_specs import GREEDY, ModelSpec
from vqalib.core.prompts import load_prompt

# VizWiz-LF Table 22 (verbatim)
ABSTENTION_INSTRUCTION: str = load_prompt("vqalib.runner", "vizwiz_lf", "abstention_instruction")
# VizWiz-LF Table 23, stages 2 and 3 (verbatim)
REVIEW_INSTRUCTION: str = load_prompt("vqalib.runner", "vizwiz_lf", "review_instruction")
REVISE_INSTRUCTION: str = load_prompt("vqalib.runner", "vizwiz_lf", "revise_instruction")
# VizWiz-LF Table 24 (verbatim; the paper's curly quotes printed straight)
CONSISTENCY_INSTRUCTION: str = load_prompt("vqalib.runner", "vizwiz_lf", "consistency_instruction")
# CommVQA Appendix A.1 (verbatim)
COMMVQA_CONTEXTUAL: str = load_prompt("vqalib.runner", "commvqa", "contextual")
# AFGV prints no prompt: each model's own published short-answer (GQA) template is used
SHORT_ANSWER_TEMPLATES: dict[str, str] = load_prompt("vqalib.runner", "afgv", "short_answer_templates")


def vanilla_prompt(question: str) -> str:
    """The plain question in the Table 23 stage-1 layout, ``Question: ...\\nAnswer:`` (VizWiz-LF §7 "vanilla").

    Parameters
    ----------
    question : str
        The question.
    """
    return f"Question: {question}\nAnswer:"


def abstention_prompt(question: str) -> str:
    """The abstention instruction, a blank line and ``Question: ...`` (VizWiz-LF Table 22).

    Parameters
    ----------
    question : str
        The question.
    """
    return f"{ABSTENTION_INSTRUCTION}\n\nQuestion: {question}"


def review_prompt(question: str, answer: str) -> str:
    """Self-correction stage 2: ask for the problems of the first answer (VizWiz-LF Table 23).

    Parameters
    ----------
    question : str
        The question.
    answer : str
        The model's stage-1 answer.
    """
    return f"{REVIEW_INSTRUCTION}\n\nQuestion: {question}\nAnswer: {answer}\nProblems:"


def revise_prompt(question: str, answer: str, problems: str) -> str:
    """Self-correction stage 3: ask for the revised answer (VizWiz-LF Table 23).

    Parameters
    ----------
    question : str
        The question.
    answer : str
        The model's stage-1 answer.
    problems : str
        The model's stage-2 reply.
    """
    return f"{REVISE_INSTRUCTION}\n\nQuestion: {question}\nAnswer: {answer}\nProblems: {problems}\nRevised Answer:"


def consistency_messages(question: str, responses: list[str]) -> list[dict]:
    """The judge's chat messages choosing the most consistent draw (VizWiz-LF Table 24).

    Parameters
    ----------
    question : str
        The question.
    responses : list of str
        The sampled draws, listed as ``Response 0``, ``Response 1``, ...
    """
    listed = "\n".join(f"Response {k}: {r}" for k, r in enumerate(responses))
    text = (f"I have generated the following responses to the question: {question}\n\n{listed}\n\n"
            f"{CONSISTENCY_INSTRUCTION}")
    return [{"role": "user", "content": text}]


_CHOICE = re.compile(r"response\s*#?\s*(\d+)", re.IGNORECASE)


def parse_consistency_choice(reply: str, *, n: int) -> int | None:
    """The draw index X of "The most consistent response is Response X." (VizWiz-LF Table 24).

    Parameters
    ----------
    reply : str
        The judge's reply; the last "Response X" in it counts.
    n : int
        The number of draws.

    Returns
    -------
    int or None
        None when the reply names no draw, or one out of range.
    """
    found = _CHOICE.findall(reply or "")
    if not found:
        return None
    choice = int(found[-1])
    return choice if 0 <= choice < n else None


def contextual_prompt(*, scenario: str, description: str, question: str) -> str:
    """The contextual-condition prompt (CommVQA A.1).

    Parameters
    ----------
    scenario : str
        The kind of website the person is browsing.
    description : str
        The image description the person can read.
    question : str
        Their follow-up question.
    """
    return COMMVQA_CONTEXTUAL.format(scenario=scenario, description=description, question=question)


def short_answer_prompt(question: str, *, family: str) -> str:
    """A model family's short-answer VQA prompt (AFGV Methods); the bare question for a family without one.

    Parameters
    ----------
    question : str
        The question in one readability tier.
    family : str
        The model family (``ModelSpec.family``).
    """
    return SHORT_ANSWER_TEMPLATES.get(family, "{question}").format(question=question)


@dataclass(frozen=True)
class Strategy:
    """A prompting strategy: its paper section, number of sampled draws, whether it needs a judge."""

    name: str
    source: str
    draws: int = 0  # > 0: self-consistency with that many sampled draws
    uses_judge: bool = False
    needs_context: bool = False


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (
    Strategy("vanilla", "VizWiz-LF §7, Table 5 (vanilla)"),
    Strategy("abstention", "VizWiz-LF §7, Table 22"),
    Strategy("self-correction", "VizWiz-LF A.4.2, Table 23"),
    Strategy("self-consistency", "VizWiz-LF A.4.2, Table 24", draws=5, uses_judge=True),
    Strategy("abstention-consistency", "VizWiz-LF A.4.2, Tables 22+24 (Table 26)", draws=5, uses_judge=True),
    Strategy("commvqa-baseline", "CommVQA §5 (baseline condition)"),
    Strategy("commvqa-contextual", "CommVQA §5, A.1 (contextual condition)", needs_context=True),
    Strategy("short-answer", "AFGV Methods (short answers per tier)"),
)}


def generation_settings(spec: ModelSpec, strategy: str, *, max_new_tokens: int | None = None) -> dict:
    """The ``generate`` keyword arguments for a model and strategy (VizWiz-LF Table 25, CommVQA §5).

    Self-consistency uses Table 25's sampling column, CommVQA is greedy (§5), the rest the model's default.

    Parameters
    ----------
    spec : ModelSpec
        The model spec of the model.
    strategy : str
        A key of :data:`STRATEGIES`.
    max_new_tokens : int, optional
        Overrides the model spec's ``max_new_tokens``.

    Returns
    -------
    dict
        Always with ``do_sample`` and ``max_new_tokens``.
    """
    if STRATEGIES[strategy].draws:
        chosen = dict(spec.consistency)
    elif strategy.startswith("commvqa-"):
        chosen = dict(GREEDY)
    else:
        chosen = dict(spec.generation)
    if not chosen.get("do_sample"):
        chosen = {"do_sample": False, "num_beams": 1}
    chosen["max_new_tokens"] = int(max_new_tokens or spec.max_new_tokens)
    return chosen
