"""The ``vqalib`` command (``python -m vqalib``): every job of the compendium under one name.

Each subcommand is a thin parser over one library function (ARCHITECTURE.md, "One command"); modules are
imported when their command runs, so ``vqalib --help`` does not load torch.
"""

from __future__ import annotations

import argparse
import json
import errno
import sys
import traceback
from pathlib import Path

from vqalib.core.escaping import TerminalParser, escaped_warnings, terminal_text

DESCRIPTION = ("The accessible-VQA research compendium: reproduce VizWiz-LF, CommVQA and AFGV from their public data "
               "and run the same analyses on new models.")


def _error(message: object) -> None:
    """One ``error:`` line on standard error, its text (file names, ids, values) escaped for the terminal."""
    print(f"error: {terminal_text(message)}", file=sys.stderr)


def _fetch(args: argparse.Namespace) -> int:
    from vqalib.core.upstream import DataIntegrityError
    from vqalib.core.fetch import FetchError, fetch
    from vqalib.core.io import default_mirror

    try:
        done = fetch(data_dir=args.data_dir, mirror=args.mirror if args.mirror is not None else default_mirror())
    except (FetchError, DataIntegrityError, FileNotFoundError, OSError) as err:
        _error(err)
        return 1
    print(done.to_string(index=False))
    stale = int(done["stale_parts_removed"].sum())
    if stale:
        print(f"removed {stale} stale partial file(s) (*.part) left by an interrupted fetch")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from vqalib.core.upstream import FILES, DataIntegrityError, verified_path

    try:
        for spec in FILES:
            verified_path(spec.key, data_dir=args.data_dir)
            print(f"ok  {spec.key}")
    except (DataIntegrityError, FileNotFoundError, OSError) as err:
        _error(err)
        return 1
    return 0


def _fetch_gqa(args: argparse.Namespace) -> int:
    from vqalib.papers.afgv.gqa import fetch_gqa_questions

    print(f"GQA questions in {fetch_gqa_questions()}")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    from vqalib.compendium.reproduce import run

    if args.jobs is not None and args.jobs < 1:
        raise SystemExit(f"--jobs {args.jobs}: give at least 1 notebook at once")
    if args.model_work:
        from vqalib.compendium.reproduce import model_work

        model_work()
        return 0
    run(only=args.only, parameters={"smoke": True} if args.smoke else None, jobs=args.jobs, wait=args.wait)
    return 0


def _check(args: argparse.Namespace) -> int:
    from vqalib.core.contract import ReproductionMismatch, check_dirs, report_moves
    from vqalib.core.io import project_root

    against = args.against if args.against is not None else project_root() / "figures"
    try:
        moves = check_dirs(against, args.fresh)
    except ReproductionMismatch as err:
        print(terminal_text(err), file=sys.stderr)
        return 1
    print(f"{args.fresh} reproduces {against}" + (f"; {len(moves)} model-derived cell(s) moved within tolerance:\n"
                                                  + report_moves(moves) if moves else " exactly"))
    return 0


def _clean(args: argparse.Namespace) -> int:
    from vqalib.core.contract import git_clean
    from vqalib.core.io import project_root

    return git_clean(project_root())


def _provenance(args: argparse.Namespace) -> int:
    from vqalib.core.contract import provenance

    print(json.dumps(provenance(figures=args.figures), indent=1, sort_keys=True))
    return 0


def _readme(args: argparse.Namespace) -> int:
    from vqalib.compendium.status import update_readme_status

    changed = update_readme_status()
    print("README.md status table " + ("rewritten" if changed else "already up to date"))
    return 0


def _claims(args: argparse.Namespace) -> int:
    from vqalib.compendium.claims import check

    problems = check()
    for problem in problems:
        print(terminal_text(problem))  # it quotes the prose
    print(f"{len(problems)} problem(s)" if problems else "every number in the prose is accounted for")
    return 1 if problems else 0


def _classify(args: argparse.Namespace) -> int:
    from vqalib.papers.vizwiz_lf import classifier_finetune_fits
    from vqalib.papers.vizwiz_lf.classifier import MODEL_DIR
    from vqalib.papers.vizwiz_lf.classifier_features import sentence_units
    from vqalib.papers.vizwiz_lf.classifier_fits import check_fits, check_hashes, write_fits
    from vqalib.papers.vizwiz_lf.loading import load_vizwiz_lf

    if args.action == "train" and args.out is not None:
        from vqalib.core.out_folders import check_out
        from vqalib.papers.vizwiz_lf.classifier_fits import MODELS

        check_out(args.out, kind=MODELS)  # before the release is loaded: a refused --out costs no wait
    if args.action == "check" and (changed := check_hashes(finetuned=args.finetuned)):  # before minutes of refits
        for line in changed:
            _error(line)
        return 1
    data = load_vizwiz_lf()
    units = sentence_units(data.sentences, data.answers)
    if args.action == "check":
        problems = [] if args.finetuned else check_fits(data.sentences, data.answers, seed=args.seed)
        sample = classifier_finetune_fits.check(units)
        for line in problems + sample:
            _error(line)
        if not args.finetuned:
            print("committed fits: " + ("DIFFER" if problems else "as recorded at training (SHA-256) and identical to "
                                        "a refit (CV results and both models)"))
        rows = len(classifier_finetune_fits.check_rows(units))
        print("fine-tuned classifier: " + ("DIFFERS" if sample else f"its committed probabilities on {rows} release "
                                           f"sentences reproduced within {classifier_finetune_fits.CHECK_TOLERANCE:g}, "
                                           "same labels"))
        return 1 if problems or sample else 0
    out = args.out if args.out is not None else MODEL_DIR
    if args.finetuned:
        written = classifier_finetune_fits.write_all(units, out=Path(out) / "finetuned")
    else:
        written = write_fits(data.sentences, data.answers, out=out, seed=args.seed, estimator=args.estimator)
    for path in written:
        print(f"saved {path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 0


def _run(args: argparse.Namespace) -> int:
    from vqalib.runner.cli import run_command

    return run_command(args, parser=args.parser)


def _models(args: argparse.Namespace) -> int:
    from vqalib.runner.cli import models_text

    print(models_text())
    return 0


def _runs(args: argparse.Namespace) -> int:
    from vqalib.runner.cli import runs_text

    print(terminal_text(runs_text(args.runs_dir)))  # model names and paths from the run files
    return 0


def _site(args: argparse.Namespace) -> int:
    from vqalib.compendium.site import build, check

    site = build()
    print(f"wrote {site / 'index.html'}")
    if args.action == "check":
        return check(site=site, out=Path(args.out), timeout=args.timeout)
    if args.action == "report":
        from vqalib.compendium.site_printable import write_pdf

        print(f"wrote {write_pdf(site / 'report.html', Path(args.pdf))}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from vqalib.compendium import scorecard_files
    from vqalib.compendium.score import coverage_lines, score
    from vqalib.core.io import DataFormatError
    from vqalib.core.out_folders import check_out

    try:
        check_out(args.out, kind=scorecard_files.SCORECARD)  # before the scoring: a refused --out costs no wait
        card = score(args.answers, dataset=args.dataset, model=args.model, fmt=args.format,
                     conditions=args.condition, task_data=args.task_data, duplicates=args.duplicates,
                     question_set=args.question_set, n_resamples=args.n_resamples, seed=args.seed,
                     compare=not args.no_compare)
        page = scorecard_files.write(card, args.out, commit=scorecard_files.vqalib_commit())
    except (DataFormatError, ValueError, FileNotFoundError) as err:
        _error(err)
        return 1
    for line in coverage_lines(card):
        print(line)
    print(f"wrote {len(card.tables)} tables, scorecard.json and {page}")
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    from vqalib.compendium import leaderboard_files
    from vqalib.core.out_folders import check_out

    try:
        check_out(args.out, kind=leaderboard_files.LEADERBOARD)
        page = leaderboard_files.write(args.out, scores_dir=args.scores, n_resamples=args.n_resamples, seed=args.seed)
    except (ValueError, FileNotFoundError) as err:  # a bad scorecard names its folder, file and field: the run stops
        _error(err)
        return 1
    print(f"wrote {page}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from vqalib.compendium.score import import_answers
    from vqalib.core.answer_matching import coverage_text
    from vqalib.core.io import DataFormatError

    try:
        path, coverages = import_answers(args.answers, dataset=args.dataset, model=args.model, out=args.out,
                                         fmt=args.format, conditions=args.condition, strategy=args.strategy,
                                         task_data=args.task_data, duplicates=args.duplicates,
                                         question_set=args.question_set, overwrite=args.overwrite)
    except (DataFormatError, ValueError, FileNotFoundError, FileExistsError) as err:
        _error(err)
        return 1
    for coverage in coverages:
        print(coverage_text(coverage))
    print(f"wrote {path}; `make reproduce` fills the notebooks' model rows from it")
    return 0


def _export(args: argparse.Namespace) -> int:
    from vqalib.core.io import DataFormatError
    from vqalib.runner.images import ImageError
    from vqalib.runner.toolkit_export import export_inspect, export_lmms_eval, export_vlmevalkit

    writer = {"lmms-eval": export_lmms_eval, "inspect": export_inspect}.get(args.toolkit, export_vlmevalkit)
    try:
        written = writer(args.dataset, out=args.out, images=args.images, family=args.family,
                         question_set=args.question_set)
    except (DataFormatError, ImageError, ValueError, FileNotFoundError) as err:
        _error(err)
        return 1
    for path in written:
        print(f"wrote {path}")
    if args.toolkit == "lmms-eval":
        print(f"run: lmms-eval --include_path {args.out} --tasks {','.join(p.stem for p in written)} --log_samples "
              "--output_path OUT ...; then: vqalib score OUT/<model>/<date>_samples_<task>.jsonl "
              f"--dataset {args.dataset} --model NAME --out scores/NAME")
    elif args.toolkit == "inspect":
        print(f"run: inspect eval {written[0]} --model PROVIDER/MODEL --log-dir logs; then: vqalib score "
              f"logs/<date>_{written[0].stem.replace('_', '-')}_<id>.eval --dataset {args.dataset} --model NAME "
              "--out scores/NAME")
    else:
        print(f"run: LMUData={args.out} python run.py --data {' '.join(p.stem for p in written)} --model MODEL; then: "
              f"vqalib score <work_dir>/MODEL/MODEL_<dataset>.xlsx --dataset {args.dataset} --model NAME --out scores/NAME")
    return 0


def _answers_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments `score` and `import` share: the answers files and how to read and match them."""
    from vqalib.core.answer_formats import FORMATS
    from vqalib.core.answer_matching import DUPLICATE_RULES

    parser.add_argument("answers", nargs="+", type=Path, metavar="ANSWERS",
                        help="answers file(s): a `vqalib run` file, a plain CSV/JSONL (question_id, answer; AFGV also "
                             "tier), an lmms-eval samples JSONL, an Inspect AI log (.eval), a VLMEvalKit prediction file (.xlsx/.tsv/.json) or "
                             "the CommVQA authors' result CSV; CommVQA: one file per condition")
    parser.add_argument("--dataset", required=True, choices=("vizwiz-lf", "commvqa", "afgv"))
    parser.add_argument("--model", default=None, help="the model's name in the tables (default: the run file's)")
    parser.add_argument("--format", default=None, choices=FORMATS, help="override the format detected from the content")
    parser.add_argument("--condition", action="append", choices=("baseline", "contextual"),
                        help="CommVQA: the condition of each answers file, in order (repeat for two files)")
    parser.add_argument("--task-data", type=Path, default=None,
                        help="the exported task data (lmms-eval JSONL / VLMEvalKit TSV) to join toolkit rows that "
                             "carry only doc_id / index")
    parser.add_argument("--duplicates", default="error", choices=DUPLICATE_RULES,
                        help="a second answer to one question: refused (default) or the first/last kept")
    parser.add_argument("--question-set", default="VizWiz-LF", choices=("VizWiz-LF", "CommVQA"),
                        help="AFGV: the rewritten question set answered")


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return seconds


def _command(commands, name: str, handler, *, help: str, reads: str, writes: str) -> argparse.ArgumentParser:
    """One subcommand whose ``--help`` says what it does, reads and writes."""
    parser = commands.add_parser(name, help=help, description=f"{help[0].upper()}{help[1:]}.",
                                 epilog=f"reads: {reads}\nwrites: {writes}",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(handler=handler, parser=parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The ``vqalib`` command line: one subcommand per job, each setting ``handler`` and ``parser``."""
    parser = TerminalParser(prog="vqalib", description=DESCRIPTION,
                                     epilog="`vqalib COMMAND --help` says what a command reads and writes.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    f = _command(commands, "fetch", _fetch, help="fetch the upstream data releases and verify their SHA-256",
                 reads="the upstream files at pinned commits, or the folder of --mirror / $VQALIB_DATA_MIRROR",
                 writes="data/raw/ (or --data-dir / $VQALIB_DATA_DIR); a file whose hash differs is refused")
    f.add_argument("--data-dir", type=Path, default=None, help="default $VQALIB_DATA_DIR or data/raw")
    f.add_argument("--mirror", type=Path, default=None, help="copy from this folder; default $VQALIB_DATA_MIRROR, "
                                                              "unset = download")
    v = _command(commands, "verify", _verify, help="check the SHA-256 of every local data file",
                 reads="data/raw/ (or --data-dir / $VQALIB_DATA_DIR)", writes="nothing")
    v.add_argument("--data-dir", type=Path, default=None)
    _command(commands, "fetch-gqa", _fetch_gqa, help="online only: download GQA's balanced questions (AFGV)",
             reads="GQA's questions archive (the internet)", writes="data/raw/gqa/")

    r = _command(commands, "reproduce", _reproduce,
                 help="run every notebook in place and rewrite figures/ (make reproduce)",
                 reads="notebooks/, data/raw/, data/paper/, data/models/, runs/, the caches of $VQALIB_CACHE_DIR",
                 writes="notebooks/ (outputs), figures/ (tables, figures, PROVENANCE.json, SAVED_BY.json), the README status "
                        "table, "
                        "build/reproduce_times.json, build/provenance.json; with --only or --smoke: build/partial/ or "
                        "build/smoke/ only; with --model-work: the caches only")
    r.add_argument("--only", nargs="*", help="notebook name prefixes, e.g. 01 02 (a partial run: writes under "
                   "build/partial/, never the committed files)")
    r.add_argument("--smoke", action="store_true", help="pass smoke=True (small, fast run; writes under build/smoke/)")
    r.add_argument("--wait", action="store_true", help="wait for a reproduce already running in this checkout "
                   "instead of refusing")
    r.add_argument("--jobs", type=int, default=None, help="notebooks at once (default $VQALIB_REPRODUCE_JOBS or 2)")
    r.add_argument("--model-work", action="store_true", help="only the first stage: fill the caches with the "
                   "notebooks' model work (skipped when done for this code, data and settings); `make test` runs it "
                   "before its two workers share it")

    c = _command(commands, "check", _check, help="compare a fresh figures folder with the committed one (tiered)",
                 reads="FRESH and --against (default figures/); the table registry's tolerances",
                 writes="nothing; exit status 1 names every cell that moved outside its tolerance")
    c.add_argument("fresh", type=Path, metavar="FRESH")
    c.add_argument("--against", type=Path, default=None, help="the committed folder (default figures/)")
    _command(commands, "clean", _clean, help="after `make reproduce`: figures/ and notebooks/ must be as committed",
             reads="git status of figures/ and notebooks/", writes="nothing; exit status 1 lists what differs")
    p = _command(commands, "provenance", _provenance, help="print this machine's provenance record",
                 reads="package versions, CPU, thread settings, --figures", writes="standard output (JSON)")
    p.add_argument("--figures", type=Path, default=None)
    _command(commands, "readme", _readme, help="regenerate the README's status table from the registry and figures/",
             reads="figures/*.csv, the table registry", writes="README.md (between its status markers)")
    _command(commands, "claims", _claims, help="check that every number in the prose is bound to its source",
             reads="README.md, the notebooks' Markdown, data/claims/, figures/, data/paper/", writes="nothing")

    k = _command(commands, "classify", _classify,
                 help="train or check the offline role and information-source classifiers (VizWiz-LF Tables 9-10)",
                 reads="data/raw/ (VizWiz-LF), the embedding cache",
                 writes="train: data/models/ (both frozen-feature classifiers, SHA256SUMS) and data/models/cv/ "
                        "(cross-validation results), or with --finetuned data/models/finetuned/ (about 54 min on 2 "
                        "cores); check: nothing (a temporary folder), exit status 1 on a file whose SHA-256 is not the "
                        "one recorded (before any refit) or on a difference")
    k.add_argument("action", choices=("train", "check"))
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--estimator", default="mlp", choices=("mlp", "logreg"), help="train only")
    k.add_argument("--out", type=Path, default=None, help="train only: the folder (default data/models)")
    k.add_argument("--finetuned", action="store_true",
                   help="train: the fine-tuned classifier only (its cross-validation, final model and check sample); "
                        "check: only its committed probabilities on the check sample")

    from vqalib.runner.cli import add_run_arguments

    run = _command(commands, "run", _run, help="generate answers with a vision-language model into a run file",
                   reads="the dataset's questions (data/raw/, or --questions), images (--images, URLs), the model "
                         "(hub or local)",
                   writes="--out (JSONL, one writer at a time, resumable); exit status 75 if another run holds it")
    add_run_arguments(run)
    _command(commands, "models", _models, help="list the model registry of the runner",
             reads="the runner's registry", writes="standard output")
    s = _command(commands, "runs", _runs, help="list the run files the notebooks find, with their counts",
                 reads="RUNS_DIR (default $VQALIB_RUNS_DIR or runs/)", writes="standard output")
    s.add_argument("runs_dir", nargs="?", metavar="RUNS_DIR")

    w = _command(commands, "site", _site, help="build the reviewer site, audit it in headless Chromium, or print "
                 "its report (every paper table, printed value beside ours) to PDF",
                 reads="notebooks/, figures/; check: site-check/ (Node, axe-core, Chromium); report: Chromium",
                 writes="build/html/; check: --out (report and screenshots); report: --pdf")
    w.add_argument("action", choices=("build", "check", "report"))
    w.add_argument("--out", default="build/site-check", help="check only: report and screenshots folder")
    w.add_argument("--timeout", type=_positive_seconds, default=None, metavar="SECONDS",
                   help="check only: base of each page's time limit (default 60; a page's limit adds 5 s per 1000 "
                        "of its elements; going over it is a time-out, not an accessibility finding)")
    w.add_argument("--pdf", default="build/report.pdf", help="report only: the PDF written")

    sc = _command(commands, "score", _score, help="score a model's answers into the papers' tables (a scorecard)",
                  reads="ANSWERS, data/raw/, figures/ (the released models' rows and the paper's values beside), "
                        "data/models/, the caches of $VQALIB_CACHE_DIR; a judge when configured (LAVE)",
                  writes="--out: scorecard.json, each table as .csv and .md, a figure, index.html")
    _answers_arguments(sc)
    sc.add_argument("--out", type=Path, required=True, help="the scorecard folder (under scores/ to be on the site)")
    sc.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples (the notebooks': 1000)")
    sc.add_argument("--seed", type=int, default=0)
    sc.add_argument("--no-compare", action="store_true",
                    help="VizWiz-LF: skip the paired differences to the released models (faster)")
    lb = _command(commands, "leaderboard", _leaderboard,
                  help="rank the released models and every scorecard per dataset, in tiers from paired tests",
                  reads="data/raw/, --scores (scorecard folders), the caches of $VQALIB_CACHE_DIR",
                  writes="--out: leaderboard_<dataset>.csv/.md, pairs_<dataset>.csv/.md, leaderboard.json, index.html")
    lb.add_argument("--scores", type=Path, default=Path("scores"), help="the scorecard folders (default scores/)")
    lb.add_argument("--out", type=Path, default=Path("build/leaderboard"), help="the leaderboard folder")
    lb.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples (the notebooks': 1000)")
    lb.add_argument("--seed", type=int, default=0)
    im = _command(commands, "import", _import, help="write a model's answers as a run file the notebooks read",
                  reads="ANSWERS, data/raw/ (questions and references)",
                  writes="--out (a run file, schema 1, test_model false, with the source file's provenance)")
    _answers_arguments(im)
    im.add_argument("--out", type=Path, required=True, help="the run file, e.g. runs/my-model_vizwiz-lf.jsonl")
    im.add_argument("--strategy", default=None, help="the run's strategy (default vanilla for VizWiz-LF, "
                                                    "short-answer for AFGV; CommVQA: from --condition)")
    im.add_argument("--overwrite", action="store_true", help="replace an existing run file")
    ex = _command(commands, "export", _export,
                  help="write a dataset as lmms-eval or Inspect AI tasks or VLMEvalKit TSVs",
                  reads="data/raw/ (questions, references), the runner's prompt files, --images",
                  writes="--out: lmms-eval: one task folder per prompting condition (YAML, JSONL, utils.py); "
                         "inspect: <task>.py and <task>.jsonl per condition; vlmevalkit: <Task>_openended.tsv per "
                         "condition")
    ex.add_argument("toolkit", choices=("lmms-eval", "inspect", "vlmevalkit"))
    ex.add_argument("--dataset", required=True, choices=("vizwiz-lf", "commvqa", "afgv"))
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument("--images", type=Path, default=None,
                    help="a folder (or CommVQA's images.zip) with the images; default VizWiz's URLs")
    ex.add_argument("--family", default="llava", help="AFGV: the model family's short-answer template")
    ex.add_argument("--question-set", default="VizWiz-LF", choices=("VizWiz-LF", "CommVQA"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``vqalib`` and ``python -m vqalib``; returns the command's exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: the command line's).
    """
    args = build_parser().parse_args(argv)
    from vqalib.core import config
    from vqalib.core.io import DataFormatError
    from vqalib.core.out_folders import UnsafeOutput

    with escaped_warnings():  # they name files and ids
        try:
            config.check()  # a setting's mistake is named before any work starts
            return args.handler(args)
        except SystemExit as stop:  # a handler's or config.check's message: escaped like every other
            raise SystemExit(terminal_text(stop.code)) if isinstance(stop.code, str) else stop from None
        except (UnsafeOutput, config.SettingError, DataFormatError) as error:  # names the file, record or setting
            _error(error)
            return 1
        except KeyboardInterrupt:  # Ctrl-C: one line; every output is written whole, so nothing is half-written
            print(f"vqalib {args.command}: interrupted; files already written are complete, the others are as they "
                  "were", file=sys.stderr)
            return 130
        except Exception as error:
            if isinstance(error, OSError) and error.errno in _DISK_ERRORS:
                where = f"{terminal_text(error.filename)}: " if error.filename else ""
                raise SystemExit(f"vqalib {args.command}: stopped: {where}{error.strerror or error}; files already "
                                 "written are complete (every output is written whole), free space or fix permissions "
                                 "and run it again") from None
            print(terminal_text(traceback.format_exc()), file=sys.stderr, end="")  # last resort, a bug: escaped
            return 1


_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}


if __name__ == "__main__":
    sys.exit(main())
