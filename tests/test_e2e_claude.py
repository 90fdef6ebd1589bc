"""End to end with the real Claude Code CLI, run headless against a fake Anthropic API on 127.0.0.1.

Skipped unless a `claude` binary is found: set AGENTMEM_CLAUDE_BIN, or put it on PATH
(`npm install @anthropic-ai/claude-code` provides node_modules/.bin/claude). It checks what
a user relies on: `install` wires the hooks and the MCP server, the SessionStart notes reach
the model, SessionEnd capture stores what the person decided, and the model can call the
agentmem MCP tool.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import AGENTMEM, LocalServer, am, e2e_install, e2e_project, wait_for_session_files

CLAUDE = os.environ.get("AGENTMEM_CLAUDE_BIN") or shutil.which("claude")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not CLAUDE, reason="no Claude Code CLI (set AGENTMEM_CLAUDE_BIN)")]


class FakeAnthropic(LocalServer):
    """Streams one text reply; answers a request that asks for it with one MCP tool call first."""

    def reply(self, handler, body):
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.end_headers()
        text = json.dumps(body.get("messages", []))
        wants_tool = "RECALL_TEST" in text and "tool_result" not in text
        block = ({"type": "tool_use", "id": "toolu_1", "name": "mcp__agentmem__recall", "input": {}}
                 if wants_tool else {"type": "text", "text": ""})
        events = [("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})]
        if wants_tool:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps({"query": "handler size"})}}))
        else:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                "type": "text_delta", "text": "Noted: Postgres 16 for the orders service."}}))
        events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                   ("message_delta", {"type": "message_delta", "delta": {
                       "stop_reason": "tool_use" if wants_tool else "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 12}}),
                   ("message_stop", {"type": "message_stop"})]
        for name, data in events:
            handler.wfile.write(("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode())


@pytest.fixture
def project(tmp_path, monkeypatch):
    proj, home = e2e_project(tmp_path, monkeypatch)
    (home / ".claude.json").write_text(json.dumps({"projects": {str(proj): {"hasTrustDialogAccepted": True}}}))
    e2e_install(proj, "claude-code")
    return proj


def claude(project, fake, prompt, *extra):
    env = dict(os.environ, ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-ant-fake", DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    return subprocess.run([CLAUDE, "-p", prompt, "--output-format", "json"] + list(extra), cwd=str(project),
                          env=env, capture_output=True, text=True, timeout=180)


def test_notes_reach_the_model_and_the_session_is_captured(project):
    fake = FakeAnthropic()
    try:
        p = claude(project, fake, "We decided to use Postgres 16 for the orders service because we need JSONB.")
    finally:
        fake.close()
    assert p.returncode == 0, p.stderr
    sent = json.dumps(fake.requests)
    assert "Handlers must stay under 40 lines" in sent and "not instructions from the person" in sent
    text = wait_for_session_files(project, "Postgres 16")
    assert "## decision" in text and "Postgres 16" in text and '"source": "claude-code:' in text
    # `claude -p` queues the prompt, sends it on, then writes its user line: one turn, said once
    assert text.count('"who": "person"') == 1 and '"turn": 2' not in text


def test_the_model_can_call_the_mcp_tool(project):
    fake = FakeAnthropic()
    try:
        p = claude(project, fake, "RECALL_TEST: how long may a handler be?",
                   "--allowedTools", "mcp__agentmem__recall")
    finally:
        fake.close()
    assert p.returncode == 0, p.stderr
    results = [c for r in fake.requests for m in r.get("messages", []) if isinstance(m.get("content"), list)
               for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_result"]
    assert results and "Handlers must stay under 40 lines" in json.dumps(results)
    # the note told at SessionStart came back through MCP: capture marks it used
    wait_for_session_files(project, "RECALL_TEST")
    marks = (project / ".agentmem" / "local" / "evidence.jsonl").read_text()
    assert '"outcome": "used"' in marks and "opened it: mcp__agentmem__recall" in marks
    # agentmem.py lies outside the project: this machine's paths went to Claude Code's own
    # per-user file (~/.claude.json, the project's local servers), none to committed files
    assert not (project / ".mcp.json").exists()
    local = json.loads((Path(os.environ["HOME"]) / ".claude.json").read_text())
    mcp = json.dumps(local["projects"][str(project)]["mcpServers"]["agentmem"])
    assert json.dumps(os.path.dirname(os.path.abspath(AGENTMEM)))[1:-1] in mcp and "__import__" in mcp


def test_a_prompt_the_store_knows_about_is_told_its_note_and_another_is_not(project):
    am("remember", "The nightly db-migrate job for the orders service needs the RELEASE_TOKEN secret and "
       "runs from ci/migrate.yml", "--type", "fact", cwd=project, check=0)
    fake = FakeAnthropic()
    try:
        related = claude(project, fake, "Run the db-migrate job for the orders service by hand.")
        first = json.dumps(fake.requests)
        fake.requests.clear()
        unrelated = claude(project, fake, "Write a haiku about autumn leaves.")
        second = json.dumps(fake.requests)
    finally:
        fake.close()
    assert related.returncode == 0 and unrelated.returncode == 0, related.stderr + unrelated.stderr
    assert "RELEASE_TOKEN secret" in first                 # UserPromptSubmit: inject --prompt
    assert "RELEASE_TOKEN" not in second and "Handlers must stay under 40 lines" in second


def test_a_committed_install_works_in_a_teammate_s_clone(tmp_path, monkeypatch):
    """agentmem.py vendored in the repository, `install claude-code`, commit; the real CLI in a
    clone at another path, under another home, with the first checkout gone: the committed
    SessionStart hook tells the store's convention and the committed .mcp.json server answers."""
    first, _ = e2e_project(tmp_path, monkeypatch)
    (first / "tools").mkdir()
    shutil.copy(AGENTMEM, str(first / "tools" / "agentmem.py"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM", "CLAUDE"))}
    vendored = [os.environ.get("PYTHON", "python3"), str(first / "tools" / "agentmem.py")]
    for args in (["remember", "Handlers must stay under 40 lines", "--type", "convention"],
                 ["install", "claude-code"]):
        subprocess.run(vendored + args, cwd=str(first), env=env, check=True, capture_output=True)
    git = ["git", "-c", "user.email=a@b.c", "-c", "user.name=A", "-C", str(first)]
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "agentmem"], check=True)
    clone, home = tmp_path / "bob" / "shop", tmp_path / "bob" / "home"
    home.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(first), str(clone)], check=True)
    shutil.rmtree(str(first))
    (home / ".claude.json").write_text(json.dumps({"projects": {str(clone): {
        "hasTrustDialogAccepted": True, "enabledMcpjsonServers": ["agentmem"]}}}))
    monkeypatch.setenv("HOME", str(home))
    fake = FakeAnthropic()
    try:
        p = claude(clone, fake, "RECALL_TEST: how long may a handler be?", "--allowedTools", "mcp__agentmem__recall")
    finally:
        fake.close()
    assert p.returncode == 0, p.stderr
    assert "Handlers must stay under 40 lines" in json.dumps(fake.requests[0])     # SessionStart
    results = [c for r in fake.requests for m in r.get("messages", []) if isinstance(m.get("content"), list)
               for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_result"]
    assert results and "Handlers must stay under 40 lines" in json.dumps(results)   # .mcp.json
