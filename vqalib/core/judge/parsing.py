"""Reading a LAVE judge reply: its 1-3 rating (``Rating: X``, ``So rating=X`` and the variants models write),
or the reason there is none (:data:`PARSE_REASONS`)."""

from __future__ import annotations

import re
from typing import NamedTuple

# reasons a reply yields no rating (LAVE's judge_status reads "unparseable: <reason>")
REASON_EMPTY = "empty"
REASON_NO_RATING = "no rating"
REASON_RANGE = "range"  # "Rating: 1-3", "2 or 3": a span, not a rating
REASON_OUT_OF_RANGE = "out of range"  # 0, 4, 2.5, 4/5: not a rating on the 1-3 scale
REASON_CONFLICT = "conflicting ratings"  # several different ratings in one reply
PARSE_REASONS = (REASON_EMPTY, REASON_NO_RATING, REASON_RANGE, REASON_OUT_OF_RANGE, REASON_CONFLICT)

_WORDS = {"one": 1, "two": 2, "three": 3}
_MARK = r"[ \t*_`]*"  # spaces and Markdown emphasis around the parts of "**Rating:** 3"
_NUMBER = r"-?\d+(?:\.\d+)?"
_VALUE = rf"[\[(\"'“‘]?{_MARK}(?P<value>{_NUMBER}|one|two|three)\b"
_SPAN = r"\d+\s*(?:-|–|—|to)\s*\d+"
# a scale note between keyword and value: "Rating (1-3): 2", "Rating on a scale of 1-3: 3", "Score (out of 3): 3"
_SCALE = (rf"(?:[(\[]\s*(?:(?:on\s+)?(?:a\s+)?(?:scale\s+)?(?:of\s+|from\s+)?{_SPAN}|out\s+of\s+\d+)\s*[)\]]"
          rf"|(?:on\s+)?(?:a\s+)?scale\s+(?:of\s+|from\s+)?{_SPAN})")
_SEPARATOR = r"(?:[:=：]+|[-–—]|\bis\b|\bof\b|\b(?:would|should|will)\s+be\b)"
_RATING_PATTERNS = (
    # "Rating: 3", "So rating=3", "Rating = 3", "Rating - 2", "**Score:** 3", "rating of 2", "Rating (1-3): 2"
    re.compile(rf"\b(?:rating|score)\b{_MARK}(?:{_SCALE}{_MARK})?{_SEPARATOR}\s*{_MARK}{_VALUE}", re.I),
    # "Rating 3" without separator: only a number that ends the phrase
    re.compile(rf"\brating\b{_MARK}(?P<value>{_NUMBER})(?=[ \t*_`]*(?:$|[.!;,)\]\n]))", re.I | re.M),
    # "I would rate it a 2", "I give this answer a 3"
    re.compile(rf"\b(?:rate[sd]?|give[s]?)\s+(?:it|this(?:\s+(?:candidate\s+)?answer)?|the\s+(?:candidate\s+)?"
               rf"answer|the\s+candidate)\s+(?:as\s+)?(?:an?\s+)?{_VALUE}", re.I),
)
# what follows a value and makes it a span or a score on another scale
_SPAN_AFTER = re.compile(r"\s*(?:-|–|—|\bto\b|\bor\b)\s*(?:\d|one\b|two\b|three\b)", re.I)
_DENOMINATOR_AFTER = re.compile(r"\s*(?:/|\bout\s+of\b)\s*(\d+)", re.I)
# a bare rating that ends the reply: on a line of its own ("...\n3", "**3**", "Output: 3") or after a
# sentence ("... is correct. 3"), as the reference reads the last generated token
_BARE_LINE = re.compile(r"^[\s*_`#>\[(\"'“‘]*(?:output\s*:[\s*_`]*)?(?P<value>[1-3])[\s*_`\])\"'”’.!]*$", re.I)
_BARE_AFTER_SENTENCE = re.compile(r"[.!?][ \t*_`]+(?P<value>[1-3])[\s*_`.!]*$")
# a model continuing the few-shot pattern starts a new demonstration: "\nQuestion: ..."
_ECHOED_ITEM = re.compile(r"\n[ \t*_`]*Question\s*:", re.I)


class ParsedRating(NamedTuple):
    """A LAVE reply read: the 1-3 rating, or None and the reason (one of :data:`PARSE_REASONS`)."""

    rating: int | None
    reason: str | None


def _ratings_in(text: str) -> tuple[list[int], set[str]]:
    """Every rating the patterns find in ``text`` and the problems met (span, out of range)."""
    ratings: list[int] = []
    problems: set[str] = set()
    for pattern in _RATING_PATTERNS:
        for match in pattern.finditer(text):
            raw = match.group("value").lower()
            rest = text[match.end():]
            if _SPAN_AFTER.match(rest):
                problems.add(REASON_RANGE)
                continue
            denominator = _DENOMINATOR_AFTER.match(rest)
            value = _WORDS[raw] if raw in _WORDS else float(raw)
            if value not in (1, 2, 3) or (denominator and denominator.group(1) != "3"):
                problems.add(REASON_OUT_OF_RANGE)
                continue
            ratings.append(int(value))
    stripped = text.rstrip()
    last_line = stripped.rsplit("\n", 1)[-1]
    bare = _BARE_LINE.match(last_line) or _BARE_AFTER_SENTENCE.search(stripped)
    if bare:
        ratings.append(int(bare.group("value")))
    return ratings, problems


def parse_lave_reply(text: str | None) -> ParsedRating:
    """Read the rating of a LAVE reply: ``Rating: X`` and its variants, or a bare ``X`` ending the reply; a span
    (``1-3``), a value off the 1-3 scale or different ratings in one reply yield no rating, with the reason."""
    if text is None or not text.strip():
        return ParsedRating(None, REASON_EMPTY)
    echo = _ECHOED_ITEM.search(text)
    if echo:
        head_ratings, head_problems = _ratings_in(text[:echo.start()])
        if head_ratings or head_problems:
            text = text[:echo.start()]  # the rest is an invented further demonstration
    ratings, problems = _ratings_in(text)
    for reason in (REASON_RANGE, REASON_OUT_OF_RANGE):
        if reason in problems:
            return ParsedRating(None, reason)
    if len(set(ratings)) > 1:
        return ParsedRating(None, REASON_CONFLICT)
    if ratings:
        return ParsedRating(ratings[0], None)
    return ParsedRating(None, REASON_NO_RATING)


def parse_rating(text: str | None) -> int | None:
    """The 1-3 rating of a LAVE reply, or None."""
    return parse_lave_reply(text).rating


def _has_rating(text: str) -> bool:
    return parse_lave_reply(text).rating is not None
