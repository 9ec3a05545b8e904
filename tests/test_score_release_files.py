"""A release's own answer file given to `vqalib score` as is: the VizWiz-LF release's gemini.json (one JSON object keyed
by question id, the answer under answer_paragraph) scores equal to figures/ for Gemini's label-free cells."""

import pandas as pd
import pytest

from vqalib.compendium import score as scoring
from vqalib.core.io import project_root
from vqalib.core.upstream import verified_path

FIGURES = project_root() / "figures"


@pytest.mark.full
def test_release_gemini_json_as_is_scores_like_figures():
    card = scoring.score([verified_path("vizwiz-lf/gemini.json")], dataset="vizwiz-lf", model="Gemini (release file)",
                         compare=False)
    assert card.sources[0]["format"] == "vizwiz-lf-release" and card.coverage["matched"] == 600
    words = card.tables["vizwiz-lf_table01_word_counts"].set_index(["category", "statistic"])["value"].round(4)
    table1 = pd.read_csv(FIGURES / "vizwiz-lf_table01_word_counts.csv")
    table1 = table1[table1["column"] == "Gemini"].set_index(["category", "statistic"])["reproduced"]
    assert len(words) == 10 and (words == table1.reindex(words.index)).all()
    keys = ["metric", "reference", "candidate"]
    full = card.tables["vizwiz-lf_table04_full_set_bootstrap"]
    full = full[full["candidate"] == "l_c"].dropna(subset=["value"]).set_index(keys)
    released = pd.read_csv(FIGURES / "vizwiz-lf_table04_full_set_bootstrap.csv", keep_default_na=False, na_values=[""])
    released = released[(released["source"] == "Gemini") & (released["candidate"] == "l_c")].set_index(keys)
    assert len(full) == 6  # ROUGE, METEOR, BERTScore against s_r and l_r; LAVE not run without a judge
    ours = full[["value", "ci_low", "ci_high"]].round(4).rename(columns={"value": "reproduced"})
    assert ours.equals(released.loc[full.index, ["reproduced", "ci_low", "ci_high"]].round(4))
