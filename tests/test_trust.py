"""Trust and lifecycle: memories know where they came from, go stale when their code
changes, are confirmed or forgotten by the person, and a newer decision replaces an older one."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import AGENTMEM, am, store_env
from sessions import hook_json, render_claude


def git(repo, *args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)] + list(args),
                   check=True, capture_output=True)


@pytest.fixture(scope="session")
def captured_once(tmp_path_factory):
    """A git repository with src/a.py and a captured session that fixed a bug in it, made once."""
    root = tmp_path_factory.mktemp("captured")
    env = dict(store_env(root), AGENTMEM_DIR=None)  # the store is the repository's own
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("def total(xs):\n    return sum(xs)\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    steps = [("user", "The invoice totals are off by one cent."),
             ("tool", "Edit", {"file_path": str(repo / "src" / "a.py")}, "ok"),
             ("assistant", "The rounding bug was caused by summing floats; fixed by summing Decimal "
                           "values in src/a.py.")]
    path = root / "t.jsonl"
    path.write_text(render_claude(steps, "sess-a", cwd=str(repo)))
    am("capture", "--sync", input=hook_json("sess-a", path, cwd=str(repo)), cwd=repo, env=env, check=0)
    return repo


def copied(template, tmp_path, monkeypatch):
    """A copy of a repository made once (scope="session") for this test to change."""
    monkeypatch.delenv("AGENTMEM_DIR", raising=False)
    shutil.copytree(template, tmp_path / "repo", symlinks=True)
    return tmp_path / "repo"


def made_once(tmp_path_factory, template, name):
    """(a copy of `template` to build on once, the environment to build it in)."""
    root = tmp_path_factory.mktemp(name)
    shutil.copytree(template, root / "repo", symlinks=True)
    return root / "repo", dict(store_env(root), AGENTMEM_DIR=None)


@pytest.fixture
def repo(captured_once, tmp_path, monkeypatch):
    return copied(captured_once, tmp_path, monkeypatch)


def recall(repo, query):
    hits = json.loads(am("recall", query, "--json", cwd=repo, check=0).stdout)
    [bug] = [h for h in hits if h["type"] == "bug"]
    return bug


def test_a_memory_goes_stale_when_its_file_changes_or_moves_and_confirm_makes_it_fresh(repo, tmp_path, monkeypatch):
    bug = recall(repo, "rounding invoice totals")
    assert bug["stale"] is False and bug["files"] == ["src/a.py"] and bug["commit"] and bug["session"] == "sess-a"
    shown = am("show", bug["id"], cwd=repo, check=0).stdout
    assert "sess-a" in shown and "commit" in shown and "src/a.py" in shown
    assert am("check", cwd=repo).returncode == 0

    (repo / "src" / "a.py").write_text("from decimal import Decimal\n\ndef total(xs):\n    return sum(map(Decimal, xs))\n")
    bug = recall(repo, "rounding invoice totals")
    assert bug["stale"] is True and bug["stale_files"] == ["src/a.py"]
    assert "STALE: src/a.py" in am("recall", "rounding invoice totals", cwd=repo).stdout
    p = am("check", "--json", cwd=repo)
    assert p.returncode == 1 and [f["kind"] for f in json.loads(p.stdout)] == ["stale"]
    assert "src/a.py changed" in json.loads(p.stdout)[0]["detail"]

    am("confirm", bug["id"], cwd=repo, check=0)
    bug2 = recall(repo, "rounding invoice totals")
    assert bug2["stale"] is False and bug2["confidence"] > bug["confidence"] and bug2["reviewed"]
    assert am("check", cwd=repo).returncode == 0

    git(repo, "mv", "src/a.py", "src/b.py")
    assert recall(repo, "rounding invoice totals")["stale"] is True
    assert "src/a.py moved or deleted" in am("check", cwd=repo).stdout
    assert "stale" in am("inject", "--format", "text", "--query", "rounding invoice", cwd=repo).stdout


def test_the_staleness_check_reads_a_file_again_only_when_it_changed(repo, tmp_path, monkeypatch):
    recall(repo, "rounding invoice totals")
    cache = repo / ".agentmem" / "local" / "file-hashes-2.json"
    known = json.loads(cache.read_text())
    [(path, (size, mtime, digest, raw))] = known.items()
    assert os.path.samefile(path, repo / "src" / "a.py") and size == (repo / "src" / "a.py").stat().st_size
    known[path][2:] = ["not-the-hash", "nor-this"]            # same size and mtime: not read again
    cache.write_text(json.dumps(known))
    assert recall(repo, "rounding invoice totals")["stale"] is True
    os.utime(repo / "src" / "a.py", ns=(mtime + 10**9, mtime + 10**9))   # touched: read, unchanged
    assert recall(repo, "rounding invoice totals")["stale"] is False


def capture(repo, tmp_path, session, steps, env=None):
    path = tmp_path / (session + ".jsonl")
    path.write_text(render_claude(steps, session, cwd=str(repo)).replace('"gitBranch": "main", ', ""))
    am("capture", "--sync", input=hook_json(session, path, cwd=str(repo)), cwd=repo, env=env, check=0)


def test_a_later_decision_replaces_the_earlier_one_on_the_same_subject(repo, tmp_path, monkeypatch):
    capture(repo, tmp_path, "sess-x", [
        ("user", "Let's go with Redis Streams for the webhook delivery queue, Kafka is overkill for our volume."),
        ("assistant", "Understood: Redis Streams for the webhook delivery queue.")])
    capture(repo, tmp_path, "sess-y", [
        ("user", "We decided to move the webhook delivery queue from Redis Streams to NATS JetStream, "
                 "because Redis Streams lost messages on failover."),
        ("assistant", "Noted: NATS JetStream for the webhook delivery queue from now on.")])
    told = am("inject", "--format", "text", cwd=repo).stdout
    assert "NATS JetStream" in told and "Kafka is overkill" not in told
    hits = json.loads(am("recall", "Redis Streams webhook queue", "--json", cwd=repo).stdout)
    old = next(h for h in hits if "Kafka is overkill" in h["text"] and h["type"] == "decision")
    new = next(h for h in hits if "NATS JetStream" in h["text"] and h["type"] == "decision")
    assert old["superseded_by"] == new["id"] and new["supersedes"] == old["id"]
    assert "SUPERSEDED by %s" % new["id"] in am("recall", "Redis Streams webhook queue", cwd=repo).stdout


def test_the_person_turning_away_from_a_decision_later_replaces_it_in_their_own_words(repo, tmp_path, monkeypatch):

    def session_on(day, name, steps):  # each a day later than the one before
        path = tmp_path / (name + ".jsonl")
        text = render_claude(steps, name, cwd=str(repo)).replace("2026-11-20T", "2026-11-%dT" % day)
        path.write_text(text.replace('"gitBranch": "main", ', ""))
        am("capture", "--sync", input=hook_json(name, path, cwd=str(repo)), cwd=repo, check=0)

    session_on(21, "sess-x", [("user", "Ok, go with RQ on Redis for the invoice jobs."),
                              ("assistant", "The invoice job now runs on RQ.")])
    session_on(22, "sess-y", [("user", "Why do the invoice jobs use RQ on Redis instead of Postgres?"),
                              ("assistant", "RQ needs Redis; that was the choice for the invoice jobs.")])
    assert "Go with RQ on Redis" in am("inject", "--format", "text", cwd=repo).stdout  # a question
    session_on(23, "sess-z", [
        ("user", "Redis keeps getting evicted. Drop RQ and Redis, the invoice jobs go to Postgres "
                 "with SKIP LOCKED instead."),
        ("assistant", "Moved the invoice jobs to Postgres with SKIP LOCKED.")])
    told = am("inject", "--format", "text", cwd=repo).stdout
    assert "Go with RQ on Redis" not in told and "SKIP LOCKED" in told  # its digest says it
    [old] = [h for h in json.loads(am("list", "--json", cwd=repo).stdout) if h["type"] == "decision"]
    assert "Drop RQ and Redis" in am("show", old["superseded_by"], cwd=repo).stdout


def cache_session(repo, folder, day, name, said, env=None):
    """A session on 2026-11-DAY where the person says `said` of the session cache, and it is done."""
    path = folder / (name + ".jsonl")
    steps = [("user", said), ("assistant", "Done: the session cache is set up that way in cache/store.py.")]
    path.write_text(render_claude(steps, name, cwd=str(repo)).replace("2026-11-20T", "2026-11-%dT" % day))
    am("capture", "--sync", input=hook_json(name, path, cwd=str(repo)), cwd=repo, env=env, check=0)


@pytest.fixture(scope="session")
def redis_chosen_once(captured_once, tmp_path_factory):
    """`captured_once`, then a session choosing Redis for the session cache (on the 21st)."""
    repo, env = made_once(tmp_path_factory, captured_once, "redis")
    cache_session(repo, repo.parent, 21, "sess-a", "Let's use Redis for the session cache.", env)
    return repo


@pytest.mark.parametrize("later,replaced", [
    ("Use Memcached instead of Redis for the session cache.", True),
    ("On second thought, use an in-memory LRU for the session cache.", True),
    ("Forget Redis, the session cache should be an in-memory LRU.", True),
    ("Why not Memcached instead of Redis for the session cache?", False),     # a question
    ("Also give the session cache two replicas instead of one.", False),      # not what it chose
    ("Never mind, keep it.", False),                                           # names nothing
    ("We moved the session cache off Redis to an in-memory LRU last week.", True),
])
def test_the_person_changing_their_mind_in_a_later_session_replaces_their_decision(redis_chosen_once, tmp_path, monkeypatch, later, replaced):
    repo = copied(redis_chosen_once, tmp_path, monkeypatch)
    cache_session(repo, tmp_path, 22, "sess-b", later)
    told = am("inject", "--format", "text", cwd=repo).stdout
    assert ("Let's use Redis for the session cache" not in told) == replaced, told
    [old] = [h for h in json.loads(am("list", "--json", cwd=repo).stdout) if h["type"] == "decision"]
    assert bool(old.get("superseded_by")) == replaced


def test_two_decisions_on_different_subjects_both_stand(repo, tmp_path, monkeypatch):
    am("remember", "We use Postgres 16 for the orders service", "--type", "decision", cwd=repo, check=0)
    am("remember", "Frontend builds use Vite instead of webpack", "--type", "decision", cwd=repo, check=0)
    hits = json.loads(am("list", "--json", cwd=repo).stdout)
    assert not [h for h in hits if h.get("superseded_by")]


CORRECTIONS = ["No, don't use print() for debugging output, use the structured logger.",
               "Stop adding print() calls for debugging; the structured logger is what we use.",
               "Again: no print() for debugging, go through the structured logger."]


@pytest.fixture(scope="session")
def corrected_once(captured_once, tmp_path_factory):
    """`captured_once`, then three sessions where the person corrects one habit."""
    repo, env = made_once(tmp_path_factory, captured_once, "corrected")
    for i, text in enumerate(CORRECTIONS):
        capture(repo, repo.parent, "sess-c%d" % i, [
            ("user", "Add a debug line when the retry loop gives up."),
            ("assistant", "Added print('giving up') in retry.py."), ("user", text),
            ("assistant", "Understood, switched to logger.debug.")], env)
    return repo


def test_three_corrections_of_one_habit_propose_a_rule_that_leads_inject_once_promoted(corrected_once, tmp_path, monkeypatch):
    repo = copied(corrected_once, tmp_path, monkeypatch)
    rules = json.loads(am("rules", "--json", cwd=repo, check=0).stdout)
    assert rules["active"] == [] and len(rules["proposed"]) == 1
    [proposal] = rules["proposed"]
    assert "structured logger" in proposal["text"] and proposal["corrections"] == 3
    listed = am("rules", cwd=repo).stdout                                      # what a person reads
    assert "active rules (lead every inject): 0" in listed and "agentmem rules promote ID" in listed
    assert "%s  " % proposal["id"] in listed and "(corrected 3 times)" in listed
    assert "## Rules" not in am("inject", "--format", "text", cwd=repo).stdout
    am("rules", "promote", proposal["id"], cwd=repo, check=0)
    listed = am("rules", cwd=repo).stdout
    assert "active rules (lead every inject): 1\n  %s  " % proposal["id"] in listed
    assert "proposed: 0" in listed
    told = am("inject", "--format", "text", cwd=repo).stdout
    notes = told.split("agentmem-notes\n", 1)[1]
    assert notes.startswith("## Rules\n- [%s · rule" % proposal["id"])             # it leads
    assert json.loads(am("rules", "--json", cwd=repo).stdout)["proposed"] == []


def test_a_dropped_proposal_is_not_proposed_again_and_auto_rules_promotes(corrected_once, tmp_path, monkeypatch):
    repo = copied(corrected_once, tmp_path, monkeypatch)
    [proposal] = json.loads(am("rules", "--json", cwd=repo).stdout)["proposed"]
    am("rules", "drop", proposal["id"], cwd=repo, check=0)
    assert json.loads(am("rules", "--json", cwd=repo).stdout)["proposed"] == []
    am("remember", "Never log request bodies: they hold card numbers", "--type", "convention", cwd=repo, check=0)
    assert json.loads(am("rules", "--json", cwd=repo).stdout)["proposed"] == []     # by hand, not a person's turn
    capture(repo, tmp_path, "sess-n", [("user", "Never push to main directly; always open a pull request.")])
    [said] = json.loads(am("rules", "--json", cwd=repo).stdout)["proposed"]
    assert "pull request" in said["text"]
    told = am("inject", "--format", "text", cwd=repo, env={"AGENTMEM_AUTO_RULES": "1"}).stdout
    assert "## Rules" in told and "pull request" in told.split("## Rules")[1].split("##")[0]


def test_scan_reads_decision_records_and_agent_files_and_follows_their_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTMEM_DIR")
    repo = tmp_path / "repo"
    (repo / "docs" / "adr").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "docs" / "adr" / "0001-orders-db.md").write_text(
        "# 1. Use PostgreSQL for orders\n\n## Status\n\nAccepted\n\n## Context\n\nWe need JSONB.\n\n"
        "## Decision\n\nWe will use PostgreSQL 16 for the orders service.\n")
    (repo / "docs" / "adr" / "0002-events.md").write_text(
        "# 2. Use MongoDB for events\n\n## Status\n\nSuperseded by ADR 3\n\n## Decision\n\nStore events in MongoDB.\n")
    (repo / "AGENTS.md").write_text("# Agents\n\n## Testing\n\nRun make test before every commit, with docker up.\n\n"
                                    "## Style\n\nHandlers stay under 40 lines; logic lives in services/.\n")
    counts = json.loads(am("scan", "--json", cwd=repo, check=0).stdout)
    assert counts == {"added": 4, "updated": 0, "removed": 0, "sources": 3}
    hit = json.loads(am("recall", "which database do orders use", "--json", cwd=repo).stdout)[0]
    assert "PostgreSQL 16" in hit["text"] and hit["type"] == "decision" and hit["confidence"] >= 0.9
    assert hit["source"] == "scan:docs/adr/0001-orders-db.md" and hit["files"] == ["docs/adr/0001-orders-db.md"]
    [events] = [h for h in json.loads(am("recall", "MongoDB events", "--json", cwd=repo).stdout)
                if "MongoDB" in h["text"]]
    assert events["superseded_by"]                                   # the record says so
    assert json.loads(am("scan", "--json", cwd=repo).stdout)["added"] == 0      # nothing changed
    (repo / "AGENTS.md").write_text("# Agents\n\n## Style\n\nHandlers stay under 20 lines; logic lives in services/.\n")
    assert json.loads(am("scan", "--json", cwd=repo).stdout) == {"added": 0, "updated": 1, "removed": 1, "sources": 3}
    style = json.loads(am("recall", "handler length style", "--json", cwd=repo).stdout)[0]
    assert "20 lines" in style["text"] and style["stale"] is False
    assert "make test before every commit" not in am("list", cwd=repo).stdout


def test_related_memories_come_along_one_hop(store):
    decision = am_id("remember", "We pin urllib3 below 2.0 in requirements.txt", "--type", "decision")
    bug = am_id("remember", "TLS handshakes failed on the old OpenSSL of the build image", "--type", "bug")
    other = am_id("remember", "Release notes are written in CHANGELOG.md", "--type", "convention")
    p = am("relate", decision, bug, "--as", "caused-by")
    assert p.returncode == 0 and "caused-by" in p.stdout
    hits = json.loads(am("recall", "why pin urllib3", "--json").stdout)
    assert [h["id"] for h in hits][:2] == [decision, bug] and hits[1]["linked"] == "caused-by of %s" % decision
    assert am("relate", decision, other, "--as", "blames").returncode == 2
    am("relate", other, decision, "--as", "supersedes", check=0)
    told = am("inject", "--format", "text").stdout
    assert "urllib3" not in told and "CHANGELOG" in told
    assert "SUPERSEDED by %s" % other in am("recall", "urllib3 pin").stdout


def am_id(*args):
    return json.loads(am(*(list(args) + ["--json"]), check=0).stdout)["id"]


def test_gc_archives_what_nobody_used_and_purges_only_when_asked(store, tmp_path):
    old = "2026-01-05T10:00:00Z"
    lines = [{"text": "The staging cluster runs on three m5.large nodes", "type": "fact", "created": old,
              "source": "claude-code:s1"},
             {"text": "Feature flags live in LaunchDarkly, not in env vars", "type": "decision", "created": old,
              "source": "claude-code:s1"},
             {"text": "Never deploy on Fridays", "type": "rule", "created": old, "source": "claude-code:s1"},
             {"text": "Ask Dana before touching billing", "type": "convention", "created": old, "source": "cli"}]
    (tmp_path / "old.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    am("import", tmp_path / "old.jsonl", check=0)
    calls = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                  "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                  "name": "recall", "arguments": {"query": "feature flags LaunchDarkly"}}}]
    assert json.loads(am("gc", "--dry-run", "--json", check=0).stdout)["archived"] == []  # new here
    for f in (store / "imports").glob("*.md"):       # as if imported long ago
        f.write_text(re.sub(r'"stored": "[^"]+"', '"stored": "2026-01-05T10:00:00Z"', f.read_text()))
    p = am("mcp", input="\n".join(json.dumps(c) for c in calls) + "\n")       # an agent used it today
    assert "LaunchDarkly" in p.stdout
    plan = json.loads(am("gc", "--dry-run", "--json", check=0).stdout)
    [staging] = plan["archived"]
    assert plan["purged"] == [] and "archived" not in am("show", staging, "--json").stdout   # a dry run
    am("gc", check=0)
    assert staging not in am("recall", "staging cluster nodes", "--json").stdout
    assert "m5.large" not in am("inject", "--format", "text").stdout
    assert staging in am("recall", "staging cluster nodes", "--archived", "--json").stdout
    files = list((store / "imports").glob("*.md"))
    text = "".join(f.read_text() for f in files)
    assert "m5.large" in text and '"archived": "' in text                        # still in its file
    assert json.loads(am("gc", "--purge", "--json").stdout)["purged"] == []      # archived today
    for f in files:
        f.write_text(f.read_text().replace('"archived": "%s"' % text.split('"archived": "')[1][:10],
                                           '"archived": "2025-01-01"'))
    assert json.loads(am("gc", "--purge", "--json").stdout)["purged"] == [staging]
    left = "".join(f.read_text() for f in files)
    assert "m5.large" not in left and "Never deploy on Fridays" in left and "Ask Dana" in left


def test_review_walks_through_what_needs_a_person(repo, tmp_path, monkeypatch):
    am("remember", "Maybe the cache TTL is 60 seconds", "--type", "fact", "--confidence", "0.4", cwd=repo, check=0)
    am("remember", "Handlers stay under 40 lines", "--type", "convention", cwd=repo, check=0)
    (repo / "src" / "a.py").write_text("changed\n")
    queue = json.loads(am("review", "--json", cwd=repo, check=0).stdout)
    reasons = [q["reason"] for q in queue]
    assert reasons[:2] == ["stale", "unsure"] and "Handlers stay" not in json.dumps(queue)
    assert all(r == "unreviewed" for r in reasons[2:])
    p = am("review", cwd=repo, input="c\nf\nq\n")
    assert p.returncode == 0 and "1 confirmed, 1 forgotten, 0 skipped" in p.stdout
    after = json.loads(am("review", "--json", cwd=repo).stdout)
    assert "stale" not in [q["reason"] for q in after] and "cache TTL" not in json.dumps(after)


def test_a_memory_from_a_branch_not_merged_here_is_marked_until_it_is_merged(repo, tmp_path, monkeypatch):
    git(repo, "checkout", "-q", "-b", "feature/queue")
    (repo / "src" / "queue.py").write_text("QUEUE = 'nats'\n")
    git(repo, "add", "src")
    git(repo, "commit", "-qm", "queue")
    capture(repo, tmp_path, "sess-branch", [
        ("user", "We decided to use NATS JetStream for the job queue because Redis lost jobs on failover.")])

    def hit():
        return next(h for h in json.loads(am("recall", "job queue NATS", "--json", cwd=repo).stdout)
                    if "NATS" in h["text"])
    assert hit()["branch"] == "feature/queue" and "unmerged" not in hit()       # on its own branch
    git(repo, "checkout", "-q", "-")
    assert hit()["unmerged"] == "feature/queue"
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    (repo / ".agentmem" / "local" / "ancestry.json").write_text(json.dumps({head: [1, 2]}))
    assert hit()["unmerged"] == "feature/queue"                     # a bad entry is learned anew
    assert "from branch feature/queue, not merged here" in am("recall", "job queue NATS", cwd=repo).stdout
    assert "not merged here" in am("inject", "--format", "text", "--query", "job queue", cwd=repo).stdout
    git(repo, "merge", "-q", "--no-edit", "feature/queue")
    assert "unmerged" not in hit()


def test_a_memory_saved_by_hand_or_by_the_agent_goes_stale_too(repo, tmp_path, monkeypatch):
    am("remember", "Totals are summed as Decimal in src/a.py", "--files", "src/a.py", "--type",
       "convention", cwd=repo, check=0)
    mcp = subprocess.run([sys.executable, AGENTMEM, "mcp"], cwd=str(repo), text=True, capture_output=True,
                         input="\n".join(json.dumps(m) for m in [
                             {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                                 "name": "remember", "arguments": {
                                     "text": "Rounding happens once per invoice in src/a.py",
                                     "type": "decision", "files": ["src/a.py"]}}}]) + "\n")
    assert '"status": "added"' in mcp.stdout.replace('\\"', '"')
    saved = [m for m in (json.loads(x) for x in am("export", cwd=repo, check=0).stdout.splitlines())
             if m["source"] in ("cli", "mcp")]
    assert len(saved) == 2 and all("src/a.py" in m["hashes"] and m["commit"] for m in saved)
    (repo / "src" / "a.py").write_text("def total(xs):\n    return round(sum(xs), 2)\n")
    hits = json.loads(am("recall", "Decimal rounding invoice src/a.py", "--json", "--limit", "10",
                         cwd=repo, check=0).stdout)
    assert all(h["stale"] for h in hits if h["source"] in ("cli", "mcp"))
    p = am("check", cwd=repo)
    assert p.returncode == 1 and p.stdout.count("src/a.py changed") >= 2


def test_gc_counts_from_when_a_session_entered_this_store_not_from_when_it_ran(tmp_path, store):
    steps = [("user", "We decided to keep the billing cron on a single leader node.")]
    path = tmp_path / "old.jsonl"
    path.write_text(render_claude(steps, "sess-old").replace("2026-", "2024-"))   # ran two years ago
    am("capture", "--transcript", path, check=0)
    assert json.loads(am("gc", "--dry-run", "--json", check=0).stdout)["archived"] == []
