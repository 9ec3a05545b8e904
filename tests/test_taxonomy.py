import pytest

from vqalib.papers.vizwiz_lf import taxonomy


def test_canonical_labels_are_designs():
    assert taxonomy.ROLES == ("Confirmation", "Answer", "Answer Failure", "Auxiliary", "Auxiliary Failure",
                              "Explanation", "Suggestion", "Misc")
    assert taxonomy.INFO_SOURCES == ("Image Content", "Image Quality", "External Information")


@pytest.mark.parametrize("raw, kind, expected", [
    ("Answer", "role", ("Answer", "canonical")),
    ("Confirmation of Photo", "role", ("Confirmation", "alias")),
    ("Explanation of Reasoning", "role", ("Explanation", "alias")),
    ("image_quality", "info", ("Image Quality", "alias")),
    ("External Information", "info", ("External Information", "canonical")),
    ("Greeting", "role", ("Greeting", "unknown")),
    ("Answer", "info", ("Answer", "unknown")),
])
def test_canonical_label(raw, kind, expected):
    assert taxonomy.canonical_label(raw, kind=kind) == expected


def test_aliases_point_at_canonical_names():
    assert set(taxonomy.ROLE_ALIASES.values()) <= set(taxonomy.ROLES)
    assert set(taxonomy.INFO_ALIASES.values()) <= set(taxonomy.INFO_SOURCES)


def test_bad_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be"):
        taxonomy.canonical_label("Answer", kind="roles")


def test_paper_names():
    assert taxonomy.paper_role_name("Answer Failure") == "Ans. Failure"
    assert taxonomy.paper_role_name("Answer") == "Answer"
    assert taxonomy.paper_info_name("External Information") == "External Info."
    assert taxonomy.paper_info_name("External Information", table="table16") == "External Information"
