"""MkDocs hook: mark each verified output block as an output.

A block's printed output follows it under ``<!--pytest-codeblocks:expected-output-->``,
which is how the doc tests find it. The rendered block gets the class ``output``
so that readers see it labelled as output (``assets/site.css``) and the browser
test can count outputs apart from code.
"""

from __future__ import annotations

import re

_OUTPUT = re.compile(r'<!--pytest-codeblocks:expected-output-->(\s*(?:</p>)?\s*)<div class="language-text highlight">')


def on_page_content(content: str, page, config, files) -> str:
    return _OUTPUT.sub(r'<!--pytest-codeblocks:expected-output-->\1<div class="language-text highlight output">', content)
