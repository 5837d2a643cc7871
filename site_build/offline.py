"""Keep notebook pages offline.

mkdocs-jupyter's template adds MathJax and Mermaid loaders that fetch from a
CDN. The drills need neither (their math lives on the recall pages, rendered to
MathML at build time), so the loaders are removed; the site tests fail on any
remaining reference to another host.
"""

from __future__ import annotations

import re

_SCRIPT = re.compile(r"<script\b", re.I)
_REMOTE_SRC = re.compile(r'\bsrc="(?:https?:)?//[^"]*"', re.I)
_LOADS = re.compile(r"MathJax|mermaid", re.I)
_CLOSE = "</script>"


def strip_loaders(output: str, src_uri: str) -> str:
    """The page ``output`` of ``src_uri`` without remote scripts and loaders, when it is a notebook.

    A script element goes when its opening tag loads from another host (``src="//…"`` or
    ``"http(s)://…"``) and its body is blank, or when its body names MathJax or Mermaid. One pass,
    each element from its ``<script`` to the first ``</script>`` (any case) after its tag: linear in
    the page, however many scripts a notebook's own HTML leaves unclosed."""
    if not src_uri.endswith(".ipynb"):
        return output
    lower = output.lower()
    kept, at = [], 0
    while (m := _SCRIPT.search(output, at)) is not None:
        tag_end = output.find(">", m.end())
        close = lower.find(_CLOSE, tag_end + 1) if tag_end >= 0 else -1
        if close < 0:                   # no element starts here, and none can after it
            break
        end = close + len(_CLOSE)
        tag, body = output[m.start():tag_end + 1], output[tag_end + 1:close]
        drop = (_REMOTE_SRC.search(tag) is not None and not body.strip()) or _LOADS.search(body) is not None
        kept.append(output[at:m.start() if drop else end])
        at = end
    kept.append(output[at:])
    return "".join(kept)
