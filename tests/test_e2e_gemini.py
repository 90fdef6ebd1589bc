"""End to end with the real Gemini CLI (`gemini -p`), headless against a fake Gemini API.

Skipped unless a `gemini` binary is found: set AGENTMEM_GEMINI_BIN, or put it on PATH
(`npm install @google/gemini-cli` provides node_modules/.bin/gemini; `.ci/run` installs a
pinned one). The fake model listens on 127.0.0.1 only (GOOGLE_GEMINI_BASE_URL, an API key
and `security.auth.selectedType = "gemini-api-key"`). What a user relies on, after
`agentmem install gemini` in a trusted folder: Gemini's own `mcp list` connects to the
server, the SessionStart notes reach the model, the model's calls to `remember` and `recall`
get real answers (headless: the server is trusted), the chat file is captured when the
session ends, once and not per model request, and the next session is told what the first
one decided.
"""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import LocalServer, am, e2e_install, e2e_project, e2e_script, wait_for_session_files

GEMINI = os.environ.get("AGENTMEM_GEMINI_BIN") or shutil.which("gemini")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not GEMINI, reason="no Gemini CLI (set AGENTMEM_GEMINI_BIN)")]
MODEL = "gemini-2.5-pro"     # named, so the CLI does not first ask a router model

class FakeGemini(LocalServer):
    """generateContent, streamed or not: a scripted MCP tool call, or one line of text."""

    def reply(self, handler, body):
        contents = body.get("contents") or []
        said = json.dumps([c for c in contents if c.get("role") == "user"])
        answered = json.dumps(contents).count('"functionResponse"')
        script = e2e_script(said)
        if len(script) > answered:
            name, args = script[answered]
            parts = [{"functionCall": {"name": "mcp_agentmem_" + name, "args": args}}]
        else:
            parts = [{"text": "Noted."}]
        data = json.dumps({"candidates": [{"content": {"role": "model", "parts": parts},
                                           "finishReason": "STOP", "index": 0}],
                           "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2,
                                             "totalTokenCount": 12}, "modelVersion": MODEL})
        handler.send_response(200)
        if "alt=sse" in handler.path:
            handler.send_header("content-type", "text/event-stream")
            handler.end_headers()
            handler.wfile.write(("data: %s\n\n" % data).encode())
        else:
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data.encode())))
            handler.end_headers()
            handler.wfile.write(data.encode())


@pytest.fixture
def project(tmp_path, monkeypatch):
    proj, home = e2e_project(tmp_path, monkeypatch)
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(proj): "TRUST_FOLDER"}))
    e2e_install(proj, "gemini")
    fake = FakeGemini()
    yield proj, fake
    fake.close()


def gemini(project, fake, prompt):
    env = dict(os.environ, GEMINI_API_KEY="fake", GOOGLE_GEMINI_BASE_URL=fake.url, NO_COLOR="1",
               GEMINI_CLI_NO_RELAUNCH="true")
    p = subprocess.run([GEMINI, "-m", MODEL, "-p", prompt], cwd=str(project), env=env,
                       capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def test_gemini_connects_to_the_installed_mcp_server(project):
    proj, _ = project
    p = subprocess.run([GEMINI, "mcp", "list"], cwd=str(proj), capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, NO_COLOR="1"), stdin=subprocess.DEVNULL)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    line = next(x for x in out.splitlines() if "agentmem" in x)
    assert "Connected" in line and "__import__(" in line, out


def test_a_decision_is_captured_once_and_told_to_the_next_session(project):
    proj, fake = project
    gemini(proj, fake, "We decided to use Postgres 16 for the orders service because we need JSONB.")
    first = json.dumps(fake.requests[0])
    assert "Handlers must stay under 40 lines" in first and "not instructions from the person" in first
    text = wait_for_session_files(proj, "Postgres 16")
    assert "## decision" in text and '"source": "gemini:' in text
    assert "hook_context" not in text and "agentmem-notes" not in text and "Gemini CLI" not in text
    del fake.requests[:]
    gemini(proj, fake, "What database do the orders use?")
    assert "Postgres 16 for the orders service" in json.dumps(fake.requests[0])


def test_the_model_remembers_and_recalls_through_mcp(project):
    proj, fake = project
    gemini(proj, fake, "TOOLS_TEST: note how we deploy, then check the handler rule.")
    answers = [p["functionResponse"] for r in fake.requests for c in r.get("contents") or []
               for p in c.get("parts") or [] if "functionResponse" in p]
    assert {a["name"] for a in answers} == {"mcp_agentmem_remember", "mcp_agentmem_recall"}
    assert "Handlers must stay under 40 lines" in json.dumps(answers)
    shown = am("recall", "blue-green deploys", cwd=proj, check=0).stdout
    assert "Deploys go through the blue-green script" in shown
    # PreCompress fires before each of the three model requests: the first one is captured,
    # then SessionEnd
    path, deadline = proj / ".agentmem" / "local" / "worker.log", time.time() + 30
    while time.time() < deadline and "SessionEnd" not in (path.read_text() if path.exists() else ""):
        time.sleep(0.2)
    log = path.read_text()
    assert log.count("gemini PreCompress") == 1 and log.count("gemini SessionEnd") == 1, log
    # the handler rule told at SessionStart came back through MCP: capture marks it used
    wait_for_session_files(proj, "TOOLS_TEST")
    marks = (proj / ".agentmem" / "local" / "evidence.jsonl").read_text()
    assert '"outcome": "used"' in marks and "opened it: " in marks
