"""Canonical functional roles and information sources of VizWiz-LF (§4, Tables 7-8): every label spelling in the
release mapped onto one canonical name, and canonical names onto the headers the paper prints (Tables 2, 3, 15, 16)."""

from __future__ import annotations

ROLES: tuple[str, ...] = (
    "Confirmation",
    "Answer",
    "Answer Failure",
    "Auxiliary",
    "Auxiliary Failure",
    "Explanation",
    "Suggestion",
    "Misc",
)
INFO_SOURCES: tuple[str, ...] = ("Image Content", "Image Quality", "External Information")

# Spellings met in the release (`Confirmation of Photo`, `image_content`, ...); canonical names map to themselves.
ROLE_ALIASES: dict[str, str] = {
    "Confirmation of Photo": "Confirmation",
    "Explanation of Reasoning": "Explanation",
    "Auxiliary Information": "Auxiliary",
    "Auxiliary Information Failure": "Auxiliary Failure",
    "Miscellaneous": "Misc",
    "Miscelleneous": "Misc",
}
INFO_ALIASES: dict[str, str] = {
    "image_content": "Image Content",
    "image_quality": "Image Quality",
    "external_information": "External Information",
    "External Info.": "External Information",
}

# Column headers as printed in the paper's tables.
PAPER_ROLE_NAMES: dict[str, str] = {
    "Answer Failure": "Ans. Failure",
    "Auxiliary Failure": "Aux. Failure",
    "Misc": "Misc.",
}
PAPER_INFO_NAMES_TABLE3: dict[str, str] = {"External Information": "External Info."}

# Answer sources: file stem in the release -> name the paper prints.
SOURCES: dict[str, str] = {
    "expert": "Expert",
    "gpt-4v": "GPT-4V",
    "gemini": "Gemini",
    "llava": "LLaVA",
    "qwen": "QWEN",
    "blip2": "BLIP-2",
    "instruct_blip": "InstructBLIP",
}
QUESTION_TYPES: tuple[str, ...] = ("Identification", "Description", "Reading", "Others")
ANSWERABILITY: tuple[str, ...] = ("answerable", "unanswerable")


def canonical_label(label: str, *, kind: str) -> tuple[str, str]:
    """``(canonical, status)`` of a raw role or info label (§4); status canonical, alias or unknown (kept as is)."""
    if kind not in ("role", "info"):
        raise ValueError(f"kind must be 'role' or 'info', not {kind!r}")
    names, aliases = (ROLES, ROLE_ALIASES) if kind == "role" else (INFO_SOURCES, INFO_ALIASES)
    if label in names:
        return label, "canonical"
    if label in aliases:
        return aliases[label], "alias"
    return label, "unknown"


def paper_role_name(role: str) -> str:
    """Column header the paper prints for a canonical role (Tables 2 and 15); ``role`` itself when not abbreviated.

    Parameters
    ----------
    role : str
    """
    return PAPER_ROLE_NAMES.get(role, role)


def paper_info_name(info: str, *, table: str = "table03") -> str:
    """Column header the paper prints for an information source (Tables 3 and 16); only ``"table03"`` abbreviates.

    Parameters
    ----------
    info : str
    table : str, default "table03"
    """
    return PAPER_INFO_NAMES_TABLE3.get(info, info) if table == "table03" else info
