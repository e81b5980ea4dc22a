"""The only ways user-derived text may enter a SPARQL query: an escaped string literal or a
validated IRI.

Everything else in a query is either a constant of the adapter or an ID that matched a strict regex.
SPARQL processes ``\\uXXXX`` escapes *before* parsing (and some engines, rdflib among them, do so
naively even after an escaped backslash), so a literal may not contain a backslash followed by
``u``/``U``: it is refused here and the search code drops backslashes from search text before it
gets this far.
"""

from __future__ import annotations

import re
import unicodedata

from ..errors import InvalidInput

ECHAR = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_NEEDS_ECHAR = re.compile(r'["\\\n\r\t\b\f]')
_FORBIDDEN_IN_LITERAL = re.compile(r"[\x00-\x07\x0b\x0e-\x1f\x7f\ud800-\udfff]|\\[uU]")
_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>\"{}|^`\\\x7f-\x9f\ud800-\udfff]*\Z")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zs", "Zl", "Zp"})
LANG_TAG = re.compile(r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\\]")


def sparql_literal(text: str, lang: str | None = None) -> str:
    """``'Say "hi"'`` → ``"Say \\"hi\\""`` (optionally ``@lang``). Raises InvalidInput for text that
    cannot be written safely (control characters, lone surrogates, ``\\u`` sequences)."""
    if not isinstance(text, str):
        raise InvalidInput(f"expected text, got {type(text).__name__}")
    if _FORBIDDEN_IN_LITERAL.search(text):
        raise InvalidInput("text contains control characters or a '\\u' escape sequence")
    body = _NEEDS_ECHAR.sub(lambda m: ECHAR[m.group(0)], text)
    if lang is None:
        return f'"{body}"'
    if not LANG_TAG.match(lang):
        raise InvalidInput(f"invalid language tag {lang!r}")
    return f'"{body}"@{lang}'


def is_safe_iri(iri: str) -> bool:
    """True when ``iri`` has a scheme, none of ``<>"{}|^`\\``, no whitespace, control or format
    characters (Unicode ones included) and only well-formed ``%XX`` escapes — what strict parsers
    (oxigraph) accept."""
    if (
        not isinstance(iri, str)
        or len(iri) > 4096
        or not _IRI.match(iri)
        or _BAD_PERCENT.search(iri)
    ):
        return False
    if iri.count("#") > 1:  # a fragment cannot contain '#'
        return False
    # an ASCII IRI (nearly all) has no format or control character left to find past the regex
    return iri.isascii() or not any(
        ord(c) > 0x7F and unicodedata.category(c) in _BAD_CATEGORIES for c in iri
    )


def iri_ref(iri: str) -> str:
    """``http://x/a`` → ``<http://x/a>`` after checking it cannot break out of the angle
    brackets."""
    if not is_safe_iri(iri):
        shown = iri if len(iri) <= 80 else iri[:77] + "..."
        raise InvalidInput(f"unsafe or malformed IRI {shown!r}")
    return f"<{iri}>"


def clean_search_text(text: str) -> str:
    """Search text as the endpoint will see it: control characters, lone surrogates and backslashes
    become spaces, runs of spaces collapse. Names never contain them, and this keeps the literal
    writable."""
    return " ".join(_CONTROL.sub(" ", text).split())
