"""Store stage: the markdown files are the truth; writes are atomic, locked and merge duplicates."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

import agentmem
from conftest import AGENTMEM, am, am_json, no_traceback


def memory_files(store):
    return sorted(str(p.relative_to(store)) for p in store.rglob("*.md"))


def test_first_write_creates_the_store_with_ignored_derived_files(store):
    p = am("remember", "Use FTS5 for search", "--type", "decision", "--tags", "search",
           "--files", "agentmem.py", check=0)
    assert "saved decision" in p.stdout
    assert (store / ".gitignore").read_text().splitlines()[1:] == ["local/", ".*.tmp"]
    assert "merge=union" in (store / ".gitattributes").read_text()
    [rel] = memory_files(store)
    assert rel.startswith("memories/") and rel.endswith(".md")
    text = (store / rel).read_text()
    assert "## decision · " in text and "Use FTS5 for search" in text
    meta = json.loads(text.split("<!-- ", 2)[2].split(" -->")[0])
    assert meta["tags"] == ["search"] and meta["files"] == ["agentmem.py"] and meta["confidence"] == 0.8
    assert os.path.isdir(store / "local")        # the index lives in the ignored folder


def test_a_hand_edit_is_seen_by_the_next_recall(store):
    am("remember", "The deploy script lives in ops/deploy.sh", check=0)
    [rel] = memory_files(store)
    path = store / rel
    path.write_text(path.read_text().replace("ops/deploy.sh", "tools/release.py"))
    assert am_json("recall", "release", "--json")[0]["text"] == "The deploy script lives in tools/release.py"
    assert am_json("recall", "ops", "--json") == []


def test_metadata_survives_editing_the_text_around_it(store):
    out = am_json("remember", "Tabs, not spaces", "--type", "convention", "--tags", "style",
                  "--confidence", "0.95", "--json")
    [rel] = memory_files(store)
    path = store / rel
    text = path.read_text().replace("Tabs, not spaces", "Tabs, not spaces.\n\nGo files use gofmt anyway.")
    path.write_text(text + "\nA stray line a person typed at the end.\n")
    got = am_json("show", out["id"], "--json")
    assert got["type"] == "convention" and got["tags"] == ["style"] and got["confidence"] == 0.95
    assert got["text"].startswith("Tabs, not spaces.\n\nGo files use gofmt anyway.")


def test_memories_added_or_deleted_by_hand_are_picked_up(store):
    am("remember", "First memory about caching", check=0)
    [rel] = memory_files(store)
    path = store / rel
    path.write_text(path.read_text() + "\n## convention\nAlways run make lint before pushing.\n")
    [hit] = am_json("recall", "lint before pushing", "--json")
    assert hit["type"] == "convention" and hit["id"]
    assert am_json("show", hit["id"], "--json")["text"] == "Always run make lint before pushing."
    text = path.read_text()
    path.write_text(text[:text.index("## fact")] + text[text.index("## convention"):])
    assert am_json("recall", "caching", "--json") == []
    # a file added by hand anywhere in the store counts as well
    (store / "team").mkdir()
    (store / "team" / "notes.md").write_text("# Team notes\n\n## Deploy freeze\nNo deploys on Fridays.\n")
    [hit] = am_json("recall", "deploys fridays", "--json")
    assert hit["text"] == "Deploy freeze\nNo deploys on Fridays."


def test_near_duplicates_merge_and_keep_every_source(store):
    a = am_json("remember", "Controllers stay thin: at most 20 lines, parse, call the service, render.",
                "--type", "convention", "--source", "session-1", "--files", "a.go", "--json")
    b = am_json("remember", "Controllers stay thin: at most 20 lines; parse, call the service, render!",
                "--type", "convention", "--source", "session-2", "--files", "b.go", "--json")
    assert b["status"] == "merged" and b["id"] == a["id"]
    assert b["sources"] == ["session-1", "session-2"] and b["seen"] == 2
    assert b["files"] == ["a.go", "b.go"]
    again = am_json("remember", "Controllers stay thin: at most 20 lines, parse, call the service, render.",
                    "--type", "convention", "--source", "session-1", "--json")
    assert again["status"] == "unchanged"
    other = am_json("remember", "Controllers stay thin: at most 20 lines, parse, call the service, render.",
                    "--type", "bug", "--json")                 # another type is another memory
    assert other["status"] == "added"
    [line] = [json.loads(x) for x in am("export").stdout.splitlines() if '"convention"' in x]
    assert line["sources"] == ["session-1", "session-2"]


LONG = ("for dates in the reports module of the admin app, because the bundle size budget of the "
        "dashboard is tight and every page of it loads the reports module first")


@pytest.mark.parametrize("first, second", [
    ("We use moment.js " + LONG, "We never use moment.js " + LONG),
    ("Используем moment.js для дат в модуле отчётов админки",
     "Не используем moment.js для дат в модуле отчётов админки"),
    ("Webhook deliveries retry 3 times " + LONG, "Webhook deliveries retry 5 times " + LONG),
], ids=["never", "не", "number"])
def test_a_negated_or_renumbered_claim_is_not_merged_into_the_old_one(store, first, second):
    am_json("remember", first, "--json")
    b = am_json("remember", second, "--json")
    assert b["status"] == "added" and b["text"] == second
    assert sorted(m["text"] for m in am_json("list", "--json")) == sorted([first, second])


def test_import_reports_bad_lines_and_keeps_the_good_ones(store, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([
        json.dumps({"text": "Postgres 16 is the production database", "type": "fact", "tags": ["db"]}),
        "{not json",
        json.dumps({"type": "fact"}),
        json.dumps({"text": "Use uv for Python envs", "confidence": 7}),
        json.dumps({"text": "Retries use exponential backoff", "type": "decision", "source": "x",
                    "session": "s1", "created": "2026-01-02T03:04:05Z", "files": "a.py,b.py"}),
    ]) + "\n")
    p = am("import", str(src))
    assert p.returncode == 1
    assert "in.jsonl:2:" in p.stderr and "in.jsonl:3:" in p.stderr and "in.jsonl:4:" in p.stderr
    assert "Traceback" not in p.stderr
    assert "imported 2 new memories" in p.stdout
    p2 = am("import", str(src))
    assert "imported 0 new memories" in p2.stdout and "2 already known" in p2.stdout
    mems = [json.loads(x) for x in am("export").stdout.splitlines()]
    assert len(mems) == 2
    d = [m for m in mems if m["type"] == "decision"][0]
    assert d["created"] == "2026-01-02T03:04:05Z" and d["files"] == ["a.py", "b.py"] and d["session"] == "s1"


def test_export_then_import_round_trips(store, tmp_path):
    am("remember", "Cache keys include the tenant id", "--type", "decision", "--tags", "cache,tenancy",
       "--source", "design review: 2026-11 <b>", check=0)
    am("remember", "TODO: drop the legacy v1 endpoints", "--type", "todo", check=0)
    exported = am("export").stdout
    other = tmp_path / "other"
    p = am("--store", str(other), "import", "-", input=exported)
    assert p.returncode == 0, p.stderr
    again = am("--store", str(other), "export").stdout
    assert sorted(exported.splitlines()) == sorted(again.splitlines())


def test_large_import_is_one_pass_into_few_files(store, tmp_path):
    src = tmp_path / "many.jsonl"
    src.write_text("".join(json.dumps({"text": "memory number %d about topic %d and subject %d" % (i, i * 7, i * 13)})
                           + "\n" for i in range(2500)))
    p = am("import", str(src), check=0)
    assert "imported 2500 new memories" in p.stdout
    files = memory_files(store)
    token = files[0].split("-")[1]                                   # an id of this import's own
    assert files == ["imports/many-%s-%03d.md" % (token, n) for n in (1, 2, 3)] and len(token) == 8


def test_forget_removes_one_block_and_leaves_the_rest(store):
    keep = am_json("remember", "Keep me: the staging URL is staging.example.test", "--json")
    gone = am_json("remember", "Forget me: an outdated note about Jenkins", "--json")
    p = am("forget", gone["id"], check=0)
    assert "forgot " + gone["id"] in p.stdout
    assert [m["id"] for m in am_json("list", "--json")] == [keep["id"]]
    assert am_json("recall", "jenkins", "--json") == []


@pytest.mark.parametrize("args", [
    ["forget", "nope1234"], ["show", "../../etc/passwd"], ["remember", "   "],
    ["remember", "x", "--confidence", "3"], ["remember", "x", "--type", "Not A Type"],
    ["import", "/does/not/exist.jsonl"],
])
def test_bad_input_is_one_line_and_changes_nothing(store, args):
    am("remember", "An existing memory that must survive", check=0)
    before = {p: (store / p).read_text() for p in memory_files(store)}
    p = am(*args)
    assert p.returncode == 1
    assert p.stderr.startswith("agentmem: error: ")
    no_traceback(p)
    assert {p: (store / p).read_text() for p in memory_files(store)} == before


def test_parallel_writers_lose_nothing(store):
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import agentmem
        s = agentmem.open_store()
        for i in range(15):
            s.remember("writer %%s wrote note %%d about subject %%s%%d" %% (sys.argv[1], i, sys.argv[1], i * 31))
    """ % os.path.dirname(AGENTMEM))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(w)]) for w in range(6)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    mems = am_json("list", "--json")
    assert len(mems) == 90
    assert len({m["id"] for m in mems}) == 90


def test_a_crash_leftover_does_not_break_reading(store):
    am("remember", "Survives crashes", check=0)
    [rel] = memory_files(store)
    folder = (store / rel).parent
    (folder / ".2026-11-29.md.123.abc.tmp").write_text("## fact · half\n<!-- {\"conf")   # a killed writer
    v = agentmem._INDEX_VERSION
    (store / "local" / ("index-fts5-v%d.sqlite3" % v)).write_bytes(b"this is not a database")  # corrupt
    (store / "local" / ("index-python-v%d.sqlite3" % v)).write_bytes(b"neither is this")
    assert [m["text"] for m in am_json("list", "--json")] == ["Survives crashes"]


def test_store_is_found_at_the_main_worktree_root(tmp_path):
    repo = tmp_path / "repo"
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    env = {"AGENTMEM_DIR": None, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README").write_text("x")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "init"], check=True, env=dict(os.environ, **{
        k: v for k, v in env.items() if v}))
    am("remember", "Shared by every worktree", cwd=sub, env=env, check=0)
    assert (repo / ".agentmem" / "memories").is_dir()
    wt = tmp_path / "wt"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(wt)], check=True)
    assert am_json("recall", "worktree", "--json", cwd=wt, env=env)[0]["text"] == "Shared by every worktree"
    assert not (wt / ".agentmem").exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    am("remember", "No repository here", cwd=plain, env=env, check=0)
    assert (plain / ".agentmem").is_dir()


def test_store_option_overrides_the_environment(store, tmp_path):
    other = tmp_path / "elsewhere"
    am("--store", str(other), "remember", "Kept elsewhere", check=0)
    am("recall", "kept", "--store", str(other), check=0)
    assert (other / "memories").is_dir() and not store.exists()


def test_library_api_matches_the_command_line(store):
    s = agentmem.open_store()
    m, status = s.remember("Redis is only a cache; never the source of truth", type="rule", tags=["redis"])
    assert status == "added" and m.type == "rule"
    [hit] = s.recall("source of truth redis")
    assert hit.memory.id == m.id and hit.score > 0
    assert s.get(m.id[:5]).text == m.text
    s.forget(m.id)
    assert s.memories() == []


def test_nothing_follows_a_symlink_out_of_the_store(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("## fact\nThe outside world's secret plan.\n")
    agentmem.open_store().remember("Inside the store", type="fact")
    (store / "memories" / "linked.md").symlink_to(outside / "secret.md")
    assert "secret plan" not in am("list").stdout                        # a linked file is not read
    assert am("recall", "secret plan", "--json").stdout.strip() in ("", "[]")
    (store / "sessions").symlink_to(outside, target_is_directory=True)
    p = am("import", "-", input=json.dumps({"text": "Routed to a session", "session": "s1"}) + "\n")
    assert p.returncode == 1 and "symlink" in p.stderr                # never written through
    assert sorted(x.name for x in outside.iterdir()) == ["secret.md"]
    (store / "sessions").unlink()
    shutil.rmtree(str(store / "local"))
    (store / "local").symlink_to(outside, target_is_directory=True)
    p = am("remember", "Index through a link")
    assert p.returncode == 1 and "symlink" in p.stderr
    assert sorted(x.name for x in outside.iterdir()) == ["secret.md"]   # no index, lock or queue there


def test_one_broken_file_or_line_never_hides_the_rest(store, tmp_path):
    agentmem.open_store().remember("A good memory about deploys", type="fact")
    deep = "[" * 100000 + "]" * 100000
    (store / "memories" / "bad.md").write_text("## fact · abcd1234\n<!-- {\"x\": %s} -->\nBad one.\n" % deep)
    assert "good memory about deploys" in am("list").stdout
    assert am("recall", "deploys", "--json").returncode == 0
    lines = ['{"text": %s}' % deep, '{"text": "Lone \\ud800 surrogate kept readable"}',
             json.dumps({"text": "The second good line"})]
    p = am("import", "-", input="\n".join(lines) + "\n")
    assert "stdin:1: nested too deeply" in p.stderr and "1 bad lines" in p.stdout
    assert "second good line" in am("list").stdout and "surrogate kept readable" in am("list").stdout
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(deep + "\n" + json.dumps({"type": "user", "sessionId": "s", "message": {
        "role": "user", "content": "We decided to keep the deploy script in tools/release.py."}}) + "\n")
    p = am("capture", "--transcript", transcript)
    assert p.returncode == 0 and "tools/release.py" in am("list").stdout


def test_importing_many_look_alikes_stays_near_linear(store, monkeypatch):
    calls = []
    real = agentmem._jaccard
    monkeypatch.setattr(agentmem, "_jaccard", lambda a, b: calls.append(1) or real(a, b))
    lines = [json.dumps({"text": "The nightly export for tenant %d writes the orders report at 02:00 UTC" % i})
             for i in range(600)]
    lines.append(lines[-1])                                          # a true duplicate is still found
    counts, errors = agentmem.open_store().import_jsonl(lines)
    assert counts["added"] == 600 and counts["unchanged"] + counts["merged"] == 1 and not errors
    assert len(calls) <= 601 * agentmem._NEAR_CANDIDATES * agentmem._SKETCH_SIZE    # not 600 * 600 / 2


def test_a_copy_is_found_among_any_number_of_look_alikes(store):
    lines = [json.dumps({"text": "The nightly export for tenant %d writes the orders report at 02:00 UTC" % i})
             for i in range(300)]
    s = agentmem.open_store()
    assert s.import_jsonl(lines + lines[:5])[0]["added"] == 300                  # copies in one file
    counts, _ = s.import_jsonl(lines)                                           # the same file again
    assert counts["added"] == 0 and counts["unchanged"] == 300
    assert len(list(s.memories())) == 300


def import_killed_then_resumed(path, store):
    """Seconds to import a file killed (-9) once it has begun writing, then run again; the
    second run's JSON reply."""
    started = time.time()
    proc = subprocess.Popen([sys.executable, AGENTMEM, "import", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, AGENTMEM_DIR=str(store)))
    imports = store / "imports"
    while proc.poll() is None and not (imports.is_dir() and any(imports.iterdir())):
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    p = am("import", path, "--json", env={"AGENTMEM_DIR": str(store)}, timeout=300)
    assert p.returncode == 0, p.stderr
    return time.time() - started, json.loads(p.stdout)


@pytest.mark.slow
def test_an_import_killed_part_way_then_run_again_stores_each_memory_once(store, tmp_path):
    n = 15000
    lines = [json.dumps({"text": "The cache of tenant %d expires after %d minutes because of the "
                                 "billing sync." % (i, 5 + i % 50)}) + "\n" for i in range(n)]
    path, third = tmp_path / "big.jsonl", tmp_path / "third.jsonl"
    path.write_text("".join(lines))
    third.write_text("".join(lines[: n // 3]))
    floor, _ = import_killed_then_resumed(third, tmp_path / "floor")  # the floor, in this run
    took, again = import_killed_then_resumed(path, store)
    # and again after it: other work on the machine slows both alike, not only the big one
    floor = max(floor, import_killed_then_resumed(third, tmp_path / "floor-after")[0])
    assert again["added"] + again["unchanged"] == n and again["merged"] == 0
    assert json.loads(am("stats", "--json").stdout)["memories"] == n
    # three times the memories: about 3x the floor when each is checked once; a check of
    # each memory against all the others would be 9x
    assert took < 5 * floor, (took, floor)


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev"] + list(args),
                          cwd=str(cwd), capture_output=True, text=True, check=True).stdout


def two_clones(tmp_path, monkeypatch, texts):
    """A shared repository whose store holds `texts`, cloned twice: (a, b, memory file name)."""
    monkeypatch.delenv("AGENTMEM_DIR")
    git(tmp_path, "init", "-q", "--bare", "origin.git")
    git(tmp_path, "clone", "-q", "origin.git", "a")
    s = agentmem.open_store(cwd=str(tmp_path / "a"))  # as `agentmem remember` run in clone a
    for text, mtype in texts:
        s.remember(text, mtype)
    s.close()
    git(tmp_path / "a", "add", "-A")
    git(tmp_path / "a", "commit", "-qm", "memories")
    git(tmp_path / "a", "push", "-q", "origin", "HEAD")
    git(tmp_path, "clone", "-q", "origin.git", "b")
    [name] = os.listdir(tmp_path / "a" / ".agentmem" / "memories")
    return tmp_path / "a", tmp_path / "b", os.path.join(".agentmem", "memories", name)


def edit(clone, rel, *pairs):
    path = clone / rel
    text = path.read_text()
    for old, new in pairs:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    git(clone, "commit", "-qam", "edit")


TEXTS = [("Deploys run from the release branch", "convention"), ("The API listens on port 8080", "fact"),
         ("Retries back off exponentially up to 30 seconds", "decision")]


def test_a_merge_that_joins_two_edits_of_one_memory_is_reported_with_both_kept(tmp_path, monkeypatch):
    a, b, rel = two_clones(tmp_path, monkeypatch, TEXTS)
    edit(a, rel, ("port 8080", "port 9090"))
    git(a, "push", "-q", "origin", "HEAD")
    edit(b, rel, ("port 8080", "port 7070"))
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")           # union merge: no conflict markers
    p = am("check", "--json", cwd=b)
    assert p.returncode == 1
    [finding] = json.loads(p.stdout)
    assert finding["kind"] == "conflict" and finding["path"].endswith(rel) and finding["line"] > 1
    assert "port 9090" in finding["memory"]["text"] and "port 7070" in finding["memory"]["text"]
    told = am("inject", "--format", "text", "--query", "port", cwd=b).stdout
    assert "Deploys run from the release branch" in told and "port 9090" not in told and "port 7070" not in told
    assert "TWO VERSIONS" in am("recall", "API port", cwd=b).stdout
    assert "1 conflict" in am("doctor", cwd=b).stdout


def test_a_merge_that_moves_one_memorys_text_into_its_neighbour_is_reported(tmp_path, monkeypatch):
    a, b, rel = two_clones(tmp_path, monkeypatch, TEXTS)
    text = (a / rel).read_text()
    block = text[text.index("## decision"):]
    edit(a, rel, ("port 8080", "port 9090"), (block, ""))            # A edits X and forgets Y
    git(a, "push", "-q", "origin", "HEAD")
    edit(b, rel, ("port 8080", "port 7070"), ("up to 30 seconds", "up to 60 seconds"))   # B edits both
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")
    p = am("check", "--json", cwd=b)
    assert p.returncode == 1
    assert [(f["kind"], f["memory"]["type"]) for f in json.loads(p.stdout)] == [("conflict", "decision")]


def test_a_block_a_merge_joined_from_two_memories_names_both_and_loses_neither(tmp_path, monkeypatch):
    # one clone forgets X; the other edits X and its neighbour Y; the merge keeps both texts
    a, b, rel = two_clones(tmp_path, monkeypatch, TEXTS)
    x, y = [m["id"] for m in json.loads(am("list", "--json", cwd=a).stdout)][1:]
    am("forget", x, cwd=a, check=0)
    git(a, "commit", "-qam", "forget")
    git(a, "push", "-q", "origin", "HEAD")
    edit(b, rel, ("port 8080", "port 9090"), ("up to 30 seconds", "up to 60 seconds"))
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")
    texts = [m["text"] for m in json.loads(am("list", "--json", cwd=b).stdout)]
    assert any("port 9090" in t for t in texts) and any("up to 60 seconds" in t for t in texts)
    # the block such a merge can leave: X's new text, then Y's old one (two lines of it)
    edit(b, rel, ("port 9090", "port 9090\nRetries back off exponentially\nup to 30 seconds"))
    p = am("check", "--json", cwd=b)
    [finding] = json.loads(p.stdout)
    assert p.returncode == 1 and finding["kind"] == "conflict" and finding["memory"]["id"] == x
    assert "joined %s and %s" % (x, y) in finding["detail"] and "up to 30 seconds" in finding["memory"]["text"]
    assert "up to 60 seconds" in am("show", y, cwd=b).stdout       # both texts stay, for a person
    assert x in am("review", "--json", cwd=b).stdout


def test_a_hand_edit_is_not_a_conflict_and_a_clean_store_checks_clean(tmp_path, monkeypatch):
    a, b, rel = two_clones(tmp_path, monkeypatch, TEXTS)
    edit(a, rel, ("port 8080", "port 9090\nbehind the nginx proxy"))
    p = am("check", cwd=a)
    assert p.returncode == 0 and "nothing that fails a check; nothing waits for review" in p.stdout, p.stdout


def test_check_finds_secrets_stored_before_an_upgrade_and_masks_them(store):
    key = "sk-ant-api03-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3" * 2
    (store / "memories").mkdir(parents=True)
    (store / "memories" / "old.md").write_text(
        "## fact · abcd2345\n<!-- {\"confidence\": 0.8, \"created\": \"2026-01-02T00:00:00Z\", "
        "\"files\": [\"%s\"]} -->\nThe staging key is %s\n\n## fact · efgh6789\nTabs, not spaces.\n" % (key, key))
    p = am("check")
    assert p.returncode == 1 and "secret abcd2345" in p.stdout and "text" in p.stdout and "files" in p.stdout
    assert am("check", "--redact").returncode == 0
    text = (store / "memories" / "old.md").read_text()
    assert key not in text and "Tabs, not spaces." in text and "[REDACTED" in text
    assert am("check").returncode == 0


def test_checking_hand_edited_files_for_merged_versions_stays_linear(monkeypatch):
    calls = []
    real = agentmem._jaccard
    monkeypatch.setattr(agentmem, "_jaccard", lambda a, b: calls.append(1) or real(a, b))
    text = "".join("## fact · x%07d\n<!-- {\"sum\": \"00000000\"} -->\nThe text %d\nsecond line %d\n\n" % (i, i, i)
                   for i in range(2000))
    assert len(agentmem._parse_memories(text, "hand.md")) == 2000
    assert len(calls) <= 2000 * (1 + 2 * 5)                     # the neighbours only, not 2000 * 2000


def test_a_file_the_index_cannot_take_hides_nothing_else_and_check_names_it(store, monkeypatch):
    (store / "memories").mkdir(parents=True)
    (store / "memories" / "a.md").write_text('## fact · abcd2345\n<!-- {"source": "\\ud800x", "tags": ["\\udfff"]} -->\n'
                                            "Escaped lone surrogates in metadata\n")
    (store / "memories" / "b.md").write_text("## fact\nThe queue is NATS JetStream\n")
    p = am("list", "--json")
    assert p.returncode == 0 and len(json.loads(p.stdout)) == 2, p.stderr
    s = agentmem.open_store()
    real = agentmem._Index._insert
    monkeypatch.setattr(agentmem._Index, "_insert", lambda self, mems: real(self, mems) if not any(
        m.path == "memories/b.md" for m in mems) else (_ for _ in ()).throw(ValueError("cannot index")))
    s.index().rebuild()
    assert [m.path for m in s.memories()] == ["memories/a.md"]
    assert [(k, m.path) for k, m, _d in s.check() if k == "unreadable"] == [("unreadable", "memories/b.md")]


def test_a_session_file_says_its_session_once_and_every_reader_still_sees_it(store, tmp_path):
    from sessions import STEPS_EN, hook_json, render_claude
    path = tmp_path / "s.jsonl"
    path.write_text(render_claude(STEPS_EN, "sess-light"))
    am("capture", "--sync", input=hook_json("sess-light", path), check=0)
    [rel] = [f for f in memory_files(store) if f.startswith("sessions/")]
    text = (store / rel).read_text()
    header, body = text.split("\n## ", 1)
    assert '"session": "sess-light"' in header and '"source": "claude-code:sess-light"' in header
    metas = [ln for ln in body.splitlines() if ln.startswith("<!-- {")]
    assert metas and not any('"session"' in ln or '"source"' in ln for ln in metas)   # said once
    typed = [json.loads(ln) for ln in am("export").stdout.splitlines()]
    assert typed and all(m["session"] == "sess-light" and m["source"] == "claude-code:sess-light"
                         for m in typed)                       # export, recall, show: as before
    convention = next(m for m in typed if m["type"] == "convention")
    am("confirm", convention["id"], check=0)                   # a rewrite keeps the file light
    text = (store / rel).read_text()
    assert text.count('"session": "sess-light"') == 1
    assert am_json("show", convention["id"], "--json")["session"] == "sess-light"


def test_metadata_that_names_the_text_or_type_does_not_hide_the_memory(store):
    (store / "memories").mkdir(parents=True)
    (store / "memories" / "hand.md").write_text(
        '# Session s9\n\n<!-- {"session": "s9", "source": "cli"} -->\n\n'
        '## fact · abcd1234\n<!-- {"text": "stale copy", "type": "bug", "line": 9, "session": "s8"} -->\n'
        'Staging is restored every Sunday.\n')
    [m] = [json.loads(x) for x in am("export").stdout.splitlines()]
    assert (m["type"], m["text"], m["session"], m["source"]) == \
        ("fact", "Staging is restored every Sunday.", "s8", "cli")   # its own metadata wins


@pytest.mark.parametrize("forgotten,edited", [("decision", "fact"), ("fact", "decision")])
def test_forget_on_one_side_and_edits_on_the_other_never_mix_neighbours_silently(
        tmp_path, monkeypatch, forgotten, edited):
    a, b, rel = two_clones(tmp_path, monkeypatch, TEXTS)
    ids = {m["type"]: m["id"] for m in (json.loads(x) for x in am("export", cwd=a).stdout.splitlines())}
    x = {"fact": ("port 8080", "port 9090"), "decision": ("up to 30 seconds", "up to 45 seconds")}
    am("forget", ids[forgotten], cwd=a, check=0)                    # A forgets one, edits the other
    edit(a, rel, x[edited])
    git(a, "push", "-q", "origin", "HEAD")
    edit(b, rel, (x["fact"][0], "port 7070"), (x["decision"][0], "up to 60 seconds"))   # B edits both
    am("confirm", ids["fact"], cwd=b, check=0)
    git(b, "commit", "-qam", "confirmed")
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")
    mems = [json.loads(x) for x in am("export", cwd=b).stdout.splitlines()]
    mixed = [m for m in mems if sum(s in m["text"] for s in ("port", "seconds")) > 1 or
             m["text"].count("port") > 1 or m["text"].count("seconds") > 1]
    p = am("check", "--json", cwd=b)
    flagged = {f["memory"]["id"] for f in json.loads(p.stdout or "[]")}
    assert p.returncode == 1 and all(m["id"] in flagged for m in mixed), (mixed, p.stdout)


def test_two_clones_importing_a_file_of_one_name_merge_with_nothing_to_resolve(tmp_path, monkeypatch):
    a, b, _rel = two_clones(tmp_path, monkeypatch, TEXTS)
    imported = {a: ["Staging deploys need a green nightly build", "The search index rebuilds every night"],
                b: ["Feature flags live in config/flags.yaml", "Release notes are written in the PR"]}
    for clone, texts in imported.items():
        notes = tmp_path / ("from-" + clone.name) / "notes.jsonl"          # one name in both clones
        notes.parent.mkdir()
        notes.write_text("".join(json.dumps({"text": t, "type": "fact"}) + "\n" for t in texts))
        am("import", notes, cwd=clone, check=0)
        git(clone, "add", "-A")
        git(clone, "commit", "-qm", "imported notes")
    git(a, "push", "-q", "origin", "HEAD")
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")           # union merge
    p = am("check", "--json", cwd=b)
    assert p.returncode == 0 and json.loads(p.stdout or "[]") == [], p.stdout
    said = [json.loads(x)["text"] for x in am("export", cwd=b).stdout.splitlines()]
    assert sorted(said) == sorted(imported[a] + imported[b] + [t for t, _type in TEXTS])


def test_a_merge_of_what_two_clones_counted_of_one_memory_is_one_memory(tmp_path, monkeypatch):
    a, b, rel = two_clones(tmp_path, monkeypatch, TEXTS)
    for clone, use, extra in ((a, {"told": 3, "used": 1, "contradicted": 0}, {}),
                              (b, {"told": 2, "used": 2, "contradicted": 0}, {"disputed": "no"})):
        s = agentmem.open_store(str(clone / ".agentmem"))
        m = [m for m in s.memories() if "port 8080" in m.text][0]
        m.extra.update(use=use, **extra)
        s.update_metadata(m)
        git(clone, "commit", "-qam", "counted")
    git(a, "push", "-q", "origin", "HEAD")
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")           # union merge: two metadata lines
    assert (b / rel).read_text().count('"use"') == 2
    assert am("check", cwd=b).returncode == 0
    [m] = [m for m in agentmem.open_store(str(b / ".agentmem")).memories() if "port 8080" in m.text]
    assert m.extra["use"] == {"told": 3, "used": 2, "contradicted": 0} and m.extra["disputed"] == "no"
    edit(a, rel, ("port 8080", "port 9090"))                        # the text too: two versions
    git(a, "push", "-q", "origin", "HEAD")
    edit(b, rel, ("port 8080", "port 7070"))
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")
    assert am("check", cwd=b).returncode == 1
