"""The tot-mcp MCP server: maps MCP tools, resources and prompts onto the KG adapters and
strategies.

Public API: ``Runtime`` (KGs + shared services), ``build_server(runtime) -> MCPServer``,
``server.cli.main``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tot-mcp")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
