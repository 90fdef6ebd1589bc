#!/usr/bin/env python3
"""Evidence of use on real sessions: each shared transcript cut in two, the second part told.

usage: bench/evidence_chains.py [TRANSCRIPTS_DIR] [--prompts N] [--json] [--cost]
       bench/evidence_chains.py --sessions T1 T2 ... [--prompts N] [--json]

For each real transcript (default: ../shared/data/transcripts), a chain of two sessions is
made from it, cut at the person's turn nearest its middle:
  1. the first part is captured into a fresh store;
  2. the second part is told what the SessionStart hook tells at its start (as a resumed
     session), and what the prompt hook tells for each of its first N real prompts;
  3. the whole transcript is captured again, and each note told to the second part is marked
     used, ignored or contradicted, with its evidence (docs/trust.md).
Every mark is printed with the note and its evidence, to be read one by one, and under it
every command the agent ran after the tell that the note names in any form (the same program
and command, `=` when it is the note's command as the judge reads it, `~` when only its program
and command are): so a reader counts the misses as well as the wrong marks. The last line
counts them: notes told, used, ignored, contradicted, and missed (a note not marked used whose
command the agent ran as the note gives it).

--sessions makes one chain of separate sessions instead (say, the three spotter sessions of
one project, in the order they ran): each captured in turn, each told what the store held
before it.

--cost measures instead what judging adds to capture: the largest transcript captured into a
store of three other sessions, with and without 18 notes of those sessions told to it (12 at
its start, 6 for prompts), the fastest of 5 runs each, interleaved.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import agentmem  # noqa: E402

SHARED = os.path.join(os.path.dirname(HERE), "..", "shared", "data", "transcripts")


def _lines_with_time(path):
    """The transcript's lines, each with the time it carries ('' when none)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines(True)
    out = []
    for line in lines:
        try:
            x = json.loads(line)
        except ValueError:
            x = None
        ts = x.get("timestamp") if isinstance(x, dict) else ""
        out.append((line, ts if isinstance(ts, str) else ""))
    return out


def _cut(events):
    """The person's turn nearest the middle of a session (an index into its events)."""
    turns = [i for i, e in enumerate(events) if e.role == "user" and e.ts]
    if len(turns) < 2:
        return None
    middle = len(events) // 2
    return min(turns[1:], key=lambda i: abs(i - middle))


def _ran(events):
    """Every command the agent ran in these events, as its words (lower-cased)."""
    calls = (e for e in events if e.role == "call" and e.tool.lower() in agentmem._SHELL_TOOLS)
    return [run for e in calls for run in agentmem._runs_of(e.text.lower())]


def _named(note, runs):
    """[(exact?, run)] of the runs that a note's commands name in any form: the same program
    and command (the first two words of its key)."""
    said = note.split("\n" + agentmem._CALLS_MARK)[0]
    gives = [(c, n) for c in agentmem._commands_of(said) for n in agentmem._runs_of(c)]
    out = []
    for run in runs:
        key = agentmem._command_key(run).split()[:2]
        forms = [(c, n) for c, n in gives if agentmem._command_key(n).split()[:2] == key]
        exact = any(agentmem._runs_note(n, run) or c in run[1:] for c, n in forms)
        if forms and (exact, run) not in out:
            out.append((exact, run))
    return out


def _capture(store, path, session):
    with contextlib.redirect_stdout(io.StringIO()):
        agentmem.main(
            ["capture", "--store", store, "--no-llm", "--session", session, "--transcript", path]
        )


def chain(transcript, prompts=6):
    """[marks] of one transcript made into a chain (see the module's docstring)."""
    events, _info, _ = agentmem.read_transcript(transcript)
    cut = _cut(events)
    if cut is None:
        return []
    at = agentmem._parse_time(events[cut].ts)
    folder = tempfile.mkdtemp(prefix="agentmem-chain-")
    try:
        store = os.path.join(folder, ".agentmem")
        path = os.path.join(folder, os.path.basename(transcript))
        lines = _lines_with_time(transcript)
        first = [ln for ln, ts in lines if not ts or (agentmem._parse_time(ts) or 0) < at]
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(first))
        session = "chain"
        _capture(store, path, session)
        s = agentmem.open_store(store, cwd=folder)
        start = agentmem._build_context(s, folder, source="resume")
        agentmem._log_told(
            s, session, "start", start, at=agentmem._now_iso(at - 1), source="resume"
        )
        asked = [e for e in events[cut:] if e.role == "user"][:prompts]
        for e in asked:
            block = agentmem._prompt_context(s, e.text)
            t = agentmem._parse_time(e.ts) or at
            agentmem._log_told(
                s, session, "prompt", block, prompt=e.text, at=agentmem._now_iso(t - 1)
            )
        notes = {m.id: m.text for m in s.memories()}  # as they were told
        shutil.copyfile(transcript, path)
        _capture(store, path, session)
        marks = agentmem._outcomes(agentmem.open_store(store, cwd=folder))
        runs = _ran(events[cut:])
        for x in marks:
            x["note"], x["transcript"] = notes.get(x["id"], "?"), os.path.basename(transcript)
            x["ran"] = _named(x["note"], runs)
        return marks
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def session_chain(paths, prompts=6):
    """[marks] of a chain of separate sessions: each told what the store held before it."""
    folder = tempfile.mkdtemp(prefix="agentmem-chain-")
    try:
        store, marks = os.path.join(folder, ".agentmem"), []
        for n, transcript in enumerate(paths):
            events, _info, _ = agentmem.read_transcript(transcript)
            session = "s%d" % n
            s = agentmem.open_store(store, cwd=folder)
            if n:
                start = agentmem._build_context(s, folder, source="startup")
                agentmem._log_told(s, session, "start", start, source="startup")
                for e in [e for e in events if e.role == "user"][:prompts]:
                    agentmem._log_told(
                        s,
                        session,
                        "prompt",
                        agentmem._prompt_context(s, e.text),
                        prompt=e.text,
                        at=agentmem._now_iso((agentmem._parse_time(e.ts) or 1) - 1),
                    )
            notes = {m.id: m.text for m in s.memories()} if s.exists() else {}
            _capture(store, transcript, session)
            runs = _ran(events)
            for x in agentmem._outcomes(agentmem.open_store(store, cwd=folder)):
                if x.get("session") == session:
                    x["note"], x["transcript"] = (
                        notes.get(x["id"], "?"),
                        os.path.basename(transcript),
                    )
                    x["ran"] = _named(x["note"], runs)
                    marks.append(x)
        return marks
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def capture_cost(folder, runs=5):
    """(seconds without tells, seconds with 18 told notes) of capturing the largest transcript."""
    paths = sorted(
        (os.path.join(r, n) for r, _d, ns in os.walk(folder) for n in ns if n.endswith(".jsonl")),
        key=os.path.getsize,
    )
    big, others = paths[-1], paths[-4:-1]
    base = tempfile.mkdtemp(prefix="agentmem-cost-")
    try:
        prep = os.path.join(base, "prep", ".agentmem")
        for i, other in enumerate(others):
            _capture(prep, other, "other%d" % i)
        mems = agentmem.open_store(prep).memories()
        ids = [m.id for m in mems if m.type != "episode"][:12]
        ids += [m.id for m in mems if m.type == "episode"][::40][: 18 - len(ids)]
        best = {False: [], True: []}
        for run in range(runs):
            for told in best:
                store = os.path.join(base, "%s%d" % (told, run), ".agentmem")
                shutil.copytree(
                    prep,
                    store,
                    ignore=shutil.ignore_patterns("capture-state.json", "queue", "*.sqlite3*"),
                )
                s = agentmem.open_store(store)
                s.index()
                if told:
                    agentmem._log_told(
                        s,
                        "S",
                        "start",
                        "\n".join("- [%s · x] y" % i for i in ids[:12]),
                        source="startup",
                    )
                    for n, i in enumerate(ids[12:]):
                        agentmem._log_told(
                            s,
                            "S",
                            "prompt",
                            "- [%s · x] y" % i,
                            prompt="p%d" % n,
                            at="2026-01-01T00:00:00Z",
                        )
                t = time.perf_counter()
                _capture(store, big, "S")
                best[told].append(time.perf_counter() - t)
        return os.path.basename(big), os.path.getsize(big), min(best[False]), min(best[True])
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", default=SHARED)
    ap.add_argument("--prompts", type=int, default=6, help="real prompts told per chain (6)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cost", action="store_true", help="what judging adds to capture")
    ap.add_argument("--sessions", nargs="+", help="one chain of these sessions, in this order")
    a = ap.parse_args(argv)
    if a.cost:
        name, size, plain, told = capture_cost(a.folder)
        print(
            "evidence cost: capture of %s (%.1f MB) %.3f s, with 18 told notes %.3f s: %.2fx"
            % (name, size / 1e6, plain, told, told / plain)
        )
        return 0
    paths = sorted(
        os.path.join(root, name)
        for root, _dirs, names in os.walk(a.folder)
        for name in names
        if name.endswith(".jsonl")
    )
    if a.sessions:
        paths, marks = a.sessions, session_chain(a.sessions, a.prompts)
    else:
        marks = [x for p in paths for x in chain(p, a.prompts)]
    if a.json:
        print(json.dumps(marks, ensure_ascii=False, indent=1))
    else:
        for x in marks:
            print(
                "%-12s %s %s [%s · %s]\n    note: %s\n    evidence: %s\n"
                % (
                    x["outcome"].upper(),
                    x["transcript"],
                    x["hook"],
                    x["id"],
                    x["type"],
                    " ".join(x["note"].split())[:300],
                    x.get("evidence") or "-",
                )
            )
            for exact, run in x["ran"][:8]:
                print("    ran %s %s" % ("=" if exact else "~", agentmem._shell_line(run)[:160]))
            if x["ran"]:
                print()
    counts = {k: sum(x["outcome"] == k for x in marks) for k in agentmem._OUTCOMES}
    missed = sum(x["outcome"] != "used" and any(e for e, _r in x["ran"]) for x in marks)
    print(
        "evidence chains: %d transcripts, notes told %d, used %d, ignored %d, contradicted %d,"
        " missed %d"
        % (
            len(paths),
            len(marks),
            counts["used"],
            counts["ignored"],
            counts["contradicted"],
            missed,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
