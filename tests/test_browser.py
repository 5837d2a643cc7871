"""Open every built page in headless Chromium, as a reader would.

Fails on a console error, on any request the page makes to another host, on
math that did not render, on an image that did not load, on a literal ``` in
the page's text, and when the python blocks or their outputs on the page are
not the ones the doc tests ran. On the recall pages every question is visible
and every answer is behind a closed <details>, one per question; on the drill
notebooks every code cell shows its output. Every page passes axe-core's
WCAG 2 A/AA rules in the light palette and again in the dark one (the reader's
system asking for dark), and every image has alt text that says more than
its file name. The printable book (print_page/) passes the same checks (axe's color rules on
what it shows that no single page does: see ``_check_wcag``) and is printed to PDF
under print media, with every page, answer, figure and formula in it; each source page that an
excerpt links to is themed, numbered, and marks the excerpt's lines on arrival. Screenshots of
both palettes go to artifacts/screenshots/
(look at them). Chromium comes from Debian: when
it is missing and we are root, the test installs it with apt-get; otherwise it
fails saying what to install. It is never skipped.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

import doc_blocks
from accessibility import PRINT_MARKERS, PRINT_ONLY, SCHEMES, applied_scheme, images_without_real_alt, rules_coloring, wcag_violations

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/lib/chromium/chromium")  # the binary itself: /usr/bin/chromium's wrapper exports API keys
DEBIAN_PACKAGES = ["chromium", "fonts-lmodern"]  # fonts-lmodern: Latin Modern Math, a font with a MATH table
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-domain-reliability",
]
SCREENSHOTS = doc_blocks.ROOT / "artifacts" / "screenshots"


def _install_chromium() -> None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail(f"Chromium not found at {CHROMIUM}; install Debian's packages: apt-get install {' '.join(DEBIAN_PACKAGES)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *DEBIAN_PACKAGES]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode:
            pytest.fail(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists() or not Path("/usr/share/texmf/fonts/opentype/public/lm-math/latinmodern-math.otf").exists():
        _install_chromium()
    assert CHROMIUM.exists(), f"apt-get installed chromium but {CHROMIUM} is missing"
    return CHROMIUM


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_url(built_site):
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(chromium), headless=True, args=FLAGS)
        yield b
        b.close()


#: the printable book: every page of the navigation on one page (mkdocs-print-site-plugin)
PRINT_PAGE = "print_page/index.html"


def _excerpted_source_pages() -> list[str]:
    """The source pages (``source/<path>.html``) that an excerpt on some page links to."""
    linked = set()
    for page in doc_blocks.pages():
        linked.update(re.findall(r'--8<--\s+"((?:netcl_lite|kernels)/[^":]+)', page.read_text(encoding="utf-8")))
    return [f"source/{path}.html" for path in sorted(linked)]


def _site_pages():
    pages = [(p, doc_blocks.rendered_page(Path(""), p).as_posix()) for p in doc_blocks.pages()]
    drills = sorted(doc_blocks.ROOT.glob("snippets/week*/drill_*.py"))
    for week in sorted({d.parent.name for d in drills}):
        name = week.replace("week", "week-") + "-drill"
        pages.append((None, f"drills/{name}/index.html"))
    pages.append(("print", PRINT_PAGE))
    pages += [("source", path) for path in _excerpted_source_pages()]
    return pages


@pytest.mark.parametrize("source, path", _site_pages(), ids=[p for _, p in _site_pages()])
def test_page_renders_offline_in_chromium(browser, site_url, source, path):
    page = browser.new_page(viewport={"width": 1280, "height": 800}, color_scheme="light")
    errors, foreign = [], []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def refuse_other_hosts(route):
        host = urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            route.continue_()
        else:
            foreign.append(route.request.url)
            route.abort()

    page.route("**/*", refuse_other_hosts)
    url = f"{site_url}/{path.removesuffix('index.html')}"
    response = page.goto(url, wait_until="networkidle")
    assert response is not None and response.status == 200, f"{url}: HTTP {response and response.status}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = path.removesuffix("index.html").strip("/").replace("/", "_") or "home"
    page.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=source != "print")   # the book: its first screen
    assert not foreign, f"{url} requested other hosts: {foreign}"
    assert not errors, f"{url} logged console errors: {errors}"

    broken = page.eval_on_selector_all("img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src)")
    assert not broken, f"{url}: images that did not load: {broken}"
    unnamed = images_without_real_alt(page)
    assert not unnamed, f"{url}: images without alt text, or with only their file name: {unnamed}"
    _check_wcag(page, url, "light")
    content = page.eval_on_selector(".md-content", "e => e.textContent")
    assert "```" not in content, f"{url}: a literal ``` in the page text (a fence that did not render)"

    if source == "print":
        _check_page_fits_and_figures_are_captioned(page, url)
        _check_the_book_prints_whole(page, url)
    elif source == "source":
        _check_source_page(page, url)
    elif source is not None:
        text = source.read_text(encoding="utf-8")
        if "\\(" in text or "\\[" in text:
            # math in a closed tab or collapsed solution is not laid out; every visible formula must be
            heights = page.eval_on_selector_all(
                "math", "els => els.filter(e => e.checkVisibility()).map(e => e.getBoundingClientRect().height)"
            )
            assert heights and min(heights) > 0, f"{url}: math missing or not laid out"
        _check_blocks_are_the_tested_ones(page, url, source)
        if "recall-questions" in text:
            _check_answers_wait_for_a_click(page, url)
        _check_page_fits_and_figures_are_captioned(page, url)
    else:
        _check_page_fits_and_figures_are_captioned(page, url)
        cells = page.eval_on_selector_all(
            ".jp-CodeCell", "els => els.map(c => c.querySelector('.jp-OutputArea-output')?.textContent.trim().length || 0)"
        )
        assert cells, f"{url}: drill notebook without code cells"
        assert all(cells), f"{url}: code cells {[i for i, n in enumerate(cells) if not n]} show no output"
    page.close()


@pytest.fixture(scope="session")
def dark_tab(browser):
    """One tab, reused for every page, in a context whose system asks for dark (prefers-color-scheme)."""
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if urlparse(route.request.url).hostname == "127.0.0.1" else route.abort())
    yield page
    context.close()


@pytest.mark.parametrize("path", [p for _, p in _site_pages()])
def test_page_meets_wcag_aa_in_dark_mode(dark_tab, site_url, path):
    url = f"{site_url}/{path.removesuffix('index.html')}"
    response = dark_tab.goto(url, wait_until="load")
    assert response is not None and response.status == 200, f"{url}: HTTP {response and response.status}"
    shot = path.removesuffix("index.html").strip("/").replace("/", "_") or "home"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    dark_tab.screenshot(path=str(SCREENSHOTS / f"{shot}.dark.png"), full_page=path != PRINT_PAGE)
    _check_wcag(dark_tab, url, "dark")


def _print_sections_are_checked_pages(page, url: str) -> None:
    """Each page section of the printable book is a page this module checks on its own."""
    checked = {path.removesuffix("index.html").strip("/").replace("/", "-") or "index" for _, path in _site_pages()}
    sections = page.eval_on_selector_all("#print-site-page section.print-page:not(.md-section)",
                                         "els => els.map(e => e.id)")
    assert sections, f"{url}: no page sections in the printable book"
    unchecked = sorted(set(sections) - checked)
    assert not unchecked, f"{url}: the printable book holds pages no test opens on their own: {unchecked}"


def _check_wcag(page, url: str, palette: str) -> None:
    """The palette the reader's system asked for is the one applied, and axe finds no WCAG 2 A/AA violation.

    On the printable book, which holds every page, axe's rules that read colors
    (:data:`accessibility.COLOR_RULES`: color-contrast and link-in-text-block, nearly all of axe's
    time there) check only what no single page shows as it opens (:data:`accessibility.PRINT_ONLY`:
    the collapsed answers, every tab's panel, what the print-site plugin adds around the pages); the
    other rules, which read the book's structure, check the whole book, in the light palette (the
    palette changes no structure). That still covers every text's and link's colors in both
    palettes: each of the book's page sections is a page checked on its own, in both palettes, with
    every rule (asserted here); the book loads the same stylesheets as every page, and none of their
    rules for the book (selectors naming ``print-site`` or ``print-page``) sets a color, a
    background, opacity or a filter on screen (asserted here), so a text both show has the same
    colors in both. (A heading reached by a link in the book flashes orange for 1.5 s, print-site's
    ``:target`` animation; axe opens the book at its top, where no heading is a target.)"""
    scheme = applied_scheme(page)
    assert scheme == SCHEMES[palette], f"{url}: asked for the {palette} palette, the page applied {scheme!r}"
    if url.endswith(PRINT_PAGE.removesuffix("index.html")):
        _print_sections_are_checked_pages(page, url)
        coloring = rules_coloring(page, PRINT_MARKERS)
        assert not coloring, f"{url}: the book's own styles change colors that its pages show: {coloring}"
        violations = wcag_violations(page, colors_only_in=PRINT_ONLY, structure=palette == "light")
    else:
        violations = wcag_violations(page)
    assert not violations, f"{url} in the {palette} palette breaks WCAG 2 A/AA:\n" + "\n".join(violations)


def _check_blocks_are_the_tested_ones(page, url: str, source: Path) -> None:
    """Python blocks and output blocks, counted apart, equal what the doc tests ran and compared."""
    blocks = doc_blocks.blocks(source)
    expected_code = len(blocks)  # runnable blocks and library excerpts
    expected_outputs = sum(b.expected_output is not None for b in blocks if b.syntax == "python")
    code = page.eval_on_selector_all(
        "div.language-python, div.language-py", "els => els.filter(e => !e.classList.contains('doc-signature')).length"
    )
    outputs = page.eval_on_selector_all("div.highlight.output", "els => els.length")
    assert code == expected_code, f"{url}: {code} python blocks rendered, the doc tests ran or checked {expected_code}"
    assert outputs == expected_outputs, f"{url}: {outputs} output blocks rendered, the doc tests compared {expected_outputs}"


_RECALL = """() => {
  const lists = [...document.querySelectorAll('.md-content .recall-questions')];
  const details = [...document.querySelectorAll('.md-content details')];
  return {
    lists: lists.map(list => {
      let answers = 0;
      for (let e = list.nextElementSibling; e && !/^H[12]$|^H3$/.test(e.tagName) && !e.classList.contains('recall-questions'); e = e.nextElementSibling) {
        if (e.matches('details.success')) answers += 1;
      }
      return {questions: list.querySelectorAll(':scope > ol > li').length, visible: list.checkVisibility(),
              inside: !!list.closest('details'), answers};
    }),
    open: details.filter(d => d.open).map(d => d.querySelector('summary').textContent.trim()),
    shown: details.filter(d => [...d.children].some(c => c.tagName !== 'SUMMARY' && c.checkVisibility()))
                  .map(d => d.querySelector('summary').textContent.trim()),
  };
}"""


def _check_answers_wait_for_a_click(page, url: str) -> None:
    """Recall page: questions visible and outside any <details>; each has its own closed answer."""
    state = page.evaluate(_RECALL)
    assert len(state["lists"]) >= 5, f"{url}: only {len(state['lists'])} question lists"
    for i, lst in enumerate(state["lists"]):
        assert lst["questions"] > 0 and lst["visible"] and not lst["inside"], f"{url}: question list {i} hidden: {lst}"
        assert lst["answers"] == lst["questions"], f"{url}: question list {i} has {lst['questions']} questions, {lst['answers']} answers"
    assert not state["open"], f"{url}: answers open before a click: {state['open']}"
    assert not state["shown"], f"{url}: answer text visible before a click: {state['shown']}"


# ---- the page fits a 1280 px window; figures are captioned and legible -------------------------------

# Every box of code or printed text on a page: code and output blocks, >>> sessions, API signatures,
# and the notebooks' input and output cells. Hidden tab panels and closed <details> are shown first,
# so that every box is measured, not only the one open.
_WIDE_BOXES = """() => {
  document.querySelectorAll('.tabbed-block').forEach(b => b.style.display = 'block');
  document.querySelectorAll('details').forEach(d => d.open = true);
  const column = document.querySelector('.md-content__inner').getBoundingClientRect();
  const boxes = [...document.querySelectorAll(
    '.md-content pre > code, .md-content .doc-signature pre, .md-content .jp-InputArea-editor pre,'
    + ' .md-content .jp-OutputArea-output pre')];
  return boxes.filter(e => e.checkVisibility()).flatMap(e => {
    const r = e.getBoundingClientRect();
    const hidden = e.scrollWidth - e.clientWidth;
    const past = Math.round(r.right - column.right);
    if (hidden <= 1 && past <= 1) return [];
    const block = e.closest('.highlight, .jp-Cell, .doc-signature') || e;
    const line = (e.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '')).slice(0, 70);
    return [`${block.tagName.toLowerCase()}.${[...block.classList].slice(0, 3).join('.')}: ${hidden > 1 ? hidden
      + ' px scroll sideways' : past + ' px past the column'} (longest line: ${JSON.stringify(line)})`];
  });
}"""

_UNCAPTIONED = """() => [...document.querySelectorAll('.md-content img')].filter(img => {
  const figure = img.closest('figure');
  const caption = figure && figure.querySelector(':scope > figcaption');
  return !(caption && caption.textContent.trim().length > 20);
}).map(img => img.getAttribute('src'))"""


# The blocks that may have a copy button: runnable python (not an excerpt), shell commands, and
# >>> sessions whose copy is the code alone (data-copy, site_build/copyable.py).
_COPY_BUTTONS = """() => [...document.querySelectorAll('.md-content div.highlight')].filter(div =>
  div.querySelector('button[data-md-type="copy"], .md-clipboard')).filter(div => !(
    (div.matches('.language-python') && !div.matches('.excerpt, .doc-signature'))
    || div.matches('.language-bash') || (div.matches('.language-pycon') && div.hasAttribute('data-copy'))
  )).map(div => `${[...div.classList].join('.')}: ${div.textContent.trim().slice(0, 60)}`)"""


def _check_page_fits_and_figures_are_captioned(page, url: str) -> None:
    """Only programs have copy buttons; nothing scrolls sideways at 1280 px; every image is a
    <figure> with a caption."""
    assert page.viewport_size["width"] == 1280
    copyable = page.evaluate(_COPY_BUTTONS)
    assert not copyable, f"{url}: copy buttons on blocks that are not programs:\n" + "\n".join(copyable)
    wide = page.evaluate(_WIDE_BOXES)
    assert not wide, f"{url}: {len(wide)} boxes do not fit the column at 1280 px:\n" + "\n".join(wide)
    uncaptioned = page.evaluate(_UNCAPTIONED)
    assert not uncaptioned, f"{url}: images outside a <figure> with a <figcaption>: {uncaptioned}"


FIGURES = sorted(f"figures/{p.parent.name}/{p.stem.removeprefix('figure_')}.svg"
                 for p in doc_blocks.ROOT.glob("snippets/*/figure_*.py"))

# Inside a figure as matplotlib writes it (text as paths): each piece of text is a <g id="text_N">
# whose first child is a comment holding the text. Two texts whose boxes overlap collide. A legend
# lies on data when its box covers a bar or a point of a curve drawn in the same axes.
_FIGURE_PROBLEMS = """() => {
  const label = g => { const c = [...g.childNodes].find(n => n.nodeType === 8); return c ? c.data.trim() : g.id; };
  const box = e => e.getBoundingClientRect();
  const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left))
                          * Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
  const problems = [];
  const texts = [...document.querySelectorAll('g[id^="text_"]')].filter(g => box(g).width > 0);
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      if (texts[i].contains(texts[j]) || texts[j].contains(texts[i])) continue;
      const area = overlap(box(texts[i]), box(texts[j]));
      if (area > 1) problems.push(`text ${JSON.stringify(label(texts[i]))} (${texts[i].id}) overlaps `
                                  + `${JSON.stringify(label(texts[j]))} (${texts[j].id}) by ${area.toFixed(0)} px²`);
    }
  }
  const axesList = [...document.querySelectorAll('g[id^="axes_"]')];
  for (const legend of document.querySelectorAll('g[id^="legend_"]')) for (const axes of axesList) {
    const L = box(legend);
    const inside = p => p.x > L.left && p.x < L.right && p.y > L.top && p.y < L.bottom;
    const children = [...axes.children].filter(g => g.tagName === 'g' && !/^(text_|legend_|matplotlib\\.axis)/.test(g.id));
    const frame = children.filter(g => g.id.startsWith('patch_')).map(g => box(g)).reduce((a, b) =>
      (!a || b.width * b.height > a.width * a.height) ? b : a, null);
    for (const g of children) {
      const r = box(g);
      if (r.width < 2 || r.height < 2) continue;                                   // a spine
      if (frame && r.width === frame.width && r.height === frame.height) continue; // the axes' background
      for (const path of g.querySelectorAll('path')) {
        const matrix = path.getScreenCTM(), length = path.getTotalLength();
        const line = g.id.startsWith('line2d_');
        const n = line ? 400 : 0;
        let hit = false;
        if (line) {
          for (let k = 0; k <= n && !hit; k++) {
            const q = path.getPointAtLength(length * k / n).matrixTransform(matrix);
            hit = inside(q);
          }
        } else {
          hit = overlap(box(path), L) > 4;
        }
        if (hit) { problems.push(`legend ${legend.id} covers data ${g.id} of ${axes.id}`); break; }
      }
    }
  }
  return problems;
}"""


@pytest.mark.parametrize("figure", FIGURES)
def test_figure_has_no_colliding_text_and_no_legend_on_data(browser, site_url, figure):
    """Each generated SVG, opened on its own: no two texts overlap, no legend covers a bar or a curve."""
    shown_on = [p.relative_to(doc_blocks.DOCS).as_posix() for p in doc_blocks.pages()
                if figure in p.read_text(encoding="utf-8")]
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    response = page.goto(f"{site_url}/{figure}")
    assert response is not None and response.status == 200, f"{figure}: HTTP {response and response.status}"
    problems = page.evaluate(_FIGURE_PROBLEMS)
    page.close()
    assert not problems, f"{figure} (on {', '.join(shown_on) or 'no page'}):\n" + "\n".join(problems)


# ---- the printable book and the source pages -----------------------------------------------------------

_BOOK = """() => ({
  closed: [...document.querySelectorAll('.md-content details')].filter(d => !d.open).map(d => d.querySelector('summary')?.textContent.trim()),
  sections: [...document.querySelectorAll('#print-site-page section.print-page')].map(s => s.id),
  figures: [...document.querySelectorAll('#print-site-page img[src*="figures/"]')].map(i => ({
    src: i.getAttribute('src'), loaded: i.complete && i.naturalWidth > 0, caption: !!i.closest('figure')?.querySelector('figcaption')})),
  math: [...document.querySelectorAll('#print-site-page math')].filter(m => m.checkVisibility()).length,
  laidOutMath: [...document.querySelectorAll('#print-site-page math')].filter(m => m.checkVisibility()
                 && m.getBoundingClientRect().height > 0).length,
})"""


def _check_the_book_prints_whole(page, url: str) -> None:
    """Printed (print media, as a PDF): every page of the site in the navigation's order, every collapsed
    answer open, every figure loaded with its caption, the formulas laid out as MathML."""
    figures = sorted({m for p in doc_blocks.pages() for m in re.findall(r"figures/[\w-]+/[\w-]+\.svg", p.read_text(encoding="utf-8"))})
    site = url.removesuffix("print_page/")
    formulas = sum(page.request.get(f"{site}/{doc_blocks.rendered_page(Path(''), p).as_posix()}").text().count("<math")
                   for p in doc_blocks.pages())
    page.emulate_media(media="print")
    page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    pdf = page.pdf(format="A4", print_background=True)
    state = page.evaluate(_BOOK)
    page.emulate_media(media="screen")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") > 50, f"{url}: the printed book is {len(pdf)} bytes"
    assert not state["closed"], f"{url}: collapsed answers left closed in the printed book: {state['closed'][:5]}"
    assert len(state["sections"]) >= len(doc_blocks.pages()), f"{url}: {len(state['sections'])} pages in the book"
    shown = {f["src"].split("figures/", 1)[1] for f in state["figures"]}
    missing = [f for f in figures if f.split("figures/", 1)[1] not in shown]
    assert not missing, f"{url}: figures missing from the book: {missing}"
    broken = [f["src"] for f in state["figures"] if not (f["loaded"] and f["caption"])]
    assert not broken, f"{url}: figures not loaded or without a caption: {broken}"
    assert state["math"] == formulas and state["laidOutMath"] == formulas, \
        f"{url}: {state['laidOutMath']} of {state['math']} formulas laid out; the pages have {formulas}"


def _check_source_page(page, url: str) -> None:
    """A source page: in the theme, its lines numbered and anchored, an excerpt's range marked on arrival,
    and a link back to each page that shows an excerpt of it."""
    state = page.evaluate("""() => ({
      themed: !!document.querySelector('header.md-header') && !!document.querySelector('.md-content'),
      lines: document.querySelectorAll('.source-listing .line[id^="L"]').length,
      back: [...document.querySelectorAll('.source-intro a')].map(a => a.getAttribute('href')),
      ranges: [...document.querySelectorAll('.source-listing .range-anchor')].map(a => a.id),
      copy: !!document.querySelector('.source-listing .md-clipboard'),
    })""")
    assert state["themed"] and state["lines"] > 10, f"{url}: not a themed page with a numbered listing: {state}"
    assert not state["copy"], f"{url}: the listing has a copy button"
    assert state["ranges"] and any(not h.startswith("#") for h in state["back"]), f"{url}: no excerpt range or link back"
    first, last = map(int, re.fullmatch(r"L(\d+)-L(\d+)", state["ranges"][0]).groups())
    page.goto(f"{url.split('#')[0]}#{state['ranges'][0]}", wait_until="load")
    marked = page.evaluate("() => [...document.querySelectorAll('.source-listing .line.marked')].map(l => l.id)")
    assert marked == [f"L{n}" for n in range(first, last + 1)], f"{url}#{state['ranges'][0]}: marked {marked[:3]}…"
    top, bottom, header, height = page.evaluate(f"""() => {{
        const line = document.getElementById('L{first}').getBoundingClientRect();
        return [line.top, line.bottom, document.querySelector('header.md-header').getBoundingClientRect().bottom,
                window.innerHeight];
    }}""")
    assert header <= top and bottom <= height, \
        f"{url}#{state['ranges'][0]}: line {first} spans {top}-{bottom}px, not in view below the header ({header}px)"
