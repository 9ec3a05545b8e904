"""Time the offline role / information-source classifier (VizWiz-LF Tables 9-10, vqalib.papers.vizwiz_lf.classifier).

``run()`` returns human-readable lines (``benchmarks/bench.py`` prints and records them):
the machine; encoding the whole release with an empty embedding cache; 5-fold grouped
cross-validation (not cached yet) and final training of both classifiers (embeddings warm); and the throughput
of :func:`vqalib.papers.vizwiz_lf.labelling.label_answers` on answers it has never seen (cold: sentence
encoding included) and again (warm: cached embeddings); and the fine-tuned classifier labelling 600 answers in
a new process (cold: imports, loading its weights and float64 inference included). Goals: CV + training of both
frozen-feature classifiers well under 5 minutes on 2 cores; 600 answers with the fine-tuned one within 30 s.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vqalib.core.encoders import embed
from vqalib.papers.vizwiz_lf import classifier, classifier_cv, classifier_features, labelling, loading

N_ANSWERS = 300  # answers labelled in the throughput test
N_FINETUNED = 600  # answers the fine-tuned classifier labels in a new process

_COLD = """
import time
start = time.perf_counter()
from vqalib.papers.vizwiz_lf import labelling, loading
answers = loading.load_vizwiz_lf().answers.sample(n={n}, random_state=0)[["question_id", "question", "answer"]]
loaded = time.perf_counter()
sentences, _ = labelling.label_answers(answers, classifier="finetuned")
done = time.perf_counter()
print(f"{{len(sentences)}} {{loaded - start:.1f}} {{done - loaded:.1f}} {{done - start:.1f}}")
"""


def _machine() -> str:
    import torch

    return (f"{platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}, "
            f"Python {platform.python_version()}")


def run() -> list[str]:
    data = loading.load_vizwiz_lf()
    lines = [f"classify benchmark machine: {_machine()}"]
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        units = classifier_features.sentence_units(data.sentences, data.answers)
        start = time.perf_counter()
        classifier_features.feature_matrix(units, cache_dir=cache)
        lines.append(f"encode the release with an empty cache ({len(units)} sentences + {units['question'].nunique()} "
                     f"questions, MiniLM final + layers 2, 4): {time.perf_counter() - start:.1f} s")
        total = 0.0
        for kind in ("role", "info"):
            start = time.perf_counter()
            # fits_dir=None: fit the folds, not read the committed out-of-fold results
            result = classifier_cv.cross_validate(data.sentences, data.answers, kind=kind, cache_dir=cache,
                                                  fits_dir=None)
            cv = time.perf_counter() - start
            start = time.perf_counter()
            classifier.train(data.sentences, data.answers, kind=kind, cache_dir=cache)
            fit = time.perf_counter() - start
            total += cv + fit
            weighted = result.scores.set_index(["model", "subset", "label"])["f1"]
            name = next(m for m in result.scores["model"] if m.startswith("MiniLM"))
            lines.append(f"{kind} classifier: 5-fold grouped CV {cv:.1f} s, final training {fit:.1f} s "
                         f"(weighted F1 {weighted[(name, 'all', 'Weighted average')]:.3f} all sources)")
        lines.append(f"CV + training of both classifiers, embeddings cached: {total:.1f} s (goal well under 300 s)")

    role, info = labelling.default_models()
    sample = data.answers.sample(n=N_ANSWERS, random_state=0)[["source", "question_id", "question", "answer"]]
    with tempfile.TemporaryDirectory() as tmp:
        embed(["load the encoder"], cache_dir=Path(tmp) / "warm-up")  # loading the encoder once is not throughput
        for label in ("cold", "warm"):
            start = time.perf_counter()
            sentences, _ = labelling.label_answers(sample, role_model=role, info_model=info, cache_dir=Path(tmp))
            seconds = time.perf_counter() - start
            lines.append(f"label_answers, {label} cache: {len(sample)} answers, {len(sentences)} sentences in "
                         f"{seconds:.1f} s = {len(sentences) / seconds:.0f} sentences/s")
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _COLD.format(n=N_FINETUNED)], check=True, capture_output=True,
                         text=True).stdout.split()
    n_sentences, load, label, total = out[-4:]
    lines.append(f"fine-tuned classifier, new process: {N_FINETUNED} answers, {n_sentences} sentences labelled in "
                 f"{label} s (imports and the release {load} s; {total} s in all, "
                 f"{time.perf_counter() - start:.1f} s with the interpreter; goal 30 s)")
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
