"""An LLM that replays scripted responses: deterministic tests of prompt parsing and search without
a model."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .base import LLM, LLMBackend, LLMError, LLMOptions

Responder = Callable[[str], str]


class ScriptedLLM(LLM):
    """Answers with the next scripted response, or with ``responder(prompt)`` when given a function.

    Every prompt is kept in ``prompts`` so a test can check what the model was shown. Running out of
    responses raises :class:`LLMError` (as a failed API call would), so a test never hangs or
    silently repeats itself. Token usage is approximated as whitespace-separated words.
    """

    name = "scripted"

    def __init__(self, responses: Iterable[str] | Responder = ()) -> None:
        super().__init__()
        self._responder: Responder | None = responses if callable(responses) else None
        self._queue: list[str] = [] if callable(responses) else list(responses)
        self.prompts: list[str] = []
        self.systems: list[str | None] = []

    async def complete(
        self, prompt, *, system=None, max_tokens=512, temperature=0.7, stop=None
    ) -> str:
        self.prompts.append(prompt)
        self.systems.append(system)
        if self._responder is not None:
            text = self._responder(prompt)
        elif self._queue:
            text = self._queue.pop(0)
        else:
            raise LLMError("ScriptedLLM ran out of responses")
        self.usage.calls += 1
        self.usage.input_tokens += len(prompt.split()) + len((system or "").split())
        self.usage.output_tokens += len(text.split())
        return text


class ScriptedOptions(LLMOptions):
    responses: list[str] = []


BACKEND = LLMBackend(
    kind="scripted",
    summary="replays scripted responses (demos and tests)",
    options=ScriptedOptions,
    create=lambda o, ctx: ScriptedLLM(list(o.responses)),
)
