"""A SIMULATED human evaluation with the design of VizWiz-LF §6 (Fig. 2), to demonstrate the analysis (the ratings
are not public: every output says SIMULATED, never a result). Latent normal y* = location + effect + participant +
question + answer + impression + noise, cut at two thresholds into ratings 1-3; ranks order the latent impressions.
Default effects follow §6 in direction only; sizes invented (locations roughly match BLV plausibility 0.84)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vqalib.core import report
from vqalib.papers.vizwiz_lf import human_eval
from vqalib.papers.vizwiz_lf.ratings import CATEGORIES, GROUPS, RATING_COLUMNS, SIMULATED, SOURCES, Study, check_ratings

PARTICIPANT_PREFIX: dict[str, str] = {"B": "B", "B+I": "BI", "S": "S", "S+I": "SI"}
DEFAULT_LOCATION: dict[str, float] = {"relevance": 1.0, "helpfulness": 0.6, "plausibility": 1.3, "fluency": 1.0}
DEFAULT_THRESHOLDS: tuple[float, float] = (-0.5, 0.5)

# effect[group, criterion] = (GPT-4V, Gemini, Expert), latent SD units (invented; see module docstring)
_DEFAULT_EFFECTS: dict[str, dict[str, tuple[float, float, float]]] = {
    "ranking": {"B": (0.4, -0.6, 0.4), "B+I": (0.4, -0.6, 0.4), "S": (0.4, -0.6, 0.4), "S+I": (0.5, -0.9, 0.5)},
    "relevance": {"B": (-0.3, 0.4, 0.0), "B+I": (-0.3, 0.4, 0.0), "S": (0.0, -0.1, 0.1), "S+I": (0.1, -0.3, 0.1)},
    "helpfulness": {"B": (0.3, -0.3, 0.3), "B+I": (0.3, -0.3, 0.3), "S": (0.3, -0.3, 0.3), "S+I": (0.4, -0.8, 0.4)},
    "plausibility": {"B": (0.0, 0.0, 0.0), "B+I": (0.0, 0.0, 0.0), "S": (0.1, -0.1, 0.1), "S+I": (0.4, -0.9, 0.3)},
    "fluency": {"B": (0.1, 0.0, 0.1), "B+I": (0.1, 0.0, 0.1), "S": (0.1, -0.1, 0.1), "S+I": (0.1, -0.1, 0.1)},
}


def default_effects() -> pd.DataFrame:
    """The simulation's default source effects: group, criterion, source, effect (latent SD units)."""
    rows = [{"group": g, "criterion": c, "source": s, "effect": e}
            for c, by_group in _DEFAULT_EFFECTS.items() for g, values in by_group.items()
            for s, e in zip(SOURCES, values)]
    return pd.DataFrame(rows)


def design_questions(answers: pd.DataFrame | None = None, *, per_category: int = 3, seed: int = 0) -> pd.DataFrame:
    """The study's questions and categories (§6: 3 per category), real ids drawn when ``answers`` is given.

    Parameters
    ----------
    answers : pandas.DataFrame, optional
        The release's answers; None gives plain ids 1, 2, ... (data-free).
    per_category : int, default 3
    seed : int, default 0
    """
    if answers is None:
        ids = range(1, per_category * len(CATEGORIES) + 1)
        return pd.DataFrame({"question_id": list(ids),
                             "question_category": [c for c in CATEGORIES for _ in range(per_category)]})
    from vqalib.papers.vizwiz_lf.table4 import paper_sample

    chosen = paper_sample(answers, per_category=per_category, seed=seed, sources=SOURCES)
    types = answers.drop_duplicates("question_id").set_index("question_id")["question_type"]
    frame = pd.DataFrame({"question_id": chosen, "question_category": types.loc[chosen].to_numpy()})
    frame["_order"] = frame["question_category"].map({c: i for i, c in enumerate(CATEGORIES)})
    return frame.sort_values(["_order", "question_id"]).drop(columns="_order").reset_index(drop=True)


def simulate_ratings(*, seed: int, questions: pd.DataFrame | None = None, participants_per_group: int = 10,
                     effects: pd.DataFrame | None = None, effect_scale: float = 1.0,
                     location: dict[str, float] | None = None,
                     thresholds: tuple[float, float] = DEFAULT_THRESHOLDS, participant_sd: float = 0.5,
                     question_sd: float = 0.3, answer_sd: float = 0.0, impression_sd: float = 0.5) -> pd.DataFrame:
    """A SIMULATED ratings table of the §6 design (Fig. 2's input, ``study`` = SIMULATED), deterministic in its args.
    The SDs are participant leniency, question difficulty, answer quality (Fig. 2's tests count it as a source
    difference) and impression; ``effect_scale=0`` is a null study; ``thresholds`` cut ratings 1|2 and 2|3."""
    questions = design_questions() if questions is None else questions.reset_index(drop=True)
    effects = default_effects() if effects is None else effects
    location = {**DEFAULT_LOCATION, **(location or {})}
    effect = effects.set_index(["group", "criterion", "source"])["effect"].to_dict()
    by_group = np.array([[[effect.get((g, c, s), 0.0) for s in SOURCES] for c in human_eval.CRITERIA] for g in GROUPS])
    groups = np.repeat(np.array(GROUPS), participants_per_group)
    n_p, n_q, n_s, n_c = len(groups), len(questions), len(SOURCES), len(RATING_COLUMNS)
    beta = effect_scale * np.repeat(by_group, participants_per_group, axis=0)  # participants x criteria x sources

    rng = np.random.default_rng(seed)
    u = rng.normal(0.0, participant_sd, n_p)
    v = rng.normal(0.0, question_sd, n_q)
    a = rng.normal(0.0, answer_sd, (n_q, n_s))
    z = rng.normal(0.0, impression_sd, (n_p, n_q, n_s))
    e_rank = rng.normal(0.0, 1.0, (n_p, n_q, n_s))
    e = rng.normal(0.0, 1.0, (n_p, n_q, n_s, n_c))

    eta = beta[:, None, 0, :] + a[None] + z + e_rank
    rank = np.argsort(np.argsort(-eta, axis=2), axis=2) + 1
    loc = np.array([location[c] for c in RATING_COLUMNS])
    latent = (loc + np.moveaxis(beta[:, 1:, :], 1, 2)[:, None] + u[:, None, None, None] + v[None, :, None, None]
              + (a[None] + z)[..., None] + e)
    rating = 1 + (latent > thresholds[0]).astype(int) + (latent > thresholds[1]).astype(int)

    counter = {g: 0 for g in GROUPS}
    ids = []
    for g in groups:
        counter[g] += 1
        ids.append(f"{PARTICIPANT_PREFIX[g]}{counter[g]:02d}")
    index = pd.MultiIndex.from_product([range(n_p), range(n_q), range(n_s)], names=["p", "q", "s"])
    p_i, q_i, s_i = (index.get_level_values(k).to_numpy() for k in ("p", "q", "s"))
    frame = pd.DataFrame({"participant_id": np.array(ids)[p_i], "group": groups[p_i],
                          "question_id": questions["question_id"].to_numpy()[q_i].astype("int64"),
                          "question_category": questions["question_category"].to_numpy()[q_i],
                          "source": np.array(SOURCES)[s_i], "rank": rank.reshape(-1).astype("int64")})
    for k, column in enumerate(RATING_COLUMNS):
        frame[column] = rating[..., k].reshape(-1).astype("int64")
    frame["study"] = SIMULATED
    return frame


def simulated_study(*, seed: int, **kwargs) -> Study:
    """A checked :class:`~vqalib.papers.vizwiz_lf.ratings.Study` of :func:`simulate_ratings` (§6, Fig. 2).

    Parameters
    ----------
    seed : int
    **kwargs
        Passed to :func:`simulate_ratings`.
    """
    ratings = simulate_ratings(seed=seed, **kwargs)
    checked = check_ratings(ratings.astype(str), name=f"simulate_ratings(seed={seed})")
    return Study(ratings=checked, label=f"{SIMULATED} (seed {seed})", simulated=True)


def rejection_rates(*, seeds, effect_scale: float, alpha: float = 0.05, **kwargs) -> pd.DataFrame:
    """Share of SIMULATED replicates (one per seed) whose Friedman p < ``alpha`` (missing p: not rejected), per group x
    criterion: with ``effect_scale=0`` the design's false-positive rate, with the default effects its power.

    Parameters
    ----------
    seeds : iterable of int
    effect_scale : float
    alpha : float, default 0.05
    **kwargs
        Passed to :func:`simulate_ratings`.
    """
    tables = []
    for seed in seeds:
        scores = human_eval.normalised_scores(simulate_ratings(seed=int(seed), effect_scale=effect_scale, **kwargs))
        tables.append(human_eval.friedman_tests(scores))
    both = pd.concat(tables, ignore_index=True)
    both["rejected"] = both["p"].lt(alpha)
    rates = (both.groupby(["group", "criterion", "criterion_label"], sort=False)["rejected"]
             .agg(replicates="size", rejection_rate="mean").reset_index())
    rates.insert(3, "effect_scale", float(effect_scale))
    return rates


def scaled_effects(effect_scale: float = 1.0) -> pd.DataFrame:
    """:func:`default_effects` multiplied by ``effect_scale`` (notebook 04's SIMULATED study; 0: a null study).

    Parameters
    ----------
    effect_scale : float
    """
    return default_effects().assign(effect=lambda f: f["effect"] * effect_scale)


def effects_wide(effects: pd.DataFrame) -> pd.DataFrame:
    """Source effects with one column per source, one row per criterion x group (notebook 04, Fig. 2 design).

    Parameters
    ----------
    effects : DataFrame
        :func:`scaled_effects` output.
    """
    return report.wide(effects, index=["criterion", "group"], columns="source", values="effect").reset_index()


def design_rejection_rates(*, seeds, effect_scale: float = 1.0, alpha: float = 0.05, **kwargs) -> pd.DataFrame:
    """:func:`rejection_rates` of notebook 04: null, null + answer quality, default effects x ``effect_scale``; cached.

    Parameters
    ----------
    seeds : iterable of int
    effect_scale : float
    alpha : float
    **kwargs
        Passed to :func:`simulate_ratings`.
    """
    from vqalib.core.caches import cached_frame, content_key
    from vqalib.core.io import cache_root

    seeds = [int(s) for s in seeds]
    key = content_key(code=("vqalib",), packages=("numpy", "scipy", "statsmodels"),
                      seeds=seeds, effect_scale=effect_scale, alpha=alpha, settings=kwargs)
    return cached_frame(cache_root("vizwiz-lf", "simulation") / f"{key[:32]}.parquet", kind="simulation cache",
                        compute=lambda: _design_rejection_rates(seeds=seeds, effect_scale=effect_scale, alpha=alpha,
                                                                **kwargs))


def _design_rejection_rates(*, seeds, effect_scale: float, alpha: float, **kwargs) -> pd.DataFrame:
    """:func:`design_rejection_rates` without its cache."""
    conditions = {"no source effects": dict(effect_scale=0.0),
                  "no source effects, answer_sd 0.3": dict(effect_scale=0.0, answer_sd=0.3),
                  f"default effects x {effect_scale:g}": dict(effect_scale=effect_scale)}
    return pd.concat([rejection_rates(seeds=seeds, alpha=alpha, **kwargs, **condition).assign(condition=name)
                      for name, condition in conditions.items()], ignore_index=True)


def rejection_rate_summary(rates: pd.DataFrame) -> str:
    """Mean share of significant Friedman tests per condition, as text (one line per condition).

    Parameters
    ----------
    rates : DataFrame
        :func:`design_rejection_rates` output.
    """
    return rates.groupby("condition", sort=False)["rejection_rate"].mean().round(3).to_string()


def rejection_rates_wide(rates: pd.DataFrame) -> pd.DataFrame:
    """Rejection rates with one column per condition, one row per group x criterion.

    Parameters
    ----------
    rates : DataFrame
        :func:`design_rejection_rates` output.
    """
    return report.wide(rates, index=["group", "criterion_label"], columns="condition",
                       values="rejection_rate").reset_index()
