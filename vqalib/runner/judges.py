"""The LLM judge that aggregates self-consistency draws (VizWiz-LF Appendix A.4.2, Table 24; Table 26).

``env`` uses the judge of :mod:`vqalib.judge` configured by its ``VQALIB_JUDGE_*`` variables;
``test:N`` judges answer with a fixed reply and exist to test the runner.
"""

from __future__ import annotations

from typing import Any

from vqalib.judge import JudgeError


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
    ``none``, or a ``test:...`` judge.

    Parameters
    ----------
    spec : str or None
        ``env``, ``none`` (or None, empty) or ``test:N`` / ``test:fail`` / ``test:garbage``.

    Returns
    -------
    object or None
        A judge with ``complete(messages, temperature=..., max_tokens=...)``, or None for no judge.
    """
    if spec in (None, "", "none"):
        return None
    if spec == "env":
        from vqalib.judge import judge_from_env

        return judge_from_env()
    if spec.startswith("test:"):
        return TestJudge(mode=spec.split(":", 1)[1])
    raise ValueError(f"unknown judge {spec!r}: use env, none or test:N")
