"""Live progress of ``vqalib reproduce``: each running notebook's current cell, elapsed time and estimate left.

A papermill engine (:class:`ProgressEngine`) reports each cell as it starts; :class:`Display` draws one line per
notebook (redrawn on a terminal, periodic plain lines in a log). Kernels' own log lines, nothing a user can act
on, go to ``build/logs/<notebook>.kernel.log`` (:func:`kernel_output_to`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path

from vqalib.core.escaping import terminal_text

# the stem of a save, save_figure or check call: the call's first string literal
SAVED = re.compile(r"""\b(?:save(?:_figure)?|check)\([^"'\n]*?["']([^"']+)["']""")
_CALLBACK = None  # set by :func:`reporting` in the process that runs papermill


def cell_label(source: str, *, width: int = 48) -> str:
    """What a cell does in at most ``width`` characters: "saves <stem>" when it saves a table or figure, else its first
    code line."""
    saved = SAVED.findall(source)
    if saved:
        text = "saves " + ", ".join(saved)
    else:
        lines = [ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]
        text = lines[0] if lines else "(empty cell)"
    return text if len(text) <= width else text[:width - 1] + "…"


@contextlib.contextmanager
def reporting(callback):
    """Send :class:`ProgressEngine`'s events to ``callback`` while the block runs.

    Parameters
    ----------
    callback : callable
        Called with one dict per event.
    """
    global _CALLBACK
    previous, _CALLBACK = _CALLBACK, callback
    try:
        yield
    finally:
        _CALLBACK = previous


def _engine():
    """papermill's nbclient engine with a cell-start hook (built lazily: papermill is imported only to run)."""
    from papermill.engines import NBClientEngine, papermill_engines

    class ProgressEngine(NBClientEngine):
        """Reports each cell as it starts to the callback of :func:`reporting`."""

        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            start = nb_man.cell_start
            code = [k for k, c in enumerate(nb_man.nb.cells) if c.cell_type == "code"]

            def cell_start(cell, cell_index=None, **kw):
                if _CALLBACK is not None and cell.cell_type == "code":
                    _CALLBACK({"event": "cell", "index": code.index(cell_index) if cell_index in code else 0,
                               "total": len(code), "label": cell_label(cell.source)})
                return start(cell, cell_index, **kw)

            nb_man.cell_start = cell_start
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    papermill_engines.register("vqalib-progress", ProgressEngine)
    return "vqalib-progress"


def kernel_cpu() -> float | None:
    """CPU seconds so far of this process's children (a notebook's kernel, reaped processes); None where unknown."""
    try:
        import psutil

        times = [c.cpu_times() for c in psutil.Process().children(recursive=False)]
    except Exception:  # noqa: BLE001 (a process gone meanwhile: no CPU figure, the run goes on)
        return None
    return sum(t.user + t.system + t.children_user + t.children_system for t in times)


def kernel_peak_mb() -> float | None:
    """The largest peak resident memory (MB, Linux ``VmHWM``) of this process's live children; None where unknown."""
    try:
        import psutil

        peaks = []
        for child in psutil.Process().children(recursive=False):
            with open(f"/proc/{child.pid}/status", encoding="ascii") as status:
                peaks += [int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:")]
    except Exception:  # noqa: BLE001 (not Linux, or the kernel gone meanwhile)
        return None
    return max(peaks, default=None)


class KernelMeter:
    """A notebook's kernel as ``vqalib reproduce`` measures it from its worker process: CPU seconds and peak memory."""

    def __init__(self) -> None:
        import resource

        self._before = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._peaks: list[float] = []

    def sample(self) -> float | None:
        """At a cell's start: keep the kernel's peak memory so far; return its CPU seconds so far."""
        peak = kernel_peak_mb()
        if peak is not None:
            self._peaks.append(peak)
        return kernel_cpu()

    def result(self) -> tuple[float, float]:
        """After the kernel ended: (peak MB, CPU seconds since the meter started); without a sample, an upper bound."""
        import resource

        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = usage.ru_utime + usage.ru_stime - self._before.ru_utime - self._before.ru_stime
        return max(self._peaks, default=usage.ru_maxrss / 1024), cpu


def engine_name() -> str:
    """The registered name of the progress engine (registering it once per process)."""
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = _engine()
    return _ENGINE


_ENGINE = None


@contextlib.contextmanager
def kernel_output_to(log: Path):
    """Send this process's stdout and stderr file descriptors, which a kernel it starts inherits, to ``log``.

    Parameters
    ----------
    log : Path
        The kernel log (created anew).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log, "wb") as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"{seconds} s"


class Display:
    """The live lines of the running notebooks (module docstring).

    Parameters
    ----------
    stream : file, default sys.stdout
    live : bool, optional
        Redraw in place; default: whether ``stream`` is a terminal.
    interval : float, default 15
        Seconds between plain lines per notebook when not live.
    last_cells : dict, optional
        Notebook name -> the last run's per-cell seconds (the estimate).
    """

    def __init__(self, *, stream=None, live: bool | None = None, interval: float = 15.0,
                 last_cells: dict | None = None):
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self.interval = interval
        self.last_cells = last_cells or {}
        self.running: dict[str, dict] = {}
        self.shown = 0
        self.cell_seconds: dict[str, list[float]] = {}
        self.cell_cpu: dict[str, list[float]] = {}  # CPU seconds per cell, where the events carry ``cpu``

    def _line(self, name: str, state: dict, now: float) -> str:
        done, total = state["index"], state["total"]
        left = ""
        past = self.last_cells.get(name)
        if past and total and len(past) == total:
            remaining = sum(past[done:]) - min(now - state["cell_start"], past[done] if done < total else 0)
            left = f", about {_clock(max(remaining, 0))} left"
        cells = f"cell {done + 1}/{total}" if total else "starting"
        label = terminal_text(state["label"])  # a notebook cell's own text: it must not move the cursor
        return f"  {name}: {cells} ({label}), {_clock(now - state['start'])}{left}"

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _redraw(self, now: float) -> None:
        lines = [self._line(n, s, now) for n, s in self.running.items()]
        clear = f"\x1b[{self.shown}F\x1b[J" if self.shown else ""
        self._write(clear + "".join(line[:200] + "\n" for line in lines))
        self.shown = len(lines)

    def start(self, name: str) -> None:
        """A notebook started.

        Parameters
        ----------
        name : str
        """
        now = time.monotonic()
        self.running[name] = {"index": 0, "total": 0, "label": "starting the kernel", "start": now,
                              "cell_start": now, "printed": now, "cpu": None}
        self.cell_seconds[name] = []
        self.cell_cpu[name] = []
        if self.live:
            self._redraw(now)
        else:
            self._write(self._line(name, self.running[name], now) + "\n")

    def event(self, name: str, event: dict) -> None:
        """A cell of ``name`` started.

        Parameters
        ----------
        name : str
        event : dict
            ``{"event": "cell", "index", "total", "label"}``, optionally ``"cpu"``.
        """
        state = self.running.get(name)
        if state is None:
            return
        now = time.monotonic()
        if event["index"] > 0:
            self.cell_seconds[name].append(now - state["cell_start"])
            if state["cpu"] is not None and event.get("cpu") is not None:
                self.cell_cpu[name].append(event["cpu"] - state["cpu"])
        state.update(index=event["index"], total=event["total"], label=event["label"], cell_start=now,
                     cpu=event.get("cpu"))
        self.refresh()

    def refresh(self) -> None:
        """Redraw (live) or print the lines that are due (plain: every ``interval`` seconds per notebook)."""
        now = time.monotonic()
        if self.live:
            self._redraw(now)
            return
        for name, state in self.running.items():
            if now - state["printed"] >= self.interval:
                state["printed"] = now
                self._write(self._line(name, state, now) + "\n")

    def finish(self, name: str, text: str, *, cpu: float | None = None) -> list[float]:
        """A notebook ended: print ``text`` (its summary line) above the live lines; return its per-cell seconds.

        Parameters
        ----------
        name : str
        text : str
        cpu : float, optional
            The kernel's CPU seconds in all.
        """
        state = self.running.pop(name, None)
        if state is not None and state["total"]:
            self.cell_seconds[name].append(time.monotonic() - state["cell_start"])
            if state["cpu"] is not None and cpu is not None:
                self.cell_cpu[name].append(cpu - state["cpu"])
        if self.live and self.shown:
            self._write(f"\x1b[{self.shown}F\x1b[J")
            self.shown = 0
        self._write(terminal_text(text) + "\n")  # it may quote a failed cell's error
        if self.live:
            self._redraw(time.monotonic())
        return [round(s, 2) for s in self.cell_seconds.get(name, [])]
