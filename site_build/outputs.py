"""Mark each verified output block as an output.

A block's printed output follows it under ``<!--pytest-codeblocks:expected-output-->``
(:data:`site_build.markers.EXPECTED_OUTPUT`), which is how the doc tests find it. The rendered
block gets the class ``output`` so that readers see it labelled as output (``assets/site.css``)
and the browser test can count outputs apart from code.
"""

from __future__ import annotations

import re

from .markers import EXPECTED_OUTPUT

_OUTPUT = re.compile(re.escape(EXPECTED_OUTPUT) + r'(\s*(?:</p>)?\s*)<div class="language-text highlight">')


def label(content: str) -> str:
    """A page's HTML with the class ``output`` on each verified output block."""
    return _OUTPUT.sub(EXPECTED_OUTPUT + r'\1<div class="language-text highlight output">',
                       content)
