"""The model specs: the papers' open VLMs and their generation settings (VizWiz-LF A.1.3 / Table 25,
CommVQA A.3, AFGV Methods), plus models registered with :func:`register` or by ``VQALIB_MODEL_PLUGINS``."""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field
from typing import Callable

import pandas as pd

from vqalib.core import config


GREEDY = {"do_sample": False}


@dataclass(frozen=True)
class ModelSpec:
    """One registered VLM: hub id, revision, transformers class, generation settings (Table 25)."""

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
    test_model: bool = False  # random weights, meaningless answers: recorded in every record, skipped by the notebooks


# Revisions: the papers name no commits and the hub is unreachable here, so every entry
# uses "main"; pin a commit hash with --revision to freeze a reproduction.
MODELS: dict[str, ModelSpec] = {s.key: s for s in (
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
)}


PLUGINS_ENV = "VQALIB_MODEL_PLUGINS"
Builder = Callable[[ModelSpec], tuple]
BUILDERS: dict[str, Builder] = {}  # key -> builder of a registered model that does not load from the hub


def register(spec: ModelSpec, *, build: Builder | None = None) -> ModelSpec:
    """Add a model spec (a user's own model, or the tests' tiny models).

    Parameters
    ----------
    spec : ModelSpec
        The entry; its ``key`` must be new, or already registered with an equal spec.
    build : callable, optional
        ``build(spec) -> (model, processor)`` on CPU; None: loaded from ``spec.hub_id`` (a hub id or a folder).

    Returns
    -------
    ModelSpec
        ``spec``; a ``ValueError`` when its key is taken by another spec.
    """
    known = MODELS.get(spec.key)
    if known is not None and known != spec:
        raise ValueError(f"model {spec.key!r} is already registered with another spec; choose another key")
    MODELS[spec.key] = spec
    if build is None:
        BUILDERS.pop(spec.key, None)
    else:
        BUILDERS[spec.key] = build
    return spec


def load_plugins(modules: str | None = None) -> list[str]:
    """Import the modules that register extra models (they call :func:`register` when imported).

    Parameters
    ----------
    modules : str, optional
        Comma-separated module names; default ``$VQALIB_MODEL_PLUGINS``.

    Returns
    -------
    list of str
        The module names; one that cannot be imported is an ``ImportError`` naming the setting.
    """
    text = modules if modules is not None else config.get(PLUGINS_ENV)
    names = [name.strip() for name in (text or "").split(",") if name.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise ImportError(f"{PLUGINS_ENV}: cannot import model plugin {name!r} ({error}); "
                              f"is its folder on PYTHONPATH?") from error
    return names


def models_frame() -> pd.DataFrame:
    """The model specs as a table (VizWiz-LF A.1.3 / Table 25, CommVQA A.3, AFGV), plugins loaded."""
    load_plugins()
    return pd.DataFrame([{**asdict(s), "papers": ", ".join(s.papers)} for s in MODELS.values()])


def model_spec(key: str) -> ModelSpec:
    """The model spec ``key`` (VizWiz-LF A.1.3, CommVQA A.3, AFGV), plugins loaded.

    Parameters
    ----------
    key : str
        A key of :data:`MODELS`, e.g. ``llava-1.5-13b``.

    Returns
    -------
    ModelSpec
        The entry; a ``KeyError`` listing the known models when there is none.
    """
    load_plugins()
    if key not in MODELS:
        raise KeyError(f"unknown model {key!r}; known models: {', '.join(MODELS)}")
    return MODELS[key]
