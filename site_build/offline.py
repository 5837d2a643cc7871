"""Keep notebook pages offline.

mkdocs-jupyter's template adds MathJax and Mermaid loaders that fetch from a
CDN. The drills need neither (their math lives on the recall pages, rendered to
MathML at build time), so the loaders are removed; the site tests fail on any
remaining reference to another host.
"""

from __future__ import annotations

import html
import re

_SCRIPT = re.compile(r"<script\b", re.I)
#: an attribute of a tag as HTML reads it: a name after a blank or '/', its value in either quotes or none
_ATTRIBUTE = re.compile(r"""[\s/]([^\s"'>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>`]+))?""")
#: a URL of another host: a scheme or none, then two slashes (a browser reads backslashes as slashes)
_OTHER_HOST = re.compile(r"\s*(?:[a-z][a-z0-9+.-]*:)?[/\\]{2}", re.I)
_LOADS = re.compile(r"MathJax|mermaid", re.I)
_CLOSE = "</script>"


def strip_loaders(output: str, src_uri: str) -> str:
    """The page ``output`` of ``src_uri`` without remote scripts and loaders, when it is a notebook.

    A script element goes when its opening tag loads from another host (a ``src`` of ``//…`` or
    ``scheme://…``, in any quotes or none: a browser then runs what it fetches and ignores the body,
    blank or not), or when its body names MathJax or Mermaid. One pass,
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
        drop = _loads_from_another_host(tag) or _LOADS.search(body) is not None
        kept.append(output[at:m.start() if drop else end])
        at = end
    kept.append(output[at:])
    return "".join(kept)


def _loads_from_another_host(tag: str) -> bool:
    """Whether the script tag ``tag``'s first ``src`` (in either quotes or none, spaces around its
    '=' or not, character references resolved) names another host."""
    for m in _ATTRIBUTE.finditer(tag, len("<script")):
        if m[1].lower() == "src":
            value = html.unescape((m[2] or "").strip("\"'"))
            return _OTHER_HOST.match(value) is not None
    return False
