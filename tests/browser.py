"""A headless Chromium driven over the DevTools protocol, for tests that open the HTML reports.

The protocol runs over a pipe (``--remote-debugging-pipe``: Chromium reads commands on fd 3 and writes
replies on fd 4, each a JSON object ended by a NUL byte), so no WebSocket client and no open port are
needed. :func:`chromium_binary` finds Debian's ``chromium`` (CI installs it, see ``.ci/run``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

BINARIES = ("chromium", "chromium-browser", "google-chrome")


def chromium_binary() -> str | None:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium; ``open(path)`` loads a local file in a fresh tab and returns a :class:`Page`."""

    def __init__(self, binary: str, timeout: float = 60.0):
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def wire_pipes():  # in the child, before exec: Chromium expects the pipe on fds 3 and 4
            read_end = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self._profile = tempfile.TemporaryDirectory(prefix="chromium-profile-")
        self.timeout = timeout
        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            preexec_fn=wire_pipes,
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and wait for its reply (events in between are skipped)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buffer:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Chromium did not answer {method} within {self.timeout} s")
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe while answering {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def open(self, path: Path) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
        page.wait_until_loaded()
        return page

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._profile.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser, self.session = browser, session

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (a Promise is awaited); a thrown error is raised."""
        reply = self.browser.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=self.session,
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"JavaScript error: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_until_loaded(self) -> None:
        deadline = time.monotonic() + self.browser.timeout
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError("page did not finish loading")
            time.sleep(0.05)


# In the page: every <img> of the document, loaded or not, with its natural size.
IMAGES_OF_PAGE = """
Promise.all(Array.from(document.images).map(img => img.complete ? Promise.resolve() :
    new Promise(done => { img.onload = done; img.onerror = done; })))
  .then(() => Array.from(document.images).map(img => ({src: img.getAttribute('src'), width: img.naturalWidth,
                                                        height: img.naturalHeight})))
"""

# In a `snakemake --report` page: every PNG result (embedded as a data URI in the page's `results`),
# decoded by the browser, with its natural size and caption.
PNG_RESULTS_OF_SNAKEMAKE_REPORT = """
Promise.all(Object.values(results).filter(r => r.data_uri.startsWith('data:image/png')).map(r =>
  new Promise(done => { const img = new Image();
    img.onload = () => done({name: r.name, width: img.naturalWidth, height: img.naturalHeight, caption: r.caption});
    img.onerror = () => done({name: r.name, width: 0, height: 0, caption: r.caption});
    img.src = r.data_uri; })))
"""

# In the report page: the decisive questions' collapsible sections, closed as the page loads (whether the first chunk
# table is visible then) and opened (whether it is, the section's visible text, any bold element a question's markup
# made).
DECISIVE_OF_PAGE = """
(() => {
  const section = document.getElementById('table-decisive_questions');
  const all = Array.from(section.querySelectorAll('details'));
  const closed = all.every(d => !d.open);
  const table = section.querySelector('details table');
  const visibleClosed = table.checkVisibility();
  all.forEach(d => { d.open = true; });
  return {details: all.length, closed: closed, visibleClosed: visibleClosed, visibleOpen: table.checkVisibility(),
          summaries: all.map(d => d.querySelector('summary').innerText),
          bold: section.querySelectorAll('details b').length, text: section.innerText};
})()
"""
