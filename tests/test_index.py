"""Index stage: derived, incremental, rebuildable, and the same whichever backend builds it."""
import json
import os

import pytest

import agentmem
from conftest import am, am_json

TOPICS = ["docker", "postgres", "redis", "kafka", "nginx", "terraform", "pytest", "webpack", "celery", "grpc"]
VERBS = ["configure", "migrate", "debug", "deploy", "cache", "monitor", "retry", "shard", "index", "secure"]


def corpus(n=300):
    out = []
    for i in range(n):
        t, v = TOPICS[i % 10], VERBS[(i * 7) % 10]
        out.append(json.dumps({"text": "How we %s %s in service %d: step %d uses the %s client and %s flags"
                                       % (v, t, i % 17, i, TOPICS[(i * 3) % 10], VERBS[(i * 5) % 10]),
                               "type": ["fact", "decision", "lesson"][i % 3], "tags": [t],
                               "session": "s%d" % (i % 12), "source": "c%d" % i}))
    return out


OTHER_SCRIPTS = ["Деплой через helm, откат через helm rollback", "डेटाबेस के लिए PostgreSQL का उपयोग करें",
                 "我们决定使用PostgreSQL作为主数据库", "データベースはPostgreSQLを使う", "שָׁלוֹם postgres"]


def test_both_backends_return_the_same_results(store, monkeypatch):
    if not agentmem._fts5_available():
        pytest.skip("this Python's SQLite has no FTS5")
    agentmem.open_store().import_jsonl(corpus() + [json.dumps({"text": t}) for t in OTHER_SCRIPTS])
    queries = ["docker deploy", "migrate postgres service 3", "redis caching retry", "kafka",
               "secure nginx flags", "terafrom indx", "grpc client step 12", "monitor celery",
               "откат helm", "डेटाबेस", "数据库", "データベース", "שָׁלוֹם"]
    results = {}
    for backend in ("fts5", "python"):
        monkeypatch.setenv("AGENTMEM_BACKEND", backend)
        s = agentmem.open_store()
        results[backend] = [[(h.memory.id, round(h.score, 4)) for h in s.recall(q, limit=5)] for q in queries]
        assert os.path.exists(os.path.join(str(store), "local", "index-%s-v%d.sqlite3" % (backend, agentmem._INDEX_VERSION)))
        s.close()
    assert results["fts5"] == results["python"]
    assert all(results["fts5"])


def test_a_type_filter_finds_the_few_memories_that_many_better_ones_of_another_type_outrank(store, monkeypatch):
    """FTS5 ranks first and filters after; when more than its pool of the best are of a type
    not asked for, the few asked for are still found, as the pure-Python backend finds them."""
    if not agentmem._fts5_available():
        pytest.skip("this Python's SQLite has no FTS5")
    many = [json.dumps({"text": "Zeppelin zeppelin zeppelin hangar %d" % i, "type": "fact"})
            for i in range(3 * agentmem._FTS5_POOL)]
    few = [json.dumps({"text": "We decided the zeppelin %s stays in the long hangar of the north field, "
                               "next to the old mooring mast" % w, "type": "decision"})
           for w in ("envelope", "gondola", "rudder")]
    agentmem.open_store().import_jsonl(many + few)
    found = {}
    for backend in ("fts5", "python"):
        monkeypatch.setenv("AGENTMEM_BACKEND", backend)
        s = agentmem.open_store()
        assert [h.memory.type for h in s.recall("zeppelin", limit=5)] == ["fact"] * 5
        found[backend] = sorted(h.memory.text.split()[4] for h in s.recall("zeppelin", types=("decision",)))
        s.close()
    assert found["fts5"] == found["python"] == ["envelope", "gondola", "rudder"]


def test_only_changed_files_are_reindexed(store):
    s = agentmem.open_store()
    s.import_jsonl(corpus(50), name="a.jsonl")
    s.remember("A note in another file about webpack chunks")
    idx = s.index()
    assert idx.refresh() is False                           # nothing changed: no work
    files = sorted(store.rglob("*.md"))
    target = files[0]
    target.write_text(target.read_text() + "\n## fact\nA hand-written note about flamegraphs.\n")
    calls = []
    original = agentmem._parse_memories
    agentmem._parse_memories = lambda text, path="": calls.append(path) or original(text, path)
    try:
        assert idx.refresh() is True
    finally:
        agentmem._parse_memories = original
    assert calls == [str(target.relative_to(store))]
    assert [h.memory.text for h in s.recall("flamegraphs")] == ["A hand-written note about flamegraphs."]


def test_a_deleted_file_leaves_the_index(store):
    s = agentmem.open_store()
    s.remember("Temporary knowledge about zeppelins")
    for f in store.rglob("*.md"):
        f.unlink()
    assert s.recall("zeppelins") == [] and s.memories() == []


def test_rebuild_from_scratch_gives_the_same_answers(store):
    agentmem.open_store().import_jsonl(corpus(120))
    before = [h["id"] for h in am_json("recall", "postgres migrate", "--json")]
    p = am("reindex", check=0)
    assert "re-indexed 120 memories" in p.stdout
    assert [h["id"] for h in am_json("recall", "postgres migrate", "--json")] == before


def test_index_of_another_version_is_rebuilt(store):
    s = agentmem.open_store()
    s.remember("Versioned indexes are rebuilt automatically")
    s.close()
    import sqlite3
    path = os.path.join(str(store), "local", "index-%s-v%d.sqlite3" % (agentmem._choose_backend(),
                                                                   agentmem._INDEX_VERSION))
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=1")
    db.execute("DELETE FROM memories")             # what an index of another version might hold
    db.commit()
    db.close()
    assert am_json("recall", "rebuilt automatically", "--json")[0]["text"].startswith("Versioned")
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == agentmem._INDEX_VERSION     # rebuilt
    assert db.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 1
    db.close()


def test_sessions_are_indexed_as_a_whole(store):
    s = agentmem.open_store()
    s.import_jsonl(corpus(60))
    assert s.stats()["sessions"] == 12


def test_a_command_that_wrote_the_index_leaves_no_log_for_the_next_process_to_replay(store):
    """SQLite's write-ahead log is folded into the index when a command's process ends: the
    next hook opens the file alone (replaying a log of megabytes made each one 5x slower)."""
    for i in range(3):
        am("remember", "The nightly export writes report %d to the archive bucket" % i, check=0)
    am("recall", "nightly export", check=0)
    index = os.path.join(str(store), "local", "index-%s-v%d.sqlite3"
                         % (agentmem._choose_backend(), agentmem._INDEX_VERSION))
    assert os.path.getsize(index) > 4096
    assert not os.path.exists(index + "-wal") or os.path.getsize(index + "-wal") == 0
