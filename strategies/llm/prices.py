"""Estimated LLM cost: a small price table (USD per million tokens) per model ID, overridable from a
TOML file.

The defaults are list prices for the default Anthropic model and a few common ones, as published by
the providers at the time of writing (5-minute cache writes); prices change, so treat the estimate
as an estimate and pass ``tot-search --prices FILE`` to use your own::

    [models."claude-sonnet-5-5"]
    input = 2.0
    output = 10.0
    cache_write = 2.5
    cache_read = 0.2

``input`` and ``output`` are required per model; ``cache_write`` and ``cache_read`` default to
``input`` (no discount assumed). A model with no price gives ``None`` (shown as "?"), never an
error; a run that called no model (the offline policy) costs 0.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from .base import LLMUsage


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None

    def cost(self, usage: LLMUsage) -> float:
        write = self.input if self.cache_write is None else self.cache_write
        read = self.input if self.cache_read is None else self.cache_read
        uncached = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
        return (
            uncached * self.input
            + usage.cache_write_tokens * write
            + usage.cache_read_tokens * read
            + usage.output_tokens * self.output
        ) / 1_000_000


def _p(input: float, output: float, cache_write: float, cache_read: float) -> ModelPrice:
    return ModelPrice(input=input, output=output, cache_write=cache_write, cache_read=cache_read)


#: Model ID → price. Anthropic: input / output / 5-minute cache write / cache read. OpenAI: cache
#: writes are not billed separately (cache_write = input), cached input is discounted.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-sonnet-5-5": _p(2.0, 10.0, 2.5, 0.2),
    "claude-sonnet-5": _p(2.0, 10.0, 2.5, 0.2),
    "claude-opus-5": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-8": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-7": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-6": _p(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-5": _p(5.0, 25.0, 6.25, 0.5),
    "claude-sonnet-4-6": _p(3.0, 15.0, 3.75, 0.3),
    "claude-sonnet-4-5": _p(3.0, 15.0, 3.75, 0.3),
    "claude-haiku-4-5": _p(1.0, 5.0, 1.25, 0.1),
    "gpt-4o": _p(2.5, 10.0, 2.5, 1.25),
    "gpt-4o-mini": _p(0.15, 0.6, 0.15, 0.075),
    "gpt-4.1": _p(2.0, 8.0, 2.0, 0.5),
    "gpt-4.1-mini": _p(0.4, 1.6, 0.4, 0.1),
}

_DATED = re.compile(r"-\d{8}$")  # claude-haiku-4-5-20251001 → claude-haiku-4-5


class PricesError(ValueError):
    """The --prices file cannot be read or is not a price table."""


def load_prices(path: Path | str) -> dict[str, ModelPrice]:
    """The default table updated with the ``[models."ID"]`` tables of the TOML file at ``path``."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise PricesError(f"--prices {path}: cannot read ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise PricesError(f"--prices {path}: not valid TOML ({e})") from None
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise PricesError(
            f'--prices {path}: no [models."MODEL-ID"] tables (with input, output, cache_write, '
            "cache_read in USD per million tokens)"
        )
    prices = dict(DEFAULT_PRICES)
    for model, entry in models.items():
        try:
            prices[model] = ModelPrice.model_validate(entry)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(map(str, err['loc'])) or 'entry'}: {err['msg']}" for err in e.errors()
            )
            raise PricesError(f"--prices {path}: model {model!r}: {problems}") from None
        if any(v is not None and v < 0 for v in prices[model].model_dump().values()):
            raise PricesError(f"--prices {path}: model {model!r}: prices must not be negative")
    return prices


def price_for(model: str, prices: dict[str, ModelPrice] | None = None) -> ModelPrice | None:
    table = DEFAULT_PRICES if prices is None else prices
    if not model:
        return None
    return table.get(model) or table.get(_DATED.sub("", model))


def cost_usd(usage: LLMUsage, prices: dict[str, ModelPrice] | None = None) -> float | None:
    """Estimated USD for ``usage``: 0 when no model was called, None when the model has no price."""
    if usage.calls == 0 and usage.input_tokens == 0 and usage.output_tokens == 0:
        return 0.0
    price = price_for(usage.model, prices)
    return None if price is None else price.cost(usage)


def format_cost(value: float | None) -> str:
    if value is None:
        return "?"
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"
