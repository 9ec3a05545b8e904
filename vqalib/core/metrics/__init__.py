"""Reference-based text metrics, one module per metric naming its citation and exact variant: PTB tokenizer,
ROUGE-L, METEOR 1.5, METEOR (NLTK, no WordNet) and, online, METEOR (NLTK, WordNet), BERTScore, unigram lexical
overlap, and the per-pair score cache. Nothing is imported here, so loading one metric does not load the others'
libraries."""
