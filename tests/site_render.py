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


def render_with_includes(root: Path, monkeypatch, page: str, files: dict[str, str]) -> str:
    """``page`` rendered with the site's Markdown extensions and its includes contained (the page named
    ``docs/hostile.md`` in errors), with ``files`` under ``root/snippets`` (written as UTF-8, their line
    endings as written) and ``root`` as the working folder, where pymdownx.snippets reads includes."""
    from site_build import includes
    from site_build.markers import page_extensions

    (root / "snippets").mkdir(exist_ok=True)
    for name, text in files.items():
        (root / "snippets" / name).write_bytes(text.encode("utf-8"))
    monkeypatch.chdir(root)
    names, configs = page_extensions()
    snippets = includes.contained_snippets(includes.CurrentPage("docs/hostile.md", page),
                                           base_path=["."], check_paths=True, dedent_subsections=True)
    return markdown.Markdown(extensions=[*names, snippets], extension_configs=configs).convert(page)


def figure_root(root: Path, monkeypatch) -> None:
    """Make ``root`` a scratch root with one generated figure, ``figures/hostile/f.svg`` (it describes
    itself), and an empty snippets folder, and work there (the site's includes are read from it)."""
    from site_build import generated

    (root / "figures" / "hostile").mkdir(parents=True)
    (root / "figures" / "hostile" / "f.svg").write_text(
        "<svg><metadata><dc:description>A curve of 3 points</dc:description></metadata></svg>", encoding="utf-8")
    monkeypatch.setattr(generated, "FIGURES", root / "figures")
    (root / "snippets").mkdir()
    monkeypatch.chdir(root)


def lines_read(monkeypatch, module, name: str) -> list[int]:
    """Count the lines given to ``module.name``, a function of a page's lines, while the test runs: the
    list returned holds the count so far, for tests that bound how often a page is read."""
    read, function = [0], getattr(module, name)

    def counting(lines):
        lines = list(lines)
        read[0] += len(lines)
        return function(lines)

    monkeypatch.setattr(module, name, counting)
    return read


def rendered_page(text: str):
    """A MkDocs page made from ``text`` and rendered as ``mkdocs build`` renders it, with the plugin's
    Markdown and content stages: its title, table of contents and HTML as the theme gets them."""
    from mkdocs.structure.files import File, Files
    from mkdocs.structure.pages import Page

    config = load_config(str(ROOT / "mkdocs.yml"))
    plugin = SiteBuild()
    plugin.on_config(config)
    plugin.state = BuildState(outputs=build_output.BuildOutputs(lambda: "hostile tests"),
                              measured=measured.MeasuredSections())
    config.plugins._current_plugin = None
    file = File.generated(config, "hostile.md", content=text)
    files = Files([file])
    page = Page(None, file, config)
    page.read_source(config)
    page.markdown = plugin.on_page_markdown(page.markdown, page=page, config=config, files=files)
    page.render(config, files)
    page.content = plugin.on_page_content(page.content, page=page, config=config, files=files)
    return page


def bibliography_of(tmp_path: Path, monkeypatch, entry: str) -> dict:
    """The works of a references.bib that holds ``entry``, made the build's bibliography."""
    from site_build import citations

    source = tmp_path / "references.bib"
    source.write_text(entry + "\n", encoding="utf-8")
    known = citations.works(source)
    monkeypatch.setattr(citations, "works", lambda path=None: known)
    return known


def failed_figure(tree: Path, monkeypatch, name: str, code: str) -> str:
    """The error the figure stage raises for ``snippets/chapter99/figure_<name>.py`` holding ``code`` (a
    script meant to fail), shown on ``docs/chapter-99.md``, in the scratch tree ``tree`` (the
    ``generated_tree`` fixture)."""
    import pytest

    from site_build import generated

    folder = tree / "snippets" / "chapter99"
    folder.mkdir(parents=True)
    (folder / f"figure_{name}.py").write_text(code)
    (tree / "docs" / "chapter-99.md").write_text(f"![a figure](figures/chapter99/{name}.svg)\n")
    monkeypatch.setattr(generated, "figure_scripts", lambda: [folder / f"figure_{name}.py"])
    with pytest.raises(RuntimeError) as caught:
        generated.build_figures("shared")
    return str(caught.value)
