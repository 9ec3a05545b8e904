"""Paper-specific analyses, one subpackage per paper: ``vizwiz_lf`` (Huh et al., COLM 2024), ``commvqa``
(Naik, Potts, Kreiss, 2024) and ``afgv`` (reading-level controlled GQA); one concept per module.
A module that uses another paper's module names it in its docstring and says why.
"""
