"""PTB tokenization as the COCO caption evaluation does it (input of ROUGE-L and both METEORs).

Citation: the Penn Treebank tokenizer of Stanford CoreNLP 3.4.1 (Manning et al., 2014), as wrapped by
``pycocoevalcap.tokenizer.ptbtokenizer.PTBTokenizer`` (Chen et al., 2015, "Microsoft COCO Captions: Data
Collection and Evaluation Server").

Exact variant: pycocoevalcap's Java call (``edu.stanford.nlp.process.PTBTokenizer -preserveLines
-lowerCase``) followed by its removal of punctuation tokens; every run of white space inside a text is folded
to one space first, so each text stays on one line of the Java side.
"""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def _quiet_stderr():
    """Silence the Java tools' progress lines (they write to file descriptor 2 directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def ptb_tokenize(texts: list[str]) -> list[str]:
    """pycocoevalcap's PTB tokenizer (Stanford CoreNLP, Java): lower-cased, punctuation removed.

    Parameters
    ----------
    texts : list of str
        Raw texts; white space inside each is folded to single spaces first.

    Returns
    -------
    list of str
        One tokenized text per input, tokens joined by spaces, in input order.
    """
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    if not texts:
        return []
    # One text per line on the Java side: any line break inside a text (\r, U+2028, ...) would
    # shift every later text, so all white space is folded to single spaces first.
    with _quiet_stderr():
        tokenized = PTBTokenizer().tokenize({i: [{"caption": " ".join(t.split())}] for i, t in enumerate(texts)})
    if len(tokenized) != len(texts):
        raise RuntimeError(f"PTB tokenizer returned {len(tokenized)} texts for {len(texts)}")
    return [tokenized[i][0] for i in range(len(texts))]
