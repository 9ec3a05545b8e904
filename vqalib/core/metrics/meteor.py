"""METEOR 1.5 segment and corpus scores through one reusable Java process.

Citation: Denkowski, M. and Lavie, A. (2014). "Meteor Universal: Language Specific Translation Evaluation for
Any Target Language". WMT 2014.

Exact variant: the ``meteor-1.5.jar`` shipped by ``pycocoevalcap`` (``pycocoevalcap.meteor.meteor.Meteor``, run
as ``-stdio -l en -norm``): exact, stem, synonym and paraphrase matching with METEOR 1.5's English parameters;
segment scores from its ``EVAL`` reply. :class:`MeteorSession` sends pycocoevalcap's ``SCORE``/``EVAL``
lines pipelined and keeps the statistics; :func:`meteor_additive` adds statistics as Java's
``MeteorStats.addStats`` does, so resampled corpus scores are one ``EVAL`` each.
"""

from __future__ import annotations

import threading

import numpy as np


def meteor(references: list[str], candidates: list[str]) -> np.ndarray:
    """METEOR 1.5 segment scores (pycocoevalcap's Java METEOR) per pair of PTB-tokenized texts.

    Parameters
    ----------
    references, candidates : list of str
        Aligned PTB-tokenized texts, none empty (the Java side cannot score an empty segment).

    Returns
    -------
    ndarray
        One segment score per pair (one :class:`MeteorSession`).
    """
    if not references:
        return np.array([], dtype=float)
    with MeteorSession() as session:
        _, scores = session.evaluate(session.statistics(list(candidates), [[r] for r in references]))
    return scores


class MeteorSession:
    """One pycocoevalcap METEOR 1.5 process reused for many scorings (VizWiz-LF Table 4, CommVQA Table 1).

    pycocoevalcap's ``Meteor.compute_score`` asks the JVM for each segment's statistics
    (``SCORE`` lines) and then for the score of the list (``EVAL``). This session sends the
    same lines, but pipelined (a writer thread), and keeps the statistics so that a subset
    or a bootstrap resample is one ``EVAL`` of statistics already computed. METEOR's corpus
    score is computed from the sum of the segments' statistics (Java ``MeteorStats.addStats``),
    so the corpus score of a resample is the ``EVAL`` of one summed line
    (:meth:`evaluate_pooled`, with :func:`meteor_additive`; checked against :meth:`evaluate`).
    """

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
        """METEOR statistics of each (candidate, references) pair; the lines of ``Meteor._stat``.

        Parameters
        ----------
        candidates : list of str
            PTB-tokenized candidates; ``|||`` is removed and double spaces made single, as pycocoevalcap does.
        references : list of list of str
            The references of each candidate, aligned with ``candidates``.

        Returns
        -------
        list of str
            One line of space-separated statistics per pair, for :meth:`evaluate`.
        """
        lines = [" ||| ".join(("SCORE", " ||| ".join(refs), cand.replace("|||", "").replace("  ", " ")))
                 for cand, refs in zip(candidates, references)]
        return self._exchange(lines, len(lines))

    def evaluate(self, stats: list[str]) -> tuple[float, np.ndarray]:
        """Corpus score and segment scores of a list of statistics (what ``compute_score`` returns).

        Parameters
        ----------
        stats : list of str
            Lines of :meth:`statistics`, e.g. a subset or a resample of them.

        Returns
        -------
        (float, ndarray)
            The corpus score and one segment score per line.
        """
        out = self._exchange(["EVAL" + "".join(f" ||| {s}" for s in stats)], len(stats) + 1)
        return float(out[-1]), np.array([float(x) for x in out[:-1]])

    def evaluate_pooled(self, pooled: np.ndarray) -> np.ndarray:
        """Corpus score of each row of summed statistics (one ``EVAL`` per row, pipelined).

        Parameters
        ----------
        pooled : ndarray
            One row of statistics (23 numbers) per corpus: sums of :func:`meteor_additive` rows; a 1-D array is
            one corpus.

        Returns
        -------
        ndarray
            One corpus score per row.
        """
        lines = ["EVAL ||| " + " ".join(repr(float(x)) for x in row) for row in np.atleast_2d(pooled)]
        out = self._exchange(lines, 2 * len(lines))
        return np.array([float(x) for x in out[1::2]])


def meteor_additive(stats: np.ndarray) -> np.ndarray:
    """METEOR statistics (rows of 23 numbers) as Java's ``MeteorStats.addStats`` adds them:
    every field, except the chunk count (column 20) of a segment matched entirely in one chunk
    (all test and reference words matched, one chunk), which the aggregate leaves out.

    Parameters
    ----------
    stats : array-like
        Rows of METEOR statistics (:meth:`MeteorSession.statistics`, split into floats).

    Returns
    -------
    ndarray
        A float copy, ready to be summed and sent to :meth:`MeteorSession.evaluate_pooled`.
    """
    stats = np.array(stats, dtype=float, copy=True)
    test_matches = stats[:, 4:20:2].sum(axis=1)  # content + function matches of the 4 stages
    ref_matches = stats[:, 5:20:2].sum(axis=1)
    exact = (test_matches == stats[:, 0]) & (ref_matches == stats[:, 1]) & (stats[:, 20] == 1.0)
    stats[exact, 20] = 0.0
    return stats
