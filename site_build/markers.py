"""The syntax of every marker a page may hold, defined once for the build and the tests.

========================================================  =========================================
in a page                                                 what it is
========================================================  =========================================
``<!-- build-output: snippets/<page>/<name>.py -->``      what the snippet printed in this build
``<!-- build-output: PATH as markdown -->``               the same, put into the page as Markdown
``<!-- needs-extra: NAME -->``                            a note naming the extra the block needs
``<!-- kernels.json: NAME -->``                           a measured section of Chapter 8
``--8<-- "path"`` / ``--8<-- "path:section"``             an include (pymdownx.snippets)
```` ```{.python .excerpt title="…"} ````                 a library excerpt: shown, not run
``<!--pytest-codeblocks:expected-output-->``              the verified output of the block above
``::: netcl_lite.module``                                 an API page's docstrings (mkdocstrings)
========================================================  =========================================

A section of a library file is marked ``# --8<-- [start:name]`` … ``# --8<-- [end:name]``
(``//`` in OpenCL C).
"""

from __future__ import annotations

import re

#: ``<!-- build-output: PATH -->`` or ``<!-- build-output: PATH as markdown -->`` on a line of its own
BUILD_OUTPUT = re.compile(r"^<!-- build-output: (?P<path>\S+)(?P<markdown> as markdown)? -->$", re.M)
#: ``<!-- needs-extra: NAME -->`` on a line of its own, indented as the block under it
NEEDS_EXTRA = re.compile(r"^(?P<indent>[ \t]*)<!-- needs-extra: (?P<extra>[\w-]+) -->[ \t]*$", re.M)
#: ``<!-- kernels.json: NAME -->`` on a line of its own
KERNELS_JSON = re.compile(r"^<!-- kernels\.json: (?P<section>[\w-]+) -->$", re.M)
#: a line that is one include, ``--8<-- "path"`` or ``--8<-- "path:section"``
INCLUDE_LINE = re.compile(r'^\s*--8<--\s+"(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"\s*$')
#: the path of every include in a text, wherever it stands
INCLUDE = re.compile(r'--8<--\s+"(?P<path>[^":]+)')
#: the opening line of an excerpt fence: ```` ```{.python .excerpt title="…"} ````
EXCERPT_OPEN = re.compile(
    r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})\{(?P<attrs>[^}\n]*\.excerpt\b[^}\n]*)\}[ \t]*$")
#: a whole excerpt fence in a page's text: indent, ticks, ``{attributes}``, body
EXCERPT_FENCE = re.compile(r"^(\s*)(`{3,})(\{[^}\n]*\.excerpt[^}\n]*\})\s*\n((?:.*\n)*?)\1\2\s*$", re.M)
#: what precedes a block's verified output (pytest-codeblocks' own marker)
EXPECTED_OUTPUT = "<!--pytest-codeblocks:expected-output-->"
#: a generated figure a page shows: ``figures/<page>/<name>.svg``
FIGURE = re.compile(r"figures/(?P<name>[\w-]+/[\w-]+)\.svg")
#: a line that asks mkdocstrings for an object's docstrings
API = re.compile(r"^::: ", re.M)


def build_output(path: str, as_markdown: bool = False) -> str:
    """The marker that shows what ``path`` printed in this build."""
    return f"<!-- build-output: {path}{' as markdown' if as_markdown else ''} -->"


def needs_extra(extra: str) -> str:
    """The marker above a block that needs the extra ``extra`` of netcl_lite."""
    return f"<!-- needs-extra: {extra} -->"


def include(path: str, section: str | None = None) -> str:
    """The include line of ``path`` (or of its ``section``)."""
    return f'--8<-- "{path}{":" + section if section else ""}"'


def section_bounds(section: str) -> tuple[str, str]:
    """The texts that open and close ``section`` in a library file."""
    return f"[start:{section}]", f"[end:{section}]"
