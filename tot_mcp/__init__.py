"""tot-mcp: Tree-of-Traversals knowledge-graph tools over MCP.

The installed distribution imports under this one package — ``tot_mcp.server``,
``tot_mcp.kg_adapters``, ``tot_mcp.strategies``, ``tot_mcp.prompts`` — so it cannot collide with any
other distribution's ``server`` or ``prompts``. In the repository those packages stay at the root
(``server/``, ``kg_adapters/``, ``strategies/``, ``prompts/``); ``pyproject.toml`` maps them here
(``[tool.setuptools.package-dir]``), for wheels and editable installs alike.
"""
