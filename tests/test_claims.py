"""Every number the prose states is read from figures/ or checked against it (vqalib.compendium.claims), and the
README's status table is generated from the registry and figures/."""

import json

import pandas as pd

from vqalib.compendium import claims, status
from vqalib.core.io import project_root

ROOT = project_root()


def test_every_number_in_the_prose_is_accounted_for():
    problems = claims.check()
    assert not problems, f"{len(problems)} problem(s) (vqalib claims):\n" + "\n".join(problems[:40])


def test_readme_status_table_is_generated_from_figures():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(status.STATUS_BEGIN, 1)[1].split(status.STATUS_END, 1)[0]
    assert block.strip() == status.status_markdown().strip(), (
        "README.md's status table is stale: run `vqalib readme` (make reproduce does it)")


def _root(tmp_path, markdown: str) -> object:
    """A minimal project: one notebook with ``markdown``, a README, no known differences, one table."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "figures").mkdir()
    (tmp_path / "data" / "paper").mkdir(parents=True)
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [markdown]}], "metadata": {},
          "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "01_x.ipynb").write_text(json.dumps(nb))
    (tmp_path / "README.md").write_text("See Table 4 and §7.2 (2024); run `make test -j 2`.\n")
    (tmp_path / "data" / "paper" / "known_differences.csv").write_text("table,cell,explanation\n")
    pd.DataFrame({"model": ["A", "B"], "within": [42, 7], "compared": [45, 9]}).to_csv(
        tmp_path / "figures" / "agreement.csv", index=False)
    return tmp_path


def test_a_claimed_number_is_checked_against_its_table(tmp_path):
    root = _root(tmp_path, "Model A: 42 of\n45 cells within tolerance.")
    good = [claims.Claim("notebooks/01_x.ipynb", "Model A: 42 of 45", "42", "result", "agreement",
                         'model == "A"', "within", "d"),
            claims.Claim("notebooks/01_x.ipynb", "42 of 45 cells", "45", "result", "agreement",
                         'model == "A"', "compared", "d")]
    assert claims.check(root=root, claims=good) == []
    (root / "figures" / "agreement.csv").write_text("model,within,compared\nA,43,45\nB,7,9\n")  # the data moved
    assert claims.check(root=root, claims=good) == [
        "notebooks/01_x.ipynb: claim 'Model A: 42 of 45': says 42, agreement.csv gives 43"]


def test_an_unclaimed_number_and_a_stale_claim_are_reported(tmp_path):
    root = _root(tmp_path, "Model B: 7 of 9 cells (Table 2).")
    stale = [claims.Claim("notebooks/01_x.ipynb", "Model B: 8 of 9", "8", "result", "agreement",
                          'model == "B"', "within", "d")]
    problems = claims.check(root=root, claims=stale)
    assert problems[0] == ("notebooks/01_x.ipynb: claim 'Model B: 8 of 9': the text is no longer in the prose "
                           "(update data/claims/)")
    assert [p.split(":")[1].strip() for p in problems[1:]] == ["'7' in …Model B", "'9' in …Model B"]


def test_structural_numbers_need_no_claim():
    masked = claims._masked("Tables 2, 3, 15, 16 and Fig. 5 (§7.2, A.2.2, notebook 05, 2024, `seed=3`, "
                            "Python 3.11, 95% CI); GPT-4V and BLIP-2 are names")
    assert [m.group(0) for m in claims.NUMBER.finditer(masked)] == []
    assert [m.group(0) for m in claims.NUMBER.finditer("0.1966 vs 4.2k, 12.5% and 3,415; end of 4.")] == [
        "0.1966", "4.2k", "12.5%", "3,415", "4"]
