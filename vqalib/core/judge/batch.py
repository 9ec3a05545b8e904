"""LAVE over a batch of answers: prompt, cached judge call, rating and score per item, with a status saying
why an item has no score; repeated or fatal call failures end the batch."""

from __future__ import annotations

import collections
import math
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from vqalib.core.judge.backends import JudgeError
from vqalib.core.judge.cache import CachedJudge
from vqalib.core.judge.parsing import REASON_EMPTY, _has_rating, parse_lave_reply
from vqalib.core.judge.prompts import lave_messages, load_lave_demos
from vqalib.core.judge.settings import LAVE_PROMPTS, REFERENCE_FALLBACK_RATING, UNPARSEABLE_POLICIES, setting


def lave_score(rating: int) -> float:
    """LAVE's score (0, 0.5 or 1) from a 1-3 rating (not range-checked): ``(rating - 1) / 2``."""
    return (rating - 1) / 2


def _describe(counts: collections.Counter) -> str:
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def lave(items: pd.DataFrame, *, judge: CachedJudge, prompt: str | None = None, unparseable: str | None = None,
         data_dir: Path | None = None, max_consecutive_failures: int | None = 10,
         progress: bool = True) -> pd.DataFrame:
    """Rate each candidate answer against its reference with LAVE; adds ``rationale``, ``rating``, ``score``,
    ``status``, ``judge_status`` and ``.attrs["lave"]`` (prompt, policy, status counts). Unparseable replies: ``drop``
    (default; the papers do not say, and their prompt demands ``Rating: X``) leaves them out of the mean, ``reference``
    scores them 0.5 as mair-lab/lave does. Failed calls never get a score.

    Parameters
    ----------
    items : pandas.DataFrame
        One row per answer: ``question``, ``reference`` (a list for ``lave-reference``), ``candidate``.
    judge : CachedJudge
    prompt, unparseable : str, optional
        The prompt variant and unparseable policy; default ``VQALIB_JUDGE_PROMPT`` / ``_UNPARSEABLE``.
    data_dir : Path, optional
        Where the ``lave-reference`` demonstrations are read from.
    max_consecutive_failures : int or None, default 10
        Failed calls in a row that end the batch (None: never).
    progress : bool, default True
        Show a progress bar.
    """
    missing = {"question", "reference", "candidate"} - set(items.columns)
    if missing:
        raise ValueError(f"lave: items lack columns {sorted(missing)}")
    prompt = prompt if prompt is not None else setting("prompt")
    policy = unparseable if unparseable is not None else setting("unparseable")
    if prompt not in LAVE_PROMPTS:
        raise ValueError(f"unknown LAVE prompt {prompt!r}: use one of {', '.join(LAVE_PROMPTS)}")
    if policy not in UNPARSEABLE_POLICIES:
        raise ValueError(f"unknown unparseable policy {policy!r}: use one of {', '.join(UNPARSEABLE_POLICIES)}")
    demos = load_lave_demos(data_dir=data_dir) if prompt == "lave-reference" else None

    replies, ratings, statuses = [], [], []
    in_a_row = 0
    rows = items[["question", "reference", "candidate"]].itertuples(index=False)
    for number, row in enumerate(tqdm(rows, total=len(items), desc="LAVE", disable=not progress)):
        reference = row.reference if isinstance(row.reference, (list, tuple, np.ndarray)) else str(row.reference)
        try:
            messages = lave_messages(question=str(row.question), reference=reference, candidate=str(row.candidate),
                                     prompt=prompt, demos=demos)
        except ValueError as error:
            raise ValueError(f"LAVE item {number} (row {items.index[number]!r}): {error}") from None
        try:
            text = judge.complete(messages, prompt=prompt, accept=_has_rating)
        except JudgeError as error:
            if error.fatal:
                raise JudgeError(f"LAVE stopped at item {number} of {len(items)}: {error}",
                                 status=error.status, fatal=True) from error
            in_a_row += 1
            if max_consecutive_failures is not None and in_a_row >= max_consecutive_failures:
                raise JudgeError(f"LAVE stopped at item {number} of {len(items)}: {in_a_row} judge calls in a row "
                                 f"failed, the last with: {error}", status=error.status) from error
            replies.append("")
            ratings.append(None)
            statuses.append(error.status)
            continue
        in_a_row = 0
        parsed = parse_lave_reply(text)
        replies.append(text)
        ratings.append(parsed.rating)
        if parsed.rating is not None:
            statuses.append("parsed")
        elif parsed.reason == REASON_EMPTY:
            statuses.append("empty")
        else:
            statuses.append(f"unparseable: {parsed.reason}")

    fallback = lave_score(REFERENCE_FALLBACK_RATING) if policy == "reference" else math.nan
    scores = [lave_score(r) if r is not None else fallback if s.startswith("unparseable") else math.nan
              for r, s in zip(ratings, statuses)]
    out = items.copy()
    out["rationale"] = replies
    out["rating"] = pd.array(ratings, dtype="Int64")
    out["score"] = np.array(scores, dtype="float64")
    out["status"] = ["ok" if r is not None else "unparseable" for r in ratings]
    out["judge_status"] = statuses
    counts = collections.Counter(statuses)
    out.attrs["lave"] = {"prompt": prompt, "unparseable": policy, "counts": dict(counts)}
    unread = len(statuses) - counts["parsed"]
    effect = ("left out of the mean" if policy == "drop" else
              "replies without a rating scored 2 (reference); failed calls left out of the mean")
    detail = f" ({_describe(collections.Counter(s for s in statuses if s != 'parsed'))}; {effect})" if unread else ""
    print(f"{judge.summary()}; prompt {prompt}, unparseable {policy}; {counts['parsed']} of {len(statuses)} "
          f"replies rated, {unread} not{detail}")
    return out
