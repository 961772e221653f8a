"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands on fd 3, replies and events on fd 4, each message JSON ending
in a NUL byte): no port, no websocket, nothing downloaded. Opens pages the way a person would at
a given window size and reports what the console said and what the page measures."""
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class DevToolsError(RuntimeError):
    pass


def _high_pipe():
    """A close-on-exec pipe whose ends are above 4, so that moving them onto 3 and 4 in the child
    never overwrites the other end."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return tuple(ends)


class HeadlessChromium:
    """One browser with one tab. Not thread-safe. Use as a context manager."""

    def __init__(self, width, height, timeout=30):
        self.width, self.height, self.timeout = width, height, timeout
        self._profile = tempfile.mkdtemp(prefix="ophook-chromium-")
        to_browser_read, self._to_browser = _high_pipe()
        self._from_browser, from_browser_write = _high_pipe()
        # The browser reads fd 3 and writes fd 4: the pipe ends go there in the child (dup2 keeps
        # them across exec; every other fd of this process is close-on-exec, PEP 446).
        self._proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", "--window-size=%d,%d" % (width, height),
             "--user-data-dir=" + self._profile, "about:blank"],
            close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: (os.dup2(to_browser_read, 3), os.dup2(from_browser_write, 4)))
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self._events = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self._call(domain + ".enable", session=True)
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._proc.kill()
        self._proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _send(self, message):
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise DevToolsError("chromium did not answer (exit status %r)" % self._proc.poll())
            self._buffer += os.read(self._from_browser, 1 << 16)
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _call(self, method, params=None, session=False):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise DevToolsError("%s: %s" % (method, reply["error"]))
                return reply["result"]
            self._events.append(reply)

    def _wait_for_event(self, method):
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method:
                    return self._events.pop(i)
            self._events.append(self._receive(deadline))

    def open(self, url):
        """Loads `url` and returns the console's errors while it loaded: console.error calls,
        uncaught exceptions and the browser's own error entries (a bad SVG attribute, a failed
        resource)."""
        self._events.clear()
        self._call("Page.navigate", {"url": url}, session=True)
        self._wait_for_event("Page.loadEventFired")
        self.evaluate("1")  # the events the load caused are in before the reply to this
        errors = []
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(" ".join(str(arg.get("value", arg.get("description"))) for arg in params["args"]))
            elif method == "Runtime.exceptionThrown":
                errors.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                errors.append(params["entry"]["text"])
        return errors

    def evaluate(self, expression):
        """The JSON value of a JavaScript expression in the open page."""
        reply = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in reply:
            raise DevToolsError("%s: %s" % (expression, reply["exceptionDetails"].get("text")))
        return reply["result"].get("value")

    def screenshot(self, path):
        """Writes a PNG of the viewport to `path` (for a person to look at)."""
        import base64

        data = self._call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))
