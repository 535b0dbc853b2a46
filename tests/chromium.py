"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (no extra packages).

Chromium reads JSON commands from fd 3 and writes replies and events to fd 4,
each message ending in a NUL byte.  :class:`Browser` starts a headless
Chromium with networking features off, opens one page, and keeps every event
so a test can look for console errors and network requests afterwards.

Start-up has its own, longer budget (:data:`START_TIMEOUT`): the first
Chromium on a freshly installed machine reads a few hundred MB from a cold disk
and sets up its profile, which took more than 30 s on a loaded CI machine.  A
Chromium that exits instead of answering is reported at once, with the last
lines it wrote to stderr, rather than after the whole wait.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

EXE = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]
START_TIMEOUT = float(os.environ.get("ATTN_TRACE_CHROMIUM_START", "240"))
"""Seconds to wait for a newly started Chromium's first answer (``ATTN_TRACE_CHROMIUM_START`` overrides)."""


class Browser:
    """One headless Chromium and one page in it."""

    def __init__(self, timeout: float = 30.0, start_timeout: float = START_TIMEOUT) -> None:
        """Start Chromium and attach to a new blank page.

        Start-up waits at most ``start_timeout`` seconds, every later command ``timeout``.
        """
        assert EXE is not None, "chromium is not installed"
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="attn-trace-chromium-")
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 -- Chromium's stderr, open as long as it runs
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)

        def wire() -> None:  # runs in the child: its fd 3 reads our commands, fd 4 carries replies
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [EXE, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            close_fds=False,  # Python opens files non-inheritable, so only fds 3 and 4 are passed on
            preexec_fn=wire,
        )
        for fd in (to_chrome_r, from_chrome_w, high_r, high_w):
            os.close(fd)
        self.out = to_chrome_w
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, args=(from_chrome_r,), daemon=True).start()
        try:
            target = self.call("Target.createTarget", budget=start_timeout, url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.send(f"{domain}.enable")
        except BaseException:
            self.proc.kill()  # a browser that did not start is not asked to close
            self.close()
            raise

    def _stderr(self) -> str:
        """The last lines Chromium wrote to stderr (for error messages)."""
        self.log.seek(0)
        lines = self.log.read().decode(errors="replace").strip().splitlines()
        return " | ".join(lines[-5:]) or "(nothing)"

    def _next(self, deadline: float, what: str) -> dict[str, Any]:
        """The next message from Chromium; fails early when Chromium has exited, and at ``deadline``."""
        while True:
            try:
                return self.inbox.get(timeout=max(0.01, min(1.0, deadline - time.monotonic())))
            except queue.Empty:
                code = self.proc.poll()
                if code is not None and self.inbox.empty():
                    raise RuntimeError(f"{what}: Chromium exited with code {code}; stderr: {self._stderr()}") from None
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{what}: no answer from Chromium; stderr: {self._stderr()}") from None

    def _read(self, fd: int) -> None:
        buf = b""
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self.inbox.put(json.loads(msg))

    def call(
        self, method: str, session: str | None = None, budget: float | None = None, **params: Any
    ) -> dict[str, Any]:
        """Send a command (to the browser, or to ``session``); wait ``budget`` s (or ``timeout``) for its result."""
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        try:
            os.write(self.out, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:  # Chromium is gone (it may have exited before reading anything)
            try:
                code: int | None = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
            raise RuntimeError(f"{method}: Chromium exited with code {code}; stderr: {self._stderr()}") from None
        want = self.next_id
        waited = self.timeout if budget is None else budget
        deadline = time.monotonic() + waited
        while True:
            reply = self._next(deadline, f"{method} (after {waited:g} s)")
            if reply.get("id") == want:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """A command to the page."""
        return self.call(method, self.session, **params)

    def wait(self, event: str) -> dict[str, Any]:
        """Wait for the next ``event`` on the page."""
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._next(deadline, f"waiting for {event} (after {self.timeout:g} s)")
            self.events.append(msg)
            if msg.get("method") == event:
                return msg

    def open(self, url: str, width: int = 1280, height: int = 1800, script: bool = True) -> None:
        """Load ``url`` in a viewport ``width`` px wide, optionally with JavaScript off."""
        self.send("Emulation.setScriptExecutionDisabled", value=not script)
        self.send(
            "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=width < 600
        )
        if url != "about:blank":  # a fresh document every time, even when only the #fragment differs
            self.open("about:blank", width, height, script)
        self.events.clear()
        self.send("Page.navigate", url=url)
        self.wait("Page.loadEventFired")
        if script:
            self.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def js(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page (promises awaited) and return its value."""
        res = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def click(self, x: float, y: float) -> None:
        """A real mouse click at viewport coordinates."""
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: str, full: bool = False) -> None:
        """Save the viewport (or, with ``full``, the whole page) as a PNG."""
        import base64

        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=full)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def fonts(self, selector: str) -> list[str]:
        """The names of the fonts that actually drew the text of the first element matching ``selector``."""
        self.send("DOM.enable")
        self.send("CSS.enable")
        root = self.send("DOM.getDocument", depth=0)["root"]["nodeId"]
        node = self.send("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        assert node, f"nothing matches {selector!r}"
        return [f["familyName"] for f in self.send("CSS.getPlatformFontsForNode", nodeId=node)["fonts"]]

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(json.dumps(p.get("args")))
            elif m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails")))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(p["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        """URLs of every network request the page attempted."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        """Stop this browser (only the process this object started) and remove its profile."""
        with contextlib.suppress(Exception):  # already gone
            self.call("Browser.close", budget=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):  # closed by an earlier close()
            os.close(self.out)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
