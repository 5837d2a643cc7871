"""How long an author waits under ``mkdocs serve``: from saving a file to the served page showing it.

Starts ``mkdocs serve``, waits for the first build, then makes ``--edits`` prose edits to a page
(an HTML comment appended, which the built page carries) and times each from the write until
the served page contains it. Then it appends a comment line to one snippet and reports what
the rebuild ran (the execution cache's log lines) and how long it took. Every edited file is
restored at the end, also on failure.

    python benchmarks/serve_rebuild.py                      # mkdocs serve --dirty --no-strict: 5 prose edits of docs/index.md, one figure edit
    python benchmarks/serve_rebuild.py --clean              # plain mkdocs serve (every page rendered on each save)
    python benchmarks/serve_rebuild.py --page chapter-7.md --snippet snippets/chapter7/figure_attention_weights.py
    python benchmarks/serve_rebuild.py --out benchmarks/results/serve_rebuild.json   # also keep the figures

The timings depend on the machine and its load: ``--out`` records both (the CPU's name and the
load average before and after) beside the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from machine import cpu_name

ROOT = Path(__file__).resolve().parents[1]


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8", "replace")
    except OSError:
        return None


def wait_for(predicate, timeout: float, step: float = 0.05) -> float:
    """Seconds until ``predicate()`` holds (polled every ``step``); raises after ``timeout``."""
    began = time.perf_counter()
    while not predicate():
        if time.perf_counter() - began > timeout:
            raise TimeoutError(f"not seen within {timeout:.0f} s")
        time.sleep(step)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--page", default="index.md", help="the page under docs/ to edit")
    parser.add_argument("--snippet", default="snippets/week22/figure_rope.py", help="the snippet to edit once")
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--first-build-timeout", type=float, default=1800)
    parser.add_argument("--clean", action="store_true", help="plain mkdocs serve (every page rendered on every save) "
                        "instead of the README's mkdocs serve --dirty")
    parser.add_argument("--out", type=Path, help="also write the timings, the CPU and the load as JSON here")
    args = parser.parse_args()
    if args.edits < 1:
        parser.error("--edits must be at least 1")
    page, snippet = ROOT / "docs" / args.page, ROOT / args.snippet
    for path in (page, snippet):
        if not path.is_file():
            parser.error(f"{path} does not exist")
    rel = Path(args.page).with_suffix("")
    url = f"http://127.0.0.1:{args.port}/" + ("" if rel.name == "index" else f"{rel.as_posix()}/")
    originals = {page: page.read_bytes(), snippet: snippet.read_bytes()}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # a kill still restores the files below
    log: list[str] = []
    load_before = os.getloadavg()
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    command = [sys.executable, "-m", "mkdocs", "serve", "-a", f"127.0.0.1:{args.port}"] + ([] if args.clean else ["--dirty", "--no-strict"])   # a dirty build warns about navigation
    print(" ".join(command[2:]))
    serve = subprocess.Popen(command, cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=lambda: log.extend(iter(serve.stdout.readline, "")), daemon=True).start()
    try:
        first = wait_for(lambda: fetch(url) is not None, args.first_build_timeout, 0.5)
        print(f"first build served after {first:.1f} s")
        times = []
        for i in range(args.edits):
            time.sleep(1.0)
            probe = f"serve-rebuild-{uuid.uuid4().hex[:8]}"
            page.write_bytes(originals[page] + f"\n<!-- {probe} -->\n".encode())
            times.append(wait_for(lambda: probe in (fetch(url) or ""), 600))
            print(f"prose edit {i + 1}: {times[-1]:.2f} s")
        print(f"prose edits: median {statistics.median(times):.2f} s, "
              f"min {min(times):.2f}, max {max(times):.2f} over {len(times)}")
        page.write_bytes(originals[page])
        time.sleep(3.0)
        seen = len(log)
        began = time.perf_counter()
        # a new comment each run: the same one would be another run's stored figure, not a run
        snippet.write_bytes(originals[snippet] + f"\n# serve-rebuild probe {uuid.uuid4().hex[:8]}\n".encode())
        def rebuilt() -> bool:
            ran = [i for i, line in enumerate(log[seen:]) if "execution cache" in line and "figures" in line]
            return bool(ran) and any("Documentation built" in line for line in log[seen + ran[0]:])

        wait_for(rebuilt, 900)
        snippet_seconds = time.perf_counter() - began
        print(f"snippet edit ({args.snippet}): rebuilt in {snippet_seconds:.2f} s; the build logged:")
        for line in log[seen:]:
            if "execution cache" in line or "Documentation built" in line or "Building documentation" in line:
                print("   ", line.strip())
        if args.out:
            report = {"command": " ".join(command[2:]), "page": args.page, "snippet": args.snippet,
                      "first_build_s": round(first, 2), "prose_edit_s": [round(t, 3) for t in times],
                      "prose_edit_median_s": round(statistics.median(times), 3),
                      "snippet_edit_s": round(snippet_seconds, 2), "cpu": cpu_name(), "cores": os.cpu_count(),
                      "loadavg_1min_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}
            args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
            print(f"wrote {args.out}")
    finally:
        for path, data in originals.items():
            path.write_bytes(data)
        serve.terminate()
        serve.wait(timeout=30)


if __name__ == "__main__":
    main()
