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
