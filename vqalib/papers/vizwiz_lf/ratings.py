"""Per-rating data of the VizWiz-LF human evaluation (§6, Fig. 2; Table 18): schema, strict loader, labels. The ratings
are not public; this checks a user's file of the same design (schema: ``data/ratings/README.md``)."""

from __future__ import annotations

import csv
import io
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from vqalib.core.io import DataFormatError, read_regular
from vqalib.papers.vizwiz_lf.loading import vizwiz_lf_question_ids

GROUPS: tuple[str, ...] = ("B", "B+I", "S", "S+I")
GROUP_NAMES: dict[str, str] = {"B": "BLV", "B+I": "BLV with image description",
                               "S": "sighted without image", "S+I": "sighted with image"}
SOURCES: tuple[str, ...] = ("GPT-4V", "Gemini", "Expert")
CATEGORIES: tuple[str, ...] = ("Identification", "Description", "Reading", "Others")
RATING_COLUMNS: tuple[str, ...] = ("relevance", "helpfulness", "plausibility", "fluency")
COLUMNS: tuple[str, ...] = ("participant_id", "group", "question_id", "question_category", "source", "rank",
                            *RATING_COLUMNS)
CORRECTNESS_GROUP = "S+I"   # the group whose `plausibility` column holds Correctness
SIMULATED = "SIMULATED"
MAX_LISTED_PROBLEMS = 25
RELEASE = "the VizWiz-LF release"
INT64_MAX = 2 ** 63 - 1  # the typed frame holds question ids as int64


class RatingsFileError(DataFormatError):
    """A ratings file that breaks the schema; ``problems`` lists (line, column, message)."""

    def __init__(self, name: str, problems: list[tuple[int | None, str | None, str]]):
        self.name = name
        self.problems = problems
        shown = [_format(name, *p) for p in problems[:MAX_LISTED_PROBLEMS]]
        more = len(problems) - len(shown)
        tail = f"\n  ... and {more} more problem(s)" if more > 0 else ""
        super().__init__(f"{name}: {len(problems)} problem(s) in the ratings file "
                         "(schema: data/ratings/README.md):\n  " + "\n  ".join(shown) + tail)


def _format(name: str, line: int | None, column: str | None, message: str) -> str:
    where = ", ".join(p for p in (f"line {line}" if line else "", f"column '{column}'" if column else "") if p)
    return f"{name}, {where}: {message}" if where else f"{name}: {message}"


def load_ratings(path: str | Path, *, question_ids: Collection[int] | None = None,
                 data_dir: Path | None = None) -> pd.DataFrame:
    """Read and validate a ratings file, typed (§6, Fig. 2): every problem raises :class:`RatingsFileError` naming file,
    line and column, nothing repaired, a non-regular file refused; ``question_ids`` default to the release's."""
    path = Path(path)
    name = str(path)
    data = read_regular(path, what="ratings file").removeprefix(b"\xef\xbb\xbf")
    if not data.strip():
        raise RatingsFileError(name, [(1, None, f"the file is empty ({len(data)} bytes); a header line naming "
                                                f"the columns {list(COLUMNS)} is required")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RatingsFileError(name, _undecodable_cells(data)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader)]
    problems: list[tuple[int | None, str | None, str]] = []
    duplicated = sorted({h for h in header if header.count(h) > 1})
    if duplicated:
        problems.append((1, None, f"duplicated column(s) {duplicated}"))
    for column in COLUMNS:
        if column not in header:
            problems.append((1, column, f"required column missing; the header has {header}"))
    if problems:
        raise RatingsFileError(name, problems)
    rows, lines = [], []
    previous_end = reader.line_num
    for record in reader:
        start, previous_end = previous_end + 1, reader.line_num
        if not record or all(not field.strip() for field in record):
            continue
        if len(record) != len(header):
            problems.append((start, None, f"{len(record)} fields where the header has {len(header)}"))
            continue
        rows.append([field.strip() for field in record])
        lines.append(start)
    if problems:
        raise RatingsFileError(name, problems)
    if not rows:
        raise RatingsFileError(name, [(1, None, "no data rows: the file has only the header line")])
    text_frame = pd.DataFrame(rows, columns=header, dtype=str)
    if question_ids is None:
        question_ids, ids_from = vizwiz_lf_question_ids(data_dir=data_dir), RELEASE
    else:
        ids_from = "the given question ids"
    return check_ratings(text_frame, name=name, lines=lines, question_ids=question_ids, ids_from=ids_from)


def _undecodable_cells(data: bytes) -> list[tuple[int | None, str | None, str]]:
    """(line, column, message) of every cell holding bytes that are not UTF-8."""
    from vqalib.core.io import undecoded_csv_cells

    problems = []
    try:
        for line, row, column, field, cell in undecoded_csv_cells(data):
            bad = next(ch for ch in cell if "\udc80" <= ch <= "\udcff")
            where = "" if row is not None else f" (header field {field})"
            problems.append((line, column, f"not UTF-8 text{where}: byte 0x{ord(bad) - 0xDC00:02x} in "
                                           f"{cell.encode('utf-8', 'surrogateescape')[:40]!r}; save the file as UTF-8"))
    except csv.Error as err:
        problems.append((None, None, f"not UTF-8 text, and not readable as CSV: {err}"))
    if not problems:  # e.g. a bad byte the csv module cannot place
        problems.append((None, None, "not UTF-8 text; save the file as UTF-8"))
    return problems


def check_ratings(text: pd.DataFrame, *, name: str, lines: list[int] | None = None,
                  question_ids: Collection[int] | None = None, ids_from: str = RELEASE) -> pd.DataFrame:
    """Validate a frame of the ratings schema given as text and return it typed (Fig. 2 input); ``lines`` are the rows'
    file lines for messages (default: position + 2); ``question_ids`` None checks no ids."""
    text = text.astype(str).reset_index(drop=True)
    line = pd.Series(lines if lines is not None else range(2, len(text) + 2), index=text.index)
    missing = [c for c in COLUMNS if c not in text.columns]
    if missing:
        raise RatingsFileError(name, [(1, c, "required column missing") for c in missing])
    problems: list[tuple[int | None, str | None, str]] = []

    lines_array = line.to_numpy()

    def flag(mask: pd.Series, column: str, message) -> None:
        # positions, not per-row lookups: the cost stays linear however many rows fail
        where = np.flatnonzero(mask.to_numpy(dtype=bool))
        values = text[column].to_numpy()[where]
        problems.extend((int(n), column, message(v)) for n, v in zip(lines_array[where], values))

    flag(text["participant_id"].eq(""), "participant_id", lambda v: "empty participant id")
    for column, allowed in (("group", GROUPS), ("question_category", CATEGORIES), ("source", SOURCES)):
        flag(~text[column].isin(allowed), column, lambda v, a=allowed: f"{v!r} is not one of {list(a)}")
    digits = text["question_id"].str.fullmatch(r"[0-9]+")
    flag(~digits | text["question_id"].str.fullmatch(r"0+"),
         "question_id", lambda v: f"{v!r} is not a positive integer question id")
    # past int64 the typing below would overflow; compare as text since int() refuses over 4,300 digits
    significant = text["question_id"].str.lstrip("0")
    flag(digits & (significant.str.len().gt(19) | (significant.str.len().eq(19) & significant.gt(str(INT64_MAX)))),
         "question_id", lambda v: f"question id {v if len(v) <= 40 else v[:40] + f'... ({len(v)} digits)'} is out "
                                  f"of range: a positive integer up to {INT64_MAX} is allowed")
    for column in ("rank", *RATING_COLUMNS):
        what = "rank" if column == "rank" else "rating"
        flag(~text[column].str.fullmatch(r"[0-9]+"), column,
             lambda v, w=what: f"{v!r} is not an integer {w} 1-3" if v else f"empty cell: a {w} 1-3 is required")
        flag(text[column].str.fullmatch(r"[0-9]+") & ~text[column].isin(["1", "2", "3"]), column,
             lambda v, w=what: f"{w} {v} is out of range 1-3")
    if problems:
        raise RatingsFileError(name, sorted(problems, key=lambda p: (p[0] or 0, COLUMNS.index(p[1]))))

    typed = text.copy()
    for column in ("question_id", "rank", *RATING_COLUMNS):
        typed[column] = typed[column].astype("int64")
    if question_ids is not None:
        known = frozenset(int(q) for q in question_ids)
        span = f"{len(known)} ids, {min(known)}-{max(known)}" if known else "no ids"
        unknown = np.flatnonzero(~typed["question_id"].isin(known).to_numpy(dtype=bool))
        problems.extend((int(n), "question_id", f"question id {q} is not in {ids_from} ({span}); ratings must be of "
                         "the release's questions")
                        for n, q in zip(lines_array[unknown], typed["question_id"].to_numpy()[unknown]))
    problems += _design_problems(typed, line)
    if problems:
        raise RatingsFileError(name, sorted(problems, key=lambda p: (p[0] or 0, p[1] or "")))
    return typed


def _design_problems(typed: pd.DataFrame, line: pd.Series) -> list[tuple[int, str, str]]:
    """Cross-row rules (unique answers, one group per participant and category per question, ranks 1-3), linear time."""
    problems = []
    lines = line.to_numpy()
    participant = typed["participant_id"].tolist()
    question = typed["question_id"].tolist()
    source = typed["source"].tolist()
    key = ["participant_id", "question_id", "source"]
    first_of_key = line.groupby([typed[k] for k in key], sort=False).transform("first").to_numpy()
    for i in np.flatnonzero(typed.duplicated(key, keep="first").to_numpy()):
        problems.append((int(lines[i]), "source", f"participant {participant[i]!r} rated the {source[i]} answer to "
                         f"question {question[i]} again (first on line {first_of_key[i]})"))
    for owner, column in (("participant_id", "group"), ("question_id", "question_category")):
        first_value = typed.groupby(owner, sort=False)[column].transform("first")
        first_line = line.groupby(typed[owner], sort=False).transform("first").to_numpy()
        owners, values, firsts = typed[owner].tolist(), typed[column].tolist(), first_value.tolist()
        for i in np.flatnonzero((typed[column] != first_value).to_numpy()):
            problems.append((int(lines[i]), column, f"{owner} {owners[i]!r} has {column} {values[i]!r} here but "
                             f"{firsts[i]!r} on line {first_line[i]}"))
    by_block = typed.groupby(["participant_id", "question_id"], sort=False)
    complete = (by_block["source"].transform("size").eq(len(SOURCES)) & by_block["source"].transform("nunique").eq(
        len(SOURCES)) & by_block["rank"].transform("nunique").eq(3))   # ranks are 1-3 already: a permutation
    blocks: dict[tuple, list[int]] = {}  # (participant, question) -> row positions, blocks in order of first row
    for i in np.flatnonzero(~complete.to_numpy()):
        blocks.setdefault((participant[i], question[i]), []).append(int(i))
    rank = typed["rank"].tolist()
    for (who, which), rows in blocks.items():
        problems.append((int(lines[rows[-1]]), "rank",
                         f"participant {who!r}, question {which}: the ranks {sorted(rank[i] for i in rows)} of "
                         f"sources {sorted(source[i] for i in rows)} are not 1, 2, 3 over {list(SOURCES)} "
                         f"(lines {', '.join(str(int(lines[i])) for i in rows)})"))
    return problems


def per_answer_correctness(ratings: pd.DataFrame) -> pd.DataFrame:
    """Human correctness of each answer for Table 18 (A.3.1): S+I's 0-1 Correctness averaged over raters (``n_raters``).

    Parameters
    ----------
    ratings : pandas.DataFrame
        :func:`load_ratings` output; ValueError without S+I ratings.
    """
    rated = ratings[ratings["group"] == CORRECTNESS_GROUP]
    if rated.empty:
        raise ValueError(f"no ratings of group {CORRECTNESS_GROUP!r}: only that group rated Correctness "
                         "(the other groups rated Plausibility), so Table 18 cannot be computed")
    per_answer = (rated.assign(correctness=(rated["plausibility"] - 1) / 2)
                  .groupby(["source", "question_id"], sort=True)["correctness"]
                  .agg(correctness="mean", n_raters="size").reset_index())
    return per_answer


def is_simulated(ratings: pd.DataFrame) -> bool:
    """True when a ratings frame's ``study`` column says :data:`SIMULATED` (§6, Fig. 2)."""
    return "study" in ratings.columns and ratings["study"].astype(str).str.contains(SIMULATED).any()


@dataclass(frozen=True)
class Study:
    """Ratings of one study and how its outputs are named (Fig. 2); a simulated one says SIMULATED everywhere."""

    ratings: pd.DataFrame
    label: str          # the `study` column of every table, e.g. "SIMULATED (seed 0)"
    simulated: bool

    @classmethod
    def from_file(cls, path: str | Path, *, question_ids: Collection[int] | None = None,
                  data_dir: Path | None = None) -> Study:
        """The study of a ratings file (:func:`load_ratings`; §6, Fig. 2), simulated when :func:`is_simulated` says so.

        Parameters
        ----------
        path : str or Path
        question_ids : collection of int, optional
        data_dir : Path, optional
        """
        ratings = load_ratings(path, question_ids=question_ids, data_dir=data_dir)
        if is_simulated(ratings):
            return cls(ratings=ratings, label=f"{SIMULATED}: read from {Path(path).name}", simulated=True)
        return cls(ratings=ratings, label=f"human ratings: {Path(path).name}", simulated=False)

    def name(self, part: str) -> str:
        """File stem of a Fig. 2 output: ``vizwiz-lf_fig02_SIMULATED_<part>`` or ``vizwiz-lf_fig02_human_<part>``.

        Parameters
        ----------
        part : str
        """
        return f"vizwiz-lf_fig02_{SIMULATED if self.simulated else 'human'}_{part}"

    def title(self, text: str) -> str:
        """A title that says SIMULATED first when the data are (Fig. 2 outputs).

        Parameters
        ----------
        text : str
        """
        if self.simulated:
            return f"{SIMULATED} data, not the paper's results: {text}"
        return text

    def labelled(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with the study label as first column (saved tables of Fig. 2 and Table 18).

        Parameters
        ----------
        frame : pandas.DataFrame
            A table; an existing ``study`` column is replaced.
        """
        return pd.concat([pd.DataFrame({"study": [self.label] * len(frame)}, index=frame.index),
                          frame.drop(columns="study", errors="ignore")], axis=1)


CORRECTNESS_ENABLE = ("pass ratings_path=<ratings CSV, schema in data/ratings/README.md> to this notebook; it writes "
                      "the per-answer correctness that notebook 03 takes as human_ratings (the study's ratings are not "
                      "public)")


def correctness_table(studies: list[Study]) -> pd.DataFrame:
    """Table 18's human correctness from the first real study, labelled, or a not-run row (A.3.1).

    Parameters
    ----------
    studies : list of Study
        The studies of notebook 04; simulated ones are skipped.
    """
    from vqalib.core import report

    real = [s for s in studies if not s.simulated]
    if not real:
        return report.not_run("no human ratings", enable=CORRECTNESS_ENABLE)
    return real[0].labelled(per_answer_correctness(real[0].ratings))
