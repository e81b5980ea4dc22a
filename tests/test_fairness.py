"""Per-client fairness (issue #25): one client's flood of tool calls cannot make another client's
call wait for all of them. Through the real ``tot-mcp --transport http`` process and the SDK's HTTP
client, against a scripted loopback SPARQL endpoint with one slot
(``tests/sparql_fault_server.py``)."""

from __future__ import annotations

import asyncio

from mcp_client import http_server, http_session, text_of
from sparql_fault_server import FaultServer, Reply
from tot_mcp.kg_adapters.clients import FairSlots


def _config(tmp_path, url: str, per_client: int) -> str:
    config = tmp_path / "tot.toml"
    config.write_text(
        f"[server]\nmax_calls_per_client = {per_client}\n\n[kg.wd]\nspec = "
        f'"wikidata:{url}"\nmax_concurrent = 1\n'
        'label_search = "exact"\nsearch_api = "none"\nretries = 0\ntimeout = 10\n',
        encoding="utf-8",
    )
    return str(config)


async def test_a_flooding_client_delays_another_clients_call_by_at_most_one_of_its_own(tmp_path):
    """Client A has 6 slow lookups queued for the endpoint's one slot (a 7th is refused: 6 per
    client); client B's single lookup goes out right after the one A has at the endpoint, not after
    all six."""
    with FaultServer() as endpoint:
        endpoint.default = Reply(delay=0.3)
        async with http_server(["--config", _config(tmp_path, endpoint.url, 6)]) as url:
            async with http_session(url) as a, http_session(url) as b:
                flood = [
                    asyncio.create_task(
                        a.call_tool("search_entities", {"text": f"Alpha{i}", "kg": "wd"})
                    )
                    for i in range(7)
                ]
                while (
                    len(endpoint.seen) < 1
                ):  # A's first lookup is at the endpoint, the rest queue behind it
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.1)
                mine = await b.call_tool("search_entities", {"text": "Bravo", "kg": "wd"})
                flooded = await asyncio.gather(*flood)
    order = ["B" if "Bravo" in s.params.get("query", "") else "A" for s in endpoint.seen]
    assert not mine.is_error, text_of(mine)
    assert order.index("B") == 1, order  # after the one A call already at the endpoint
    refused = [text_of(r) for r in flooded if r.is_error]
    assert (
        len(refused) == 1 and "too many calls in flight" in refused[0] and "\n" not in refused[0]
    ), refused
    assert order.count("A") == 6


async def test_fair_slots_serve_the_least_recently_served_client_and_survive_cancellation():
    slots = FairSlots(1)
    served: list[str] = []

    async def call(client: str, hold: float = 0.01) -> None:
        async with slots.slot(client):
            served.append(client)
            await asyncio.sleep(hold)

    first = asyncio.create_task(call("a", 0.05))
    await asyncio.sleep(0)
    queued = [asyncio.create_task(call("a")) for _ in range(3)]
    gone = asyncio.create_task(call("c"))  # waits, then gives up: its place must not be lost
    await asyncio.sleep(0)
    b = asyncio.create_task(call("b"))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.gather(first, b, *queued)
    assert served == ["a", "b", "a", "a", "a"]
    assert slots.free == 1 and not slots._waiting and not slots._holding and not slots._served
