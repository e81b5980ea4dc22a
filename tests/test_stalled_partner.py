"""A stalled endpoint harms only itself (#36, item 5): beside a KG whose endpoint accepts requests
and never answers, a healthy KG label-linked to it answers ``get_relations``, ``initialize(kg=…)``
and ``list_kgs`` within 5 s each (they took 91.7 s, 91.7 s and 183 s), naming the KG that did not
answer. The real server over stdio, default ``[linking] wait``; the endpoint is a scripted loopback
server (``tests/sparql_fault_server.py``)."""

from __future__ import annotations

import time

import pytest
from mcp_client import stdio_session
from net_helpers import FIXTURES
from sparql_fault_server import FaultServer, Reply

#: the target of #36; the default [linking] wait is 3 s
BOUND = 5.0


@pytest.fixture
def stalled():
    with FaultServer() as s:
        s.default = Reply(delay=60)  # reads the request, answers nothing for a minute
        yield s


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_a_healthy_kg_answers_within_5_s_beside_a_stalled_linked_one(stalled, tmp_path):
    config = tmp_path / "tot.toml"
    config.write_text(
        f'[kg.good]\nspec = "{FIXTURES / "linked_wd.ttl"}"\nbackend = "memory"\n\n'
        # default timeout 30 s, 2 retries
        f'[kg.bad]\nspec = "sparql:{stalled.url}"\nsearch_api = "none"\n',
        encoding="utf-8",
    )
    async with stdio_session(["--config", str(config)]) as session:
        started = time.monotonic()
        linked = await session.call_tool("initialize", {"query": "[Michael Jackson]", "kg": "good"})
        took = time.monotonic() - started
        assert not linked.is_error, text_of(linked)
        assert took < BOUND, f"initialize(kg='good') took {took:.1f} s"
        entity = linked.structured_content["entities"][0]["entity"]["id"]
        assert entity.startswith("good:")

        started = time.monotonic()
        rels = await session.call_tool("get_relations", {"entity_ids": [entity]})
        took = time.monotonic() - started
        assert not rels.is_error and rels.structured_content["relations"], text_of(rels)
        assert took < BOUND, f"get_relations took {took:.1f} s"
        assert rels.structured_content["partial"]
        warnings = rels.structured_content["warnings"]
        assert any("KG 'bad' did not answer within 3 s" in w for w in warnings)
        # a KG that did not answer lately is not waited for again at once
        started = time.monotonic()
        again = await session.call_tool("get_relations", {"entity_ids": [entity]})
        assert time.monotonic() - started < 1.0 and again.structured_content["partial"]

        started = time.monotonic()
        kgs = await session.call_tool("list_kgs", {})
        took = time.monotonic() - started
        assert not kgs.is_error, text_of(kgs)
        assert took < BOUND, f"list_kgs took {took:.1f} s"
        assert [k["name"] for k in kgs.structured_content["kgs"]] == ["good"]
        assert "KG 'bad' did not answer within 3 s" in text_of(kgs)

        started = time.monotonic()
        both = await session.call_tool("initialize", {"query": "[Michael Jackson]"})
        took = time.monotonic() - started
        assert not both.is_error and both.structured_content["entities"], text_of(both)
        assert took < BOUND, f"initialize over both KGs took {took:.1f} s"
        assert "bad" in text_of(both)
