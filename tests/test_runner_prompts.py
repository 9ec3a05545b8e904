"""The runner's prompt texts (:mod:`vqalib.core.prompts`, ``vqalib/runner/prompts/``): package data,
byte-identical to the paper prompts the runner used as Python literals."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import pytest

from vqalib.core.prompts import load_prompt, prompt_file
from vqalib.runner import models, strategies

ROOT = Path(__file__).resolve().parent.parent

# SHA-256 of the UTF-8 texts as they were Python literals in vqalib/vqa.py before the split
LITERAL_SHA256 = {
    ("vizwiz_lf", "abstention_instruction"): "0eb60b76d165d6e209822a6f829131abe5b86d764f9a105959b26151cd749780",
    ("vizwiz_lf", "review_instruction"): "d04b0bbe46529b8fae15a148c639e0ee0fdbe339009fddd7792ce98a5672cecf",
    ("vizwiz_lf", "revise_instruction"): "d9ca8257daf9e7e390bebe1a29e4b17322fcc6bd23466cc68da7447986aa6882",
    ("vizwiz_lf", "consistency_instruction"): "f06b9cff9673d3e44b446d3d063a8374c13073bd4415455e6c785ab7cfb3f942",
    ("commvqa", "contextual"): "ed98187ac9e6c44f6eb23ef4fbc9491a9957b57bf6fcee8d375a08a349faa5e0",
    ("chat_templates", "qwen2vl"): "a0bc6f6fc7a29a80017a433e8f03a1cc1236e838a944a2d034295a60c4f2fddb",
}
SHORT_ANSWER_SHA256 = "4d3f4562a9ecbaecc00b86bbd64912620555926c3c227ec4bd920e56d346d506"  # json.dumps(sort_keys=True)


@pytest.mark.parametrize("file, name", sorted(LITERAL_SHA256))
def test_loaded_prompts_are_byte_identical_to_the_former_literals(file, name):
    text = load_prompt("vqalib.runner", file, name)
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == LITERAL_SHA256[file, name]


def test_short_answer_templates_are_the_former_literals():
    templates = load_prompt("vqalib.runner", "afgv", "short_answer_templates")
    assert hashlib.sha256(json.dumps(templates, sort_keys=True).encode("utf-8")).hexdigest() == SHORT_ANSWER_SHA256
    templates["blip"] = "changed"  # a caller's copy: the cached file stays as stored
    assert load_prompt("vqalib.runner", "afgv", "short_answer_templates")["blip"] == "{question}"


def test_strategies_render_the_loaded_texts():
    def load(file, name):
        return load_prompt("vqalib.runner", file, name)

    q = "What color is the jumper?"
    assert strategies.abstention_prompt(q) == f"{load('vizwiz_lf', 'abstention_instruction')}\n\nQuestion: {q}"
    assert strategies.review_prompt(q, "plaid") == (f"{load('vizwiz_lf', 'review_instruction')}\n\nQuestion: {q}\n"
                                                    "Answer: plaid\nProblems:")
    assert strategies.revise_prompt(q, "plaid", "a pattern") == (
        f"{load('vizwiz_lf', 'revise_instruction')}\n\nQuestion: {q}\nAnswer: plaid\nProblems: a pattern\nRevised Answer:")
    [message] = strategies.consistency_messages(q, ["a", "b"])
    assert message["content"].endswith(f"Response 1: b\n\n{load('vizwiz_lf', 'consistency_instruction')}")
    assert strategies.contextual_prompt(scenario="travel", description="A stingray.", question="Any fish?") == \
        load("commvqa", "contextual").format(scenario="travel", description="A stingray.", question="Any fish?")
    for family, template in load("afgv", "short_answer_templates").items():
        assert strategies.short_answer_prompt(q, family=family) == template.format(question=q)
    assert models.QWEN2VL_CHAT_TEMPLATE == load("chat_templates", "qwen2vl")


def test_prompt_files_are_package_data_with_a_source_for_every_text():
    folder = resources.files("vqalib.runner").joinpath("prompts")
    files = sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))
    assert files == ["afgv.json", "chat_templates.json", "commvqa.json", "vizwiz_lf.json"]
    for name in files:
        for key, entry in prompt_file("vqalib.runner", name[:-len(".json")])["prompts"].items():
            assert set(entry) == {"source", "text"} and entry["source"], (name, key)
    with pytest.raises(KeyError, match="no prompt 'nope' in prompts/vizwiz_lf.json"):
        load_prompt("vqalib.runner", "vizwiz_lf", "nope")
    with pytest.raises(FileNotFoundError, match="no prompt file prompts/nope.json"):
        load_prompt("vqalib.runner", "nope", "x")


