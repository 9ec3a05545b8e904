"""The notebooks' model work, done once before they run: the first stage of ``vqalib reproduce``.

Each step calls what a notebook calls with its default parameters, so the shared caches hold every model output
the notebooks ask for; each text is embedded and each pair scored once, not once per concurrent notebook. Steps
run on one worker per core, longest ready first; torch steps come in parts, which change no number (float64
rounded to 1e-6). A notebook run with other parameters (a smoke run) does its own model work.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

PAPER_SOURCES = ["GPT-4V", "Gemini", "Expert"]  # notebook 03's Table 4 sources
BERTSCORE_PARTS = 2  # VizWiz-LF Table 4's BERTScore pairs, split by question
DESCRIPTION_PARTS = 4  # CommVQA Figure 4's distinct texts


def _table4_pairs(data_dir: Path | None):
    """The VizWiz-LF release and Table 4's (answer, setting) pairs, as notebook 03 forms them."""
    from vqalib.papers.vizwiz_lf import loading, table4

    data = loading.load_vizwiz_lf(data_dir=data_dir)
    return data, table4.evaluation_pairs(data.answers, data.sentences)


def vizwiz_lf_table4_lexical(*, data_dir: Path | None = None) -> None:
    """VizWiz-LF Table 4's ROUGE-L and every METEOR variant on every pair (notebook 03)."""
    from vqalib.papers.vizwiz_lf import table4

    _, pairs = _table4_pairs(data_dir)
    table4.score_pairs(pairs, metrics=("rouge", "meteor", *table4.nltk_meteor_variants()), progress=False)


def vizwiz_lf_table4_bertscore(*, data_dir: Path | None = None, part: int = 0, parts: int = 1) -> None:
    """VizWiz-LF Table 4's BERTScore on share ``part`` of ``parts`` of the questions (notebook 03)."""
    from vqalib.core.metrics import bertscore
    from vqalib.papers.vizwiz_lf import table4

    _, pairs = _table4_pairs(data_dir)
    questions = sorted(pairs["question_id"].unique())[part::parts]
    table4.score_pairs(pairs[pairs["question_id"].isin(questions)], metrics=("bertscore",),
                       backbone=bertscore.bertscore_backbone(None), progress=False)


def vizwiz_lf_protocol_grid(*, data_dir: Path | None = None) -> None:
    """VizWiz-LF Table 4's grid of scoring protocols on every question (notebook 03)."""
    from vqalib.core import report
    from vqalib.papers.vizwiz_lf import classifier_cv, table4_protocols

    data, _ = _table4_pairs(data_dir)
    predictions = classifier_cv.cross_validate(data.sentences, data.answers, kind="role").predictions
    classified = table4_protocols.classifier_sentences(data.sentences, predictions)
    paper = report.load_paper_table("vizwiz-lf_table04_automatic_eval", value="value")
    table4_protocols.protocol_grid(data.answers, data.sentences, classified,
                                   paper[paper["metric"].isin(["ROUGE", "METEOR"])], sources=PAPER_SOURCES,
                                   progress=False)


def vizwiz_lf_scorecard(*, data_dir: Path | None = None) -> None:
    """The scorecard of LLaVA's released answers scored as a new model's, read back from a CSV file (notebook 09)."""
    import tempfile

    from vqalib.compendium import score
    from vqalib.papers.vizwiz_lf import loading

    answers = loading.load_vizwiz_lf(data_dir=data_dir).answers
    with tempfile.TemporaryDirectory(prefix="vqalib-model-work-") as tmp:
        path = Path(tmp) / "llava_answers.csv"
        answers[answers["source"] == "LLaVA"][["question_id", "answer"]].to_csv(path, index=False)
        score.score([path], dataset="vizwiz-lf", model="LLaVA (scored again)", n_resamples=1000, seed=0,
                    data_dir=data_dir)


def commvqa_entities(*, data_dir: Path | None = None) -> None:
    """CommVQA's named entities of the human and the model answers (Figures 3, 5; notebook 07)."""
    from vqalib.papers.commvqa import entities, loading

    data = loading.load_commvqa(data_dir=data_dir)
    entities.entity_mentions(list(data.answers["answer"]), progress=False)
    entities.entity_mentions(list(data.results["generated_answer"]), progress=False)


def _similarity_pairs(data_dir: Path | None):
    """CommVQA's annotations and Figure 4's (answer, description) pairs, as notebook 07 forms them."""
    from vqalib.core import config
    from vqalib.papers.commvqa import context, loading

    config.set_default("HF_HUB_OFFLINE", "1")  # as notebook 07: every model used is local
    data = loading.load_commvqa(data_dir=data_dir)
    return data.annotations, context.similarity_pairs(data.annotations, data.answers, data.results)


def commvqa_description_embeddings(*, data_dir: Path | None = None, part: int = 0, parts: int = 1) -> None:
    """Share ``part`` of ``parts`` of the distinct texts of CommVQA Figure 4, embedded (notebook 07)."""
    from vqalib.papers.commvqa import context

    _, pairs = _similarity_pairs(data_dir)
    context.embed(sorted(set(map(str, context.description_texts(pairs))))[part::parts], progress=False)


def commvqa_similarity(*, data_dir: Path | None = None) -> None:
    """CommVQA's question embeddings (Figure 2) and Figure 4's description similarity (notebook 07)."""
    from vqalib.papers.commvqa import context

    annotations, pairs = _similarity_pairs(data_dir)
    context.embed(list(context.questions_for_classifier(annotations)["question"]), progress=False)
    context.description_similarity(pairs, progress=False)


def commvqa_table1(*, data_dir: Path | None = None) -> None:
    """CommVQA Table 1 under both protocols with one METEOR JVM, and the BLEU variants (notebook 08)."""
    from vqalib.core.metrics.meteor import MeteorSession
    from vqalib.papers.commvqa import loading, protocols, table1

    results = loading.load_commvqa(data_dir=data_dir).results
    with MeteorSession() as meteor:
        table1.score_protocol(results, protocol="authors", seed=0, meteor=meteor, progress=False)
        table1.score_protocol(results, protocol="corrected", n_resamples=1000, seed=0, meteor=meteor, progress=False)
    protocols.bleu_variants(results, model="BLIP-2", condition="contextual")


def afgv_intent(*, data_dir: Path | None = None) -> None:
    """AFGV's rewrites of the accessibility question sets and their intent-similarity embeddings (notebook 06)."""
    from vqalib.papers.afgv import question_sets, rewrite, vectors

    rewrite.rewrite_question_sets(question_sets.accessibility_question_sets(data_dir=data_dir),
                                  vectors=vectors.load_word_vectors(None), config=rewrite.RewriteConfig(topn=20))


@dataclass(frozen=True)
class Step:
    """One step of the model work: ``run``, the steps whose caches it reads (``after``) and its seconds on one core."""

    name: str
    run: Callable[..., None]
    after: tuple[str, ...] = ()
    seconds: float = 0.0


_LEXICAL = "VizWiz-LF Table 4 ROUGE-L and METEOR pairs"
_BERTSCORE = [f"VizWiz-LF Table 4 BERTScore pairs ({k + 1} of {BERTSCORE_PARTS})" for k in range(BERTSCORE_PARTS)]
_DESCRIPTIONS = [f"CommVQA Figure 4 embeddings ({k + 1} of {DESCRIPTION_PARTS})" for k in range(DESCRIPTION_PARTS)]
STEPS: list[Step] = [  # in an order that runs them one after another (a step after the steps it reads)
    Step(_LEXICAL, vizwiz_lf_table4_lexical, seconds=70),
    *[Step(name, functools.partial(vizwiz_lf_table4_bertscore, part=k, parts=BERTSCORE_PARTS), seconds=110 / BERTSCORE_PARTS)
      for k, name in enumerate(_BERTSCORE)],
    Step("VizWiz-LF Table 4 protocol grid", vizwiz_lf_protocol_grid, after=(_LEXICAL,), seconds=35),
    Step("VizWiz-LF scorecard of a released model", vizwiz_lf_scorecard, after=(_LEXICAL, *_BERTSCORE), seconds=25),
    Step("CommVQA named entities", commvqa_entities, seconds=40),
    *[Step(name, functools.partial(commvqa_description_embeddings, part=k, parts=DESCRIPTION_PARTS),
           seconds=280 / DESCRIPTION_PARTS) for k, name in enumerate(_DESCRIPTIONS)],
    Step("CommVQA question embeddings and description similarity", commvqa_similarity, after=tuple(_DESCRIPTIONS),
         seconds=15),
    Step("CommVQA Table 1", commvqa_table1, seconds=80),
    Step("AFGV rewrites and intent similarity", afgv_intent, seconds=45),
]


MODEL_SETTINGS = ("VQALIB_DATA_DIR", "VQALIB_BERTSCORE_MODEL", "VQALIB_BERTSCORE_LAYERS", "VQALIB_CLASSIFY_ENCODER",
                  "VQALIB_SENTENCE_MODEL", "VQALIB_WORD_VECTORS")  # the settings that choose the model work


def stage_key(*, data_dir: Path | None = None) -> str:
    """SHA-256 of everything the model work depends on: code, packages, model settings and data files' stats."""
    import hashlib
    import sys
    from importlib.metadata import distributions

    from vqalib.core import config
    from vqalib.core.io import default_data_dir

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(package)}\0".encode() + path.read_bytes())
    installed = [p for p in sys.path if "site-packages" in p]  # not the current folder: the key must not follow it
    digest.update(repr(sorted({f"{d.metadata['Name']}=={d.version}" for d in distributions(path=installed)})).encode())
    digest.update(repr(config.snapshot(MODEL_SETTINGS)).encode())
    data = Path(data_dir or default_data_dir())
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(data)}|{stat.st_size}|{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def marker_path(*, data_dir: Path | None = None) -> Path:
    """The marker :func:`fill_caches` writes once its steps ran; while it exists, the steps are skipped."""
    from vqalib.core.io import cache_root

    return cache_root("model-work") / f"{stage_key(data_dir=data_dir)[:32]}.json"


def fill_caches(*, data_dir: Path | None = None, echo: Callable[[str], None] | None = None,
                pool: Executor | None = None) -> dict[str, float]:
    """Run every step of :data:`STEPS`, each printing its time; nothing runs while :func:`marker_path` exists.

    Parameters
    ----------
    data_dir : Path, optional
        The data folder the notebooks read (None: the project's).
    echo : callable, optional
        Where each step's line goes (default: printed at once).
    pool : concurrent.futures.Executor, optional
        Worker processes, one per core; None: one after another in this process.

    Returns
    -------
    dict of str to float
        Step name -> wall seconds.
    """
    import json

    from vqalib.core.io import write_atomic

    echo = echo or (lambda line: print(line, flush=True))
    marker = marker_path(data_dir=data_dir)
    if marker.is_file():
        echo(f"  model work: done before for this code, data and settings ({marker.name}); the caches serve it")
        return {}
    seconds = {}

    def finished(step: Step, taken: float) -> None:
        seconds[step.name] = round(taken, 1)
        echo(f"  model work: {step.name} in {taken:.1f} s")

    start = time.perf_counter()
    if pool is None:
        for step in STEPS:
            finished(step, _timed(step.run, data_dir))
    else:
        _run_on(pool, data_dir=data_dir, finished=finished)
    echo(f"  model work: every step done in {time.perf_counter() - start:.1f} s "
         f"({'on workers' if pool is not None else 'one after another'})")
    try:  # a cache that cannot be written (full disk, read-only) only means the next run checks again
        write_atomic(marker, json.dumps(seconds, indent=1).encode("utf-8"))
    except OSError as error:
        echo(f"  model work: could not record {marker} ({error}); the next run reads the caches again")
    return seconds


def _timed(run: Callable[..., None], data_dir: Path | None) -> float:
    """Seconds ``run(data_dir=...)`` takes (in a worker: a step)."""
    start = time.perf_counter()
    run(data_dir=data_dir)
    return time.perf_counter() - start


def _run_on(pool: Executor, *, data_dir: Path | None, finished: Callable[[Step, float], None]) -> None:
    """Every step on ``pool``, ready ones longest first; the first step that fails cancels the rest and raises."""
    from concurrent.futures import FIRST_COMPLETED, wait

    pending, done, running = list(STEPS), set(), {}
    try:
        while pending or running:
            ready = sorted((s for s in pending if set(s.after) <= done), key=lambda s: -s.seconds)
            for step in ready:
                pending.remove(step)
                running[pool.submit(_timed, step.run, data_dir)] = step
            completed, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in completed:
                step = running.pop(future)
                finished(step, future.result())
                done.add(step.name)
    finally:
        for future in running:
            future.cancel()
