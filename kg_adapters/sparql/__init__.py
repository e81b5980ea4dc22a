"""SPARQL backends: Wikidata (the public query service or any mirror) and generic SPARQL 1.1
endpoints.

``open_sparql_kg(name, "wikidata", None)`` talks to https://query.wikidata.org/sparql;
``open_sparql_kg(name, "wikidata", url)`` to Wikidata-shaped data elsewhere (QLever, oxigraph,
Blazegraph...); ``open_sparql_kg(name, "sparql", url)`` to any RDF store. Options (keyword
arguments, the per-KG TOML table) are documented on :class:`SparqlOptions` and in docs/sparql.md.
"""

from __future__ import annotations

from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from ..backends import Backend
from ..base import Limits
from ..errors import InvalidInput
from ..plugins import parse_options
from .endpoint import SHARED_ENDPOINTS, EndpointRegistry, JsonEndpoint, Policy, user_agent
from .escape import LANG_TAG, is_safe_iri, sparql_literal
from .guard import (
    WIKIBASE_LABEL_SERVICE,
    GuardPolicy,
    QueryRefused,
    SparqlRows,
    SparqlTerm,
    check_query,
)
from .ids import IriIds
from .kg import SparqlKG
from .vocab import (
    DEFAULT_ALIASES,
    DEFAULT_DESCRIPTIONS,
    DEFAULT_LABELS,
    GenericProfile,
    WikidataProfile,
)

WDQS = "https://query.wikidata.org/sparql"
WIKIDATA_API = "https://www.wikidata.org/w/api.php"
WIKIDATA_BATCH = 50  # entity IDs per query on Wikidata (its query service's limits)
GENERIC_BATCH = 1000  # elsewhere: a frontier of 1,000 films is one round trip

__all__ = [
    "WDQS",
    "EndpointRegistry",
    "GuardPolicy",
    "IriIds",
    "QueryRefused",
    "SparqlKG",
    "SparqlOptions",
    "SparqlRows",
    "SparqlTerm",
    "check_query",
    "is_safe_iri",
    "open_sparql_kg",
    "sparql_literal",
]


class SparqlOptions(BaseModel):
    """Every option ``open_sparql_kg`` accepts. Times are seconds."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    user_agent_contact: str = Field(
        "contact not configured",
        max_length=200,
        description="Your e-mail or URL, sent in the User-Agent.",
    )
    user_agent: str | None = Field(
        None, max_length=400, description="Replace the whole User-Agent header."
    )
    timeout: float = Field(
        30.0, gt=0, le=600, description="Per request; must stay below 60 on the public WDQS."
    )
    retries: int = Field(2, ge=0, le=10)
    deadline: float | None = Field(
        None,
        gt=0,
        le=3600,
        description="The most one call may take, every retry and wait included (default: timeout). "
        "A stalled endpoint costs a caller this, not (retries + 1) × timeout.",
    )
    backoff: float = Field(0.5, ge=0, le=60)
    max_retry_after: float = Field(20.0, ge=0, le=3600)
    max_concurrent: int | None = Field(
        None, ge=1, le=64, description="Default 1 for the public WDQS, else 4."
    )
    breaker_failures: int = Field(5, ge=0, le=1000)
    breaker_cooldown: float = Field(30.0, ge=0, le=3600)
    timeout_param: str | None = Field(
        None,
        pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,63}(:(s|ms))?$",
        description="A query parameter through which the endpoint takes a time limit, as NAME "
        "(seconds) or NAME:ms — 'timeout:ms' (Virtuoso), 'timeout' (Fuseki), "
        "'maxQueryTimeMillis:ms' (Blazegraph). Each request then sends the time tot-mcp waits for "
        "it. Default: none (unknown parameters may be refused).",
    )
    languages: list[str] = Field(default_factory=lambda: ["en", "mul"])
    batch_size: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="Entity IDs per query in bulk reads. Default: 50 on Wikidata (its service's "
        "limits), 1000 on other endpoints (a frontier in one round trip).",
    )
    backward_scan: int = Field(20000, ge=1, le=10_000_000)
    label_search: Literal["contains", "exact"] = "contains"
    search_api: str | None = Field(
        "auto", description="'auto', a wbsearchentities URL, or None/'none' for SPARQL."
    )
    search_language: str | None = None
    description: str = ""
    prefixes: dict[str, str] = Field(default_factory=dict)
    label_predicates: list[str] | None = None
    description_predicates: list[str] | None = None
    alias_predicates: list[str] | None = None
    sparql_services: list[str] | None = Field(
        None,
        max_length=50,
        description="SERVICE IRIs a caller's sparql_query may use; default: wikibase:label "
        "on the public WDQS, none elsewhere.",
    )
    registry: EndpointRegistry | None = Field(
        None, description="Share limiters; default: process-wide."
    )
    transport: httpx.AsyncBaseTransport | None = Field(
        None, description="httpx transport (tests, proxies)."
    )


_GENERIC_ONLY = ("prefixes", "label_predicates", "description_predicates", "alias_predicates")
_POLICY_OPTIONS = (
    "timeout",
    "deadline",
    "retries",
    "backoff",
    "max_retry_after",
    "breaker_failures",
    "breaker_cooldown",
)


def open_sparql_kg(
    name: str, kind: str, target: str | None, limits: Limits | None = None, **options
) -> SparqlKG:
    """Configure (but do not contact) a SPARQL-backed KG. Raises InvalidInput for bad options."""
    opts = parse_options(SparqlOptions, options, f"KG {name!r}")
    return open_sparql(name, kind, target, limits, opts)


def open_sparql(
    name: str, kind: str, target: str | None, limits: Limits | None, opts: SparqlOptions
) -> SparqlKG:
    """:func:`open_sparql_kg` with its options already validated (what the backend registry
    calls)."""
    if kind not in ("wikidata", "sparql"):
        raise InvalidInput(f"SPARQL KG kind must be 'wikidata' or 'sparql', got {kind!r}")
    url = target or (WDQS if kind == "wikidata" else None)
    if url is None or not url.startswith(("http://", "https://")) or not is_safe_iri(url):
        raise InvalidInput(f"KG {name!r}: a SPARQL endpoint must be an http(s) URL, got {target!r}")
    public = url.rstrip("/") == WDQS
    if public and opts.timeout >= 60:
        raise InvalidInput(f"KG {name!r}: timeout must be below WDQS's 60 s limit")
    if kind == "wikidata":
        used = [k for k in _GENERIC_ONLY if getattr(opts, k)]
        if used:
            raise InvalidInput(
                f"KG {name!r}: {', '.join(used)} only apply to generic sparql: endpoints"
            )
        profile: WikidataProfile | GenericProfile = WikidataProfile(opts.languages)
    else:
        profile = GenericProfile(
            opts.languages,
            opts.prefixes,
            opts.label_predicates if opts.label_predicates is not None else DEFAULT_LABELS,
            opts.description_predicates
            if opts.description_predicates is not None
            else DEFAULT_DESCRIPTIONS,
            opts.alias_predicates if opts.alias_predicates is not None else DEFAULT_ALIASES,
        )
    timeout_param, _, timeout_unit = (opts.timeout_param or "").partition(":")
    policy = Policy(
        **{k: getattr(opts, k) for k in _POLICY_OPTIONS},
        max_concurrent=opts.max_concurrent or (1 if public else 4),
        timeout_param=timeout_param or None,
        timeout_unit=timeout_unit or "s",
        # Wikidata's traffic is remote and small next to its latency: it keeps the form WDQS
        # documents
        direct_post=kind != "wikidata",
    )
    if policy.timeout_param in ("query", "update", "default-graph-uri", "named-graph-uri"):
        raise InvalidInput(
            f"KG {name!r}: timeout_param cannot be the protocol's own {policy.timeout_param!r}"
        )
    registry = opts.registry or SHARED_ENDPOINTS
    ua = opts.user_agent or user_agent(opts.user_agent_contact)
    if any(ord(c) < 32 or ord(c) > 126 for c in ua):
        raise InvalidInput(f"KG {name!r}: the User-Agent must be printable ASCII")
    sparql = JsonEndpoint(
        registry.guard(url, policy),
        {"User-Agent": ua, "Accept": "application/sparql-results+json"},
        opts.transport,
    )
    api_url = opts.search_api
    if api_url in (None, "none", ""):
        api_url = None
    elif api_url == "auto":
        api_url = WIKIDATA_API if public else None
    elif kind != "wikidata":
        raise InvalidInput(
            f"KG {name!r}: search_api (wbsearchentities) only applies to wikidata KGs"
        )
    elif not api_url.startswith(("http://", "https://")) or not is_safe_iri(api_url):
        raise InvalidInput(f"KG {name!r}: search_api must be an http(s) URL, 'auto' or 'none'")
    if opts.search_language is not None and not LANG_TAG.match(opts.search_language):
        raise InvalidInput(
            f"KG {name!r}: search_language {opts.search_language!r} is not a language tag"
        )
    search_api = None
    if api_url is not None:
        api_policy = Policy(
            **{**policy.__dict__, "max_concurrent": opts.max_concurrent or 1, "timeout_param": None}
        )
        search_api = JsonEndpoint(
            registry.guard(api_url, api_policy),
            {"User-Agent": ua, "Accept": "application/json"},
            opts.transport,
        )
    services = opts.sparql_services
    if services is None:
        services = [WIKIBASE_LABEL_SERVICE] if public and kind == "wikidata" else []
    bad = [x for x in services if not isinstance(x, str) or not is_safe_iri(x)]
    if bad:
        raise InvalidInput(f"KG {name!r}: sparql_services must be absolute IRIs, got {bad[0]!r}")
    return SparqlKG(
        name,
        profile,
        sparql,
        search_api=search_api,
        search_language=opts.search_language or profile.langs[0],
        limits=limits,
        batch_size=opts.batch_size
        or (WIKIDATA_BATCH if profile.kind == "wikidata" else GENERIC_BATCH),
        backward_scan=opts.backward_scan,
        label_search=opts.label_search,
        description=opts.description,
        sparql_services=services,
    )


def _open(kind: str):
    return lambda name, target, limits, options: open_sparql(name, kind, target, limits, options)


SPARQL_BACKEND = Backend(
    kind="sparql",
    summary="any SPARQL 1.1 endpoint (sparql:URL)",
    target="url",
    options=SparqlOptions,
    open=_open("sparql"),
)
WIKIDATA_BACKEND = Backend(
    kind="wikidata",
    summary="the public Wikidata query service, or Wikidata-shaped data elsewhere (wikidata:URL)",
    target="url?",
    options=SparqlOptions,
    open=_open("wikidata"),
)
