"""How SPARQL nodes become KG-local IDs and back — the only path from a caller's ID to an IRI in a
query.

Wikidata profile: ``Q42`` / ``P31``, checked with strict regexes.

Generic profile: an IRI inside a configured namespace becomes ``<prefix>.<localname>`` (``ex.Alice``
for ``http://example.org/Alice`` with ``ex = http://example.org/``); the prefix is a letter then
letters, digits, ``_`` or ``-`` (never a dot), the local name is made of ``A-Z a-z 0-9 _ - . ~``.
Any other IRI becomes ``~`` + the URL-safe base64 of its UTF-8 bytes without padding
(``~aHR0cDovL2EuZXhhbXBsZS9Yeg``). Both forms are reversible, contain no ``:`` (so ``NAME:ex.Alice``
splits unambiguously; IDs are capped at 512 characters, so base64 covers IRIs up to ~380 bytes) and
every rebuilt IRI is checked by :func:`escape.is_safe_iri` before it may be written as ``<iri>``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping

from ..errors import InvalidInput, NotFound
from .escape import is_safe_iri

WD = "http://www.wikidata.org/entity/"
QID = re.compile(r"^Q[1-9][0-9]{0,10}\Z")
PID = re.compile(r"^P[1-9][0-9]{0,10}\Z")
PREFIX_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}\Z")
_LOCAL = re.compile(r"^[A-Za-z0-9_~-][A-Za-z0-9_.~-]{0,255}\Z")
_B64 = re.compile(r"^~[A-Za-z0-9_-]{2,511}\Z")


def wikidata_entity(local: str) -> str:
    """``Q42`` → ``Q42`` after validation (InvalidInput otherwise)."""
    if not QID.match(local):
        raise InvalidInput(
            f"{local!r} is not a Wikidata item ID (expected Q followed by digits, e.g. Q42)"
        )
    return local


def wikidata_property(local: str) -> str:
    if not PID.match(local):
        raise InvalidInput(
            f"{local!r} is not a Wikidata property ID (expected P followed by digits, e.g. P31)"
        )
    return local


def wikidata_local(iri: str, pattern: re.Pattern[str] = QID, namespace: str = WD) -> str | None:
    """``http://www.wikidata.org/entity/Q42`` → ``Q42``; None for anything that is not such an
    IRI."""
    if iri.startswith(namespace):
        local = iri[len(namespace) :]
        if pattern.match(local):
            return local
    return None


class IriIds:
    """Encode/decode arbitrary IRIs as ID-safe local parts using a prefix map (longest namespace
    wins)."""

    def __init__(self, prefixes: Mapping[str, str]) -> None:
        for p, ns in prefixes.items():
            if not PREFIX_NAME.match(p):
                raise InvalidInput(
                    f"prefix {p!r}: use a letter then letters, digits, '_' or '-' (no dots)"
                )
            if not is_safe_iri(ns):
                raise InvalidInput(f"prefix {p!r}: namespace {ns!r} is not a valid IRI")
        self.prefixes = dict(prefixes)
        self._by_length = sorted(self.prefixes.items(), key=lambda kv: -len(kv[1]))

    def encode(self, iri: str) -> str:
        for p, ns in self._by_length:
            if iri.startswith(ns) and _LOCAL.match(iri[len(ns) :]):
                return f"{p}.{iri[len(ns) :]}"
        return "~" + base64.urlsafe_b64encode(iri.encode("utf-8")).decode("ascii").rstrip("=")

    def decode(self, local: str) -> str:
        """The IRI behind ``local``; InvalidInput if malformed or unsafe, NotFound for an unknown
        prefix."""
        if local.startswith("~"):
            if not _B64.match(local):
                raise InvalidInput(f"{local[:80]!r}: '~' IDs are URL-safe base64 of an IRI")
            body = local[1:]
            try:
                iri = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                raise InvalidInput(f"{local[:80]!r} is not valid base64 of a UTF-8 IRI") from None
        else:
            prefix, dot, name = local.partition(".")
            if not dot or not PREFIX_NAME.match(prefix) or not _LOCAL.match(name):
                raise InvalidInput(
                    f"{local[:80]!r}: expected '<prefix>.<localname>' (e.g. 'ex.Alice') or "
                    "'~<base64 of the IRI>'"
                )
            if prefix not in self.prefixes:
                raise NotFound(
                    f"unknown prefix {prefix!r}; configured: {', '.join(sorted(self.prefixes))}"
                )
            iri = self.prefixes[prefix] + name
        if not is_safe_iri(iri):
            raise InvalidInput(f"ID {local[:80]!r} decodes to an unsafe or malformed IRI")
        return iri
