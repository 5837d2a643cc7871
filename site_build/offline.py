"""Keep notebook pages offline.

mkdocs-jupyter's template adds MathJax and Mermaid loaders that fetch from a
CDN. The drills need neither (their math lives on the recall pages, rendered to
MathML at build time), so the loaders are removed; the site tests fail on any
remaining reference to another host.
"""

from __future__ import annotations

import re

_REMOTE_SCRIPT = re.compile(r'<script\b[^>]*\bsrc="(?:https?:)?//[^"]*"[^>]*>\s*</script>', re.I)
_LOADER = re.compile(r"<script\b[^>]*>(?:(?!</script>).)*?(?:MathJax|mermaid)(?:(?!</script>).)*</script>",
                     re.I | re.S)


def strip_loaders(output: str, src_uri: str) -> str:
    """The page ``output`` of ``src_uri`` without remote scripts and loaders, when it is a notebook."""
    if not src_uri.endswith(".ipynb"):
        return output
    return _LOADER.sub("", _REMOTE_SCRIPT.sub("", output))
