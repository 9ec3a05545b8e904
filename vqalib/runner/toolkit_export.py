"""The three datasets as lmms-eval tasks, Inspect AI tasks and VLMEvalKit TSVs (``vqalib export``), one per dataset and
prompting condition (:data:`TASKS`): no toolkit has VizWiz-LF's long-form protocol, CommVQA's conditions or AFGV's
tiers. Prompts come from :func:`vqalib.runner.answering.prompt_for`, so a task asks exactly what ``vqalib run``
asks; the folder is only ever written into (never through a symbolic link, only where its manifest lists every file
unchanged; ARCHITECTURE "Folders a command writes"), and the output is deterministic."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pandas as pd

from vqalib.core.contract import package_version
from vqalib.core.out_folders import OutputKind, check_out, json_marker, write_into
from vqalib.runner.questions import dataset_items

EXPORT_FORMAT = "vqalib-export/1"

# dataset -> (task name, strategy, AFGV tier or None); strategies that are one model call only
TASKS = {
    "vizwiz-lf": (("vizwiz_lf_vanilla", "vanilla", None), ("vizwiz_lf_abstention", "abstention", None)),
    "commvqa": (("commvqa_baseline", "commvqa-baseline", None), ("commvqa_contextual", "commvqa-contextual", None)),
    "afgv": tuple((f"afgv_{tier}", "short-answer", tier) for tier in ("simplified", "baseline", "complex")),
}
# generate() settings: VizWiz-LF Table 25's LLaVA-1.5 (greedy, the runner's 512 new tokens); CommVQA §5 greedy;
# AFGV short answers greedy
GENERATION = {"vizwiz-lf": {"max_new_tokens": 512, "temperature": 0, "do_sample": False},
              "commvqa": {"max_new_tokens": 128, "temperature": 0, "do_sample": False},
              "afgv": {"max_new_tokens": 16, "temperature": 0, "do_sample": False}}
METRIC = {"vizwiz-lf": "words", "commvqa": "words", "afgv": "vqa_accuracy"}
DOC_COLUMNS = ("item_id", "question_id", "tier", "question", "prompt", "image", "reference")

UTILS = '''"""lmms-eval task functions written by `vqalib export lmms-eval` (vqalib must be importable here)."""

from importlib.metadata import PackageNotFoundError, version

from vqalib.runner.images import ImageError, ImageStore

_STORE = None
METRIC = "{metric}"  # the task's cheap metric
try:  # lmms-eval's own results file records a git commit of the folder it runs in as its version, not this
    TOOLKIT_VERSION = version("lmms-eval")
except PackageNotFoundError:
    TOOLKIT_VERSION = None


def doc_to_visual(doc):
    """The item's image through vqalib's safe loader (size and pixel caps, no HTML as image); a missing image is an
    error naming the item, never a blank picture."""
    global _STORE
    if doc["image"].startswith("missing:"):
        raise ImageError(f"item {doc['item_id']}: {doc['image'][len('missing:'):]}")
    _STORE = _STORE or ImageStore()
    return [_STORE.load(doc["image"]).image.convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["prompt"]


def doc_to_target(doc):
    return doc["reference"] or ""


def process_results(doc, results):
    """Our item id, the raw response (so `vqalib score` joins the samples back exactly), lmms-eval's package version
    and a cheap metric."""
    response = results[0] if results else ""
    out = {"item_id": doc["item_id"], "response": response, "lmms_eval_package_version": TOOLKIT_VERSION}
    if METRIC == "vqa_accuracy":
        from vqalib.papers.afgv.accuracy import normalize_answer

        out["vqa_accuracy"] = float(normalize_answer(response) == normalize_answer(doc["reference"] or ""))
    else:
        out["words"] = float(len(response.split()))
    return out
'''


EXPORT = OutputKind(what="toolkit export", option="vqalib export --out", marker="vqalib-export.json",
                    is_marker=lambda path: (json_marker(path, max_bytes=1 << 16) or {}).get("format") == EXPORT_FORMAT)


def _absolute(out: str | Path) -> Path:
    """``out`` made absolute, its parent resolved but not ``out`` itself (a link there is refused, not followed)."""
    out = Path(out).expanduser()
    return out.parent.resolve() / out.name


def _marked(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` (relative path -> bytes) with the export's marker first."""
    marker = {"format": EXPORT_FORMAT, "written_by": "vqalib export (writes into this folder again, never deletes)"}
    return {EXPORT.marker: (json.dumps(marker, indent=2) + "\n").encode("utf-8"), **files}


def task_documents(items: pd.DataFrame, *, strategy: str, tier: str | None = None, family: str = "llava") -> list[dict]:
    """One lmms-eval document per item, its prompt built as the runner builds it.

    Parameters
    ----------
    items : pandas.DataFrame
        :func:`vqalib.runner.questions.dataset_items`.
    strategy : str
        The prompting strategy (:data:`TASKS`).
    tier : str, optional
        AFGV: keep this tier's items only.
    family : str, default "llava"
        AFGV: the model family whose short-answer template is used.
    """
    from vqalib.runner.answering import prompt_for

    chosen = items[items["tier"] == tier] if tier is not None else items
    docs = []
    for item in chosen.to_dict("records"):
        reference = item.get("reference")
        docs.append({"item_id": str(item["item_id"]), "question_id": str(item["question_id"]),
                     "tier": item.get("tier") if isinstance(item.get("tier"), str) else None,
                     "question": item["question"], "prompt": prompt_for(item, strategy=strategy, family=family),
                     "image": str(item["image"]), "reference": None if reference is None or pd.isna(reference)
                     else str(reference)})
    return docs


def _jsonl(docs: list[dict]) -> bytes:
    return "".join(json.dumps(d, ensure_ascii=False, sort_keys=True) + "\n" for d in docs).encode("utf-8")


def _yaml(task: str, *, data: Path, dataset: str, sha256: str, version: str) -> str:
    """The task's YAML; every string a JSON string (a YAML double-quoted scalar): a ``#`` or ``:`` in a path stays."""
    q = json.dumps
    return (f"# written by `vqalib export lmms-eval` (vqalib {version}); prompts from vqalib's runner\n"
            f"task: {q(task)}\ndataset_path: \"json\"\ndataset_kwargs:\n  data_files:\n"
            f"    test: {q(str(data))}\ntest_split: \"test\"\noutput_type: \"generate_until\"\n"
            "doc_to_visual: !function utils.doc_to_visual\ndoc_to_text: !function utils.doc_to_text\n"
            "doc_to_target: !function utils.doc_to_target\nprocess_results: !function utils.process_results\n"
            f"generation_kwargs: {q(GENERATION[dataset])}\n"
            f"metric_list:\n  - metric: {q(METRIC[dataset])}\n    aggregation: \"mean\"\n    higher_is_better: true\n"
            f"metadata:\n  version: 1.0\n  vqalib_version: {q(version)}\n  data_sha256: {q(sha256)}\n")


def export_lmms_eval(dataset: str, *, out: str | Path, images: str | Path | None = None, family: str = "llava",
                     question_set: str = "VizWiz-LF", data_dir: Path | None = None) -> list[Path]:
    """Write one lmms-eval task folder (YAML, JSONL, utils.py) per prompting condition (``vqalib export lmms-eval``).

    Parameters
    ----------
    dataset : {"vizwiz-lf", "commvqa", "afgv"}
        The dataset.
    out : str or Path
        The ``--include_path`` folder: new, empty or an earlier export (:data:`EXPORT`).
    images : str or Path, optional
        Where the images are.
    family : str, default "llava"
        AFGV's short-answer template.
    question_set : str, default "VizWiz-LF"
        AFGV's question set.
    data_dir : Path, optional
        The data folder.
    """
    check_out(out, kind=EXPORT)  # before the items are read: a refused --out costs no wait
    items = dataset_items(dataset, images=images, question_set=question_set, data_dir=data_dir)
    out = _absolute(out)
    files = {}
    for task, strategy, tier in TASKS[dataset]:
        data = _jsonl(task_documents(items, strategy=strategy, tier=tier, family=family))
        files[f"{task}/{task}.jsonl"] = data
        files[f"{task}/utils.py"] = UTILS.replace("{metric}", METRIC[dataset]).encode("utf-8")
        yaml = _yaml(task, data=out / task / f"{task}.jsonl", dataset=dataset,
                     sha256=hashlib.sha256(data).hexdigest(), version=package_version("vqalib") or "unknown")
        files[f"{task}/{task}.yaml"] = yaml.encode("utf-8")
    return [path for path in write_into(out, kind=EXPORT, files=_marked(files)) if path.suffix == ".yaml"]


def export_vlmevalkit(dataset: str, *, out: str | Path, images: str | Path | None = None, family: str = "llava",
                      question_set: str = "VizWiz-LF", data_dir: Path | None = None) -> list[Path]:
    """Write one VLMEvalKit ``<Task>_openended.tsv`` per prompting condition (``vqalib export vlmevalkit``).

    Parameters
    ----------
    dataset : {"vizwiz-lf", "commvqa", "afgv"}
        The dataset.
    out : str or Path
        The folder (``$LMUData``): new, empty or an earlier export (:data:`EXPORT`).
    images : str or Path, optional
        Where the images are; a non-local image (a URL) is embedded as base64 through the safe loader.
    family, question_set, data_dir
        As in :func:`export_lmms_eval`.
    """
    from vqalib.runner.images import ImageError, ImageStore

    check_out(out, kind=EXPORT)  # before the items are read: a refused --out costs no wait
    items = dataset_items(dataset, images=images, question_set=question_set, data_dir=data_dir)
    store, written = None, []
    for task, strategy, tier in TASKS[dataset]:
        docs = task_documents(items, strategy=strategy, tier=tier, family=family)
        rows = []
        for k, doc in enumerate(docs):
            row = {"index": k, "item_id": doc["item_id"], "question_id": doc["question_id"], "question": doc["prompt"],
                   "answer": doc["reference"] or ""}
            if doc["image"].startswith("missing:"):
                raise ImageError(f"item {doc['item_id']}: {doc['image'][len('missing:'):]}")
            if Path(doc["image"]).is_file():
                row["image_path"] = doc["image"]
            else:
                store = store or ImageStore()
                try:
                    row["image"] = base64.b64encode(store.read_bytes(doc["image"])).decode("ascii")
                except ImageError as err:  # offline, or a server down: the folder of images is the way round
                    raise ImageError(f"{err}; give the images instead with --images FOLDER, a folder holding each "
                                     f"item's image file under its own name (e.g. {Path(doc['image']).name})"
                                     + (" or CommVQA's images.zip" if dataset == "commvqa" else "")) from None
            rows.append(row)
        name = "".join(part.capitalize() for part in task.split("_")) + "_openended"
        frame = pd.DataFrame(rows)
        tsv = {f"{name}.tsv": frame.to_csv(sep="\t", index=False).encode("utf-8")}
        written += write_into(out, kind=EXPORT, files=_marked(tsv))[1:]  # one at a time: embedded images are big
    return written


INSPECT_TASK = '''"""An Inspect AI task written by `vqalib export inspect` (vqalib {version}); prompts: vqalib's runner."""

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import generate


@task
def {task}():
    """{task}: the samples of {task}.jsonl beside this file; each sample's metadata carries vqalib's item_id and
    question_id, on which `vqalib score` joins the log back; no scorer (vqalib scores)."""
    return Task(dataset=json_dataset(str(Path(__file__).with_name("{task}.jsonl"))), solver=generate(),
                config=GenerateConfig(max_tokens={max_tokens}, temperature={temperature}),
                metadata={{"vqalib_version": "{version}", "dataset": "{dataset}",
                          "data_sha256": "{sha256}"}})
'''


def inspect_samples(docs: list[dict]) -> list[dict]:
    """Inspect samples (id, input: one user message with the image and the prompt, target, metadata with our ids)
    from :func:`task_documents`; a missing image is an ImageError naming the item."""
    from vqalib.runner.images import ImageError

    samples = []
    for doc in docs:
        if doc["image"].startswith("missing:"):
            raise ImageError(f"item {doc['item_id']}: {doc['image'][len('missing:'):]}")
        image = str(Path(doc["image"]).resolve()) if Path(doc["image"]).is_file() else doc["image"]
        content = [{"type": "image", "image": image}, {"type": "text", "text": doc["prompt"]}]
        samples.append({"id": doc["item_id"], "input": [{"role": "user", "content": content}],
                        "target": doc["reference"] or "",
                        "metadata": {k: doc[k] for k in ("item_id", "question_id", "tier", "question")}})
    return samples


def export_inspect(dataset: str, *, out: str | Path, images: str | Path | None = None, family: str = "llava",
                   question_set: str = "VizWiz-LF", data_dir: Path | None = None) -> list[Path]:
    """Write one Inspect AI task file (``<task>.py``) and its samples (``<task>.jsonl``) per prompting condition
    (``vqalib export inspect``); ``inspect eval OUT/<task>.py`` runs one.

    Parameters
    ----------
    dataset : {"vizwiz-lf", "commvqa", "afgv"}
        The dataset.
    out : str or Path
        The folder: new, empty or an earlier export (:data:`EXPORT`).
    images : str or Path, optional
        Where the images are (a sample names a local file by its absolute path, else the URL).
    family, question_set, data_dir
        As in :func:`export_lmms_eval`.
    """
    check_out(out, kind=EXPORT)  # before the items are read: a refused --out costs no wait
    items = dataset_items(dataset, images=images, question_set=question_set, data_dir=data_dir)
    out, version, files = _absolute(out), package_version("vqalib") or "unknown", {}
    for task, strategy, tier in TASKS[dataset]:
        data = _jsonl(inspect_samples(task_documents(items, strategy=strategy, tier=tier, family=family)))
        files[f"{task}.jsonl"] = data
        generation = GENERATION[dataset]
        code = INSPECT_TASK.format(task=task, version=version, dataset=dataset, sha256=hashlib.sha256(data).hexdigest(),
                                   max_tokens=generation["max_new_tokens"], temperature=generation["temperature"])
        files[f"{task}.py"] = code.encode("utf-8")
    return [path for path in write_into(out, kind=EXPORT, files=_marked(files)) if path.suffix == ".py"]
