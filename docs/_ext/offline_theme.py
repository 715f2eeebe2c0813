"""Debian's furo theme, made to work on a site opened from the file system.

Debian packages furo's sources unbundled, which a web server copes with and ``file://`` does
not:

- ``furo.css`` imports ``/javascript/normalize.css/normalize.css``, an address of Debian's
  javascript-common web server configuration; opened from disk it is missing, and every page
  loses its base styles. The site gets its own copy of Debian's normalize.css, imported
  relatively.
- ``furo.js`` is an ES module (``import Gumshoe from "./gumshoe-patched.js"``) loaded as a
  classic script: the browser refuses it, and the theme's scripts (the contents' scroll
  tracking, the colour scheme switch, the mobile menus) do not run. gumshoe is a UMD script
  that defines ``window.Gumshoe`` when loaded as a classic one, so it is loaded first and the
  import line is dropped.
- Once it runs, furo's scroll tracking fails on a page whose table of contents links no
  section of its own (the front page): gumshoe reads the last of no sections. With none, it
  now finds no section active, as it does for a page scrolled above its first.
"""

import os
import re
import shutil
from typing import Any, Dict

NORMALIZE = "/usr/share/javascript/normalize.css/normalize.css"
ABSOLUTE_IMPORT = "@import url(/javascript/normalize.css/normalize.css);"
MODULE_IMPORT = re.compile(r'^import Gumshoe from "\./gumshoe-patched\.js";\n', re.MULTILINE)
NO_SECTIONS = "var last = contents[contents.length - 1];"


def _rewrite(path: str, old: Any, new: str) -> bool:
    """Replaces `old` (a string or a compiled pattern) in the file; whether it was there."""
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as source:
        text = source.read()
    if isinstance(old, str) and new in text:
        return False  # (rewritten by an earlier build)
    changed = old.sub(new, text) if hasattr(old, "sub") else text.replace(old, new)
    if changed == text:
        return False
    with open(path, "w", encoding="utf-8") as target:
        target.write(changed)
    return True


def make_theme_offline(app: Any, exception: Exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    styles = os.path.join(app.outdir, "_static", "styles")
    if _rewrite(os.path.join(styles, "furo.css"), ABSOLUTE_IMPORT, "@import url(normalize.css);"):
        shutil.copyfile(NORMALIZE, os.path.join(styles, "normalize.css"))
    scripts = os.path.join(app.outdir, "_static", "scripts")
    _rewrite(os.path.join(scripts, "furo.js"), MODULE_IMPORT, "")
    _rewrite(os.path.join(scripts, "gumshoe-patched.js"), NO_SECTIONS,
             "if (contents.length === 0) return null; " + NO_SECTIONS)


def setup(app: Any) -> Dict[str, Any]:
    # Before furo.js (priority 500), which uses window.Gumshoe.
    app.add_js_file("scripts/gumshoe-patched.js", priority=400)
    app.connect("build-finished", make_theme_offline)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
