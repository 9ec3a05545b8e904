"""Run the notebooks end to end (``vqalib reproduce``, `make reproduce`): every table and figure of the three papers,
several notebooks at a time with papermill, in place, with live progress (:mod:`vqalib.compendium.progress`).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shutil
import threading
import time
from pathlib import Path

from vqalib.core.io import project_root, write_atomic
from vqalib.compendium import status
from vqalib.core import config, saved_by

KERNEL = "python3"
# tqdm's "42%|████" bars and its notice that ipywidgets is absent: noise once a notebook has run
PROGRESS_BAR = re.compile(r"\d+%\||TqdmWarning: IProgress not found")
# what nested bars leave behind once their text is gone: bare newlines and cursor moves ("\x1b[A")
CURSOR_ONLY = re.compile(r"(?:\s|\x1b\[[0-9;]*[A-Za-z])*")


def notebook_paths(directory: Path | None = None, *, only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks in run order, optionally those whose name starts with one of ``only``.

    Parameters
    ----------
    directory : Path, optional
        Default ``<project>/notebooks``.
    only : list of str, optional
        Name prefixes, e.g. ``["01", "05"]``.
    """
    directory = directory or project_root() / "notebooks"
    paths = sorted(p for p in directory.glob("[0-9][0-9]_*.ipynb"))
    if only:
        paths = [p for p in paths if any(p.stem.startswith(o) for o in only)]
    return paths


def strip_run_metadata(path: Path) -> None:
    """Drop run times, papermill's absolute paths and progress bars, so an unchanged result rewrites identical bytes.

    Parameters
    ----------
    path : Path
        An executed notebook, rewritten in place.
    """
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for holder in [nb.metadata, *(cell.metadata for cell in nb.cells)]:
        holder.pop("execution", None)
        # run times, and the absolute paths of this checkout: neither belongs in a committed notebook
        for key in ("start_time", "end_time", "duration", "input_path", "output_path"):
            holder.get("papermill", {}).pop(key, None)
    for cell in nb.cells:
        if cell.cell_type == "code":  # progress bars carry rates and times; they mean nothing once run
            cell.outputs = coalesce_streams([o for o in cell.outputs
                                             if not (o.get("name") == "stderr" and (
                                                 PROGRESS_BAR.search(o.get("text", ""))
                                                 or CURSOR_ONLY.fullmatch(o.get("text", ""))))])
    nbformat.write(nb, path)


def coalesce_streams(outputs: list) -> list:
    """Join consecutive outputs of the same stream (a print may arrive as one message or two, depending on timing).

    Parameters
    ----------
    outputs : list
        A code cell's outputs (nbformat nodes).
    """
    merged = []
    for output in outputs:
        if (merged and output.get("output_type") == "stream" and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == output.get("name")):
            merged[-1]["text"] = merged[-1]["text"] + output["text"]
        else:
            merged.append(output)
    return merged


class NotebookFailed(RuntimeError):
    """A notebook's cell raised: the message names the notebook, the cell, the error and the logs."""


def run_notebook(path: Path, *, output: Path | None = None, parameters: dict | None = None, progress=None,
                 kernel_log: Path | None = None) -> float:
    """Execute one notebook with papermill (in place unless ``output``) and strip its run metadata; a failing cell
    raises :class:`NotebookFailed` and leaves the target as it was.

    Parameters
    ----------
    path : Path
    output : Path, optional
        Where the executed notebook is written; default ``path``.
    parameters : dict, optional
        Papermill parameters, e.g. ``{"smoke": True}``.
    progress : callable, optional
        Called as each code cell starts.
    kernel_log : Path, optional
        Where the kernel's own output goes; default ``build/logs/<notebook>.kernel.log``.

    Returns
    -------
    float
        Wall-clock seconds.
    """
    import papermill

    from vqalib.compendium import progress as live

    start = time.perf_counter()
    target = Path(output or path)
    log = kernel_log or project_root() / "build" / "logs" / f"{path.stem}.kernel.log"
    # the run writes beside the target and replaces it only when every cell ran: a failed or killed run never
    # overwrites a committed notebook; the failed copy is kept in build/failed/
    partial = target.with_name(f".{target.stem}.running.ipynb")
    try:
        with live.reporting(progress), live.kernel_output_to(log):
            papermill.execute_notebook(str(path), str(partial), parameters=parameters or {}, engine_name=live.engine_name(),
                                       kernel_name=KERNEL, cwd=str(path.parent), progress_bar=False,
                                       log_output=False, request_save_on_cell_execute=False)
    except papermill.PapermillExecutionError as error:
        failed = project_root() / "build" / "failed" / target.name
        kept = f"the partial output is in {failed}"
        try:
            failed.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(partial, failed)  # build/ may be on another file system than notebooks/
        except OSError as move_error:  # build/ full or read-only: the copy is dropped, the committed file kept
            partial.unlink(missing_ok=True)
            kept = f"the partial output could not be kept in {failed} ({move_error.strerror or move_error})"
        raise NotebookFailed(f"{path.name} failed in cell {error.cell_index + 1} (execution count {error.exec_count}): "
                             f"{error.ename}: {error.evalue}; {kept} ({target} is unchanged); the kernel's log is "
                             f"{log}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    strip_run_metadata(partial)
    os.replace(partial, target)
    return time.perf_counter() - start


def _read_times(path: Path) -> dict:
    """The last run's times (``build/reproduce_times.json``); a file that does not parse is ignored with a
    warning (it is rewritten at the end of this run)."""
    try:
        times = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (ValueError, UnicodeDecodeError):
        print(f"warning: {path} does not parse; ignored (this run rewrites it)", flush=True)
        return {}
    return times if isinstance(times, dict) else {}


COMMITTED_PARAMETERS = {"data_dir"}  # what a run in place may pass: the committed results do not depend on it
JOBS_ENV = "VQALIB_REPRODUCE_JOBS"  # notebooks run at once by `make reproduce` (default 2: the machine's cores)
TIMES_FILE = "reproduce_times.json"  # build/: each notebook's last time and peak memory (`make bench`, scheduling)
_EVENTS = None  # in a worker: the queue of cell events to the parent (set by _start_worker)


def _start_worker(events, threads: int | None = None) -> None:
    """A worker's start: keep the parent's event queue, size its thread pools (before torch is imported), die with
    the parent: a killed ``reproduce`` leaves no worker behind the next run's lock (Linux: parent-death signal)."""
    global _EVENTS
    _EVENTS = events
    for name in config.POOL_VARIABLES if threads else ():  # unless the user set them
        config.set_default(name, str(threads))
    with contextlib.suppress(Exception):  # not Linux: the pool's own pipes still end a worker at its next task
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the signal was set
            os._exit(1)


def _run_in_worker(path: str, parameters: dict | None, threads: int | None = None,
                   output: str | None = None) -> tuple[float, float, dict, float, list[dict], dict]:
    """One notebook in a worker process: seconds, the kernel's peak MB, its thread variables, CPU seconds, the saves its
    kernel logged and the cell id of each saved file (:mod:`vqalib.core.saved_by`). Cell events go to the queue.
    """
    import nbformat

    from vqalib.compendium.progress import KernelMeter
    from vqalib.core.report import IN_PLACE_ENV

    events = _EVENTS
    if output is None and not set(parameters or {}) - COMMITTED_PARAMETERS:  # only this run writes figures/
        config.set_default(IN_PLACE_ENV, "1")
    if threads:  # read by the kernel at start-up; the numbers do not depend on it (reproduction contract)
        for name in config.POOL_VARIABLES:
            config.set_default(name, str(threads))
    stem = Path(path).stem
    if events is not None:
        events.put((stem, {"event": "start"}))
    meter = KernelMeter()

    def progress(event: dict) -> None:  # each cell: the kernel's CPU so far (and its peak memory, kept)
        cpu = meter.sample()
        if events is not None:
            events.put((stem, {**event, "cpu": cpu}))

    # the kernel logs each save with its cell number (vqalib.core.saved_by): one log per worker, so per notebook
    config.set_default(saved_by.LOG_ENV, str(project_root() / "build" / "saved_by" / f"{os.getpid()}.jsonl"))
    log = Path(config.get(saved_by.LOG_ENV))
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    seconds = run_notebook(Path(path), parameters=parameters, output=Path(output) if output else None,
                           progress=progress)
    peak, cpu = meter.result()
    lines = saved_by.logged(log)
    log.unlink(missing_ok=True)
    cells = saved_by.cells(lines, nbformat.read(output or path, as_version=4))
    return seconds, peak, config.snapshot(config.POOL_VARIABLES), cpu, lines, cells


def schedule(paths: list[Path], *, last: dict, cold: dict, jobs: int, cores: int) -> tuple[list[Path], int | None]:
    """The order to start notebooks in (longest first, by the longer of the last and the committed cold time) and the
    threads per kernel (``cores // jobs``: two kernels with machine-wide pools fought for 2 cores, 830 s against 426 s).

    Parameters
    ----------
    paths : list of Path
    last : dict
        Notebook name -> ``{"seconds": ...}`` of the last run here (build/reproduce_times.json).
    cold : dict
        The same from the committed cold run (benchmarks/reproduce_times.json).
    jobs : int
    cores : int

    Returns
    -------
    (order, threads) : tuple of (list of Path, int or None)
        None threads when ``jobs`` is 1 (the kernel's default).
    """
    def expected(path: Path) -> float:
        return max(last.get(path.stem, {}).get("seconds", 0.0), cold.get(path.stem, {}).get("seconds", 0.0))

    order = sorted(paths, key=lambda p: -expected(p))
    return order, (max(1, cores // jobs) if jobs > 1 else None)


def run_all(paths: list[Path], *, parameters: dict | None = None, jobs: int = 1,
            output_dir: Path | None = None, record_times: bool = True) -> dict[str, dict]:
    """Execute ``paths``, ``jobs`` at a time, each in a fresh kernel; then write the record of which cell saved each
    file (:mod:`vqalib.core.saved_by`) and list the tables kept. The first failure stops the run (``SystemExit``).

    Parameters
    ----------
    paths : list of Path
    parameters : dict, optional
        Papermill parameters for every notebook (``figures_dir``: where the record goes).
    jobs : int, default 1
    output_dir : Path, optional
        Where the executed notebooks go; default in place.
    record_times : bool, default True
        Merge the times into ``build/reproduce_times.json``.

    Returns
    -------
    dict of str to dict
        Notebook name -> ``seconds``, ``peak_mb``, ``thread_environment`` and per-cell times.
    """
    import multiprocessing
    import queue as queues
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from vqalib.compendium.progress import Display

    times_path = project_root() / "build" / TIMES_FILE
    last = _read_times(times_path)
    measured = project_root() / "benchmarks" / TIMES_FILE  # the last cold `make bench` (a fresh clone has only this)
    cold = json.loads(measured.read_text(encoding="utf-8")) if measured.exists() else {}
    order, threads = schedule(paths, last=last, cold=cold, jobs=jobs, cores=os.cpu_count() or 1)
    done: dict[str, dict] = {}
    saved: dict[str, dict] = {}  # notebook -> file -> the id of the cell that saved it
    kept: list[dict] = []
    display = Display(last_cells={n: t.get("cells") for n, t in last.items() if isinstance(t, dict)})
    lock, stop = threading.Lock(), threading.Event()
    context = multiprocessing.get_context("spawn")
    # a plain queue handed to each worker at its start, not a Manager: its server outlives a killed parent
    events = context.Queue()
    # workers are reused (a fresh process per notebook cost about 3 s); each notebook still gets a fresh kernel
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context,
                             initializer=_start_worker, initargs=(events,)) as pool:

        def pump():  # the workers' cell events -> the display, and the periodic lines
            while not stop.is_set():
                try:
                    name, event = events.get(timeout=0.5)
                except queues.Empty:
                    with lock:
                        display.refresh()
                    continue
                with lock:
                    display.start(name) if event["event"] == "start" else display.event(name, event)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        futures = {pool.submit(_run_in_worker, str(p), parameters, threads,
                               str(output_dir / p.name) if output_dir else None): p for p in order}
        try:
            for future in as_completed(futures):
                path = futures[future]
                try:
                    seconds, peak, pools, cpu, lines, saved[path.stem] = future.result()
                except (NotebookFailed, OSError) as error:  # OSError: the worker could not write (a full disk)
                    for other in futures:
                        other.cancel()
                    if isinstance(error, OSError):
                        error = f"{path.name}: {error}; the committed notebook and figures are as they were"
                    with lock:
                        display.finish(path.stem, f"[{len(done) + 1}/{len(paths)}] FAILED: {error}")
                    raise SystemExit(f"vqalib reproduce stopped: {error}") from None
                with lock:
                    cells = display.finish(path.stem, f"[{len(done) + 1}/{len(paths)}] {path.name} done in "
                                                      f"{seconds:.1f} s (kernel peak memory {peak:.0f} MB)", cpu=cpu)
                done[path.stem] = {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "peak_mb": round(peak),
                                   "thread_environment": pools, "cells": cells,
                                   "cells_cpu": [round(c, 2) for c in display.cell_cpu.get(path.stem, [])]}
                kept += [line for line in lines if line["outcome"] == "kept" and "cells" in line]
        finally:
            stop.set()
            reader.join()
    figures = Path((parameters or {}).get("figures_dir") or project_root() / "figures")
    in_place = output_dir is None and not set(parameters or {}) - COMMITTED_PARAMETERS
    if in_place or (parameters or {}).get("figures_dir"):  # an exploring run saved under build/explore/ instead
        saved_by.write(figures, saved)  # only now, when every notebook ran
    for note in sorted(kept, key=lambda n: n["file"]):  # model-derived values moved only within tolerance here
        print(f"kept {os.path.relpath(figures / note['file'], project_root())}: {note['cells']} model-derived cell(s) "
              f"moved within their declared tolerance (largest {note['largest']:.2g}); VQALIB_REWRITE_FIGURES=1 "
              "rewrites it")
    times_path.parent.mkdir(parents=True, exist_ok=True)
    if record_times:  # a smoke run's times say nothing about the next full run's
        write_atomic(times_path, (json.dumps({**last, **done}, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    return done


LOCK_FILE = "reproduce.lock"  # build/: one reproduce at a time per checkout


@contextlib.contextmanager
def exclusive(*, wait: bool = False):
    """Hold ``build/reproduce.lock`` for the block: one ``reproduce`` at a time per checkout (a second is refused,
    naming the holder).

    Parameters
    ----------
    wait : bool, default False
        Block until the holder finishes instead.
    """
    import fcntl

    path = project_root() / "build" / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise SystemExit(f"another vqalib reproduce holds {path} ({holder}); let it finish, or pass --wait") from None
        with contextlib.suppress(OSError):  # the holder's name is a courtesy: a full disk must not stop the run
            os.ftruncate(handle.fileno(), 0)  # unbuffered, so nothing is left to fail when the file closes
            os.pwrite(handle.fileno(), f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        yield


def run(*, only: list[str] | None = None, parameters: dict | None = None, jobs: int | None = None,
        wait: bool = False) -> dict:
    """``vqalib reproduce``: execute the notebooks in place, rewrite ``figures/``, record provenance (``build/`` always,
    ``figures/PROVENANCE.json`` when a figure changed) and regenerate the README status table.

    Parameters
    ----------
    only : list of str, optional
        Notebook name prefixes; a partial run writes under ``build/partial/`` only.
    parameters : dict, optional
        Papermill parameters: any but ``data_dir`` runs under ``build/smoke/`` (``smoke``) or ``build/partial/``.
    jobs : int, optional
        Default ``$VQALIB_REPRODUCE_JOBS``, else 2.
    wait : bool, default False
        Wait for a reproduce running in this checkout instead of refusing.

    Returns
    -------
    dict
        :func:`run_all`'s timings.
    """
    paths = notebook_paths(only=only)
    if not paths:
        raise SystemExit(f"no notebooks match {only}")
    jobs = jobs or config.get_int(JOBS_ENV, 2)
    with exclusive(wait=wait):
        if only or set(parameters or {}) - COMMITTED_PARAMETERS:  # other parameters: not the committed record
            return _run_apart(paths, parameters=parameters or {}, jobs=jobs,
                              folder="smoke" if (parameters or {}).get("smoke") else "partial")
        return _run_committed(paths, parameters=parameters, jobs=jobs)


def _run_apart(paths: list[Path], *, parameters: dict, jobs: int, folder: str) -> dict:
    """A smoke or partial run: notebooks, tables, figures and scorecards under ``build/<folder>/``; the committed
    notebooks, ``figures/``, README and provenance are not touched (only a full run replaces them)."""
    out = project_root() / "build" / folder
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    total = time.perf_counter()
    timings = run_all(paths, parameters={**parameters, "figures_dir": str(out / "figures")}, jobs=jobs,
                      output_dir=out / "notebooks", record_times=folder != "smoke")
    print(f"ran {len(paths)} notebook(s) in {time.perf_counter() - total:.1f} s ({jobs} at a time) into {out}/; "
          "a partial or smoke run leaves notebooks/, figures/, the README and the provenance record as they are")
    return timings


def model_work(*, data_dir: Path | None = None, jobs: int | None = None) -> dict[str, float]:
    """The notebooks' model work, once before they run, on ``jobs`` workers (:mod:`vqalib.compendium.model_work`).

    Parameters
    ----------
    data_dir : Path, optional
    jobs : int, optional

    Returns
    -------
    dict of str to float
        Step -> seconds.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from vqalib.compendium.model_work import fill_caches, marker_path

    print("model work first, once for every notebook (embeddings, metric scores, entities; cached)", flush=True)
    if marker_path(data_dir=data_dir).is_file():  # nothing to run: no process to start and import models in
        return fill_caches(data_dir=data_dir)
    jobs = jobs or config.get_int(JOBS_ENV, 2)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_start_worker, initargs=(None, threads)) as pool:  # die with a killed parent
        return fill_caches(data_dir=data_dir, pool=pool)


def _run_committed(paths: list[Path], *, parameters: dict | None, jobs: int) -> dict:
    """The full run of :func:`run`: the model work, then the notebooks in place, ``figures/``, provenance and the
    README status table."""
    from vqalib.core import contract

    figures = project_root() / "figures"
    before = contract.figure_hashes(figures)
    total = time.perf_counter()
    model_work(data_dir=(parameters or {}).get("data_dir"), jobs=jobs)
    # the provenance record reads torch's build: imported while the kernels run, not after them (about 2 s)
    threading.Thread(target=importlib.import_module, args=("torch",), daemon=True).start()
    timings = run_all(paths, parameters=parameters, jobs=jobs)
    after = contract.figure_hashes(figures)
    changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
    record = contract.provenance(hashes=after)
    # the kernels' pools, set in the workers (the parent's own thread variables are in thread_environment)
    record["kernels"] = {"jobs": jobs, "thread_environment": next(iter(timings.values()), {}).get("thread_environment")}
    contract.write_provenance(project_root() / "build" / "provenance.json", record)
    committed = figures / contract.PROVENANCE_FILE
    stale_rules = committed.exists() and json.loads(committed.read_text(encoding="utf-8")).get(
        "tolerance_rules") != json.loads(json.dumps(record["tolerance_rules"]))
    if changed or stale_rules or not committed.exists():
        contract.write_provenance(committed, {**record, "files_changed_by_this_run": changed})
        why = (f"{len(changed)} file(s) of figures/ changed" if changed or not stale_rules
               else "the registry's rules changed")
        where = f"{why}; provenance in figures/{contract.PROVENANCE_FILE}"
    else:
        where = (f"figures/ unchanged (its provenance, figures/{contract.PROVENANCE_FILE}, stays); this run's "
                 "environment is in build/provenance.json")
    if status.update_readme_status():
        where += "; README.md status table regenerated"
    print(f"reproduced {len(paths)} notebook(s) in {time.perf_counter() - total:.1f} s ({jobs} at a time); {where}")
    return timings
