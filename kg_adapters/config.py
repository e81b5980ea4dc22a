"""The graph part of the ``--config`` TOML: which KGs to open (``[kg.NAME]``, ``[kgs]``, with
backend options), how they link (``[[link]]``, ``[linking]``) and the limits of every call
(``[limits]``); and opening them. The whole file (server, LLM, retrieval settings too) is read by
:mod:`strategies.settings`; every key is in docs/configuration.md.

Relative paths in ``spec`` and ``store`` are resolved against the config file's directory. When
several KGs are served they are linked (:mod:`kg_adapters.sameness`): by the ``[[link]]`` rules if
there are any, else by label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from .base import KnowledgeGraph, Limits
from .cache import DEFAULT_CACHE_TTL, ResultCache
from .graph import Graph, graphs
from .sameness import LinkingConfig, LinkRule
from .embedded import DEFAULT_KG_NAME
from .errors import InvalidInput
from .models import KG_NAME_RE
from .spec import KGSpec, make_spec, open_backend

_PATH_OPTIONS = ("store",)
# [kg.NAME] sparql_query (KGConfig), handed to open_kgs among the backend's options
SPARQL_QUERY_KEY = "sparql_query"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KGConfig(_Strict):
    """One ``[kg.NAME]`` table: ``spec`` plus backend options passed through to the opener."""

    model_config = ConfigDict(extra="allow", frozen=True)
    spec: str = Field(
        description="What to open: a path to an RDF or triples file, 'embedded', "
        "'wikidata', 'wikidata:URL', 'sparql:URL' or 'store:PATH' "
        "(docs/local-and-linked-kgs.md)."
    )
    sparql_query: StrictBool = Field(
        default=True,
        description="false: no caller-written SPARQL on this KG (the guarded "
        "sparql_query tool is on wherever the backend answers SPARQL).",
    )

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class LimitsConfig(_Strict):
    """``[limits]``: caps that keep every tool result bounded (``--max-*`` flags win over them)."""

    max_ids: int = Field(default=Limits.max_ids, ge=1, description="Entity IDs per call.")
    max_relations: int = Field(
        default=Limits.max_relations, ge=1, description="Relations per get_relations result."
    )
    max_edges: int = Field(default=Limits.max_edges, ge=1, description="Edges per get_edges page.")
    max_search: int = Field(
        default=Limits.max_search,
        ge=1,
        description="Entities per initialize / search_entities result.",
    )
    max_query_chars: int = Field(
        default=Limits.max_query_chars, ge=1, description="Characters in a query or question."
    )

    def to_limits(self) -> Limits:
        return Limits(**self.model_dump())


class GraphConfig(_Strict):
    """The tables about graphs; :class:`strategies.settings.Config` adds the rest of the file."""

    kg: dict[str, KGConfig] = Field(
        default_factory=dict, description="[kg.NAME]: one KG, its spec and backend options."
    )
    kgs: dict[str, str] = Field(
        default_factory=dict, description='Shorthand: NAME = "SPEC", one KG per line, no options.'
    )
    link: list[LinkRule] = Field(
        default_factory=list, description="[[link]]: how entities of one KG are found in another."
    )
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    linking: LinkingConfig = Field(default_factory=LinkingConfig)
    base_dir: Path | None = Field(default=None, exclude=True)

    @field_validator("kg", "kgs")
    @classmethod
    def _names(cls, v: dict) -> dict:
        for name in v:
            if not KG_NAME_RE.match(name):
                raise ValueError(
                    f"KG name {name!r}: use a letter then letters, digits, '_' or '-' (max 32)"
                )
        return v

    def specs(self) -> list[tuple[KGSpec, dict[str, Any]]]:
        """Every configured KG as (spec, options), paths resolved against the config's directory."""
        out = []
        for name in self.kgs:
            if name in self.kg:
                raise InvalidInput(f"KG {name!r} is configured twice ([kgs] and [kg.{name}])")
        entries = [(n, KGConfig(spec=s)) for n, s in self.kgs.items()] + list(self.kg.items())
        for name, entry in entries:
            opts = entry.options
            if not entry.sparql_query:
                opts[SPARQL_QUERY_KEY] = False
            for key in _PATH_OPTIONS:
                if isinstance(opts.get(key), str) and opts[key] != "memory":
                    opts[key] = str(self._path(opts[key]))
            out.append((make_spec(name, entry.spec, self.base_dir), opts))
        return out

    def _path(self, p: str) -> Path:
        path = Path(p).expanduser()
        return path if path.is_absolute() or self.base_dir is None else self.base_dir / path


def served_kgs(
    specs: Sequence[KGSpec] = (), config: GraphConfig | None = None
) -> dict[str, tuple[KGSpec, dict[str, Any]]]:
    """The KGs a system serves, by name, with their options: the config's, then ``specs``
    (``--kg``), each replacing the config's KG of its name, options and all; with neither, the
    embedded movie KG. Opening the KGs and stamping their content both start here, so the two never
    disagree on which KGs those are."""
    names = [s.name for s in specs]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidInput(f"KG name {duplicated[0]!r} is given twice")
    configured = (config or GraphConfig()).specs()
    wanted: dict[str, tuple[KGSpec, dict[str, Any]]] = {s.name: (s, o) for s, o in configured}
    wanted.update((s.name, (s, {})) for s in specs)
    if not wanted:
        wanted[DEFAULT_KG_NAME] = (make_spec(DEFAULT_KG_NAME, "embedded"), {})
    return wanted


def open_kgs(
    specs: Sequence[KGSpec] | None = None,
    config: GraphConfig | None = None,
    limits: Limits | None = None,
    *,
    cache_weight: int = 0,
    cache_ttl: float = DEFAULT_CACHE_TTL,
) -> dict[str, Graph]:
    """Open the KGs :func:`served_kgs` names, with a result cache of ``cache_weight`` in front of
    those that do I/O (0: none). Opened in order; if one fails, the error propagates and nothing
    after it is opened."""
    config = config or GraphConfig()
    limits = limits or config.limits.to_limits()
    kgs: dict[str, KnowledgeGraph] = {}
    for name, (spec, opts) in served_kgs(specs or (), config).items():
        opts = dict(opts)
        sparql_on = opts.pop(SPARQL_QUERY_KEY, True)  # a StrictBool, checked by KGConfig
        kgs[name] = open_backend(spec, limits, **opts)
        if not sparql_on and kgs[name].capabilities.sparql:  # the backend could; the config says no
            kgs[name].capabilities = replace(kgs[name].capabilities, sparql=False)
    return graphs(kgs, ResultCache(cache_weight, cache_ttl) if cache_weight > 0 else None)
