"""Run the notebooks end to end and render them for reviewers (`make reproduce`, `make html`).

``run`` executes ``notebooks/NN_*.ipynb`` in order with papermill, in place (outputs are
kept so a reviewer sees them rendered), printing one progress line per notebook.
``html`` renders the executed notebooks into ``build/html`` with an index page linking
every notebook, table and figure (figures carry their alt text).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
import time
from pathlib import Path

from vqalib.datasets import project_root

KERNEL = "python3"
# tqdm's "42%|████" bars and its notice that ipywidgets is absent: noise once a notebook has run
PROGRESS_BAR = re.compile(r"\d+%\||TqdmWarning: IProgress not found")
# what nested bars leave behind once their text is gone: bare newlines and cursor moves ("\x1b[A")
CURSOR_ONLY = re.compile(r"(?:\s|\x1b\[[0-9;]*[A-Za-z])*")


def notebook_paths(directory: Path | None = None, *, only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks in run order, optionally those whose name starts with one of ``only``."""
    directory = directory or project_root() / "notebooks"
    paths = sorted(p for p in directory.glob("[0-9][0-9]_*.ipynb"))
    if only:
        paths = [p for p in paths if any(p.stem.startswith(o) for o in only)]
    return paths


def strip_run_metadata(path: Path) -> None:
    """Drop per-run timestamps and durations, so an unchanged result rewrites an identical file."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for holder in [nb.metadata, *(cell.metadata for cell in nb.cells)]:
        holder.pop("execution", None)
        # run times, and the absolute paths of this checkout: neither belongs in a committed notebook
        for key in ("start_time", "end_time", "duration", "input_path", "output_path"):
            holder.get("papermill", {}).pop(key, None)
    for cell in nb.cells:
        if cell.cell_type == "code":  # progress bars carry rates and times; they mean nothing once run
            cell.outputs = [o for o in cell.outputs
                            if not (o.get("name") == "stderr" and (PROGRESS_BAR.search(o.get("text", ""))
                                                                   or CURSOR_ONLY.fullmatch(o.get("text", ""))))]
    nbformat.write(nb, path)


def run_notebook(path: Path, *, output: Path | None = None, parameters: dict | None = None) -> float:
    """Execute one notebook with papermill (in place unless ``output``); return seconds taken."""
    import papermill

    start = time.perf_counter()
    target = output or path
    papermill.execute_notebook(str(path), str(target), parameters=parameters or {},
                               kernel_name=KERNEL, cwd=str(path.parent), progress_bar=False,
                               log_output=False, request_save_on_cell_execute=False)
    strip_run_metadata(Path(target))
    return time.perf_counter() - start


def run(*, only: list[str] | None = None, parameters: dict | None = None) -> None:
    """Execute the notebooks in order, in place, then record provenance (reproduction contract):
    ``build/provenance.json`` always (this run's machine), and ``figures/PROVENANCE.json`` when a file in
    ``figures/`` changed, so the committed record describes the run that made the committed figures."""
    from vqalib import contract, report

    paths = notebook_paths(only=only)
    if not paths:
        raise SystemExit(f"no notebooks match {only}")
    figures = project_root() / "figures"
    before = contract.figure_hashes(figures)
    (figures / contract.KEPT_LOG).unlink(missing_ok=True)
    total = time.perf_counter()
    for k, path in enumerate(paths, 1):
        print(f"[{k}/{len(paths)}] {path.name} ...", end=" ", flush=True)
        try:
            seconds = run_notebook(path, parameters=parameters)
        except Exception:
            print("FAILED", flush=True)
            raise
        print(f"done in {seconds:.1f} s", flush=True)
    kept_log = figures / contract.KEPT_LOG
    if kept_log.exists():  # tables whose model-derived values moved only within tolerance on this machine
        for line in kept_log.read_text(encoding="utf-8").splitlines():
            note = json.loads(line)
            print(f"kept figures/{note['file']}: {note['cells']} model-derived cell(s) moved within their "
                  f"declared tolerance (largest {note['largest']:.2g}); VQALIB_REWRITE_FIGURES=1 rewrites it")
        kept_log.unlink()
    after = contract.figure_hashes(figures)
    changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
    record = contract.provenance(hashes=after)
    contract.write_provenance(project_root() / "build" / "provenance.json", record)
    committed = figures / contract.PROVENANCE_FILE
    if changed or not committed.exists():
        contract.write_provenance(committed, {**record, "files_changed_by_this_run": changed})
        where = f"{len(changed)} file(s) of figures/ changed; provenance in figures/{contract.PROVENANCE_FILE}"
    else:
        where = (f"figures/ unchanged (its provenance, figures/{contract.PROVENANCE_FILE}, stays); this run's "
                 "environment is in build/provenance.json")
    if report.update_readme_status():
        where += "; README.md status table regenerated"
    print(f"reproduced {len(paths)} notebook(s) in {time.perf_counter() - total:.1f} s; {where}")


def build_html(*, out: Path | None = None) -> Path:
    """Render notebooks, tables and figures into a static folder with an index page."""
    import nbformat
    from nbconvert import HTMLExporter

    root = project_root()
    out = out or root / "build" / "html"
    if out.exists():
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    shutil.copytree(root / "figures", out / "figures")
    exporter = HTMLExporter()
    items = []
    for path in notebook_paths():
        body, _ = exporter.from_notebook_node(nbformat.read(path, as_version=4))
        (out / "notebooks" / f"{path.stem}.html").write_text(body, encoding="utf-8")
        items.append(f'<li><a href="notebooks/{path.stem}.html">{html.escape(path.stem)}</a></li>')
    tables, figures = [], []
    for csv in sorted((out / "figures").glob("*.csv")):
        md = csv.with_suffix(".md")
        title = md.read_text(encoding="utf-8").splitlines()[0].lstrip("# ") if md.exists() else csv.stem
        tables.append(f'<li>{html.escape(title)}: <a href="figures/{csv.name}">CSV</a>'
                      + (f' · <a href="figures/{md.name}">Markdown</a>' if md.exists() else "") + "</li>")
    for png in sorted((out / "figures").glob("*.png")):
        alt_file = png.with_name(png.stem + ".alt.txt")
        alt = alt_file.read_text(encoding="utf-8").strip() if alt_file.exists() else png.stem
        figures.append(f'<figure><a href="figures/{png.stem}.pdf"><img src="figures/{png.name}" '
                       f'alt="{html.escape(alt, quote=True)}" style="max-width:48rem"></a>'
                       f"<figcaption><code>{png.stem}</code>: {html.escape(alt)}</figcaption></figure>")
    index = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<title>Accessible VQA compendium</title></head><body>"
             "<h1>Accessible VQA research compendium</h1>"
             "<h2>Notebooks</h2><ul>" + "".join(items) + "</ul>"
             "<h2>Tables</h2><ul>" + "".join(tables) + "</ul>"
             "<h2>Figures</h2>" + "".join(figures) + "</body></html>\n")
    (out / "index.html").write_text(index, encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vqalib.reproduce", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute the notebooks in order, in place")
    r.add_argument("--only", nargs="*", help="notebook name prefixes, e.g. 01 02")
    r.add_argument("--smoke", action="store_true", help="pass smoke=True (small, fast run)")
    sub.add_parser("html", help="render notebooks, tables and figures into build/html")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(only=args.only, parameters={"smoke": True} if args.smoke else None)
    else:
        print(f"wrote {build_html() / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
