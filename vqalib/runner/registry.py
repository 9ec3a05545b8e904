"""The model registry: the open VLMs of the three papers and their generation settings.

Serves VizWiz-LF Appendix A.1.3 and Table 25 (BLIP-2, InstructBLIP, LLaVA, the Qwen-VL stand-in and
their default and self-consistency decoding), CommVQA Appendix A.3 (LLaVA, IDEFICS, BLIP-2 OPT) and
the AFGV Methods ("VQA Models on AFGV": BLIP, InstructBLIP, LLaVA-1.5). Entries marked ``test_model``
are tiny random models built from configs (:func:`vqalib.runner.models.build_test_model`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import pandas as pd


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
    """The registry entry ``key`` (VizWiz-LF A.1.3, CommVQA A.3, AFGV).

    Parameters
    ----------
    key : str
        A key of :data:`REGISTRY`, e.g. ``llava-1.5-13b`` or ``tiny-blip``.

    Returns
    -------
    ModelSpec
        The entry; a ``KeyError`` listing the registry when there is none.
    """
    if key not in REGISTRY:
        raise KeyError(f"unknown model {key!r}; registry: {', '.join(REGISTRY)}")
    return REGISTRY[key]
