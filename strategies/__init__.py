"""Retrieval and reasoning strategies over any :class:`kg_adapters.Graph`."""
