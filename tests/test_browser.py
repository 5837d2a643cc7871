"""Open every built page in headless Chromium, as a reader would.

Fails on a console error, on any request the page makes to another host, on
math that did not render, on an image that did not load, on a literal ``` in
the page's text, and when the python blocks or their outputs on the page are
not the ones the doc tests ran. On the recall pages every question is visible
and every answer is behind a closed <details>, one per question; on the drill
notebooks every code cell shows its output. Every page passes axe-core's
WCAG 2 A/AA rules in the light palette and again in the dark one (the reader's
system asking for dark), and every image has alt text that says more than
its file name. Screenshots of both palettes go to artifacts/screenshots/
(look at them). Chromium comes from Debian: when
it is missing and we are root, the test installs it with apt-get; otherwise it
fails saying what to install. It is never skipped.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

import doc_blocks
from accessibility import SCHEMES, applied_scheme, images_without_real_alt, wcag_violations

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


def _site_pages():
    pages = [(p, doc_blocks.rendered_page(Path(""), p).as_posix()) for p in doc_blocks.pages()]
    drills = sorted(doc_blocks.ROOT.glob("snippets/week*/drill_*.py"))
    for week in sorted({d.parent.name for d in drills}):
        name = week.replace("week", "week-") + "-drill"
        pages.append((None, f"drills/{name}/index.html"))
    return pages


@pytest.mark.parametrize("source, path", _site_pages(), ids=[p for _, p in _site_pages()])
def test_page_renders_offline_in_chromium(browser, site_url, source, path):
    page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme="light")
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
    page.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=True)
    assert not foreign, f"{url} requested other hosts: {foreign}"
    assert not errors, f"{url} logged console errors: {errors}"

    broken = page.eval_on_selector_all("img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src)")
    assert not broken, f"{url}: images that did not load: {broken}"
    unnamed = images_without_real_alt(page)
    assert not unnamed, f"{url}: images without alt text, or with only their file name: {unnamed}"
    _check_wcag(page, url, "light")
    content = page.eval_on_selector(".md-content", "e => e.textContent")
    assert "```" not in content, f"{url}: a literal ``` in the page text (a fence that did not render)"

    if source is not None:
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
    else:
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
    dark_tab.screenshot(path=str(SCREENSHOTS / f"{shot}.dark.png"), full_page=True)
    _check_wcag(dark_tab, url, "dark")


def _check_wcag(page, url: str, palette: str) -> None:
    """The palette the reader's system asked for is the one applied, and axe finds no WCAG 2 A/AA violation."""
    scheme = applied_scheme(page)
    assert scheme == SCHEMES[palette], f"{url}: asked for the {palette} palette, the page applied {scheme!r}"
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
