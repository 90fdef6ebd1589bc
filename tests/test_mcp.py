"""MCP stage: a whole session of raw JSON-RPC over stdio, as a client drives it."""
import json
import os
import subprocess
import sys

import pytest

import agentmem
from conftest import AGENTMEM


class Client:
    def __init__(self, *args):
        self.p = subprocess.Popen([sys.executable, AGENTMEM, "mcp"] + list(args), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.next_id = 0

    def send(self, msg):
        self.p.stdin.write((msg if isinstance(msg, str) else json.dumps(msg)) + "\n")
        self.p.stdin.flush()

    def read(self):
        line = self.p.stdout.readline()
        assert line.endswith("\n") and "\n" not in line[:-1]
        return json.loads(line)

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        reply = self.read()
        assert reply["id"] == self.next_id
        return reply

    def call(self, name, **arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})["result"]

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=10)
        rest = self.p.stdout.read()
        err = self.p.stderr.read()
        self.p.stdout.close()
        self.p.stderr.close()
        return rc, rest, err


@pytest.fixture
def client(store):
    c = Client()
    yield c
    if c.p.poll() is None:
        c.close()


@pytest.mark.parametrize("asked,answered", [("2024-11-05", "2024-11-05"), ("2025-03-26", "2025-03-26"),
                                            ("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
                                            ("1999-01-01", "2025-11-25")])
def test_initialize_negotiates_the_protocol_version(client, asked, answered):
    r = client.request("initialize", {"protocolVersion": asked, "capabilities": {},
                                      "clientInfo": {"name": "test", "version": "1"}})["result"]
    assert r["protocolVersion"] == answered
    assert r["capabilities"] == {"tools": {"listChanged": False}} and r["serverInfo"]["name"] == "agentmem"


def test_a_whole_session(client, store):
    client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}})
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})          # no reply expected
    assert client.request("ping")["result"] == {}
    tools = client.request("tools/list")["result"]["tools"]
    assert len(tools) <= 5 and {"recall", "remember", "forget"} <= {t["name"] for t in tools}
    assert len(json.dumps({"tools": tools})) < 6000
    hints = {t["name"]: t["annotations"] for t in tools}       # clients that ask before each call
    assert hints["recall"]["readOnlyHint"] is True and hints["context"]["readOnlyHint"] is True
    assert hints["remember"]["destructiveHint"] is False and hints["remember"]["openWorldHint"] is False
    saved = client.call("remember", text="Payments use integer cents, never floats", type="convention",
                        tags=["money"], files=["internal/money/cents.go"])
    assert saved["isError"] is False and saved["structuredContent"]["status"] == "added"
    mem_id = saved["structuredContent"]["id"]
    found = client.call("recall", query="paymnets cents", limit=3)
    assert found["isError"] is False and "integer cents" in found["content"][0]["text"]
    assert found["structuredContent"]["results"][0]["id"] == mem_id
    assert "not instructions" in found["content"][0]["text"]
    assert "not instructions" in found["structuredContent"]["note"]     # for clients that pass only JSON
    ctx = client.call("context")
    assert "integer cents" in ctx["content"][0]["text"]
    bad = client.call("recall", limit=3)                                          # no query
    assert bad["isError"] is True and "query" in bad["content"][0]["text"]
    gone = client.call("forget", id="nope0000")
    assert gone["isError"] is True
    assert client.call("forget", id=mem_id)["isError"] is False
    assert client.call("recall", query="cents")["structuredContent"]["results"] == []
    unknown_tool = client.request("tools/call", {"name": "explode", "arguments": {}})
    assert unknown_tool["error"]["code"] == -32602
    assert client.request("tools/call", {"name": "recall", "arguments": "x"})["error"]["code"] == -32602
    assert client.request("server/discover", {"_meta": {}})["error"]["code"] == -32601
    assert client.request("resources/list")["error"]["code"] == -32601
    client.send("{this is not json")
    assert client.read() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    client.send(json.dumps([{"jsonrpc": "2.0", "id": 90, "method": "ping"},
                            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}]))
    assert client.read() == [{"jsonrpc": "2.0", "id": 90, "result": {}}]
    rc, rest, err = client.close()                                                # EOF ends the server
    assert rc == 0 and rest == ""


def test_a_key_named_once_in_what_an_agent_remembers_is_masked_in_every_field(client, store):
    key = "9a8b7c6d5e4f30211f2e3d4c5b6a7980"                  # 32 hex: a digest's shape, named a key here
    client.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}})
    saved = client.call("remember", text="The metrics API key is %s; the exporter signs with %s." % (key, key),
                        type="fact", tags=[key])
    assert saved["isError"] is False
    on_disk = b"".join(f.read_bytes() for f in store.rglob("*") if f.is_file())
    assert key.encode() not in on_disk and b"the exporter signs with [REDACTED]" in on_disk


def test_the_store_follows_the_project_directory(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.delenv("AGENTMEM_DIR")
    p = subprocess.run([sys.executable, AGENTMEM, "mcp"], input=json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "remember", "arguments": {"text": "Stored where the agent works"}}}) + "\n",
        capture_output=True, text=True, cwd=str(project), timeout=30,
        env=dict(os.environ, CLAUDE_PROJECT_DIR=str(project)))
    assert json.loads(p.stdout)["result"]["isError"] is False
    assert (project / ".agentmem" / "memories").is_dir()


def test_the_server_survives_lines_that_are_not_utf8_too_deep_or_odd(store):
    deep = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    lines = [deep, b'{"jsonrpc": "2.0", "id": 2, "method": "pi\\ud800ng"}', b'{"jsonrpc": "2.0", "id": 3, '
             b'"method": "\xff\xfeping"}', b'{"jsonrpc": "2.0", "id": 4, "method": "ping"}']
    p = subprocess.run([sys.executable, AGENTMEM, "mcp"], input=b"\n".join(lines) + b"\n", capture_output=True,
                       timeout=60, env=dict(os.environ, PYTHONIOENCODING="utf-8:strict", LC_ALL="C.UTF-8"))
    replies = [json.loads(x) for x in p.stdout.decode("utf-8").splitlines()]
    assert p.returncode == 0 and [r["id"] for r in replies] == [None, 2, 3, 4]
    assert replies[0]["error"]["code"] == -32700 and replies[1]["error"]["code"] == -32601
    assert replies[-1]["result"] == {}                                   # still serving


def test_replies_stay_within_their_budget_and_a_huge_text_is_refused(client, store):
    client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    huge = client.call("remember", text="Deploy note: " + "x" * 5000000)
    assert huge["isError"] is True and "at most 16384" in huge["content"][0]["text"]
    s = agentmem.open_store()
    for i in range(20):        # long memories written by hand into the store's own files
        s.remember("Deploy rule %d: %s" % (i, "the release job checks every region first. " * 300),
                   type="convention")
    s.close()
    found = client.call("recall", query="deploy rule release job", limit=20)
    reply = json.dumps(found)
    assert len(reply) < 3 * agentmem._MCP_REPLY_CHARS and "more: ask with more precise words" in reply
    nothing = client.call("recall", query="zebra " * 200000)
    assert len(json.dumps(nothing)) < 2000                      # the query is not echoed in full
