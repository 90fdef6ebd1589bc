"""Team-ready (issue 26): staleness tied to what a memory says of its files, and what a new
user hit: agent labels, unknown types, home folders, the notes' command, JSONC settings,
JSONL errors, the hook under PYTHONDONTWRITEBYTECODE, the dashboard."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import agentmem
from conftest import AGENTMEM, am, am_json

CART = '''import decimal


def total(items):
    """The cart's total, in cents."""
    return sum(i.cents for i in items)


def tax(cents):
    return cents * 0.2
'''


def repo_with(tmp_path, files):
    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name, text in files.items():
        (repo / name).write_text(text)
    return repo


@pytest.mark.parametrize("where", ["in the repository", "AGENTMEM_DIR"])
def test_a_memory_is_stale_when_what_it_names_changes_not_when_its_file_does(tmp_path, monkeypatch, where):
    repo = repo_with(tmp_path, {"cart.py": CART})
    if where == "in the repository":
        monkeypatch.delenv("AGENTMEM_DIR")
    p = am("remember", "total() in cart.py sums integer cents, never floats", "--files", "cart.py",
           "--type", "convention", cwd=repo, check=0)
    [m] = [json.loads(x) for x in am("export", cwd=repo).stdout.splitlines()]
    assert m["hashes"] == {"cart.py": {"total": m["hashes"]["cart.py"]["total"]}}, p.stdout
    edited = CART.replace("cents * 0.2", "cents * 0.25  # VAT") + "\n\ndef helper():\n    return 1\n"
    (repo / "cart.py").write_text(edited)                       # an edit elsewhere in the file
    assert am("check", cwd=repo).returncode == 0
    (repo / "cart.py").write_text(edited.replace("i.cents for i", "i.price for i"))
    p = am("check", cwd=repo)
    assert p.returncode == 1 and "`total` in cart.py changed or is gone" in p.stdout
    assert "agentmem confirm %s" % m["id"] in p.stdout           # and how to clear it
    am("confirm", m["id"], cwd=repo, check=0)
    assert am("check", cwd=repo).returncode == 0
    (repo / "cart.py").write_text("def subtotal(items):\n    return 0\n")   # the name is gone
    assert "`total` in cart.py changed or is gone" in am("check", cwd=repo).stdout


def test_a_memory_whose_file_holds_none_of_its_words_keeps_the_whole_file_rule(tmp_path, monkeypatch):
    repo = repo_with(tmp_path, {"README.md": "# Shop\n\nA shop.\n"})
    monkeypatch.delenv("AGENTMEM_DIR")
    am("remember", "The readme is the shop's only documentation", "--files", "README.md", cwd=repo, check=0)
    [m] = [json.loads(x) for x in am("export", cwd=repo).stdout.splitlines()]
    assert isinstance(m["hashes"]["README.md"], str)
    (repo / "README.md").write_text("# Shop\n\nA shop, now with docs.\n")
    assert am("check", cwd=repo).returncode == 1


def test_mcp_and_capture_record_anchors_too(tmp_path, monkeypatch):
    from sessions import hook_json, render_claude
    repo = repo_with(tmp_path, {"cart.py": CART})
    monkeypatch.delenv("AGENTMEM_DIR")
    p = subprocess.run([sys.executable, AGENTMEM, "mcp"], cwd=str(repo), capture_output=True, text=True,
                       input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                           "name": "remember", "arguments": {"text": "tax() in cart.py applies the 20% VAT",
                                                             "files": ["cart.py"], "type": "fact"}}}) + "\n")
    assert '"isError": false' in p.stdout, p.stdout
    steps = [("user", "Why are totals off?"),
             ("tool", "Edit", {"file_path": str(repo / "cart.py")}, "ok"),
             ("assistant", "The cause was floats: total() in cart.py now sums integer cents; fixed.")]
    path = tmp_path / "s.jsonl"
    path.write_text(render_claude(steps, "sess-a", cwd=str(repo)), encoding="utf-8")
    am("capture", "--sync", input=hook_json("sess-a", path, cwd=str(repo)), cwd=repo, check=0)
    mems = [json.loads(x) for x in am("export", cwd=repo).stdout.splitlines()]
    anchored = {k for m in mems for v in m.get("hashes", {}).values() if isinstance(v, dict) for k in v}
    assert {"tax", "total"} <= anchored, mems


def test_capture_labels_each_transcript_by_its_detected_format(tmp_path, store):
    codex = [{"type": "session_meta", "payload": {"id": "cx", "cwd": str(tmp_path)}},
             {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
                 {"type": "input_text", "text": "We decided to use Postgres for the queue."}]}}]
    (tmp_path / "rollout.jsonl").write_text("\n".join(json.dumps(x) for x in codex) + "\n")
    (tmp_path / "chat.json").write_text(json.dumps({"sessionId": "g", "messages": [
        {"id": "1", "type": "user", "content": "From now on, run make fmt before a commit."}]}))
    for name in ("rollout.jsonl", "chat.json"):
        am("capture", "--transcript", tmp_path / name, check=0)
    sources = {m["source"].split(":")[0] for m in am_json("list", "--json")}
    assert sources == {"codex", "gemini"}, sources


def test_no_home_folder_is_stored_from_any_entry_point(tmp_path, store):
    home = "/home/alice/work/shop/src/a.py and C:\\Users\\Bob Smith\\shop\\b.py"
    am("remember", "Paths: " + home, check=0)
    subprocess.run([sys.executable, AGENTMEM, "mcp"], capture_output=True, text=True, input=json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "remember", "arguments": {
            "text": "Also: /Users/carol/.ssh/config is read"}}}) + "\n")
    (tmp_path / "in.jsonl").write_text(json.dumps({"text": "Imported from /home/dave/notes.md"}) + "\n")
    am("import", tmp_path / "in.jsonl", check=0)
    text = am("export", check=0).stdout
    for name in ("alice", "Bob Smith", "carol", "dave"):
        assert name not in text, text


def test_the_notes_name_a_command_that_exists_in_the_agent_s_shell(tmp_path, monkeypatch):
    repo = repo_with(tmp_path, {})
    (repo / "tools").mkdir()
    shutil.copy(AGENTMEM, str(repo / "tools" / "agentmem.py"))
    monkeypatch.delenv("AGENTMEM_DIR")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM")}
    run = [sys.executable, str(repo / "tools" / "agentmem.py")]
    subprocess.run(run + ["remember", "Amounts are integer cents", "--type", "convention"], cwd=str(repo),
                   env=env, check=True, capture_output=True)
    notes = subprocess.run(run + ["inject", "--format", "text"], cwd=str(repo), env=env, input="{}",
                           capture_output=True, text=True).stdout
    assert "`python3 tools/agentmem.py show ID`" in notes and "`agentmem show ID`" not in notes
    ident = json.loads(subprocess.run(run + ["list", "--json"], cwd=str(repo), env=env, capture_output=True,
                                      text=True).stdout)[0]["id"]
    shown = subprocess.run(["python3", "tools/agentmem.py", "show", ident], cwd=str(repo), env=env,
                           capture_output=True, text=True)
    assert shown.returncode == 0 and "integer cents" in shown.stdout


def test_gemini_settings_with_comments_are_refused_with_the_reason(tmp_path, store):
    project = tmp_path / "p"
    (project / ".gemini").mkdir(parents=True)
    jsonc = '{\n  // my theme\n  "theme": "dark", /* keep */ "url": "http://x//y"\n}\n'
    (project / ".gemini" / "settings.json").write_text(jsonc)
    p = am("install", "gemini", "--project", project)
    assert p.returncode == 1 and "holds comments (JSONC), which a rewrite would lose" in p.stderr
    assert (project / ".gemini" / "settings.json").read_text() == jsonc
    assert agentmem._jsonc(jsonc) == ('{\n  \n  "theme": "dark",  "url": "http://x//y"\n}\n', True)


def test_a_file_that_is_not_jsonl_is_one_error_not_fifty(tmp_path, store):
    (tmp_path / "notes.txt").write_text("".join("line %d of prose\n" % i for i in range(80)))
    p = am("import", tmp_path / "notes.txt")
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert "is not JSONL (one JSON object a line): none of its 80 lines" in p.stderr
    (tmp_path / "mixed.jsonl").write_text(json.dumps({"text": "Good one"}) + "\n" + "bad\n" * 30)
    p = am("import", tmp_path / "mixed.jsonl")
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "and 25 more" in p.stderr


def test_the_installed_hook_is_as_fast_with_pythondontwritebytecode(tmp_path, store, monkeypatch):
    """Where PYTHONDONTWRITEBYTECODE=1 is always set (containers, CI), the hook must still
    find its bytecode, the standard library's included: each case has its own cache."""
    am("remember", "Releases go out on Thursdays", "--type", "convention", check=0)
    cases = {}
    for flag in ("", "1"):
        cache = str(tmp_path / ("cache" + flag))
        monkeypatch.setenv("XDG_CACHE_HOME", cache)
        cases[flag] = (agentmem._python_argv("inject"), dict(os.environ, PYTHONDONTWRITEBYTECODE=flag))

    def run(flag):
        argv, env = cases[flag]
        t = time.perf_counter()
        subprocess.run(argv, input=b"{}", env=env, capture_output=True)
        return time.perf_counter() - t
    run(""), run("1")                                # each cache written (or not) once
    times = {"": [], "1": []}
    for _ in range(9):                               # interleaved, the fastest of each: load-proof
        for flag in times:
            times[flag].append(run(flag))
    assert min(times["1"]) < 1.3 * min(times[""]), times


def test_the_dashboard_reads_as_a_person_needs_it(store, tmp_path):
    s = agentmem.open_store()
    m, _ = s.remember("Deploys go through CI.", type="convention", source="claude-code:s1")
    s.close()
    app = agentmem._DashboardApp(str(store), ["http://127.0.0.1:1"])
    ok = {"Host": "127.0.0.1:1", "Cookie": "agentmem=" + app.token}
    status, _h, body = app.respond("GET", "/", {"Host": "127.0.0.1:1"})
    assert status == 403 and str(store) not in body.decode()           # no key: no path, no pages
    review = app.respond("GET", "/review", ok)[2].decode()
    assert review.index("Deploys go through CI.") < review.index(">Confirm<")   # read, then decide
    page = app.respond("GET", "/m/" + m.id, ok)[2].decode()
    assert '<option selected>convention</option>' in page and '<select name="type">' in page
    assert '<input name="type"' not in page
    nxt = app.respond("GET", "/next", ok)[2].decode()
    assert " of 1200 tokens</text>" in nxt and 'width="520"' in nxt
    assert "svg text{font-size:14px" in agentmem._DASHBOARD_CSS
