"""``vqalib score``: any model's answers, from our runner or from lmms-eval or VLMEvalKit, into the papers' tables.

Each answers file is read, its rows given dataset ids (or the other names of them a paper declares, e.g. image file
names) and matched to the questions, scored with the paper's own functions and written as a scorecard (ARCHITECTURE.md,
"Scoring any model").
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from vqalib.core import declarations
from vqalib.core.answer_files import AnswerSource, check_answer_lengths, detect_format, read_answers
from vqalib.core.answer_matching import QuestionAlias, coverage_text, join_task_data, match_answers
from vqalib.core.io import DataFormatError, sha256_of

DATASETS = ("vizwiz-lf", "commvqa", "afgv")
CONDITION_OF_STRATEGY = {"commvqa-baseline": "baseline", "commvqa-contextual": "contextual"}


@dataclass
class Scorecard:
    """One model's scores on one dataset: what ``scorecard.json`` holds, with the tables as DataFrames."""

    model: str
    dataset: str
    sources: list[dict]
    coverage: dict
    tables: dict[str, pd.DataFrame]
    settings: dict = field(default_factory=dict)
    per_question: pd.DataFrame | None = None  # the leaderboard's measures per question (``per_question.csv``)


def run_file_answers(path: str | Path) -> tuple[pd.DataFrame, AnswerSource, str | None]:
    """A ``vqalib run`` file's final records as answer rows, errors as missing answers: ``(answers, source, model)``."""
    from vqalib.runner.handoff import load_run

    records = load_run(path, finals_only=True)
    if records.empty:
        raise DataFormatError(f"{path}: no complete question in this run file")
    answers = pd.DataFrame({
        "line": range(1, len(records) + 1), "item_id": records["item_id"].astype(str),
        "question_id": records["question_id"].astype(str), "doc_id": None, "index": None, "doc_hash": None,
        "tier": records.get("tier"), "condition": records["strategy"].map(CONDITION_OF_STRATEGY),
        "question": records["question"],
        "answer": records["answer"].where(records["kind"] != "error"), "strategy": records["strategy"]})
    models = sorted(records["model"].dropna().unique())
    version = ",".join(sorted(map(str, records["model_id"].dropna().unique()))) if "model_id" in records else None
    check_answer_lengths(answers, path=path)
    source = AnswerSource(path=str(path), format="vqalib-run", toolkit="vqalib run", version=version or None,
                          sha256=sha256_of(Path(path)), records=len(answers))
    return answers, source, models[0] if len(models) == 1 else None


def dataset_ids(dataset: str, *, question_set: str = "VizWiz-LF", data_dir: Path | None = None) -> list[str]:
    """The item ids of ``dataset`` in its order (AFGV: ``<question_id>/<tier>`` of ``question_set``)."""
    from vqalib.runner.questions import dataset_items

    return list(dataset_items(dataset, question_set=question_set, data_dir=data_dir)["item_id"])


def with_item_ids(answers: pd.DataFrame, *, dataset: str, task_data: str | Path | None, path: str) -> pd.DataFrame:
    """``answers`` with every row's item id: given, from the question id (and tier), or from the exported
    ``task_data``."""
    out = answers.copy()
    need = out["item_id"].isna() & out["question_id"].notna()
    if dataset == "afgv":
        has_tier = need & out["tier"].notna()
        out.loc[has_tier, "item_id"] = out.loc[has_tier, "question_id"] + "/" + out.loc[has_tier, "tier"].str.lower()
    else:
        out.loc[need, "item_id"] = out.loc[need, "question_id"]
    if out["item_id"].isna().any() and task_data is not None:
        out = join_task_data(out, task_data=task_data, answers_path=path)
    return out


def read_all(paths: list[str | Path], *, dataset: str, fmt: str | None = None,
             task_data: str | Path | None = None) -> tuple[pd.DataFrame, list[AnswerSource], str | None]:
    """Every answers file of one model as one table with item ids (and ``condition`` for CommVQA): ``(answers, sources,
    run_model)``."""
    frames, sources, run_model = [], [], None
    for path in paths:
        found = fmt or detect_format(path)
        if found == "vqalib-run":
            answers, source, run_model = run_file_answers(path)
        elif found == "commvqa-results":
            raise DataFormatError(f"{path}: the CommVQA authors' result layout is scored by score_commvqa_authors")
        else:
            answers, source = read_answers(path, format=found)
            answers = with_item_ids(answers, dataset=dataset, task_data=task_data, path=str(path))
        frames.append(answers.assign(file=Path(path).name))
        sources.append(source)
    return pd.concat(frames, ignore_index=True), sources, run_model


def by_condition(answers: pd.DataFrame, *, condition: str | None, path: str | Path) -> list[tuple[str, pd.DataFrame]]:
    """A CommVQA answers file's rows per condition: all under ``condition`` when given, else by their ``condition``
    column (CommVQA §5)."""
    if condition:
        return [(condition, answers)]
    groups = [(c, answers[answers["condition"] == c]) for c in sorted(answers["condition"].dropna().unique())]
    if not groups:
        raise ValueError(f"{path}: say the answers' condition: --condition baseline|contextual "
                         "(or a `condition` column)")
    return groups


def _other_ids(dataset: str, *, data_dir: Path | None) -> dict[str, set[str]]:
    others = {}
    for name in DATASETS:
        if name != dataset:
            try:
                others[name] = set(dataset_ids(name, data_dir=data_dir))
            except (OSError, ValueError):  # a dataset not fetched: no hint from it
                continue
    return others


def question_aliases(answers: pd.DataFrame, *, dataset: str, ids: list[str], question_set: str = "VizWiz-LF",
                     data_dir: Path | None = None) -> list[QuestionAlias]:
    """The other names of ``dataset``'s ids its paper declares (``[[question_alias]]``, e.g. VizWiz image file names),
    built only when some answer's id is not one of ``ids``.

    Parameters
    ----------
    answers : pandas.DataFrame
        Answer rows with ``item_id``.
    dataset : str
    ids : list of str
        The dataset's item ids.
    question_set : str, default "VizWiz-LF"
        AFGV's question set, passed to each builder.
    data_dir : Path, optional
    """
    if answers["item_id"].dropna().astype(str).isin(set(ids)).all():
        return []
    out = []
    for block in declarations.extensions("question_alias"):
        if block["dataset"] == dataset:
            build = pkgutil.resolve_name(block["builder"])  # a dotted name the paper declares
            pairs = build(ids, question_set=question_set, data_dir=data_dir)
            out.append(QuestionAlias.from_pairs(block["what"], pairs))
    return out


def _match(answers: pd.DataFrame, *, ids: list[str], dataset: str, duplicates: str, data_dir: Path | None,
           path: str, question_set: str = "VizWiz-LF") -> tuple[pd.DataFrame, dict]:
    """:func:`match_answers` with the declared aliases; the other datasets' ids (for the "is this …?" hint) are read
    only when none match."""
    aliases = question_aliases(answers, dataset=dataset, ids=ids, question_set=question_set, data_dir=data_dir)
    try:
        return match_answers(answers, ids=ids, dataset=dataset, duplicates=duplicates, aliases=aliases, path=path)
    except DataFormatError as err:
        if " ids match " not in str(err):
            raise
        return match_answers(answers, ids=ids, dataset=dataset, duplicates=duplicates, aliases=aliases, path=path,
                             others=_other_ids(dataset, data_dir=data_dir))


def score(paths: list[str | Path], *, dataset: str, model: str | None = None, fmt: str | None = None,
          conditions: list[str] | None = None, task_data: str | Path | None = None, duplicates: str = "error",
          question_set: str = "VizWiz-LF", n_resamples: int = 1000, seed: int = 0, compare: bool = True,
          data_dir: Path | None = None) -> Scorecard:
    """Score one model's answers on one dataset into the paper's tables (``vqalib score``).

    Parameters
    ----------
    paths : list of str or Path
        The answers files: one, or for CommVQA one per condition.
    dataset : {"vizwiz-lf", "commvqa", "afgv"}
    model : str, optional
        The model's name in the tables; default the run file's model key.
    fmt : str, optional
        Force a format of :data:`vqalib.core.answer_formats.FORMATS`.
    conditions : list of str, optional
        CommVQA: the condition of each file, unless the rows say it.
    task_data : str or Path, optional
        The exported task data, for toolkit files keyed only by ``doc_id`` or ``index``.
    duplicates : {"error", "first", "last"}
        A second answer to one question: refused, or the first/last kept.
    question_set : str, default "VizWiz-LF"
        AFGV's question set.
    n_resamples, seed : int
        Bootstrap settings.
    compare : bool, default True
        VizWiz-LF: also the paired differences to each released model.
    data_dir : Path, optional
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, not {dataset!r}")
    paths = [Path(p) for p in paths]
    settings = {"n_resamples": n_resamples, "seed": seed, "duplicates": duplicates}
    if dataset == "commvqa":
        return _score_commvqa(paths, model=model, fmt=fmt, conditions=conditions, task_data=task_data,
                              duplicates=duplicates, n_resamples=n_resamples, seed=seed, data_dir=data_dir,
                              settings=settings)
    if len(paths) != 1:
        raise ValueError(f"{dataset}: give one answers file (got {len(paths)})")
    answers, sources, run_model = read_all(paths, dataset=dataset, fmt=fmt, task_data=task_data)
    model = model or run_model
    if not model:
        raise ValueError("name the model: --model NAME")
    ids = dataset_ids(dataset, question_set=question_set, data_dir=data_dir)
    matched, coverage = _match(answers, ids=ids, dataset=dataset, duplicates=duplicates, data_dir=data_dir,
                               path=str(paths[0]), question_set=question_set)
    if dataset == "vizwiz-lf":
        from vqalib.core.judge.cache import judge_from_env
        from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf
        from vqalib.papers.vizwiz_lf.scorecard import score_vizwiz_lf

        tables = score_vizwiz_lf(matched, model=model, data=load_vizwiz_lf(data_dir=data_dir), judge=judge_from_env(),
                                 n_resamples=n_resamples, seed=seed, compare=compare)
    else:
        from vqalib.papers.afgv.question_sets import tier_items
        from vqalib.papers.afgv.scorecard import score_afgv

        tables = score_afgv(matched, model=model, items=tier_items(question_set=question_set, data_dir=data_dir))
        settings["question_set"] = question_set
    return Scorecard(model=model, dataset=dataset, sources=[s.to_dict() for s in sources], coverage=coverage,
                     tables=tables, settings=settings, per_question=tables.pop("per_question", None))


def _score_commvqa(paths, *, model, fmt, conditions, task_data, duplicates, n_resamples, seed, data_dir,
                   settings) -> Scorecard:
    """CommVQA: each file under its condition, then both protocols."""
    from vqalib.papers.commvqa.loading import load_commvqa
    from vqalib.papers.commvqa.scorecard import results_from_answers, results_from_authors_csv, score_commvqa

    conditions = list(conditions or [])
    if conditions and len(conditions) != len(paths):
        raise ValueError(f"give one --condition per answers file ({len(paths)} files, {len(conditions)} conditions)")
    data = load_commvqa(data_dir=data_dir)
    benchmark = data.results["question_id"].dropna().astype(int)
    ids = [str(i) for i in data.annotations["question_id"]]
    parts, sources, coverages, run_model = [], [], [], None
    for k, path in enumerate(paths):
        found = fmt or detect_format(path)
        condition = conditions[k] if conditions else None
        if found == "commvqa-results":
            if not (model and condition):
                raise ValueError(f"{path}: an authors' result CSV needs --model and --condition")
            loaded = results_from_authors_csv(path, model=model, condition=condition, data_dir=data_dir)
            rows = loaded.results
            sources.append(AnswerSource(path=str(path), format=found, toolkit=None, version=None,
                                        sha256=sha256_of(path), records=len(rows)).to_dict())
            matched_ids = rows["question_id"].dropna().astype(int).astype(str)
            coverages.append({"dataset": "commvqa", "condition": condition, "questions": len(set(benchmark)),
                              "given": len(rows), "matched": int(rows["question_id"].notna().sum()),
                              "missing": sorted(set(map(str, benchmark)) - set(matched_ids), key=int),
                              "unknown": [f"row {r}" for r in rows.loc[rows["question_id"].isna(), "row"]],
                              "duplicate": sorted(set(matched_ids[matched_ids.duplicated()]), key=int),
                              "empty": [str(r) for r in rows.loc[rows["generated_answer"].isna(), "row"]]})
            parts.append(rows)
            continue
        answers, file_sources, file_model = read_all([path], dataset="commvqa", fmt=found, task_data=task_data)
        run_model = run_model or file_model
        sources.extend(s.to_dict() for s in file_sources)
        for cond, rows in by_condition(answers, condition=condition, path=path):
            matched, coverage = _match(rows, ids=ids, dataset="commvqa", duplicates=duplicates, data_dir=data_dir,
                                       path=str(path))
            name = model or run_model
            if not name:
                raise ValueError("name the model: --model NAME")
            results = results_from_answers(matched, model=name, condition=cond, annotations=data.annotations,
                                           benchmark=benchmark, file=Path(path).name, released=data.results)
            outside = set(matched["item_id"]) - set(map(str, results["question_id"]))
            given = set(rows["item_id"].dropna().astype(str))
            bench_ids = [str(i) for i in sorted(set(benchmark))]  # Table 1 scores the released files' questions
            coverage.update(condition=cond, questions=len(bench_ids), matched=len(results),
                            missing=[i for i in bench_ids if i not in given], outside_benchmark=sorted(outside, key=int))
            coverages.append(coverage)
            parts.append(results)
    model = model or run_model
    results = pd.concat(parts, ignore_index=True)
    tables = score_commvqa(results, n_resamples=n_resamples, seed=seed)
    coverage = coverages[0] if len(coverages) == 1 else {"dataset": "commvqa", "by_condition": coverages}
    return Scorecard(model=model, dataset="commvqa", sources=sources, coverage=coverage, tables=tables,
                     settings=settings, per_question=tables.pop("per_question"))


def coverage_lines(card: Scorecard) -> list[str]:
    """The coverage sentence(s) stated on every table of a scorecard.

    Parameters
    ----------
    card : Scorecard
    """
    parts = card.coverage.get("by_condition", [card.coverage])
    out = []
    for c in parts:
        text = coverage_text(c) if "missing" in c else ""
        if c.get("condition"):
            text = f"{c['condition']}: {text}"
        if c.get("outside_benchmark"):
            text += f"; {len(c['outside_benchmark'])} outside the Table 1 benchmark left out"
        out.append(text)
    return out


def import_answers(paths: list[str | Path], *, dataset: str, model: str | None, out: str | Path,
                   fmt: str | None = None, conditions: list[str] | None = None, strategy: str | None = None,
                   task_data: str | Path | None = None, duplicates: str = "error", question_set: str = "VizWiz-LF",
                   overwrite: bool = False, data_dir: Path | None = None) -> tuple[Path, list[dict]]:
    """Write a model's answers as a run file the notebooks read (``vqalib import``).

    Parameters
    ----------
    paths : list of str or Path
        The answers files (CommVQA: one per condition).
    dataset : {"vizwiz-lf", "commvqa", "afgv"}
    model : str, optional
        The model's name in the run (required unless run files name one).
    out : str or Path
        The run file to write.
    fmt, conditions, task_data, duplicates, question_set
        As in :func:`score`.
    strategy : str, optional
        The run's strategy (default per dataset; CommVQA: from the condition).
    overwrite : bool, default False
        Replace an existing run file.
    data_dir : Path, optional

    Returns
    -------
    tuple
        ``(path, coverages)``.
    """
    from vqalib.runner.importing import COMMVQA_STRATEGY, DEFAULT_STRATEGY, check_run_out, import_records, write_run
    from vqalib.runner.questions import dataset_items

    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, not {dataset!r}")
    check_run_out(out, overwrite=overwrite)  # before the answers are read: a refused --out costs no wait
    conditions = list(conditions or [])
    items = dataset_items(dataset, question_set=question_set, data_dir=data_dir)
    ids = list(items["item_id"].astype(str))
    records, coverages = [], []
    for k, path in enumerate(paths):
        answers, sources, run_model = read_all([path], dataset=dataset, fmt=fmt, task_data=task_data)
        name = model or run_model
        if not name:
            raise ValueError("name the model: --model NAME")
        groups = [(None, answers)]
        if dataset == "commvqa":
            groups = by_condition(answers, condition=conditions[k] if k < len(conditions) else None, path=path)
        for condition, rows in groups:
            aliases = question_aliases(rows, dataset=dataset, ids=ids, question_set=question_set, data_dir=data_dir)
            matched, coverage = match_answers(rows, ids=ids, dataset=dataset, duplicates=duplicates, aliases=aliases,
                                              path=str(path))
            run_strategy = COMMVQA_STRATEGY[condition] if dataset == "commvqa" else (
                strategy or DEFAULT_STRATEGY[dataset])
            source = {**sources[0].to_dict(), "path": Path(path).name}
            records += import_records(matched, items=items, dataset=dataset, model=name, strategy=run_strategy,
                                      source=source)
            coverages.append({**coverage, "condition": condition} if condition else coverage)
    return write_run(records, out, overwrite=overwrite), coverages
