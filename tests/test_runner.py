"""Answer generation (vqalib.runner, vqalib.runner.images) with tiny random models built from configs: no download."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach the hub: test models are built from configs
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pandas as pd
import pytest

from conftest import bomb_png, gated_body, local_file_server, route_server, streamed_body
from tiny_models import TINY_MODELS, plugin_env  # importing it registers the tiny test models
from vqalib.compendium import cli
from vqalib.runner import (engines, handoff, judges, locks, models, questions as runner_questions, model_specs,
                           runfiles, strategies)
from vqalib.runner.images import ImageStore

pytestmark = pytest.mark.usefixtures("one_thread")
VOLATILE = {"seconds", "model_seconds", "started_at", "engine", "shard", "run_file"}
REQUIRED = {"schema", "dataset", "item_id", "question", "image", "image_sha256", "model", "model_id", "revision",
            "strategy", "item_key", "generation", "kind", "sample", "final", "answer", "item_records", "seconds",
            "error"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    from PIL import Image

    root = tmp_path_factory.mktemp("images")
    Image.new("RGB", (40, 30), (200, 10, 10)).save(root / "good.png")
    Image.new("RGB", (24, 24), (10, 200, 10)).save(root / "green.png")
    (root / "text.png").write_bytes(b"this is not an image")
    with zipfile.ZipFile(root / "images.zip", "w") as archive:
        archive.write(root / "green.png", "images/green.png")
    return {p.stem if p.suffix != ".zip" else "zip": p for p in root.iterdir()}


@pytest.fixture(scope="module")
def server(files):
    """A local HTTP server on 127.0.0.1 serving the image folder; counts GET requests per path."""
    with local_file_server(files["good"].parent) as served:
        yield served


@functools.lru_cache(maxsize=None)
def tiny(key: str) -> models.VLM:
    return models.build_model(key, device="cpu")


def make_items(n: int, image: Path, **extra) -> pd.DataFrame:
    frame = pd.DataFrame({"question_id": [str(i) for i in range(n)],
                          "question": [f"what is object {i}?" for i in range(n)], "image": [str(image)] * n,
                          "scenario": ["shopping"] * n, "description": ["A red square."] * n, **extra})
    return runner_questions.table_items(frame)


def stable(records) -> list[dict]:
    rows = records.to_dict("records") if isinstance(records, pd.DataFrame) else records
    cleaned = [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]
    return sorted(cleaned, key=lambda r: (r["item_key"], r["sample"]))


def raw_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- model specs and prompts -------------------------------------------------------------------------

def test_model_specs_hold_the_papers_models_with_table25_settings():
    keys = set(model_specs.MODELS)
    assert {"blip2-flan-t5-xxl", "instructblip-flan-t5-xxl", "llava-1.5-7b", "llava-1.5-13b", "qwen2-vl-7b-instruct",
            "idefics-9b-instruct", "blip-vqa-base", "blip2-opt-2.7b"} <= keys
    real = [s for s in model_specs.MODELS.values() if not s.test_model]
    assert all(s.revision == "main" and "/" in s.hub_id for s in real)
    assert all(s.hub_id.startswith("test://") for s in model_specs.MODELS.values() if s.test_model)
    assert "STAND-IN" in model_specs.model_spec("qwen2-vl-7b-instruct").note
    import transformers

    assert all(hasattr(transformers, s.model_class) for s in model_specs.MODELS.values())  # transformers' own classes
    # Table 25: defaults and self-consistency columns
    blip2 = model_specs.model_spec("blip2-flan-t5-xxl")
    assert blip2.generation == {"do_sample": False, "top_p": 1.0, "temperature": 1.0}
    assert strategies.generation_settings(blip2, "self-consistency", max_new_tokens=9) == {
        "do_sample": True, "temperature": 0.7, "top_p": 0.7, "max_new_tokens": 9}
    assert strategies.generation_settings(blip2, "vanilla")["do_sample"] is False
    assert model_specs.model_spec("llava-1.5-13b").consistency == {"do_sample": True, "temperature": 0.7}
    assert model_specs.model_spec("instructblip-flan-t5-xxl").consistency == {"do_sample": True, "temperature": 0.7}
    qwen = model_specs.model_spec("qwen2-vl-7b-instruct")
    assert strategies.generation_settings(qwen, "abstention")["top_p"] == 0.3
    assert strategies.generation_settings(qwen, "abstention-consistency")["top_p"] == 0.7
    # the stand-in's own generation_config must not make Table 25's sampling near-greedy
    assert strategies.generation_settings(qwen, "self-consistency")["top_k"] == 0
    assert strategies.generation_settings(qwen, "vanilla")["temperature"] == 1.0
    assert strategies.generation_settings(qwen, "commvqa-contextual")["do_sample"] is False  # CommVQA §5 greedy
    frame = model_specs.models_frame()
    assert len(frame) == len(model_specs.MODELS) and frame["test_model"].sum() == len(TINY_MODELS) == 6


def test_a_registered_model_is_built_by_its_builder_and_listed(monkeypatch, capsys):
    """model_specs.register: a user's own model (spec + builder) runs like a built-in one; a taken key is refused."""
    monkeypatch.setattr(model_specs, "MODELS", dict(model_specs.MODELS))
    monkeypatch.setattr(model_specs, "BUILDERS", dict(model_specs.BUILDERS))
    monkeypatch.setattr(models, "BUILDERS", model_specs.BUILDERS)
    tiny_blip = model_specs.model_spec("tiny-blip")
    spec = model_specs.register(dataclasses.replace(tiny_blip, key="my-model", hub_id="mine://my-model", test_model=False),
                             build=model_specs.BUILDERS["tiny-blip"])
    vlm = models.build_model("my-model", device="cpu")
    assert vlm.spec is spec and vlm.revision == spec.revision and vlm.model.dtype.is_floating_point
    assert model_specs.register(spec) is spec and "my-model" not in model_specs.BUILDERS  # same spec again: now from hub_id
    with pytest.raises(ValueError, match="model 'tiny-blip' is already registered with another spec"):
        model_specs.register(dataclasses.replace(tiny_blip, note="another"))
    assert cli.main(["models"]) == 0 and "mine://my-model" in capsys.readouterr().out


def test_model_plugins_setting_imports_modules_and_names_a_missing_one(monkeypatch, tmp_path):
    (tmp_path / "my_vqalib_plugin.py").write_text(
        "import dataclasses\nfrom vqalib.runner import model_specs\n"
        "model_specs.register(dataclasses.replace(model_specs.model_spec('blip-vqa-base'), key='plugged-in'))\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(model_specs, "MODELS", dict(model_specs.MODELS))
    monkeypatch.setenv("VQALIB_MODEL_PLUGINS", " my_vqalib_plugin , ")
    assert model_specs.model_spec("plugged-in").hub_id == "Salesforce/blip-vqa-base"
    monkeypatch.setenv("VQALIB_MODEL_PLUGINS", "no_such_vqalib_plugin")
    with pytest.raises(ImportError, match="VQALIB_MODEL_PLUGINS: cannot import model plugin 'no_such_vqalib_plugin'"):
        model_specs.model_spec("blip-vqa-base")


def test_prompts_follow_tables_22_to_24_and_commvqa_a1():
    q = "What color is the jumper"
    assert strategies.abstention_prompt(q).startswith("You are a helpful assistant that is answering questions about images "
                                               "for blind and low vision individuals.")
    assert strategies.abstention_prompt(q).endswith(f"Question: {q}")
    assert strategies.review_prompt(q, "plaid").endswith("Question: What color is the jumper\nAnswer: plaid\nProblems:")
    revise = strategies.revise_prompt(q, "plaid", "Plaid is a pattern, not a color.")
    assert "only output the revised correct answer" in revise and revise.endswith("Revised Answer:")
    [message] = strategies.consistency_messages("What is this box?", ["a", "b", "c", "d", "e"])
    assert message["content"].startswith("I have generated the following responses to the question: What is this box?")
    assert "Response 4: e" in message["content"] and "The most consistent response is Response X." in message["content"]
    assert strategies.parse_consistency_choice("The most consistent response is Response 3.", n=5) == 3
    assert strategies.parse_consistency_choice("Response 7", n=5) is None
    assert strategies.parse_consistency_choice("no idea", n=5) is None
    context = strategies.contextual_prompt(scenario="travel", description="A stingray.", question="Any fish?")
    assert context.startswith("Assume someone is browsing a travel website") and context.endswith("Question: Any fish?")
    assert strategies.short_answer_prompt("Bus color?", family="llava").endswith("single word or phrase.")
    assert strategies.short_answer_prompt("Bus color?", family="blip") == "Bus color?"


# --- strategies end to end ------------------------------------------------------------------------

EXPECTED_RECORDS = {"self-consistency": 6, "abstention-consistency": 6}


@pytest.mark.parametrize("strategy", list(strategies.STRATEGIES))
def test_every_strategy_runs_end_to_end(strategy, files, tmp_path):
    out = tmp_path / "run.jsonl"
    items = make_items(2, files["good"])
    summary = engines.run_generation(items, model=tiny("tiny-blip2"), strategy=strategy, dataset="table", out=out,
                                 judge=judges.TestJudge(mode="2"), progress=False)
    lines = raw_lines(out)
    per_item = EXPECTED_RECORDS.get(strategy, 1)
    assert summary.written_items == 2 and summary.records == len(lines) == 2 * per_item and not summary.errors
    for record in lines:
        assert REQUIRED <= set(record) and record["error"] is None
        assert record["model_id"] == "test://tiny-blip2" and record["test_model"] is True
        assert record["item_records"] == per_item and isinstance(record["answer"], str)
        assert record["image_sha256"] and len(record["image_sha256"]) == 64
    finals = [r for r in lines if r["final"]]
    assert len(finals) == 2
    if per_item > 1:  # 5 draws sampled with Table 25's settings, then the judge's pick
        draws = [r for r in lines if r["kind"] == "draw"]
        assert [r["sample"] for r in draws[:5]] == list(range(5))
        assert draws[0]["generation"] == {"do_sample": True, "temperature": 0.7, "top_p": 0.7, "max_new_tokens": 6}
        assert all(f["kind"] == "aggregate" and f["judge"]["choice"] == 2 for f in finals)
        assert finals[0]["answer"] == draws[2]["answer"]
        assert finals[0]["prompt"].startswith("I have generated the following responses")
    elif strategy == "self-correction":
        assert [s["stage"] for s in finals[0]["stages"]] == [1, 2, 3]
        assert finals[0]["stages"][1]["prompt"].startswith(strategies.REVIEW_INSTRUCTION)
        assert finals[0]["prompt"].endswith("Revised Answer:") and finals[0]["answer"] == finals[0]["stages"][2]["output"]
    if strategy.startswith("abstention"):
        assert all(r["prompt"].startswith(strategies.ABSTENTION_INSTRUCTION) for r in lines if r["kind"] in ("draw", "answer"))
    if strategy == "commvqa-contextual":
        assert finals[0]["prompt"].startswith("Assume someone is browsing a shopping website")
    assert "what is object" not in finals[0]["answer"]  # the decoder-only model's echoed prompt is cut


@pytest.mark.parametrize("key", ["tiny-blip", "tiny-instructblip", "tiny-llava", "tiny-idefics", "tiny-qwen2vl"])
def test_each_model_family_answers(key, files, tmp_path):
    out = tmp_path / "run.jsonl"
    summary = engines.run_generation(make_items(1, files["good"]), model=tiny(key), strategy="short-answer",
                                 dataset="afgv", out=out, progress=False)
    [record] = raw_lines(out)
    assert summary.written_items == 1 and record["kind"] == "answer" and record["answer"]
    assert record["prompt"] == strategies.short_answer_prompt("what is object 0?", family=tiny(key).spec.family)
    # neither the prompt nor the chat/turn markup around it is echoed (BERT decodes "Assistant:" as "assistant :")
    echoes = ("what is object", "single word or phrase", "short answer", "helpful assistant", "assistant :")
    assert not any(echo in record["answer"].lower() for echo in echoes)


def spy_generate(vlm: models.VLM, monkeypatch) -> dict:
    """Record the keyword arguments that ``vlm`` passes to the transformers model's generate()."""
    seen: dict = {}
    original = vlm.model.generate

    def spy(**kwargs):
        seen.update(kwargs)
        return original(**kwargs)
    monkeypatch.setattr(vlm.model, "generate", spy)
    return seen


def test_idefics_inputs_are_the_instruct_turn_and_stop_at_end_of_utterance(files, monkeypatch):
    """CommVQA A.3 IDEFICS-9B-instruct: User:<image>{prompt}<end_of_utterance>\nAssistant: with one end mark."""
    from PIL import Image

    vlm = tiny("tiny-idefics")
    tok = vlm.processor.tokenizer
    prompt = strategies.contextual_prompt(scenario="shopping", description="A red square.", question="What color?")
    inputs = vlm._inputs(Image.open(files["good"]), prompt)
    tokens = tok.convert_ids_to_tokens(inputs["input_ids"][0])
    assert tokens[:6] == [tok.bos_token, "user", ":", "<fake_token_around_image>", "<image>",
                          "<fake_token_around_image>"]
    assert tokens.count("<end_of_utterance>") == 1 and tokens[-3:] == ["<end_of_utterance>", "assistant", ":"]
    assert tok.decode(inputs["input_ids"][0][6:-3]) == tok.decode(tok(prompt, add_special_tokens=False).input_ids)
    assert inputs["pixel_values"].shape == (1, 1, 3, 32, 32) and inputs["image_attention_mask"][0, 4:].all()
    seen = spy_generate(vlm, monkeypatch)
    answer = vlm.generate(Image.open(files["good"]), prompt, settings={"do_sample": False, "max_new_tokens": 6},
                          seed=0)
    eou = tok.convert_tokens_to_ids("<end_of_utterance>")
    assert eou in seen["eos_token_id"] and tok.eos_token_id in seen["eos_token_id"]
    assert sorted(seen["bad_words_ids"]) == sorted([[tok.convert_tokens_to_ids("<image>")],
                                                    [tok.convert_tokens_to_ids("<fake_token_around_image>")]])
    assert answer and "shopping" not in answer


def test_qwen2vl_inputs_follow_its_chat_template(files, monkeypatch):
    """VizWiz-LF A.1.3 stand-in Qwen2-VL: system turn, image pads (one per merged patch), then the prompt."""
    from PIL import Image

    vlm = tiny("tiny-qwen2vl")
    tok = vlm.processor.tokenizer
    prompt = strategies.abstention_prompt("What is this?")
    inputs = vlm._inputs(Image.open(files["good"]), prompt)
    text = tok.decode(inputs["input_ids"][0], skip_special_tokens=False)
    assert "<|im_start|> system you are a helpful assistant. <|im_end|> <|im_start|> user <|vision_start|>" in text
    pads = int(inputs["image_grid_thw"].prod()) // vlm.processor.image_processor.merge_size ** 2
    assert pads >= 1 and ("<|image_pad|> " * pads + "<|vision_end|> you are a helpful assistant") in text
    assert "question : what is this? <|im_end|> <|im_start|> assistant" in text
    assert (inputs["input_ids"][0] == vlm.model.config.image_token_id).sum() == pads
    assert "token_type_ids" not in inputs and "mm_token_type_ids" in inputs  # M-RoPE positions need the latter
    seen = spy_generate(vlm, monkeypatch)
    settings = strategies.generation_settings(vlm.spec, "abstention", max_new_tokens=4)
    draws = {vlm.generate(Image.open(files["good"]), prompt, settings=settings, seed=seed) for seed in range(3)}
    assert seen["do_sample"] is True and seen["top_p"] == 0.3  # Table 25 QWEN
    assert len(draws) > 1 and not any("helpful assistant" in d or "unanswerable" in d for d in draws)


@pytest.mark.parametrize("key, real", [("tiny-idefics", "idefics-9b-instruct"),
                                       ("tiny-qwen2vl", "qwen2-vl-7b-instruct")])
def test_real_checkpoint_loader_reads_a_saved_tiny_model(key, real, files, tmp_path):
    """build_model's hub path (load_pretrained) on a folder laid out like the checkpoint: same inputs, same answer."""
    from PIL import Image

    built = tiny(key)
    built.model.save_pretrained(tmp_path)
    if key == "tiny-qwen2vl":  # without torchvision there is no video processor to save
        built.processor.tokenizer.save_pretrained(tmp_path)
        built.processor.image_processor.save_pretrained(tmp_path)
        (tmp_path / "chat_template.jinja").write_text(built.processor.chat_template, encoding="utf-8")
    else:
        built.processor.save_pretrained(tmp_path)
    spec = model_specs.model_spec(real)
    model, processor = models.load_pretrained(spec, source=tmp_path, revision=spec.revision, dtype="float32")
    loaded = models.VLM(spec=spec, model=model, processor=processor, device="cpu", dtype="float32")
    image, prompt = Image.open(files["good"]), strategies.vanilla_prompt("What is this?")
    before, after = built._inputs(image, prompt), loaded._inputs(image, prompt)
    assert set(before) == set(after) and all((before[k] == after[k]).all() for k in before)
    settings = {"do_sample": False, "num_beams": 1, "max_new_tokens": 6}
    assert loaded.generate(image, prompt, settings=settings, seed=0) == built.generate(image, prompt,
                                                                                      settings=settings, seed=0)


# --- images ---------------------------------------------------------------------------------------

def test_commvqa_without_images_gives_error_rows_naming_the_fix(data_dir, tmp_path):
    items = runner_questions.commvqa_items(images=None, data_dir=data_dir)
    assert len(items) == 2984 and items["image"].str.startswith("missing:").all()
    out = tmp_path / "commvqa.jsonl"
    summary = engines.run_generation(items, model=tiny("tiny-blip"), strategy="commvqa-contextual", dataset="commvqa",
                                 out=out, limit=2, progress=False)
    assert summary.errors == {"image": 2}
    assert all("images.zip" in r["error"]["message"] for r in raw_lines(out))
    vizwiz = runner_questions.vizwiz_items(data_dir=data_dir)
    assert len(vizwiz) == 600 and vizwiz["image"].str.startswith("https://vizwiz.cs.colorado.edu/").all()


# --- errors become counted records ----------------------------------------------------------------

class FlakyVLM:
    """Wraps a tiny model: raises ``error`` when the prompt contains ``trigger``."""

    def __init__(self, inner, *, trigger: str, error: BaseException) -> None:
        self.inner, self.trigger, self.error = inner, trigger, error

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, image, prompt, *, settings, seed):
        if self.trigger in prompt:
            raise self.error
        return self.inner.generate(image, prompt, settings=settings, seed=seed)


def test_bad_images_model_errors_and_judge_failures_are_counted_records(server, files, tmp_path):
    base, _ = server
    items = runner_questions.table_items(pd.DataFrame({
        "question_id": ["ok", "missing", "text", "404", "boom", "ok2"],
        "question": ["what?", "what?", "what?", "what?", "boom?", "what?"],
        "image": [str(files["good"]), str(files["good"].parent / "nope.png"), str(files["text"]),
                  f"{base}/absent.png", str(files["good"]), f"{base}/good.png"]}))
    flaky = FlakyVLM(tiny("tiny-blip"), trigger="boom", error=RuntimeError("CUDA out of memory (simulated)"))
    out = tmp_path / "runs" / "errors.jsonl"
    summary = engines.run_generation(items, model=flaky, strategy="vanilla", dataset="table", out=out, progress=False,
                                 store=ImageStore(cache_dir=tmp_path / "cache"))
    assert summary.written_items == 6 and summary.errors == {"image": 3, "model": 1}
    by_id = {r["item_id"]: r for r in raw_lines(out)}
    assert by_id["ok"]["kind"] == by_id["ok2"]["kind"] == "answer"  # the run went on after each failure
    assert by_id["boom"]["error"] == {"stage": "model", "type": "RuntimeError",
                                      "message": "CUDA out of memory (simulated)"}
    assert by_id["text"]["error"]["stage"] == "image" and "decodable" in by_id["text"]["error"]["message"]

    judged = tmp_path / "runs" / "judge.jsonl"
    for mode in ("fail", "garbage"):
        summary = engines.run_generation(items.iloc[:1].assign(item_id=mode), model=tiny("tiny-blip"),
                                     strategy="self-consistency", dataset="table", out=judged,
                                     judge=judges.TestJudge(mode=mode), progress=False)
        assert summary.errors == {"judge": 1} and summary.records == 6  # 5 draws kept + the judge error
    errors = [r for r in raw_lines(judged) if r["kind"] == "error"]
    assert [e["error"]["type"] for e in errors] == ["JudgeError", "JudgeError"]
    assert "unparseable" in errors[1]["error"]["message"]
    with pytest.raises(ValueError, match="LLM judge"):
        engines.run_generation(items, model="tiny-blip", strategy="self-consistency", dataset="table",
                           out=tmp_path / "x.jsonl", judge=None, progress=False)

    runs = handoff.discover_runs(tmp_path / "runs").set_index("name")
    assert runs.loc["errors", ["records", "answers", "errors", "image_errors", "model_errors"]].tolist() == [6, 2, 4, 3, 1]
    assert runs.loc["judge", ["strategy", "judge_errors", "records"]].tolist() == ["self-consistency", 2, 12]
    table = handoff.load_run(out, finals_only=True)
    assert len(table) == 6 and table["kind"].value_counts().to_dict() == {"error": 4, "answer": 2}


# --- resume, shards, engines ----------------------------------------------------------------------

@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_interrupted_run_resumes_without_loss_or_duplicates(files, tmp_path):
    items = make_items(6, files["good"])
    reference = tmp_path / "reference.jsonl"
    engines.run_generation(items, model=tiny("tiny-blip"), strategy="self-consistency", dataset="table", out=reference,
                       judge=judges.TestJudge(mode="1"), progress=False)

    out = tmp_path / "interrupted.jsonl"
    dying = FlakyVLM(tiny("tiny-blip"), trigger="object 3", error=KeyboardInterrupt())  # not an item error: stops the run
    with pytest.raises(KeyboardInterrupt):
        engines.run_generation(items, model=dying, strategy="self-consistency", dataset="table", out=out,
                           judge=judges.TestJudge(mode="1"), progress=False)
    assert len(raw_lines(out)) == 3 * 6
    # a crash during the next write: two whole lines of question 3's block and a cut third line
    block = [line + "\n" for line in reference.read_text().splitlines() if '"item_id": "3"' in line]
    with open(out, "a", encoding="utf-8") as handle:
        handle.write(block[0] + block[1] + block[2][:40])

    summary = engines.run_generation(items, model=tiny("tiny-blip"), strategy="self-consistency", dataset="table",
                                 out=out, judge=judges.TestJudge(mode="1"), progress=False)
    assert summary.repaired_lines == 3 and summary.skipped_finished == 3 and summary.written_items == 3
    lines = raw_lines(out)  # every line parses again
    keys = [(r["item_key"], r["sample"]) for r in lines]
    assert len(keys) == len(set(keys)) == 6 * 6
    assert stable(lines) == stable(raw_lines(reference))
    again = engines.run_generation(items, model=tiny("tiny-blip"), strategy="self-consistency", dataset="table",
                               out=out, judge=judges.TestJudge(mode="1"), progress=False)
    assert again.written_items == 0 and again.skipped_finished == 6 and again.repaired_lines == 0


REPO = Path(__file__).resolve().parents[1]
# image reads wait as long as a test's gate is closed
CHILD_ENV = {**plugin_env(), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VQALIB_IMAGE_TIMEOUT": "600",
             "VQALIB_IMAGE_DEADLINE": "600"}  # plugin_env: the subprocesses register the tiny models too


def question_file(path: Path, images: list[str]) -> Path:
    make_items(len(images), Path("unused")).drop(columns=["item_id"]).assign(image=images).to_csv(path, index=False)
    return path


def wait_until(condition, *, what: str, log: Path | None = None, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout} s" + (
            f":\n{log.read_text()[-3000:]}" if log and log.exists() else "")
        time.sleep(0.01)


@pytest.mark.full  # CLI runs in subprocesses, one killed: with the two-writer trials in `make test-full`
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_subprocess_resumes_without_loss_or_duplicates(files, tmp_path):
    """SIGKILL a real CLI run midway, rerun the same command: the file equals an uninterrupted run's."""
    n, gate_at = 24, 16
    # question 16's image comes from a local server that answers only once the gate opens, so however fast the
    # machine, the run cannot finish before the kill (at most 16 questions done) and no sleep decides it
    gate = threading.Event()
    with route_server({"/gate.png": gated_body(files["good"].read_bytes(), gate=gate)}) as server:
        try:
            images = [f"{server.url}/gate.png" if i == gate_at else str(files["good"]) for i in range(n)]
            questions = question_file(tmp_path / "questions.csv", images)
            out, reference = tmp_path / "killed.jsonl", tmp_path / "reference.jsonl"
            args = ["run", "--model", "tiny-blip", "--strategy", "self-consistency", "--dataset", "table",
                    "--questions", str(questions), "--judge", "test:1", "--device", "cpu", "--no-progress",
                    "--threads", "1", "--image-cache", str(tmp_path / "cache")]
            command = [sys.executable, "-m", "vqalib", *args, "--out", str(out)]
            log = tmp_path / "first.log"
            with open(log, "wb") as sink:
                child = subprocess.Popen(command, cwd=REPO, env=CHILD_ENV, stdout=sink, stderr=subprocess.STDOUT)
            try:
                wait_until(lambda: runfiles.scan_run(out).finished or child.poll() is not None,
                           what="a finished question", log=log)  # kill as soon as one question's block is on disk
                assert child.poll() is None, f"the run ended before the kill:\n{log.read_text()[-3000:]}"
                child.send_signal(signal.SIGKILL)
                child.wait(timeout=30)
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
            assert child.returncode == -signal.SIGKILL
            killed = runfiles.scan_run(out)
            done = len(killed.finished)
            assert 1 <= done <= gate_at
            kept = out.read_bytes()[:killed.good_bytes]  # a kill inside a long write() may leave part of a block
            # the dead run's record stays in the lock file, but the kernel dropped its lock: it blocks nothing
            assert json.loads(locks.run_lock_path(out).read_text())["pid"] == child.pid

            gate.set()
            resumed = subprocess.run(command, cwd=REPO, env=CHILD_ENV, capture_output=True, text=True, timeout=300)
        finally:
            gate.set()
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"{n - done} questions written" in resumed.stdout and f"{done} already finished" in resumed.stdout
        assert f"{killed.bad_lines} damaged lines repaired" in resumed.stdout
        assert cli.main([*args, "--out", str(reference)]) == 0  # the uninterrupted run, same command

    assert out.read_bytes().startswith(kept)  # the finished questions were kept byte for byte, not redone
    lines = raw_lines(out)  # every line parses
    keys = [(r["item_key"], r["sample"]) for r in lines]
    assert len(keys) == len(set(keys)) == n * 6
    expected = {runfiles.item_key(dataset="table", item_id=str(i), model="tiny-blip", strategy="self-consistency")
                for i in range(n)}
    assert set(runfiles.scan_run(out).finished) == {r["item_key"] for r in lines if r["final"]} == expected
    assert stable(lines) == stable(raw_lines(reference))
    assert locks.run_lock_path(out).read_text() == ""  # released and cleared by the resumed run


def question_blocks(path: Path) -> dict[str, int]:
    """How many complete blocks each question has in a run file."""
    counts: dict[str, int] = {}
    for block in _blocks(runfiles.scan_run(path).records):
        counts[block[0]["item_key"]] = counts.get(block[0]["item_key"], 0) + 1
    return counts


def _blocks(records: list[dict]):
    start = 0
    while start < len(records):
        end = start + records[start]["item_records"]
        yield records[start:end]
        start = end


@pytest.mark.full  # CLI runs in subprocesses: with the two-writer trials in `make test-full`
def test_one_writer_per_run_file_others_are_refused_naming_it_or_wait(files, tmp_path):
    """Real CLI processes on one --out: while one writes, another shard and an identical run are refused with the
    holder named (exit 75); with --wait a run waits, then skips what the first finished: nothing lost or doubled."""
    n, gate_at = 8, 2
    gate = threading.Event()
    with route_server({"/gate.png": gated_body(files["good"].read_bytes(), gate=gate)}) as server:
        try:
            images = [f"{server.url}/gate.png" if i == gate_at else str(files["good"]) for i in range(n)]
            out = tmp_path / "runs" / "shared.jsonl"
            common = ["--model", "tiny-blip", "--strategy", "vanilla", "--dataset", "table", "--questions",
                      str(question_file(tmp_path / "questions.csv", images)), "--out", str(out), "--device", "cpu",
                      "--no-progress", "--threads", "1", "--image-cache", str(tmp_path / "cache")]

            def start(name: str, *extra: str) -> tuple[subprocess.Popen, Path, Path]:
                stdout, stderr = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
                with open(stdout, "wb") as o, open(stderr, "wb") as e:
                    child = subprocess.Popen([sys.executable, "-m", "vqalib", "run", *common, *extra], cwd=REPO,
                                             env=CHILD_ENV, stdout=o, stderr=e)
                return child, stdout, stderr

            first, first_out, first_err = start("first", "--shard", "0/1")
            wait_until(lambda: server.hits.get("/gate.png") or first.poll() is not None,
                       what="the first run at the gate", log=first_err)
            assert first.poll() is None  # it holds the lock, halfway through
            shard, shard_out, shard_err = start("shard", "--shard", "1/2")
            twin, twin_out, twin_err = start("twin", "--shard", "0/1")
            waiter, waiter_out, waiter_err = start("waiter", "--shard", "0/1", "--wait")
            assert shard.wait(timeout=120) == twin.wait(timeout=120) == locks.LOCK_REFUSED_EXIT == 75
            for err in (shard_err, twin_err):
                message = err.read_text()
                assert f"run file {out} is being written by another run: pid {first.pid} on host " \
                       f"{socket.gethostname()}, started 20" in message
                assert "command: " in message and "--shard 0/1" in message and "Wait for it with --wait" in message
                assert "Traceback" not in message
            wait_until(lambda: "waiting for run file" in waiter_err.read_text() or waiter.poll() is not None,
                       what="the --wait run waiting", log=waiter_err)
            assert waiter.poll() is None and f"pid {first.pid}" in waiter_err.read_text()
            assert question_blocks(out) and len(question_blocks(out)) <= gate_at  # no one else wrote meanwhile
        finally:
            gate.set()
        assert first.wait(timeout=120) == 0, first_err.read_text()[-3000:]
        assert waiter.wait(timeout=120) == 0, waiter_err.read_text()[-3000:]
    assert f"{n} questions written" in first_out.read_text()
    assert "0 questions written" in waiter_out.read_text() and f"{n} already finished" in waiter_out.read_text()
    expected = {runfiles.item_key(dataset="table", item_id=str(i), model="tiny-blip", strategy="vanilla") for i in range(n)}
    assert question_blocks(out) == dict.fromkeys(expected, 1)  # each question once: none lost, none doubled
    assert locks.run_lock_path(out).read_text() == ""


def test_repair_happens_only_under_the_lock(files, tmp_path):
    """A second writer's repair used to cut the first one's appends: now it is refused instead."""
    items = make_items(3, files["good"])
    out = tmp_path / "run.jsonl"
    engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=out, progress=False)
    with open(out, "a", encoding="utf-8") as handle:  # an incomplete question at the end: a repair would cut it
        handle.write(json.dumps({"item_key": "table|9|tiny-blip|vanilla", "item_records": 2}) + "\n" + '{"item_k')
    size = out.stat().st_size
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)
    with locks.RunLock(out) as held:
        holder = json.loads(locks.run_lock_path(out).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname() and holder["command"]
        assert holder["started_at"].endswith("+00:00") and holder["out"] == str(out)
        with pytest.raises(locks.RunLockedError, match=rf"pid {os.getpid()} on host .*, started .*, command: "):
            runfiles.repair_run(out)
        with pytest.raises(locks.RunLockedError):  # another name of the same file shares its lock
            runfiles.repair_run(link)
        messages = []
        with pytest.raises(locks.RunLockedError, match=r"after waiting 0 s"):
            locks.RunLock(out, wait=0.3, poll=0.05, on_wait=messages.append).acquire()
        assert messages == [f"waiting for run file {out}: held by pid {os.getpid()} on host {socket.gethostname()}, "
                            f"started {holder['started_at']}, command: {holder['command']}"]
        with pytest.raises(locks.RunLockedError):
            engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=out,
                               progress=False)
        assert out.stat().st_size == size  # nothing cut while another process may be appending
        with pytest.raises(ValueError, match="not a held lock of this run file"):
            runfiles.repair_run(tmp_path / "other.jsonl", lock=held)
        assert runfiles.repair_run(out, lock=held).bad_lines == 2  # the holder itself may repair
    assert locks.run_lock_path(out).read_text() == ""  # released: the record is cleared
    summary = engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=out,
                                 progress=False, wait=math.inf)
    assert summary.skipped_finished == 3 and summary.repaired_lines == 0 and len(raw_lines(out)) == 3


def test_discover_runs_counts_each_question_once(files, tmp_path):
    """Two identical runs on one file (before the lock) reported 80 answers for 40 questions; a retried error
    written right after its first attempt must not count, or load, twice either."""
    runs = tmp_path / "runs"
    items = make_items(4, files["good"])
    out = runs / "twice.jsonl"
    engines.run_generation(items, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=out, progress=False)
    out.write_bytes(out.read_bytes() * 2)  # what the unlocked double run left behind
    retried = runs / "retried.jsonl"
    broken = runner_questions.table_items(pd.DataFrame({"question_id": ["0"], "question": ["what?"],
                                           "image": [str(tmp_path / "later.png")]}))
    engines.run_generation(broken, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=retried,
                       progress=False)
    (tmp_path / "later.png").write_bytes(files["good"].read_bytes())
    engines.run_generation(broken, model=tiny("tiny-blip"), strategy="vanilla", dataset="table", out=retried,
                       progress=False, retry_errors=True)
    found = handoff.discover_runs(runs).set_index("name")
    assert found.loc["twice", ["records", "questions", "answers", "errors"]].tolist() == [8, 4, 4, 0]
    counts = ["records", "questions", "answers", "errors", "image_errors"]
    assert found.loc["retried", counts].tolist() == [2, 1, 1, 0, 0]
    assert len(handoff.load_run(out, finals_only=True)) == 4
    [final] = handoff.load_run(retried, finals_only=True).to_dict("records")
    assert final["kind"] == "answer"


@pytest.mark.full  # a runner CLI run in a subprocess (about 5 s): make test-full, keeping the cold make test within its budget
def test_hostile_images_in_a_cli_run_become_error_records_and_resume_completes(files, tmp_path, capsys):
    """A 31 KB PNG of 16000 x 16000, an HTML page, a 300 MB body, a named pipe, a directory and a device: each an
    image error record of a real CLI run that exits 0; the rerun completes; --retry-errors fetches them again."""
    fifo = tmp_path / "pipe.png"
    if hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
    html = b"<!DOCTYPE html><html><body>Please sign in.</body></html>"
    routes = {"/good.png": ("image/png", files["good"].read_bytes()), "/bomb.png": ("image/png", bomb_png()),
              "/page.jpg": ("text/html", html), "/huge.jpg": streamed_body(300 * 2**20, declare_length=False)}
    with route_server(routes) as server:
        images = [str(files["good"]), f"{server.url}/bomb.png", f"{server.url}/page.jpg", f"{server.url}/huge.jpg",
                  str(fifo) if hasattr(os, "mkfifo") else str(tmp_path / "absent.png"), str(tmp_path), os.devnull,
                  f"{server.url}/good.png"]
        out = tmp_path / "hostile.jsonl"
        args = ["run", "--model", "tiny-blip", "--strategy", "vanilla", "--dataset", "table", "--questions",
                str(question_file(tmp_path / "questions.csv", images)), "--out", str(out), "--device", "cpu",
                "--no-progress", "--threads", "1", "--image-cache", str(tmp_path / "cache")]
        child = subprocess.Popen([sys.executable, "-m", "vqalib", *args], cwd=REPO, env=CHILD_ENV,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = child.communicate(timeout=300)  # a pipe that blocked the run would time out here
        finally:
            child.kill()
        assert child.returncode == 0, stderr[-3000:]
        assert "8 questions written" in stdout and "errors: image 6" in stdout
        records = {int(r["item_id"]): r for r in raw_lines(out)}
        assert records[0]["kind"] == records[7]["kind"] == "answer"
        messages = {i: r["error"]["message"] for i, r in records.items() if r["kind"] == "error"}
        assert "pixel cap" in messages[1] and "decompression bomb" in messages[1]
        assert "the server sent text/html" in messages[2] and "not cached" in messages[2]
        assert "over the 50.0 MiB cap" in messages[3]
        assert ("named pipe" in messages[4]) if hasattr(os, "mkfifo") else ("cannot read" in messages[4])
        assert "a directory, not a regular file" in messages[5] and "a character device" in messages[6]
        assert all(r["error"]["stage"] == "image" for r in records.values() if r["kind"] == "error")
        cached = sorted(p.name for p in (tmp_path / "cache").iterdir())
        assert len(cached) == 2 and not any(name.endswith(".part") for name in cached)  # good.png and its record

        assert cli.main(args) == 0  # the resume completes: nothing left to do
        assert "0 questions written (0 records), 8 already finished" in capsys.readouterr().out
        routes["/page.jpg"] = ("image/jpeg", files["green"].read_bytes())  # the server is fixed
        assert cli.main([*args, "--retry-errors"]) == 0
        assert "6 questions written (6 records), 2 already finished, errors: image 5" in capsys.readouterr().out
        assert {k: server.hits[k] for k in ("/bomb.png", "/page.jpg", "/huge.jpg", "/good.png")} == {
            "/bomb.png": 2, "/page.jpg": 2, "/huge.jpg": 2, "/good.png": 1}  # refused bodies are fetched again
    finals = handoff.load_run(out, finals_only=True).set_index("item_id")
    assert len(finals) == 8 and finals.loc["2", "kind"] == "answer"


def test_a_trickling_image_becomes_an_error_record_and_an_unwritable_cache_keeps_the_answers(files, tmp_path,
                                                                                              monkeypatch, capsys):
    """In a real CLI run: a server sending 2 bytes/s is cut at VQALIB_IMAGE_DEADLINE, and that question becomes a
    counted image error naming the URL and the setting; a cache that cannot be written (a file where its folder should
    be) is warned about once, naming it, and the downloaded images are answered, not lost with the batch."""
    from test_images import trickle

    monkeypatch.setenv("VQALIB_IMAGE_DEADLINE", "1.5")
    (tmp_path / "blocker").write_text("not a folder")
    cache = tmp_path / "blocker" / "images"
    routes = {"/good.png": ("image/png", files["good"].read_bytes()),
              "/slow.png": trickle(files["good"].read_bytes(), every=1.0)}
    with route_server(routes) as server:
        images = [f"{server.url}/good.png", f"{server.url}/slow.png", str(files["good"])]
        out = tmp_path / "late.jsonl"
        args = ["run", "--model", "tiny-blip", "--strategy", "vanilla", "--dataset", "table", "--questions",
                str(question_file(tmp_path / "questions.csv", images)), "--out", str(out), "--device", "cpu",
                "--no-progress", "--threads", "1", "--image-cache", str(cache)]
        started = time.monotonic()
        with pytest.warns(RuntimeWarning, match=rf"image cache {cache} cannot be written"):
            assert cli.main(args) == 0
        assert time.monotonic() - started < 120  # one image may take the deadline, not len / 2 seconds
    assert "3 questions written (3 records), 0 already finished, errors: image 1" in capsys.readouterr().out
    records = {int(r["item_id"]): r for r in raw_lines(out)}
    assert records[0]["kind"] == records[2]["kind"] == "answer"  # the downloaded image was used uncached
    assert records[0]["image_sha256"] == records[2]["image_sha256"]
    error = records[1]["error"]
    assert error["stage"] == "image" and error["message"].startswith(
        f"{server.url}/slow.png: download not finished within the deadline of 1.5 s (VQALIB_IMAGE_DEADLINE")
    assert not cache.exists()


BAD_VALUES = [
    (["--model", "nope"], "argument --model: unknown model 'nope'; choose from blip-vqa-base, "),
    (["--shard", "a/b"], "argument --shard: shard 'a/b': expected i/n, two whole numbers with 0 <= i < n (e.g. 0/4)"),
    (["--shard", "2/2"], "argument --shard: shard '2/2': expected i/n with 0 <= i < n (for n = 2: i from 0 to 1)"),
    (["--shard", "0/0"], "argument --shard: shard '0/0': expected i/n with n >= 1"),
    (["--limit", "0"], "argument --limit: expected a whole number >= 1, got '0'"),
    (["--threads", "two"], "argument --threads: expected a whole number >= 1, got 'two'"),
    (["--wait", "-5"], "argument --wait: expected seconds >= 0"),
    (["--judge", "gpt"], "argument --judge: expected env, none or test:N"),
    (["--questions", "/nonexistent/q.csv"], "argument --questions: no such file: '/nonexistent/q.csv'"),
    (["--out", "."], "argument --out: '.' is a folder"),
    (["--out", os.devnull], f"argument --out: '{os.devnull}' is a character device, not a regular file"),
    (["--questions", None], "argument --questions: required with --dataset table"),
]


@pytest.mark.parametrize("argv, message", BAD_VALUES, ids=[" ".join(map(str, argv)) for argv, _ in BAD_VALUES])
def test_bad_command_line_values_name_the_option_and_the_expected_form(argv, message, files, tmp_path, capsys):
    questions = question_file(tmp_path / "q.csv", [str(files["good"])])
    base = {"--model": "tiny-blip", "--strategy": "vanilla", "--dataset": "table", "--questions": str(questions),
            "--out": str(tmp_path / "run.jsonl")}
    base.update(dict(zip(argv[::2], argv[1::2])))
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", *[x for k, v in base.items() if v is not None for x in (k, v)]])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_parse_shard_names_the_expected_form():
    assert runfiles.parse_shard(" 1 / 4 ") == (1, 4)
    for bad in ("a/b", "1", "-1/2", "1/2/3", "1.0/2"):
        with pytest.raises(ValueError, match=rf"shard '{bad}': expected i/n"):
            runfiles.parse_shard(bad)


@pytest.mark.full
@pytest.mark.parametrize("wait", [False, True], ids=["refuse", "wait"])
def test_two_processes_on_one_run_file_five_trials(wait, files, tmp_path):
    """Two writers racing on one run file, five times per case, no gate: two real CLI runs started together
    on one --out (an identical pair, then shards 0/2 and 1/2). Every question that a run reporting success owned is in the file exactly once,
    and a refused run says who holds the file."""
    n = 20  # each run holds the file for its whole generation: the two overlap at any size
    questions = question_file(tmp_path / "questions.csv", [str(files["good"])] * n)
    for trial in range(5):
        for shards in (("0/1", "0/1"), ("0/2", "1/2")):
            out = tmp_path / f"trial{trial}_{shards[1].replace('/', 'of')}.jsonl"
            command = [sys.executable, "-m", "vqalib", "run", "--model", "tiny-blip", "--strategy", "vanilla",
                       "--dataset", "table", "--questions", str(questions), "--out", str(out), "--device", "cpu",
                       "--no-progress", "--threads", "1", *(["--wait"] if wait else [])]
            children = [subprocess.Popen([*command, "--shard", shard], cwd=REPO, env=CHILD_ENV,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                        for shard in shards]
            results = [(child.wait(timeout=300), *child.communicate()) for child in children]
            owned = set()
            for shard, (code, _, err) in zip(shards, results):
                if code == 0:
                    pair = runfiles.parse_shard(shard)
                    owned |= {runfiles.item_key(dataset="table", item_id=str(i), model="tiny-blip", strategy="vanilla")
                              for i in range(n) if runfiles.in_shard(str(i), shard=pair)}
                else:
                    assert not wait and code == 75 and "is being written by another run: pid " in err, err[-2000:]
            blocks = question_blocks(out)
            assert set(blocks) == owned and set(blocks.values()) == {1}, (trial, shards, results)
            if wait:
                assert [code for code, _, _ in results] == [0, 0]


def test_union_of_shards_equals_unsharded_run(files, tmp_path):
    items = make_items(7, files["good"])
    whole = tmp_path / "whole.jsonl"
    engines.run_generation(items, model=tiny("tiny-blip"), strategy="abstention", dataset="table", out=whole,
                       limit=6, progress=False)
    parts = [tmp_path / f"shard{i}.jsonl" for i in range(3)]
    counts = [engines.run_generation(items, model=tiny("tiny-blip"), strategy="abstention", dataset="table", out=part,
                                 limit=6, shard=f"{i}/3", progress=False).written_items for i, part in enumerate(parts)]
    assert sum(counts) == 6
    assert stable(handoff.load_run(parts)) == stable(handoff.load_run(whole))


def test_cli_runs_resumes_and_lists(files, tmp_path, capsys):
    questions = tmp_path / "questions.csv"
    make_items(4, files["good"]).drop(columns=["item_id"]).to_csv(questions, index=False)
    out = tmp_path / "runs" / "cli.jsonl"
    argv = ["run", "--model", "tiny-blip", "--strategy", "vanilla", "--dataset", "table", "--questions",
            str(questions), "--out", str(out), "--limit", "3", "--no-progress", "--threads", "1"]
    assert cli.main(argv) == 0 and len(raw_lines(out)) == 3
    assert cli.main(argv) == 0 and len(raw_lines(out)) == 3
    printed = capsys.readouterr().out
    assert "3 questions written" in printed and "3 already finished" in printed
    assert cli.main(["runs", str(tmp_path / "runs")]) == 0 and "tiny-blip" in capsys.readouterr().out
    assert cli.main(["models"]) == 0 and "llava-hf/llava-1.5-13b-hf" in capsys.readouterr().out


@pytest.mark.full  # starts a local Ray cluster
def test_ray_engine_writes_the_same_records_as_the_plain_engine(files, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'ray[data]' to test --engine ray")
    for name in ("VQALIB_MODEL_PLUGINS", "PYTHONPATH"):  # the replicas register the tiny models too
        monkeypatch.setenv(name, plugin_env()[name])
    items = make_items(3, files["good"])
    plain, distributed = tmp_path / "plain.jsonl", tmp_path / "ray.jsonl"
    engines.run_generation(items, model="tiny-blip", strategy="self-consistency", dataset="table", out=plain,
                       judge="test:3", progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = engines.run_generation(items, model="tiny-blip", strategy="self-consistency", dataset="table",
                                     out=distributed, judge="test:3", engine="ray", progress=False)
    finally:
        ray.shutdown()
    assert summary.written_items == 3
    lines = raw_lines(distributed)
    assert {r["engine"] for r in lines} == {"ray"}
    assert stable(lines) == stable(raw_lines(plain))


def test_afgv_items_ask_only_rewrites_that_belong_in_their_tier(tmp_path):
    """A question left without a complex rewrite keeps its original text in that tier: it must not be
    asked, and scored, as a complex question; the items say how many were left out."""
    rewrites = pd.DataFrame({"question_id": ["1", "1", "1"], "tier": ["baseline", "simplified", "complex"],
                             "question": ["What is it?", "What is this?", "What is it?"], "image": ["a.png"] * 3,
                             "status": ["original", "rewritten", "no rewrite raises FK"]})
    items = runner_questions.afgv_items(rewrites)
    assert items["item_id"].tolist() == ["1/baseline", "1/simplified"]
    assert items.attrs["not_placed"] == 1
