"""PTB tokenization as the COCO caption evaluation does it (input of ROUGE-L and both METEORs). Citation: Stanford
CoreNLP 3.4.1's PTB tokenizer (Manning et al., 2014) as wrapped by pycocoevalcap (Chen et al., 2015). Exact
variant: ``PTBTokenizer -preserveLines -lowerCase``, punctuation tokens removed."""

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
    """pycocoevalcap's PTB tokenizer (Stanford CoreNLP, Java): one lower-cased text per input, punctuation removed.

    Parameters
    ----------
    texts : list of str
        Raw texts.
    """
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    if not texts:
        return []
    # one text per line on the Java side: a line break inside a text (\r, U+2028, ...) would shift all later ones
    with _quiet_stderr():
        tokenized = PTBTokenizer().tokenize({i: [{"caption": " ".join(t.split())}] for i, t in enumerate(texts)})
    if len(tokenized) != len(texts):
        raise RuntimeError(f"PTB tokenizer returned {len(tokenized)} texts for {len(texts)}")
    return [tokenized[i][0] for i in range(len(texts))]
