"""METEOR 1.5 segment and corpus scores through one reusable Java process. Citation: Denkowski and Lavie (2014),
"Meteor Universal: ...", WMT. Exact variant: pycocoevalcap's ``meteor-1.5.jar`` (``-stdio -l en -norm``); segment
scores from its ``EVAL`` reply."""

from __future__ import annotations

import threading

import numpy as np


def meteor(references: list[str], candidates: list[str]) -> np.ndarray:
    """METEOR 1.5 segment scores (pycocoevalcap's Java METEOR) per aligned pair of PTB-tokenized texts, none empty
    (Java cannot score an empty segment)."""
    if not references:
        return np.array([], dtype=float)
    with MeteorSession() as session:
        _, scores = session.evaluate(session.statistics(list(candidates), [[r] for r in references]))
    return scores


class MeteorSession:
    """One pycocoevalcap METEOR 1.5 process reused for many scorings, its ``SCORE``/``EVAL`` lines pipelined;
    statistics are kept, so a subset or bootstrap resample is one ``EVAL`` of summed statistics."""

    def __init__(self) -> None:
        from pycocoevalcap.meteor.meteor import Meteor

        self._meteor = Meteor()
        self._proc = self._meteor.meteor_p

    def __enter__(self) -> "MeteorSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._meteor = None  # pycocoevalcap's __del__ closes stdin and stops the JVM
        self._proc = None

    def _exchange(self, lines: list[str], replies: int) -> list[str]:
        proc = self._proc

        def write() -> None:
            for line in lines:
                proc.stdin.write(f"{line}\n".encode())
            proc.stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        out = []
        for _ in range(replies):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the METEOR process ended before answering every line")
            out.append(line.decode().strip())
        writer.join()
        return out

    def statistics(self, candidates: list[str], references: list[list[str]]) -> list[str]:
        """METEOR statistics of each (candidate, references) pair: one line each, as ``Meteor._stat``.

        Parameters
        ----------
        candidates : list of str
            PTB-tokenized candidates (``|||`` removed, double spaces made single, as pycocoevalcap does).
        references : list of list of str
            The references of each candidate, aligned with ``candidates``.
        """
        lines = [" ||| ".join(("SCORE", " ||| ".join(refs), cand.replace("|||", "").replace("  ", " ")))
                 for cand, refs in zip(candidates, references)]
        return self._exchange(lines, len(lines))

    def evaluate(self, stats: list[str]) -> tuple[float, np.ndarray]:
        """Corpus score and one segment score per line of statistics (what ``compute_score`` returns).

        Parameters
        ----------
        stats : list of str
            Lines of :meth:`statistics` (e.g. a resample).
        """
        out = self._exchange(["EVAL" + "".join(f" ||| {s}" for s in stats)], len(stats) + 1)
        return float(out[-1]), np.array([float(x) for x in out[:-1]])

    def evaluate_pooled(self, pooled: np.ndarray) -> np.ndarray:
        """Corpus score of each row of summed statistics (one ``EVAL`` per row, pipelined).

        Parameters
        ----------
        pooled : ndarray
            One row of 23 summed :func:`meteor_additive` statistics per corpus (1-D: one corpus).
        """
        lines = ["EVAL ||| " + " ".join(repr(float(x)) for x in row) for row in np.atleast_2d(pooled)]
        out = self._exchange(lines, 2 * len(lines))
        return np.array([float(x) for x in out[1::2]])


def meteor_additive(stats: np.ndarray) -> np.ndarray:
    """METEOR statistics (rows of 23) made additive as Java's ``MeteorStats.addStats`` sums them: the chunk count
    (column 20) of a segment matched entirely in one chunk is zeroed, as the aggregate omits it.

    Parameters
    ----------
    stats : array-like
        Rows of METEOR statistics, as floats.
    """
    stats = np.array(stats, dtype=float, copy=True)
    test_matches = stats[:, 4:20:2].sum(axis=1)  # content + function matches of the 4 stages
    ref_matches = stats[:, 5:20:2].sum(axis=1)
    exact = (test_matches == stats[:, 0]) & (ref_matches == stats[:, 1]) & (stats[:, 20] == 1.0)
    stats[exact, 20] = 0.0
    return stats
