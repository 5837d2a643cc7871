"""The site's build as one MkDocs plugin: its stages, in order, and the state they share.

==========================  ====================================================================
event                       stages, in this order
==========================  ====================================================================
``on_startup``              remember whether ``--dirty`` (serve or build) runs (:mod:`.dirty_pages`)
``on_config``               includes confined to the project (:mod:`.includes`), and what they
                            bring into a page checked as the page is (:mod:`.brought`); under
                            ``mkdocs serve --dirty``, no printable book
                            (:func:`.apparatus.no_print_page`)
``on_pre_build``            1. Chapter 9's training run (:mod:`.capstone_run`), when its inputs
                            changed; 2. figures and drill notebooks (:mod:`.generated`), when
                            theirs changed; 3. Chapter 8's measured report (:mod:`.measured`),
                            read again when it or its results changed; 4. a fresh set of build
                            outputs (:mod:`.build_output`)
``on_files``                1. pages whose shown inputs changed are rendered again under
                            ``--dirty`` (:mod:`.dirty_pages`); 2. the wheel (:mod:`.shipped_wheel`),
                            made again when its sources changed; 3. its files as pages in the theme
                            (:mod:`.source_pages`)
``on_env``                  the theme's templates compiled once and kept, compiled, in a
                            bytecode cache for the next builds (:mod:`.templates`)
``on_page_markdown``        under ``--dirty``, the files read from here to the end of
                            ``on_page_content`` recorded as the page's inputs (:mod:`.dirty_pages`);
                            0. citations, excerpts' sections and figures' captions checked, naming
                            the line (:mod:`.apparatus`, :mod:`.copyable`, :mod:`.generated`);
                            1. every marker checked (:mod:`.markers`), then, in one pass, measured
                            sections, build outputs' places, needs-extra notes and the
                            Bibliography's and Glossary's entries (:mod:`.apparatus`); 2. excerpt
                            labels (:mod:`.copyable`); 3. citations as links (:mod:`.apparatus`)
``on_page_content``         1. figure alt texts, and every figure shown with its caption
                            (:mod:`.generated`); 2. LaTeX to MathML, in the
                            page and its table of contents (:mod:`.mathml`); 3. the ``output`` class (:mod:`.outputs`);
                            4. ``no-copy`` and ``>>>`` copies (:mod:`.copyable`); 5. every
                            citation became a link (:mod:`.apparatus`); 6. tooltips on each
                            glossary term's first use (:mod:`.apparatus`); 7. no marker left
                            unread; 8. what build outputs printed, escaped, in their places;
                            9. a source page's listing (:mod:`.source_pages`)
``on_post_page``            which source pages were rendered (:mod:`.source_pages`); notebook pages
                            without CDN loaders (:mod:`.offline`)
``on_post_build``           under ``--dirty``, the pages' record for the next dirty build
                            (:mod:`.dirty_pages`); the execution cache's reuse count; last,
                            after print-site: links of the printable book to no anchor of
                            it, unwrapped (:mod:`.apparatus`), and the loaders its notebook
                            pages bring, stripped (:mod:`.offline`)
==========================  ====================================================================

Docstrings are rewritten by a Griffe extension (:mod:`.docstrings`), which ``mkdocs.yml`` gives
to mkdocstrings. Nothing is kept in module globals between stages: a :class:`SiteBuild` holds what
lives across the builds of one ``mkdocs serve`` session (the inputs each stage last ran with, the
key context, the page digests) and a :class:`BuildState` what one build shares. Under ``mkdocs
serve`` a save reruns only the stages whose inputs changed: a prose edit reruns neither the
training run nor the figures, and with ``--dirty`` only the edited page is rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mkdocs.plugins import BasePlugin, CombinedEvent, event_priority

from netcl_lite import fingerprint

from . import apparatus, brought, build_output, capstone_run, copyable, generated, includes, markers, mathml
from . import measured, offline, outputs, shipped_wheel, source_pages, store, templates
from .dirty_pages import DirtyPages
from .inputs import InputWatch
from .paths import DOCS, FIGURES


def _first_line(page, markdown: str) -> int:
    """The line of the page's file that ``markdown``, its text after any front matter, starts on."""
    try:
        source = Path(page.file.abs_src_path).read_text(encoding="utf-8-sig")
    except (TypeError, OSError):                  # a page made in memory has no file
        return 1
    return source.count("\n", 0, len(source) - len(markdown)) + 1 if source.endswith(markdown) else 1


def check_metadata(page, markdown: str) -> None:
    """Raise ``ValueError`` naming the page's line 1 when MkDocs took lines of the page's text as metadata
    that the page does not mark as front matter, or left a front matter block that is not YAML (or a
    list) on the page as its text; either way, without a word, the page shows something other than it
    says: a first line such as ``Note: run this on a GPU.`` is read as MultiMarkdown metadata (key
    ``note``) and never shown, and a front matter YAML cannot read shows as a rule and a heading."""
    import yaml
    from mkdocs.utils.meta import YAML_RE

    meta = getattr(page, "meta", None)
    try:
        source = page.file.content_string
    except (AttributeError, TypeError, OSError, ValueError):      # a page made in memory, a stand-in
        return
    if not isinstance(source, str):
        return
    name = f"docs/{page.file.src_uri}"
    front = YAML_RE.match(source)
    first = source.split("\n", 1)[0].strip()
    if front is None:
        if isinstance(meta, dict) and meta:
            raise ValueError(f"{name}:1: {first!r:.80}: MkDocs reads the page's first lines ('Key: value', "
                             f"MultiMarkdown metadata) as metadata and does not show them; start the page with "
                             f"its heading, or put metadata in YAML front matter between '---' lines")
        return
    if not markdown.startswith(front.group(0)):        # read as front matter: stripped from the text
        _check_repeated_keys(name, front.group(1))
        return
    try:
        data = yaml.safe_load(front.group(1))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = 2 + mark.line if mark is not None else 1
        raise ValueError(f"{name}:{at}: the page's front matter is not valid YAML ({' '.join(str(err).split()):.200}); "
                         f"MkDocs would show it as the page's text: fix it, or remove the '---' lines") from None
    if isinstance(data, list):
        raise ValueError(f"{name}:1: the page's front matter is a YAML list, not 'key: value' lines; MkDocs "
                         f"would show it as the page's text: write it as a mapping, or remove the '---' lines")


def _check_repeated_keys(name: str, front: str) -> None:
    """Raise ``ValueError`` naming the page's line when its front matter (``front``, the text between the
    ``---`` lines) gives a key twice at its top level: YAML as MkDocs reads it keeps the last value
    without a word, so an edited ``title`` above a stale one is not the title the page gets."""
    import yaml

    try:
        node = yaml.compose(front, Loader=yaml.SafeLoader)
    except yaml.YAMLError:                           # MkDocs read it; a composer that cannot is no error here
        return
    if not isinstance(node, yaml.MappingNode):
        return
    seen: dict[str, int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        line = 2 + key.start_mark.line
        if key.value in seen:
            raise ValueError(f"{name}:{line}: the front matter gives {key.value!r:.80} again (first on line "
                             f"{seen[key.value]}); MkDocs keeps the last one without a word: give it once")
        seen[key.value] = line


def _generated_inputs() -> list:
    """What the figures and notebooks are made from besides the library, and the files made: a
    deleted or edited figure is made again."""
    return generated.inputs() + sorted(FIGURES.rglob("*.svg")) + sorted((DOCS / "drills").glob("*.ipynb"))


@dataclass
class BuildState:
    """What the stages of one build share."""

    outputs: build_output.BuildOutputs
    measured: measured.MeasuredSections


class SiteBuild(BasePlugin):
    """The build's stages (see the module's table for their order)."""

    def __init__(self):
        super().__init__()
        self.page = includes.CurrentPage()
        self.inputs = InputWatch()
        self.dirty_pages = DirtyPages()
        self.state: BuildState | None = None
        self.quick_loop = False          # mkdocs serve --dirty: the README's quick loop
        self.files = None                # this build's files (on_files), for the dirty record

    # -- across builds ---------------------------------------------------------------------------

    def context(self) -> str:
        """The execution cache's key context, computed again only when a file it digests
        (:func:`.store.context_files`: the library, the seeds file) or the result variables changed
        since (the packages and the device do not change within a process)."""
        return self.inputs.value("context", store.context_files(), store.context)

    def on_startup(self, *, command, dirty) -> None:
        self.dirty_pages.dirty = dirty
        self.quick_loop = command == "serve" and dirty

    def on_config(self, config):
        docs_dir = Path(config.docs_dir)
        if docs_dir.resolve() != DOCS.resolve():
            # the stages read and write under docs/ (figures, references.bib, glossary.yml, the drill
            # notebooks): pages from another folder would show those of docs/ without a word
            from mkdocs.exceptions import PluginError
            raise PluginError(f"mkdocs.yml: docs_dir is {str(docs_dir)!r:.200}; the site_build plugin reads the "
                              f"figures, references.bib and glossary.yml from {DOCS} and writes the figures "
                              f"and drill notebooks there: set docs_dir to docs (or a link to it)")
        if self.quick_loop:
            apparatus.no_print_page(config)
        config = includes.contain(config, self.page)
        config.markdown_extensions.append(brought.BroughtChecked(self.page))
        config.markdown_extensions.append(mathml.RawHtmlMath())      # math signs in raw HTML's tags and code
        return config

    # -- one build -------------------------------------------------------------------------------

    def on_pre_build(self, *, config) -> None:
        library = fingerprint.library_sources()
        if self.inputs.changed("capstone", library):
            try:
                capstone_run.train()
            except BaseException:
                self.inputs.forget("capstone")
                raise
        if self.inputs.changed("generated", library + _generated_inputs()):
            try:
                generated.build(self.context())
            except BaseException:
                self.inputs.forget("generated")
                raise
            self.inputs.changed("generated", library + _generated_inputs())   # with the files it wrote
        sections = self.inputs.value("measured", [measured.REPORT, measured.RESULTS],
                                     measured.MeasuredSections)
        self.state = BuildState(outputs=build_output.BuildOutputs(self.context), measured=sections)

    def on_files(self, files, *, config):
        self.files = files
        self.dirty_pages.invalidate(files, Path(config.site_dir))
        wheel = self.inputs.value("wheel", shipped_wheel.wheel_sources(), shipped_wheel.site_files)
        if not shipped_wheel.intact(wheel):            # emptied or damaged in the cache during this session
            self.inputs.forget("wheel")
            wheel = self.inputs.value("wheel", shipped_wheel.wheel_sources(), shipped_wheel.site_files)
        shipped_wheel.add_files(files, config, wheel)
        source_pages.add_pages(files, config, shipped_wheel.library_files(), shipped_wheel.wheel_name())
        return files

    def on_page_markdown(self, markdown, *, page, config, files):
        self.dirty_pages.rendering(page.file.src_uri)      # under --dirty: what it reads is its input
        check_metadata(page, markdown)
        first_line = _first_line(page, markdown)
        self.page.name, self.page.markdown, self.page.first_line = f"docs/{page.file.src_uri}", markdown, first_line
        for check in (apparatus.check_markdown, copyable.check_excerpts, copyable.check_python_blocks,
                      generated.check_captions,
                      mathml.check_attribute_lists):
            check(markdown, page.file.src_uri, first_line)                     # on the page's own lines
        markdown = markers.replace(markdown, self.page.name, {
            "kernels.json": self.state.measured.section,
            "build-output": self.state.outputs.block,
            "needs-extra": lambda marker: copyable.needs_extra_note(marker, config.site_url),
            "bibliography": lambda marker: apparatus.entries(marker, page.file.src_uri, files),
            "glossary": lambda marker: apparatus.entries(marker, page.file.src_uri, files),
        }, first_line=first_line)
        markdown = copyable.label_excerpts(markdown, page.file.src_uri)
        return apparatus.render_markdown(markdown, page.file.src_uri, files)

    def on_page_content(self, html, *, page, config, files):
        name = f"docs/{page.file.src_uri}"
        # the page as written, for the line an error names (a notebook's page has no Markdown stage)
        source, first_line = (self.page.markdown, self.page.first_line) if self.page.name == name else ("", 1)
        html = generated.with_alt(html, name, source, first_line)
        generated.check_rendered_figures(html, name, source, first_line)
        formulas = mathml.heading_formulas(html)          # for the table of contents and the title
        html = mathml.render(html, page.file.src_uri)
        if formulas and hasattr(page, "toc"):
            mathml.render_toc(page.toc, formulas, page.file.src_uri)
            first = next(iter(page.toc), None)
            if first is not None and first.level == 1 and "\\(" in (page.title or ""):
                page.title = mathml.plain_title(page.title, formulas.get(first.id, []))
        html = outputs.label(html)
        html = copyable.render_content(html)
        apparatus.check_content(html, page.file.src_uri, source, first_line)
        html = apparatus.render_content(html, page.file.src_uri)
        markers.unreplaced(html, name)
        html = self.state.outputs.insert(html, name)
        html = source_pages.fill(html, page)
        self.dirty_pages.rendered()
        return html

    def on_env(self, env, *, config, files):
        return templates.use_bytecode_cache(env)

    def on_post_page(self, output, *, page, config):
        source_pages.remember_rendered(page)
        return offline.strip_loaders(output, page.file.src_uri)

    def _report_reuse(self, *, config) -> None:
        self.dirty_pages.save(self.files, Path(config.site_dir))   # under --dirty, for the next build
        if self.state is not None and self.state.outputs.reused:
            store.log.info(f"execution cache: {self.state.outputs.reused} build outputs reused")
        self.state = None

    @event_priority(-100)           # after print-site has written the printable book
    def _repair_print_page(self, *, config) -> None:
        apparatus.repair_print_page(Path(config.site_dir))
        offline.strip_print_page_loaders(Path(config.site_dir) / apparatus.PRINT_PAGE)

    on_post_build = CombinedEvent(_report_reuse, _repair_print_page)

