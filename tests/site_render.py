"""One page rendered as the build renders it, for the build plugin's hostile-input tests.

Test modules import :func:`render_page` from here, so no test module imports from another.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import markdown
from mkdocs.config import load_config

from site_build import build_output, measured
from site_build.plugin import BuildState, SiteBuild

ROOT = Path(__file__).resolve().parent.parent


def render_page(text: str, page: str = "hostile.md", abs_src_path: str | None = None,
                label: str = "hostile tests") -> str:
    """``text``, the page ``docs/<page>``, as HTML: the plugin's own ``on_page_markdown`` and
    ``on_page_content`` around the site's Markdown, with mkdocs.yml's extensions."""
    config = load_config(str(ROOT / "mkdocs.yml"))
    plugin = SiteBuild()
    plugin.on_config(config)
    plugin.state = BuildState(outputs=build_output.BuildOutputs(lambda: label),
                              measured=measured.MeasuredSections())
    page_ = SimpleNamespace(file=SimpleNamespace(src_uri=page, abs_src_path=abs_src_path))
    text = plugin.on_page_markdown(text, page=page_, config=config, files=None)
    md = markdown.Markdown(extensions=config.markdown_extensions, extension_configs=config.mdx_configs)
    return plugin.on_page_content(md.convert(text), page=page_, config=config, files=None)
