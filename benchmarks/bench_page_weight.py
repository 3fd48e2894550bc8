"""What a first visit to each page of a built book downloads, measured in headless Chromium.

Every page of ``_toc.yml`` is opened in a fresh browser profile (an empty cache: a reader's first visit), from a
local server, and left to draw its figures and typeset its formulas; the page's own HTML and every resource it
fetched are summed from the browser's resource timing (``encodedBodySize``: the bytes as served, uncompressed
here).  Beside them, what a server that compresses text (GitHub Pages: gzip) would send: each fetched file
gzip-compressed at level 9, the fonts and images as they are.  Writes the result under its ``--label`` into
``benchmarks/results/page_weight.json`` (a second label is added beside the first), with the site's size and its
largest folders.

    python benchmarks/bench_page_weight.py /tmp/book-before/_build/html --label before
    python benchmarks/bench_page_weight.py _build/gpu/_build/html --label after

The last label written is the file's ``latest``: ``tests/test_page_weight.py`` holds it to a first visit of at most
2 MB (1 MB gzip-compressed) for every chapter page (issue 44).

Needs Debian's ``chromium`` and ``chromium-driver`` and selenium (as ``tests/test_book_build.py``).
"""
from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "page_weight.json"
UNCOMPRESSED = (".woff2", ".woff", ".png", ".jpg", ".svg.gz")

RESOURCES_JS = """
const nav = performance.getEntriesByType('navigation')[0];
return [[nav.name, nav.encodedBodySize]].concat(
    performance.getEntriesByType('resource').map(r => [r.name, r.encodedBodySize || r.decodedBodySize || 0]));
"""
DRAWN_JS = """
const figs = Array.from(document.querySelectorAll('.plotly-graph-div'));
const math = document.querySelectorAll('.math').length;
return figs.every(g => g.querySelector('svg.main-svg'))
    && (math === 0 || document.querySelectorAll('mjx-container').length >= math);
"""


def _driver(profile: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000",
                 f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def _gzip_bytes(html: Path, url: str, size: int) -> int:
    path = html / unquote(urlparse(url).path).lstrip("/")
    if path.is_dir():
        path = path / "index.html"
    if not path.is_file() or path.suffix in UNCOMPRESSED:
        return size
    return len(gzip.compress(path.read_bytes(), 9))


def first_visit(html: Path, base: str, page: str) -> dict:
    """The bytes a first visit to ``page`` downloads: ``{"bytes", "gzip_bytes", "requests", "largest"}``."""
    from selenium.webdriver.support.ui import WebDriverWait

    profile = tempfile.mkdtemp(prefix="cnet-weight-")
    driver = _driver(profile)
    try:
        driver.get(f"{base}/{page}.html")
        try:
            WebDriverWait(driver, 60, poll_frequency=0.25).until(lambda d: d.execute_script(DRAWN_JS))
        except Exception:
            pass
        time.sleep(1.0)  # fonts requested by the typeset formulas
        entries = driver.execute_script(RESOURCES_JS)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    local = [(url, int(size)) for url, size in entries if url.startswith(base)]
    largest = sorted(local, key=lambda e: -e[1])[:5]
    return {"bytes": sum(s for _, s in local), "gzip_bytes": sum(_gzip_bytes(html, u, s) for u, s in local),
            "requests": len(local), "largest": [[urlparse(u).path, s] for u, s in largest]}


def site(html: Path) -> dict:
    """The built site's size, and its largest folders under ``_static``."""
    def size(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())

    static = html / "_static"
    folders = {p.name: size(p) if p.is_dir() else p.stat().st_size for p in static.iterdir()}
    return {"bytes": size(html), "largest_static": dict(sorted(folders.items(), key=lambda kv: -kv[1])[:6])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("html", help="a built book's html folder (_build/<preset>/_build/html)")
    p.add_argument("--label", required=True, help="the name of this build in the results file (before, after)")
    p.add_argument("--note", default="", help="what this build is")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from cnet_lib.book.toc import toc_files

    html = Path(args.html).resolve()
    handler = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(html)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    load = os.getloadavg()[0]
    try:
        pages = {page: first_visit(html, base, page) for page in toc_files(ROOT)}
    finally:
        httpd.shutdown()
    for page, r in pages.items():
        print(f"{page:40s} {r['bytes'] / 1e6:6.2f} MB ({r['gzip_bytes'] / 1e6:5.2f} MB gzip), {r['requests']} requests")
    record = json.loads(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {"benchmark": "page_weight", "builds": {}}
    record["latest"] = args.label  # the build tests/test_page_weight.py holds to the limits
    record["builds"][args.label] = {
        "date": time.strftime("%Y-%m-%d"), "machine": machine(), "load_average_1min": load, "note": args.note,
        "site": site(html), "pages": pages,
        "first_visit_max_bytes": max(r["bytes"] for r in pages.values()),
        "first_visit_max_gzip_bytes": max(r["gzip_bytes"] for r in pages.values()),
    }
    OUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"written: {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
