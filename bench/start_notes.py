#!/usr/bin/env python3
"""What every session starts with, on many projects: each note told at SessionStart, to read.

usage: bench/start_notes.py [NOISE_DIR] [--half 1|2] [--turns] [--blocks] [--jobs N]

NOISE_DIR (default ../shared/data/noise) holds real sessions of many projects and their
prompts.jsonl (see ../shared/bench/noise_public.py). Each project's transcripts are captured,
in name order, into a fresh store of its own, as the Stop hook would; then the store is asked
`inject --explain` from a folder outside any git repository (no branch, no changed files: what
every session of it starts with). Every note is printed, TOLD with the thing it names and what
it says of it, HELD with why it does not stand on its own, to be read one by one.

--turns   capture each transcript as the hooks do, a turn at a time: cut at each of the
          person's prompts (a Claude record of the person's text, a Codex user message), run
          `capture --sync` with a Stop hook's JSON after each cut, then a SessionEnd.
--blocks  print each store's SessionStart block as told, after its notes.
--half H  only one half of the projects (1: the 1st, 3rd, ... project in name order; 2: the
          others): read one half while changing the code, and check on the other.

Per store: `== NAME: told T (digests D), held H, N tokens`. Last line:
  start notes: S stores, told T (digests D), held H, most told in one store M, largest N tokens
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
AGENTMEM = os.path.join(os.path.dirname(HERE), "agentmem.py")
NOISE = os.path.join(os.path.dirname(HERE), "..", "shared", "data", "noise")


def projects(folder):
    """{project: [transcript paths]} of prompts.jsonl's lines, files in name order (a project
    is its "project", else the file's name without a session's number or id: "-2", "-1a2b3c4d")."""
    out = {}
    with open(os.path.join(folder, "prompts.jsonl"), encoding="utf-8") as f:
        for line in filter(str.strip, f):
            x = json.loads(line)
            path = os.path.join(folder, "transcripts", x["file"])
            stem = os.path.splitext(os.path.basename(x["file"]))[0]
            if os.path.exists(path):
                name = x.get("project") or re.sub(r"-(\d+|[0-9a-f]{8})$", "", stem)
                out.setdefault(name, []).append(path)
    return {k: sorted(v) for k, v in sorted(out.items())}


def prompt_lines(lines):
    """The indexes of a transcript's lines that open a turn: the person's prompt (Claude Code's
    record of the person's text, or a Codex user message)."""
    out = []
    for i, line in enumerate(lines):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        payload, msg = d.get("payload") or {}, d.get("message") or {}
        said = isinstance(msg.get("content"), str)
        claude = d.get("type") == "user" and not d.get("isSidechain") and said
        codex = payload.get("type") == "message" and payload.get("role") == "user"
        if i and (claude or codex):
            out.append(i)
    return [_turn_start(lines, i) for i in out]


def _turn_start(lines, i):
    """Where the turn of the prompt at line i starts: a Codex turn opens before its prompt, with
    the harness's own lines (task_started, turn_context, developer messages)."""
    while i > 1:
        try:
            d = json.loads(lines[i - 1])
        except ValueError:
            break
        p = d.get("payload") or {}
        if not (p.get("type") == "task_started" or d.get("type") == "turn_context"
                or p.get("role") == "developer"):
            break
        i -= 1
    return i


def play_turns(path, n, root, env):
    """Capture one transcript as the hooks do: a Stop after each turn, then a SessionEnd."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        lines = f.read().splitlines(True)
    cut = os.path.join(root, "turns", os.path.basename(path))
    os.makedirs(os.path.dirname(cut), exist_ok=True)
    ends = prompt_lines(lines) + [len(lines)]
    for end, event in zip(ends + [len(lines)], ["Stop"] * len(ends) + ["SessionEnd"]):
        with open(cut, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write("".join(lines[:end]))
        hook = {"session_id": "s%d" % n, "transcript_path": cut, "cwd": root,
                "hook_event_name": event}
        subprocess.run([sys.executable, AGENTMEM, "capture", "--sync", "--no-llm"], env=env,
                       cwd=root, input=json.dumps(hook), capture_output=True, text=True,
                       check=False)


def explain(name, paths, work, turns=False):
    """(name, [rows of inject --explain --format json], the SessionStart block)."""
    root = os.path.join(work, name)
    os.makedirs(root)
    own = ("AGENTMEM_", "ANTHROPIC_", "CLAUDE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    env["AGENTMEM_DIR"] = os.path.join(root, ".agentmem")
    for n, path in enumerate(paths):
        if turns:
            play_turns(path, n, root, env)
            continue
        subprocess.run(
            [sys.executable, AGENTMEM, "capture", "--no-llm", "--transcript", path],
            env=env, cwd=root, capture_output=True, check=False,
        )
    run = [sys.executable, AGENTMEM, "inject"]
    told = subprocess.run(run + ["--format", "text"], env=env, cwd=root, input="{}",
                          capture_output=True, text=True, check=False).stdout
    rows = subprocess.run(run + ["--explain", "--format", "json"], env=env, cwd=root,
                          capture_output=True, text=True, check=False).stdout
    return name, json.loads(rows or "[]"), told


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", default=NOISE)
    ap.add_argument("--half", type=int, choices=(1, 2))
    ap.add_argument("--turns", action="store_true")
    ap.add_argument("--blocks", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="agentmem-start-")
    total = {"told": 0, "digests": 0, "held": 0, "most": 0, "tokens": 0}
    try:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            chosen = list(projects(a.folder).items())
            chosen = chosen[a.half - 1 :: 2] if a.half else chosen
            jobs = [pool.submit(explain, n, p, work, a.turns) for n, p in chosen]
            for job in jobs:
                name, rows, block = job.result()
                tokens = len(block) // 4
                told = [r for r in rows if r["verdict"] == "told"]
                digests = sum(r["type"] == "summary" for r in told)
                held = sum(r["verdict"] == "held" for r in rows)
                print("== %s: told %d (digests %d), held %d, %d tokens"
                      % (name, len(told), digests, held, tokens))
                for r in rows:
                    head = "names %s: %s" % (r["names"], r["says"]) if r["names"] else r["says"]
                    print("  %-4s [%s · %s] %s\n       %s"
                          % (r["verdict"].upper(), r["id"], r["type"], head, r["text"]))
                if a.blocks:
                    print(block)
                total["told"] += len(told)
                total["digests"] += digests
                total["held"] += held
                total["most"] = max(total["most"], len(told))
                total["tokens"] = max(total["tokens"], tokens)
        print("start notes: %d stores, told %d (digests %d), held %d, most told in one store %d,"
              " largest %d tokens" % (len(jobs), total["told"], total["digests"], total["held"],
                                      total["most"], total["tokens"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
