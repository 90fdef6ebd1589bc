"""Capture stage: the hook returns at once, a detached worker does the work, nothing is lost or doubled."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import am
from sessions import STEPS_EN, hook_json, render_claude


def export(store):
    p = am("export")
    return [json.loads(x) for x in p.stdout.splitlines()]


def wait_for_queue(store, seconds=20):
    deadline = time.time() + seconds
    queue = store / "local" / "queue"
    while time.time() < deadline:
        if not [n for n in os.listdir(queue) if n.endswith(".json")]:
            return True
        time.sleep(0.1)
    return False


def test_hook_returns_silently_and_a_detached_worker_captures(store, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS_EN, "sess-bg"), encoding="utf-8")
    p = am("capture", input=hook_json("sess-bg", path))
    assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    assert wait_for_queue(store), "the background worker did not drain the queue"
    time.sleep(0.2)
    assert any(m["type"] == "bug" for m in export(store))


def test_stop_after_every_turn_adds_only_what_is_new(store, tmp_path):
    path = tmp_path / "stop.jsonl"
    path.write_text(render_claude(STEPS_EN[:4], "sess-stop"), encoding="utf-8")
    hook = hook_json("sess-stop", path, event="Stop")
    am("capture", "--sync", input=hook, check=0)
    first = export(store)
    assert [m["type"] for m in first if m["type"] not in ("summary", "episode")] == ["bug"]
    am("capture", "--sync", input=hook, check=0)                   # the same turn again: nothing new
    assert export(store) == first
    with open(path, "a", encoding="utf-8") as f:
        f.write(render_claude(STEPS_EN[4:6], "sess-stop").replace('"uuid": "u', '"uuid": "v'))
    am("capture", "--sync", input=hook, check=0)
    second = export(store)
    assert len([m for m in second if m["type"] == "decision"]) == 1
    assert len([m for m in second if m["type"] == "bug"]) == 1
    assert len([m for m in second if m["type"] == "summary"]) == 1   # one summary, rewritten
    files = list((store / "sessions").glob("*.md"))
    assert len(files) == 1


def test_what_hooks_capture_turn_by_turn_is_dated_when_the_session_said_it_not_today(store, tmp_path):
    turns = [[("user", "Run the unit tests of the billing module."),
              ("tool", "Bash", {"command": "pytest -q tests/billing"}, "12 passed in 0.4s"),
              ("assistant", "The billing tests pass: 12 in `tests/billing`.")],
             [("user", "Now lint the billing module."),
              ("tool", "Bash", {"command": "ruff check billing"}, "All checks passed!"),
              ("assistant", "Ruff finds nothing in `billing/`.")]]
    path = tmp_path / "turns.jsonl"
    for i, event in enumerate(["Stop", "Stop", "SessionEnd"]):
        steps = [step for turn in turns[: i + 1] for step in turn]
        path.write_text(render_claude(steps, "sess-days"), encoding="utf-8")
        am("capture", "--sync", input=hook_json("sess-days", path, event=event), check=0)
    mems = export(store)
    [passed] = [m for m in mems if m["text"].startswith("Commands that passed here")]
    assert "`pytest -q tests/billing`" in passed["text"] and "`ruff check billing`" in passed["text"]
    assert {(m.get("updated") or m["created"])[:10] for m in mems} == {"2026-11-20"}


def test_a_turn_that_says_or_prints_what_an_earlier_turn_did_is_still_captured(store, tmp_path):
    turns = [[("user", "Format the code."), ("tool", "Bash", {"command": "make fmt"}, ""),
              ("assistant", "Formatted with `make fmt`.")],
             [("user", "Run the next check of the list."), ("tool", "Bash", {"command": "cargo test --workspace"}, ""),
              ("assistant", "The workspace tests pass.")],
             [("user", "Run the next check of the list."), ("tool", "Bash", {"command": "cargo clippy --workspace"}, ""),
              ("assistant", "Clippy is quiet.")]]
    path = tmp_path / "again.jsonl"
    for i, event in enumerate(["Stop", "Stop", "Stop", "SessionEnd"]):
        steps = [step for turn in turns[: i + 1] for step in turn]
        path.write_text(render_claude(steps, "sess-again"), encoding="utf-8")
        am("capture", "--sync", input=hook_json("sess-again", path, event=event), check=0)
    [passed] = [m["text"] for m in export(store) if m["text"].startswith("Commands that passed here")]
    assert passed == ("Commands that passed here: lint `cargo clippy --workspace`; format `make fmt`; "
                      "test `cargo test --workspace`.")
    [quiet] = [m for m in export(store) if m["text"] == "Clippy is quiet."]
    assert quiet["turn"] == 3 and quiet["asked"] == "Run the next check of the list."  # said again


def test_a_yes_to_the_agent_s_plan_is_no_decision_glued_to_the_request_before_it(store, tmp_path):
    """The request a turn answers is kept for the next capture; it is no question the person's
    next word replies to, turn by turn as in one go."""
    turns = [[("user", "Check the retry loop in the uploader and tell me what you would change."),
              ("assistant", "Three changes: cap the retries at five, add jitter to the delay, and log "
                            "each failed attempt.")],
             [("user", "yes, I agree with all three, go ahead"),
              ("tool", "Edit", {"file_path": "/nowhere/uploader.py", "old_string": "a", "new_string": "b"}, "ok"),
              ("assistant", "Done: the uploader caps retries at five, adds jitter and logs each failure.")]]
    path = tmp_path / "plan.jsonl"
    decisions = []
    for events in (["Stop", "Stop", "SessionEnd"], None):
        if events is None:  # the same session captured in one go, into a fresh store
            shutil.rmtree(store)
            path.write_text(render_claude([s for t in turns for s in t], "sess-plan"), encoding="utf-8")
            am("capture", "--transcript", str(path), check=0)
        for i, event in enumerate(events or []):
            path.write_text(render_claude([s for t in turns[: i + 1] for s in t], "sess-plan"), encoding="utf-8")
            am("capture", "--sync", input=hook_json("sess-plan", path, event=event), check=0)
        decisions.append([m["text"] for m in export(store) if m["type"] == "decision"])
    assert decisions[0] == decisions[1]
    assert not any("retry loop" in d for d in decisions[0])

@pytest.mark.parametrize("reviewed", [False, True])
def test_a_claim_stored_at_one_turn_is_taken_back_by_a_later_turn_s_word(store, tmp_path, reviewed):
    """Codex captures after every turn: the session's final word still wins over what an
    earlier capture stored (the person's "still failing", the agent's retraction)."""
    path = tmp_path / "turns.jsonl"
    edit = ("tool", "Edit", {"file_path": "/nowhere/jobs/export.py", "old_string": "a", "new_string": "b"}, "ok")
    turns = [[("user", "The nightly export to S3 fails half of the time."), edit,
              ("assistant", "The export fails because the upload times out on large files; fixed by "
                            "raising the timeout in `jobs/export.py` to 300 seconds.")],
             [("user", "Still failing tonight."), edit,
              ("assistant", "The expired IAM session token was the culprit; fixed by refreshing "
                            "credentials in `jobs/export.py` before each run.")]]
    hook = hook_json("sess-turns", path, event="Stop")
    bugs = []
    for n in (1, 2):
        path.write_text(render_claude([s for t in turns[:n] for s in t], "sess-turns"))
        am("capture", "--sync", input=hook, check=0)
        bugs.append([m["text"] for m in export(store) if m["type"] == "bug"])
        if n == 1 and reviewed:                                      # a person confirmed it since
            am("confirm", [m["id"] for m in export(store) if m["type"] == "bug"][0])
    assert len(bugs[0]) == 1 and "times out" in bugs[0][0]          # stored at the first turn
    assert any(b.startswith("The nightly export to S3 fails") and "IAM session token" in b
               for b in bugs[1])
    # taken back at the second, unless a person reviewed it: then it is theirs
    assert any("times out" in b for b in bugs[1]) == reviewed


def test_a_decision_stored_at_one_turn_is_taken_back_when_the_person_changes_their_mind(store, tmp_path):
    path = tmp_path / "mind.jsonl"
    turns = [("user", "Let's use Redis for the session cache."),
             ("assistant", "OK, I will add Redis as the session cache."),
             ("user", "Forget Redis, use an in-memory LRU for the session cache."),
             ("assistant", "Done: an in-memory LRU holds the sessions now.")]
    hook = hook_json("sess-mind", path, event="Stop")
    told = []
    for n in (2, 4):
        path.write_text(render_claude(turns[:n], "sess-mind"))
        am("capture", "--sync", input=hook, check=0)
        told.append([m["text"] for m in export(store) if m["type"] == "decision"])
    assert told == [["Let's use Redis for the session cache."],
                    ["Forget Redis, use an in-memory LRU for the session cache."]]


def test_the_last_message_counts_when_the_transcript_lags(store, tmp_path):
    path = tmp_path / "lag.jsonl"
    path.write_text(render_claude([("user", "The login page returns 500 after deploy.")], "sess-lag"))
    hook = json.loads(hook_json("sess-lag", path, event="Stop"))
    hook["last_assistant_message"] = ("The 500 was caused by a missing SECRET_KEY setting in production; "
                                      "fixed by reading it from the environment.")
    am("capture", "--sync", input=json.dumps(hook), check=0)
    [bug] = [m for m in export(store) if m["type"] == "bug"]
    assert bug["text"].startswith("The login page returns 500 after deploy.")


def test_a_hook_that_names_a_plain_file_stores_none_of_it(store, tmp_path):
    """An agent's hook names its JSON-lines transcript; a file of plain text it names (a
    credentials file, /etc/passwd) is no session: not one of its lines reaches the store, and
    the hook's own message still does."""
    path = tmp_path / "credentials"
    path.write_text("[default]\nregion = eu-west-1\nowner: ops-team-lead\nroot:x:0:0:root:/root:/bin/bash\n")
    hook = json.loads(hook_json("sess-plain", path, event="Stop"))
    hook["last_assistant_message"] = "We decided to stay on Postgres for the queue; Redis is not worth it."
    am("capture", "--sync", input=json.dumps(hook), check=0)
    on_disk = "".join(f.read_text() for f in store.rglob("*.md"))
    assert "ops-team-lead" not in on_disk and "/bin/bash" not in on_disk
    assert "stay on Postgres" in on_disk
    p = am("capture", "--transcript", str(path), check=0)        # named by the person: read
    assert p.returncode == 0 and "ops-team-lead" in "".join(f.read_text() for f in store.rglob("*.md"))


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", json.dumps({"transcript_path": "/nope.jsonl"}),
                                   json.dumps({"session_id": 5, "cwd": 7, "transcript_path": None})])
def test_a_hook_never_fails_and_never_prints(store, stdin):
    p = am("capture", "--sync", input=stdin)
    assert p.returncode == 0 and p.stdout == ""
    assert "Traceback" not in p.stderr


def test_disable_turns_every_hook_into_a_no_op(store, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS_EN, "sess-off"))
    env = {"AGENTMEM_DISABLE": "1"}
    for cmd in (["capture"], ["capture", "--sync"], ["inject"]):
        p = am(*cmd, input=hook_json("sess-off", path), env=env)
        assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    assert not store.exists()


def test_a_failed_job_stays_queued_and_is_retried(store, tmp_path):
    path = tmp_path / "later.jsonl"
    path.mkdir()                                                   # unreadable for now
    p = am("capture", "--sync", input=hook_json("sess-retry", path))
    assert p.returncode == 0 and "kept in the queue" in p.stderr
    [job] = (store / "local" / "queue").glob("*.json")
    assert json.loads(job.read_text())["attempts"] == 1
    path.rmdir()
    path.write_text(render_claude(STEPS_EN[:4], "sess-retry"))
    data = json.loads(job.read_text())
    data["not_before"] = 0                                         # skip the back-off wait
    job.write_text(json.dumps(data))
    p = am("process", check=0)
    assert "processed 1 jobs" in p.stdout
    assert any(m["type"] == "bug" for m in export(store))


def test_captured_memories_know_their_commit_and_file_contents(store, tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "conftest.py").write_text("import pytest\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "init", "-q", "-b", "work", str(repo)], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "init"], check=True, env=env)
    path = tmp_path / "t.jsonl"
    steps = [("user", "The webhook tests fail randomly on CI."),
             ("tool", "Edit", {"file_path": str(repo / "tests" / "conftest.py")}, "ok"),
             STEPS_EN[3]]
    path.write_text(render_claude(steps, "sess-git", cwd=str(repo)).replace('"gitBranch": "main", ', ""))
    am("capture", "--sync", input=hook_json("sess-git", path, cwd=str(repo)), check=0)
    [bug] = [m for m in export(store) if m["type"] == "bug"]
    assert bug["branch"] == "work" and len(bug["commit"]) == 12
    assert bug["files"] == ["tests/conftest.py"] and len(bug["hashes"]["tests/conftest.py"]) == 12


def test_capture_never_reads_a_file_outside_the_project_through_a_symlink(store, tmp_path):
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "tests").mkdir(parents=True)
    outside.mkdir()
    (outside / "conftest.py").write_text("private\n")
    (repo / "tests" / "conftest.py").symlink_to(outside / "conftest.py")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    path = tmp_path / "t.jsonl"
    steps = [("user", "The webhook tests fail randomly on CI."),
             ("tool", "Edit", {"file_path": str(repo / "tests" / "conftest.py")}, "ok"), STEPS_EN[3]]
    path.write_text(render_claude(steps, "sess-link", cwd=str(repo)))
    am("capture", "--sync", input=hook_json("sess-link", path, cwd=str(repo)), check=0)
    [bug] = [m for m in export(store) if m["type"] == "bug"]
    assert bug["files"] == ["tests/conftest.py"] and "hashes" not in bug


def test_config_can_exclude_a_project(store, tmp_path):
    store.mkdir()
    (store / "config.json").write_text(json.dumps({"exclude": ["*/secret-*"]}))
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS_EN, "sess-x"))
    am("capture", "--sync", input=hook_json("sess-x", path, cwd="/home/me/secret-project"), check=0)
    assert export(store) == []
    am("capture", "--sync", input=hook_json("sess-x", path, cwd="/home/me/open-project"), check=0)
    assert export(store)


def test_capture_a_file_by_hand_and_users_own_redaction(store, tmp_path):
    store.mkdir()
    (store / "config.json").write_text(json.dumps({"redact": [r"ACME-\d{6}"]}))
    chat = tmp_path / "design.md"
    chat.write_text("User: We decided to keep tenant ids in the JWT claims; the customer ACME-123456 asked.\n"
                    "Assistant: Understood.\n")
    p = am("capture", "--transcript", str(chat), "--session", "design-review", check=0)
    assert "captured 4 memories" in p.stdout       # the decision, two passages, the digest
    [d] = [m for m in export(store) if m["type"] == "decision"]
    assert "ACME-123456" not in d["text"] and "[REDACTED]" in d["text"] and d["session"] == "design-review"
    p = am("capture", "--transcript", str(tmp_path / "missing.jsonl"))
    assert p.returncode == 1 and "no transcript" in p.stderr


def test_sub_agents_beside_a_claude_session_are_read_too(store, tmp_path):
    path = tmp_path / "sess-sub.jsonl"
    path.write_text(render_claude([("user", "Find out why the nightly export job fails.")], "sess-sub"))
    sub = tmp_path / "sess-sub" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-a1.jsonl").write_text(render_claude(
        [("user", "Investigate the export job (a prompt from the main agent)."),
         ("assistant", "The export job fails because the S3 bucket policy denies PutObject; fixed by adding "
                       "the role to the policy in infra/s3.tf.")], "sess-sub").replace('"isSidechain": false',
                                                                      '"isSidechain": true'))
    am("capture", "--sync", input=hook_json("sess-sub", path), check=0)
    [bug] = [m for m in export(store) if m["type"] == "bug"]
    assert "S3 bucket policy" in bug["text"] and bug["text"].startswith("Find out why the nightly export job fails")
    assert not any("a prompt from the main agent" in m["text"] for m in export(store))


def test_gemini_precompress_before_every_request_is_captured_once_per_64_kb(store, tmp_path):
    path = tmp_path / "session-g.jsonl"
    path.write_text(json.dumps({"sessionId": "g", "projectHash": "h"}) + "\n", encoding="utf-8")
    hook = json.dumps({"session_id": "g", "transcript_path": str(path), "cwd": str(tmp_path),
                       "hook_event_name": "PreCompress", "trigger": "auto"})
    for _ in range(3):                                     # three model requests, one turn
        assert am("capture", input=hook).returncode == 0
    assert wait_for_queue(store)
    log = store / "local" / "worker.log"
    assert log.read_text().count("PreCompress") == 1
    with open(path, "a", encoding="utf-8") as f:           # the chat grew: worth another look
        f.write(json.dumps({"id": "u", "type": "user", "content": "x" * 70000}) + "\n")
    am("capture", input=hook)
    am("capture", input=hook.replace('"auto"', '"manual"'))   # /compress always counts
    assert wait_for_queue(store)
    assert log.read_text().count("PreCompress") == 3


def test_doctor_check_and_review_agree_and_failed_captures_say_why(store, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS_EN, "sess-h"))
    am("capture", "--sync", input=hook_json("sess-h", path), check=0)
    waiting = len(json.loads(am("review", "--json", check=0).stdout))
    assert waiting > 0                                             # captured, nobody reviewed them
    assert "%d memories wait for a person's review (agentmem review)" % waiting in am("check").stdout
    assert "review: %d memories wait" % waiting in am("doctor").stdout
    gone = tmp_path / "gone.jsonl"
    am("capture", "--sync", input=hook_json("sess-gone", gone), check=0)   # a transcript that is not there
    doctor = am("doctor").stdout                                  # it failed once, for good, saying why
    assert "1 capture jobs failed, the last: %s: _GoneError: transcript %s does not exist" % (gone, gone) in doctor
    assert "nothing to retry: their transcripts are gone" in doctor and "agentmem process" not in doctor
    p = am("process")
    assert "processed 0 jobs" in p.stdout and "still queued" not in p.stdout


def test_a_job_file_that_is_not_a_job_costs_itself_only(store, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS_EN, "sess-ok"))
    queue = store / "local" / "queue"
    queue.mkdir(parents=True)
    (queue / "1-bad.json").write_text("[1, 2]")                   # JSON, but no job
    (queue / "1-worse.json").write_text(json.dumps({"transcript": str(path), "attempts": "x",
                                                    "not_before": "soon"}))  # no numbers
    (queue / "2-ok.json").write_text(json.dumps({
        "session": "sess-ok", "transcript": str(path), "cwd": str(tmp_path), "event": "SessionEnd",
        "format": "auto", "attempts": 0, "final": True}))
    p = am("process")
    assert p.returncode == 0 and "processed 1 jobs" in p.stdout and "Traceback" not in p.stderr
    assert "Redis Streams" in am("recall", "webhook queue Redis", check=0).stdout
    assert "2 failing: 1-bad.json: unreadable job file" in am("doctor").stdout  # named, not lost


def test_a_capture_state_that_is_amiss_is_started_over_not_fatal(store, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS_EN, "sess-state"))
    (store / "local").mkdir(parents=True)
    for state in ({"transcripts": []}, {"transcripts": {str(path): {"offset": "x"}}},
                  {"transcripts": {str(path): {"offset": 0, "seen": [["not", "a", "key"]]}}},
                  {"transcripts": {str(path): {"offset": 0, "context": {"claims": [5, ["a"], [1, 2, 3]]}}}}):
        (store / "local" / "capture-state.json").write_text(json.dumps(state))
        p = am("capture", "--transcript", str(path))
        assert p.returncode == 0 and "captured" in p.stdout, p.stderr
    assert "Redis Streams" in am("recall", "webhook queue Redis", check=0).stdout


def test_a_job_that_failed_repeatedly_is_named_and_retried_on_request(store, tmp_path):
    path = tmp_path / "t.jsonl"
    failed = store / "local" / "queue" / "failed"
    failed.mkdir(parents=True)
    (failed / "1-x.json").write_text(json.dumps({
        "session": "sess-r", "transcript": str(path), "cwd": str(tmp_path), "event": "SessionEnd",
        "format": "auto", "attempts": 6, "final": True,
        "error": "PermissionError: [Errno 13] Permission denied: %r" % str(path)}))
    doctor = am("doctor").stdout
    assert "1 capture jobs failed repeatedly, the last: %s" % path in doctor
    assert "agentmem process --retry" in doctor
    path.write_text(render_claude(STEPS_EN, "sess-r"))             # the cause is fixed
    p = am("process", "--retry", check=0)
    assert "1 failed jobs back in the queue" in p.stdout and "stored" in p.stdout
    assert not list(failed.glob("*.json"))
    assert "Redis Streams" in am("recall", "webhook queue Redis", check=0).stdout


def test_a_team_keeps_the_session_s_words_out_of_git_with_one_setting(store, tmp_path):
    store.mkdir()
    (store / "config.json").write_text(json.dumps({"words": "local"}))
    chat = tmp_path / "chat.md"
    chat.write_text("User: Why do refunds fire twice?\nAssistant: Retries on 409 fire the webhook "
                    "again, so the handler now checks the idempotency key.\n")
    am("capture", "--transcript", str(chat), check=0)
    [shared] = (store / "sessions").glob("*.md")
    [local] = (store / "local" / "words").glob("*.md")
    assert "## episode" not in shared.read_text() and "## summary" in shared.read_text()
    assert "idempotency key" in local.read_text() and "local/" in (store / ".gitignore").read_text()
    hits = json.loads(am("recall", "idempotency key", "--json").stdout)
    assert hits[0]["text"].startswith("Retries on 409") and hits[0]["type"] == "episode"

