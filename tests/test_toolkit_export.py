"""`vqalib export` (vqalib.runner.toolkit_export): lmms-eval task folders and VLMEvalKit TSVs with the runner's
prompts, deterministic, every question once; a VLMEvalKit prediction file built from the TSV scores like a plain file."""

import json

import pandas as pd
import pytest
from PIL import Image

from vqalib.compendium import score as scoring
from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf
from vqalib.runner import strategies
from vqalib.runner.images import ImageError
from vqalib.runner.questions import dataset_items
from vqalib.runner.toolkit_export import export_lmms_eval, export_vlmevalkit


def placeholder_images(folder, names):
    """Tiny PNGs under the names the items' images have (the toolkit tests need files, not pictures)."""
    folder.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", (4, 4), "white")
    for name in names:
        image.save(folder / name, format="PNG")
    return folder


def vizwiz_image_names():
    return [url.rsplit("/", 1)[-1] for url in dataset_items("vizwiz-lf")["image"]]


def test_lmms_eval_tasks_are_deterministic_and_carry_the_runner_prompts(tmp_path):
    first = export_lmms_eval("vizwiz-lf", out=tmp_path / "a")
    assert [p.stem for p in first] == ["vizwiz_lf_vanilla", "vizwiz_lf_abstention"]
    export_lmms_eval("vizwiz-lf", out=tmp_path / "b")  # a second export, elsewhere: the same bytes but its own path
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 7 and files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*")
                                               if p.is_file())
    for name in files:
        a, b = (tmp_path / "a" / name).read_bytes(), (tmp_path / "b" / name).read_bytes()
        assert a.replace(str(tmp_path / "a").encode(), b"DIR") == b.replace(str(tmp_path / "b").encode(), b"DIR")
    folder = tmp_path / "a" / "vizwiz_lf_abstention"
    docs = [json.loads(line) for line in (folder / "vizwiz_lf_abstention.jsonl").read_text().splitlines()]
    assert len(docs) == 600 and len({d["item_id"] for d in docs}) == 600
    assert docs[0]["prompt"] == strategies.abstention_prompt(docs[0]["question"])
    yaml = (folder / "vizwiz_lf_abstention.yaml").read_text()
    for line in ("dataset_path: json", "output_type: generate_until", "process_results: !function "
                 "utils.process_results", f"    test: {folder / 'vizwiz_lf_abstention.jsonl'}", "data_sha256: "):
        assert line in yaml
    utils = (folder / "utils.py").read_text()
    assert 'METRIC = "words"' in utils and '"item_id": doc["item_id"]' in utils
    vanilla = [json.loads(line) for line in
               (tmp_path / "a" / "vizwiz_lf_vanilla" / "vizwiz_lf_vanilla.jsonl").read_text().splitlines()]
    assert vanilla[0]["prompt"] == strategies.vanilla_prompt(vanilla[0]["question"])


def test_afgv_and_commvqa_tasks(tmp_path):
    afgv = export_lmms_eval("afgv", out=tmp_path / "afgv")
    assert [p.stem for p in afgv] == ["afgv_simplified", "afgv_baseline", "afgv_complex"]
    docs = [json.loads(line) for line in (tmp_path / "afgv" / "afgv_baseline" / "afgv_baseline.jsonl").open()]
    assert {d["tier"] for d in docs} == {"baseline"} and docs[0]["prompt"].endswith(
        "Answer the question using a single word or phrase.")
    commvqa = export_lmms_eval("commvqa", out=tmp_path / "c")
    contextual = json.loads((tmp_path / "c" / "commvqa_contextual" / "commvqa_contextual.jsonl").open().readline())
    assert "website" in contextual["prompt"] and contextual["image"].startswith("missing:")
    assert [p.stem for p in commvqa] == ["commvqa_baseline", "commvqa_contextual"]


@pytest.mark.full  # slow for `make test` (its 10-minute budget); CI runs it in `make test-full`
def test_vlmevalkit_tsv_round_trip(tmp_path):
    images = placeholder_images(tmp_path / "img", vizwiz_image_names())
    tsvs = export_vlmevalkit("vizwiz-lf", out=tmp_path / "LMUData", images=images)
    assert [p.name for p in tsvs] == ["VizwizLfVanilla_openended.tsv", "VizwizLfAbstention_openended.tsv"]
    table = pd.read_csv(tsvs[0], sep="\t", dtype=str)
    assert len(table) == 600 and table["item_id"].is_unique and table["index"].tolist()[:2] == ["0", "1"]
    assert table.loc[0, "question"] == strategies.vanilla_prompt(
        load_vizwiz_lf(sources=["expert"]).answers.set_index("question_id").loc[int(table.loc[0, "question_id"]),
                                                                                  "question"])
    # VLMEvalKit's infer_data_job keeps the dataset's columns, drops `image`, adds `prediction`
    answers = load_vizwiz_lf().answers
    llava = answers[answers["source"] == "LLaVA"].set_index(answers.loc[answers["source"] == "LLaVA", "question_id"]
                                                              .astype(str))["answer"]
    predictions = table.assign(prediction=table["item_id"].map(llava))
    path = tmp_path / "LLaVA_VizwizLfVanilla_openended.xlsx"
    predictions.to_excel(path, index=False)
    plain = tmp_path / "plain.csv"
    pd.DataFrame({"question_id": llava.index, "answer": llava.to_numpy()}).to_csv(plain, index=False)
    kit = scoring.score([path], dataset="vizwiz-lf", model="M", compare=False, n_resamples=50)
    ref = scoring.score([plain], dataset="vizwiz-lf", model="M", compare=False, n_resamples=50)
    assert kit.sources[0]["format"] == "vlmevalkit"
    for stem in ("vizwiz-lf_table01_word_counts", "vizwiz-lf_table04_full_set_bootstrap"):
        pd.testing.assert_frame_equal(kit.tables[stem], ref.tables[stem])
    by_index = predictions.drop(columns=["item_id", "question_id"])  # joined on `index` through the exported TSV
    by_index.to_csv(tmp_path / "p.tsv", sep="\t", index=False)
    joined = scoring.score([tmp_path / "p.tsv"], dataset="vizwiz-lf", model="M", compare=False, n_resamples=50,
                           task_data=tsvs[0])
    pd.testing.assert_frame_equal(joined.tables["vizwiz-lf_table01_word_counts"],
                                  ref.tables["vizwiz-lf_table01_word_counts"])


def test_a_missing_image_is_named(tmp_path):
    images = placeholder_images(tmp_path / "img", vizwiz_image_names()[1:])  # the first image absent
    with pytest.raises(ImageError, match=r"item 1: VizWiz_\w+\.jpg is not in"):
        export_vlmevalkit("vizwiz-lf", out=tmp_path / "LMUData", images=images)


def test_vlmevalkit_download_error_names_images_and_what_the_folder_holds(tmp_path, monkeypatch):
    """Offline, the export stops at the first image download; the error says --images solves it and what goes there."""
    from vqalib.runner.images import ImageStore

    def offline(self, source):
        raise ImageError(f"{source}: download failed (URLError: no network)")
    monkeypatch.setattr(ImageStore, "read_bytes", offline)
    with pytest.raises(ImageError, match=r"--images FOLDER, a folder holding each item's image file under its own "
                                         r"name \(e\.g\. VizWiz_\w+\.jpg\)"):
        export_vlmevalkit("vizwiz-lf", out=tmp_path / "out")
