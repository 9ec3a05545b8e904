"""Loading the model spec's VLMs and asking them one prompt about one image (VizWiz-LF A.1.3, CommVQA A.3, AFGV
Methods): checkpoints load through transformers' own classes (no forks, no remote code), registered builders
build theirs (:func:`vqalib.runner.model_specs.register`). Device: ``VQALIB_VQA_DEVICE``."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from vqalib.core import config
from vqalib.runner.model_specs import BUILDERS, ModelSpec, model_spec
from vqalib.core.prompts import load_prompt

DEVICE_ENV = "VQALIB_VQA_DEVICE"


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
            # the instruct model card's turn, as text= (images is the first positional); <end_of_utterance> written
            # here once, so the processor must not add its own
            inputs = proc(text=[["User:", image, f"{prompt}<end_of_utterance>", "\nAssistant:"]],
                          add_end_of_utterance_token=False, return_tensors="pt")
        else:  # blip, blip2, instructblip
            inputs = proc(images=image, text=prompt, return_tensors="pt")
        if family != "blip":
            inputs.pop("token_type_ids", None)  # BERT-style tokenizers add it; causal LMs reject it
        return inputs.to(self.device)

    def generate(self, image: Any, prompt: str, *, settings: dict, seed: int) -> str:
        """The model's answer to ``prompt`` about ``image`` (any strategy); its time, processor included, adds to
        ``model_seconds``.

        Parameters
        ----------
        image : PIL.Image.Image
            The RGB image.
        prompt : str
            The text prompt, put into the family's chat or turn format here.
        settings : dict
            Keyword arguments of ``generate`` (:func:`vqalib.runner.strategies.generation_settings`).
        seed : int
            Seeds a forked torch RNG, so a draw is the same in every engine and shard.

        Returns
        -------
        str
            The decoded new tokens (echoed prompt removed), stripped.
        """
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
            # the model card's exit condition: stopping only at </s> runs on into invented "User:" turns
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


# the chat template that Qwen/Qwen2-VL-7B-Instruct ships (the tests' tiny model uses it verbatim)
QWEN2VL_CHAT_TEMPLATE: str = load_prompt("vqalib.runner", "chat_templates", "qwen2vl")


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

    Without torchvision (not installed here) it has no video processor, which image prompts never reach.

    Parameters
    ----------
    image_processor : transformers image processor
        The Qwen2-VL image processor.
    tokenizer : transformers tokenizer
        The tokenizer.
    chat_template : str or None
        The chat template.
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
    """A checkpoint's model and processor from the hub or a local folder (VizWiz-LF A.1.3, CommVQA A.3, AFGV).

    Parameters
    ----------
    spec : ModelSpec
        The model spec (its ``family`` and ``model_class``).
    source : str or Path
        A hub id or a local checkpoint folder.
    revision : str or None
        The hub revision; None: the hub's default.
    dtype : str
        A torch dtype name, e.g. ``bfloat16``.

    Returns
    -------
    (model, processor) : tuple
        The model in ``dtype``, not moved to a device.
    """
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


def build_model(key: str, *, device: str | None = None, dtype: str | None = None,
                revision: str | None = None) -> VLM:
    """Load model ``key`` (VizWiz-LF A.1.3, CommVQA A.3, AFGV): by its registered builder, else from the hub.

    Parameters
    ----------
    key : str
        A key of :data:`vqalib.runner.model_specs.MODELS`.
    device : str, optional
        ``cuda``, ``cuda:N`` or ``cpu``; default :func:`default_device`.
    dtype : str, optional
        A torch dtype name; default the model spec's on ``cuda``, else ``float32``.
    revision : str, optional
        The hub revision; default the model spec's.
    """
    import torch

    spec = model_spec(key)
    device = device or default_device()
    dtype = dtype or (spec.dtype if device.startswith("cuda") else "float32")
    if key in BUILDERS:  # a registered builder (e.g. the tests' tiny random models): no download
        model, processor = BUILDERS[key](spec)
    else:
        revision = revision or spec.revision
        model, processor = load_pretrained(spec, source=spec.hub_id, revision=revision, dtype=dtype)
    return VLM(spec=spec, model=model.to(getattr(torch, dtype)), processor=processor, device=device, dtype=dtype,
               revision=revision)
