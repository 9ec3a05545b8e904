"""VizWiz-LF: "Long-Form Answers to Visual Questions from Blind and Low Vision People" (Huh et al., COLM 2024).

Code specific to this paper, one concept per module: e.g. the offline role / information-source
classifier (§4, Appendix A.2.2, Tables 9-10; ``classifier*``, ``label_noise``, ``labelling``) and the
paper's few-shot LLM classifier (A.2.2, Tables 11-14; ``llm_classifier``, prompts in ``prompts/``).
Each name is imported from the module that defines it; this package re-exports nothing.
"""
