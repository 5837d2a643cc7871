"""Every internal link and #anchor in the built site points at something that exists."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key) and not (tag == "link" and attrs.get("rel") == "canonical"):
                self.links.append(attrs[key])


def _parse(path: Path) -> _Collector:
    c = _Collector()
    c.feed(path.read_text(encoding="utf-8", errors="replace"))
    return c


def _target(site: Path, page: Path, link: str) -> Path | None:
    url, _ = urldefrag(link)
    parsed = urlparse(url)
    if parsed.scheme or parsed.netloc or url.startswith(("mailto:", "data:", "javascript:")):
        return None  # not an internal link (other hosts are the offline test's business)
    base = site if parsed.path.startswith("/") else page.parent  # 404.html links from the site root
    target = (base / unquote(parsed.path).lstrip("/")).resolve() if url else page
    return target / "index.html" if target.is_dir() else target


def test_internal_links_and_anchors_resolve(built_site):
    pages = sorted(built_site.rglob("*.html"))
    parsed = {p.resolve(): _parse(p) for p in pages}
    broken = []
    for page in pages:
        for link in parsed[page.resolve()].links:
            target = _target(built_site, page, link)
            if target is None:
                continue
            if not target.exists():
                broken.append(f"{page.relative_to(built_site)}: {link} (no such file)")
                continue
            fragment = urldefrag(link)[1]
            if fragment and target.suffix == ".html":
                ids = parsed.get(target.resolve()) or _parse(target)
                if unquote(fragment) not in ids.ids:
                    broken.append(f"{page.relative_to(built_site)}: {link} (no anchor #{fragment})")
    assert not broken, "broken internal links:\n" + "\n".join(sorted(set(broken))[:40])


def test_link_checker_sees_links(built_site):
    """Guard against a checker that passes because it found nothing to check."""
    home = _parse(built_site / "index.html")
    assert len([l for l in home.links if not re.match(r"https?:", l)]) > 10
