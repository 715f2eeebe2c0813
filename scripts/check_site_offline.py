"""Checks the docs site opened from the file system, in headless Chromium, as a reader opens
it: its pages run without errors (docs/_ext/offline_theme.py) and fetch nothing from the
network, its widest tables fit the page, and its search shows the text around the words searched for under each page it
finds (docs/_ext/search_snippets.py). scripts/docs.sh --check runs it on the site it built.

    .venv/bin/python scripts/check_site_offline.py build/docs/check-html
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from headless_chromium import load_page  # noqa: E402

RESULTS = "document.querySelectorAll('#search-results li').length"
WIDE_TABLES = ("JSON.stringify([...document.querySelectorAll('article table')]"
               ".filter((t) => t.scrollWidth > t.parentElement.clientWidth + 1)"
               ".map((t) => [t.scrollWidth, t.rows[0].innerText.slice(0, 60)]))")
SNIPPETS = ("JSON.stringify([...document.querySelectorAll('#search-results li p.context')]"
            ".map((p) => p.textContent))")


def main(site: str) -> int:
    page = load_page(Path(site) / "search.html?q=gradientAccumulation", [RESULTS, SNIPPETS],
                     settle_seconds=3)
    snippets = json.loads(page.values[SNIPPETS] or "[]")
    problems = []
    if page.errors:
        problems.append(f"the search page reports errors: {page.errors}")
    if not page.values[RESULTS]:
        problems.append("searching for gradientAccumulation finds nothing")
    if not any("gradientaccumulation" in snippet.lower() for snippet in snippets):
        problems.append(f"no result shows the text around the word searched for: {snippets}")
    remote = [url for url in page.requests if not url.startswith(("file://", "data:"))]
    if remote:
        problems.append(f"the search page fetches from the network: {remote}")
    # Every page's theme works from the file system (docs/_ext/offline_theme.py).
    index = load_page(Path(site) / "index.html")
    if index.errors:
        problems.append(f"the front page reports errors: {index.errors}")
    # The widest tables fit the page (docs/_static/popsim.css) rather than scrolling sideways.
    for name in ("cpp.html", "performance.html", "guide/planning.html"):
        tables = load_page(Path(site) / name, [WIDE_TABLES], settle_seconds=0.1)
        wide = json.loads(tables.values[WIDE_TABLES] or "[]")
        if wide:
            problems.append(f"{name}: tables wider than the page (width, first row): {wide}")
    for problem in problems:
        print(f"popsim docs: {problem}", file=sys.stderr)
    if not problems:
        print(f"popsim docs: the site's search shows snippets ({len(snippets)} pages with text "
              f"of {page.values[RESULTS]} results)")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
