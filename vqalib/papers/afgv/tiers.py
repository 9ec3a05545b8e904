"""The AFGV tier rule (Readability Analysis; Table 2's counts): a rewrite enters the simplified tier only if it lowers
the Flesch-Kincaid grade, the complex tier only if it raises it; row statuses, and the check that the rule held."""

from __future__ import annotations

import numpy as np
import pandas as pd

TIERS = ("simplified", "baseline", "complex")

TIER_DIRECTION = {"simplified": -1, "complex": 1}  # the sign a rewrite's FK change must have to enter the tier
PLACED = ("original", "rewritten")  # statuses of a row whose text belongs in its tier
FK_NOT_MOVED = {"simplified": "no rewrite lowers FK", "complex": "no rewrite raises FK"}
LEFT_OUT = {  # status of a question without a rewrite in a tier -> its count column in the readability table
    "no content word with a vector": "left_out_no_content_word",
    "no candidate after filtering": "left_out_no_candidate",
    FK_NOT_MOVED["simplified"]: "left_out_no_rewrite_lowers_fk",
    FK_NOT_MOVED["complex"]: "left_out_no_rewrite_raises_fk",
}


def moves_fk(tier: str, *, rewrite_fk, original_fk) -> np.ndarray:
    """Whether rewrites belong in ``tier``: FK grade strictly below the original's (simplified) or above (complex)."""
    change = np.asarray(rewrite_fk, dtype=float) - np.asarray(original_fk, dtype=float)
    return TIER_DIRECTION[tier] * change > 0  # equal grades move nothing: not placed


def _question_keys(rewrites: pd.DataFrame) -> list[str]:
    return [k for k in ("question_set", "question_id") if k in rewrites]


def _question_index(frame: pd.DataFrame) -> pd.Index:
    """Each row's question (question_id, or (question_set, question_id) when sets are stacked)."""
    keys = _question_keys(frame)
    return pd.MultiIndex.from_frame(frame[keys]) if len(keys) > 1 else pd.Index(frame[keys[0]])


def _baseline_rows(rewrites: pd.DataFrame) -> pd.DataFrame:
    """The baseline row of every question, indexed by its keys (each question must have exactly one)."""
    base = rewrites[rewrites["tier"].astype(str) == "baseline"]
    base = base.set_axis(_question_index(base), axis=0)  # the key columns stay columns too
    if base.index.has_duplicates:
        raise ValueError("rewrites: a question has more than one baseline row")
    missing = _question_index(rewrites).difference(base.index)
    if len(missing):
        raise ValueError(f"rewrites: {len(missing)} question(s) without a baseline row, e.g. {missing[0]}")
    return base


def place_in_tiers(rewrites: pd.DataFrame) -> pd.DataFrame:
    """Keep a tier's rewrite only where it moves the FK grade the tier's way (AFGV Readability Analysis); the candidate
    is the tier's extreme, so a failed row carries the original, ``rejected_*`` columns and its :data:`FK_NOT_MOVED`
    status. Returns a copy, same rows and order (idempotent)."""
    keys = _question_keys(rewrites)
    base = _baseline_rows(rewrites)
    at = _question_index(rewrites)
    original_fk = base["fk_grade"].reindex(at).to_numpy(dtype=float)
    tier = rewrites["tier"].astype(str).to_numpy()
    out = rewrites.copy()
    for column, dtype in (("rejected_replacement", object), ("rejected_fk_grade", float)):
        if column not in out:
            out[column] = pd.Series(np.nan, index=out.index, dtype=dtype)
    for name in TIER_DIRECTION:
        judged = (tier == name) & (out["status"] == "rewritten").to_numpy()
        reject = judged & ~moves_fk(name, rewrite_fk=out["fk_grade"].to_numpy(dtype=float), original_fk=original_fk)
        if not reject.any():
            continue
        out.loc[reject, "rejected_replacement"] = out.loc[reject, "replacement"]
        out.loc[reject, "rejected_fk_grade"] = out.loc[reject, "fk_grade"]
        original = base.reindex(at[reject])
        own = keys + ["tier", "status", "rejected_replacement", "rejected_fk_grade"]  # what the row keeps of its own
        for column in original.columns.difference(own):
            out.loc[reject, column] = original[column].to_numpy()
        out.loc[reject, "status"] = FK_NOT_MOVED[name]
    return out


def out_of_order(rewrites: pd.DataFrame) -> pd.DataFrame:
    """Per set and tier, placed rewrites and how many do not move FK the tier's way (0: the rule held; AFGV Table 2).

    Parameters
    ----------
    rewrites : pandas.DataFrame
        Rewrite rows, each question with one baseline row.
    """
    base = _baseline_rows(rewrites)
    placed = rewrites[(rewrites["status"] == "rewritten") & rewrites["tier"].astype(str).isin(list(TIER_DIRECTION))]
    original_fk = base["fk_grade"].reindex(_question_index(placed)).to_numpy(dtype=float)
    wrong = np.zeros(len(placed), dtype=bool)
    tier = placed["tier"].astype(str).to_numpy()
    for name in TIER_DIRECTION:
        mask = tier == name
        wrong[mask] = ~moves_fk(name, rewrite_fk=placed["fk_grade"].to_numpy(dtype=float)[mask],
                                original_fk=original_fk[mask])
    groups = [k for k in ("question_set",) if k in placed] + ["tier"]
    table = placed.assign(tier=tier, out_of_order=wrong).groupby(groups, sort=False)
    return table["out_of_order"].agg(placed="size", out_of_order="sum").reset_index()

