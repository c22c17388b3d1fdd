"""The page at ``GET /kompakt/``: conversations, tokens sent vs without compaction,
compactions, the cache-stable prefix share, latency added; one page per conversation
with its timeline of requests and compactions and the compacted view. Plain HTML.
"""

from __future__ import annotations

import html
import statistics
import time
from typing import TYPE_CHECKING

from kompakt.serve.conversation import Conversation

if TYPE_CHECKING:
    from kompakt.serve.app import Proxy

__all__ = ["conversation_page", "index_page"]

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1d2330;background:#fbfbfd}
h1{font-size:1.4em}table{border-collapse:collapse;margin:1em 0;background:#fff}
th,td{border:1px solid #d8dce6;padding:.3em .6em;text-align:right;vertical-align:top}
th{background:#eef1f7}td.l,th.l{text-align:left}.bar{background:#4c78d8;height:.7em}
.tot{background:#d8dce6;width:12em}.muted{color:#6b7385}.role{font-weight:600}
pre{white-space:pre-wrap;margin:0;max-width:70em;text-align:left}
.syn{background:#fff6dd}.kpi{display:inline-block;margin-right:2.5em}
.kpi b{display:block;font-size:1.6em}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ms" if values else "–"


def _saved(sent: int, full: int) -> str:
    return f"{1 - sent / full:.0%}" if full else "–"


def _bar(sent: int, full: int) -> str:
    width = 100 * sent / full if full else 0
    return f'<div class=tot><div class=bar style="width:{width:.1f}%"></div></div>'


def index_page(proxy: Proxy) -> str:
    """Every conversation in memory, newest first, with the totals."""
    convs = sorted(proxy.sessions.conversations.values(), key=lambda c: -c.created)
    sent = sum(c.stats.tokens_sent for c in convs)
    full = sum(c.stats.tokens_full for c in convs)
    requests = sum(c.stats.requests for c in convs)
    stable = sum(c.stats.stable for c in convs)
    after_first = sum(max(c.stats.requests - 1, 0) for c in convs)
    added = [ms for c in convs for ms in c.stats.added_ms]
    kpis = [
        ("conversations", f"{len(convs):,}"),
        ("requests", f"{requests:,}"),
        ("tokens sent", f"{sent:,}"),
        ("without compaction", f"{full:,}"),
        ("saved", _saved(sent, full)),
        ("prefix unchanged", f"{stable / after_first:.0%}" if after_first else "–"),
        ("latency added (median)", _ms(added)),
    ]
    head = "".join(f"<span class=kpi><b>{_e(v)}</b>{_e(k)}</span>" for k, v in kpis)
    rows = []
    for c in convs:
        s = c.stats
        parent = f" <span class=muted>branch of {_e(c.parent)}</span>" if c.parent else ""
        rows.append(
            f'<tr><td class=l><a href="/kompakt/{_e(c.id)}">{_e(c.id)}</a>{parent}</td>'
            f"<td class=l>{_e(c.api)}</td><td class=l>{_e(c.model)}</td>"
            f"<td>{s.requests:,}</td><td>{c.mirror.index.message_count:,}</td>"
            f"<td>{s.tokens_sent:,}</td><td>{s.tokens_full:,}</td>"
            f"<td>{_bar(s.tokens_sent, s.tokens_full)}</td><td>{s.compactions:,}</td>"
            f"<td>{s.stable_share:.0%}</td><td>{_ms(s.added_ms)}</td></tr>"
        )
    table = (
        "<table id=conversations><tr><th class=l>conversation</th><th class=l>API</th>"
        "<th class=l>model</th><th>requests</th><th>messages</th><th>tokens sent</th>"
        "<th>without compaction</th><th>sent / without</th><th>compactions</th>"
        "<th>prefix unchanged</th><th>added (median)</th></tr>" + "".join(rows) + "</table>"
    )
    up = time.time() - proxy.started
    note = (
        f"<p class=muted>up {up / 60:.0f} min · originals kept in "
        f"{_e(type(proxy.store).__name__)} · tokens are kompakt's estimates, "
        "calibrated by the upstream's reported usage</p>"
    )
    empty = "" if convs else "<p>No conversations yet: point a client at this proxy.</p>"
    return _page("kompakt serve", f"<h1>kompakt serve</h1>{head}{table}{empty}{note}")


def conversation_page(proxy: Proxy, conv: Conversation) -> str:
    """One conversation: its requests and compactions in order, and what is sent now."""
    rows = []
    for n, t in enumerate(conv.timeline, 1):
        when = time.strftime("%H:%M:%S", time.localtime(t.at))
        what = _e(t.compaction) + (f"<br><span class=muted>{_e(t.note)}</span>" if t.note else "")
        rows.append(
            f"<tr><td>{n}</td><td>{when}</td><td>{t.messages:,}</td><td>{t.new:,}</td>"
            f"<td>{t.tokens_sent:,}</td><td>{t.tokens_full:,}</td>"
            f"<td>{'yes' if t.prefix_stable else 'no'}</td><td>{t.added_ms:.2f}</td>"
            f"<td>{'' if t.status is None else t.status}</td>"
            f"<td>{'' if t.usage is None else f'{t.usage:,}'}</td><td class=l>{what}</td></tr>"
        )
    timeline = (
        "<table id=timeline><tr><th>#</th><th>time</th><th>messages</th><th>new</th>"
        "<th>tokens sent</th><th>without compaction</th><th>prefix unchanged</th>"
        "<th>added ms</th><th>status</th><th>upstream input tokens</th>"
        "<th class=l>compaction</th></tr>" + "".join(rows) + "</table>"
    )
    view_rows = []
    for m in conv.mirror.view.render():
        cls = " class=syn" if m.synthetic else ""
        calls = ", ".join(f"{c.name}({c.arguments[:80]})" for c in m.tool_calls)
        text = m.text if len(m.text) <= 2000 else m.text[:2000] + " …"
        label = f"{m.role}" + (f" · {m.synthetic}" if m.synthetic else "")
        view_rows.append(
            f"<tr{cls}><td class='l role'>{_e(label)}</td>"
            f"<td class=l><pre>{_e(text)}</pre>{_e(calls)}</td></tr>"
        )
    view = "<table id=view>" + "".join(view_rows) + "</table>"
    s = conv.stats
    parent = (
        f'<p>Branch of <a href="/kompakt/{_e(conv.parent)}">{_e(conv.parent)}</a> '
        f"at message {conv.fork_at:,}.</p>"
        if conv.parent
        else ""
    )
    body = (
        f'<p><a href="/kompakt/">← all conversations</a></p><h1>{_e(conv.id)}</h1>{parent}'
        f"<p>{_e(conv.api)} · {_e(conv.model)} · {s.requests:,} requests · "
        f"{s.compactions:,} compactions · prefix unchanged on {s.stable_share:.0%} · "
        f"tokens sent {s.tokens_sent:,} of {s.tokens_full:,} "
        f"({_saved(s.tokens_sent, s.tokens_full)}"
        f" saved) · calibration offset {conv.offset:+,}</p>"
        f"<h2>Timeline</h2>{timeline}<h2>What is sent now</h2>{view}"
    )
    return _page(f"kompakt serve · {conv.id}", body)
