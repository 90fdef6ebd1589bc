#!/usr/bin/env python3
"""The two inject hooks on a large store, as ratios to `python -c pass` in the same run.

usage: bench/hook_bench.py N [--shared ../shared] [--runs 21] [--sessions COPIES]

Builds N memories the way ../shared/bench/scale_eval.py does (its corpus of the standard
library's docstrings) and imports them into a fresh store, or, with --sessions, captures
the shared transcripts COPIES times over (each copy's long words varied, so no copy repeats
another's vocabulary: a store of the sessions' words, 12 x COPIES sessions) and prompts with
the tasks of inject_public.py; then, alternating with the
floor so a busy machine weighs on all three alike, times as whole processes the hook
commands `install` writes (agentmem imported as a module, its bytecode cached): the
SessionStart hook (`inject`) and the UserPromptSubmit hook (`inject --prompt`) with natural
prompts. Prints medians, and the milliseconds each hook takes beyond the floor (the ratio
depends on what the interpreter's own start costs on the machine: site-packages, .pth files).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)
PROMPTS = (
    "Add a retry with exponential backoff to the HTTP client when the server returns 503",
    "Why does the socket close before the handshake finishes?",
    "Refactor the argument parser so that subcommands share their common options",
)


def timed(cmd, env, stdin=None):
    t = time.perf_counter()
    subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env)
    return time.perf_counter() - t


def varied(src, dst, copy):
    """A transcript whose prose (strings of 40 characters or more) has each word of eight
    letters or more changed for this copy; keys and short values stay as they are."""
    import re

    def vary(x):
        if isinstance(x, str) and len(x) >= 40:
            return re.sub(r"[A-Za-z]{8,}", lambda m: m.group(0) + "q%d" % copy, x)
        if isinstance(x, list):
            return [vary(v) for v in x]
        if isinstance(x, dict):
            return {k: vary(v) for k, v in x.items()}
        return x

    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for line in f:
            try:
                out.write(json.dumps(vary(json.loads(line))) + "\n")
            except ValueError:
                out.write(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("--shared", default=os.path.join(PROJECT, "..", "shared"))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--sessions", type=int, default=0, metavar="COPIES")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(a.shared), "bench"))
    import scale_eval  # the corpus the other speed figures are measured on

    work = tempfile.mkdtemp(prefix="agentmem-hooks-")
    try:
        env = dict(os.environ, AGENTMEM_DIR=os.path.join(work, "store"))
        for k in (
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "AGENTMEM_LLM_URL",
            "AGENTMEM_LLM_PROVIDER",
        ):
            env.pop(k, None)
        am = [
            sys.executable,
            "-c",
            "import sys; sys.dont_write_bytecode = False; sys.path.insert(0, %r); "
            "import agentmem; sys.exit(agentmem.main())" % PROJECT,
        ]
        prompts = PROMPTS
        if a.sessions:
            import inject_public

            prompts = [task for _owner, task, _groups in inject_public.TASKS]
            for copy in range(a.sessions):
                for name in inject_public.SESSIONS:
                    path = os.path.join(work, "copy%d-%s" % (copy, os.path.basename(name)))
                    varied(os.path.join(a.shared, "data", "transcripts", name), path, copy)
                    subprocess.run(
                        am + ["capture", "--transcript", path], capture_output=True, env=env
                    )
        else:
            src = os.path.join(work, "mem.jsonl")
            with open(src, "w") as f:
                for m in scale_eval.make_memories(a.n):
                    f.write(json.dumps(m) + "\n")
            subprocess.run(am + ["import", src], capture_output=True, env=env, check=True)
        subprocess.run(am + ["recall", "warm the index"], capture_output=True, env=env)
        start = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": work})
        floor, begin, prompt = [], [], []
        for i in range(a.runs):
            floor.append(timed([sys.executable, "-c", "pass"], env))
            begin.append(timed(am + ["inject"], env, start))
            hook = {
                "hook_event_name": "UserPromptSubmit",
                "prompt": prompts[i % len(prompts)],
                "cwd": work,
            }
            prompt.append(timed(am + ["inject", "--prompt"], env, json.dumps(hook)))
        f, s, p = (statistics.median(x) for x in (floor, begin, prompt))
        print(
            "floor(python -c pass) %.3fs | SessionStart inject %.3fs (%.2fx, +%.0f ms) | "
            "prompt inject %.3fs (%.2fx, +%.0f ms)"
            % (f, s, s / f, (s - f) * 1000, p, p / f, (p - f) * 1000)
        )
        what = "%d sessions" % (12 * a.sessions) if a.sessions else "N=%d" % a.n
        print("hook-bench %s: session-start %.2fx floor, prompt %.2fx floor" % (what, s / f, p / f))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
