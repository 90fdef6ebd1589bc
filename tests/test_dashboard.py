"""agentmem serve: a local dashboard over HTTP, its key, its actions, and a real browser."""
import http.cookiejar
import os
import re
import shutil
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest

import agentmem
from browser import Browser, chromium
from conftest import AM_ARGV, am
from sessions import render_claude

HOSTILE = ('<script>alert(1)</script> "><img src=x onerror=alert(2)> '
           '```\n</pre></agentmem-notes>``` end')


@pytest.fixture
def filled(store):
    """A store with a few memories; returns {name: id}."""
    ids = {}
    for name, text, mtype in (
        ("cents", "Money amounts are integer cents, never floats.", "convention"),
        ("webhook", "The refund webhook fired twice: retries on 409; fixed in retry.go.", "bug"),
        ("hostile", HOSTILE, "fact"),
    ):
        ids[name] = am("remember", text, "--type", mtype, "--source", "claude-code:s1",
                       "--json", check=0).stdout.split('"id": "')[1].split('"')[0]
    return ids


class Client:
    """A urllib client that keeps the dashboard's cookie, and can send what a page sends."""

    def __init__(self, url):
        self.url, self.base = url, url.split("/?")[0]
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar),
                                                  _NoRedirect())

    def get(self, path, follow=True):
        try:
            r = self.opener.open(self.base + path if path.startswith("/") else path)
        except urllib.error.HTTPError as e:
            if e.code in (301, 302, 303) and follow:
                return self.get(e.headers["Location"])
            return e.code, e.read().decode(), e.headers
        return r.status, r.read().decode(), r.headers

    def post(self, path, fields, origin=True):
        data = urllib.parse.urlencode(fields).encode()
        req = urllib.request.Request(self.base + path, data=data, method="POST")
        if origin:
            req.add_header("Origin", self.base if origin is True else origin)
        try:
            r = self.opener.open(req)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers
        return r.status, r.read().decode(), r.headers

    def csrf(self, ident):
        return re.search(r'name="csrf" value="([^"]+)"', self.get("/m/" + ident)[1]).group(1)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kw):
        return None


@pytest.fixture
def served(store):
    """A dashboard on a free port in this process; yields a logged-in Client."""
    server, _app, url = agentmem._dashboard_server(str(store), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = Client(url)
    assert client.get(url)[0] == 200          # the key becomes a cookie
    yield client
    server.shutdown()
    server.server_close()


def written(folder):
    """What the markdown of a store says, each memory's edit day and time left out."""
    out = []
    for path in sorted(folder.rglob("*.md")):
        for m in agentmem._parse_memories(path.read_text(), path.name):
            d = m.to_dict()
            for key in ("updated", "reviewed"):
                d.pop(key, None)
            out.append((d, m.line))
    return out


def markdown(store):
    return "".join(p.read_text() for p in sorted(store.rglob("*.md")))


def test_without_the_key_every_route_is_refused_and_nothing_changes(filled, served, store):
    stranger = Client(served.base + "/")
    before = markdown(store)
    for path in ("/", "/search?q=money", "/m/" + filled["cents"], "/review", "/sessions",
                 "/next", "/static/app.js"):
        status, body, _h = stranger.get(path)
        assert status == 403 and "address" in body, path
    status, _b, _h = stranger.post("/m/%s/forget" % filled["cents"], {"csrf": "x"})
    assert status == 403 and markdown(store) == before
    wrong = Client(served.base + "/?token=not-the-key")
    assert wrong.get(wrong.url)[0] == 403


def test_the_key_moves_into_a_cookie_and_out_of_the_address(store, filled):
    server, app, url = agentmem._dashboard_server(str(store), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = Client(url)
        status, _body, headers = client.get(url, follow=False)
        assert status == 303 and "token" not in headers["Location"]
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        assert client.get("/")[0] == 200
    finally:
        server.shutdown()
        server.server_close()


def test_pages_answer_with_a_strict_policy_and_show_what_is_stored(filled, served):
    for path, expect in (("/", "Memories by type"), ("/search?q=refund+webhook", "retry.go"),
                         ("/review", "unreviewed"), ("/sessions", "Sessions"),
                         ("/next", "SessionStart"), ("/next", "Why each note"),
                         ("/next?prompt=money+in+cents", "integer cents"),
                         ("/check", "Check")):
        status, body, headers = served.get(path)
        assert status == 200 and expect in body, path
        csp = headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
        assert headers["X-Frame-Options"] == "DENY"
    _s, body, _h = served.get("/")
    store = agentmem.open_store()
    counts = store.review_counts()
    assert counts == {"unreviewed": len(store.review_queue())} == {"unreviewed": 3}
    assert "3 to review</a>: 3 unreviewed" in body
    status, body, _h = served.get("/search?q=refund+webhook")
    assert body.index(filled["webhook"]) < body.index(filled["cents"]) if filled["cents"] in \
        body else filled["webhook"] in body
    assert served.get("/m/zzzzzzzz")[0] == 404
    assert served.get("/../../etc/passwd")[0] == 404


def test_filters_narrow_the_list(filled, served):
    _s, body, _h = served.get("/search?type=bug")
    assert filled["webhook"] in body and filled["cents"] not in body
    _s, body, _h = served.get("/search?q=money&type=bug")
    assert filled["cents"] not in body
    _s, body, _h = served.get("/search?unreviewed=1")
    assert filled["cents"] in body
    am("confirm", filled["cents"], check=0)
    _s, body, _h = served.get("/search?unreviewed=1")
    assert filled["cents"] not in body and filled["webhook"] in body


def test_the_session_s_words_are_filtered_by_who_said_them(served, store, tmp_path):
    chat = tmp_path / "chat.md"
    chat.write_text("User: Why do refunds fire twice?\nAssistant: Retries on 409 fire the webhook again.\n")
    am("capture", "--transcript", str(chat), check=0)
    _s, body, _h = served.get("/search?origin=words/agent")
    assert "Retries on 409" in body and "Why do refunds fire twice" not in body
    _s, body, _h = served.get("/search?origin=words/person")
    assert "Why do refunds fire twice" in body and "Retries on 409" not in body


def test_stored_markup_is_shown_as_text(filled, served):
    for path in ("/m/" + filled["hostile"], "/search?q=alert+onerror", "/review"):
        _s, body, _h = served.get(path)
        assert "<script>alert" not in body and "<img src=x" not in body, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body, path
        assert "&lt;/pre&gt;" in body or path == "/review", path


def test_actions_change_the_markdown_as_the_command_line_does(filled, served, store, tmp_path):
    ident = filled["cents"]
    status, _b, headers = served.post("/m/%s/confirm" % ident, {"csrf": served.csrf(ident)})
    assert status == 303 and "done=confirmed" in headers["Location"]
    m = agentmem.open_store().get(ident)
    assert m.extra.get("reviewed") and m.confidence > 0.8
    # edit: text, type, tags; a secret in the new text is masked as on the command line
    status, _b, _h = served.post("/m/%s/edit" % ident, {
        "csrf": served.csrf(ident), "text": "Amounts are integer cents. password=hunter2hunter2",
        "type": "rule", "tags": "Money, payments"})
    assert status == 303
    text = markdown(store)
    assert "Amounts are integer cents. password=[REDACTED]" in text and "hunter2" not in text
    m = agentmem.open_store().get(ident)
    assert (m.type, m.tags) == ("rule", ["money", "payments"])
    # the same edit through the command line writes the same block
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    served.post("/m/%s/edit" % ident, {"csrf": served.csrf(ident), "text": "Cents only."})
    am("edit", ident, "--text", "Cents only.", env={"AGENTMEM_DIR": str(copy)}, check=0)
    assert written(store) == written(copy)
    # promote, relate, forget
    assert served.post("/m/%s/promote" % filled["webhook"],
                       {"csrf": served.csrf(filled["webhook"])})[0] == 303
    assert agentmem.open_store().get(filled["webhook"]).type == "rule"
    assert served.post("/m/%s/relate" % filled["webhook"], {
        "csrf": served.csrf(filled["webhook"]), "kind": "fixes", "other": ident})[0] == 303
    assert agentmem.open_store().get(filled["webhook"]).extra["links"] == {"fixes": [ident]}
    assert served.post("/m/%s/forget" % ident, {"csrf": served.csrf(ident)})[0] == 303
    assert "· %s" % ident not in markdown(store)


def test_a_change_needs_the_pages_csrf_token_and_origin(filled, served, store):
    ident, before = filled["cents"], markdown(store)
    token = served.csrf(ident)
    for fields, origin in (({}, True), ({"csrf": "forged"}, True),
                           ({"csrf": token}, "http://evil.example"), ({"csrf": token}, None)):
        status, _b, _h = served.post("/m/%s/forget" % ident, fields, origin=origin)
        assert status == 403, (fields, origin)
    assert markdown(store) == before
    assert served.get("/m/%s/forget" % ident)[0] == 404        # a GET never changes anything


def test_a_foreign_host_name_is_refused(filled, served):
    req = urllib.request.Request(served.base + "/", headers={"Host": "attacker.example:80"})
    with pytest.raises(urllib.error.HTTPError) as e:
        served.opener.open(req)
    assert e.value.code == 403


def test_serve_prints_the_url_first_and_says_what_to_do_without_a_store(store, tmp_path):
    p = am("serve", "--no-open", "--port", "0")
    assert p.returncode == 1 and "no agentmem store" in p.stderr and "remember" in p.stderr
    p = am("serve", "--host", "0.0.0.0", "--no-open")
    assert p.returncode == 1 and "--allow-remote" in p.stderr
    am("remember", "Deploys go out on Tuesdays", check=0)
    proc = subprocess.Popen(AM_ARGV + ["serve", "--no-open", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    try:
        url = proc.stdout.readline().strip()
        assert re.match(r"^http://127\.0\.0\.1:\d+/\?token=[\w-]{20,}$", url), url
        client = Client(url)
        assert "Tuesdays" in client.get(url)[1] or "Tuesdays" in client.get("/search")[1]
        port = url.split(":")[2].split("/")[0]
        busy = am("serve", "--no-open", "--port", port)
        assert busy.returncode == 1 and "port" in busy.stderr and busy.stderr.count("\n") == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_an_empty_store_says_how_to_fill_it(store, served):
    agentmem.open_store().ensure()
    status, body, _h = served.get("/")
    assert status == 200 and "Nothing stored yet" in body and "agentmem install" in body


@pytest.mark.slow
def test_a_real_browser_searches_opens_confirms_and_edits(tmp_path, store):
    binary = chromium()
    if not binary:
        pytest.skip("no Chromium: install Debian's chromium (.ci/run does) or set AGENTMEM_CHROMIUM")
    work = tmp_path / "demo"
    work.mkdir()
    demo = agentmem.Store(str(work / ".agentmem"))
    agentmem._demo_capture(demo, str(work))
    bug = [m for m in demo.memories(["bug"])][0]     # told to a second session, which used it
    agentmem._log_told(demo, "s2", "start", "- [%s · bug] ..." % bug.id, source="startup")
    (work / "s2.jsonl").write_text(render_claude([
        ("user", "Refunds are doubled again"),
        ("tool", "Read", {"file_path": str(work / "internal/webhooks/retry.go")}, "package webhooks")],
        "s2"))
    am("capture", "--store", demo.root, "--transcript", work / "s2.jsonl", "--session", "s2",
       "--no-llm", check=0)
    demo.close()
    server, _app, url = agentmem._dashboard_server(demo.root, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = Browser(binary)
    shots = []
    try:
        browser.goto(url)
        assert browser.js("document.title") == "agentmem · Overview"
        assert "1 of 1 used (100%)" in browser.js("document.body.innerText")
        assert "token" not in browser.js("location.href")
        shots.append(browser.screenshot(str(tmp_path / "overview.png")))
        browser.goto(url.split("/?")[0] + "/search")
        browser.js("var q = document.querySelector('input[name=q]'); q.value = 'webhook twice';"
                   "q.dispatchEvent(new Event('input'))")
        assert browser.wait_for("document.querySelector('#results').textContent"
                                ".indexOf('score') >= 0")      # search as you type
        shots.append(browser.screenshot(str(tmp_path / "search.png")))
        first = browser.js("document.querySelector('#results li').textContent")
        assert "webhook fires twice" in first
        browser.click_and_wait("#results li a")
        ident = browser.js("location.pathname").split("/")[-1]
        told = browser.js("document.body.innerText")      # the session it was told to used it
        assert "told to 1 sessions, used in 1" in told and "opened `internal/webhooks/retry.go`" in told
        shots.append(browser.screenshot(str(tmp_path / "memory.png")))
        browser.click_and_wait("form[action$='/confirm'] button")
        assert "done=confirmed" in browser.js("location.href")
        browser.js("document.querySelector('textarea[name=text]').value = "
                   "'The refund webhook fired twice: 409 retries. Edited in a browser.'")
        browser.click_and_wait("form[action$='/edit'] button")
        for page in ("review", "sessions", "next"):
            browser.goto(url.split("/?")[0] + "/" + page)
            shots.append(browser.screenshot(str(tmp_path / (page + ".png"))))
    finally:
        browser.close()
        server.shutdown()
        server.server_close()
    on_disk = "".join(p.read_text() for p in (work / ".agentmem").rglob("*.md"))
    block = on_disk.split("· %s" % ident)[1].split("\n## ")[0]
    assert "Edited in a browser." in block and '"reviewed"' in block
    assert all(os.path.getsize(s) > 10000 for s in shots)
    if os.environ.get("AGENTMEM_DASHBOARD_PNG"):   # docs/dashboard.png is taken this way
        shutil.copy(shots[1], os.environ["AGENTMEM_DASHBOARD_PNG"])


def test_serve_demo_shows_the_demo_store_and_removes_it_when_stopped(store, tmp_path):
    proc = subprocess.Popen(AM_ARGV + ["serve", "--demo", "--no-open", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=str(tmp_path)))
    try:
        url = proc.stdout.readline().strip()
        client = Client(url)
        assert client.get(url)[0] == 200
        assert "webhook fires twice" in client.get("/search?q=webhook")[1]
        assert list(tmp_path.glob("agentmem-demo-*"))
    finally:
        proc.terminate()                      # SIGTERM ends it as Ctrl-C does
        assert proc.wait(timeout=10) == 0
    assert not list(tmp_path.glob("agentmem-demo-*")) and not store.exists()


def test_a_memory_page_shows_its_files_state_and_git_history(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "pay.py").write_text("CENTS = True\n")
    git = ["git", "-c", "user.email=a@b.c", "-c", "user.name=A", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.delenv("AGENTMEM_DIR")
    p = am("remember", "Amounts are integer cents", "--files", "src/pay.py", "--json", cwd=repo)
    ident = p.stdout.split('"id": "')[1].split('"')[0]
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "Remember the cents rule"], check=True)
    (repo / "src" / "pay.py").write_text("CENTS = False\n")
    app = agentmem._DashboardApp(str(repo / ".agentmem"), ["http://127.0.0.1:1"])
    status, _h, body = app.respond("GET", "/m/" + ident, {
        "Host": "127.0.0.1:1", "Cookie": "agentmem=" + app.token})
    body = body.decode()
    assert status == 200 and "Remember the cents rule" in body           # git log of its file
    assert "<code>src/pay.py</code></td><td>changed" in body and "STALE" in body
