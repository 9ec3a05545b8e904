"""Papermill smoke runs of every notebook, full-run determinism, and the HTML site."""

from pathlib import Path

import pytest

from conftest import openai_server
import tiny_models  # noqa: F401  (importing it registers the tiny test models)
from vqalib.compendium import reproduce
from vqalib.core import contract, io, registry
from vqalib.papers.commvqa import loading
from vqalib.runner import engines, models, questions

NOTEBOOKS = reproduce.notebook_paths()
FIGURES = io.project_root() / "figures"


def test_notebooks_are_found_in_order():
    names = [p.stem for p in NOTEBOOKS]
    assert names[:2] == ["01_dataset_stats", "02_functional_roles"]
    assert names == sorted(names)


def _record_state() -> dict[str, str]:
    """What a notebook run could corrupt: every file of figures/, scores/ and notebooks/ and the README, by content
    (in a clean checkout, unchanged bytes are a clean ``git status``; a commit made meanwhile changes nothing here)."""
    import hashlib

    root = io.project_root()
    files = [root / "README.md", *(p for d in ("figures", "scores", "notebooks") for p in (root / d).rglob("*"))]
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.is_file()}


def _written_paths(notebook: Path) -> list[str]:
    """The paths under build/ or scores/ a run's printed messages name, the figures folder aside."""
    import re

    import nbformat

    text = "".join(o.get("text", "") for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"
                   for o in c.outputs if o.output_type == "stream")
    found = re.findall(r"(?<![\w/.-])(?:build|scores)/[\w/.-]*\w", text)
    return [p for p in found if not p.endswith("/figures")]


@pytest.mark.full
def test_notebook_smoke_runs_explore_and_leave_the_record_clean(tmp_path, data_dir):
    """Every notebook with one parameter changed (``smoke``, small inputs) and no ``figures_dir``, through papermill
    as a user runs it (not in place): it says it writes ``build/explore/<notebook>/figures/`` and writes there, and
    figures/, scores/, notebooks/ and the README are untouched. About 3 minutes on 2 busy cores, two at a time."""
    import nbformat

    before = _record_state()
    reproduce.run_all(NOTEBOOKS, parameters={"smoke": True}, jobs=2, output_dir=tmp_path, record_times=False)
    assert _record_state() == before
    for path in NOTEBOOKS:
        out = io.project_root() / "build" / "explore" / path.stem / "figures"
        text = (tmp_path / path.name).read_text()
        assert '"status": "completed"' in text and "start_time" not in text, path.name  # run timestamps stripped
        assert str(tmp_path) not in text, path.name  # no absolute path
        first = next(c.outputs[0] for c in nbformat.read(tmp_path / path.name, as_version=4).cells
                     if c.cell_type == "code" and c.outputs)
        assert first.get("text", "").startswith(f"Tables and figures go to build/explore/{path.stem}/figures/ ("), \
            path.name
        if path.stem == "09_score_a_model":  # its messages name the answers file and scorecard where it wrote them
            assert _written_paths(tmp_path / path.name) == [
                f"build/explore/{path.stem}/build/score-demo/llava_answers.csv",
                f"build/explore/{path.stem}/scores/llava-released/index.html"]
        saved = {registry.spec_for_file(p.name).notebook for p in out.glob("*.csv")}
        assert saved == {path.stem}, f"{path.name} saved no table in {out}"
        for png in out.glob("*.png"):
            assert png.with_name(png.stem + ".alt.txt").exists()


def test_a_notebook_outside_reproduce_refuses_the_committed_figures(monkeypatch, capsys):
    from vqalib.core import report

    monkeypatch.delenv(report.IN_PLACE_ENV, raising=False)
    with pytest.raises(ValueError, match="only `vqalib reproduce` writes figures/"):
        report.output_dir(FIGURES, "01_dataset_stats")
    assert report.output_dir(None, "01_dataset_stats") == io.project_root() / "build/explore/01_dataset_stats/figures"
    assert capsys.readouterr().out.startswith("Tables and figures go to build/explore/01_dataset_stats/figures/ (exploring")
    monkeypatch.setenv(report.IN_PLACE_ENV, "1")  # as `vqalib reproduce` sets it for its full run's kernels
    assert report.output_dir(None, "01_dataset_stats") == FIGURES
    assert "the committed record" in capsys.readouterr().out


@pytest.mark.stage
@pytest.mark.notebook
def test_full_run_reproduces_the_committed_figures(tmp_path, data_dir, monkeypatch):
    """The reproduction contract: a full run of every notebook gives the committed figures/, exactly for
    counts and closed-form values, within the registry's tolerance for model-derived columns; the
    failure lists every cell that moved (vqalib.core.contract). As in `vqalib reproduce`, the model work
    runs first, once; the notebooks then run two at a time with model calls forbidden, so a model call
    that the first stage does not cover fails here by name."""
    out = tmp_path / "figures"
    reproduce.model_work(data_dir=data_dir)
    monkeypatch.setenv("VQALIB_NO_MODEL_CALLS", "1")
    reproduce.run_all(NOTEBOOKS, parameters={"figures_dir": str(out), "data_dir": str(data_dir)}, jobs=2,
                      output_dir=tmp_path, record_times=False)
    moved = contract.check_dirs(FIGURES, out)
    assert all(m.within for m in moved)


def test_every_figure_is_shown_inline_in_exactly_one_committed_notebook():
    """Each figures/*.png is an image output of one committed notebook, byte for byte the committed
    file (a stale notebook fails), with its short alt on the image and the long description beside it."""
    import base64

    import nbformat

    shown: dict[str, list[str]] = {}
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                png = output.get("data", {}).get("image/png")
                if png:
                    shown.setdefault(base64.b64decode(png), []).append(path.stem)
                    assert output["metadata"]["image/png"]["alt"]
                    assert 'aria-describedby="' in output["data"]["text/html"]
    for figure in sorted(FIGURES.glob("*.png")):
        where = shown.get(figure.read_bytes(), [])
        assert len(where) == 1, f"{figure.name} is shown in {len(where)} committed notebooks ({where}); expected 1"
        assert where[0] == registry.figure(figure.stem).notebook


def test_notebooks_carry_a_kernelspec_and_no_machine_paths():
    """JupyterLab and `papermill in.ipynb out.ipynb` (README) need a kernel name; a committed notebook must not
    hold this machine's paths."""
    import json
    import re

    machine_path = re.compile(r"(?<![\w.])(/(?:work|home|root|tmp|Users|private|var/folders)/|[A-Z]:\\\\)")
    for path in NOTEBOOKS:
        text = path.read_text(encoding="utf-8")
        assert json.loads(text)["metadata"]["kernelspec"]["name"] == reproduce.KERNEL
        hits = machine_path.findall(text)
        assert not hits, f"{path.name}: absolute paths {sorted(set(hits))}"


def test_strip_run_metadata_drops_progress_bars_and_their_cursor_moves(tmp_path):
    import nbformat

    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=t)
                    for t in ("\n", "\x1b[A", " 42%|████ | 5/12 [00:01<00:02]", "a real warning\n")]
    cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text="\n"))
    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    reproduce.strip_run_metadata(path)
    kept = nbformat.read(path, as_version=4).cells[0].outputs
    assert [(o["name"], o["text"]) for o in kept] == [("stderr", "a real warning\n"), ("stdout", "\n")]


def test_a_print_flushed_in_two_messages_is_written_as_one_output(tmp_path):
    """The kernel may send a print's text and its newline as two stream messages (timing): the committed
    notebook must not depend on it (no byte churn across runs)."""
    import nbformat

    one, two = nbformat.v4.new_code_cell("print(x)"), nbformat.v4.new_code_cell("print(x)")
    one.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1 of 60 differ\n")]
    two.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1 of 60 differ"),
                   nbformat.v4.new_output("stream", name="stdout", text="\n"),
                   nbformat.v4.new_output("stream", name="stderr", text="warning\n"),
                   nbformat.v4.new_output("stream", name="stderr", text="again\n")]
    for k, cell in enumerate((one, two)):
        path = tmp_path / f"{k}.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
        reproduce.strip_run_metadata(path)
    first, second = (nbformat.read(tmp_path / f"{k}.ipynb", as_version=4).cells[0].outputs for k in (0, 1))
    assert second[0] == first[0]
    assert [(o["name"], o["text"]) for o in second[1:]] == [("stderr", "warning\nagain\n")]


def test_reproduce_rejects_unknown_selection():
    with pytest.raises(SystemExit, match="no notebooks match"):
        reproduce.run(only=["99"])


@pytest.mark.full
@pytest.mark.notebook
def test_notebooks_05_06_08_fill_not_run_rows_from_runner_output(tmp_path, data_dir, monkeypatch):
    """The VLM runner hand-off: runs become Table 5/26 rows, Fig. 3, AFGV tier accuracy and CommVQA Table 1 rows."""
    import os

    import pandas as pd
    from PIL import Image


    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs = tmp_path / "runs"
    runs.mkdir()
    image = tmp_path / "red.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(image)
    model = models.build_model("tiny-blip", device="cpu")
    viz = questions.vizwiz_items(data_dir=data_dir).head(6).assign(image=str(image))
    for strategy in ("vanilla", "abstention"):
        engines.run_generation(viz, model=model, strategy=strategy, dataset="vizwiz-lf", out=runs / f"viz-{strategy}.jsonl",
                           progress=False)
    benchmark = set(loading.load_commvqa(data_dir=data_dir).results["question_id"])
    items = questions.commvqa_items(data_dir=data_dir)
    items = items[items["question_id"].astype(int).isin(benchmark)].head(6).assign(image=str(image))
    for strategy in ("commvqa-baseline", "commvqa-contextual"):
        engines.run_generation(items, model=model, strategy=strategy, dataset="commvqa", out=runs / f"comm-{strategy}.jsonl",
                           progress=False)

    # AFGV: a question's baseline tier (text as the notebook's rewrite has it) and one rewrite it does not know
    afgv_items = questions.afgv_items(pd.DataFrame({
        "question_id": ["2", "2"], "tier": ["baseline", "simplified"], "image": [str(image)] * 2, "answer": ["car"] * 2,
        "question": ["Can you tell me what kind of vehicle this is?", "What car is this?"]}))
    engines.run_generation(afgv_items, model=model, strategy="short-answer", dataset="afgv", out=runs / "afgv.jsonl",
                       progress=False)

    figures = tmp_path / "figures"
    with openai_server() as judge:  # a local judge that rates every answer 3 ("correct"): ans-acc of the runs
        monkeypatch.setenv("VQALIB_JUDGE_BASE_URL", judge.url)
        monkeypatch.setenv("VQALIB_JUDGE_MODEL", "notebook-test-judge")
        monkeypatch.setenv("VQALIB_JUDGE_API_KEY", "test")
        reproduce.run_all([p for p in NOTEBOOKS if p.stem in ("05_abstention", "06_afgv_tiers", "08_commvqa_benchmark")],
                          parameters={"smoke": True, "figures_dir": str(figures), "data_dir": str(data_dir),
                                      "runs_dir": str(runs), "include_test_runs": True},
                          jobs=2, output_dir=tmp_path, record_times=False)
    table5 = pd.read_csv(figures / "vizwiz-lf_table05_abstention.csv").set_index(["model", "method", "metric"])
    assert table5.loc[("tiny-blip", "prompt", "ans-acc"), "reproduced"] == 1.0  # LAVE rating 3 -> 1.0
    assert table5.loc[("Gemini", "vanilla", "ans-acc"), "reproduced"] == 1.0
    table26 = pd.read_csv(figures / "vizwiz-lf_table26_abstention_strategies.csv")
    mine = table26[table26["model"] == "tiny-blip"].set_index(["method", "metric"])
    assert mine.loc[("instruction", "abs-%"), "reproduced"] >= 0 and ("vanilla (run)", "abs-acc") in mine.index
    fig3 = pd.read_csv(figures / "vizwiz-lf_fig03_role_mix_strategies.csv")
    assert set(fig3["source"]) == {"tiny-blip · vanilla", "tiny-blip · instruction"}
    assert (figures / "vizwiz-lf_fig03_role_mix_strategies.png").exists()
    table1 = pd.read_csv(figures / "commvqa_table01_benchmark.csv")
    scored = table1[table1["model"] == "tiny-blip"]
    assert set(scored["condition"]) == {"baseline", "contextual"} and scored["reproduced"].notna().all()
    assert scored["status"].str.contains("6 of the benchmark rows").all()
    tiers = pd.read_csv(figures / "afgv_tier_accuracy_predictions.csv")
    assert set(tiers["tier"]) == {"baseline", "simplified"} and set(tiers["model"]) == {"tiny-blip"}
    by_type = pd.read_csv(figures / "afgv_tier_accuracy_by_question_type.csv")
    assert set(by_type["question_type"]) == {"Identification"}  # from the matched baseline rewrite only


def test_make_lab_starts_as_root_and_as_a_user():
    """JupyterLab refuses root without --allow-root (containers, CI, cloud notebooks); a user needs no flag."""
    import os
    import subprocess

    root = io.project_root()
    command = subprocess.run(["make", "-n", "-s", "lab"], cwd=root, capture_output=True, text=True, check=True).stdout
    lab = [line for line in command.splitlines() if "jupyter lab" in line]
    assert lab and lab[-1].rstrip().endswith("notebooks")
    assert ("--allow-root" in lab[-1]) == (os.getuid() == 0)


def test_reproduce_schedule_starts_the_longest_first_and_splits_the_cores():
    """Longest notebook first by the longer of its last run and its committed cold time (a warm
    run does not reorder the cold schedule; a time from before a speed-up is not kept); with two notebooks
    at once each kernel gets one thread of a 2-core machine (two 2-thread pools fought for the cores)."""
    from vqalib.compendium.reproduce import schedule

    paths = [Path(f"{n}.ipynb") for n in ("01_a", "02_b", "03_c")]
    last = {"01_a": {"seconds": 9.0}, "02_b": {"seconds": 4.0}, "03_c": {"seconds": 20.0}}  # a warm run
    cold = {"01_a": {"seconds": 30.0}, "02_b": {"seconds": 300.0}, "03_c": {"seconds": 10.0}}  # benchmarks/
    order, threads = schedule(paths, last=last, cold=cold, jobs=2, cores=2)
    assert [p.stem for p in order] == ["02_b", "01_a", "03_c"] and threads == 1
    cold["02_b"]["seconds"] = 5.0  # after a speed-up: the committed time is the new one
    assert [p.stem for p in schedule(paths, last=last, cold=cold, jobs=2, cores=2)[0]] == ["01_a", "03_c", "02_b"]
    assert schedule(paths, last={}, cold={}, jobs=1, cores=2) == (paths, None)
    assert schedule(paths, last={}, cold={}, jobs=2, cores=8)[1] == 4
    assert schedule(paths, last={}, cold={}, jobs=4, cores=2)[1] == 1
