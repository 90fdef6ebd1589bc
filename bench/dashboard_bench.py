#!/usr/bin/env python3
"""Server-side time of every dashboard page on a store of N memories (agentmem serve).

usage: bench/dashboard_bench.py [N]          (default 10000)

Builds a throw-away store of N memories (sentences from the docstrings of Python's own
standard library; a fifth of them in 200 captured-looking sessions), then asks the
dashboard for each page in this process, five times, and prints the median and the
slowest time of each, in milliseconds. The last line is the figure: the slowest page.
"""
import json
import os
import pydoc
import random
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import agentmem  # noqa: E402


def sentences(n):
    out = []
    for name in sorted(sys.stdlib_module_names if hasattr(sys, "stdlib_module_names") else
                       ("os", "re", "json", "socket", "threading", "subprocess", "pathlib")):
        if name.startswith("_") or name in ("antigravity", "this", "idlelib", "tkinter",
                                            "turtle", "turtledemo"):
            continue
        try:
            mod = pydoc.safeimport(name)
        except Exception:  # noqa: BLE001 - a module that cannot be imported here
            continue
        for obj in [mod] + [getattr(mod, a, None) for a in dir(mod)[:80]]:
            doc = getattr(obj, "__doc__", None)
            if isinstance(doc, str):
                out += [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc)
                        if 60 < len(" ".join(p.split())) < 500]
        if len(set(out)) > n:
            break
    return sorted(set(out))


def build(root, n):
    rnd = random.Random(3)
    texts = sentences(n)
    types = ["decision", "convention", "bug", "lesson", "fact", "todo"]
    lines = []
    for i in range(n):
        d = {"text": "%s [%d]" % (texts[i % len(texts)], i), "type": rnd.choice(types),
             "tags": [rnd.choice(["api", "db", "ci", "ui"])], "files": ["src/m%d.py" % (i % 300)],
             "source": "claude-code:s%d" % (i % 200) if i % 5 == 0 else "import",
             "created": "2026-%02d-%02dT10:00:00Z" % (1 + i % 11, 1 + i % 28)}
        if i % 5 == 0:
            d["session"] = "s%d" % (i % 200)
        lines.append(json.dumps(d))
    store = agentmem.Store(root)
    counts, errors = store.import_jsonl(lines, name="bench")
    assert not errors, errors[:3]
    return store


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    work = tempfile.mkdtemp(prefix="agentmem-dash-")
    try:
        t = time.time()
        store = build(os.path.join(work, ".agentmem"), n)
        some = next(store.index().newest())
        store.close()
        print("built %d memories in %.1f s" % (n, time.time() - t))
        app = agentmem._DashboardApp(store.root, ["http://127.0.0.1:1"])
        headers = {"Host": "127.0.0.1:1", "Cookie": "agentmem=" + app.token}
        pages = ["/", "/search", "/search?q=socket+timeout+connection", "/search?q=parse+the+"
                 "header&type=bug", "/search?tag=db&unreviewed=1", "/m/" + some.id, "/review",
                 "/sessions", "/sessions?s=s7", "/next", "/next?prompt=how+do+we+retry+a+"
                 "socket+timeout", "/check"]
        slowest, check = (0, ""), 0
        for page in pages:
            times = []
            for _ in range(5):
                t = time.perf_counter()
                status, _h, body = app.respond("GET", page, headers)
                times.append((time.perf_counter() - t) * 1000)
                assert status == 200, (page, status, body[:300])
            med = statistics.median(times)
            print("%-48s median %6.1f ms  slowest %6.1f ms  %6d bytes"
                  % (page, med, max(times), len(body)))
            if page == "/check":
                check = med         # agentmem check itself: every memory's secrets scanned again
            else:
                slowest = max(slowest, (med, page))
        print("dashboard N=%d: every page in <= %.0f ms (median of 5; slowest %s); /check, which "
              "runs agentmem check over every memory, %.0f ms" % (n, slowest[0], slowest[1], check))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
