"""vqalib: the package behind the accessible-VQA research compendium.

Modules (one concept each): ``datasets`` (verified upstream files and loaders),
``validation`` (the validation report), ``taxonomy`` (canonical roles and information
sources), ``wordcounts`` (VizWiz-LF Table 1), ``roles`` (Tables 2, 3, 15, 16, Fig. 5),
``metrics`` (Table 4 metrics and Table 18 correlation), ``judge`` (LLM judge and LAVE),
``ratings``/``stats``/``simulation`` (human evaluation, Fig. 2, Table 19), ``abstention``
(Tables 5, 26), ``afgv`` (AFGV rewrites and tier statistics), ``commvqa`` and ``context``
(CommVQA Table 1 and context analysis), ``vqa`` and ``images`` (the VLM runner),
``report`` (tables and figures with paper comparison), ``plots`` (figures),
``reproduce`` (runs the notebooks, builds the HTML site).
"""

__version__ = "0.1.0"
