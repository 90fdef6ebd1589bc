"""End to end with the real Codex CLI (`codex exec`), headless against a fake Responses API.

Skipped unless a `codex` binary is found: set AGENTMEM_CODEX_BIN, or put it on PATH
(`npm install @openai/codex` provides node_modules/.bin/codex; `.ci/run` installs a pinned
one). The fake model listens on 127.0.0.1 only and is wired in as a custom `model_provider`
with `wire_api = "responses"`. What a user relies on, after `agentmem install codex`:
Codex's own config check accepts the MCP entry, the SessionStart notes reach the model, the
model's calls to `remember` and `recall` get real answers (they need no approval: the tools
carry annotations), the session's rollout is captured when it ends, and the next session is
told what the first one decided.

Codex runs a hook only after the person trusted it in /hooks; these runs pass
`--dangerously-bypass-hook-trust`, the flag Codex offers automation for that.
"""
import json
import os
import shutil
import subprocess

import pytest

from conftest import LocalServer, am, e2e_install, e2e_project, e2e_script, wait_for_session_files

CODEX = os.environ.get("AGENTMEM_CODEX_BIN") or shutil.which("codex")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not CODEX, reason="no Codex CLI (set AGENTMEM_CODEX_BIN)")]

COMPACTION_SUMMARY = ("## Progress\nThe flaky test_checkout_total came from the JWT expiry; its "
                      "lifetime is now 1 hour.\n\n## Next steps\n- Add a retry to the webhook sender")


FIXES = ("The export fails because the upload times out on large files; fixed by raising the "
         "timeout in jobs/export.py to 300 seconds.",
         "The expired IAM session token was the culprit; fixed by refreshing credentials in "
         "jobs/creds.py before each run.")


class FakeResponses(LocalServer):
    """The OpenAI Responses API, streamed: a scripted MCP tool call, or one line of text."""

    full_once = False

    def reply(self, handler, body):
        items = body.get("input") or []
        said = json.dumps([i for i in items if i.get("role") == "user"])
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        script = e2e_script(said)
        if len(outputs) < len(script):
            name, args = script[len(outputs)]
            item = {"type": "function_call", "id": "fc_%d" % len(outputs), "name": name,
                    "namespace": "mcp__agentmem", "call_id": "call_%d" % len(outputs),
                    "arguments": json.dumps(args)}
        else:
            item = {"type": "message", "role": "assistant", "id": "msg_1",
                    "content": [{"type": "output_text", "text": "Noted."}]}
        if "RETRACT_TEST" in said:  # a fix claimed, then another once the person says it failed
            item["content"][0]["text"] = FIXES[1 if "Still failing" in said else 0]
        if "CONTEXT CHECKPOINT COMPACTION" in json.dumps(items):  # Codex compacting the history
            item["content"][0]["text"] = COMPACTION_SUMMARY
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.end_headers()
        full = "COMPACT_TEST" in said and not self.full_once  # past the compaction limit, once
        self.full_once = self.full_once or full
        usage = {"input_tokens": 9000 if full else 10, "output_tokens": 2,
                 "total_tokens": 9002 if full else 12}
        for data in ({"type": "response.created", "response": {"id": "resp_1"}},
                     {"type": "response.output_item.done", "item": item},
                     {"type": "response.completed", "response": {"id": "resp_1", "usage": usage}}):
            handler.wfile.write(("event: %s\ndata: %s\n\n" % (data["type"], json.dumps(data))).encode())


@pytest.fixture
def project(tmp_path, monkeypatch):
    proj, home = e2e_project(tmp_path, monkeypatch)
    fake = FakeResponses()
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(
        'model = "gpt-5"\nmodel_provider = "fake"\nmodel_auto_compact_token_limit = 1000\n'
        '[model_providers.fake]\nname = "fake"\nbase_url = "%s/v1"\nwire_api = "responses"\n'
        'env_key = "FAKE_OPENAI_KEY"\n[projects.%s]\ntrust_level = "trusted"\n'
        % (fake.url, json.dumps(str(proj))))
    e2e_install(proj, "codex")
    yield proj, fake
    fake.close()


def codex(project, prompt):
    env = dict(os.environ, FAKE_OPENAI_KEY="fake", NO_COLOR="1")
    p = subprocess.run([CODEX, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
                        prompt], cwd=str(project), env=env, capture_output=True, text=True,
                       timeout=180, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def test_codex_accepts_the_installed_mcp_server(project):
    proj, _ = project
    p = subprocess.run([CODEX, "mcp", "list", "--json"], cwd=str(proj), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    [entry] = [s for s in json.loads(p.stdout) if s.get("name") == "agentmem"]
    assert entry["enabled"] is True and "__import__" in json.dumps(entry)


def test_a_decision_is_captured_and_told_to_the_next_session(project):
    proj, fake = project
    codex(proj, "We decided to use Postgres 16 for the orders service because we need JSONB.")
    first = json.dumps(fake.requests[0])
    assert "Handlers must stay under 40 lines" in first and "not instructions from the person" in first
    text = wait_for_session_files(proj, "Postgres 16")
    assert "## decision" in text and '"source": "codex:' in text
    assert "hook_context" not in text and "agentmem-notes" not in text
    del fake.requests[:]
    codex(proj, "What database do the orders use?")
    assert "Postgres 16 for the orders service" in json.dumps(fake.requests[0])


def test_the_model_remembers_and_recalls_through_mcp(project):
    proj, fake = project
    codex(proj, "TOOLS_TEST: note how we deploy, then check the handler rule.")
    outputs = [i.get("output") for r in fake.requests for i in r.get("input") or []
               if i.get("type") == "function_call_output"]
    assert len(outputs) >= 2, outputs
    assert "Handlers must stay under 40 lines" in json.dumps(outputs)
    assert "approval" not in json.dumps(outputs)
    shown = am("recall", "blue-green deploys", cwd=proj, check=0).stdout
    assert "Deploys go through the blue-green script" in shown
    # the handler rule told at SessionStart came back through MCP: capture marks it used
    wait_for_session_files(proj, "TOOLS_TEST")
    marks = (proj / ".agentmem" / "local" / "evidence.jsonl").read_text()
    assert '"outcome": "used"' in marks and "opened it: " in marks


def test_a_compaction_is_kept_as_the_session_s_summary(project):
    """The model's first answer is past the compaction limit: Codex compacts the history
    mid-turn, then goes on. The summary is the session's, its next steps what was left."""
    proj, fake = project
    codex(proj, "COMPACT_TEST: fix the flaky checkout test.")
    assert any("CONTEXT CHECKPOINT COMPACTION" in json.dumps(r) for r in fake.requests)
    text = wait_for_session_files(proj, "Left: Add a retry")
    assert '"who": "compaction"' in text and "came from the JWT expiry" in text
    assert text.count("came from the JWT expiry") == 1 and "Another language model" not in text
    assert "Left: Add a retry to the webhook sender." in text


def test_a_fix_the_person_reports_still_failing_at_the_next_turn_is_taken_back(project):
    """Codex captures after every turn (Stop): the claim of the first turn is already stored
    when the person, resuming, says it still fails; the session's final word wins."""
    proj, _fake = project
    codex(proj, "RETRACT_TEST: The nightly export to S3 fails half of the time.")
    assert "times out on large files" in wait_for_session_files(proj, "times out on large files")
    env = dict(os.environ, FAKE_OPENAI_KEY="fake", NO_COLOR="1")
    p = subprocess.run([CODEX, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check",
                        "resume", "--last", "Still failing tonight."], cwd=str(proj), env=env,
                       capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-3000:]
    wait_for_session_files(proj, "IAM session token was the culprit")
    bugs = [m["text"] for m in map(json.loads, am("export", cwd=proj).stdout.splitlines())
            if m["type"] == "bug"]
    assert len(bugs) == 1 and "IAM session token" in bugs[0], bugs
    assert bugs[0].startswith("RETRACT_TEST: The nightly export to S3 fails"), bugs
