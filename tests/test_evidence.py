"""Evidence of use: each note told to a session is judged, at capture, by what the session did
after it: used (with the command, file or line), ignored, or contradicted by the person."""
import json

import pytest

import agentmem
from conftest import am
from sessions import render_claude, render_codex, render_gemini

RENDER = {"claude": render_claude, "codex": render_codex, "gemini": render_gemini}

NOTES = {
    "ci": ("Run `npm run e2e:ci` before pushing: the plain e2e script skips the auth suite.",
           "convention"),
    "deploy": ("Deploys go through `fly deploy --strategy bluegreen` from the release branch.",
               "decision"),
    "limits": ("The rate limiter lives in src/limits/bucket.ts and backs off 60s on HTTP 429.",
               "fact"),
    "queue": ("The webhook queue is Redis Streams (stream key hooks:v2).", "decision"),
}
STEPS = [
    ("user", "Push the checkout fix"),
    ("tool", "Bash", {"command": "npm run e2e:ci"}, "12 passed"),
    ("assistant", "Green. Deploying as agreed."),
    ("tool", "Bash", {"command": "fly deploy --strategy bluegreen"}, "deploying v42"),
    ("user", "No, we don't do bluegreen anymore, deploys are rolling now."),
    ("tool", "Bash", {"command": "grep -rn webhook src"}, "src/queue.ts:3: const KEY = 'hooks:v2' // webhook"),
    ("assistant", "The queue key hooks:v2 is in src/queue.ts, left as it is."),
    ("user", "Fix the limiter in src/limits/bucket.ts"),
    ("assistant", "Looking at src/limits/bucket.ts now."),
]


def block(ids):
    """A notes block as inject prints it: one line a note, its id first."""
    return "``` agentmem-notes\n%s\n```\n" % "\n".join("- [%s · note · 2026-11-19] x" % i for i in ids)


@pytest.fixture
def told(store):
    s = agentmem.open_store(str(store))
    ids = {k: s.remember(text, type=t)[0].id for k, (text, t) in NOTES.items()}
    agentmem._log_told(s, "sess-x", "start", block([ids[k] for k in NOTES]), at="2026-11-20T08:00:00Z")
    agentmem._log_told(s, "sess-x", "prompt", block([ids["limits"]]),
                       prompt="Fix the limiter in src/limits/bucket.ts", at="2026-11-20T08:00:00Z")
    return s, ids


@pytest.mark.parametrize("fmt", sorted(RENDER))
def test_each_told_note_is_marked_used_ignored_or_contradicted_in_every_format(tmp_path, told, fmt):
    s, ids = told
    path = tmp_path / ("t-%s.jsonl" % fmt)
    path.write_text(RENDER[fmt](STEPS, "sess-x"))
    am("capture", "--transcript", path, "--session", "sess-x", "--no-llm", check=0)
    use = {k: agentmem.open_store(str(s.root)).get(i) for k, i in ids.items()}
    counts = {k: m.extra.get("use") for k, m in use.items()}
    assert counts["ci"] == {"told": 1, "used": 1, "contradicted": 0}        # it ran the command
    assert counts["deploy"] == {"told": 1, "used": 0, "contradicted": 1}    # the person said no
    assert counts["limits"] == {"told": 1, "used": 0, "contradicted": 0}    # the prompt named it
    assert counts["queue"] == {"told": 1, "used": 0, "contradicted": 0}     # grep showed it first
    assert use["ci"].confidence > 0.8 >= use["deploy"].confidence - 0.1
    shown = am("show", ids["ci"], check=0).stdout
    assert "told to 1 sessions, used in 1" in shown and "used: ran `npm run e2e:ci`" in shown
    shown = am("show", ids["deploy"], check=0).stdout
    assert "contradicted" in shown and "we don't do bluegreen anymore" in shown


def test_a_contradicted_note_waits_for_a_person_and_is_not_told_until_confirmed(tmp_path, told):
    s, ids = told
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS, "sess-x"))
    am("capture", "--transcript", path, "--session", "sess-x", "--no-llm", check=0)
    review = json.loads(am("review", "--json", check=0).stdout)
    assert [(r["memory"]["id"], r["reason"]) for r in review][:1] == [(ids["deploy"], "disputed")]
    assert ids["deploy"] not in am("inject", input="{}", check=0).stdout
    assert ids["ci"] in am("inject", input="{}", check=0).stdout
    am("confirm", ids["deploy"], check=0)
    assert ids["deploy"] in am("inject", input="{}", check=0).stdout


def test_capturing_the_session_again_counts_each_note_once(tmp_path, told):
    s, ids = told
    path = tmp_path / "t.jsonl"
    path.write_text(render_claude(STEPS[:3], "sess-x"))
    am("capture", "--transcript", path, "--session", "sess-x", "--no-llm", check=0)
    path.write_text(render_claude(STEPS, "sess-x"))   # the session went on
    am("capture", "--transcript", path, "--session", "sess-x", "--no-llm", check=0)
    am("capture", "--transcript", path, "--session", "sess-x", "--no-llm", check=0)
    s = agentmem.open_store(str(s.root))
    assert s.get(ids["ci"]).extra["use"] == {"told": 1, "used": 1, "contradicted": 0}
    assert s.get(ids["deploy"]).extra["use"] == {"told": 1, "used": 0, "contradicted": 1}


def test_the_hooks_log_what_they_told_and_stats_and_doctor_show_the_share_used(tmp_path, store):
    am("remember", "Run `make lint-ci` before pushing", "--type", "convention", check=0)
    hook = json.dumps({"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup"})
    assert "make lint-ci" in am("inject", input=hook, check=0).stdout
    log = (store / "local" / "told.jsonl").read_text().splitlines()
    assert len(log) == 1 and json.loads(log[0])["session"] == "s-1"
    steps = [("user", "ship it"), ("tool", "Bash", {"command": "make lint-ci"}, "ok")]
    path = tmp_path / "s.jsonl"
    path.write_text(render_claude(steps, "s-1"))
    am("capture", "--transcript", path, "--session", "s-1", "--no-llm", check=0)
    stats = json.loads(am("stats", "--json", check=0).stdout)
    assert stats["told_used_30d"]["all"] == [1, 1]
    assert "used:     1 of 1 (100%) of the notes told in 30 days" in am("stats", check=0).stdout
    assert "the SessionStart hook: 1 of 1 notes told in 30 days used" in am("doctor", check=0).stdout


def test_a_note_told_often_and_never_used_ranks_lower_and_show_says_why(store):
    s = agentmem.open_store(str(store))
    said = "2026-11-02T09:00:00Z"  # together: neither is the more recent
    a = s.remember("The billing cron runs `bin/billing --hourly` every hour", type="fact", created=said)[0]
    b = s.remember("The billing cron retries twice on failure", type="fact", created=said)[0]
    first = [h.memory.id for h in s.recall("billing cron")]
    a.extra["use"] = {"told": agentmem._NEVER_USED_TOLD, "used": 0, "contradicted": 0}
    s.update(a)
    after = [h.memory.id for h in agentmem.open_store(str(store)).recall("billing cron")]
    assert first[0] == a.id and after[0] == b.id
    assert "ranks lower: told to 10 or more sessions and never used" in am("show", a.id, check=0).stdout


def test_a_decision_nothing_run_can_show_used_keeps_its_rank_however_often_told(store):
    s = agentmem.open_store(str(store))
    a = s.remember("We chose hourly billing runs over nightly ones: fewer retries", type="decision")[0]
    s.remember("The billing retries back off twice", type="fact")
    first = [h.memory.id for h in s.recall("billing runs hourly")]
    a.extra["use"] = {"told": 3 * agentmem._NEVER_USED_TOLD, "used": 0, "contradicted": 0}
    s.update(a)
    after = [h.memory.id for h in agentmem.open_store(str(store)).recall("billing runs hourly")]
    assert first[0] == after[0] == a.id
    assert "ranks lower" not in am("show", a.id, check=0).stdout


def test_a_note_the_agent_recalled_through_mcp_is_used_and_a_repeat_of_the_prompt_is_not(
        tmp_path, store):
    s = agentmem.open_store(str(store))
    flaky = s.remember("The flaky test is test_retry_backoff: it sleeps on a real clock", type="bug")[0]
    asked = s.remember("Releases are cut with `make release VERSION=x.y.z`", type="convention")[0]
    agentmem._log_told(s, "s-m", "start", block([flaky.id, asked.id]), source="startup")
    steps = [("user", "Why does CI fail now and then? Use make release VERSION=1.2.0 after."),
             ("tool", "mcp__agentmem__recall", {"query": "flaky test"},
              "- [%s · bug] The flaky test is test_retry_backoff" % flaky.id),
             ("tool", "Bash", {"command": "make release VERSION=1.2.0"}, "done")]
    path = tmp_path / "m.jsonl"
    path.write_text(render_claude(steps, "s-m"))
    am("capture", "--transcript", path, "--session", "s-m", "--no-llm", check=0)
    s = agentmem.open_store(str(store))
    assert s.get(flaky.id).extra["use"]["used"] == 1
    assert "opened it: mcp__agentmem__recall" in am("show", flaky.id, check=0).stdout
    assert s.get(asked.id).extra["use"] == {"told": 1, "used": 0, "contradicted": 0}  # the person said it


def test_counts_written_in_place_keep_the_index_as_a_rebuild_would_and_a_hand_edit(store):
    s = agentmem.open_store(str(store))
    a = s.remember("Invoices are numbered per year: INV-2026-0001", type="convention")[0]
    b = s.remember("The PDF renderer is weasyprint 61", type="fact")[0]
    path = store / a.path
    path.write_text(path.read_text().replace("weasyprint 61", "weasyprint 62 (pinned)"))  # by hand
    a = s.get(a.id)
    a.extra["use"] = {"told": 3, "used": 1, "contradicted": 0}
    a.extra["disputed"] = "the person: no"
    s.update_metadata(a)
    assert "weasyprint 62 (pinned)" in path.read_text() and '"told": 3' in path.read_text()
    fast = agentmem.open_store(str(store))
    rows = [(m.id, m.line, m.end, m.to_dict()) for m in fast.memories()]
    assert fast.get(b.id).text.endswith("62 (pinned)")             # the hand edit is indexed
    assert [(m.id, why) for m, why, _d in fast.review_queue()] == [(a.id, "disputed")]
    fast.index().rebuild()
    assert [(m.id, m.line, m.end, m.to_dict()) for m in fast.memories()] == rows


def test_the_told_log_stays_bounded_and_a_broken_line_costs_only_itself(store, monkeypatch):
    s = agentmem.open_store(str(store))
    s.ensure()
    monkeypatch.setattr(agentmem, "_LOG_BYTES", 10000)
    for i in range(300):
        agentmem._log_told(s, "s%d" % i, "start", block(["abcd%04d" % i]), source="startup")
    with open(store / "local" / "told.jsonl", "a") as f:
        f.write('{"session": ["not", "a", "string"], "ids": 7}\nnot json at all\n'
                '{"session": "s-last", "ids": 7, "at": [1]}\n{"session": "s-last", "ids": [[1], "../x"]}\n')
    agentmem._log_told(s, "s-last", "start", block(["zzzz0000"]), source="startup")
    log = agentmem._read_log(str(store / "local" / "told.jsonl"))
    size = (store / "local" / "told.jsonl").stat().st_size
    assert 5000 <= size <= 10200 and log[-1]["session"] == "s-last" and len(log) >= 50
    assert agentmem._judge_session(s, ("s-last",), [], {}) == {}     # nothing to judge, no error
    events = [agentmem.Event("user", "hello", "2026-11-20T09:00:00Z")]
    assert agentmem._judge_session(s, ("s-last",), events, {"told": {"x": 5}}) == {}


def test_a_prompt_the_transcript_writes_otherwise_is_found_by_its_time(tmp_path, store):
    s = agentmem.open_store(str(store))
    note = s.remember("Migrations run with `alembic upgrade head` from api/", type="convention")[0]
    agentmem._log_told(s, "s-t", "prompt", block([note.id]), at="2026-11-20T09:00:25Z",
                       prompt="# Context from my IDE setup: ... apply the schema change")
    steps = [("user", "hello"), ("assistant", "Hi."), ("user", "apply the schema change"),
             ("tool", "Bash", {"command": "cd api && alembic upgrade head"}, "ok")]
    path = tmp_path / "t.jsonl"
    path.write_text(render_codex(steps, "s-t"))     # times 09:00:10, :20, :30, :40
    am("capture", "--transcript", path, "--session", "s-t", "--no-llm", check=0)
    assert agentmem.open_store(str(store)).get(note.id).extra["use"]["used"] == 1


# (the command a note gives, what the agent ran, whether that is a use of the note)
SHELL_FORMS = [
    ("REDIS_URL=redis://cache:6379 npm run worker",                   # quotes are the shell's
     'REDIS_URL="redis://cache:6379" npm run worker 2>&1 | tail -5', True),
    ("REDIS_URL=redis://cache:6379 npm run worker", "npm run worker", False),
    ("npm run lint", "cd web && npm run lint", True),                # a cd before it
    ("npm run lint", "npm ci && time npm run lint > lint.log", True),  # a chain, a redirection
    ("make test", "sudo -E make test &", True),                      # sudo, run in background
    ("make test", "env CI=1 make test", True),                       # env and its settings
    ("pytest -x tests/", "git stash; pytest -x tests/ -q | tee out.txt", True),
    ("grep -rn TODO src", "ls src | grep -rn TODO src", True),       # after a pipe
    ("npm test -- <file>", "npm test -- src/cart.test.ts", True),    # a placeholder
    ("python3 -m pytest tests/", "python3 -m mypy tests/", False),   # another module, same flag
    ("uv run ruff check src/app/", "uv run ruff check src/app/views.py", True),  # a file of its folder
    ("uv run ruff check src/app/", "uv run ruff check src/application.py", False),
    ("npm run e2e:ci", "npm run e2e", False),
    ("cargo test --workspace", "echo cargo test --workspace", False),
]


@pytest.mark.parametrize("gives,ran,used", SHELL_FORMS)
def test_a_note_s_command_is_used_when_the_agent_runs_it_as_a_shell_reads_it(
        tmp_path, store, capsys, gives, ran, used):
    s = agentmem.open_store(str(store))
    note = s.remember("Builds here run as `%s`." % gives, type="convention")[0]
    agentmem._log_told(s, "s-sh", "start", block([note.id]), source="startup")
    path = tmp_path / "sh.jsonl"
    path.write_text(render_claude([("user", "go on"), ("tool", "Bash", {"command": ran}, "ok")], "s-sh"))
    agentmem.main(["capture", "--store", str(store), "--transcript", str(path),
                   "--session", "s-sh", "--no-llm"])
    got = agentmem.open_store(str(store)).get(note.id).extra.get("use")
    assert got == {"told": 1, "used": int(used), "contradicted": 0}
