"""The one kind of extension point: a name bound to ``"module:attribute"``, imported on first use,
plus an entry-point group through which another distribution adds its own; and one way to validate
typed options.

KG backends (:mod:`kg_adapters.backends`), LLM backends (:mod:`strategies.llm.factory`) and
strategies (:mod:`strategies.registry`) are each one :class:`LazyRegistry`. Modelled on rdflib's
``plugin.register`` (a lazy ``"module:attribute"``, so an unused plugin's imports cost nothing) and
simonw/llm's plugins (entry points).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InvalidInput

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class LazyRegistry(Generic[T]):
    """Things by name. ``what`` names them in errors ("KG kind", "method"); ``name_of`` reads an
    object's own name, which must be the name it is registered under; ``group`` is the entry-point
    group read on the first miss."""

    def __init__(
        self,
        what: str,
        builtins: dict[str, str],
        group: str | None = None,
        name_of: Callable[[Any], str] = lambda obj: obj.name,
    ) -> None:
        self.what = what
        self.group = group
        self._name_of = name_of
        self._targets: dict[str, str] = dict(builtins)
        self._loaded: dict[str, T] = {}
        self._plugins_read = group is None

    def register(self, obj: T | str, name: str | None = None) -> None:
        """Add an object, or a lazy ``"module:attribute"`` under ``name``."""
        if isinstance(obj, str):
            if not name:
                raise ValueError("a lazy registration needs a name")
            self._targets[name] = obj
            self._loaded.pop(name, None)
        else:
            key = self._name_of(obj)
            self._loaded[key] = obj
            self._targets.setdefault(key, "")

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        for ep in entry_points(group=self.group or ""):
            self._targets.setdefault(ep.name, ep.value)

    def names(self) -> list[str]:
        self._read_plugins()
        return list(self._targets)

    def __contains__(self, name: str) -> bool:
        return name in self.names()

    def get(self, name: str) -> T:
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._targets:
            self._read_plugins()
        target = self._targets.get(name)
        if not target:
            raise InvalidInput(
                f"unknown {self.what} {name!r}; available: {', '.join(self.names())}"
            )
        module, _, attr = target.partition(":")
        obj = getattr(importlib.import_module(module), attr)
        if self._name_of(obj) != name:
            raise ValueError(
                f"{target} is registered as {name!r} but calls itself {self._name_of(obj)!r}"
            )
        self._loaded[name] = obj
        return obj

    def all(self) -> list[T]:
        return [self.get(n) for n in self.names()]


def parse_options(model: type[M], given: dict[str, Any] | None, where: str) -> M:
    """``given`` validated by ``model`` (``extra="forbid"``); a misspelt or ill-typed option is an
    InvalidInput naming it (and, for a misspelt one, the valid ones)."""
    try:
        return model.model_validate(given or {})
    except ValidationError as e:
        errs = "; ".join(
            f"unknown option {'.'.join(map(str, err['loc']))!r}{_nearest(err['loc'], model)}"
            if err["type"] == "extra_forbidden"
            else f"{'.'.join(map(str, err['loc'])) or 'options'}: {err['msg']}"
            for err in e.errors()
        )
        unknown = any(err["type"] == "extra_forbidden" for err in e.errors())
        valid = ", ".join(model.model_fields) or "none"
        raise InvalidInput(
            f"{where}: {errs}" + (f" (valid options: {valid})" if unknown else "")
        ) from None


def _nearest(loc: tuple, model: type[BaseModel]) -> str:
    """``; did you mean k?`` for a misspelt top-level option, else nothing."""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if len(loc) == 1 and close else ""
