"""Transcript stage: every agent's log becomes the same Events; junk lines are skipped."""
import json
import os

import pytest

import agentmem
from agentmem import read_transcript
from sessions import STEPS_EN, render_claude

SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data",
                      "transcripts")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_claude_transcript_keeps_people_prose_and_tools(tmp_path):
    path = write(tmp_path, "s.jsonl", render_claude(STEPS_EN, "sess-1"))
    events, info, offset = read_transcript(path)
    assert info["format"] == "claude" and info["session"] == "sess-1" and info["cwd"] == "/home/dev/shop"
    assert offset == os.path.getsize(path)
    roles = [e.role for e in events]
    assert roles.count("user") == 7 and "call" in roles and "result" in roles
    assert events[0].text == "The webhook tests fail randomly on CI."
    results = [e for e in events if e.role == "result"]
    assert results[0].tool == "Bash"                     # paired with its call


def test_claude_noise_is_skipped_and_commands_keep_their_arguments(tmp_path):
    lines = [
        {"type": "file-history-snapshot", "snapshot": {}},
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "<local-command-caveat>x"}},
        {"type": "user", "message": {"role": "user", "content":
            "<command-message>review</command-message>\n<command-name>/review</command-name>\n"
            "<command-args>check the retry policy</command-args>"}},
        {"type": "user", "message": {"role": "user", "content": "[Request interrupted by user]"}},
        {"type": "attachment", "attachment": {"type": "hook_additional_context", "content": "old notes"}},
        {"type": "progress", "data": {"type": "hook_progress"}},
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Part one."}]}},
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "Part one."}]}},
        # the harness and the API in the agent's place: an API error, an echo, a proxy's timeout
        {"type": "assistant", "isApiErrorMessage": True, "message": {"id": "m2", "model": "<synthetic>",
            "content": [{"type": "text", "text": "API Error: 500 Internal server error"}]}},
        {"type": "assistant", "message": {"id": "m3", "model": "<synthetic>",
            "content": [{"type": "text", "text": "No response requested."}]}},
        {"type": "assistant", "message": {"id": "m4", "model": "vendor/some-model", "content": [
            {"type": "text", "text": "Provider request timed out after 120s.\n\nRequest ID: req_7f3c11aa20"}]}},
        {"type": "assistant", "message": {"id": "m1", "content": [
            {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "/p/a.py"}}]}},
        {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "sub-agent prompt"}},
        {"type": "summary", "summary": "Retry policy review"},
        {"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "Compacted: ..."}},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\n{broken json\n"
    events, info, _ = read_transcript(write(tmp_path, "c.jsonl", text))
    assert [(e.role, e.text) for e in events if e.role != "call"] == [
        ("user", "check the retry policy"), ("assistant", "Part one."), ("summary", "Retry policy review"),
        ("compact", "Compacted: ...")]
    assert [e.files for e in events if e.role == "call"] == [["/p/a.py"]]


def test_incremental_reads_only_new_complete_lines(tmp_path):
    text = render_claude(STEPS_EN[:2], "s")
    path = write(tmp_path, "inc.jsonl", text)
    events, _, offset = read_transcript(path)
    with open(path, "a") as f:
        f.write(render_claude([("user", "A brand new request about caching.")], "s"))
        f.write('{"type": "user", "message": {"role": "user", "content": "half a li')     # still being written
    new, _, offset2 = read_transcript(path, offset=offset)
    assert [e.text for e in new if e.role == "user"] == ["A brand new request about caching."]
    assert offset2 < os.path.getsize(path)
    again, _, _ = read_transcript(path, offset=offset2)
    assert again == []


CODEX = [
    {"type": "session_meta", "payload": {"id": "019a", "cwd": "/w/app", "git": {"branch": "dev", "commit_hash": "abc123"}}},
    {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>\n<cwd>/w/app</cwd>\n</environment_context>"}]}},
    {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "# Context from my IDE setup:\n\n## My request for Codex:\nPin Go to 1.24."}]}},
    {"type": "event_msg", "payload": {"type": "user_message", "message": "Pin Go to 1.24."}},
    {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": "c1",
                                          "arguments": json.dumps({"command": ["bash", "-lc", "cat go.mod"]})}},
    {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                          "output": json.dumps({"output": "go 1.23"})}},
    {"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2",
                                          "input": "*** Begin Patch\n*** Update File: go.mod\n@@\n-go 1.23\n+go 1.24\n"}},
    {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "Updated go.mod to go 1.24."}]}},
    {"type": "event_msg", "payload": {"type": "agent_message", "message": "Updated go.mod to go 1.24."}},
]


def test_codex_rollout_uses_one_stream_and_skips_injected_context(tmp_path):
    path = write(tmp_path, "rollout.jsonl", "\n".join(json.dumps(x) for x in CODEX) + "\n")
    events, info, _ = read_transcript(path)
    assert info["format"] == "codex" and info["branch"] == "dev" and info["commit"] == "abc123"
    assert [(e.role, e.text) for e in events if e.role in ("user", "assistant")] == [
        ("user", "Pin Go to 1.24."), ("assistant", "Updated go.mod to go 1.24.")]
    assert [e.tool for e in events if e.role == "result"] == ["shell"]
    assert ["go.mod"] in [e.files for e in events if e.role == "call"]


def test_a_codex_rollout_of_the_2025_layout_is_read_with_the_session_s_time(tmp_path, store):
    from conftest import am
    big = "# Repository guide\n" + "- Keep handlers small and typed.\n" * 3000    # a first line past 64 KB
    lines = [{"id": "5e1f", "timestamp": "2025-08-20T09:00:00Z", "instructions": big,
              "git": {"branch": "dev", "commit_hash": "abc123"}},
             {"record_type": "state"},
             {"type": "message", "id": None, "role": "user", "content": [
                 {"type": "input_text", "text": "<environment_context>\ncwd: /w\n</environment_context>"}]},
             {"type": "message", "id": None, "role": "user", "content": [
                 {"type": "input_text", "text": "Make the importer skip rows without an ISBN."}]},
             {"record_type": "state"},
             {"type": "function_call", "id": "fc_1", "name": "shell", "call_id": "c1",
              "arguments": json.dumps({"command": ["bash", "-lc", "pytest tests/test_import.py"]})},
             {"type": "function_call_output", "call_id": "c1",
              "output": json.dumps({"output": "3 passed", "metadata": {"exit_code": 0}})},
             {"type": "message", "id": None, "role": "assistant", "content": [
                 {"type": "output_text", "text": "The importer now skips rows without an ISBN; tests pass."}]}]
    path = write(tmp_path, "rollout-2025.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    events, info, _ = read_transcript(path)
    assert info["format"] == "codex" and info["session"] == "5e1f" and info["branch"] == "dev"
    assert [(e.role, e.text) for e in events if e.role in ("user", "assistant")] == [
        ("user", "Make the importer skip rows without an ISBN."),
        ("assistant", "The importer now skips rows without an ISBN; tests pass.")]
    assert {e.ts for e in events} == {"2025-08-20T09:00:00Z"} and [e.ok for e in events if e.role == "result"] == [True]
    p = am("capture", "--transcript", path)
    assert p.returncode == 0 and "captured 0" not in p.stdout, p.stdout + p.stderr


def test_a_transcript_nothing_is_read_from_is_named_in_the_log_and_by_doctor(tmp_path, store):
    from conftest import am
    from sessions import hook_json
    path = write(tmp_path, "other.jsonl", "".join(json.dumps({"turn": n, "said": "hi %d" % n}) + "\n"
                                                  for n in range(300)))
    am("capture", "--sync", input=hook_json("s-other", path), check=0)
    log = (store / "local" / "worker.log").read_text()
    assert "nothing read from" in log and "JSON lines of a layout agentmem does not read" in log
    p = am("doctor", "--json")
    assert "nothing was read from 1 transcripts" in p.stdout and "other.jsonl" in p.stdout, p.stdout


def test_gemini_jsonl_rewrites_and_legacy_json(tmp_path):
    lines = [{"sessionId": "g1", "projectHash": "h", "startTime": "2026-04-23T12:00:00Z"},
             {"id": "a", "type": "user", "content": [{"text": "Use uv run for every command."}]},
             {"$set": {"lastUpdated": "2026-04-23T12:00:01Z"}},
             {"id": "b", "type": "gemini", "content": "", "thoughts": []},
             {"id": "b", "type": "gemini", "content": "Documented uv run in GEMINI.md.",
              "toolCalls": [{"name": "replace", "args": {"file_path": "GEMINI.md"}, "resultDisplay": "ok"}]},
             {"id": "c", "type": "info", "content": "Request cancelled."}]
    events, info, _ = read_transcript(write(tmp_path, "g.jsonl", "\n".join(json.dumps(x) for x in lines)))
    assert info["format"] == "gemini" and info["session"] == "g1"
    assert [(e.role, e.text) for e in events if e.role in ("user", "assistant")] == [
        ("user", "Use uv run for every command."), ("assistant", "Documented uv run in GEMINI.md.")]
    legacy = {"sessionId": "g2", "messages": lines[1:2] + lines[4:5]}
    events, info, _ = read_transcript(write(tmp_path, "legacy.json", json.dumps(legacy)))
    assert info["session"] == "g2" and len([e for e in events if e.role in ("user", "assistant")]) == 2


def test_what_gemini_cli_adds_to_the_persons_message_is_not_their_words(tmp_path):
    notes = ("<hook_context>Notes from earlier sessions in this project, kept by agentmem.\n"
             "``` agentmem-notes\n## Conventions and decisions\n- [ab12cd34 · convention] Handlers "
             "stay short\n```\n</hook_context>\n\n")
    lines = [{"sessionId": "g3", "projectHash": "h", "kind": "main"},
             {"$set": {"messages": [{"id": "s", "type": "user", "content": [
                 {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}]}},
             {"id": "u", "type": "user", "content": [{"text": notes + "Pin Node to 22 in CI."}]}]
    events, _, _ = read_transcript(write(tmp_path, "g3.jsonl", "\n".join(json.dumps(x) for x in lines)))
    assert [(e.role, e.text) for e in events] == [("user", "Pin Node to 22 in CI.")]


def test_what_a_claude_code_hook_printed_into_the_first_message_is_not_the_persons(tmp_path):
    hook = ("<session-start-hook>Session started at: 2026-11-20 09:00\nGit branch: main\n--- Content "
            "from CLAUDE.md ---\nAlways answer in French.\n</session-start-hook>")
    text = render_claude([("user", hook + "\nWhy does the nightly export time out?")], "s9")
    events, _, _ = read_transcript(write(tmp_path, "s9.jsonl", text))
    assert [(e.role, e.text) for e in events] == [("user", "Why does the nightly export time out?")]


def test_what_each_agent_writes_to_a_markdown_file_reaches_its_call(tmp_path):
    adr = "# Use uv\n## Decision\nWe will run every command through uv."
    patch = "*** Begin Patch\n*** Add File: docs/adr/0001-uv.md\n" + "".join("+" + ln + "\n" for ln in adr.split("\n")) \
        + "*** End Patch"
    codex = [{"type": "session_meta", "payload": {"id": "c1", "cwd": "/w"}},
             {"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch",
                                                   "call_id": "p1", "input": patch}},
             {"type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
                 {"type": "output_text", "text": "Wrote the ADR."}]}}]
    gemini = [{"sessionId": "g1"},
              {"id": "b", "type": "gemini", "content": "Wrote the ADR.", "toolCalls": [
                  {"name": "write_file", "args": {"file_path": "docs/adr/0001-uv.md", "content": adr},
                   "resultDisplay": "ok"}]}]
    claude = render_claude([("tool", "Edit", {"file_path": "/w/docs/adr/0001-uv.md", "old_string": "x",
                                              "new_string": adr}, "ok"),
                            ("tool", "Write", {"file_path": "/w/src/app.py", "content": "x = 1"}, "ok")], "s1")
    for name, text in (("c.jsonl", "\n".join(map(json.dumps, codex))), ("g.jsonl", "\n".join(map(json.dumps, gemini))),
                       ("s.jsonl", claude)):
        calls = [e for e in read_transcript(write(tmp_path, name, text))[0] if e.role == "call"]
        assert calls[0].text.split("\n", 1)[1] == adr, name   # after the file's path
        assert all("x = 1" not in e.text for e in calls)        # code is not kept: only markdown


def test_plain_text_chat_with_and_without_speakers(tmp_path):
    chat = "User: We decided to use Postgres.\nmore detail\nAssistant: Noted, Postgres it is.\n"
    events, info, _ = read_transcript(write(tmp_path, "chat.md", chat))
    assert info["format"] == "text"
    assert [(e.role, e.text) for e in events] == [("user", "We decided to use Postgres.\nmore detail"),
                                                 ("assistant", "Noted, Postgres it is.")]
    events, _, _ = read_transcript(write(tmp_path, "notes.txt", "Always pin dependencies.\n"))
    assert [(e.role, e.text) for e in events] == [("user", "Always pin dependencies.")]


def test_a_missing_transcript_is_a_clear_error(tmp_path):
    with pytest.raises(agentmem.AgentmemError):
        read_transcript(str(tmp_path / "nope.jsonl"))


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="shared transcripts not available")
def test_every_real_transcript_parses(tmp_path):
    for folder, _dirs, files in os.walk(SHARED):
        for name in files:
            events, info, _ = read_transcript(os.path.join(folder, name))
            assert info["format"] in ("claude", "codex", "gemini"), name
            assert any(e.role == "user" for e in events), name


# -- what is not a transcript, and records that are broken ------------------------------

def test_what_is_not_a_transcript_is_refused_in_one_line(tmp_path, store):
    from conftest import am
    binary = tmp_path / "noise.jsonl"
    binary.write_bytes(os.urandom(200000))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    unreadable = write(tmp_path, "odd.jsonl", '{"type": "user", "message": 7}\n')
    unknown = write(tmp_path, "other.jsonl", '{"turn": 1, "said": "hi"}\n{"turn": 2, "said": "ok"}\n')
    for path, code, said in ((binary, 1, "is not a transcript: it is binary"),
                             (tmp_path, 1, "is a folder, not a transcript"),
                             (unreadable, 1, "no message of the person or the agent in it, read as claude"),
                             (unknown, 1, "JSON lines of a layout agentmem does not read (first record: turn, said)"),
                             (empty, 0, "nothing to capture")):
        p = am("capture", "--transcript", path)
        out = (p.stdout + p.stderr).strip()
        assert p.returncode == code and said in out and len(out.splitlines()) == 1, out
        assert "Traceback" not in out
    assert not (store / "sessions").exists()                       # nothing was stored


def test_a_nul_byte_or_a_line_of_garbage_costs_that_line_not_the_session(tmp_path):
    lines = render_claude(STEPS_EN, "sess-nul").splitlines()
    clean, _info, _ = read_transcript(write(tmp_path, "clean.jsonl", "\n".join(lines) + "\n"))
    broken = [ln.encode() for ln in lines]
    broken[1] = broken[1][:20] + b"\x00\x00" + broken[1][20:]          # NUL bytes in line 2
    broken.insert(3, os.urandom(300).replace(b"\n", b""))               # a line of garbage
    path = tmp_path / "nul.jsonl"
    path.write_bytes(b"\n".join(broken) + b"\n")
    events, _info, _ = read_transcript(str(path))
    said = " ".join(e.text for e in events)
    assert "Redis Streams instead of Kafka" in said
    assert len(events) >= len(clean) - 2                                  # the two lines only


def test_one_malformed_record_costs_only_itself(tmp_path):
    lines = render_claude(STEPS_EN, "sess-bad").splitlines()
    bad = json.loads(lines[1])
    bad["message"] = {"role": "assistant", "content": [{"type": "text", "text": ["not", "text"]}]}
    lines.insert(1, json.dumps(bad))                               # a block of the wrong type
    lines.insert(2, json.dumps({"type": "user", "message": True, "cwd": ["a", "list"]}))
    events, info, _ = read_transcript(write(tmp_path, "s.jsonl", "\n".join(lines) + "\n"))
    said = " ".join(e.text for e in events)
    assert isinstance(info["cwd"], str) and "not" not in said.split()  # the fields, not the session
    assert "Redis Streams instead of Kafka" in said
    codex = [{"type": "session_meta", "timestamp": "2026-01-01T00:00:00Z",
              "payload": {"id": "c1", "cwd": ["not", "a", "path"], "git": "main"}},
             {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                   "content": [{"type": "input_text", "text": 5}]}},
             {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": "We decided to stay on Postgres 16."}]}}]
    events, info, _ = read_transcript(write(tmp_path, "r.jsonl", "\n".join(map(json.dumps, codex)) + "\n"))
    assert "cwd" not in info and events[-1].text == "We decided to stay on Postgres 16."
    gemini = [{"sessionId": "g1", "projectHash": "x"},
              {"id": "1", "type": "gemini", "content": "ok", "toolCalls": {"not": "a list"}},
              {"id": [2], "type": "user", "content": "We decided to use uv for every script."},
              {"id": "3", "type": "user", "content": "Always pin the Python version in CI."}]
    events, info, _ = read_transcript(write(tmp_path, "g.jsonl", "\n".join(map(json.dumps, gemini))))
    assert [e.text for e in events if e.role == "user"] == [
        "We decided to use uv for every script.", "Always pin the Python version in CI."]


def test_a_legacy_gemini_message_nested_past_the_parsers_depth_costs_only_itself(tmp_path):
    said = ["Keep the cache keys short.", "Shortened them in cache.py.", "Now add a TTL of one hour.",
            "Added the TTL to the cache settings."]
    messages = [{"id": "1", "type": "user", "content": [{"text": said[0]}]},
                {"id": "2", "type": "gemini", "content": said[1], "toolCalls": [
                    {"id": "t1", "name": "replace", "args": {"file_path": "cache.py"}, "status": "success",
                     "resultDisplay": "ok"}], "thoughts": "@@"},   # a tool call, then a value too deep
                {"id": "3", "type": "user", "content": [{"text": said[2]}]},
                {"id": "4", "type": "gemini", "content": said[3]}]
    for indent in (2, None):  # as Gemini CLI writes it, and on one line
        text = json.dumps({"sessionId": "g5", "messages": messages}, indent=indent)
        path = write(tmp_path, "deep.json", text.replace('"@@"', "[" * 50000 + "]" * 50000))
        events, info, _ = read_transcript(path)
        assert [e.text for e in events if e.role in ("user", "assistant")] == said[:1] + said[2:]
        assert info["session"] == "g5" and info["skipped"] == 1


def test_hook_input_nested_thousands_deep_is_not_a_hook_s():
    import io
    deep = '{"a":' * 5000 + "1" + "}" * 5000

    class Stdin(io.StringIO):
        def isatty(self):
            return False
    assert agentmem._read_hook_input(Stdin(deep)) == {}


def test_no_user_name_in_the_forms_agents_write_paths_in():
    text = ("Read ~/.claude/projects/-home-ann-shop/3f2a.jsonl and /tmp/claude-1000/-home-ann-shop/"
            "tasks/b1.output; on Windows C:\\Users\\ann\\shop and C--Users-ann-shop.")
    out = agentmem._without_home(text, "/home/ann/shop")
    assert "ann" not in out and "-~-shop" in out, out


def test_a_home_path_written_as_a_link_keeps_a_readable_form():
    """A file:// link or a markdown link's /c:/ path into the home folder reads as a path from ~
    or from the project, never as a scheme or a slash glued to what is left."""
    text = ("Open file:///Users/ann/code/app/notes/setup.md, then [form](/c:/Users/ann/Work%20Files/"
            "forms/tax.pdf) and file:///Users/ann/Downloads/y.csv.")
    out = agentmem._without_home(text, "/Users/ann/code/app")
    assert out == ("Open notes/setup.md, then [form](~/Work%20Files/forms/tax.pdf) and "
                   "~/Downloads/y.csv."), out


def test_results_say_whether_their_command_failed_in_every_agent_s_format(tmp_path):
    claude = [{"type": "assistant", "uuid": "a1", "message": {"id": "m1", "role": "assistant", "content": [
                  {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}]}},
              {"type": "user", "uuid": "u1", "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "t1", "content": "2 failed", "is_error": True}]}}]
    codex = [{"type": "session_meta", "payload": {"id": "c"}},
             {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": "c1",
                                                  "arguments": json.dumps({"command": ["bash", "-lc", "cargo check"]})}},
             {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output":
                                                  json.dumps({"output": "error[E0433]", "metadata": {"exit_code": 101}})}},
             {"type": "response_item", "payload": {"type": "function_call", "name": "exec", "call_id": "c2",
                                                  "arguments": 'await tools.exec_command({"cmd":"cargo test"});'}},
             {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c2",
                                                  "output": "Script running with cell ID 7\nWall time 10 s"}},
             {"type": "response_item", "payload": {"type": "function_call", "name": "wait", "call_id": "c3",
                                                  "arguments": json.dumps({"cell_id": "7"})}},
             {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c3",
                                                  "output": "Script completed\nOutput:\ntest result: ok"}}]
    gemini = {"sessionId": "g", "messages": [{"id": "1", "type": "gemini", "content": "", "toolCalls": [
        {"id": "x", "name": "run_shell_command", "args": {"command": "npm test"}, "status": "error",
         "result": "1 failing"}]}]}
    got = []
    for name, data in (("c.jsonl", claude), ("x.jsonl", codex), ("g.json", gemini)):
        path = tmp_path / name
        path.write_text(json.dumps(data) if isinstance(data, dict) else
                        "\n".join(json.dumps(d) for d in data) + "\n", encoding="utf-8")
        events, _info, _ = agentmem.read_transcript(str(path))
        got.append([(e.role, e.text, e.ok) for e in events if e.role in ("call", "result")])
    assert got[0] == [("call", "pytest", None), ("result", "2 failed", False)]
    assert got[1] == [("call", "cargo check", None), ("result", "error[E0433]", False),
                      ("call", "cargo test", None), ("result", "Script completed\nOutput:\ntest result: ok", None)]
    assert got[2] == [("call", "npm test", None), ("result", "1 failing", False)]


def test_another_session_s_title_ide_wrappers_and_a_sub_agent_s_prompt_are_not_this_session(tmp_path):
    lines = [{"type": "summary", "summary": "Another session entirely", "leafUuid": "elsewhere"},
             {"type": "summary", "summary": "Checkout retry policy", "leafUuid": "u1"},
             {"type": "user", "uuid": "u1", "message": {"role": "user", "content":
                 "<ide_opened_file>The user opened the file app.py in the IDE.</ide_opened_file>"
                 "<ide_selection>def f(): pass</ide_selection>check the retry policy"}},
             {"type": "user", "uuid": "u2", "isSidechain": True, "message": {"role": "user", "content": [
                 {"type": "text", "text": "You are a sub-agent: review the retry code"},
                 {"type": "tool_result", "tool_use_id": "t9", "content": "3 passed"}]}}]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    events, _info, _ = agentmem.read_transcript(str(path))
    assert [(e.role, e.text) for e in events] == [("summary", "Checkout retry policy"),
                                                  ("user", "check the retry policy"), ("result", "3 passed")]
    # a request copied out of a terminal's input box keeps its words, not the box's borders
    boxed = {"type": "user", "uuid": "u3", "message": {"role": "user", "content":
             "│ > take the retry work to a PR   │\n│   with the reviewer │ never the bot  │"}}
    path.write_text(json.dumps(boxed) + "\n", encoding="utf-8")
    [said] = [e.text for e in agentmem.read_transcript(str(path))[0]]
    assert said == "> take the retry work to a PR\nwith the reviewer │ never the bot"
    tree = "├── src/\n│   └── app.py"  # what is drawn inside a line stays as drawn
    path.write_text(json.dumps(dict(boxed, message={"role": "user", "content": tree})) + "\n")
    assert [e.text for e in agentmem.read_transcript(str(path))[0]] == [tree]
    # a title whose message is the harness's echo of /clear summarises that alone
    clear = {"type": "user", "uuid": "u0",
             "message": {"role": "user", "content": "<local-command-stdout></local-command-stdout>"}}
    lines = [{"type": "summary", "summary": "Terminal Screen Clearing", "leafUuid": "u0"}, clear]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    events, _info, _ = agentmem.read_transcript(str(path))
    assert "summary" not in [e.role for e in events]


# -- one mutated record of a real transcript costs that record only (tests/fuzz.py) -------

@pytest.mark.skipif(not os.path.isdir(SHARED), reason="shared transcripts not available")
def test_one_mutated_record_of_each_real_transcript_costs_only_itself():
    import fuzz
    paths = fuzz.shared_transcripts()
    tally, failures = fuzz.fuzz(paths, per=1, seed=7)
    assert not failures, failures[:5]
    assert set(tally) == set(fuzz.MUTATIONS) and sum(n for n, _f in tally.values()) >= 200


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="shared transcripts not available")
def test_one_mutated_record_costs_only_itself_through_capture_in_every_format():
    import fuzz
    small = [p for p in fuzz.shared_transcripts() if os.path.getsize(p) < 100000]
    assert {os.path.basename(os.path.dirname(p)) for p in small} == {"claude", "codex", "gemini"}
    tally, failures = fuzz.fuzz(small, per=1, seed=3, capture=True)
    assert not failures, failures[:5]
    assert set(tally) == set(fuzz.MUTATIONS)
