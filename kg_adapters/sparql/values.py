"""Wikidata values as Wikidata means them: times at their precision, quantities with their unit,
coordinates readable — and the extra facts ``describe_entity`` gives on Wikidata (statement count,
main types).

A truthy ``wdt:`` value says ``"1997-01-01T00:00:00Z"^^xsd:dateTime`` whether the date is known to
the day or only to the year; the precision, the unit of a quantity and the globe of a coordinate
live on the statement's value node (``p:P / psv:P → wikibase:timePrecision,
wikibase:quantityUnit``). The edge query fetches them in the same query
(:func:`kg_adapters.sparql.queries.edges`) and these functions write the value:

* time, precision 11 (day) → ``1997-05-12`` (``xsd:date``), 10 (month) → ``1997-05``
  (``xsd:gYearMonth``), 9 (year) → ``1997`` (``xsd:gYear``), 8 → ``1990s``, 7 → ``20th century``, 6
  → ``2nd millennium``; coarser precisions keep the year (``xsd:gYear``); 12–14 (hour to second)
  keep the full ``xsd:dateTime``. Years before 1 CE keep their sign as the endpoint writes them
  (``-0099``), never renumbered. Unknown precision (no value node, e.g. a mirror without ``psv:``)
  leaves the value exactly as the endpoint sent it.
* quantity → ``891.12 square kilometre`` (the unit's label; no unit for Wikidata's "1", ``Q199``),
  without the sign ``+`` Wikidata writes.
* globe coordinate ``Point(13.383333 52.516667)`` → ``52.5167°N, 13.3833°E`` in the text a model
  reads (``server.render.literal_text``; WKT is longitude first; another globe than the Earth is
  named: ``… (globe Q405)``). The structured value stays the exact WKT literal.
"""

from __future__ import annotations

import re

from pydantic import Field

from ..models import Entity, EntityDescription, Literal

XSD = "http://www.w3.org/2001/XMLSchema#"
WKT = "http://www.opengis.net/ont/geosparql#wktLiteral"
UNITLESS = "Q199"  # Wikidata's unit "1"
_TIME = re.compile(r"^([+-]?\d{1,16})-(\d{2})-(\d{2})T")
_POINT = re.compile(
    r"^\s*(?:<http://www\.wikidata\.org/entity/(Q\d+)>\s*)?Point\(\s*([-+0-9.eE]+)\s+([-+0-9.eE]+)\s*\)\s*$"
)
_EARTH = "Q2"


class EntityDetails(EntityDescription):
    """``describe_entity`` with what tells look-alikes apart on Wikidata: how many statements the
    item has and its main types (``P31`` instance of)."""

    statements: int | None = Field(
        default=None, description="Statements on the item (all ranks), when known."
    )
    types: list[Entity] = Field(default_factory=list, description="Its classes (instance of, P31).")


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def time_value(value: str, precision: int | None) -> Literal | None:
    """The time at its precision, or None to keep the endpoint's value (unknown precision,
    unexpected form)."""
    m = _TIME.match(value)
    if precision is None or m is None or precision >= 12:
        return None
    year_text, month, day = m.groups()
    sign = "-" if year_text.startswith("-") else ""
    digits = year_text.lstrip("+-")
    year = int(digits)
    padded = sign + digits.rjust(4, "0")
    if precision == 11:
        return Literal(value=f"{padded}-{month}-{day}", datatype=XSD + "date")
    if precision == 10:
        return Literal(value=f"{padded}-{month}", datatype=XSD + "gYearMonth")
    if not sign and year > 0 and precision in (6, 7, 8):
        if precision == 8:
            return Literal(value=f"{year - year % 10}s")
        if precision == 7:
            return Literal(value=f"{_ordinal((year - 1) // 100 + 1)} century")
        return Literal(value=f"{_ordinal((year - 1) // 1000 + 1)} millennium")
    return Literal(value=padded, datatype=XSD + "gYear")


def quantity_value(amount: str, unit_label: str | None) -> Literal:
    """``+891.12`` with "square kilometre" → ``891.12 square kilometre``; without a unit a plain
    decimal."""
    number = amount.removeprefix("+")
    if unit_label:
        return Literal(value=f"{number} {unit_label}")
    return Literal(value=number, datatype=XSD + "decimal")


def coordinate_value(wkt: str) -> Literal | None:
    """``Point(13.383333 52.516667)`` → ``52.5167°N, 13.3833°E``; None when it is not a WKT
    point."""
    m = _POINT.match(wkt)
    if m is None:
        return None
    globe, lon_text, lat_text = m.groups()
    try:
        lon, lat = float(lon_text), float(lat_text)
    except ValueError:
        return None

    def degrees(x: float) -> str:
        text = f"{abs(x):.4f}".rstrip("0")
        whole, _, frac = text.partition(".")
        return f"{whole}.{frac.ljust(2, '0')}"

    text = f"{degrees(lat)}°{'N' if lat >= 0 else 'S'}, {degrees(lon)}°{'E' if lon >= 0 else 'W'}"
    if globe and globe != _EARTH:
        text += f" (globe {globe})"
    return Literal(value=text)
