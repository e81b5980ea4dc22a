"""The environment variables tot-mcp reads — read in this module and nowhere else.

Precedence, for every setting that has a variable: command-line flags > the ``--config`` TOML > the
variable > the built-in default. So the environment is consulted last, by the composition root
(:mod:`strategies.system`, ``tot-mcp``'s and ``tot-search``'s command lines, the LLM factory), which
hands the values down; the parts themselves take explicit arguments. A part built by hand (a test, a
benchmark) that is not given a value falls back to :meth:`Environment.read`, so a variable means the
same wherever it is set.

An empty variable counts as unset: an MCP bundle's manifest passes every setting the user left blank
as "".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: the sentence embedder, ``minilm-int8`` or ``minilm`` (``[retrieval] embedder`` wins)
EMBEDDER = "TOT_MCP_EMBEDDER"
#: the torch embedder's bulk backend, ``minilm`` or ``minilm-int8``
BULK_EMBEDDER = "TOT_MCP_BULK_EMBEDDER"
#: the on-disk cache: retrieval indexes, result handles, stores of large files (``[retrieval]
#: cache_dir`` wins)
CACHE_DIR = "TOT_MCP_CACHE_DIR"
#: a local CrossEncoder directory for rerank's second stage (``[retrieval] cross_encoder_path``
#: wins)
CROSS_ENCODER = "TOT_MCP_CROSS_ENCODER"
#: the HTTP bearer token (``--token`` wins; ``[server] token_env`` names a variable tried after it)
TOKEN = "TOT_MCP_TOKEN"


@dataclass(frozen=True)
class Environment:
    """A snapshot of the variables, interpreted. Tests build one from a dict instead of patching
    ``os.environ``."""

    variables: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls) -> Environment:
        return cls(dict(os.environ))

    def get(self, name: str | None) -> str | None:
        """The variable's value, None when it is unset or empty."""
        return (self.variables.get(name) or None) if name else None

    def _word(self, name: str) -> str | None:
        return (self.get(name) or "").strip() or None

    @property
    def embedder(self) -> str | None:
        return self._word(EMBEDDER)

    @property
    def bulk_embedder(self) -> str | None:
        return self._word(BULK_EMBEDDER)

    @property
    def cross_encoder_path(self) -> str | None:
        return self.get(CROSS_ENCODER)

    @property
    def cache_dir(self) -> Path:
        """``$TOT_MCP_CACHE_DIR``, else ``$XDG_CACHE_HOME/tot-mcp``, else ``~/.cache/tot-mcp``: the
        one cache directory (indexes, handles, and under ``stores/`` the stores of files too large
        for memory)."""
        explicit = self.get(CACHE_DIR)
        if explicit:
            return Path(explicit).expanduser()
        return Path(self.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "tot-mcp"

    def token(self, named: str | None = None) -> str | None:
        """``$TOT_MCP_TOKEN``, else the variable ``named`` (the config's ``[server] token_env``)."""
        return self.get(TOKEN) or self.get(named)

    def options(self, variables: Mapping[str, str]) -> dict[str, str]:
        """``{option: value}`` for each ``{option: variable}`` that is set (an LLM backend's key,
        model, URL)."""
        return {
            option: value
            for option, name in variables.items()
            if (value := self.get(name)) is not None
        }
