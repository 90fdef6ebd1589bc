"""The command line as a whole: help that teaches, documented commands, a vendorable single file."""
import io
import json
import glob
import os
import shutil
import subprocess
import sys

import pytest

import agentmem
from conftest import AGENTMEM, ROOT, am

COMMANDS = sorted(agentmem._COMMANDS)
DOCS = "\n".join(open(p, encoding="utf-8").read() for p in [os.path.join(ROOT, "README.md")] +
                 sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help_with_an_example(name):
    p = am(name, "--help", check=0)
    assert "examples:" in p.stdout and "agentmem %s" % name in p.stdout.split("examples:")[1]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_is_documented(name):
    assert "agentmem %s" % name in DOCS or "agentmem.py %s" % name in DOCS, name


def test_top_level_help_lists_every_command():
    out = am("--help", check=0).stdout
    for name in COMMANDS:
        assert name in out


def test_usage_errors_exit_2_and_say_why():
    p = am("recall")
    assert p.returncode == 2 and "query" in p.stderr
    p = am("no-such-command")
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_version():
    assert am("--version", check=0).stdout.strip() == "agentmem " + agentmem.__version__


def test_main_returns_the_exit_code(store, capsys):
    assert agentmem.main(["remember", "Library callers get an exit code back"]) == 0
    assert agentmem.main(["show", "../bad"]) == 1
    assert "not a memory id" in capsys.readouterr().err


def test_demo_shows_the_main_job_and_cleans_up(store, tmp_path):
    p = am("demo", check=0, env={"TMPDIR": str(tmp_path)})
    out = p.stdout
    for part in ("captured", "agentmem recall", "Conventions and decisions", "were not stored"):
        assert part in out
    assert "NOT:" not in out
    assert not glob.glob(str(tmp_path / "agentmem-demo-*"))
    assert not store.exists()


def test_the_single_file_works_vendored_anywhere(tmp_path):
    vendored = tmp_path / "myproject" / "tools"
    vendored.mkdir(parents=True)
    shutil.copy(AGENTMEM, str(vendored / "agentmem.py"))
    env = dict(os.environ)
    env.pop("AGENTMEM_DIR", None)
    def run(*a):
        return subprocess.run([sys.executable, "agentmem.py"] + list(a), cwd=str(vendored), env=env,
                                        capture_output=True, text=True, timeout=60)
    assert run("remember", "Vendored copies keep working", "--type", "fact").returncode == 0
    assert "Vendored copies" in run("recall", "vendored").stdout
    assert (vendored / ".agentmem" / "memories").is_dir()
    code = "import agentmem; print(agentmem.tokenize('vendored import'))"
    p = subprocess.run([sys.executable, "-c", code], cwd=str(vendored), capture_output=True, text=True)
    assert p.stdout.strip() == "['vendor', 'import']"


def _pythons():
    root = os.path.expanduser("~/.pyenv/versions")
    found = sorted(glob.glob(os.path.join(root, "3.9*", "bin", "python3"))) + \
        sorted(glob.glob(os.path.join(root, "3.13*", "bin", "python3")))
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no pyenv Python 3.9 / 3.13 here"))]


@pytest.mark.parametrize("python", _pythons())
def test_oldest_and_newest_supported_pythons(python, store):
    def run(*a, **kw):
        return subprocess.run([python, AGENTMEM] + list(a), capture_output=True, text=True,
                                              timeout=60, **kw)
    assert run("remember", "Runs on every supported Python", "--type", "fact").returncode == 0
    p = run("recall", "supported python", "--json")
    assert p.returncode == 0 and "every supported" in p.stdout
    p = run("mcp", input='{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
    assert p.stdout.strip() == '{"jsonrpc": "2.0", "id": 1, "result": {}}'
    code = ("import sys, doctest; sys.path.insert(0, %r); import agentmem; "
            "r = doctest.testmod(agentmem); print(r.attempted); sys.exit(r.failed)" % os.path.dirname(AGENTMEM))
    p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and int(p.stdout.split()[-1]) > 15, p.stdout[-2000:]


def test_a_hook_call_gets_the_same_arguments_as_argparse_gives():
    for argv in (["inject"], ["capture"], ["inject", "--prompt"], ["inject", "--format", "cursor"],
                 ["capture", "--sync", "--no-llm"], ["inject", "--prompt", "--format", "text"]):
        assert vars(agentmem._hook_args(argv)) == vars(agentmem._build_parser(argv[0]).parse_args(argv)), argv
    for argv in (["recall"], ["inject", "--budget", "50"], ["inject", "--format", "xml"], ["inject", "-x"]):
        assert agentmem._hook_args(argv) is None   # argparse reads (and explains) anything else


@pytest.mark.parametrize("args,code,said", [
    (("recall", "redis", "--limit", "0"), 2, "argument --limit/-n: must be a whole number of at least 1"),
    (("recall", "redis", "--limit", "-1"), 2, "must be a whole number of at least 1"),
    (("list", "--limit", "0"), 2, "must be a whole number of at least 1"),
    (("inject", "--budget", "50"), 2, "argument --budget: must be a whole number of at least 100"),
    (("recall", "redis", "--bogus"), 2, "agentmem recall: error: unrecognized arguments: --bogus"),
    (("recall", "redis", "--type", "nosuchtype"), 1, "unknown type 'nosuchtype': use decision"),
    (("list", "--type", "decison"), 1, "unknown type 'decison'"),
])
def test_flags_that_mean_nothing_are_refused_with_the_command_s_usage(store, args, code, said):
    am("remember", "Redis Streams carry the webhook queue", "--type", "decision", check=0)
    p = am(*args)
    assert p.returncode == code and said in p.stderr and "Traceback" not in p.stderr, p.stderr
    if code == 2:
        assert p.stderr.startswith("usage: agentmem %s " % args[0])         # that command's usage


def test_a_type_of_the_store_s_own_is_a_type_and_a_misspelt_one_is_refused(store):
    p = am("remember", "Tabs, not spaces.", "--type", "convnetion")
    assert p.returncode == 1 and "unknown type 'convnetion': did you mean 'convention'?" in p.stderr
    assert not store.exists() or am("list", check=0).stdout.strip() == ""   # nothing saved
    (store / "memories").mkdir(parents=True)
    (store / "memories" / "team.md").write_text("## runbook · rb000001\nRestart the worker: make restart\n")
    am("remember", "Runbook: rotate the logs with make rotate", "--type", "runbook", check=0)
    assert "make rotate" in am("recall", "rotate logs", "--type", "runbook", check=0).stdout


def test_a_text_too_long_for_a_memory_is_refused_and_a_long_one_is_shown_cut(store):
    p = am("remember", "-", input="x " * 9000)
    assert p.returncode == 1 and "a memory holds at most 16384" in p.stderr
    assert not (store / "memories").exists()
    am("remember", "-", input="The deploy checklist: " + "check the dashboards, " * 300, check=0)
    out = am("recall", "deploy checklist", check=0).stdout
    assert len(out) < 3000 and "characters more: agentmem show" in out


def test_sections_only_look_back():
    """A section of agentmem.py names only what an earlier section (or itself) defines."""
    import ast
    text = open(AGENTMEM, encoding="utf-8").read()
    lines = text.split("\n")
    starts = [i + 1 for i in range(len(lines) - 2) if lines[i].startswith("####") and
              lines[i + 1].startswith("# ") and lines[i + 2].startswith("####")]

    def section(lineno):
        return sum(1 for s in starts if s <= lineno)
    tree = ast.parse(text)
    defined = {}
    for node in tree.body:
        targets = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else \
            [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        for name in targets:
            defined.setdefault(name, section(node.lineno))
    later = sorted({(section(node.lineno), sub.id) for node in tree.body for sub in ast.walk(node)
                    if isinstance(sub, ast.Name) and defined.get(sub.id, 0) > section(node.lineno)})
    assert len(starts) >= 12 and later == []


def test_every_public_definition_has_a_docstring_and_store_lists_its_plumbing():
    import ast
    tree = ast.parse(open(AGENTMEM, encoding="utf-8").read())
    missing = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            if not ast.get_docstring(node):
                missing.append(node.name)
            for sub in getattr(node, "body", []) if isinstance(node, ast.ClassDef) else []:
                if isinstance(sub, ast.FunctionDef) and not sub.name.startswith("_") and \
                        not ast.get_docstring(sub):
                    missing.append("%s.%s" % (node.name, sub.name))
    assert missing == []
    store_methods = [n for n in dir(agentmem.Store) if not n.startswith("_")]
    assert all(name in agentmem.__doc__ for name in store_methods), \
        [n for n in store_methods if n not in agentmem.__doc__]


def test_the_index_ranks_and_knows_nothing_of_the_store():
    import ast
    tree = ast.parse(open(AGENTMEM, encoding="utf-8").read())
    [index] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_Index"]
    touched = {sub.attr for sub in ast.walk(index) if isinstance(sub, ast.Attribute) and
               isinstance(sub.value, ast.Name) and sub.value.id == "self"}
    names = {sub.id for sub in ast.walk(index) if isinstance(sub, ast.Name)}
    assert "store" not in touched and "Store" not in names
    assert not {"stale", "unmerged", "_hash_cache", "_used_times"} & {
        sub.attr for sub in ast.walk(index) if isinstance(sub, ast.Attribute)}


def test_a_hook_s_process_ends_once_its_whole_output_is_out_and_a_library_call_returns(store, monkeypatch, capsys):
    """A hook's process leaves without the interpreter's teardown; what it printed is flushed
    first (stdout is a pipe: block-buffered), and main() called as a library never exits."""
    s = agentmem.open_store()  # the notes, saved as `remember` saves them (no process each)
    for i in range(40):
        s.remember("Deploys go through the blue-green script number %d, never by hand" % i, "convention")
    s.close()
    start = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": str(store)})
    p = am("inject", input=start, check=0)
    told = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]   # all of it, or no JSON
    fence = told.split(" agentmem-notes")[0].split("\n")[-1]
    assert fence.startswith("```") and told.rstrip().endswith(fence) and "blue-green" in told
    prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "blue-green deploys", "cwd": str(store)})
    monkeypatch.setattr(sys, "stdin", io.StringIO(prompt))
    assert agentmem.main(["inject", "--prompt"]) == 0        # still here: the caller's process goes on
    capsys.readouterr()
