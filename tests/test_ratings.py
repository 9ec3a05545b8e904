"""The ratings schema of the human evaluation (VizWiz-LF §6): loader, checks, Table 18 hook."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from vqalib.papers.vizwiz_lf import loading, ratings, simulation, table4
from vqalib.papers.vizwiz_lf.ratings import RatingsFileError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def release(data_dir):
    """load_ratings checks question ids against the VizWiz-LF release in data/raw (fetched by conftest)."""
    return data_dir


def test_valid_file_loads_typed_in_file_order():
    frame = ratings.load_ratings(FIXTURES / "ratings_valid.csv")
    assert list(frame.columns) == list(ratings.COLUMNS)
    assert len(frame) == 30 and frame["participant_id"].iloc[0] == "B01"
    assert frame["question_id"].dtype == "int64" and frame["rank"].dtype == "int64"
    assert set(frame["group"]) == set(ratings.GROUPS)
    assert not ratings.is_simulated(frame)


def test_missing_column_is_named_with_file_and_header_line():
    path = FIXTURES / "ratings_missing_column.csv"
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    message = str(error.value)
    assert str(path) in message and "line 1" in message and "column 'fluency'" in message
    assert error.value.problems[0][:2] == (1, "fluency")


def test_out_of_range_and_non_integer_ratings_name_row_and_column():
    path = FIXTURES / "ratings_out_of_range.csv"
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    problems = error.value.problems
    assert [(line, column) for line, column, _ in problems] == [(6, "helpfulness"), (12, "plausibility")]
    message = str(error.value)
    assert f"{path}, line 6, column 'helpfulness': rating 4 is out of range 1-3" in message
    assert "line 12, column 'plausibility': '2.5' is not an integer rating 1-3" in message


def test_ranks_must_be_a_permutation_within_participant_and_question():
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(FIXTURES / "ratings_bad_ranks.csv")
    (line, column, message), = error.value.problems
    assert column == "rank" and line == 16
    assert "participant 'S01', question 3" in message and "[1, 1, 3]" in message and "lines 14, 15, 16" in message


@pytest.mark.parametrize("edit, line, column, words", [
    (lambda rows: rows.__setitem__(3, rows[3].replace(",B,3,", ",BLV,3,")), 4, "group", "'BLV' is not one of"),
    (lambda rows: rows.__setitem__(2, rows[2].replace("Gemini", "gemini")), 3, "source", "'gemini' is not one of"),
    (lambda rows: rows.__setitem__(2, rows[2][:-1]), 3, "fluency", "empty cell"),
    (lambda rows: rows.__setitem__(5, rows[5].replace(",227,", ",q227,")), 6, "question_id", "positive integer"),
    (lambda rows: rows.__setitem__(7, rows[7].replace("Identification", "Description")), 8, "question_category",
     "has question_category 'Description' here but 'Identification' on line 2"),
    (lambda rows: rows.__setitem__(8, rows[8].replace(",B+I,", ",S,")), 9, "group",
     "has group 'S' here but 'B+I' on line 8"),
    (lambda rows: rows.append(rows[1]), 32, "source", "again (first on line 2)"),
])
def test_each_rule_names_its_line_and_column(tmp_path, edit, line, column, words):
    rows = (FIXTURES / "ratings_valid.csv").read_text().splitlines()
    edit(rows)
    path = tmp_path / "edited.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    assert any(p[0] == line and p[1] == column and words in p[2] for p in error.value.problems), error.value.problems


def test_wrong_field_count_and_empty_file_are_reported(tmp_path):
    rows = (FIXTURES / "ratings_valid.csv").read_text().splitlines()
    rows[4] += ",extra"
    bad = tmp_path / "fields.csv"
    bad.write_text("\n".join(rows) + "\n")
    with pytest.raises(RatingsFileError, match=r"line 5: 11 fields where the header has 10"):
        ratings.load_ratings(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(RatingsFileError, match="empty"):
        ratings.load_ratings(empty)


def _valid_with(tmp_path: Path, old: bytes, new: bytes, *, count: int = 1) -> Path:
    data = (FIXTURES / "ratings_valid.csv").read_bytes()
    assert data.count(old) == count, old
    path = tmp_path / "edited.csv"
    path.write_bytes(data.replace(old, new))
    return path


def test_non_utf8_bytes_name_file_line_and_column_of_every_cell(tmp_path):
    path = _valid_with(tmp_path, b"B01,B,227,Description,GPT-4V", b"B\xf601,B,227,Description,GPT-4V")
    data = path.read_bytes()
    assert data.count(b"SI02,S+I,3,Identification,Gemini") == 1
    path.write_bytes(data.replace(b"SI02,S+I,3,Identification,Gemini", b"SI02,S+I,3,Identific\xe4tion,Gemini"))
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    assert [p[:2] for p in error.value.problems] == [(5, "participant_id"), (27, "question_category")]
    message = str(error.value)
    assert f"{path}, line 5, column 'participant_id': not UTF-8 text: byte 0xf6 in b'B\\xf601'" in message
    assert f"{path}, line 27, column 'question_category': not UTF-8 text: byte 0xe4" in message


@pytest.mark.parametrize("content, problem", [
    (b"", (1, None, "the file is empty (0 bytes)")),
    (b"\xef\xbb\xbf\n \n", (1, None, "the file is empty (3 bytes)")),
    (b"participant_id,group,question_id,question_category,source,rank,relevance,helpfulness,plausibility,fluency\n\n",
     (1, None, "no data rows: the file has only the header line")),
    (b"{}", (1, "participant_id", "required column missing; the header has ['{}']")),
    (b"[]\n[]\n", (1, "participant_id", "required column missing; the header has ['[]']")),
    (b'{"participant_id": "B01"}', (1, "group", "required column missing")),
])
def test_empty_header_only_and_json_like_files_are_named(tmp_path, content, problem):
    path = tmp_path / "odd.csv"
    path.write_bytes(content)
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    line, column, words = problem
    assert any(p[0] == line and p[1] == column and words in p[2] for p in error.value.problems), error.value.problems
    assert str(error.value).startswith(f"{path}: ")
    assert f"{path}, line 1" in str(error.value)


def test_a_repeated_column_is_refused(tmp_path):
    path = _valid_with(tmp_path, b",rank,relevance,", b",rank,rank,")
    with pytest.raises(RatingsFileError, match=r"edited\.csv, line 1: duplicated column\(s\) \['rank'\]"):
        ratings.load_ratings(path)


def test_question_ids_outside_the_release_name_file_line_column_and_value(tmp_path):
    path = _valid_with(tmp_path, b",227,", b",601,", count=15)
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    problems = error.value.problems
    assert len(problems) == 15 and {p[1] for p in problems} == {"question_id"}
    assert [p[0] for p in problems] == [5, 6, 7, 11, 12, 13, 17, 18, 19, 23, 24, 25, 29, 30, 31]
    assert (f"{path}, line 5, column 'question_id': question id 601 is not in the VizWiz-LF release "
            "(600 ids, 1-600)") in str(error.value)


def test_question_ids_can_be_given_and_the_error_is_a_data_format_error():
    from vqalib.core.io import DataFormatError

    with pytest.raises(DataFormatError) as error:  # RatingsFileError is one
        ratings.load_ratings(FIXTURES / "ratings_valid.csv", question_ids={3, 4, 5})
    assert isinstance(error.value, RatingsFileError) and len(error.value.problems) == 15
    assert "question id 227 is not in the given question ids (3 ids, 3-5)" in str(error.value)


def test_release_ids_are_the_keys_of_the_seven_files(data_dir):

    assert loading.vizwiz_lf_question_ids(data_dir=data_dir) == frozenset(range(1, 601))


def test_simulated_studies_use_release_ids(vizwiz):
    """The SIMULATED study of notebook 04 draws release ids; the data-free default (1-12) is in the release too."""

    release = frozenset(vizwiz.answers["question_id"])
    drawn = simulation.design_questions(vizwiz.answers, per_category=3, seed=0)
    for questions in (None, drawn):
        frame = simulation.simulate_ratings(seed=0, questions=questions)
        checked = ratings.check_ratings(frame.astype(str), name="simulated", question_ids=release)
        assert set(checked["question_id"]) <= release and len(checked) == 1440


def test_extra_columns_blank_lines_and_bom_are_kept_or_ignored(tmp_path):
    rows = (FIXTURES / "ratings_valid.csv").read_text().splitlines()
    rows = [rows[0] + ",note"] + [r + ",ok" for r in rows[1:]]
    rows.insert(5, "")
    path = tmp_path / "extra.csv"
    path.write_text("\ufeff" + "\n".join(rows) + "\n", encoding="utf-8")
    frame = ratings.load_ratings(path)
    assert len(frame) == 30 and frame["note"].eq("ok").all()


def test_many_problems_are_listed_then_counted(tmp_path):
    rows = (FIXTURES / "ratings_valid.csv").read_text().splitlines()
    rows = [rows[0]] + [r.rsplit(",", 1)[0] + ",9" for r in rows[1:]]
    path = tmp_path / "nines.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    assert len(error.value.problems) == 30 and "and 5 more problem(s)" in str(error.value)


def test_per_answer_correctness_is_the_normalised_mean_of_s_i_ratings():
    frame = ratings.load_ratings(FIXTURES / "ratings_valid.csv")
    table = ratings.per_answer_correctness(frame)
    assert list(table.columns) == ["source", "question_id", "correctness", "n_raters"]
    assert len(table) == 6 and table["n_raters"].eq(2).all()
    gemini_227 = table[(table["source"] == "Gemini") & (table["question_id"] == 227)]
    assert gemini_227["correctness"].item() == pytest.approx(0.0)      # SI01: 1, SI02: 1
    gpt_3 = table[(table["source"] == "GPT-4V") & (table["question_id"] == 3)]
    assert gpt_3["correctness"].item() == pytest.approx(0.75)          # SI01: 3, SI02: 2 -> (1 + 0.5) / 2


def test_per_answer_correctness_feeds_table18():

    table = ratings.per_answer_correctness(ratings.load_ratings(FIXTURES / "ratings_valid.csv"))
    scores = pd.DataFrame({"source": table["source"], "question_id": table["question_id"], "metric": "rouge",
                           "reference_kind": "s_r", "candidate_kind": "l_c", "score": [0.1, 0.9, 0.5, 0.2, 0.3, 0.8]})
    result = table4.human_correlation(scores, table)
    assert result["n"].item() == 6 and -1 <= result["r"].item() <= 1


def test_per_answer_correctness_needs_the_s_i_group():
    frame = ratings.load_ratings(FIXTURES / "ratings_valid.csv")
    with pytest.raises(ValueError, match="S\\+I"):
        ratings.per_answer_correctness(frame[frame["group"] != "S+I"])


def test_study_labels_say_simulated(tmp_path):
    frame = ratings.load_ratings(FIXTURES / "ratings_valid.csv")
    human = ratings.Study(ratings=frame, label="human ratings: x.csv", simulated=False)
    assert human.name("means") == "vizwiz-lf_fig02_human_means" and "SIMULATED" not in human.title("t")
    path = tmp_path / "sim.csv"
    shutil.copy(FIXTURES / "ratings_valid.csv", path)
    text = path.read_text().splitlines()
    path.write_text("\n".join([text[0] + ",study"] + [r + ",SIMULATED" for r in text[1:]]) + "\n")
    study = ratings.Study.from_file(path)
    assert study.simulated and study.name("means") == "vizwiz-lf_fig02_SIMULATED_means"
    assert study.title("t").startswith("SIMULATED") and study.labelled(frame)["study"].str.startswith("SIMULATED").all()


def test_correctness_table_from_the_first_real_study():
    simulated = ratings.Study(ratings=pd.DataFrame(), label="SIMULATED (seed 0)", simulated=True)
    assert ratings.correctness_table([simulated])["status"].iloc[0] == "not run: no human ratings"
    real = ratings.Study.from_file(FIXTURES / "ratings_valid.csv")
    table = ratings.correctness_table([simulated, real])
    assert table.columns[0] == "study" and table["study"].eq(real.label).all()
    pd.testing.assert_frame_equal(table.drop(columns="study"), ratings.per_answer_correctness(real.ratings))


# --- large files full of errors, out-of-range integers, files that are not regular ----------------------

def _many_error_rows() -> list[str]:
    """3,000 rows: 10 participants x 100 questions x 3 sources, with 750 cross-row errors of known place.

    Block ``b`` (participant ``P<b // 100>``, question ``b % 100 + 1``) is on lines ``2 + 3b`` to ``4 + 3b``.
    ``b % 10 == 1``: ranks 1, 1, 3 (one rank problem); ``b % 10 == 2``: GPT-4V rated twice (one repeat, one rank
    problem); participant P5's odd blocks name group S+I, not B+I (3 group problems each); participant P9 gives
    every question the next category (3 category problems per block).
    """
    rows = [",".join(ratings.COLUMNS)]
    for b in range(1000):
        participant, question = b // 100, b % 100 + 1
        group = ratings.GROUPS[participant % 4]
        if participant == 5 and b % 2:
            group = "S+I"
        category = ratings.CATEGORIES[(question + (participant == 9)) % 4]
        sources = ["GPT-4V", "GPT-4V", "Expert"] if b % 10 == 2 else list(ratings.SOURCES)
        ranks = [1, 1, 3] if b % 10 == 1 else [1, 2, 3]
        rows += [f"P{participant},{group},{question},{category},{source},{rank},1,2,3,1"
                 for source, rank in zip(sources, ranks)]
    return rows


def test_a_file_with_many_errors_reports_every_one_by_line_and_column(tmp_path):
    """Must show: all 750 cross-row problems of a 3,000-row file are reported, each at its own line and column
    with its message, in line order (the checks run once per column, not once per failing row)."""
    path = tmp_path / "many.csv"
    path.write_text("\n".join(_many_error_rows()) + "\n")
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    problems = error.value.problems
    assert len(problems) == 750 and [p[0] for p in problems] == sorted(p[0] for p in problems)
    counts = pd.Series([p[1] for p in problems]).value_counts().to_dict()
    assert counts == {"question_category": 300, "rank": 200, "group": 150, "source": 100}
    assert {p[0] for p in problems if p[1] == "source"} == {3 + 3 * b for b in range(1000) if b % 10 == 2}
    by_place = {(line, column): message for line, column, message in problems}
    # block 12 (P0, question 13): GPT-4V rated twice on lines 38 and 39, so its ranks are not a permutation either
    assert by_place[(39, "source")] == ("participant 'P0' rated the GPT-4V answer to question 13 again "
                                        "(first on line 38)")
    assert by_place[(40, "rank")] == ("participant 'P0', question 13: the ranks [1, 2, 3] of sources ['Expert', "
                                      "'GPT-4V', 'GPT-4V'] are not 1, 2, 3 over ['GPT-4V', 'Gemini', 'Expert'] "
                                      "(lines 38, 39, 40)")
    assert by_place[(7, "rank")].endswith("the ranks [1, 1, 3] of sources ['Expert', 'GPT-4V', 'Gemini'] are not "
                                          "1, 2, 3 over ['GPT-4V', 'Gemini', 'Expert'] (lines 5, 6, 7)")
    # block 501 (P5's first odd block), lines 1505-1507; P5 first named its group on line 1502
    assert by_place[(1505, "group")] == "participant_id 'P5' has group 'S+I' here but 'B+I' on line 1502"
    # block 900 (P9, question 1), lines 2702-2704; question 1 was first on line 2, as Description
    assert by_place[(2702, "question_category")] == ("question_id 1 has question_category 'Reading' here but "
                                                     "'Description' on line 2")
    assert "750 problem(s)" in str(error.value) and "and 725 more problem(s)" in str(error.value)


def test_a_file_with_many_bad_values_reports_every_cell(tmp_path):
    rows = _many_error_rows()
    for i in range(1, len(rows), 2):  # every other data row: fluency 7
        rows[i] = rows[i].rsplit(",", 1)[0] + ",7"
    path = tmp_path / "sevens.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    assert error.value.problems == [(line, "fluency", "rating 7 is out of range 1-3") for line in range(2, 3002, 2)]


@pytest.mark.parametrize("value, shown", [
    ("12345678901234567890123", "12345678901234567890123"),
    (str(2 ** 63), str(2 ** 63)),
    ("0" * 5 + str(2 ** 64), "0" * 5 + str(2 ** 64)),
    ("7" * 5000, "7" * 40 + "... (5000 digits)"),  # past the 4,300 digits int() accepts
])
def test_an_out_of_range_question_id_is_named_not_an_overflow(tmp_path, value, shown):
    """Must show: a question id too large for int64 is a DataFormatError naming file, line, column, value and what
    is allowed (the typing of the column raised a bare OverflowError)."""
    from vqalib.core.io import DataFormatError

    path = _valid_with(tmp_path, b"B01,B,227,Description,GPT-4V", f"B01,B,{value},Description,GPT-4V".encode())
    with pytest.raises(DataFormatError) as error:
        ratings.load_ratings(path)
    [(line, column, message)] = error.value.problems
    assert (line, column) == (5, "question_id")
    assert f"{path}, line 5, column 'question_id': question id {shown} is out of range: a positive integer up to " \
           f"{2 ** 63 - 1} is allowed" in str(error.value)


def test_the_largest_int64_question_id_is_typed_then_found_outside_the_release(tmp_path):
    largest = 2 ** 63 - 1
    path = _valid_with(tmp_path, b"B01,B,227,Description,GPT-4V", f"B01,B,{largest},Description,GPT-4V".encode())
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    [message] = [m for line, column, m in error.value.problems if (line, column) == (5, "question_id")]
    assert message.startswith(f"question id {largest} is not in the VizWiz-LF release (600 ids, 1-600)")


def test_huge_ranks_and_ratings_are_named_too(tmp_path):
    huge = "12345678901234567890123"
    path = _valid_with(tmp_path, b"B01,B,227,Description,GPT-4V,2,2,2,3,3",
                       f"B01,B,227,Description,GPT-4V,{huge},2,{huge},3,3".encode())
    with pytest.raises(RatingsFileError) as error:
        ratings.load_ratings(path)
    assert error.value.problems == [(5, "rank", f"rank {huge} is out of range 1-3"),
                                    (5, "helpfulness", f"rating {huge} is out of range 1-3")]


def test_a_ratings_path_that_is_a_pipe_or_a_folder_is_refused_by_name(tmp_path):
    """A named pipe would block a reader for ever: it is refused at once, as a folder is."""
    import os
    import threading

    from vqalib.core.io import NotRegularFile

    pipe, folder = tmp_path / "ratings.csv", tmp_path / "folder.csv"
    os.mkfifo(pipe)
    folder.mkdir()
    outcome = {}

    def load(path):
        try:
            ratings.load_ratings(path)
        except NotRegularFile as err:
            outcome[path] = str(err)

    for path in (pipe, folder):
        reader = threading.Thread(target=load, args=(path,), daemon=True)
        reader.start()
        reader.join(60)  # a safety net only: the refusal is immediate
        assert not reader.is_alive(), f"load_ratings blocked on {path}"
    assert outcome[pipe] == f"{pipe}: cannot read this ratings file: it is a named pipe (FIFO), not a regular file"
    assert outcome[folder] == f"{folder}: cannot read this ratings file: it is a directory, not a regular file"
