"""The strategies layer as plugins: one registry names every strategy, its typed options, what it
needs and how it runs; tot-search and the MCP tools are generated from it; a new strategy is one
module plus one line."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from tot_mcp.kg_adapters.errors import InvalidInput
from retrieval_fixtures import make_kg, shared_embedder
from tot_mcp.strategies.methods import BenchmarkQuestion, MethodOptions, make_method
from tot_mcp.strategies.registry import REGISTRY, Call, Registry, Strategy, available, get
from tot_mcp.strategies.results import RetrievedEntity, StrategyResult
from tot_mcp.strategies.services import Services


def test_every_registered_strategy_loads_under_its_own_name_with_strict_options():
    names = available()
    assert {"tot", "chain", "router", "ark", "bfs", "dfs", "beam", "rerank", "initialize"} <= set(
        names
    )
    tools = [s.tool for s in REGISTRY.all() if s.tool]
    assert len(tools) == len(set(tools))
    for s in REGISTRY.all():
        assert (
            s.name in names and s.summary and s.job in ("answer", "context", "ranking", "linking")
        )
        assert s.options.model_config.get("extra") == "forbid", s.name
        s.parse_options({})  # every option has a default
        with pytest.raises(InvalidInput, match="valid options"):
            s.parse_options({"no_such_option": 1})


def test_every_index_a_strategy_needs_is_registered_like_a_strategy():
    """Indexes are one registry (name → "module:attribute", entry points ``tot_mcp.indexes``):
    services load and build what a strategy names in ``needs`` through it, with no branch per index
    name."""
    from tot_mcp.strategies.indexes import INDEXES

    assert set(INDEXES.names()) >= {"bm25", "relevance", "dense", "static", "hierarchy"}
    for s in REGISTRY.all():
        for need in s.needs:
            kind = INDEXES.get(need)
            assert kind.name == need and (kind.cheap or kind.build is not None), need
    with pytest.raises(InvalidInput, match="unknown index 'nosuch'; available: bm25"):
        INDEXES.get("nosuch")


def test_an_unknown_strategy_names_the_available_ones():
    with pytest.raises(InvalidInput, match="unknown method 'nope'; available: tot, chain"):
        get("nope")


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    times: int = 1


async def _echo(call: Call) -> StrategyResult:
    matches = await call.kg.initialize(call.query, limit=1)
    results = [
        RetrievedEntity(id=m.entity.id, label=m.entity.label, score=1.0, source="echo")
        for m in matches
    ]
    return StrategyResult(
        query=call.query, kg=call.kg.name, results=results * call.options.times, answer_text="echo"
    )


async def test_a_new_strategy_is_one_object_and_one_registration(tmp_path):
    registry = Registry(builtins={})
    registry.register(
        Strategy(
            name="echo",
            job="answer",
            options=EchoOptions,
            run=_echo,
            local_only=False,
            summary="Names the question's entity.",
        )
    )
    assert registry.names() == ["echo"]
    kg = make_kg(tmp_path)
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    s = registry.get("echo")
    out = await s.run(
        Call(
            services=services,
            kg=kg,
            query="who directed [Night Harbor]",
            options=s.parse_options({"times": 2}),
        )
    )
    assert [r.label for r in out.results] == ["Night Harbor", "Night Harbor"]


def test_a_strategy_hands_a_question_on_with_the_callers_kg_scope_and_progress(tmp_path):
    """The router and plan's fallback run another strategy through Call.as_strategy: the caller's
    KG, scope (the linked KGs a walk may cross), question and progress stay; the options and needs
    are the other strategy's."""
    kg = make_kg(tmp_path)
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    progress = object()
    call = Call(
        services=services,
        kg=kg,
        scope=kg,
        query="who directed [Night Harbor]",
        progress=progress,
        options=get("router").parse_options({}),
        method="router",
        build=False,
    )
    chain = get("chain")
    sub = call.as_strategy(chain)
    assert (sub.kg, sub.scope, sub.query, sub.progress, sub.build) == (
        kg,
        kg,
        call.query,
        progress,
        False,
    )
    assert (sub.method, sub.needs, sub.options) == ("chain", chain.needs, services.options(chain))
    assert call.method == "router"  # the caller's own call is left as it was


async def test_a_registered_strategy_runs_as_a_tot_search_method(tmp_path, monkeypatch):
    kg = make_kg(tmp_path)
    monkeypatch.setitem(REGISTRY._targets, "echo", "")
    monkeypatch.setitem(
        REGISTRY._loaded,
        "echo",
        Strategy(
            name="echo",
            job="answer",
            options=EchoOptions,
            run=_echo,
            local_only=False,
            summary="echo",
        ),
    )
    services = Services([kg], embedder_factory=shared_embedder, cache_dir=tmp_path / "c")
    method = make_method("echo", MethodOptions(options={"times": 1}), services)
    result = await method(BenchmarkQuestion(id="1", text="who directed [Night Harbor]"), kg)
    assert (
        result.answer_labels == ["Night Harbor"]
        and result.answer_text == "echo"
        and result.error is None
    )
    with pytest.raises(InvalidInput, match="times"):
        make_method("echo", MethodOptions(options={"time": 1}), services)


def test_the_layers_import_straight_down_without_cycles_even_inside_functions():
    """server → strategies → kg_adapters, never up, and no module imports itself back through others
    — counting imports inside functions too (a lazy import hides a cycle, it does not remove it);
    TYPE_CHECKING blocks aside. The cycle judges → retrieval_common → router → judges, and rdf_file
    → oxigraph_store → files → rdf_file, are gone for good."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    packages = ("strategies", "kg_adapters", "server", "prompts")
    modules: dict[str, Path] = {}
    for pkg in packages:
        for path in (root / pkg).rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            modules[name] = path

    def known(dotted: str) -> str | None:
        """The project module an import names (``tot_mcp.kg_adapters.x.y`` → ``kg_adapters.x``)."""
        dotted = dotted.removeprefix("tot_mcp.")
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(sub)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for sub in ast.walk(node)
        }
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str | None] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                deps |= {known(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                base = base.removeprefix("tot_mcp.")
                # ``from pkg import mod`` needs mod (pkg is already importing); ``from mod import
                # name`` needs mod
                subs = {f"{base}.{a.name}" for a in node.names} & set(modules)
                deps |= subs if len(subs) == len(node.names) else {known(base)} | subs
        graph[name] = {d for d in deps if d is not None and d != name}

    rank = {"kg_adapters": 0, "prompts": 0, "strategies": 1, "server": 2}
    upward = [
        f"{n} → {d}"
        for n, ds in graph.items()
        for d in ds
        if rank[d.split(".")[0]] > rank[n.split(".")[0]]
    ]
    assert not upward, "imports going up a layer: " + "; ".join(sorted(upward))
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        seen[n] = 1
        stack.append(n)
        for d in sorted(graph[n]):
            if seen.get(d) == 1:
                cycle = stack[stack.index(d) :] + [d]
                pytest.fail("import cycle: " + " → ".join(cycle))
            if d not in seen:
                visit(d)
        stack.pop()
        seen[n] = 2

    for n in sorted(graph):
        if n not in seen:
            visit(n)
