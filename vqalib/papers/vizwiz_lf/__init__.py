"""VizWiz-LF: "Long-Form Answers to Visual Questions from Blind and Low Vision People" (Huh et al., COLM 2024).
One concept per module; each name is imported from the module that defines it (no re-exports)."""
