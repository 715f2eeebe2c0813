"""Loads a page in headless Chromium and reports what a user would see and what
went wrong, through the DevTools protocol over a pipe (--remote-debugging-pipe):
no extra Python packages, no network port.

The protocol's messages are JSON objects separated by NUL bytes; Chromium reads
commands from file descriptor 3 and writes replies and events to 4.
"""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe"]


class ChromiumError(RuntimeError):
    pass


class PageReport:
    """What loading a page gave: console errors and uncaught exceptions (`errors`),
    every network request (`requests`), the DOM after scripts ran (`dom`), the
    values of the requested expressions (`values`) and a PNG screenshot."""

    def __init__(self):
        self.errors = []
        self.requests = []
        self.dom = ""
        self.values = {}
        self.screenshot = b""


class _Pipe:
    def __init__(self, process, log, to_browser, from_browser):
        self._process = process
        self._log = log
        self._out = to_browser
        self._in = from_browser
        self._buffer = b""
        self._next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise ChromiumError("Chromium did not answer in time.")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                self._process.wait(timeout=10)
                self._log.seek(0)
                raise ChromiumError("Chromium closed the DevTools pipe (exit status "
                                    f"{self._process.returncode}): "
                                    f"{self._log.read().decode(errors='replace')}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None, timeout=30):
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self._out, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise ChromiumError(f"{method} failed: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, timeout=30):
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method:
                return message
            self.events.append(message)


def _errors_from(events):
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            description = details.get("exception", {}).get("description") or details.get("text")
            errors.append(f"uncaught exception: {description}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            errors.append(f"console.{params['type']}: {text}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            errors.append(f"log error: {params['entry'].get('text')}")
    return errors


def load_page(path, expressions=(), width=1280, height=1000, settle_seconds=0.3):
    """Opens file `path` and returns a PageReport; `expressions` are JavaScript
    expressions evaluated after the page loaded (JSON-serialisable results)."""
    profile_dir = tempfile.mkdtemp(prefix="popsim-chromium-")
    to_browser_read, to_browser_write = os.pipe()
    from_browser_read, from_browser_write = os.pipe()
    # Chromium expects the pipe on its descriptors 3 (commands in) and 4 (replies out).
    # Move both out of the way first: either may itself be 3 or 4.
    def child_fds():
        commands = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
        replies = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
        os.dup2(commands, 3)
        os.dup2(replies, 4)

    # Chromium's own log goes to a file: a pipe nobody reads could fill up and block it.
    log = open(os.path.join(profile_dir, "chromium.log"), "w+b")
    process = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile_dir}", f"--window-size={width},{height}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        preexec_fn=child_fds, pass_fds=(3, 4))
    os.close(to_browser_read)
    os.close(from_browser_write)
    pipe = _Pipe(process, log, to_browser_write, from_browser_read)
    report = PageReport()
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        pipe.send("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=session)
        pipe.wait_for("Page.loadEventFired")
        time.sleep(settle_seconds)
        for expression in expressions:
            result = pipe.send("Runtime.evaluate", {"expression": expression,
                                                    "returnByValue": True}, session=session)
            report.values[expression] = result["result"].get("value")
        report.dom = pipe.send("Runtime.evaluate", {
            "expression": "document.documentElement.outerHTML", "returnByValue": True},
            session=session)["result"]["value"]
        shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session)
        report.screenshot = base64.b64decode(shot["data"])
        report.errors = _errors_from(pipe.events)
        report.requests = [e["params"]["request"]["url"] for e in pipe.events
                           if e.get("method") == "Network.requestWillBeSent"]
        try:
            pipe.send("Browser.close", timeout=5)
        except ChromiumError:
            pass
    finally:
        os.close(to_browser_write)
        os.close(from_browser_read)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(profile_dir, ignore_errors=True)
    return report
