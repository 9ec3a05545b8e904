"""The LAVE prompts of the LLM judge: those papers declare (``[[judge_prompt]]``) and ``lave-reference``,
mair-lab/lave's ``LaveBase.build_prompt``, whose demonstrations are fetched (no licence, so not copied here)."""

from __future__ import annotations

import collections
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from vqalib.core import upstream, declarations
from vqalib.core import io
from vqalib.core.judge.settings import DEFAULT_PROMPT, LAVE_PROMPTS
from vqalib.core.prompts import load_prompt

# mair-lab/lave lave.py, LaveBase.task_definition (use_caption=False, rationalize=True), commit 253640b;
# Mañas et al., AAAI 2024 (arXiv:2310.02567)
LAVE_REFERENCE_INSTRUCTION: str = load_prompt(__package__, "lave", "lave_reference_instruction")
LAVE_REFERENCE_SHOTS = 8  # LaveBase(num_shots=8)
LAVE_DEMO_KEYS = {"general": "lave/lave_demos.json", "binary": "lave/lave_demos_binary.json"}
_DEMO_FIELDS = {"question": str, "references": list, "prediction": str, "output": str, "explanation": str}


@dataclass(frozen=True)
class DeclaredPrompt:
    """A paper's LAVE prompt (``[[judge_prompt]]``): its instruction and demonstrations."""

    name: str
    paper: str
    instruction: str
    examples: tuple[dict, ...]


@functools.cache
def declared_prompts() -> dict[str, DeclaredPrompt]:
    """The LAVE prompts the papers declare, by name."""
    out = {}
    for block in declarations.extensions("judge_prompt"):
        path = Path(block["folder"]) / block["file"]
        texts = json.loads(path.read_text(encoding="utf-8"))["prompts"]
        out[block["name"]] = DeclaredPrompt(name=block["name"], paper=block["paper"],
                                            instruction=texts["instruction"]["text"],
                                            examples=tuple(texts["examples"]["text"]))
    return out


@dataclass(frozen=True)
class LaveDemos:
    """The reference implementation's demonstrations: the general set and the yes/no set."""

    general: tuple[dict, ...]
    binary: tuple[dict, ...]


def _checked_demos(path: Path, records: object) -> tuple[dict, ...]:
    if not isinstance(records, list) or not records:
        raise io.DataFormatError(f"{path}: expected a non-empty JSON list of demonstrations")
    for number, record in enumerate(records):
        if not isinstance(record, dict):
            raise io.DataFormatError(f"{path}: record {number} is not an object")
        for field, kind in _DEMO_FIELDS.items():
            if not isinstance(record.get(field), kind):
                raise io.DataFormatError(f"{path}: record {number}: field {field!r} missing or not a "
                                               f"{kind.__name__}")
        if record["output"] not in ("1", "2", "3") or not all(isinstance(r, str) for r in record["references"]):
            raise io.DataFormatError(f"{path}: record {number}: output must be '1', '2' or '3' and "
                                           "references strings")
    return tuple(records)


def load_lave_demos(*, data_dir: Path | None = None) -> LaveDemos:
    """mair-lab/lave's demonstrations for the ``lave-reference`` prompt, hash-checked (``vqalib fetch`` gets them),
    from ``lave/`` in ``data_dir`` (default :func:`vqalib.core.io.default_data_dir`)."""
    sets = {}
    for kind, key in LAVE_DEMO_KEYS.items():
        path = upstream.verified_path(key, data_dir=data_dir)
        sets[kind] = _checked_demos(path, io.read_json(path))
    return LaveDemos(**sets)


def _item(*, question: str, reference: str, candidate: str) -> str:
    return f"Question: '{question}'\nReference answer: '{reference}'\nCandidate answer: '{candidate}'\nOutput:"


def _reference_block(*, question: str, references: str, candidate: str, output: str) -> str:
    # lave.py LaveBase.example_template (no caption)
    return f"Question: '{question}'\nReference answers: {references}\nCandidate answer: '{candidate}'\nOutput: {output}"


def filter_references(references: Sequence[str], *, p: float = 0.25) -> list[str]:
    """The references (repeats counted) without rare ones, as mair-lab/lave drops answers given <= ``p`` times as
    often as the commonest."""
    counts = collections.Counter(references)
    most = max(counts.values())
    outliers = {answer for answer, n in counts.items() if n / most <= p}
    return [r for r in references if r not in outliers]


def format_references(references: Sequence[str], *, filter_outliers: bool) -> str:
    """``'a', 'b'``: the references sorted and quoted, as mair-lab/lave's prompt lists them; ``filter_outliers``
    drops rare answers first (True for the rated item, False for demonstrations)."""
    kept = filter_references(references) if filter_outliers else list(references)
    return ", ".join(f"'{r}'" for r in sorted(kept))


def is_binary_question(references: Sequence[str]) -> bool:
    """mair-lab/lave's yes/no rule: the most common reference (on a tie the first counted), lower-cased without a
    final '.', is yes or no."""
    return collections.Counter(references).most_common(1)[0][0].lower().rstrip(".") in ("yes", "no")


def _references(reference: str | Sequence[str]) -> list[str]:
    refs = [reference] if isinstance(reference, str) else [str(r) for r in reference]
    if not refs:
        raise ValueError("lave-reference prompt: an item has no reference answer")
    return refs


def lave_messages(*, question: str, reference: str | Sequence[str], candidate: str, prompt: str = DEFAULT_PROMPT,
                  demos: LaveDemos | None = None) -> list[dict]:
    """The LAVE chat messages (``{"role", "content"}``) for one answer: a declared prompt takes exactly one
    ``reference`` string, ``lave-reference`` a list and ``demos`` (default :func:`load_lave_demos`); another
    ``prompt`` is a ValueError."""
    if prompt in declared_prompts():
        declared = declared_prompts()[prompt]
        if not isinstance(reference, str):
            raise ValueError(f"prompt {prompt} takes one reference answer ({declared.paper}); "
                             "use prompt lave-reference for several")
        shots = [f"{_item(question=e['question'], reference=e['reference'], candidate=e['candidate'])} "
                 f"{e['output']}\nRating: {e['rating']}" for e in declared.examples]
        shots.append(_item(question=question, reference=reference, candidate=candidate))
        return [{"role": "system", "content": declared.instruction}, {"role": "user", "content": "\n\n".join(shots)}]
    if prompt == "lave-reference":
        demos = demos if demos is not None else load_lave_demos()
        refs = _references(reference)
        chosen = (demos.binary if is_binary_question(refs) else demos.general)[:LAVE_REFERENCE_SHOTS]
        text = LAVE_REFERENCE_INSTRUCTION + "\n\n"
        for demo in chosen:
            text += _reference_block(question=demo["question"],
                                     references=format_references(demo["references"], filter_outliers=False),
                                     candidate=demo["prediction"],
                                     output=f"{demo['explanation']} So rating={demo['output']}") + "\n\n"
        text += _reference_block(question=question, references=format_references(refs, filter_outliers=True),
                                 candidate=candidate, output="")
        return [{"role": "user", "content": text.strip()}]
    raise ValueError(f"unknown LAVE prompt {prompt!r}: use one of {', '.join(LAVE_PROMPTS)}")
