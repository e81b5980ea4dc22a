"""A self-contained HTML page (inline CSS and JS, no network) to browse a run: per question correct
or not, and its search tree with values, rejected proposals and the chosen path highlighted."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from .runner import RunRecord, Summary

CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--mut:#57606a;--bg:#f6f8fa;--line:#d0d7de;--path:#fff8c5}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328}
header{padding:16px 24px;background:#24292f;color:#fff}header h1{margin:0 0 6px;font-size:20px}
.sum{display:flex;gap:18px;flex-wrap:wrap;font-size:13px;color:#d0d7de}.sum b{color:#fff}
.bar{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);padding:10px 24px;
display:flex;gap:8px;z-index:2}
.bar button{border:1px solid var(--line);background:var(--bg);border-radius:6px;padding:4px 12px;
cursor:pointer}
.bar button.on{background:#0969da;color:#fff;border-color:#0969da}
.bar input{flex:1;max-width:420px;padding:4px 8px;border:1px solid var(--line);border-radius:6px}
main{padding:12px 24px}
details.q{border:1px solid var(--line);border-radius:8px;margin:8px 0;background:#fff}
details.q>summary{list-style:none;cursor:pointer;padding:10px 14px;display:grid;
grid-template-columns:28px 1fr auto;gap:10px;align-items:start}
details.q>summary::-webkit-details-marker{display:none}
details.q[open]>summary{border-bottom:1px solid var(--line);background:var(--bg)}
.mark{font-weight:700;font-size:16px}.ok .mark{color:var(--ok)}.bad .mark{color:var(--bad)}
.qt{font-weight:600}.meta{color:var(--mut);font-size:12px;margin-top:2px}
.meta span{margin-right:12px}
.nums{color:var(--mut);font-size:12px;text-align:right;white-space:nowrap}
.body{padding:10px 14px}.err{color:var(--bad);font-weight:600}
ul.tree,ul.tree ul{list-style:none;margin:0;padding-left:18px;border-left:1px dashed var(--line)}
ul.tree{border:0;padding-left:0}
ul.tree li{margin:2px 0}
.node{display:inline-block;padding:1px 6px;border-radius:4px;
font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px}
.node.path{background:var(--path);outline:1px solid #d4a72c}
.v{display:inline-block;min-width:38px;font-weight:700}
.v.hi{color:var(--ok)}.v.lo{color:var(--bad)}.ord{color:var(--mut);font-size:11px}
.obs{color:var(--mut);font-size:12px;margin-left:46px}
.rej{color:var(--bad);font-size:12px;margin-left:46px}
.k{display:inline-block;padding:0 5px;border-radius:3px;font-size:11px;background:#ddf4ff;
color:#0550ae;margin-right:4px}
.k.answer{background:#dafbe1;color:#116329}.k.retry{background:#ffebe9;color:#a40e26}
pre.sg{background:var(--bg);padding:8px;border-radius:6px;max-height:260px;overflow:auto;
font-size:12px}
"""

_JS = """
const qs=[...document.querySelectorAll('details.q')];let mode='all';
function apply(){const t=document.getElementById('f').value.toLowerCase();
qs.forEach(q=>{const okm=mode==='all'||(mode==='ok')===q.classList.contains('ok');
q.style.display=okm&&q.dataset.text.includes(t)?'':'none';});}
document.querySelectorAll('.bar button[data-m]').forEach(b=>b.onclick=()=>{mode=b.dataset.m;
document.querySelectorAll('.bar button[data-m]').forEach(x=>x.classList.toggle('on',x===b));
apply();});
document.getElementById('f').oninput=apply;
document.getElementById('ex').onclick=()=>qs.forEach(q=>q.open=true);
document.getElementById('co').onclick=()=>qs.forEach(q=>q.open=false);
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _action_text(node: dict, labels: dict[str, str]) -> tuple[str, str]:
    a = node.get("action")
    if node.get("retry"):
        return "retry", "retry after rejected proposals"
    if not a:
        return "root", "start: linked topic entities"
    kind = a.get("kind", "?")
    who = ", ".join(f"{labels[i]} ({i})" if i in labels else i for i in a.get("entity_ids") or [])
    if kind == "think":
        return kind, a.get("text", "")
    if kind == "answer":
        ids = ", ".join(a.get("entity_ids") or [])
        return kind, a.get("text", "") + (f"  [{ids}]" if ids else "")
    if kind == "select_entities":
        return kind, who
    if kind == "select_relation":
        return kind, f"{a.get('relation_id')} ({a.get('direction')})"
    if kind == "expand_kg" and a.get("relation_id"):  # the whole expansion, decided in one reply
        return kind, f"{who} -> {a.get('relation_id')} ({a.get('direction')})"
    return kind, ""


def tree_html(trace: dict) -> str:
    nodes = {n["id"]: n for n in trace.get("nodes", [])}
    if not nodes:
        return "<p class=meta>no search tree recorded</p>"
    path = set(trace.get("path") or [])
    labels = trace.get("labels") or {}

    def render(nid: int) -> str:
        n = nodes[nid]
        kind, text = _action_text(n, labels)
        v = n.get("value")
        vcls = "hi" if v is not None and v >= 0.8 else "lo" if v is not None and v < 0.4 else ""
        val = "–" if v is None else f"{v:.2f}"
        order = (
            f" <span class=ord>#{n['expanded_at']}</span>"
            if n.get("expanded_at") is not None
            else ""
        )
        parts = [
            f'<li><span class="node{" path" if nid in path else ""}"><span class="v '
            f'{vcls}">{val}</span><span class="k {kind}">{_e(kind)}</span>{_e(text)}</span>{order}'
        ]
        last = (n.get("summary") or {}).get("last_expansion")
        done_here = kind == "select_relation" or (
            kind == "expand_kg" and (n.get("summary") or {}).get("asm_state") == "default"
        )
        if done_here and last:  # the expansion this node completed
            parts.append(f"<div class=obs>→ {_e(last)}</div>")
        for r in n.get("rejected") or []:
            parts.append(f"<div class=rej>✗ {_e(r.get('reason', ''))}</div>")
        kids = n.get("children") or []
        if kids:
            parts.append("<ul>" + "".join(render(c) for c in kids if c in nodes) + "</ul>")
        parts.append("</li>")
        return "".join(parts)

    return f'<ul class="tree">{render(min(nodes))}</ul>'


def render_report(
    records: Sequence[RunRecord], summary: Summary, title: str = "tot-search report"
) -> str:
    items = []
    for r in records:
        cls = "ok" if r.correct else "bad"
        mark = "✓" if r.correct else "✗"
        trace = r.trace or {}
        body = []
        if r.error:
            body.append(f"<p class=err>{_e(r.error)}</p>")
        body.append(tree_html(trace))
        if trace.get("subgraph_text"):
            body.append(
                "<details><summary>final local subgraph</summary><pre "
                f"class=sg>{_e(trace['subgraph_text'])}</pre></details>"
            )
        search_text = _e(f"{r.question} {' '.join(r.gold)} {' '.join(r.prediction)}".lower())
        items.append(
            f'<details class="q {cls}" data-text="{search_text}"><summary><span '
            f"class=mark>{mark}</span>"
            f"<div><div class=qt>{_e(r.question)}</div><div class=meta><span>gold: "
            f"{_e(', '.join(r.gold[:8]))}{' …' if len(r.gold) > 8 else ''}</span><span>predicted: "
            f"{_e(', '.join(r.prediction[:8]) or r.answer_text or '—')}</span></div></div><div "
            f"class=nums>value {r.value:.2f} · F1 {r.f1:.2f} · "
            f"{r.latency_s:.2f}s<br>{r.expansions} expansions · {r.llm_calls} calls · "
            f"{_e(r.status)}</div></summary><div class=body>{''.join(body)}</div></details>"
        )
    s = summary
    stats = [
        ("questions", s.n),
        ("hits@1", f"{s.hits1:.3f}"),
        ("F1", f"{s.f1:.3f}"),
        ("EM-in", f"{s.em_in:.3f}"),
    ]
    if s.recall10 is not None:
        stats.append(("recall@10", f"{s.recall10:.3f}"))
    stats += [
        ("errors", s.errors),
        ("median latency", f"{s.median_latency_s:.2f}s"),
        ("LLM calls", s.llm_calls),
    ]
    head = "".join(f"<span>{_e(k)} <b>{_e(v)}</b></span>" for k, v in stats)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{_e(title)}</h1><div class=sum>{head}</div></header>"
        "<div class=bar><button data-m=all class=on>all</button><button data-m=ok>correct</button>"
        "<button data-m=bad>incorrect</button><input id=f placeholder='filter by question, gold or "
        "prediction'><button id=ex>expand all</button><button id=co>collapse all</button></div>"
        f"<main>{''.join(items)}</main><script>{_JS}</script></body></html>"
    )
