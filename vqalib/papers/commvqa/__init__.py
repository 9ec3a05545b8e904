"""CommVQA: Situating Visual Question Answering in Communicative Contexts (Naik, Potts, Kreiss, 2024).

One module per concept (§3 loading, Table 1, text, entities, context, facts, figures); the package re-exports
nothing: every name has one home, its module (ARCHITECTURE.md, "Layers").
"""
