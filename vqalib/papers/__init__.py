"""Paper-specific analyses, one subpackage per paper: ``vizwiz_lf`` (Huh et al., COLM 2024), ``commvqa``
(Naik, Potts, Kreiss, 2024) and ``afgv`` (reading-level controlled GQA). Each module is one concept:
loading, a table family, an analysis."""
