"""Reference-based text metrics, one small module per metric, each naming its citation and the exact
variant implemented (paper-independent; the VizWiz-LF Table 4 use of them is
:mod:`vqalib.papers.vizwiz_lf.table4`):

- :mod:`~vqalib.core.metrics.tokenize`: pycocoevalcap's PTB tokenizer (Stanford CoreNLP);
- :mod:`~vqalib.core.metrics.rouge`: ROUGE-L F, beta 1.2 (Lin 2004; pycocoevalcap);
- :mod:`~vqalib.core.metrics.meteor`: METEOR 1.5 (Denkowski & Lavie 2014; pycocoevalcap's jar), the reusable
  :class:`~vqalib.core.metrics.meteor.MeteorSession` and :func:`~vqalib.core.metrics.meteor.meteor_additive`;
- :mod:`~vqalib.core.metrics.meteor_nltk`: NLTK's METEOR without WordNet (Banerjee & Lavie 2005);
- :mod:`~vqalib.core.metrics.bertscore`: BERTScore F1 (Zhang et al. 2020; bert-score), backbone choice,
  float64, rounded;
- :mod:`~vqalib.core.metrics.lexical_overlap`: unigram lexical overlap, its 8 candidate definitions;
- :mod:`~vqalib.core.metrics.cache`: the per-pair score cache (:func:`~vqalib.core.metrics.cache.cached_scores`).

The modules are imported on demand (nothing is imported here), so loading one metric does not load the others'
libraries.
"""
