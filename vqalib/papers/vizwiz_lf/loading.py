"""Load and validate the VizWiz-LF release (§3-§4; Tables 1-3, 15-16 input): answer and sentence frames and a report
counting every quirk; a broken file raises :class:`~vqalib.core.io.DataFormatError` naming file, entry, field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from vqalib.papers.vizwiz_lf import taxonomy
from vqalib.core.upstream import verified_path
from vqalib.core.io import DataFormatError, json_type, read_json, require_fields
from vqalib.core.validation import ValidationReport
from vqalib.papers.vizwiz_lf.wordcounts import count_words

VIZWIZ_LF_FIELDS: dict[str, type] = {
    "model": str,
    "answerability": str,
    "question": str,
    "question_type": str,
    "image_url": str,
    "answer_paragraph": str,
    "answer_sentences": list,
    "functional_roles": list,
    "information_types": list,
    "crowd_answers": list,
    "crowd_majority": str,
}
NON_ANSWER_MAJORITIES = ("unanswerable", "unsuitable")


@dataclass
class VizWizLF:
    """The loaded release: ``answers`` (one row per answer), ``sentences`` (one per labelled sentence), ``validation`` (its report)."""

    answers: pd.DataFrame
    sentences: pd.DataFrame
    validation: ValidationReport


def _require(entry: object, *, file: str, qid: str) -> dict:
    require_fields(entry, VIZWIZ_LF_FIELDS, file=file, where=f"entry {qid!r}")
    for name in ("answer_sentences", "crowd_answers"):
        for i, item in enumerate(entry[name]):
            if not isinstance(item, str):
                raise DataFormatError(f"{file}: entry {qid!r} field {name!r}[{i}] is not a string")
    for name in ("functional_roles", "information_types"):
        for i, labels in enumerate(entry[name]):
            if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
                raise DataFormatError(f"{file}: entry {qid!r} field {name!r}[{i}] is not a list of strings")
    if entry["answerability"] not in taxonomy.ANSWERABILITY:
        raise DataFormatError(f"{file}: entry {qid!r} field 'answerability' is {entry['answerability']!r}, "
                              f"expected one of {taxonomy.ANSWERABILITY}")
    if entry["question_type"] not in taxonomy.QUESTION_TYPES:
        raise DataFormatError(f"{file}: entry {qid!r} field 'question_type' is {entry['question_type']!r}, "
                              f"expected one of {taxonomy.QUESTION_TYPES}")
    return entry


def _canonical_lists(label_lists: list[list[str]], *, kind: str, file: str, qid: str,
                     report: ValidationReport) -> list[tuple[str, ...]]:
    """Canonical label tuples in taxonomy order; aliases and unknown labels are counted."""
    order = taxonomy.ROLES if kind == "role" else taxonomy.INFO_SOURCES
    out = []
    for labels in label_lists:
        canon = []
        for raw in labels:
            name, status = taxonomy.canonical_label(raw, kind=kind)
            if status == "alias":
                report.add(file=file, check="label_alias", detail=f"{kind} {raw!r} -> {name!r}", action="mapped")
            elif status == "unknown":
                report.add(file=file, check="unknown_label", detail=f"{kind} {raw!r}",
                           action="kept as written; not counted in any taxonomy column", example=f"id {qid}")
            if name in canon:
                report.add(file=file, check="duplicate_label", detail=f"{kind} {name!r} twice in one sentence",
                           action="kept once", example=f"id {qid}")
                continue
            canon.append(name)
        known = [x for x in order if x in canon]
        out.append(tuple(known + [x for x in canon if x not in order]))
    return out


def merge_fragments(sentences: list[str], *, n_units: int) -> list[list[int]]:
    """Fragment positions per group, merged into ``n_units`` groups: the release splits some answers at abbreviations
    ("CO.", "3.5mm"); the shortest fragment joins its preceding neighbour (the first its next) until counts match."""
    groups = [[i] for i in range(len(sentences))]
    while len(groups) > max(n_units, 1):
        lengths = [sum(len(sentences[i].strip()) for i in g) for g in groups]
        k = lengths.index(min(lengths))
        j = k - 1 if k > 0 else 0
        groups[j:j + 2] = [groups[j] + groups[j + 1]]
    return groups


def _span_text(paragraph: str, parts: list[str]) -> str:
    """The paragraph text covering consecutive fragments, else the fragments joined by spaces."""
    start = pos = paragraph.find(parts[0].strip())
    if start < 0:
        return " ".join(p.strip() for p in parts)
    for part in parts:
        pos = paragraph.find(part.strip(), pos)
        if pos < 0:
            return " ".join(p.strip() for p in parts)
        pos += len(part.strip())
    return paragraph[start:pos]


def _sentence_units(entry: dict, roles: list, infos: list, *, file: str, qid: str,
                    report: ValidationReport) -> list[dict]:
    """Line label lists up with sentences; every rule applied is counted in the report."""
    sentences = entry["answer_sentences"]
    if len(roles) != len(infos):
        report.add(file=file, check="role_info_count_differs",
                   detail=f"{len(roles)} role lists vs {len(infos)} information lists",
                   action="shorter list padded with empty label lists", example=f"id {qid}")
        n = max(len(roles), len(infos))
        roles = roles + [()] * (n - len(roles))
        infos = infos + [()] * (n - len(infos))
    n_units = len(roles)
    if n_units == len(sentences):
        return [{"sentence": s, "n_fragments": 1, "alignment": "aligned", "roles": r, "info_sources": i}
                for s, r, i in zip(sentences, roles, infos)]
    if n_units == 0:
        report.add(file=file, check="sentence_label_mismatch", detail="answer has sentences but no label lists",
                   action="each sentence kept with no labels", example=f"id {qid}")
        return [{"sentence": s, "n_fragments": 1, "alignment": "no_labels", "roles": (), "info_sources": ()}
                for s in sentences]
    if n_units > len(sentences):
        report.add(file=file, check="sentence_label_mismatch", detail="more label lists than sentences",
                   action="extra label lists kept with no sentence text", example=f"id {qid}")
        texts = sentences + [None] * (n_units - len(sentences))
        return [{"sentence": s, "n_fragments": int(s is not None),
                 "alignment": "aligned" if k < len(sentences) else "extra_label_list", "roles": r, "info_sources": i}
                for k, (s, r, i) in enumerate(zip(texts, roles, infos))]
    groups = merge_fragments(sentences, n_units=n_units)
    report.add(file=file, check="sentence_label_mismatch", detail="more sentences than label lists",
               action="shortest fragments merged into their neighbour (answers)", example=f"id {qid}")
    report.add(file=file, check="sentence_label_mismatch", detail="more sentences than label lists",
               action="fragments merged away (sentences)", count=len(sentences) - n_units)
    return [{"sentence": _span_text(entry["answer_paragraph"], [sentences[i] for i in g]),
             "n_fragments": len(g), "alignment": "merged_fragments" if len(g) > 1 else "aligned",
             "roles": r, "info_sources": i}
            for g, r, i in zip(groups, roles, infos)]


def parse_vizwiz_lf(raw: object, *, file: str, source: str,
                    report: ValidationReport) -> tuple[list[dict], list[dict]]:
    """``(answers, sentences)`` rows of one parsed file of ``source``; quirks go to ``report`` (Tables 1-3 input)."""
    if not isinstance(raw, dict):
        raise DataFormatError(f"{file}: top level: the file holds {json_type(raw)}, expected an object keyed by "
                              "question id")
    if not raw:
        raise DataFormatError(f"{file}: top level: the object has no entries; expected one entry per question id")
    answers, sentences = [], []
    for qid, entry in raw.items():
        if not str(qid).isdigit():
            raise DataFormatError(f"{file}: question id {qid!r} is not an integer")
        entry = _require(entry, file=file, qid=qid)
        roles = _canonical_lists(entry["functional_roles"], kind="role", file=file, qid=qid, report=report)
        infos = _canonical_lists(entry["information_types"], kind="info", file=file, qid=qid, report=report)
        units = _sentence_units(entry, roles, infos, file=file, qid=qid, report=report)
        question = entry["question"].strip()
        if question != entry["question"]:
            report.add(file=file, check="whitespace", detail="question has leading/trailing white space",
                       action="trimmed")
        if entry["crowd_majority"] in NON_ANSWER_MAJORITIES:
            report.add(file=file, check="crowd_majority_not_an_answer",
                       detail=f"crowd_majority is {entry['crowd_majority']!r}",
                       action="kept; answerability comes from the 'answerability' field")
        for u in units:
            for kind, key in (("role", "roles"), ("info", "info_sources")):
                if not u[key]:
                    report.add(file=file, check="sentence_without_label", detail=f"no {kind} label",
                               action="kept with an empty label list")
        answers.append({
            "source": source,
            "question_id": int(qid),
            "question": question,
            "question_type": entry["question_type"],
            "answerability": entry["answerability"],
            "answer": entry["answer_paragraph"],
            "question_words": count_words(question),
            "answer_words": count_words(entry["answer_paragraph"]),
            "n_sentences": len(entry["answer_sentences"]),
            "n_label_units": len(units),
            "roles": tuple(r for r in taxonomy.ROLES if any(r in u["roles"] for u in units))
            + tuple(sorted({r for u in units for r in u["roles"]} - set(taxonomy.ROLES))),
            "info_sources": tuple(i for i in taxonomy.INFO_SOURCES if any(i in u["info_sources"] for u in units))
            + tuple(sorted({i for u in units for i in u["info_sources"]} - set(taxonomy.INFO_SOURCES))),
            "crowd_answers": tuple(entry["crowd_answers"]),
            "crowd_answer_words": tuple(count_words(a) for a in entry["crowd_answers"]),
            "crowd_majority": entry["crowd_majority"],
            "image_url": entry["image_url"],
            "model_field": entry["model"],
        })
        for k, u in enumerate(units):
            sentences.append({"source": source, "question_id": int(qid), "sentence_index": k, **u})
    return answers, sentences


def _cross_source_checks(answers: pd.DataFrame, report: ValidationReport) -> None:
    """Missing question ids per source and per-question fields that differ across sources."""
    all_ids = set(answers["question_id"])
    for source, group in answers.groupby("source", sort=False):
        missing = sorted(all_ids - set(group["question_id"]))
        if missing:
            report.add(file=group["file"].iloc[0], check="missing_question_ids",
                       detail=f"{len(missing)} of {len(all_ids)} question ids absent: {', '.join(map(str, missing))}",
                       action="not imputed; tables use the answers present", count=len(missing))
    for field in ("question", "question_type", "answerability", "crowd_answers", "crowd_majority", "image_url"):
        per_q = answers.groupby("question_id")[field].nunique()
        for qid in per_q[per_q > 1].index:
            report.add(file="(all sources)", check="cross_source_mismatch", detail=f"field {field!r} differs",
                       action="each source keeps its own value", example=f"id {qid}")


def vizwiz_lf_question_ids(*, data_dir: Path | None = None) -> frozenset[int]:
    """The question ids of the VizWiz-LF release (1-600): the keys of its seven hash-checked files."""
    ids: set[int] = set()
    for stem in taxonomy.SOURCES:
        path = verified_path(f"vizwiz-lf/{stem}.json", data_dir=data_dir)
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise DataFormatError(f"{path.name}: top level: the file holds {json_type(raw)}, expected an object "
                                  "keyed by question id")
        for qid in raw:
            if not str(qid).isdigit():
                raise DataFormatError(f"{path.name}: question id {qid!r} is not an integer")
            ids.add(int(qid))
    return frozenset(ids)


def load_vizwiz_lf(*, data_dir: Path | None = None, sources: list[str] | None = None,
                   paths: dict[str, Path] | None = None) -> VizWizLF:
    """Load and validate VizWiz-LF (Tables 1-3 and 15-16 input); registered files are hash-checked.

    Parameters
    ----------
    data_dir : Path, optional
    sources : list of str, optional
        Release file stems to load; default all seven.
    paths : dict of str to Path, optional
        Stem -> user-supplied answer file of the same format (no hash check).
    """
    stems = list(paths) if paths else (sources or list(taxonomy.SOURCES))
    report = ValidationReport()
    answer_rows, sentence_rows = [], []
    for stem in stems:
        if paths:
            path = Path(paths[stem])
        else:
            path = verified_path(f"vizwiz-lf/{stem}.json", data_dir=data_dir)
        source = taxonomy.SOURCES.get(stem, stem)
        a, s = parse_vizwiz_lf(read_json(path), file=path.name, source=source, report=report)
        for row in a:
            row["file"] = path.name
        answer_rows += a
        sentence_rows += s
    answers = pd.DataFrame(answer_rows)
    sentences = pd.DataFrame(sentence_rows)
    _cross_source_checks(answers, report)
    order = {s: k for k, s in enumerate(taxonomy.SOURCES.values())}
    answers = (answers.assign(_o=answers["source"].map(order))
               .sort_values(["_o", "source", "question_id"], kind="stable").drop(columns="_o").reset_index(drop=True))
    sentences = (sentences.assign(_o=sentences["source"].map(order))
                 .sort_values(["_o", "source", "question_id", "sentence_index"], kind="stable")
                 .drop(columns="_o").reset_index(drop=True))
    return VizWizLF(answers=answers, sentences=sentences, validation=report)

