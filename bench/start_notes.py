#!/usr/bin/env python3
"""What every session starts with, on many projects: each note told at SessionStart, to read.

usage: bench/start_notes.py [NOISE_DIR] [--half 1|2] [--jobs N]

NOISE_DIR (default ../shared/data/noise) holds real sessions of many projects and their
prompts.jsonl (see ../shared/bench/noise_public.py). Each project's transcripts are captured,
in name order, into a fresh store of its own, as the Stop hook would; then the store is asked
`inject --explain` from a folder outside any git repository (no branch, no changed files: what
every session of it starts with). Every note is printed, TOLD with the thing it names and what
it says of it, HELD with why it does not stand on its own, to be read one by one.

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


def explain(name, paths, work):
    """(name, [rows of inject --explain --format json], tokens of the SessionStart block)."""
    root = os.path.join(work, name)
    os.makedirs(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "ANTHROPIC_"))}
    env["AGENTMEM_DIR"] = os.path.join(root, ".agentmem")
    for path in paths:
        subprocess.run(
            [sys.executable, AGENTMEM, "capture", "--no-llm", "--transcript", path],
            env=env, cwd=root, capture_output=True, check=False,
        )
    run = [sys.executable, AGENTMEM, "inject"]
    told = subprocess.run(run + ["--format", "text"], env=env, cwd=root, input="{}",
                          capture_output=True, text=True, check=False).stdout
    rows = subprocess.run(run + ["--explain", "--format", "json"], env=env, cwd=root,
                          capture_output=True, text=True, check=False).stdout
    return name, json.loads(rows or "[]"), len(told) // 4


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", default=NOISE)
    ap.add_argument("--half", type=int, choices=(1, 2))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="agentmem-start-")
    total = {"told": 0, "digests": 0, "held": 0, "most": 0, "tokens": 0}
    try:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            chosen = list(projects(a.folder).items())
            chosen = chosen[a.half - 1 :: 2] if a.half else chosen
            jobs = [pool.submit(explain, n, p, work) for n, p in chosen]
            for job in jobs:
                name, rows, tokens = job.result()
                told = [r for r in rows if r["verdict"] == "told"]
                digests = sum(r["type"] == "summary" for r in told)
                held = sum(r["verdict"] == "held" for r in rows)
                print("== %s: told %d (digests %d), held %d, %d tokens"
                      % (name, len(told), digests, held, tokens))
                for r in rows:
                    head = "names %s: %s" % (r["names"], r["says"]) if r["names"] else r["says"]
                    print("  %-4s [%s · %s] %s\n       %s"
                          % (r["verdict"].upper(), r["id"], r["type"], head, r["text"]))
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
