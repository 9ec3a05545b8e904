"""AFGV: Accessible VQA Evaluation Using Reading-Level Controlled GQA (question rewrites and tier statistics).

One module per concept, each table or figure's code readable on its own; the package re-exports nothing.
"""
