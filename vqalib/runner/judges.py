"""The LLM judge that aggregates self-consistency draws (VizWiz-LF A.4.2, Tables 24 and 26): ``env`` is the judge
of :mod:`vqalib.core.judge` (``VQALIB_JUDGE_*``); ``test:N`` judges give a fixed reply to test the runner."""

from __future__ import annotations

from typing import Any

from vqalib.core.judge.backends import JudgeError


class TestJudge:
    """TEST judge: replies with a fixed text (``test:N`` picks draw N, ``test:fail`` raises, ``test:garbage``)."""

    name = "test"

    def __init__(self, *, mode: str) -> None:
        self.mode = mode
        self.model = f"test:{mode}"

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 256) -> str:
        """The fixed reply of this mode, with a real judge's signature: "... Response N." for ``test:N``.

        Parameters
        ----------
        messages : list of dict
            The chat messages; ignored.
        temperature : float, default 0.0
            Ignored.
        max_tokens : int, default 256
            Ignored.

        Returns
        -------
        str
            Unparseable for ``test:garbage``; ``test:fail`` raises ``JudgeError``.
        """
        if self.mode == "fail":
            raise JudgeError("test judge: simulated failure")
        if self.mode == "garbage":
            return "I cannot decide."
        return f"The most consistent response is Response {int(self.mode)}."


def make_judge(spec: str | None) -> Any:
    """The self-consistency judge (VizWiz-LF Table 24) named by ``spec``.

    Parameters
    ----------
    spec : str or None
        ``env``, ``none`` (or None, empty) or ``test:N`` / ``test:fail`` / ``test:garbage``.

    Returns
    -------
    object or None
        A judge with ``complete(messages, temperature=..., max_tokens=...)``, or None.
    """
    if spec in (None, "", "none"):
        return None
    if spec == "env":
        from vqalib.core.judge.cache import judge_from_env

        return judge_from_env()
    if spec.startswith("test:"):
        return TestJudge(mode=spec.split(":", 1)[1])
    raise ValueError(f"unknown judge {spec!r}: use env, none or test:N")
