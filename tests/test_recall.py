"""Recall stage: ranking, typos, filters, hostile queries, JSON shape."""
import json

import pytest

import agentmem
from conftest import am, am_json, no_traceback, top


@pytest.fixture
def filled(store):
    s = agentmem.open_store()
    s.remember("Docker containers reach each other over the compose network by service name",
               type="lesson", tags=["docker", "networking"], files=["docker-compose.yml"])
    s.remember("Postgres 16 runs in production; migrations must be reversible", type="convention",
               tags=["db"], files=["migrations/0031_backfill.py"])
    s.remember("The orders admin page was slow: an N+1 query, fixed with select_related", type="bug",
               files=["shop/admin.py"], confidence=0.9)
    s.remember("Rejected Memcached for sessions: it lost them on every restart", type="dead-end", tags=["cache"])
    s.remember("Коммиты пишем по Conventional Commits", type="convention")
    s.close()
    return store


def test_typos_still_find_the_memory(filled):
    [first] = am_json("recall", "dokcer netowrking", "--json", "--limit", "1")
    assert "compose network" in first["text"]


def test_json_has_the_documented_fields(filled):
    [hit] = am_json("recall", "select_related", "--json", "--limit", "1")
    for key in ("id", "type", "text", "score", "confidence", "created", "files", "tags", "source", "sources"):
        assert key in hit
    assert hit["type"] == "bug" and hit["files"] == ["shop/admin.py"]


def test_human_output_shows_id_type_and_text(filled):
    p = am("recall", "lost sessions restart", check=0)
    assert p.stdout.startswith("1. ") and "dead-end" in p.stdout and "Memcached" in p.stdout


def test_a_tag_match_outranks_a_passing_mention(store):
    s = agentmem.open_store()
    deep = s.remember("Notes on the build. It runs webpack, babel, eslint, prettier and a long tail of "
                      "tooling. Somewhere we also mention networking once.")[0]
    tagged = s.remember("Service discovery uses DNS names", tags=["networking"])[0]
    ids = [h.memory.id for h in s.recall("networking")]
    assert ids.index(tagged.id) < ids.index(deep.id)


def test_filters_by_type_file_and_confidence(filled):
    assert [h["type"] for h in am_json("recall", "migrations postgres query", "--type", "bug", "--json")] == ["bug"]
    got = am_json("recall", "page query migrations", "--files", "admin.py", "--json")
    assert [h["files"] for h in got] == [["shop/admin.py"]]
    got = am_json("recall", "migrations select_related", "--files", "migrations", "--json")
    assert [h["files"] for h in got] == [["migrations/0031_backfill.py"]]
    assert all(h["confidence"] >= 0.85 for h in am_json("recall", "query postgres", "--min-confidence", "0.85", "--json"))


@pytest.mark.parametrize("query", ['"select_related', "select_related*", "NEAR(select_related orders)",
                                   "-x:y select_related", "select_related) OR (", "AND OR NOT select_related"])
def test_search_syntax_in_a_query_is_just_text(filled, query):
    hits = am_json("recall", query, "--json")
    assert "select_related" in hits[0]["text"]


@pytest.mark.parametrize("query", ['"*"', "-", "the of and", "   ", "( \" ) * : -"])
def test_a_query_without_words_is_a_clear_error(filled, query):
    p = am("recall", query)
    assert p.returncode == 1 and p.stderr.startswith("agentmem: error: the query has no words")
    no_traceback(p)


def test_a_pasted_prompt_is_capped_not_refused(filled):
    prompt = ("Please look at this log and tell me why it fails " * 200 +
              "\nTraceback: psycopg2 error during migrations on postgres 16\n" + "noise " * 3000)
    hits = am_json("recall", prompt, "--json", "--limit", "3")
    assert any("Postgres 16" in h["text"] for h in hits)


def test_russian_queries_find_russian_memories(filled):
    [hit] = am_json("recall", "какой формат коммитов", "--json", "--limit", "1")
    assert "Conventional Commits" in hit["text"]


def test_short_forms_and_spelled_numbers_find_the_full_words(filled):
    am("remember", "Retry the webhook three times, then park it in the dead-letter queue")
    am("remember", "The sub-agent writes its findings to notes/ before it exits")
    am("remember", "The repository keeps one package per service under services/")
    assert "one package per service" in top("repo layout pkg")["text"]
    assert "dead-letter" in top("webhook 3 retries")["text"]
    assert "findings" in top("what does the subagent write")["text"]


def test_chinese_memories_are_found_by_a_word_inside_a_sentence(store):
    am("remember", "我们决定使用PostgreSQL作为主数据库，不再使用MySQL", "--type", "decision")
    am("remember", "以後一律用pnpm管理依赖", "--type", "convention")
    am("remember", "Use ruff for linting")
    assert "PostgreSQL" in top("用什么数据库")["text"]
    assert top("pnpm")["type"] == "convention"
    assert "pnpm" in top("依赖")["text"]


def test_a_question_about_a_kind_of_tool_finds_the_tool(store):
    s = agentmem.open_store()
    s.remember("Stay on RabbitMQ for the notification jobs", type="decision")
    s.remember("Commit messages follow Conventional Commits", type="convention")
    s.remember("Error messages are logged as JSON with the request id", type="convention")
    s.remember("We use pnpm in this repo, never npm or yarn", type="convention")
    s.remember("We use Postgres 16 in production")
    s.remember("Use ruff for linting and formatting", type="convention")
    s.remember("Use typed DTOs for request bodies, not dicts", type="convention")
    s.close()
    assert "RabbitMQ" in top("which message broker do we use")["text"]
    assert "pnpm" in top("package manager")["text"]
    assert "Postgres" in top("what database")["text"]
    assert "Postgres" in top("какая база данных")["text"]
    am("remember", "Kafka carries the analytics events")      # a question naming a tool is not widened
    assert [h["text"] for h in am_json("recall", "rabbitmq", "--json")] == ["Stay on RabbitMQ for the notification jobs"]


def test_negation_is_a_word_in_russian_too(store):
    am("remember", "В отчётах используем moment.js")
    am("remember", "Не используем moment.js в новом коде: он тяжёлый, берём date-fns")
    assert "date-fns" in top("не используем moment")["text"]


def test_confidence_and_recency_break_ties(store):
    s = agentmem.open_store()
    s.import_jsonl([json.dumps({"text": "Use ruff for linting", "source": "old", "created": "2024-01-01T00:00:00Z",
                                "type": "decision"}),
                    json.dumps({"text": "Use ruff for linting python", "source": "new", "type": "convention"})])
    assert [h.memory.source for h in s.recall("ruff linting")][0] == "new"
    s.import_jsonl([json.dumps({"text": "Run black before commit", "confidence": 0.3, "source": "unsure"}),
                    json.dumps({"text": "Run black before commits", "confidence": 1.0, "type": "rule",
                                "source": "sure"})])
    assert [h.memory.source for h in s.recall("black commit")][0] == "sure"


def test_no_store_yet_means_no_results_not_an_error(store):
    p = am("recall", "anything at all")
    assert p.returncode == 0 and p.stdout == "" and "no memories match" in p.stderr
    assert am_json("recall", "anything", "--json") == []
    assert not store.exists()                 # reading never creates the store


def test_scoring_function_is_documented_and_bounded():
    one = agentmem._fused_score({"memory": 0}, 1.0, 0, 0)
    assert one == pytest.approx(1.0 / agentmem._RRF_K)
    assert agentmem._fused_score({"memory": 0}, 0.0, 0, 10 ** 10) >= one / 4


def test_a_memory_about_a_changed_file_ranks_lower(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "db.py").write_text("POOL = 5\n")
    (project / "src" / "cache.py").write_text("TTL = 60\n")
    monkeypatch.delenv("AGENTMEM_DIR")
    s = agentmem.open_store(cwd=str(project))
    for name, text in (("db.py", "The pool size setting lives in src/db.py"),
                       ("cache.py", "The pool size for cache clients lives in src/cache.py")):
        m = agentmem.Memory(text, type="fact", files=["src/" + name], confidence=0.9)
        m.extra["hashes"] = {"src/" + name: agentmem._file_hash(str(project / "src" / name))}
        s.add([s.prepare(m)], lambda _m: "memories/x.md")
    first = [h.memory.files[0] for h in s.recall("pool size setting")]
    assert first[0] == "src/db.py"
    (project / "src" / "db.py").write_text("POOL = 50\n")
    hits = s.recall("pool size setting")
    assert [h.memory.files[0] for h in hits][0] == "src/cache.py" and hits[1].ranks.get("stale") == 1



def test_a_russian_loanword_finds_the_latin_word_as_surely_as_the_word_itself(store):
    """"редиса" is "Redis" written in Cyrillic: the store's own Latin word, not a typo's guess that
    weighs less than the words spelled right ("сервис" is a guess: "service")."""
    s = agentmem.open_store()
    queue = s.remember("Договорились: фоновые задачи держим в Redis (очередь через RQ), от RabbitMQ "
                       "отказались из-за сложности.", type="decision")[0]
    for text in ("All domain logic lives in pkg/core.", "Handlers parse the request, "
                 "call the service, reply.", "Every service logs as JSON.",
                 "Коммиты пишем по Conventional Commits, например fix(queue): ..."):
        s.remember(text, type="convention")
    ranked = {q: [(h.memory.id, round(h.score, 6)) for h in s.recall(q, limit=5)]
              for q in ("какой сервис редиса используем", "какой сервис redis используем")}
    assert ranked["какой сервис редиса используем"] == ranked["какой сервис redis используем"]
    assert queue.id in [i for i, _score in ranked["какой сервис редиса используем"][:2]]


def test_a_message_pasted_twice_edited_is_one_result(store):
    said = ("Check this call on the staging deployment: POST /analyze/prompt with the payload below keeps "
            "failing with a 502 and no logs at all. First reproduce it against our own backend, then tell "
            "me why you think it fails, and if we cannot tell, add logging that explains the error. %s")
    s = agentmem.open_store()
    s.import_jsonl([json.dumps({"text": said % tail, "type": "episode"})
                    for tail in ("The prompt is about React state.", "The prompt asks for the system prompt.")]
                   + [json.dumps({"text": "The 502 on /analyze/prompt came from the worker running out of "
                                          "memory while loading the model.", "type": "bug"})])
    s.close()
    texts = [h["text"] for h in am_json("recall", "502 analyze prompt staging failing", "--json", "--limit", "3")]
    assert sum("staging deployment" in t for t in texts) == 1 and any("out of memory" in t for t in texts), texts


def test_the_answer_ranks_before_the_question_it_answers_in_recall_and_in_the_mcp_tool(store, tmp_path):
    from sessions import render_claude
    from test_mcp import Client
    path = tmp_path / "s.jsonl"
    path.write_text(render_claude([
        ("user", "Why do the nightly exports of the ledger come out empty?"),
        ("assistant", "Found it: the exporter filters on posted_at in UTC, and the ledger rows are "
                      "stamped in local time, so the window missed every row."),
    ], "sess-ledger", cwd="/nowhere"))
    am("capture", "--transcript", str(path), check=0)
    question = "why do the nightly ledger exports come out empty"
    first = am_json("recall", question, "--json", "--limit", "3")[0]
    assert "posted_at in UTC" in first["text"]                  # not the question said again
    client = Client()
    try:
        results = client.call("recall", query=question, limit=3)["structuredContent"]["results"]
    finally:
        client.close()
    assert "posted_at in UTC" in results[0]["text"]
