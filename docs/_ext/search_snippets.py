"""Search results with snippets on a site opened from the file system.

Sphinx's search page shows, under each page it finds, the text around the words searched for,
which it reads by fetching the page. A browser refuses to fetch ``file://`` addresses, so a
site opened from disk shows bare titles. This extension writes the text of every page into
``_static/page_text.js`` when the site is built, and the search page loads it first: its
``fetch`` of a page of the site answers from that text, and any other address goes to the
browser's fetch as before.
"""

import json
import os
import re
from html.parser import HTMLParser
from typing import Any, Dict, List

SCRIPT = "_static/page_text.js"


class _MainText(HTMLParser):
    """The text of a page's ``role="main"`` element, without its headings' link marks and
    without scripts and styles."""

    SKIPPED = {"script", "style"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
            "track", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: List[str] = []
        self._depth = 0  # open elements inside the main element (0: outside it)
        self._skipping = 0  # open elements whose text is not the page's

    def handle_starttag(self, tag: str, attrs: List[Any]) -> None:
        if tag in self.VOID:
            return
        attributes = dict(attrs)
        if self._depth == 0:
            if attributes.get("role") == "main":
                self._depth = 1
            return
        self._depth += 1
        classes = (attributes.get("class") or "").split()
        if self._skipping or tag in self.SKIPPED or "headerlink" in classes:
            self._skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID or self._depth == 0:
            return
        self._depth -= 1
        if self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if self._depth and not self._skipping:
            self.parts.append(data)

    def text(self) -> str:
        return re.sub(r"\s+", " ", "".join(self.parts)).strip()


def page_text(html: str) -> str:
    parser = _MainText()
    parser.feed(html)
    parser.close()
    return parser.text()


# Answers the search page's fetches of the site's pages from POPSIM_PAGE_TEXT, as a page
# whose main element holds the text (what Sphinx's searchtools reads a summary from).
_FETCH = """
(() => {
  const browserFetch = window.fetch.bind(window);
  window.fetch = (resource, ...rest) => {
    const options = DOCUMENTATION_OPTIONS;
    let name = String(resource);
    if (name.startsWith(options.URL_ROOT)) name = name.slice(options.URL_ROOT.length);
    if (name.endsWith(options.FILE_SUFFIX)) name = name.slice(0, -options.FILE_SUFFIX.length);
    if (!Object.prototype.hasOwnProperty.call(POPSIM_PAGE_TEXT, name)) {
      return browserFetch(resource, ...rest);
    }
    const main = document.createElement("div");
    main.setAttribute("role", "main");
    main.textContent = POPSIM_PAGE_TEXT[name];
    return Promise.resolve(new Response(main.outerHTML, {headers: {"Content-Type": "text/html"}}));
  };
})();
"""


def write_page_text(app: Any, exception: Exception) -> None:
    """Writes _static/page_text.js from the pages the html builder wrote."""
    if exception is not None or app.builder.format != "html":
        return
    suffix = app.builder.out_suffix
    texts: Dict[str, str] = {}
    for docname in sorted(app.env.found_docs):
        path = os.path.join(app.outdir, docname + suffix)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as page:
                texts[docname] = page_text(page.read())
    with open(os.path.join(app.outdir, SCRIPT), "w", encoding="utf-8") as script:
        script.write("const POPSIM_PAGE_TEXT = " + json.dumps(texts, ensure_ascii=False) + ";\n")
        script.write(_FETCH)


def load_on_search_page(app: Any, pagename: str, templatename: str, context: Dict[str, Any],
                        doctree: Any) -> None:
    if pagename == "search":
        context["script_files"].append(SCRIPT)


def setup(app: Any) -> Dict[str, Any]:
    app.connect("html-page-context", load_on_search_page)
    app.connect("build-finished", write_page_text)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
