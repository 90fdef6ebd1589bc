#!/usr/bin/env python3
"""The prompt gate's numbers as a store grows: the null prompts' best passages and the tasks'.

usage: bench/gate_growth.py [--k 0,8,32] [--shared ../shared]

The stores of ../shared/bench/growth_public.py, rebuilt as it builds them: the first K noise
transcripts captured into a template, their dates moved back, then each of inject_public.py's
twelve projects captured over a copy of it. In each store, agentmem's own prompt gate
(_prompt_found, no floor) weighs every prompt of _NULL_PROMPTS as the calibration weighs it
and every task of its project; nothing is told, only measured:

  bar          the store's bar (_calibrate): the share at which null prompts get 1 note in 50
  null >= S    null prompts' notes (each its best three) whose share is S or more
  task share   the best share of a passage holding the task's fact (inject_public's groups),
               over the tasks whose fact the gate finds at all
  all words    notes whose passage says every word of the prompt that the store knows: a null
               prompt's whole answer, not a chance match of some of its words

One line a K: `K=k: bar mean M (min, max) | null notes >= 0.5 a store: median N, saying all
the prompt's words W | tasks found F, median share S, saying all the task's words T`. A score
whose null does not grow with the store keeps the first two where they are at K = 0 while the
tasks keep theirs (docs/ranking.md, the bar each store sets).
"""

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import agentmem  # noqa: E402

DATE = re.compile(r'"(\d{4})-(\d\d-\d\dT\d\d:\d\d)')


def capture(store, path, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "ANTHROPIC_"))}
    env["AGENTMEM_DIR"] = store
    cmd = [sys.executable, os.path.join(os.path.dirname(HERE), "agentmem.py"), "capture"]
    subprocess.run(cmd + ["--no-llm", "--transcript", path], env=env, cwd=cwd, capture_output=True)


def template(shared, k, work):
    """A store of the first k noise transcripts, their dates moved to 2019 (as growth_public)."""
    tmpl = os.path.join(work, "template-%d" % k)
    for f in sorted(glob.glob(os.path.join(shared, "data", "noise", "transcripts", "*", "*")))[:k]:
        old = os.path.join(work, os.path.basename(f))
        with open(f, encoding="utf-8", errors="surrogateescape") as src:
            text = DATE.sub(lambda m: '"2019-' + m.group(2), src.read())
        with open(old, "w", encoding="utf-8", errors="surrogateescape") as dst:
            dst.write(text)
        capture(tmpl, old)
        os.remove(old)
    return tmpl


def whole(passage, weights):
    """Whether a passage says every own word of the prompt that the store knows."""
    own = [i for i, (_w, forms, common) in enumerate(weights) if forms and not common]
    return len(agentmem._own_words_said(passage, weights)) >= len(own)


def measure(store, tasks):
    """(bar, [(share, whole) of null notes], [(share, whole) of the best passage holding each
    found task's fact])."""
    bar, nulls, facts = agentmem._gate(store, refresh=True)["bar"], [], []
    for p in agentmem._null_prompts():
        found, _hits, weights = agentmem._prompt_found(store, p, "", set(agentmem.tokenize(p)))
        nulls += [(share, whole(text, weights)) for share, _m, text in found[:3]]
    for task, groups in tasks:
        found, _hits, weights = agentmem._prompt_found(store, task)
        held = [(s, whole(p, weights)) for s, _m, p in found if has(p, groups)]
        facts += [max(held)] if held else []
    return bar, nulls, facts


def has(text, groups):
    low = text.lower()
    return all(any(alt in low for alt in group) for group in groups)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", default="0,8,32")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(HERE), "..", "shared"))
    a = ap.parse_args(argv)
    a.shared = os.path.abspath(a.shared)  # captures run in each project's folder
    sys.path.insert(0, os.path.join(a.shared, "bench"))
    import inject_public as ip

    work = tempfile.mkdtemp(prefix="agentmem-gate-growth-")
    try:
        for k in (int(x) for x in a.k.split(",")):
            tmpl = template(a.shared, k, work) if k else None
            bars, above, wholes, facts = [], [], [], []
            for name in ip.SESSIONS:
                root = os.path.join(work, "k%d" % k, ip.short(name))
                os.makedirs(root)
                path = os.path.join(root, ".agentmem")
                if tmpl and os.path.isdir(tmpl):
                    shutil.copytree(tmpl, path, ignore=shutil.ignore_patterns("lock", "queue"))
                capture(path, os.path.join(a.shared, "data", "transcripts", name), cwd=root)
                tasks = [(t, g) for owner, t, g in ip.TASKS if owner == name]
                bar, nulls, found = measure(agentmem.Store(path), tasks)
                bars.append(bar)
                above.append(sum(s >= 0.5 for s, _w in nulls))
                wholes.append(sum(w for _s, w in nulls))
                facts += found
            print(
                "K=%d: bar mean %.2f (%.2f, %.2f) | null notes >= 0.5 a store: median %d, "
                "saying all the prompt's words %d | tasks found %d, median share %.2f, saying "
                "all the task's words %d"
                % (k, statistics.mean(bars), min(bars), max(bars), statistics.median(above),
                   statistics.median(wholes), len(facts),
                   statistics.median(s for s, _w in facts) if facts else 0.0,
                   sum(w for _s, w in facts)),
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
