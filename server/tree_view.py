"""The search tree where the user is: ``tree_of_traversals`` through the MCP Apps extension
(``io.modelcontextprotocol/ui``).

* The tool declares ``_meta.ui.resourceUri = ui://tot-mcp/search-tree`` (:data:`TOOL_META`): a
  client that supports MCP Apps (Claude, VS Code, ChatGPT, …) reads that resource, renders it in a
  sandboxed iframe next to the answer and passes it the tool's result
  (``ui/notifications/tool-result`` over ``postMessage``).
* Each result points at its own tree: ``structuredContent.view = ui://tot-mcp/search-tree?run=t<12
  hex>``, a page with that question's search tree already drawn (readable by any client with
  ``resources/read``), and, when the client declared MCP Apps support, the drawn tree itself in the
  result's ``_meta["tot-mcp/search-tree"]`` — so the inline view needs no second request, which
  matters behind a load balancer where the next request may reach a process that never ran this
  search.
* Both resources come from one template, ``ui://tot-mcp/search-tree{?run}``: without ``run`` it is
  the app (the same page, waiting for a result). UI-only resources may stay out of
  ``resources/list`` (the Apps spec says so); a template keeps them there.
* The drawing is the one ``tot-search --html`` uses (:mod:`strategies.benchmarks.report`); this
  module only wraps it in a page and adds the few lines of script that speak the Apps handshake.

Trees are kept per process in a bounded store (:class:`TreeViews`, like result handles); an unknown
``run`` is a clear ``resources/read`` error saying to run the search again.
"""

from __future__ import annotations

import hashlib
import html
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.apps import APP_MIME_TYPE, client_supports_apps
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resources import FunctionResource

from tot_mcp.kg_adapters.lru import LRU

from . import __version__

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from tot_mcp.strategies.tot.search import SearchResult

    from .runtime import Runtime

APP_URI = "ui://tot-mcp/search-tree"
TEMPLATE = APP_URI + "{?run}"
META_KEY = (
    "tot-mcp/search-tree"  # the result's _meta entry: {"uri": ..., "html": ... (Apps clients only)}
)
TOOL_META: dict[str, Any] = {"ui": {"resourceUri": APP_URI}}  # on the tree_of_traversals tool
RUN_RE = re.compile(r"^t[0-9a-f]{12}$")
log = logging.getLogger("tot_mcp.apps")


# -- the page --------------------------------------------------------------------------------------
def render_tree(result: SearchResult, *, policy: str, warnings: Sequence[str] = ()) -> str:
    """One search as an HTML fragment: question, answer, and the tree drawn by ``tot-search
    --html``'s renderer (``strategies.benchmarks.report``: the one place the tree's HTML is
    generated)."""
    from tot_mcp.strategies.benchmarks import report

    trace = result.model_dump(mode="json")
    answer = ", ".join(result.answer.labels) or result.answer.text or "—"
    parts = [
        f"<div class=qt>{html.escape(result.question)}</div>",
        (
            f"<div class=meta><span>answer: <b>{html.escape(answer)}</b></span><span>value "
            f"{result.value:.2f} · {html.escape(result.status)} · {result.expansions} expansions · "
            f"policy {html.escape(policy)}</span></div>"
        ),
        *(
            f"<p class=err>{html.escape(w)}</p>"
            for w in [*warnings, *([result.error] if result.error else [])]
        ),
        report.tree_html(trace),
    ]
    if result.subgraph_text:
        parts.append(
            f"<details><summary>final local subgraph</summary><pre class=sg>"
            f"{html.escape(result.subgraph_text)}</pre></details>"
        )
    return "".join(parts)


_WAITING = "<p class=meta>Waiting for a tree_of_traversals result…</p>"

# The Apps handshake (ui/initialize → ui/notifications/initialized), then: a tool result shows its
# tree — from the result's _meta when the server put it there, else read through the host
# (resources/read of structuredContent.view). Opened on its own (no parent frame) the page is
# already complete and the script does nothing.
_APP_JS = """
(function(){
if (window.parent === window) return;
const main = document.getElementById('tree'), pending = new Map(); let next = 1;
const post = m => window.parent.postMessage(Object.assign({jsonrpc: '2.0'}, m), '*');
const request = (method, params) => new Promise((ok, fail) => {
  const id = next++; pending.set(id, {ok, fail}); post({id, method, params}); });
const size = () => post({method: 'ui/notifications/size-changed',
  params: {width: document.documentElement.scrollWidth,
           height: document.documentElement.scrollHeight}});
const esc = s => String(s).replace(/[&<>"']/g, c => '&#' + c.charCodeAt(0) + ';');
function show(markup, run) { main.innerHTML = markup; if (run) main.dataset.run = run; size(); }
async function result(r) {
  const mine = (r._meta || {})['tot-mcp/search-tree'] || {}, data = r.structuredContent || {};
  const uri = data.view || mine.uri || '', run = (uri.match(/[?&]run=(t[0-9a-f]{12})/) || [])[1];
  if (r.isError)
    return show('<p class=err>' + esc((r.content || []).map(c => c.text || '').join(' ')) + '</p>');
  if (mine.html) return show(mine.html, run);
  if (!uri) return show('<p class=err>this result has no search tree</p>');
  try {
    const read = await request('resources/read', {uri});
    const page = new DOMParser().parseFromString(read.contents[0].text, 'text/html');
    show(page.getElementById('tree').innerHTML, run);
  } catch (e) { show('<p class=err>' + esc(e && e.message || e) + '</p>'); }
}
window.addEventListener('message', e => {
  const m = e.data;
  if (!m || m.jsonrpc !== '2.0') return;
  if (m.method === undefined && pending.has(m.id)) {
    const p = pending.get(m.id); pending.delete(m.id);
    return m.error ? p.fail(new Error(m.error.message || 'error ' + m.error.code)) : p.ok(m.result);
  }
  if (m.method === 'ui/notifications/tool-result') result(m.params || {});
  else if (m.method === 'ui/notifications/tool-cancelled')
    show('<p class=err>the search was cancelled</p>');
  else if (m.id !== undefined && (m.method === 'ui/resource-teardown' || m.method === 'ping'))
    post({id: m.id, result: {}});
});
request('ui/initialize', {protocolVersion: '2026-01-26',
                          appCapabilities: {availableDisplayModes: ['inline']},
                          appInfo: {name: 'tot-mcp search tree', version: '%(version)s'}})
  .then(() => { post({method: 'ui/notifications/initialized', params: {}}); size(); },
        e => show('<p class=err>' + esc(e.message) + '</p>'));
})();
"""


def render_page(
    fragment: str | None = None, run: str = "", title: str = "Tree-of-Traversals search tree"
) -> str:
    """The app page: ``fragment`` drawn already (a run's page), or waiting for a result (the app
    itself)."""
    from tot_mcp.strategies.benchmarks import report

    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{report.CSS}</style></head><body>"
        f"<main id=tree data-run='{html.escape(run)}'>"
        f"{fragment if fragment is not None else _WAITING}</main>"
        f"<script>{_APP_JS.replace('%(version)s', __version__)}</script></body></html>"
    )


# -- the per-process store of drawn trees ----------------------------------------------------------
@dataclass
class TreeView:
    run: str
    question: str
    fragment: str

    @property
    def uri(self) -> str:
        return f"{APP_URI}?run={self.run}"


class TreeViews:
    """Drawn search trees by run ID (``t`` + 12 hex of the drawing's hash): bounded LRU with an age
    limit."""

    def __init__(self, ttl_seconds: float, max_entries: int = 200) -> None:
        self.ttl = ttl_seconds
        self._views: LRU[TreeView] = LRU(max_entries, ttl=ttl_seconds)

    def put(self, question: str, fragment: str) -> TreeView:
        run = "t" + hashlib.blake2b(f"{question}\n{fragment}".encode(), digest_size=6).hexdigest()
        view = TreeView(run, question, fragment)
        self._views.put(run, view)
        return view

    def get(self, run: str) -> TreeView:
        if not RUN_RE.match(run):
            raise ResourceNotFoundError(
                f"{APP_URI}?run={run}: not a search-tree ID (they look like t1a2b3c4d5e6f)"
            )
        view = self._views.get(run)
        if view is None:
            raise ResourceNotFoundError(
                f"search tree {run} is unknown here (expired after {self.ttl:.0f} s, evicted, or "
                "drawn by another server process): run tree_of_traversals again for a new one"
            )
        return view


def publish_tree(
    runtime: Runtime, result: SearchResult, ctx: Any, *, policy: str, warnings: Sequence[str] = ()
) -> tuple[str | None, dict[str, Any] | None]:
    """Draw ``result``'s tree, keep it for ``resources/read`` and say where it is: the run's
    ``ui://`` URI (for the structured result) and the result's ``_meta`` (with the drawing when the
    client renders MCP Apps)."""
    views: TreeViews | None = runtime.tree_views
    if views is None:  # build_server did not register the apps (e.g. a test server without them)
        return None, None
    try:
        view = views.put(result.question, render_tree(result, policy=policy, warnings=warnings))
    except Exception:  # the picture is an extra: a drawing that fails must not cost the answer
        log.exception("drawing the search tree of %r failed", result.question)
        return None, None
    entry: dict[str, Any] = {"uri": view.uri}
    if ctx is not None and _supports_apps(ctx):
        entry["html"] = view.fragment
    return view.uri, {META_KEY: entry}


def _supports_apps(ctx: Any) -> bool:
    try:
        return client_supports_apps(ctx)
    except Exception:  # noqa: BLE001 - no request context (e.g. called outside a request): no Apps
        return False


# -- registration ----------------------------------------------------------------------------------
def register_apps(server: MCPServer, runtime: Runtime) -> None:
    """Serve the search-tree app and the drawn trees. Called once by :func:`server.app.build_server`
    (which advertises MCP Apps with the SDK's ``Apps`` extension); the ``tree_of_traversals`` tool
    points at :data:`APP_URI`."""
    views = runtime.tree_views = TreeViews(ttl_seconds=runtime.config.server.handle_ttl)

    @server.resource(
        TEMPLATE,
        name="search-tree",
        title="Tree-of-Traversals search tree",
        description="The search tree of a tree_of_traversals call, drawn (MCP Apps view). Without "
        "?run it is the app that shows the tree of the tool result it is given; ?run=ID (from the "
        "result's 'view') is that tree.",
        mime_type=APP_MIME_TYPE,
        meta={"ui": {"prefersBorder": True}},
    )
    async def search_tree(run: str = "") -> str:
        if not run:
            return render_page()
        view = views.get(run.strip())
        return render_page(view.fragment, view.run, f"Search tree: {view.question}")

    # the app itself is a plain resource too, so resources/list shows it (a template is listed only
    # as a template)
    server.add_resource(
        FunctionResource.from_function(
            fn=render_page,
            uri=APP_URI,
            name="search-tree-app",
            title="Tree-of-Traversals search tree (app)",
            description=(
                "The MCP Apps view that draws the search tree of a tree_of_traversals result."
            ),
            mime_type=APP_MIME_TYPE,
            meta={"ui": {"prefersBorder": True}},
        )
    )
