"""The question items a run answers, one layout for every dataset: VizWiz-LF §3 / §7, CommVQA §3 / §5, AFGV
Methods (question x tier) and ``table`` for any question file. A missing image, or a name leaving ``--images``,
becomes ``missing:<reason>``, which the runner turns into a counted error record."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from vqalib.core import config
from vqalib.core import upstream
from vqalib.core import io
from vqalib.runner.image_sources import (COMMVQA_IMAGES_ENV, GQA_IMAGES_ENV, commvqa_source, gqa_source,
                                         image_in_folder)
from vqalib.runner.images import ImageError
from vqalib.runner.question_tables import check_question_table, describe_row, read_question_table


ITEM_COLUMNS = ("item_id", "question_id", "question", "image", "tier", "scenario", "description", "reference")


def _finish_items(frame: pd.DataFrame) -> pd.DataFrame:
    for column in ITEM_COLUMNS:
        if column not in frame:
            frame[column] = None
    frame["item_id"] = frame["item_id"].astype(str)
    # ids as text, a missing one as None (JSON and Parquet tables may hold whole numbers)
    frame["question_id"] = [None if v is None or (isinstance(v, float) and v != v) else str(v)
                            for v in frame["question_id"]]
    repeated = frame["item_id"].duplicated(keep=False)
    if repeated.any():
        shown = [f"{item!r} ({', '.join(describe_row(frame, label) for label in labels)})"
                 for item, labels in frame.index[repeated].groupby(frame.loc[repeated, "item_id"].to_numpy()).items()]
        raise io.DataFormatError(f"{frame.attrs.get('file', 'question table')}: duplicate item ids: "
                                 f"{'; '.join(shown[:10])}; each question (and tier) must appear once")
    return frame[list(ITEM_COLUMNS)].reset_index(drop=True)


def vizwiz_items(*, data_dir: Path | None = None) -> pd.DataFrame:
    """The 600 VizWiz-LF questions with their VizWiz image URLs (VizWiz-LF §3, §7).

    Parameters
    ----------
    data_dir : Path, optional
        The data folder (default: the project's).

    Returns
    -------
    pandas.DataFrame
        One row per question (:data:`ITEM_COLUMNS`), the crowd majority answer as ``reference``.
    """
    from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

    answers = load_vizwiz_lf(data_dir=data_dir, sources=["expert"]).answers.drop_duplicates("question_id")
    return _finish_items(pd.DataFrame({
        "item_id": answers["question_id"].astype(str), "question_id": answers["question_id"].astype(str),
        "question": answers["question"], "image": answers["image_url"],
        "reference": answers["crowd_majority"]}))


def commvqa_items(*, images: str | Path | None = None, data_dir: Path | None = None) -> pd.DataFrame:
    """CommVQA questions with scenario and description (CommVQA §5), id = the row's position in annotations.json.

    Parameters
    ----------
    images : str or Path, optional
        The authors' ``images.zip`` or a folder; default ``$VQALIB_COMMVQA_IMAGES`` (none: image error records).
    data_dir : Path, optional
        The data folder holding ``commvqa/annotations.json`` (hash-checked).

    Returns
    -------
    pandas.DataFrame
        One row per annotation (:data:`ITEM_COLUMNS`), ``reference`` its answers as a JSON list.
    """

    images = images or config.get(COMMVQA_IMAGES_ENV)
    raw = io.read_json(upstream.verified_path("commvqa/annotations.json", data_dir=data_dir))
    rows = []
    for k, entry in enumerate(raw):
        try:
            source = commvqa_source(entry["image"], images=images)
        except ImageError as error:
            source = f"missing:{error}"  # becomes an error record, not a silent skip
        rows.append({"item_id": str(k), "question_id": str(k), "question": entry["question"], "image": source,
                     "scenario": entry.get("context"), "description": entry.get("description"),
                     "reference": json.dumps(entry.get("answers", []), ensure_ascii=False)})
    return _finish_items(pd.DataFrame(rows))


def dataset_items(dataset: str, *, images: str | Path | None = None, question_set: str = "VizWiz-LF",
               data_dir: Path | None = None) -> pd.DataFrame:
    """A dataset's items with their image sources (VizWiz-LF §3, CommVQA §5, AFGV): what toolkit tasks, imports and
    scorecards use.

    Parameters
    ----------
    dataset : {"vizwiz-lf", "commvqa", "afgv"}
        The dataset.
    images : str or Path, optional
        A folder (or CommVQA's ``images.zip``) of the images; default VizWiz-LF's URLs.
    question_set : str, default "VizWiz-LF"
        AFGV's rewritten question set.
    data_dir : Path, optional
        The data folder.

    Returns
    -------
    pandas.DataFrame
        :data:`ITEM_COLUMNS`; an image absent from ``images`` becomes ``missing:<reason>``.
    """
    if dataset == "vizwiz-lf":
        items = vizwiz_items(data_dir=data_dir)
    elif dataset == "commvqa":
        items = commvqa_items(images=images, data_dir=data_dir)
        images = None  # resolved by the CommVQA loader (folder or zip)
    elif dataset == "afgv":
        from vqalib.papers.afgv.question_sets import tier_items

        items = tier_items(question_set=question_set, data_dir=data_dir)
        vizwiz = vizwiz_items(data_dir=data_dir)
        urls = dict(zip(vizwiz["question_id"].astype(str), vizwiz["image"]))
        items["image"] = items["question_id"].map(urls) if question_set == "VizWiz-LF" else \
            "missing:CommVQA question-set images are not mapped; export the VizWiz-LF set"
        items["scenario"] = items["description"] = None
    else:
        raise ValueError(f"dataset must be one of ('vizwiz-lf', 'commvqa', 'afgv'), not {dataset!r}")
    if images is not None:
        folder = Path(images)

        def local(source: str) -> str:
            name = str(source).split("?", 1)[0].rsplit("/", 1)[-1]
            try:
                path = Path(image_in_folder(folder, name))
            except ImageError as error:
                return f"missing:{error}"
            return str(path) if path.is_file() else f"missing:{name} is not in {folder}"
        items = items.assign(image=items["image"].map(local))
    return items.reset_index(drop=True)


def afgv_items(rewrites: pd.DataFrame, *, images: str | Path | None = None) -> pd.DataFrame:
    """One item per (question, tier) of AFGV rewrites with its GQA image (AFGV Methods), the table checked first.

    With a ``status`` column only rows whose text belongs in their tier are asked (a question left without a
    rewrite keeps its original text there, which must not be scored as that tier); ``attrs["not_placed"]`` counts them.

    Parameters
    ----------
    rewrites : pandas.DataFrame
        question_id, tier, question and image_id or image; optional answer and status.
    images : str or Path, optional
        The GQA ``images/`` folder, where alone an ``image_id`` is looked up; default ``$VQALIB_GQA_IMAGES``.

    Returns
    -------
    pandas.DataFrame
        :data:`ITEM_COLUMNS`, ``item_id`` = ``<question_id>/<tier>``, ``answer`` as ``reference``.
    """
    from vqalib.papers.afgv.tiers import PLACED

    check_question_table(rewrites, dataset="afgv")
    images = images or config.get(GQA_IMAGES_ENV)
    frame = rewrites.copy()
    placed = frame["status"].isin(PLACED) if "status" in frame else pd.Series(True, index=frame.index)
    frame = frame[placed]
    if "image" not in frame:
        def source(image_id: str) -> str:
            try:
                return gqa_source(str(image_id), images=images)
            except ImageError as error:
                return f"missing:{error}"
        frame["image"] = [source(i) for i in frame["image_id"]]
    frame["item_id"] = frame["question_id"].astype(str) + "/" + frame["tier"].astype(str)
    if "answer" in frame:
        frame["reference"] = frame["answer"]
    items = _finish_items(frame)
    items.attrs["not_placed"] = int((~placed).sum())
    return items


def table_items(questions: pd.DataFrame) -> pd.DataFrame:
    """Items from any question table (all papers), checked first (a missing column or cell names file, row and field).

    Parameters
    ----------
    questions : pandas.DataFrame
        ``question_id``, ``question``, ``image``; optional other :data:`ITEM_COLUMNS` (an empty cell means none).

    Returns
    -------
    pandas.DataFrame
        :data:`ITEM_COLUMNS`; ``item_id`` defaults to ``question_id`` or ``<question_id>/<tier>``.
    """
    check_question_table(questions, dataset="table")
    frame = questions.copy()
    if "item_id" not in frame:
        tiers = frame["tier"] if "tier" in frame else pd.Series([None] * len(frame), index=frame.index)
        frame["item_id"] = [f"{q}/{t}" if isinstance(t, str) and t else str(q)
                            for q, t in zip(frame["question_id"], tiers)]
    for column in ("tier", "scenario", "description", "reference"):  # empty CSV cells mean "none"
        if column in frame:
            frame[column] = frame[column].replace("", None)
    return _finish_items(frame)


DATASETS = ("vizwiz-lf", "commvqa", "afgv", "table")


def load_items(dataset: str, *, questions: str | Path | None = None, images: str | Path | None = None,
               data_dir: Path | None = None) -> pd.DataFrame:
    """The question items of ``dataset`` (VizWiz-LF §3, CommVQA §5, AFGV; ``table`` for any question file).

    Parameters
    ----------
    dataset : str
        One of :data:`DATASETS`.
    questions : str or Path, optional
        The question table (CSV, JSONL or Parquet) that ``afgv`` and ``table`` need.
    images : str or Path, optional
        CommVQA ``images.zip`` or folder, or the GQA images folder (default: the environment).
    data_dir : Path, optional
        The data folder (default: the project's).

    Returns
    -------
    pandas.DataFrame
        :data:`ITEM_COLUMNS`; a bad question table raises ``DataFormatError`` naming file, row and field.
    """
    if dataset == "vizwiz-lf":
        return vizwiz_items(data_dir=data_dir)
    if dataset == "commvqa":
        return commvqa_items(images=images, data_dir=data_dir)
    if questions is None:
        raise ValueError(f"--dataset {dataset} needs --questions (a CSV/JSONL/Parquet question table)")
    table = read_question_table(questions)  # a pipe, bad bytes or a broken line stop here, naming file and line
    return afgv_items(table, images=images) if dataset == "afgv" else table_items(table)
