"""The read-only guard in front of every caller-written SPARQL query (the ``sparql_query`` tool).

A query passes only as SELECT, ASK, CONSTRUCT or DESCRIBE, without ``SERVICE`` (unless its IRI is on
the KG's allowlist), with a top-level ``LIMIT`` of at most the row cap, and the text that goes to
the endpoint is exactly the text rdflib's SPARQL parser accepted:

1. **Characters.** Empty, over-long (``max_chars``) and ``\\u``/``\\U`` escapes are refused: SPARQL
   expands those *before* parsing, so ``\\u0053ERVICE`` is ``SERVICE`` to an engine (and engines
   differ in how they expand). Control characters (except tab and newlines), lone surrogates, and
   format or line-separator characters outside string literals are refused too.
2. **Normalisation.** A small lexer (IRIs ``<…>``, the four string forms, comments) drops the
   comments and writes every run of whitespace outside strings as one space (a line break before
   ``SERVICE``, which rdflib needs). What is sent therefore has no comments, so two parsers cannot
   disagree about where a comment ends (``# x\\rSERVICE …``); if an engine took a later ``#``
   (inside an IRI) for a comment, it would only see *less* of a line of a query that was already
   checked.
3. **Keywords.** The lexer's words outside strings and IRIs are matched against the update keywords
   (``INSERT``, ``DELETE``, ``LOAD``, ``CLEAR``, ``DROP``, ``CREATE``, ``ADD``, ``MOVE``, ``COPY``,
   ``WITH``, ``USING``) for a precise one-line refusal, and ``SERVICE`` is counted.
4. **Prefixes.** Prefixes the query uses but does not declare are declared from the KG's prefix map
   (and named in the result); an unknown one is refused with the list of known ones.
5. **LIMIT.** A top-level ``LIMIT`` above the cap is lowered to it, a missing one is added (before a
   trailing ``VALUES`` block), as ``cap + 1`` so that one row more than the cap says "truncated".
6. **The parse that decides.** The final text — prefixes, normalised query, limit — is parsed by
   ``rdflib.plugins.sparql.parser.parseQuery`` (which only accepts the four read forms; updates have
   their own grammar). The parse tree is walked for ``ServiceGraphPattern`` wherever it occurs
   (sub-selects, OPTIONAL, UNION, MINUS, GRAPH, FILTER EXISTS / NOT EXISTS, BIND expressions): each
   must name an allowlisted IRI, and there must be as many as the lexer counted. The top-level limit
   of the parse must be the one intended.

7. **Plain IRIs.** In the body, ``<`` may be "less than" to a parser that finds no IRI reading fits,
   and then a ``#`` or a quote inside what the lexer took for an IRI starts a comment or a string
   that hides a ``SERVICE`` from the check. So a body IRI with ``#`` is sent as a prefixed name (its
   namespace declared in the prologue, where ``<`` can only start an IRI), and one with a quote is
   refused.
8. **One reading.** The IRIs and strings the lexer found must be the ones rdflib parsed. Where two
   parsers read a boundary differently (``<?b&&#>`` an IRI or ``< ?b &&`` and a comment; a comment
   ending at a carriage return or at the next newline), text is a string or IRI to one and code to
   the other, and a ``SERVICE`` can hide there from the check while the engine runs it; such a query
   is refused.

Anything that does not pass raises :class:`QueryRefused` (an ``InvalidInput``) with one line saying
why.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import InvalidInput
from .escape import ECHAR

READ_FORMS = {
    "SelectQuery": "SELECT",
    "AskQuery": "ASK",
    "ConstructQuery": "CONSTRUCT",
    "DescribeQuery": "DESCRIBE",
}
UPDATE_KEYWORDS = frozenset(
    ["INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH", "USING"]
)
DEFAULT_MAX_ROWS = 100
HARD_MAX_ROWS = 1000
DEFAULT_MAX_CHARS = 10_000
DEFAULT_TIMEOUT = 20.0
MAX_SERVICES = 5  # allowed SERVICE clauses per query (rdflib re-scans the whole text for each one)
#: the most tokens (words, punctuation, literals; not whitespace) a query may have: the parse behind
#: the check grows faster than the text (a 10,000-character COALESCE of 4,920 arguments took 8 s),
#: and a real query has a few hundred at most. With :func:`check_query_async` the check also runs
#: off the event loop.
MAX_TOKENS = 1000
# the label service is evaluated inside WDQS (no outbound request); the default allowlist of the
# public service
WIKIBASE_LABEL_SERVICE = "http://wikiba.se/ontology#label"


class QueryRefused(InvalidInput):
    """The guard refused a query; the message is one line saying why."""


# -- result model ----------------------------------------------------------------------------------
class SparqlTerm(BaseModel):
    """One RDF term of a result, as the SPARQL 1.1 JSON results format writes it."""

    model_config = ConfigDict(frozen=True)
    type: Literal["uri", "literal", "bnode", "triple"]
    value: str
    datatype: str | None = None
    lang: str | None = None


class SparqlRows(BaseModel):
    """What a read-only SPARQL query returned, bounded. CONSTRUCT/DESCRIBE triples come as rows of
    ``subject``/``predicate``/``object``; ASK as ``boolean``."""

    kg: str
    form: Literal["SELECT", "ASK", "CONSTRUCT", "DESCRIBE"]
    columns: list[str] = Field(default_factory=list)
    rows: list[dict[str, SparqlTerm]] = Field(
        default_factory=list, description="Unbound variables are left out."
    )
    boolean: bool | None = Field(default=None, description="The answer of an ASK query.")
    truncated: bool = Field(default=False, description="More rows exist than are shown (see hint).")
    limit: int | None = Field(default=None, description="The top-level LIMIT that was sent.")
    prefixes: dict[str, str] = Field(
        default_factory=dict, description="Prefixes the server declared for you."
    )
    query: str = Field(default="", description="The query exactly as it was sent.")
    notes: list[str] = Field(
        default_factory=list, description="What the guard changed (LIMIT lowered or added)."
    )
    hint: str | None = Field(default=None, description="What to do when the result was cut.")
    namespaces: dict[str, str] = Field(
        default_factory=dict, exclude=True
    )  # for writing IRIs short; not sent


# -- policy and checked query ----------------------------------------------------------------------
@dataclass(frozen=True)
class GuardPolicy:
    """How one KG guards queries: the row cap, the text cap, its prefixes and its SERVICE
    allowlist."""

    prefixes: Mapping[str, str] = field(default_factory=dict)
    services: frozenset[str] = frozenset()
    max_rows: int = DEFAULT_MAX_ROWS
    max_chars: int = DEFAULT_MAX_CHARS


@dataclass(frozen=True)
class CheckedQuery:
    text: str  # exactly what may be sent (it is what rdflib parsed)
    form: str  # SELECT | ASK | CONSTRUCT | DESCRIBE
    limit: int | None  # the top-level LIMIT in text (None for ASK)
    max_rows: int  # a LIMIT the guard sets is max_rows + 1: that many rows means "more exist"
    prefixes: dict[str, str]  # declarations the guard added
    notes: tuple[str, ...] = ()
    namespaces: Mapping[str, str] = field(
        default_factory=dict
    )  # every prefix in effect: the KG's, the query's


# -- lexing ----------------------------------------------------------------------------------------
_IRIREF = re.compile(r'<[^<>"{}|^`\\\x00-\x20]*>')
_STRINGS = (  # longest forms first; ECHAR is \ followed by one of t b n r f " ' \
    re.compile(r"'''(?:(?:'|'')?(?:[^'\\]|\\[tbnrf\"'\\]))*'''"),
    re.compile(r'"""(?:(?:"|"")?(?:[^"\\]|\\[tbnrf"\'\\]))*"""'),
    re.compile(r"'(?:[^'\\\n\r]|\\[tbnrf\"'\\])*'"),
    re.compile(r'"(?:[^"\\\n\r]|\\[tbnrf"\'\\])*"'),
)
_WS = re.compile(r"[ \t\n\r]+")
_COMMENT = re.compile(r"#[^\n\r]*")
_WORD = re.compile(r"[^\s{}()\[\]<>\"',;|^!=&+*/#@.][^\s{}()\[\]<>\"',;|^!=&+*/#@]*")
_VAR = re.compile(r"[?$][A-Za-z0-9_\u00B7\u00C0-\uFFFF]*")
_ESCAPE = re.compile(r"\\[uU]")
_INTEGER = re.compile(r"^[0-9]+\Z")
_PNAME = re.compile(r"^([A-Za-z\u00C0-\uFFFF][\w.\-\u00B7\u00C0-\uFFFF]*)?:")


@dataclass(frozen=True)
class Token:
    kind: str  # ws | comment | iri | string | word | punct
    text: str


def _refuse(reason: str) -> QueryRefused:
    return QueryRefused(f"refused: {reason}")


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens as SPARQL's lexer sees the parts that matter here (IRIs, strings,
    comments, whitespace, words); everything else is one punctuation character. Raises QueryRefused
    for an unterminated string or an invalid escape inside one."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n\r":
            m = _WS.match(text, i)
            out.append(Token("ws", m.group(0)))  # type: ignore[union-attr]
        elif c == "#":
            m = _COMMENT.match(text, i)
            out.append(Token("comment", m.group(0)))  # type: ignore[union-attr]
        elif c == "<" and (m := _IRIREF.match(text, i)):
            out.append(Token("iri", m.group(0)))
        elif c in "'\"":
            m = next((m for s in _STRINGS if (m := s.match(text, i))), None)
            if m is None:
                raise _refuse(
                    "unterminated string literal, or a backslash escape other than "
                    "\\t \\b \\n \\r \\f \\\" \\' \\\\ inside one"
                )
            out.append(Token("string", m.group(0)))
        elif (c in "?$" and (m := _VAR.match(text, i))) or (m := _WORD.match(text, i)):
            out.append(Token("word", m.group(0)))
        else:
            out.append(Token("punct", c))
        i += len(out[-1].text)
    return out


def _check_characters(text: str) -> None:
    if _ESCAPE.search(text):
        raise _refuse(
            "\\u/\\U escapes are not accepted (engines expand them before parsing, so they can "
            "hide keywords); write the character itself"
        )
    for ch in text:
        o = ord(ch)
        if o < 0x20 and ch not in "\t\n\r" or 0x7F <= o <= 0x9F or 0xD800 <= o <= 0xDFFF:
            raise _refuse(f"control character U+{o:04X} in the query")


def _check_outside_strings(tokens: Iterable[Token]) -> None:
    for t in tokens:
        if t.kind in ("string", "ws"):
            continue
        if "\\" in t.text and t.kind != "iri":
            # a local-name escape (x:a\') is a quote to the lexer and a name to a parser: where they
            # part, a string to one is code to the other
            raise _refuse(
                "a backslash outside a string literal; write prefixed names without escapes (or "
                "the full <IRI>)"
            )
        for ch in t.text:
            if ord(ch) > 0x7F and unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Zs", "Co", "Cn"):
                raise _refuse(
                    f"invisible or unusual character U+{ord(ch):04X} outside a string literal"
                )
        if t.kind == "word" and t.text[0] not in "?$":
            _check_word(t.text)


def _check_word(word: str) -> None:
    """Names every parser reads as one token. Where a prefixed name's local part holds a '.', ':' or
    '%', the parsers' grammars part (``d:a.b.SERVICEx:c`` is one name to rdflib; oxigraph reads
    ``d:a.b``, ``.`` and a SERVICE), and an engine may read a keyword at the start of a longer word
    (``SERVICEx:c``), so a prefix or bare word holding SERVICE must be the keyword itself (a local
    part may: ``bd:serviceParam``)."""
    prefix = _prefix_of(word)
    head = word if prefix is None else prefix
    if "service" in head.lower() and word.upper() != "SERVICE":
        raise _refuse(
            f"'{word[:60]}' holds the word SERVICE; write a name that does not (or the full <IRI>)"
        )
    if prefix is not None:
        local = word[len(prefix) + 1 :]
        odd = next((c for c in ".:%" if c in local), None)
        if odd is not None:
            raise _refuse(
                f"the prefixed name '{word[:60]}' has '{odd}' in its local part, which SPARQL "
                "parsers read differently; write the full <IRI> instead"
            )


#: what engines read as a keyword at the start of a word, with no boundary after it (oxigraph 0.5
#: reads ``GRAPH:z`` as GRAPH then ``:z``): a prefix may not start with one
_KEYWORD_STARTS = (
    "select",
    "construct",
    "describe",
    "ask",
    "where",
    "from",
    "named",
    "graph",
    "optional",
    "filter",
    "minus",
    "bind",
    "values",
    "union",
    "service",
    "silent",
    "exists",
    "not",
    "in",
    "as",
    "base",
    "prefix",
    "limit",
    "offset",
    "order",
    "by",
    "group",
    "having",
    "distinct",
    "reduced",
    "undef",
    "true",
    "false",
    "a",
)


def _check_names(tokens: list[Token], namespaces: Mapping[str, str]) -> None:
    """Every prefixed name of the text sent reads as one name to the engine too: its prefix starts
    with no keyword, and prefix + local part is a valid IRI by the engine's own rules — oxigraph
    reads a name whose IRI would be invalid as the bare prefix and goes on with the local part as
    code (``q:SERVICE`` with ``q:`` = ``<http://host:8080>`` is ``<http://host:8080>`` then
    SERVICE)."""
    for t in tokens:
        if t.kind != "word" or t.text[0] in "?$":
            continue
        prefix = _prefix_of(t.text)
        if prefix is None:
            continue
        if prefix.lower().startswith(_KEYWORD_STARTS):
            raise _refuse(
                f"the prefix '{prefix}:' starts like a SPARQL keyword, which engines read as the "
                "keyword; name it otherwise"
            )
        _name_iri(t.text, prefix, namespaces)


def _name_iri(word: str, prefix: str, namespaces: Mapping[str, str]) -> str:
    """The IRI the prefixed name ``word`` stands for, refused unless valid by the engine's own
    rules."""
    import pyoxigraph as ox

    iri = namespaces.get(prefix, "") + word[len(prefix) + 1 :]
    try:
        ox.NamedNode(iri)
    except ValueError:
        raise _refuse(
            f"'{word[:60]}' does not make a valid IRI ({iri[:80]}); write the full <IRI>"
        ) from None
    return iri


def _prefix_of(word: str) -> str | None:
    """The prefix of a prefixed name (``wd`` of ``wd:Q42``, ``""`` of ``:x``), None for anything
    else."""
    if word[0] in "?$_" or word[0].isdigit():
        return None
    m = _PNAME.match(word)
    return (m.group(1) or "") if m else None


@dataclass
class _Shape:
    """Where the top-level LIMIT is (token index of its integer) and where a trailing VALUES
    starts."""

    limit_at: int | None = None
    values_at: int | None = None
    declared: set[str] = field(default_factory=set)
    used: list[str] = field(default_factory=list)
    services: int = 0
    has_base: bool = False
    form: str = ""  # the first keyword after the prologue, upper-cased


def _form_word(words: list[Token]) -> str:
    k = 0
    while (
        k < len(words) and words[k].kind == "word" and words[k].text.upper() in ("PREFIX", "BASE")
    ):
        k += 3 if words[k].text.upper() == "PREFIX" else 2
    return words[k].text.upper() if k < len(words) and words[k].kind == "word" else ""


def _shape(tokens: list[Token]) -> _Shape:
    shape = _Shape()
    depth = 0
    words = [(i, t) for i, t in enumerate(tokens) if t.kind != "ws"]
    shape.form = _form_word([t for _, t in words])
    for k, (i, t) in enumerate(words):
        if t.kind == "punct":
            if t.text in "{(":
                depth += 1
            elif t.text in "})":
                depth -= 1
            continue
        if t.kind != "word":
            continue
        up = t.text.upper()
        nxt = words[k + 1][1] if k + 1 < len(words) else None
        if up == "PREFIX" and nxt is not None and nxt.kind == "word" and nxt.text.endswith(":"):
            shape.declared.add(nxt.text[:-1])
        elif up == "BASE":
            shape.has_base = True
        elif up == "SERVICE":
            shape.services += 1
        elif (
            depth == 0
            and up == "LIMIT"
            and nxt is not None
            and nxt.kind == "word"
            and _INTEGER.match(nxt.text)
        ):
            shape.limit_at = words[k + 1][0]
        elif depth == 0 and up == "VALUES" and shape.values_at is None:
            shape.values_at = i
        prefix = _prefix_of(t.text)
        if prefix is not None and not (
            k > 0 and words[k - 1][1].kind == "word" and words[k - 1][1].text.upper() == "PREFIX"
        ):
            shape.used.append(prefix)
    return shape


def _service_on_new_line(tokens: list[Token]) -> list[Token]:
    """A line break before every SERVICE: rdflib (7.x) finds a SERVICE clause again by scanning the
    text from the start, and a '#' inside an earlier IRI or string reads to that scan as a comment
    running to the end of the line — so a SERVICE on the same line would not be found and a valid
    query would fail to parse."""
    out: list[Token] = []
    for t in tokens:
        if t.kind == "word" and t.text.upper() == "SERVICE":
            if out and out[-1].kind == "ws":
                out[-1] = Token("ws", "\n")
            else:
                out.append(Token("ws", "\n"))
        out.append(t)
    return out


def _canonical_string(token: str) -> str:
    """A string literal as one short double-quoted literal of the same value: no line break, quote
    or comment sign of the text sent can then end a string for one parser and not another."""
    return '"' + "".join(ECHAR.get(c, c) for c in _string_content(token)) + '"'


def _normalise(tokens: list[Token]) -> list[Token]:
    """Comments dropped, whitespace outside strings as single spaces (none at either end), strings
    canonical (:func:`_canonical_string`): the text sent is one line an engine reads as the lexer
    did."""
    out: list[Token] = []
    for t in tokens:
        if t.kind in ("comment", "ws"):
            if out and out[-1].kind != "ws":
                out.append(Token("ws", " "))
            continue
        if t.kind == "string":
            t = Token("string", _canonical_string(t.text))
        out.append(t)
    while out and out[-1].kind == "ws":
        out.pop()
    return out


# -- the parse that decides ------------------------------------------------------------------------
_PARSE_LOCK = threading.Lock()


def _parse(text: str) -> Any:
    """rdflib's parse, one at a time: its pyparsing grammar keeps parse state in shared objects, so
    two threads parsing at once fail each other with nonsense refusals (measured: 6 of 8 concurrent
    valid queries refused)."""
    from rdflib.plugins.sparql.parser import parseQuery

    with _PARSE_LOCK:
        return parseQuery(text)


def _syntax_error(e: Exception) -> str:
    """One line from the parser's complaint. (Updates never get this far: their keywords are refused
    first.)"""
    msg = " ".join(str(e).split())
    return f"not a valid SPARQL query ({msg[:200]})"


def _walk(node: Any) -> Iterable[Any]:
    """Every node of a parse tree, the terms at its leaves included."""
    from pyparsing import ParseResults
    from rdflib.plugins.sparql.parserutils import CompValue

    stack = [node]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, CompValue):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple, ParseResults)):
            stack.extend(x)


def _declared(parsed: Any) -> dict[str, str]:
    # CompValue.get answers a missing key with the key's own name: the empty prefix has no "prefix"
    # entry
    return {
        (d["prefix"] if "prefix" in d else "") or "": str(d["iri"])
        for d in parsed[0]
        if getattr(d, "name", "") == "PrefixDecl"
    }


def _service_iri(term: Any, prefixes: Mapping[str, str]) -> str | None:
    from rdflib.plugins.sparql.parserutils import CompValue
    from rdflib.term import URIRef

    if isinstance(term, URIRef):
        return str(term)
    if isinstance(term, CompValue) and term.name == "pname":
        ns = prefixes.get(term.get("prefix") or "")
        return None if ns is None else ns + (term.get("localname") or "")
    return None  # a variable: never allowed


def _check_parsed(parsed: Any, policy: GuardPolicy, services_seen: int, has_base: bool) -> str:
    """The query form; QueryRefused for a SERVICE that is not allowed."""
    from rdflib.plugins.sparql.parserutils import CompValue

    form = READ_FORMS.get(getattr(parsed[1], "name", ""))
    if form is None:
        raise _refuse("only SELECT, ASK, CONSTRUCT and DESCRIBE queries are allowed")
    declared = _declared(parsed)
    services = [
        n for n in _walk(parsed) if isinstance(n, CompValue) and n.name == "ServiceGraphPattern"
    ]
    if len(services) != services_seen:
        raise _refuse("SERVICE clauses could not be verified")
    for s in services:
        iri = _service_iri(s.get("term"), declared)
        if iri is None or iri not in policy.services or has_base:
            shown = iri or "a variable"
            allowed = ", ".join(sorted(policy.services)) or "none on this KG"
            raise _refuse(f"SERVICE {shown} (federated query) is not allowed; allowed: {allowed}")
    return form


_LOCAL_NAME = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?)?\Z")


def _plain_iris(tokens: list[Token], added: dict[str, str], taken: set[str]) -> list[Token]:
    """Every IRI in the query's body made one that no parser can read as anything else.

    In an expression ``<`` is also "less than", and parsers choose by what follows: an IRI holding
    ``#`` or a quote can be one token to the guard's lexer and, to rdflib or the engine, a ``<``, a
    comment or a string start that hides a ``SERVICE`` from the check (#36; every attack found used
    one). In a PREFIX or BASE declaration ``<`` can only start an IRI, so there they may stay; in
    the body an IRI with ``#`` is written as a prefixed name (``<http://x/o#type>`` → ``ns1:type``,
    the namespace declared in the prologue), and one with a quote, or whose name after ``#`` is not
    a plain local name, is refused. ``added``: the prologue's declarations (extended here);
    ``taken``: prefix names in use."""
    out: list[Token] = []
    words = [t for t in tokens if t.kind != "ws"]
    declaring = {
        id(words[k + 2])
        for k in range(len(words) - 2)
        if words[k].kind == "word" and words[k].text.upper() == "PREFIX"
    }
    declaring |= {
        id(words[k + 1])
        for k in range(len(words) - 1)
        if words[k].kind == "word" and words[k].text.upper() == "BASE"
    }
    names = {ns: p for p, ns in added.items()}
    tokens = _names_as_iris(tokens, words, declaring, added)
    for t in tokens:
        iri = t.text[1:-1] if t.kind == "iri" else ""
        if t.kind != "iri" or id(t) in declaring or not ("#" in iri or "'" in iri):
            out.append(t)
            continue
        ns, hash_, local = iri.rpartition("#")
        if "'" in iri or not hash_ or not _LOCAL_NAME.match(local):
            raise _refuse(
                f"the IRI <{iri[:80]}> could read as other tokens to another parser; "
                "percent-encode its quotes, or keep '#' for a plain name at its end "
                "(<…#name>)"
            )
        # a name with a '.' is a different number of names to different parsers (oxigraph takes one
        # '.'-group): such an IRI becomes a namespace of its own, sent with an empty local part
        namespace, local = (ns + "#", local) if "." not in local else (iri, "")
        prefix = names.get(namespace)
        if prefix is None:
            n = len(names)
            while f"ns{n}" in taken or f"ns{n}" in added:
                n += 1
            prefix = names[namespace] = f"ns{n}"
            added[prefix] = namespace
        # spaced (but for a datatype's ^^, which rdflib wants glued): glued to a word, a name could
        # read as a longer one to one parser only
        glued = bool(out) and out[-1].kind == "punct" and out[-1].text == "^"
        out.extend(
            ([] if glued else [Token("ws", " ")])
            + [Token("word", f"{prefix}:{local}"), Token("ws", " ")]
        )
    return out


def _names_as_iris(
    tokens: list[Token], words: list[Token], declaring: set[int], added: dict[str, str]
) -> list[Token]:
    """Every prefixed name of the body written as the ``<IRI>`` it stands for, so the engine parses
    no local part at all: parsers part on local names (escapes, '.'-groups, a name whose IRI would
    be invalid read as its prefix and code), and every such difference found hid a SERVICE. The IRI
    must be valid by the engine's own rules (pyoxigraph's). Declarations stay; :func:`_plain_iris`
    then writes the IRIs holding '#' as names it controls."""
    namespaces = dict(added)
    names_declared: set[int] = set()
    for k in range(len(words) - 2):
        if (
            words[k].kind == "word"
            and words[k].text.upper() == "PREFIX"
            and words[k + 2].kind == "iri"
        ):
            namespaces[words[k + 1].text[:-1]] = words[k + 2].text[1:-1]
            names_declared.add(id(words[k + 1]))
    out: list[Token] = []
    for t in tokens:
        prefix = _prefix_of(t.text) if t.kind == "word" and t.text[0] not in "?$" else None
        if (
            prefix is None
            or id(t) in names_declared
            or id(t) in declaring
            or prefix not in namespaces
        ):
            out.append(t)
            continue
        out.append(Token("iri", f"<{_name_iri(t.text, prefix, namespaces)}>"))
    return out


_RDF_TYPE = (
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"  # what rdflib makes of the keyword ``a``
)
_UNESCAPE = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _string_content(token: str) -> str:
    q = 3 if token[:3] in ("'''", '"""') else 1
    return re.sub(
        r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), m.group(0)), token[q:-q], flags=re.S
    )


def _number_or_boolean(text: str) -> bool:
    if text in ("true", "false"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _same_reading(text: str, parsed: Any) -> None:
    """QueryRefused unless the lexer and rdflib read the same IRIs and strings in ``text``. The
    lexer decides what is a comment, rdflib what is a SERVICE, an engine what runs: where two of
    them read one span differently (``<?b&&#>`` an IRI to one, ``< ?b &&`` and a comment to the
    other; a comment ending at a carriage return for one, at the next newline for another), some
    text is a string or an IRI to one and code to the other, and that is where a SERVICE hides. Sent
    text has no comments left, so when every IRI and string agrees, the engine reads it as the
    checked parse does."""
    from rdflib.term import Literal, URIRef

    iris: Counter[str] = Counter()
    literals: set[str] = set()
    for x in _walk(parsed):
        if isinstance(x, URIRef):
            iris[str(x)] += 1
        elif isinstance(x, Literal):
            literals.add(str(x))
    tokens = tokenize(text)
    # counted, not as sets: an IRI both parsers read as '<' and code in the body agrees as a set
    # when the same text is also declared as a prefix (an outside re-run); the keyword `a` is
    # rdf:type to rdflib alone
    lexed = Counter(t.text[1:-1] for t in tokens if t.kind == "iri")
    strings = {_string_content(t.text) for t in tokens if t.kind == "string"}
    typed = iris.pop(_RDF_TYPE, 0)
    untyped = Counter({k: n for k, n in lexed.items() if k != _RDF_TYPE})
    iris_agree = iris == untyped and typed >= lexed[_RDF_TYPE]
    if (
        not iris_agree
        or not strings <= literals
        or not all(map(_number_or_boolean, literals - strings))
    ):
        raise _refuse(
            "the query reads differently to different SPARQL parsers (an IRI, string or comment "
            "boundary is ambiguous); write IRIs and strings plainly, without '#' or quotes that "
            "could end them early"
        )


def _top_limit(parsed: Any) -> int | None:
    lo = parsed[1].get("limitoffset") if hasattr(parsed[1], "get") else None
    if lo is None or lo.get("limit") is None:
        return None
    return int(lo["limit"])


def check_query(query: str, policy: GuardPolicy) -> CheckedQuery:
    """The text to send for ``query`` under ``policy``, or QueryRefused saying why not (module
    docstring)."""
    if not isinstance(query, str) or not query.strip():
        raise QueryRefused("refused: the query is empty")
    if len(query) > policy.max_chars:
        raise QueryRefused(
            f"refused: the query is {len(query):,} characters; at most {policy.max_chars:,}"
        )
    _check_characters(query)
    tokens = _normalise(tokenize(query))
    words = sum(1 for t in tokens if t.kind not in ("ws", "comment"))
    if words > MAX_TOKENS:
        raise QueryRefused(
            f"refused: the query has {words:,} tokens; at most {MAX_TOKENS:,} (split it, or pass "
            "fewer values per query)"
        )
    _check_outside_strings(tokens)
    updates = sorted({t.text.upper() for t in tokens if t.kind == "word"} & UPDATE_KEYWORDS)
    if updates:
        raise _refuse(
            f"updates are not allowed (found {updates[0]}); only SELECT, ASK, CONSTRUCT and "
            "DESCRIBE"
        )
    shape = _shape(tokens)
    if shape.services and not policy.services:
        raise _refuse("SERVICE (federated query) is not allowed on this KG")
    unknown = sorted(
        {p for p in shape.used if p not in shape.declared and p not in policy.prefixes}
    )
    if unknown:
        known = ", ".join(sorted(policy.prefixes)) or "none"
        raise _refuse(
            f"unknown prefix '{unknown[0]}:'; declare it (PREFIX {unknown[0]}: <…>) or use one of: "
            f"{known}"
        )
    added = {p: policy.prefixes[p] for p in dict.fromkeys(shape.used) if p not in shape.declared}
    if shape.services > MAX_SERVICES:
        raise _refuse(f"{shape.services} SERVICE clauses; at most {MAX_SERVICES}")
    tokens = _plain_iris(_service_on_new_line(tokens), added, shape.declared | set(policy.prefixes))
    shape = _shape(tokens)  # token positions moved
    prologue = "".join(f"PREFIX {p}: <{ns}> " for p, ns in added.items())
    body = [t.text for t in tokens]

    cap = max(1, min(policy.max_rows, HARD_MAX_ROWS))
    notes: list[str] = []
    want: int | None = None
    if shape.form == "ASK":
        pass  # one boolean: nothing to bound
    elif shape.limit_at is not None:
        user = int(tokens[shape.limit_at].text)
        if user > cap:
            want = cap + 1
            body[shape.limit_at] = str(want)
            notes.append(f"LIMIT {user} lowered to the cap of {cap} rows")
        else:
            want = user
    else:
        want = cap + 1
        if shape.values_at is not None:
            body.insert(shape.values_at, f"LIMIT {want} ")
        else:
            body.append(f" LIMIT {want}")
        notes.append(f"LIMIT {cap} added")
    text = prologue + "".join(body)

    try:
        parsed = _parse(text)
    except RecursionError:
        raise _refuse("the query is nested too deeply or too long to check; simplify it") from None
    except Exception as e:  # noqa: BLE001 - ParseException, or whatever else a malformed query provokes: all refusals
        raise _refuse(_syntax_error(e)) from None
    form = _check_parsed(parsed, policy, shape.services, shape.has_base)
    _same_reading(text, parsed)
    namespaces = {**policy.prefixes, **_declared(parsed)}
    sent = tokenize(
        text
    )  # the checks on words run again on what is sent: the guard writes some itself
    _check_outside_strings(sent)
    _check_names(sent, namespaces)
    if form != shape.form:
        raise _refuse(
            "the query form could not be verified; start the query with SELECT, ASK, CONSTRUCT or "
            "DESCRIBE (after PREFIX/BASE declarations)"
        )
    if form == "ASK":
        return CheckedQuery(text, form, None, cap, added, (), namespaces)
    if _top_limit(parsed) != want:
        raise _refuse(
            f"could not bound the result size; add LIMIT {cap} (or less) at the end of the query"
        )
    return CheckedQuery(text, form, want, cap, added, tuple(notes), namespaces)


async def check_query_async(query: str, policy: GuardPolicy) -> CheckedQuery:
    """:func:`check_query` in a worker thread: its parse is CPU work (bounded by ``MAX_TOKENS``, up
    to a second or so), which must not stall every other session's calls on the event loop. In a
    server, in its own pool (:class:`~kg_adapters.cpu.Pools`): parses run one at a time anyway, so
    waiting checks queue there, per client and bounded, instead of each holding a thread store
    queries need."""
    import anyio

    from ..cpu import POOLS

    pools = POOLS.get()
    if pools is not None:
        return await pools.checks.run(check_query, query, policy)
    return await anyio.to_thread.run_sync(check_query, query, policy)


# -- helpers for backends --------------------------------------------------------------------------
def finish_rows(
    kg: str,
    checked: CheckedQuery,
    columns: list[str],
    rows: list[dict[str, SparqlTerm]],
    boolean: bool | None = None,
) -> SparqlRows:
    """Cut ``rows`` to the cap and say whether more existed (the guard asked for one more than the
    cap)."""
    more = len(rows) > checked.max_rows
    hint = None
    if more:
        hint = (
            f"more than {checked.max_rows} results: narrow the query (FILTER, fewer variables), "
            "aggregate (COUNT, GROUP BY), or page with ORDER BY + LIMIT/OFFSET"
        )
    return SparqlRows(
        kg=kg,
        form=checked.form,
        columns=columns,
        rows=rows[: checked.max_rows],
        boolean=boolean,
        truncated=more,
        limit=checked.limit,
        prefixes=checked.prefixes,
        query=checked.text,
        notes=list(checked.notes),
        hint=hint,
        namespaces=dict(checked.namespaces),
    )
