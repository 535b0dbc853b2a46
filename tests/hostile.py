"""A corpus of hostile strings, and trace files edited to carry them (with a recomputed digest).

Every payload is a template: ``{url}`` is replaced by the address of a local
listener, so a test can tell whether a page made a request, and every script
payload marks the page (``data-pwned``) so a test can tell whether it ran.
The strings go where a trace file puts text: a node's ``latex``, ``symbol`` and ``text``,
token labels, the carried narrative (title, summary, stage text with ``$...$``
math, extra notes) and free metadata.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import tracer
from tracer.core import serialize

RUN = "document.documentElement.setAttribute('data-pwned','1');fetch('{url}/js')"

PAYLOADS: dict[str, str] = {
    "script-lower": "<script>" + RUN + "</script>",
    "script-upper": "<SCRIPT>" + RUN + "</SCRIPT>",
    "script-mixed": "<ScRiPt>" + RUN + "</sCrIpT>",
    "script-src": "<script src='{url}/src'></script>",
    "img-onerror": '<img src=x onerror="' + RUN + '">',
    "svg-onload": '<svg onload="' + RUN + '"></svg>',
    "body-onload": '<body onload="' + RUN + '">',
    "details-ontoggle": '<details open ontoggle="' + RUN + '">x</details>',
    "a-javascript": '<a href="javascript:' + RUN + '">click</a>',
    "a-data": '<a href="data:text/html,<script>alert(1)</script>">click</a>',
    "meta-refresh": '<meta http-equiv="refresh" content="0;url={url}/refresh">',
    "meta-refresh-slash": '<meta/http-equiv="refresh"/content="0;url={url}/refresh2">',
    "base": '<base href="{url}/base/">',
    "link-stylesheet": '<link rel="stylesheet" href="{url}/css">',
    "link-prefetch": '<link rel="prefetch" href="{url}/prefetch">',
    "iframe": '<iframe src="{url}/iframe"></iframe>',
    "iframe-srcdoc": '<iframe srcdoc="<script>' + RUN + '</script>"></iframe>',
    "object": '<object data="{url}/object"></object>',
    "embed": '<embed src="{url}/embed">',
    "img-remote": '<img src="{url}/img">',
    "svg-foreignobject": '<svg><foreignObject><img src="{url}/fo" onerror="' + RUN + '"></foreignObject></svg>',
    "math-href": '<math href="javascript:' + RUN + '"><mi>x</mi></math>',
    "math-xlink": '<math><mi xlink:href="{url}/xlink">x</mi></math>',
    "mathml-escape": '<math><mtext><table><mglyph><style><img src=x onerror="' + RUN + '">',
    "annotation-xml": '<math><annotation-xml encoding="text/html"><img src="{url}/ax"></annotation-xml></math>',
    "style-import": "<style>@import url('{url}/import');</style>",
    "style-url": "<style>body{background:url('{url}/bg')}</style>",
    "style-attr": '<div style="background:url({url}/attr)">x</div>',
    "entity-script": "&lt;script&gt;" + RUN + "&lt;/script&gt;",
    "entity-numeric": "&#60;script&#62;" + RUN + "&#60;/script&#62;",
    "entity-img": "&lt;img src=x onerror=&quot;" + RUN + "&quot;&gt;",
    "comment-breakout": "--><script>" + RUN + "</script><!--",
    "cdata": "<![CDATA[<script>" + RUN + "</script>]]>",
    "form": '<form action="{url}/form"><button>go</button></form>',
    "md-image": "![x]({url}/mdimg)",
    "md-ref-image": "![x][r]\n\n[r]: {url}/mdref",
    "md-autolink": "<{url}/autolink>",
    "md-html-block": '\n\n<div>\n<img src="{url}/mdblock">\n</div>\n\n',
    "dollar-escape": "$ <img src='{url}/dollar'> $",
}
"""Hostile strings by name (``{url}`` is the listener)."""


def latex_forms(payload: str) -> list[str]:
    """The ways a payload can sit in a formula: inside ``\\text{}``, ``\\mathrm{}``, ``\\href``/``\\style`` or bare."""
    return [
        r"\omega = \text{" + payload + "}",
        r"\mathrm{" + payload + "}",
        r"\href{javascript:alert(1)}{x} + \style{background:url(" + payload + ")}{y}",
        payload,
    ]


def fill(payload: str, url: str) -> str:
    """The payload with the listener's address."""
    return payload.replace("{url}", url)


def spread(doc: dict[str, Any], strings: list[str], shift: int = 0) -> dict[str, Any]:
    """A copy of trace document ``doc`` with the strings in every text field, cycling (``shift`` rotates them)."""
    out = copy.deepcopy(doc)
    out.pop("digest", None)
    pick = iter(range(shift, 1 << 30))

    def nxt() -> str:
        return strings[next(pick) % len(strings)]

    for n, node in enumerate(out["nodes"]):
        s = nxt()
        node["latex"] = latex_forms(s)[(n + shift) % 4]
        node["symbol"] = latex_forms(nxt())[(n + shift + 1) % 4]  # what names an entry on a page
        node["text"] = nxt()
    meta = out["meta"]
    meta["tokens"] = [f"{nxt()}{k}" for k in range(len(meta["tokens"]))]
    meta["note"] = nxt()
    meta["source"] = {"kind": "file", "name": nxt() + ".json"}
    for table in (meta.get("narrative") or {}).values():
        table["title"] = nxt()
        table["summary"] = nxt() + " $" + latex_forms(nxt())[0] + "$"
        for stage in table["stages"].values():
            stage["title"] = nxt()
            notes = list(stage.get("notes") or {})  # footnotes too: their texts hostile, cited from the text
            cited = "".join(f"[^{k}]" for k in notes)
            stage["text"] = f"{nxt()}{cited}\n\n${latex_forms(nxt())[0]}$ {nxt()}\n\n$${latex_forms(nxt())[1]}$$"
            if notes:
                stage["notes"] = {k: nxt() for k in notes}
            stage["note"] = nxt()
    return out


def seal(doc: dict[str, Any]) -> str:
    """A document's file text with a digest that matches it, as anyone can compute."""
    body = {k: v for k, v in doc.items() if k != "digest"}
    body["digest"] = serialize._digest(body)
    return json.dumps(body, ensure_ascii=False)


def many_nodes(copies: int) -> dict[str, Any]:
    """The tutorial's trace with its nodes repeated under new names (``c1.x``, ``c1.omega``, ...): valid, big."""
    doc: dict[str, Any] = serialize.to_dict(tracer.trace_lesson("simple"))
    base = doc["nodes"]
    names = {n["name"] for n in base}
    out = list(base)
    for k in range(1, copies + 1):
        for node in base:
            m = copy.deepcopy(node)
            m["name"], m["split"] = f"c{k}.{node['name']}", [0, *node["split"]]
            for arg in m["args"]:
                arg["node"] = f"c{k}.{arg['node']}" if arg["node"] in names else arg["node"]
            m["attrs"] = {a: f"c{k}.{v}" if isinstance(v, str) and v in names else v for a, v in m["attrs"].items()}
            out.append(m)
    doc["nodes"] = out
    return doc
