"""Pluggable LLM access: Anthropic API, OpenAI-compatible servers, the MCP client's own model
(sampling), scripted fakes for tests."""

from .base import LLM, LLMError, LLMUsage

__all__ = ["LLM", "LLMError", "LLMUsage"]
