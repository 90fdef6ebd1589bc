"""A real headless browser for tests: Chromium driven over the DevTools protocol on a pipe.

Standard library only: Chromium reads commands on its fd 3 and writes answers and events on
fd 4 (--remote-debugging-pipe), each message JSON ended by a NUL byte.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def chromium():
    """The path of a Chromium or Chrome binary, or None."""
    for name in (os.environ.get("AGENTMEM_CHROMIUM", ""), "chromium", "chromium-browser",
                 "google-chrome", "google-chrome-stable"):
        path = name and shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One page in a headless Chromium: goto, js, click_and_wait, screenshot."""

    def __init__(self, binary, width=1280, height=900):
        self.profile = tempfile.mkdtemp(prefix="agentmem-chromium-")
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()

        def fds():  # in the child: the pipes become fds 3 and 4
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)
        self.proc = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height),
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=fds)
        os.close(cmd_r)
        os.close(out_w)
        self.buf, self.next_id, self.events = b"", 0, []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Page.enable", session=True)
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.out_r], [], [], left)[0]:
                raise TimeoutError("the browser did not answer")
            chunk = os.read(self.out_r, 1 << 16)
            if not chunk:
                raise EOFError("the browser quit")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, session=False, timeout=30, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            answer = self._read(timeout)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError("%s: %s" % (method, answer["error"]))
                return answer.get("result", {})
            self.events.append(answer)

    def _wait_event(self, name, timeout=30):
        end = time.time() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == name:
                    del self.events[: i + 1]
                    return ev
            self.events.append(self._read(max(0.1, end - time.time())))

    def goto(self, url):
        self.events.clear()
        self.send("Page.navigate", session=True, url=url)
        self._wait_event("Page.loadEventFired")

    def js(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.send("Runtime.evaluate", session=True, expression=expression,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" % r["exceptionDetails"])
        return r.get("result", {}).get("value")

    def click_and_wait(self, selector):
        """Click the element and wait for the page it leads to."""
        self.events.clear()
        self.js("document.querySelector(%s).click()" % json.dumps(selector))
        self._wait_event("Page.loadEventFired")

    def wait_for(self, expression, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            if self.js(expression):
                return True
            time.sleep(0.1)
        return False

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", session=True, format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - it may be gone already
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.cmd_w)
        os.close(self.out_r)
        shutil.rmtree(self.profile, ignore_errors=True)
