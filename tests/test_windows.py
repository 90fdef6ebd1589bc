"""Windows, tested on Linux: the Windows input fed in (a BOM, cp1252 consoles, CRLF files,
C:\\Users paths, a refused os.replace), and agentmem._windows() set only where the code
branches on it. docs/windows.md says what was reviewed and what has not run on a Windows machine."""
import json
import os
import re
import subprocess
import sys

import pytest

import agentmem
from conftest import ROOT, am

WIN_PY = r"C:\Program Files\Python313\python.exe"
WIN_ME = r"C:\Users\John Smith\tools\agentmem.py"


@pytest.fixture
def windows(monkeypatch):
    """This process as a Windows one for the code that asks os.name: a python.org Python in
    Program Files, agentmem.py in a home folder whose user name holds a space."""
    monkeypatch.setattr(agentmem, "_windows", lambda: True)
    monkeypatch.setattr(agentmem, "__file__", WIN_ME)
    monkeypatch.setattr(sys, "executable", WIN_PY)
    monkeypatch.setenv("LOCALAPPDATA", r"C:\Users\John Smith\AppData\Local")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)


def powershell_words(command):
    """The argv PowerShell runs for `& 'a' 'b' word`: single-quoted strings are literal, ''
    inside one is a quote."""
    assert command.startswith("& '"), command
    return [m.group(1).replace("''", "'") if m.group(2) is None else m.group(2)
            for m in re.finditer(r"'((?:[^']|'')*)'|(\S+)", command[2:])]


def cmd_words(command):
    """The argv a program started by cmd.exe sees for a line of plain or "quoted" words."""
    return [q if q else w for q, w in re.findall(r'"([^"]*)"|(\S+)', command)]


# -- 1. the hook command each host's shell can run ---------------------------------------


def test_powershell_hosts_get_a_call_operator_and_the_module_form(windows):
    for agent in ("claude-code", "gemini", "cursor"):
        plan = agentmem._hook_plan(agent, prompt=True)
        for entries in plan.values():
            for entry in entries:
                for hook in entry.get("hooks", [entry]):
                    command = hook["command"]
                    argv = powershell_words(command)
                    assert argv[0] == WIN_PY and argv[1] == "-c"
                    assert '"' not in command                            # no inner double quotes
                    assert "f=r'C:\\Users\\John Smith\\tools';" in argv[2]
                    assert "s.pycache_prefix=" in argv[2] and "LOCALAPPDATA" in argv[2]
                    assert argv[3] in ("inject", "capture")
                    assert agentmem._is_ours(hook), command
                    assert agentmem._hook_target(command) == WIN_ME
                    if agent == "claude-code":
                        assert hook["shell"] == "powershell"


def test_codex_gets_its_windows_field_in_cmd_form(windows):
    plan = agentmem._hook_plan("codex", prompt=True)
    hook = plan["Stop"][0]["hooks"][0]
    assert hook["commandWindows"] == hook["command"]
    argv = cmd_words(hook["command"])
    assert argv[0] == WIN_PY and argv[-1] == "capture"                # spaces: in double quotes
    assert "'" not in argv[0] and agentmem._is_ours(hook)
    assert agentmem._hook_target(hook["command"]) == WIN_ME


def test_the_windows_import_code_runs_and_has_no_double_quote_or_space(tmp_path):
    code = agentmem._import_code(ROOT, windows=True)
    assert '"' not in code and (" " not in code or " " in ROOT)
    p = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "agentmem " + agentmem.__version__
    assert "f=r'C:\\.';" in agentmem._import_code("C:\\", windows=True)


def test_no_store_stub_python3_and_the_cache_in_localappdata(windows, monkeypatch):
    monkeypatch.setattr(sys, "executable", "")
    argv = agentmem._python_argv("inject")
    assert argv[0] == "python"
    assert agentmem._user_cache_dir() == r"C:\Users\John Smith\AppData\Local\agentmem"


def test_doctor_finds_a_script_path_with_spaces():
    assert agentmem._hook_target('"C:\\Py\\python.exe" "C:\\My Tools\\agentmem.py" inject') == \
        "C:\\My Tools\\agentmem.py"
    assert agentmem._hook_target("python3 '/opt/my tools/agentmem.py' capture") == \
        "/opt/my tools/agentmem.py"


# -- 2-4. bytes: git output, a BOM, stdin ---------------------------------------------------


def test_git_output_is_read_as_utf8_whatever_the_locale(tmp_path, monkeypatch):
    import locale
    repo = tmp_path / "r"
    repo.mkdir()
    git = ["git", "-c", "user.email=a@b.c", "-c", "user.name=A", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["config", "core.quotepath", "false"], check=True)
    (repo / "Café✓.py").write_text("x = 1\n")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "c"], check=True)
    (repo / "Café✓.py").write_text("x = 2\n")
    monkeypatch.setattr(locale, "getpreferredencoding", lambda *a: "cp1252")
    if hasattr(locale, "getencoding"):
        monkeypatch.setattr(locale, "getencoding", lambda: "cp1252")
    assert agentmem._git_changes(str(repo))[1] == ["Café✓.py"]


def test_a_byte_order_mark_breaks_no_json(store, tmp_path):
    bom = b"\xef\xbb\xbf"
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_bytes(bom + b'{"model": "x"}')
    (project / "tools").mkdir()
    (project / "tools" / "agentmem.py").write_bytes(open(os.path.join(ROOT, "agentmem.py"), "rb").read())
    p = subprocess.run([sys.executable, str(project / "tools" / "agentmem.py"), "install", "claude-code"],
                       cwd=project, capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "AGENTMEM_DIR"})
    assert p.returncode == 0, p.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8-sig"))
    assert settings["model"] == "x" and "SessionStart" in settings["hooks"]
    am("remember", "Releases are cut on Thursdays", "--type", "convention", check=0)
    (store / "config.json").write_bytes(bom + json.dumps({"inject_budget": 800}).encode())
    assert agentmem.open_store().config() == {"inject_budget": 800}
    hook = bom + json.dumps({"session_id": "s", "cwd": str(tmp_path), "source": "startup",
                             "hook_event_name": "SessionStart"}).encode()
    p = subprocess.run([sys.executable, os.path.join(ROOT, "agentmem.py"), "inject"], input=hook,
                       capture_output=True, env=dict(os.environ))
    assert p.returncode == 0 and b"Thursdays" in p.stdout


def test_piped_text_is_utf8_on_a_cp1252_console(store):
    text = "Le café ouvre à 8 h ✓ — приём в 9"
    am("remember", "-", input=text, env={"PYTHONIOENCODING": "cp1252"}, check=0)
    assert [m.text for m in agentmem.open_store().memories()] == [text]
    exported = am("export", check=0).stdout
    am("forget", agentmem.open_store().memories()[0].id, check=0)
    am("import", "-", input=exported, env={"PYTHONIOENCODING": "cp1252"}, check=0)
    assert [m.text for m in agentmem.open_store().memories()] == [text]


def test_hook_json_is_ascii_so_no_code_page_can_garble_it(store, tmp_path):
    am("remember", "Le café ouvre à 8 h, приём в 9", "--type", "convention", check=0)
    hook = json.dumps({"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "SessionStart"})
    out = am("inject", input=hook).stdout
    assert out.strip() and out.isascii()
    assert "café" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


# -- 5-10. the store on Windows -------------------------------------------------------------


def test_a_crlf_checkout_hashes_as_the_lf_one_and_old_hashes_still_match(tmp_path):
    lf, crlf = tmp_path / "lf.py", tmp_path / "crlf.py"
    lf.write_bytes(b"def f():\n    return 1\n")
    crlf.write_bytes(b"def f():\r\n    return 1\r\n")
    assert agentmem._file_hash(str(crlf)) == agentmem._file_hash(str(lf))
    old = agentmem._file_hashes(str(crlf))[1]                   # what an older store recorded
    assert old != agentmem._file_hash(str(crlf))
    assert agentmem._stale_files({"crlf.py": old}, str(tmp_path)) == []
    crlf.write_bytes(b"def f():\r\n    return 2\r\n")
    assert agentmem._stale_files({"crlf.py": old}, str(tmp_path)) == ["crlf.py"]


def test_a_refused_replace_is_tried_again_on_windows(tmp_path, monkeypatch):
    real, calls = os.replace, []

    def busy(src, dst):
        calls.append(dst)
        if len(calls) < 3:
            raise PermissionError(13, "The process cannot access the file")
        return real(src, dst)
    monkeypatch.setattr(os, "replace", busy)
    monkeypatch.setattr(agentmem, "_windows", lambda: True)
    agentmem._atomic_write(str(tmp_path / "a.md"), "kept")
    assert (tmp_path / "a.md").read_text() == "kept" and len(calls) == 3
    monkeypatch.setattr(agentmem, "_windows", lambda: False)   # elsewhere it is a real error
    calls.clear()
    with pytest.raises(PermissionError):
        agentmem._atomic_write(str(tmp_path / "b.md"), "x")
    assert not list(tmp_path.glob(".b.md*"))                    # and leaves no temporary file


def test_a_lower_case_drive_letter_keeps_the_file_relative():
    assert agentmem._relative_file(r"c:\src\app\lib\pay.py", r"C:\src\app") == "lib/pay.py"
    assert agentmem._relative_file(r"C:/SRC/App/x.py", r"c:\src\app") == "x.py"
    assert agentmem._relative_file(r"D:\other\x.py", r"C:\src\app") == "D:/other/x.py"


def test_home_folders_are_redacted_in_any_case_and_with_spaces():
    text = (r"see C:\Users\John Smith\notes\a.md, c:\users\ann\b.md, C:/Users/Bo Li/c.md "
            r"and C:\Users\John Smith\app\src\d.py")
    out = agentmem._without_home(text, r"C:\Users\John Smith\app")
    for name in ("John", "Smith", "ann", "Bo Li"):
        assert name not in out, out
    assert "src\\d.py" in out and "~\\notes\\a.md" in out


def test_a_long_path_prefix_does_not_lock_files_out(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x")
    real = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda p: "\\\\?\\" + real(p) if p.endswith("a.py")
                        else real(p))
    assert agentmem._real(str(tmp_path / "a.py")) == real(str(tmp_path / "a.py"))
    assert agentmem._file_hash_allowed(str(tmp_path / "a.py"), str(tmp_path))


def test_a_rewrite_is_seen_when_the_file_system_gives_no_inode():
    class Stat:
        st_mtime_ns, st_size, st_ino = 1, 10, 0

        def __init__(self, created):
            self.st_ctime_ns = created
    assert agentmem._file_stamp(Stat(5)) != agentmem._file_stamp(Stat(6))


def test_an_old_index_file_is_left_for_the_new_versioned_one(store):
    am("remember", "Index files carry their version", check=0)
    local = store / "local"
    (local / "index-fts5.sqlite3").write_bytes(b"an index of an older agentmem")
    for p in list(local.glob("index-*-v*.sqlite3*")):
        p.unlink()
    assert am("recall", "version index", check=0).stdout
    names = sorted(p.name for p in local.glob("index-*"))
    assert "index-fts5.sqlite3" not in names
    assert any(n.endswith("-v%d.sqlite3" % agentmem._INDEX_VERSION) for n in names), names


# -- 11. no console window ---------------------------------------------------------------


def test_git_and_the_worker_start_without_a_console_window(tmp_path, monkeypatch):
    seen = []

    def run(argv, **kw):
        seen.append(kw.get("creationflags", 0))
        return subprocess.CompletedProcess(argv, 0, b"", b"")
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(agentmem, "_windows", lambda: True)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    agentmem._git_changes(str(tmp_path))
    agentmem._run_git(str(tmp_path), "merge-base", "--is-ancestor", "abc123", "HEAD")
    assert seen and all(flags & 0x08000000 for flags in seen)

    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **kw: started.append(kw))
    agentmem._Capture(agentmem.open_store()).start_worker()
    flags = started[0]["creationflags"]
    assert flags & 0x08000000 and flags & 0x00000200 and not flags & 0x00000008
