"""AFGV: Accessible VQA Evaluation Using Reading-Level Controlled GQA (rewrites and tier statistics); one module per
concept, each table or figure's code readable on its own; the package re-exports nothing."""
