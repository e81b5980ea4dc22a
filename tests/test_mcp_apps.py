"""The search tree where the user is: ``tree_of_traversals`` through MCP Apps, checked in a real
browser.

One ``tot-mcp --transport http`` process (the small movie KG of the retrieval tests) and two SDK
client sessions: one that declares MCP Apps support (2025 era) and one that does not (2026 era).
What they fetched is written to the test's tmp dir; the browser tests load it in headless Chromium
(Debian's ``chromium``; they skip, saying so, when there is none): a run's page on its own, and the
app inside a small fake host that speaks the Apps ``postMessage`` protocol (``ui/initialize``,
``ui/notifications/tool-result``, proxied ``resources/read``) the way Claude or VS Code do.
Screenshots land in the tmp dir next to the pages.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import anyio
import pytest
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared.exceptions import MCPError
from mcp_client import http_session, run_http_server, text_of
from retrieval_fixtures import TRIPLES

from tot_mcp.server.tree_view import APP_URI, META_KEY

QUESTION = "which films did [Eli Park] direct"
TOT_ARGS = {"query": QUESTION, "llm": "offline", "k": 2}
APPS_CLIENT = {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}
RUN_URI = re.compile(r"^ui://tot-mcp/search-tree\?run=t[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict:
    """Everything the tests look at, fetched once through the real MCP client and saved as files."""
    tmp = tmp_path_factory.mktemp("apps")
    kb = tmp / "mini_kb.txt"
    kb.write_text(TRIPLES, encoding="utf-8")
    out: dict = {"dir": tmp}

    async def fetch(url: str) -> None:
        async with http_session(url, era="legacy", client_extensions=APPS_CLIENT) as s:
            out["tool"] = next(
                t for t in (await s.list_tools()).tools if t.name == "tree_of_traversals"
            )
            out["result"] = await s.call_tool("tree_of_traversals", TOT_ARGS)
            out["page"] = (
                await s.read_resource(out["result"].structured_content["view"])
            ).contents[0]
            out["app"] = (await s.read_resource(APP_URI)).contents[0]
            out["resources"] = [str(r.uri) for r in (await s.list_resources()).resources]
            out["templates"] = [
                t.uri_template for t in (await s.list_resource_templates()).resource_templates
            ]
            out["errors"] = {}
            for run in ("t000000000000", "nope"):
                try:
                    await s.read_resource(f"{APP_URI}?run={run}")
                except MCPError as e:
                    out["errors"][run] = str(e)
        async with http_session(url, era="modern") as s:  # declares no MCP Apps support
            out["modern_capabilities"] = s.server_capabilities
            out["plain_result"] = await s.call_tool("tree_of_traversals", TOT_ARGS)

    with run_http_server(
        ["--kg", f"mini={kb}"], env={"TOT_MCP_CACHE_DIR": str(tmp / "cache")}, startup_timeout=90.0
    ) as url:
        anyio.run(fetch, url)
    (tmp / "tree.html").write_text(out["page"].text, encoding="utf-8")
    (tmp / "app.html").write_text(out["app"].text, encoding="utf-8")
    return out


# -- through the MCP client ------------------------------------------------------------------------
def test_the_tool_declares_the_app_and_the_app_is_a_ui_resource(served):
    assert served["tool"].meta["ui"] == {"resourceUri": APP_URI}
    assert served["app"].mime_type == APP_MIME_TYPE and served["app"].meta == {
        "ui": {"prefersBorder": True}
    }
    assert (
        "ui/initialize" in served["app"].text
        and "Waiting for a tree_of_traversals result" in served["app"].text
    )
    assert served["resources"] == [
        "kg://mini",
        APP_URI,
    ]  # the app is listed, so hosts can prefetch it (issue #24)
    assert APP_URI + "{?run}" in served["templates"]  # beside kg://{kg}/entity/{id}
    assert EXTENSION_ID in (
        served["modern_capabilities"].extensions or {}
    )  # 2026 era: extensions are advertised


def test_each_result_points_at_its_own_drawn_tree(served):
    result, data = served["result"], served["result"].structured_content
    assert not result.is_error
    assert {it["label"] for it in data["items"]} == {"Iron Orchard", "Glass Rivers"}
    assert RUN_URI.match(data["view"])
    entry = result.meta[META_KEY]
    assert (
        entry["uri"] == data["view"] and entry["html"] in served["page"].text
    )  # the drawing, for Apps clients
    assert served["page"].mime_type == APP_MIME_TYPE
    assert data["view"] in text_of(result)  # clients without Apps are told where the drawing is
    plain = served["plain_result"]
    assert plain.meta[META_KEY] == {
        "uri": plain.structured_content["view"]
    }  # no drawing for a non-Apps client


def test_an_unknown_or_malformed_run_is_one_clear_error(served):
    unknown, malformed = served["errors"]["t000000000000"], served["errors"]["nope"]
    assert (
        "search tree t000000000000 is unknown here" in unknown
        and "run tree_of_traversals again" in unknown
    )
    assert "not a search-tree ID" in malformed
    assert "\n" not in unknown + malformed


# -- in a real browser -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium() -> str:
    """The browser, or a skip that says why (asked for before ``served``, so a machine without one
    skips at once)."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    pytest.skip(
        "no chromium binary on PATH (Debian: apt-get install -y chromium): the browser checks did "
        "not run"
    )


def _browse(chromium: str, page: Path, *extra: str) -> str:
    """Run headless Chromium on ``page`` (scripts get 5 s of virtual time) and return its stdout."""
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={page.parent / 'chromium-profile'}",
        "--virtual-time-budget=5000",
        *extra,
        page.as_uri(),
    ]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _screenshot(chromium: str, page: Path, png: Path) -> None:
    _browse(chromium, page, "--window-size=900,460", f"--screenshot={png}")
    _assert_drawn_png(png)


class _Nodes(HTMLParser):
    """Counts the tree's drawn nodes (``span.node``) and those on the chosen path
    (``span.node.path``)."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes = self.path = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if "node" in classes:
            self.nodes += 1
            self.path += "path" in classes

    def handle_data(self, data):
        self.text.append(data)


def _assert_drawn_png(png: Path) -> None:
    """A real PNG whose pixels are not all one colour (something was drawn)."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (900, 460)
    idat, pos = b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    assert (
        len(set(raw[: len(raw) // 2])) > 16
    )  # many distinct byte values: text and colours, not a blank page


def test_a_runs_page_draws_every_node_and_the_chosen_path_in_a_browser(chromium, served):
    page = served["dir"] / "tree.html"
    dom = _browse(chromium, page, "--dump-dom")
    parsed = _Nodes()
    parsed.feed(dom)
    data = served["result"].structured_content
    assert parsed.nodes == len(data["nodes"]) >= 3
    assert parsed.path == len(data["path"]) >= 2
    text = " ".join(parsed.text)
    assert QUESTION in text and "Iron Orchard" in text and "Glass Rivers" in text
    _screenshot(chromium, page, served["dir"] / "tree.png")


def _host_page(served: dict, *, embedded: bool) -> Path:
    """A minimal MCP Apps host: renders the app in a sandboxed iframe, answers ui/initialize, sends
    the tool input and result, proxies resources/read to what the MCP client read, and writes what
    the app drew into #report."""
    result = served["result"].model_dump(mode="json", by_alias=True, exclude_none=True)
    if not embedded:
        result["_meta"][META_KEY].pop("html")
    pages = {served["result"].structured_content["view"]: served["page"].text}

    def js(value) -> str:
        return json.dumps(value).replace("</", "<\\/")

    host = f"""<!doctype html><html><head><meta charset=utf-8><title>test host</title></head>
<body style="margin:8px;font:13px sans-serif"><div>test host · tree_of_traversals</div>
<iframe id=app sandbox="allow-scripts allow-same-origin"
  style="width:860px;height:330px;border:1px solid #888"></iframe>
<pre id=report>pending</pre>
<script>
const APP = {js(served["app"].text)}, RESULT = {js(result)}, PAGES = {js(pages)};
const frame = document.getElementById('app'), log = []; let sent = false;
const send = (method, params) => frame.contentWindow.postMessage({{jsonrpc: '2.0',
  method, params}}, '*');
function report() {{
  const doc = frame.contentDocument, tree = doc.getElementById('tree');
  document.getElementById('report').textContent = JSON.stringify({{
    nodes: doc.querySelectorAll('.node').length, path: doc.querySelectorAll('.node.path').length,
    run: tree.dataset.run, text: tree.textContent, log}});
}}
window.addEventListener('message', e => {{
  const m = e.data;
  if (!m || m.jsonrpc !== '2.0' || e.source !== frame.contentWindow) return;
  log.push(m.method === 'resources/read' ? 'resources/read ' + m.params.uri : m.method);
  const reply = (result, error) =>
    frame.contentWindow.postMessage(Object.assign({{jsonrpc: '2.0', id: m.id}},
      error ? {{error}} : {{result}}), '*');
  if (m.method === 'ui/initialize') reply({{protocolVersion: '2026-01-26',
    hostInfo: {{name: 'test-host', version: '0'}},
    hostCapabilities: {{serverResources: {{}}}}, hostContext: {{displayMode: 'inline'}}}});
  else if (m.method === 'ui/notifications/initialized') {{
    send('ui/notifications/tool-input', {{arguments: {js(TOT_ARGS)}}});
    send('ui/notifications/tool-result', RESULT);
    sent = true;
  }} else if (m.method === 'resources/read') {{
    const text = PAGES[m.params.uri];
    if (text) reply({{contents: [{{uri: m.params.uri, mimeType: '{APP_MIME_TYPE}', text}}]}});
    else reply(null, {{code: -32602, message: 'unknown resource ' + m.params.uri}});
  }}
  if (sent && m.method === 'ui/notifications/size-changed') report();
}});
frame.srcdoc = APP;
</script></body></html>"""
    path = served["dir"] / f"host-{'embedded' if embedded else 'read'}.html"
    path.write_text(host, encoding="utf-8")
    return path


@pytest.mark.parametrize("embedded", [True, False], ids=["drawing-in-result", "read-through-host"])
def test_inside_a_host_the_app_draws_the_tool_results_tree(chromium, served, embedded):
    page = _host_page(served, embedded=embedded)
    dom = _browse(chromium, page, "--dump-dom")
    found = re.search(r'<pre id="report">(.*?)</pre>', dom, re.DOTALL)
    assert found and found.group(1) != "pending", dom[-1500:]
    seen = json.loads(html.unescape(found.group(1)))
    data = served["result"].structured_content
    assert seen["log"][:2] == [
        "ui/initialize",
        "ui/notifications/initialized",
    ]  # the Apps handshake, in order
    assert (seen["nodes"], seen["path"]) == (len(data["nodes"]), len(data["path"]))
    assert seen["run"] == data["view"].rpartition("=")[2] and "Glass Rivers" in seen["text"]
    reads = [entry for entry in seen["log"] if entry.startswith("resources/read")]
    assert reads == ([] if embedded else [f"resources/read {data['view']}"])
    _screenshot(chromium, page, served["dir"] / f"{page.stem}.png")
