"""Commands stage: what the session's shell commands proved. How to work here, a failure and
what fixed it, what still fails, what the environment refused or warned of on every run."""
import agentmem
from agentmem import Event


def ran(*steps):
    """Events of shell commands: (command, output, ok) and ("edit", file) / ("say", text)."""
    events, n = [], 0
    for step in steps:
        n += 1
        if step[0] == "edit":
            events.append(Event("call", step[1], tool="Edit", files=[step[1]], ref="e%d" % n))
        elif step[0] == "say":
            events.append(Event("assistant", step[1]))
        else:
            command, output, ok = step
            events.append(Event("call", command, tool="Bash", ref="c%d" % n))
            events.append(Event("result", output, tool="Bash", ok=ok, ref="c%d" % n))
    return events


def learned(events, final=True):
    ledger = agentmem._Commands({})
    for ev in events:
        ledger.event(ev)
    return [(m.type, m.text) for m in ledger.memories(final)]


def test_the_command_of_each_kind_that_passed_is_how_to_work_here():
    mems = learned(ran(("npm run test:unit -- test/a.test.ts -t 'x' 2>&1 | tail -5", "ok 3 passed", True),
                       ("npm run test:unit", "ok 40 passed", True),
                       ("cd web && npm run lint:check", "no problems", True),
                       ("git status", "clean", True),
                       ("node --version", "v24.1.0", True),
                       ("python -c 'import app; print(app.VERSION)'", "1.2", True),
                       ("python3 -X importtime -c 0", "import time: 12 | 12 | site", True)))
    assert mems == [("fact", "Commands that passed here: lint `cd web && npm run lint:check`; "
                             "test `npm run test:unit`.")]   # the broader form; no git, version or probe


def test_a_command_is_labelled_by_the_role_it_plays_never_by_what_it_is_run_on():
    mems = learned(ran(("grep -rn test src", "src/a.py:3: test", True),
                       ("rm cache.test.old", "", True),
                       ("test -f build.lock", "", True),
                       ("which -a node", "/usr/bin/node", True),
                       ("python3 -m tox --version", "tox 4.11.3", True),
                       ("make build", "ok", True)))
    assert mems == [("fact", "Commands that passed here: build `make build`.")]
    # a long flag's named value (a session, a package) says nothing of what the command does
    named = learned(ran(("npx shotter --profile web-dev capture -o a.png", "saved", True),
                        ("pnpm --filter site-build lint", "clean", True)))
    assert named == [("fact", "Commands that passed here: lint `pnpm --filter site-build lint`.")]


def test_a_failure_fixed_by_an_edit_is_a_bug_with_its_error_cause_and_files():
    mems = learned(ran(("uv run app --help", "Traceback (most recent call last):\n  File x\n"
                                             "TypeError: 'Router' object is not callable", False),
                       ("say", "The entry point calls the server object instead of a main function."),
                       ("edit", "src/app/__main__.py"),
                       ("uv run app --help", "ImportError: cannot import name 'cli'", False),
                       ("edit", "pyproject.toml"),
                       ("uv run app --help", "usage: app [OPTIONS]", True)))
    [(kind, text)] = [m for m in mems if m[0] == "bug"]
    assert text.startswith("`uv run app --help` crashed: TypeError: 'Router' object is not callable; "
                           "then ImportError: cannot import name 'cli'.")   # both errors it got past
    assert "`src/app/__main__.py`, `pyproject.toml`; then it passed." in text


def test_each_error_a_command_got_past_is_told_with_its_own_cause_never_another_s():
    mems = learned(ran(("pytest tests/test_report.py", "E   KeyError: 'totals'", False),
                       ("say", "The report fails because the totals key was renamed to summary in the "
                               "loader."),
                       ("edit", "report/loader.py"),
                       ("pytest tests/test_report.py", "E   ZeroDivisionError: division by zero", False),
                       ("say", "The division by zero is caused by an empty month having no orders."),
                       ("edit", "report/stats.py"),
                       ("pytest tests/test_report.py", "4 passed", True)))
    first, second = [text for kind, text in mems if kind == "bug"]
    assert "KeyError: 'totals'. The report fails because the totals key was renamed" in first
    assert "`report/loader.py`; then it failed with another error." in first
    assert "ZeroDivisionError" not in first and "KeyError" not in second
    assert "ZeroDivisionError: division by zero. The division by zero is caused by an empty month" in second
    assert second.endswith("`report/stats.py`; then it passed.")


def test_a_lint_complaint_fixed_once_is_routine_and_an_unproven_fix_is_not_still_failing():
    assert learned(ran(("ruff check src/", "F401 `os` imported but unused", False), ("edit", "src/a.py"),
                       ("ruff check src/", "All checks passed!", True))) == \
        [("fact", "Commands that passed here: lint `ruff check src/`.")]
    assert learned(ran(("pytest tests/test_hooks.py", "FAILED tests/test_hooks.py::test_retry", False),
                       ("say", "Fixed the flaky test by giving each worker its own tmp_path."))) == []
    # what is still to be fixed is no claim that it was: the failure stands ("be fixed": to come)
    for said in ("The retry test still has errors in its fixtures that need to be fixed; the client "
                 "change itself is complete.", "The hooks test will be resolved once the fixture lands."):
        assert learned(ran(("pytest tests/test_hooks.py", "FAILED tests/test_hooks.py::test_retry", False),
                           ("say", said))) == [
            ("todo", "Still failing when the session ended: `pytest tests/test_hooks.py`: "
                     "FAILED tests/test_hooks.py::test_retry.")], said


def test_what_still_fails_at_the_end_is_an_open_todo_and_only_then():
    steps = ran(("uv run mypy src/", 'src/config.py:6: error: Cannot find implementation or library '
                                     'stub for module named "tomli_w"  [import-not-found]', False))
    assert learned(steps, final=False) == []
    assert learned(steps) == [("todo", "Still failing when the session ended: `uv run mypy src/`: src/config.py:6: "
                                       'error: Cannot find implementation or library stub for module named '
                                       '"tomli_w" [import-not-found].')]
    # what the agent is about to run ("...: " before its call) claims no fix
    about_to = steps + ran(("say", "Now let me run the type check again to verify the stub errors are fixed:"))
    assert [t for t, _x in learned(about_to)] == ["todo"]
    passed_later = steps + ran(("uv run mypy src/", "Success: no issues found", True))
    assert [t for t, _x in learned(passed_later)] == ["fact"]
    # an error that quotes back what the command was given refuses how it was run, not the code
    for command, error in (("ruff check --select QX901 src/", "error: invalid value 'QX901' for '--select'"),
                           ("cargo test -p enginee", "error: package ID specification `enginee` did not "
                                                     "match any packages")):
        assert learned(ran((command, error, False))) == [], command


def test_a_command_the_sandbox_stopped_never_ran_so_it_is_not_still_failing():
    denied = "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, exit code: 1"
    assert learned(ran(("cargo test --workspace", denied, False))) == []
    turned_down = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if "
                   "it was a file edit, the new_string was NOT written to the file).")
    assert learned(ran(("cargo test --workspace", turned_down, False))) == []   # nor one the person refused
    assert learned(ran(("cargo test --workspace", "error[E0425]: cannot find value `port`", False))) == [
        ("todo", "Still failing when the session ended: `cargo test --workspace`: "
                 "error[E0425]: cannot find value `port`.")]


def test_a_run_piped_into_head_shows_its_start_only_so_its_pass_is_unproven():
    """A pipe's status is its last program's: `| head` exits 0 whatever ran before it, and when
    it cut the output, shows only its start, where a summary never is; an error shown there is a
    failure, and an output shorter than head's cut was seen whole."""
    warnings = "\n".join("warning: unused import: `std::fs%d`" % n for n in range(20))
    assert learned(ran(("cargo clippy --all-targets 2>&1 | head -20", warnings, True))) == []
    assert learned(ran(("cargo clippy --all-targets 2>&1 | head -n 50", warnings, True))) == [
        ("fact", "Commands that passed here: lint `cargo clippy --all-targets`.")]
    assert learned(ran(("cargo clippy --all-targets 2>&1 | head -20", "error[E0425]: cannot find value "
                                                                      "`port` in this scope", True))) == [
        ("todo", "Still failing when the session ended: `cargo clippy --all-targets`: error[E0425]: "
                 "cannot find value `port` in this scope.")]
    assert learned(ran(("cargo clippy --all-targets 2>&1 | tail -3", "Finished dev profile", True))) == [
        ("fact", "Commands that passed here: lint `cargo clippy --all-targets`.")]


def test_a_run_the_harness_cut_off_says_so_beside_the_error_it_printed_first():
    cut = ("Command timed out after 2m 0.0s\n\nRunning 640 tests using 4 workers\n"
           "  1) checkout.spec.ts:41:5 > pays with a saved card\n    Error: expect(received).toBe(expected)")
    assert learned(ran(("npx playwright test", cut, False))) == [
        ("todo", "Still failing when the session ended: `npx playwright test`: Command timed out "
                 "after 2m 0.0s; Error: expect(received).toBe(expected).")]


def test_what_still_fails_is_told_by_its_error_never_by_a_warning_printed_on_the_way():
    warned = 'npm warn Unknown env config "store-dir". This will stop working in the next major version.\n'
    bracketed = warned + "\n> Build error occurred\n[TypeError: render is not a function]\n\n> next build"
    assert learned(ran(("npm run build", bracketed, False))) == [
        ("todo", "Still failing when the session ended: `npm run build`: "
                 "[TypeError: render is not a function].")]
    unexplained = warned + "Something odd happened while bundling the pages"
    assert learned(ran(("npm run build", unexplained, False))) == [
        ("todo", "Still failing when the session ended: `npm run build`: "
                 "Something odd happened while bundling the pages.")]


def test_the_environment_said_twice_or_on_every_run_is_a_fact_and_a_one_off_is_not():
    refused = "Bash operation blocked by hook:\n- [guard.py]: BLOCKED: rm outside the work tree"
    mems = learned(ran(("rm a.js", refused, False), ("rm -f a.js", refused, False)))
    assert mems == [("fact", "`rm -f a.js` was refused here: Bash operation blocked by hook: - [guard.py]: "
                             "BLOCKED: rm outside the work tree.")]
    assert learned(ran(("rm a.js", refused, False))) == []
    warn = "(!) protoc version check: plugin v1.4.2 is older than protoc v1.5.0\n(✓) Complete"
    every = ran(*[("buf generate", warn, True)] * 3)
    assert ("fact", "`buf generate` warns on every run: (!) protoc version check: plugin v1.4.2 is "
                    "older than protoc v1.5.0.") in learned(every)
    fixed = every + ran(("buf generate", "(✓) Complete", True))
    assert all("warns" not in text for _t, text in learned(fixed))   # gone by the end
    # printed by one command, then by another on each of its runs: the later one warns
    other = ran(("buf generate", warn, True), *[("make lint", warn, True)] * 2)
    assert ("fact", "`make lint` warns on every run: (!) protoc version check: plugin "
                    "v1.4.2 is older than protoc v1.5.0.") in learned(other)
    cured = other + ran(("make lint", "(✓) Complete", True))
    assert all("warns" not in text for _t, text in learned(cured))
    # a warning on the working tree itself is this checkout's state: a file in it is the project's
    for said, kept in (("warning: Git tree '/srv/shop' is dirty", False),
                       ("warning: '/srv/shop/flake.lock' pins an old nixpkgs", True)):
        ledger = agentmem._Commands({}, "/srv/shop")
        for ev in ran(*[("nix build", said + "\nbuilt", True)] * 3):
            ledger.event(ev)
        assert any("warns on every run" in m.text for m in ledger.memories(True)) is kept, said


def test_a_missing_program_is_a_fact_with_the_command_that_ran_it_anyway():
    mems = learned(ran(("cargo build --release", "zsh:1: command not found: cargo", False),
                       ("mise exec -- cargo build --release", "", True)))
    assert ("fact", "`cargo` is not on the PATH here; it runs as `mise exec -- cargo build --release`.") in mems
    # the same program run from a folder of the project is no other way to run it
    moved = learned(ran(("cargo build", "zsh:1: command not found: cargo", False), ("cd engine && cargo build", "", True)))
    assert not any("runs as" in text for _t, text in moved)
    # a package named after the program (asdf's `ruby@3.3`) is no way to run it
    asked = learned(ran(("ruby -v", "bash: ruby: command not found", False), ("asdf where ruby@3.3", "/opt", True)))
    assert not any("PATH" in text for _t, text in asked)
    assert learned(ran(("make lint", "lint: line 12: shellcheck: command not found", False))) == [
        ("fact", "`shellcheck` is not installed here: `make lint` said "
                 "`shellcheck: command not found`.")]
    # a page that quotes the error is no error: the run that printed it passed
    readme = "## Troubleshooting\n### `claude: command not found`\nReopen the terminal."
    assert learned(ran(("sed -n 1,160p README.md", readme, True))) == []
    assert learned(ran(("shellcheck 2>&1 | tail -3", "shellcheck: command not found", True)))
    # a patch handed to a shell: its "***" matched the folder's files, which bash then ran
    patch = "bash -lc '*** Begin Patch\n*** Update File: NOTES.md\n+a line\n*** End Patch'"
    assert learned(ran((patch, "bash: line 1: NOTES.md: command not found", False))) == []
    assert learned(ran(("[ -d src ] && rg -n TODO src", "bash: rg: command not found", False))) == [
        ("fact", "`rg` is not installed here: `[ -d src ] && rg -n TODO src` said `rg: command not found`.")]


def test_chains_pipes_wrappers_and_code_mode_are_read_as_the_shell_reads_them():
    assert agentmem._command_segments("bash -lc 'cd app && npm test 2>&1 | tail -3'") == \
        [(["npm", "test"], True)]
    assert agentmem._command_key(["git", "commit", "-m", "Fix: a && b"]) == "git commit"
    assert agentmem._command_kind("git commit") == "" and agentmem._command_kind("rm rollup.js") == ""
    mems = learned(ran(("cargo fmt --all && cargo check", "error[E0433]: cannot find crate `uuid`", None),
                       ("edit", "Cargo.toml"),
                       ("cargo run -p app -- bench", "done in 371 ms", True)))
    assert [t for t, _x in mems] == ["fact"]   # cargo run compiled it: the check no longer fails


def test_a_captured_session_tells_its_commands_at_the_next_start(tmp_path, store):
    import json
    from conftest import am
    from sessions import hook_json, render_claude
    steps = [("user", "Get the checks green."),
             ("tool", "Bash", {"command": "npm run check:format"}, "[warn] src/a.ts\nCode style issues found", True),
             ("tool", "Edit", {"file_path": "/home/dev/shop/src/a.ts"}, "ok"),
             ("tool", "Bash", {"command": "npm run check:format"}, "All matched files use Prettier code style!", False),
             ("tool", "Bash", {"command": "npm run test:unit"}, "Tests: 40 passed", False),
             ("assistant", "Formatting and tests pass now.")]
    path = tmp_path / "s.jsonl"
    path.write_text(render_claude(steps, "sess-cmd"), encoding="utf-8")
    am("capture", "--sync", input=hook_json("sess-cmd", path), check=0)
    start = am("inject", "--format", "text", input=json.dumps({"hook_event_name": "SessionStart"})).stdout
    assert "## How to work here" in start and "a command that ran" in start
    assert "format `npm run check:format`; test `npm run test:unit`" in start


def test_a_command_that_passed_is_told_whole_as_it_ran_only_what_differs_per_run_folded():
    def told(command):
        return learned(ran((command, "ok", True)))
    # its files and its script are what it ran on: without them the note runs nothing
    assert told("python3 -m py_compile src/ledger.py src/report.py") == [
        ("fact", "Commands that passed here: run `python3 -m py_compile src/ledger.py src/report.py`.")]
    assert told("timeout 20 bun run scripts/seed-db.ts --rows 50") == [
        ("fact", "Commands that passed here: run `timeout 20 bun run scripts/seed-db.ts --rows 50`.")]
    # installing what the project declares is how a clone is set up; adding a package, or one
    # for the whole machine, is a change made once
    assert told("pip install -r requirements-dev.txt") == [
        ("fact", "Commands that passed here: install `pip install -r requirements-dev.txt`.")]
    for once in ("npm i @acme/charts date-fns --save", "pip install rich -q", "npm -g install serve",
                 "brew install ripgrep"):
        assert told(once) == [], once
    # a value of one digit is the command's, not a stream a redirection takes (2>&1)
    assert told("cargo run -p crawler -- crawl --depth 1 --pages 6 2>&1 | tail -20") == [
        ("fact", "Commands that passed here: run `cargo run -p crawler -- crawl --depth 1 --pages 6`.")]
    # a temp folder and an id are this run's own: folded, the rest kept
    assert told("pytest tests/unit --basetemp=/tmp/pytest-of-kim/run-3 -k 'ledger and not slow'") == [
        ("fact", "Commands that passed here: test `pytest tests/unit --basetemp=<tmp> -k 'ledger and not slow'`.")]
    assert told("npm run test:e2e -- --trace-id 0b7e4c1a-93f2-4d8e-a6b5-2c9d1e8f7a30") == [
        ("fact", "Commands that passed here: test `npm run test:e2e -- --trace-id <id>`.")]
    # a script in someone's home folder runs on one machine only; one too long to show whole
    # is not shown cut
    assert told("uv run /home/kim/.config/hooks/notify.py --title build") == []
    assert told("node scripts/render.js " + " ".join("pages/p%d.md" % n for n in range(30))) == []


def test_a_command_the_sandbox_refused_never_ran_so_it_is_no_start_note_but_the_session_keeps_it(tmp_path, store):
    import json
    from conftest import am
    from sessions import render_codex
    denied = ("failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 1, "
              "stdout: , stderr: OSError: [Errno 1] Operation not permitted: '/home/dev/.cache/uv'")
    steps = [("user", "Check that the importer still works."),
             ("assistant", "Running the importer's tests."),
             *[("tool", "shell", {"command": "PYTHONPATH=. pytest -q tests/test_importer.py"}, denied)] * 2,
             ("assistant", "The sandbox keeps the cache folder closed; asking to run it outside."),
             ("tool", "shell", {"command": "PYTHONPATH=. pytest -q tests/test_importer.py"}, "9 passed in 1.2s"),
             ("assistant", "The importer's 9 tests pass.")]
    lines = [json.loads(x) for x in render_codex(steps, "sess-sbx").splitlines()]
    for x in lines:   # Codex gives the sandbox's verdict as the whole output, no exit code
        if "failed in sandbox" in x["payload"].get("output", ""):
            x["payload"]["output"] = denied
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    am("capture", "--transcript", str(path), check=0)
    start = am("inject", "--format", "text", input=json.dumps({"hook_event_name": "SessionStart"})).stdout
    assert "refused" not in start and "sandbox" not in start
    assert "test `PYTHONPATH=. pytest -q tests/test_importer.py`" in start       # it passed, later
    session = "".join(p.read_text(encoding="utf-8") for p in (store / "sessions").glob("*.md"))
    assert "Running the importer's tests.\n\n(then ran `PYTHONPATH=. pytest -q tests/test_importer.py`)" in session


def test_a_script_given_as_a_here_document_is_never_told_cut():
    script = "python3 - <<'PY'\nfrom app import settings\nprint(settings.DATABASE_URL)\nPY"
    refused = "Bash operation blocked by hook:\n- [guard.py]: BLOCKED: reading settings needs approval"
    assert learned(ran((script, refused, False), (script, refused, False))) == []
    missing = "bash: line 1: python3: command not found"
    assert learned(ran((script, missing, False))) == [
        ("fact", "`python3` is not installed here: `python3` said `python3: command not found`.")]


def test_a_program_not_on_the_path_is_held_as_this_machine_s_state_like_one_not_installed(tmp_path, store):
    import json
    from conftest import am
    from sessions import hook_json, render_claude
    steps = [("user", "Lint and test the parser."),
             ("tool", "Bash", {"command": "ruff check parser/"}, "bash: ruff: command not found", True),
             ("tool", "Bash", {"command": "python3 -m ruff check parser/"}, "All checks passed!", False),
             ("tool", "Bash", {"command": "shellcheck scripts/release.sh"}, "bash: shellcheck: command not found", True),
             ("tool", "Bash", {"command": "python3 -m pytest tests/test_parser.py"}, "6 passed", False),
             ("assistant", "Lint is clean and the parser tests pass.")]
    path = tmp_path / "s.jsonl"
    path.write_text(render_claude(steps, "sess-path"), encoding="utf-8")
    am("capture", "--sync", input=hook_json("sess-path", path), check=0)
    rows = json.loads(am("inject", "--explain", "--format", "json", input="{}").stdout)
    said = {r["text"]: (r["verdict"], r["says"]) for r in rows}
    held = ("held", "one machine's state, not the project's")
    assert said["`ruff` is not on the PATH here; it runs as `python3 -m ruff check parser/`."] == held
    assert said["`shellcheck` is not installed here: `shellcheck scripts/release.sh` said "
                "`shellcheck: command not found`."] == held
    assert said["Commands that passed here: lint `python3 -m ruff check parser/`; "
                "test `python3 -m pytest tests/test_parser.py`."][0] == "told"


def test_a_command_run_in_a_folder_of_the_project_is_told_from_that_folder_in_every_agent(tmp_path):
    import json
    from sessions import render_claude, render_codex
    root = "/home/dev/shop"
    # Claude: the shell's folder is each record's cwd (a `cd` persists), or a `cd` in the line
    steps = [("user", "Get the web app building."),
             ("tool", "Bash", {"command": "npm install"}, "added 310 packages", False),
             ("tool", "Bash", {"command": "cd /home/dev/shop/api && make run-server"}, "listening on :8080", False),
             ("tool", "Bash", {"command": "cd /tmp/scratch && make"}, "ok", False)]
    lines = [json.loads(x) for x in render_claude(steps, "s-dir", cwd=root).splitlines()]
    for x in lines[2:4]:  # the first command's call and result ran in web/
        x["cwd"] = root + "/web"
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    events, info = agentmem.read_transcript(str(path))[:2]
    ledger = agentmem._Commands({}, cwd=info["cwd"])
    for ev in events:
        ledger.event(ev)
    assert [m.text for m in ledger.memories(True)] == [
        "Commands that passed here: install `cd web && npm install`; run `cd api && make run-server`."]
    # Codex: the folder a command is given (`workdir`), in code mode too
    script = 'const r = await tools.exec_command({"cmd":"cargo test","workdir":"%s/engine"});' % root
    path = tmp_path / "x.jsonl"
    rows = [json.loads(x) for x in render_codex([("user", "Run the engine's tests.")], "s-x", cwd=root).splitlines()]
    rows.append({"timestamp": "2026-11-20T09:01:00Z", "type": "response_item", "payload": {
        "type": "custom_tool_call", "call_id": "c9", "name": "exec", "input": script}})
    rows.append({"timestamp": "2026-11-20T09:01:00Z", "type": "response_item", "payload": {
        "type": "function_call_output", "call_id": "c9",
        "output": json.dumps({"output": "test result: ok. 12 passed", "metadata": {"exit_code": 0}})}})
    path.write_text("\n".join(map(json.dumps, rows)) + "\n")
    events, info = agentmem.read_transcript(str(path))[:2]
    ledger = agentmem._Commands({}, cwd=info["cwd"])
    for ev in events:
        ledger.event(ev)
    assert [m.text for m in ledger.memories(True)] == ["Commands that passed here: test `cd engine && cargo test`."]
