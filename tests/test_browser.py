"""Open every built page in headless Chromium, as a reader would.

Fails on a console error, on any request the page makes to another host, on
math that did not render, and on a page missing its code blocks. Screenshots
go to artifacts/screenshots/ (look at them). Chromium comes from Debian: when
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
    page = browser.new_page(viewport={"width": 1280, "height": 900})
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

    if source is not None:
        text = source.read_text(encoding="utf-8")
        if "\\(" in text or "\\[" in text:
            # math in a closed tab or collapsed solution is not laid out; every visible formula must be
            heights = page.eval_on_selector_all(
                "math", "els => els.filter(e => e.checkVisibility()).map(e => e.getBoundingClientRect().height)"
            )
            assert heights and min(heights) > 0, f"{url}: math missing or not laid out"
        expected_blocks = len(doc_blocks.blocks(source))
        shown = page.eval_on_selector_all("div.highlight code", "els => els.length")
        assert shown >= expected_blocks, f"{url}: {shown} code blocks shown, {expected_blocks} python blocks expected"
    else:
        cells = page.eval_on_selector_all(".jp-CodeCell", "els => els.length")
        outputs = page.eval_on_selector_all(".jp-OutputArea-output", "els => els.length")
        assert cells > 0 and outputs > 0, f"{url}: drill notebook without code cells or outputs"
    page.close()
