"""Shared fixtures: every test gets its own store, home and a clean environment.

`am(...)` runs the command line as a user would (a subprocess); tests that
check library behaviour import agentmem directly.
"""
import getpass
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENTMEM = os.path.join(ROOT, "agentmem.py")
sys.path.insert(0, ROOT)

CLEAN_ENV = ("AGENTMEM_DIR", "AGENTMEM_BACKEND", "AGENTMEM_DISABLE", "AGENTMEM_DEBUG",
             "AGENTMEM_LLM_PROVIDER", "AGENTMEM_LLM_URL", "AGENTMEM_LLM_MODEL", "AGENTMEM_LLM_KEY",
             "AGENTMEM_LLM_DAILY_TOKENS", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CLAUDE_PROJECT_DIR",
             "GEMINI_PROJECT_DIR", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CACHE_HOME")


def pytest_collection_modifyitems(items):
    """The slow tests first: with -n, the workers start them at once and fill the rest in."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def store_env(root):
    """The environment a test runs in (see `store`), under `root`: {name: value, or None: unset};
    `am(..., env=store_env(root))` builds a store once for many tests (scope="session")."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = dict.fromkeys(CLEAN_ENV)  # None: not set
    env.update(HOME=str(home), USERPROFILE=str(home),  # Windows finds ~ in USERPROFILE
               LOCALAPPDATA=str(home / "AppData" / "Local"), APPDATA=str(home / "AppData" / "Roaming"),
               AGENTMEM_DIR=str(root / "store"))
    return env


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    """An empty store folder (not created yet) that AGENTMEM_DIR points at."""
    for key, value in store_env(tmp_path).items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    return tmp_path / "store"


# The command line as the hooks run it: agentmem imported as a module, its bytecode cached in
# one folder for the whole run (a script is compiled again on every call: twice the time). The
# folder is set once the interpreter has started, as the hooks set it: `-X pycache_prefix`
# sends the modules of the start there too, compiled anew by every call when
# PYTHONDONTWRITEBYTECODE is set (site-packages' .pth files import many).
PYCACHE = os.path.join(tempfile.gettempdir(), "agentmem-test-pycache-%s" % getpass.getuser())
AM_ARGV = [sys.executable, "-c",
           "import sys;sys.dont_write_bytecode=False;sys.pycache_prefix=%r;sys.path.insert(0,%r);"
           "import agentmem;sys.exit(agentmem.main())" % (PYCACHE, ROOT)]


def am(*args, input=None, env=None, cwd=None, timeout=60, check=None):
    """Run `agentmem ARGS` (the module form of `python agentmem.py ARGS`); returns the
    CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    for k, v in list(full_env.items()):
        if v is None:
            del full_env[k]
    p = subprocess.run(AM_ARGV + [str(a) for a in args], input=input, capture_output=True,
                       text=True, encoding="utf-8", errors="replace", env=full_env, cwd=cwd,
                       timeout=timeout)  # agentmem speaks UTF-8, whatever the locale
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


def am_json(*args, **kw):
    p = am(*args, **kw)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def top(query):
    """The best memory `recall QUERY` finds, as its JSON object."""
    [hit] = am_json("recall", query, "--json", "--limit", "1")
    return hit


def no_traceback(p):
    """A failed command says one line and no Python traceback."""
    assert "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip().count("\n") == 0, p.stderr


class LocalServer:
    """A fake HTTP API on 127.0.0.1, served from a thread: `reply(handler, body)` answers each POST.

    Every POST's JSON body is kept in `requests` (with its path and headers when `full`).
    """

    full = False

    def __init__(self):
        self.requests = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self):
                self.send_response(200)
                self.end_headers()

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                fake.requests.append({"path": self.path, "body": body, "headers": {
                    k.lower(): v for k, v in self.headers.items()}} if fake.full else body)
                fake.reply(self, body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, handler, body):
        raise NotImplementedError

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def wait_for_session_files(project, words, timeout=30):
    """The text of the project's session files once one holds `words` (the detached capture
    worker finishes after the agent exits); whatever is there when the time is up."""
    folder = os.path.join(str(project), ".agentmem", "sessions")
    deadline = time.time() + timeout
    while True:
        text = "".join(open(os.path.join(folder, n), encoding="utf-8").read()
                       for n in sorted(os.listdir(folder))) if os.path.isdir(folder) else ""
        if words in text or time.time() > deadline:
            return text
        time.sleep(0.2)


# End-to-end tests (tests/test_e2e_*.py): what a fake model does when the person's prompt
# holds a keyword: the agentmem MCP tool calls it makes, in order, before it answers in text.
E2E_SCRIPTS = {
    "TOOLS_TEST": [("remember", {"text": "Deploys go through the blue-green script because "
                                         "rollbacks must take seconds", "type": "decision"}),
                   ("recall", {"query": "how long may a handler be"})],
    "COMPACT_TEST": [("recall", {"query": "flaky checkout test"})],
}


def e2e_script(said):
    """The scripted tool calls for a request whose person's words are `said` (JSON text)."""
    return next((calls for key, calls in E2E_SCRIPTS.items() if key in said), [])


def e2e_project(tmp_path, monkeypatch):
    """A fresh git project and HOME for a real agent CLI: (project, home)."""
    monkeypatch.delenv("AGENTMEM_DIR")
    proj, home = tmp_path / "proj", tmp_path / "home"
    proj.mkdir()
    home.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    monkeypatch.setenv("HOME", str(home))
    return proj, home


def e2e_install(proj, agent):
    """One convention remembered, then `agentmem install AGENT` as a user would run it."""
    am("remember", "Handlers must stay under 40 lines", "--type", "convention", cwd=proj, check=0)
    am("install", agent, "--project", proj, check=0)
