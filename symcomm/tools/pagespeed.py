"""``python -m symcomm.tools.pagespeed``: how fast the interactive page (docs/site/) first draws, in headless
Chromium from a cold cache, and how many bytes it loads before that (issue 25's goal: first render ≤ 1 s, ≤ 1 MB).

Each run starts a new Chromium (selenium gives it a fresh, empty profile: no HTTP cache, no compiled-script
cache) and opens the page from the file system, as a user opens it; the operating system's file cache stays
warm, which favours no variant of the page over another.  The first render is the page's own mark
``symcomm-first-render`` (app.js sets it when its first render is drawn; ms since the navigation began),
median, least and most of ``--runs`` runs.  The bytes are the sizes of the files the browser requested
by then (DevTools' network events: Chromium keeps no resource timing for file://, and a file:// load transfers
no bytes over a network, so the size on disk is what it reads) beside the same count made without a browser from the built files
(:func:`symcomm.views.site.first_view_files`, which the tests hold under the budget).  Then the totals of
docs/site.  A developer tool: it parses its arguments and prints here; the page's code only draws.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..base.errors import SymcommError
from ..views import site

#: the views measured by default: the page as it opens (a collective) and the heaviest family's default view
VIEWS = ("all_reduce__ring", "hybrid")

_READ = 'return performance.getEntriesByName("symcomm-first-render")[0].startTime;'


def _driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND",
                 "--window-size=1280,2000"):
        options.add_argument(flag)
    # DevTools' network events: Chromium keeps no resource timing entries for file:// loads
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)


def measure_once(page: Path, ident: str) -> tuple[float, dict[str, int]]:
    """(first render in ms, {file: bytes} requested before it) of one cold load of ``ident``'s view."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver = _driver()
    try:
        driver.get(page.resolve().as_uri() + f"#subject={ident}")
        WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.state") in ("ready", "error"))
        state = driver.execute_script("return document.body.dataset.state")
        if state != "ready":
            raise SymcommError(f"the page did not draw {ident}: {driver.find_element('id', 'error').text}")
        first = driver.execute_script(_READ)
        # every request made by now: the page loads nothing after its first render unless the user acts
        events = [json.loads(entry["message"])["message"] for entry in driver.get_log("performance")]
        names = [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]
    finally:
        driver.quit()
    folder = page.resolve().parent
    files = {}
    for name in names:
        path = Path(unquote(urlparse(name).path))
        if path.is_file():
            files[path.relative_to(folder).as_posix() if path.is_relative_to(folder) else str(path)] = path.stat().st_size
    return first, files


def missing() -> list[str]:
    """What measuring the page needs and this machine lacks, each with how to get it ([] when nothing)."""
    import importlib.util

    return [what for what, absent in (
        ("chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)",
         shutil.which("chromium") is None or shutil.which("chromedriver") is None),
        ("selenium (python -m pip install 'selenium>=4.20')", importlib.util.find_spec("selenium") is None))
            if absent]


def cold_loads(page: Path, ident: str, runs: int) -> tuple[list[float], dict[str, int]]:
    """(the first render in ms of each of ``runs`` cold loads of ``ident``'s view, {file: bytes} the last one
    requested before it)."""
    loads = [measure_once(page, ident) for _ in range(runs)]
    return [ms for ms, _ in loads], loads[-1][1]


def totals(folder: Path) -> tuple[int, int, tuple[str, int]]:
    """(files, bytes, (the largest file, its bytes)) of the built page."""
    sizes = {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}
    largest = max(sizes.items(), key=lambda item: (item[1], item[0]))
    return len(sizes), sum(sizes.values()), largest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcomm.tools.pagespeed",
                                     description="the interactive page's first render and the bytes loaded before it")
    parser.add_argument("--page", default="docs/site/index.html", help="the page to open (default: docs/site/index.html)")
    parser.add_argument("--runs", type=int, default=5, help="cold loads per view, each a new Chromium (default: 5)")
    parser.add_argument("--view", action="append", metavar="IDENT",
                        help=f"a subject's view to open (repeatable; default: {', '.join(VIEWS)})")
    args = parser.parse_args(argv)
    page = Path(args.page)
    prog = "python -m symcomm.tools.pagespeed"
    if not 1 <= args.runs <= 50:
        print(f"{prog}: error: --runs takes a whole number from 1 to 50, not {args.runs}", file=sys.stderr)
        return 2
    if not page.is_file():
        print(f"{prog}: error: --page {page}: no such file (python build_docs.py writes docs/site/index.html)", file=sys.stderr)
        return 2
    lacking = missing()
    if lacking:
        print(f"{prog}: error: needs {lacking[0]}", file=sys.stderr)
        return 2
    folder = page.resolve().parent
    try:
        for ident in args.view or VIEWS:
            static = site.first_view_files(folder, ident)
            times, seen = cold_loads(page, ident, args.runs)
            print(f"view {ident}: first render {statistics.median(times):.0f} ms median of {len(times)} cold loads "
                  f"(least {min(times):.0f}, most {max(times):.0f}); loaded before it {sum(seen.values()):,} bytes "
                  f"in {len(seen)} files (the browser's requests), {sum(static.values()):,} bytes counted from the "
                  f"files (budget {site.FIRST_VIEW_BUDGET:,})")
            for name, size in sorted(seen.items(), key=lambda item: (-item[1], item[0])):
                print(f"  {size:>10,}  {name}")
            if set(seen) != set(static):
                print(f"  the browser's files differ from the count without it: only requested {sorted(set(seen) - set(static))},"
                      f" only counted {sorted(set(static) - set(seen))}")
    except SymcommError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    count, size, (name, largest) = totals(folder)
    print(f"docs/site: {count} files, {size:,} bytes; the largest {name} ({largest:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
