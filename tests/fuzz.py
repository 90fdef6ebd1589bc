"""Mutate one record of a real transcript and check that it costs that record only.

For each transcript and each mutation, a few records are picked (seeded); one case is the
transcript with that one record mutated. A case passes when the transcript still reads
without an exception, with no exception swallowed on the way (agentmem's last-resort net for
a broken record is turned off here: a wrong type must be met by a type check), and with
every event the other records give (read with the record left out) still there.

    python tests/fuzz.py [--per N] [--seed S] [TRANSCRIPT ...]   # default: ../shared's

prints the cases, the sessions lost, the records whose neighbours lost events, and the
exceptions, and exits 1 when any is not 0.
"""
import argparse
import collections
import json
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import agentmem  # noqa: E402

SHARED = os.path.join(os.path.dirname(HERE), "..", "shared", "data", "transcripts")
# a value of each JSON type, put where the record has a value of another type
WRONG = {"list": ["a", 1], "dict": {"k": "v"}, "int": 7, "float": 1.5, "bool": True, "null": None,
         "str": "x"}
# a Gemini tool call, for a legacy chat's message that has none
CALL = {"id": "call-1", "name": "read_file", "args": {"file_path": "README.md"}, "status": "success",
        "resultDisplay": "the file's text"}
MUTATIONS = ("nul", "binary", "truncated", "wrong-type", "deep", "deeper", "huge", "repeated")


def shared_transcripts():
    return sorted(
        os.path.join(SHARED, agent, name)
        for agent in ("claude", "codex", "gemini")
        for name in os.listdir(os.path.join(SHARED, agent))
        if name.endswith((".jsonl", ".json"))
    )


def _kind(v):
    return {list: "list", dict: "dict", int: "int", float: "float", bool: "bool", str: "str",
            type(None): "null"}[type(v)]


def _paths(value, path=()):
    """Every place in a record a value sits: (key, index, ...) paths."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list) else ()
    for k, v in items:
        yield path + (k,)
        yield from _paths(v, path + (k,))


def _set(record, path, value):
    record = json.loads(json.dumps(record))
    at = record
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    return record


def mutants(record, raw, rng):
    """(mutation, bytes of the record's line) for one record."""
    yield "nul", raw[: len(raw) // 3] + b"\x00\x00" + raw[len(raw) // 3:]
    yield "binary", bytes(rng.randrange(256) for _ in range(300)).replace(b"\n", b" ")
    yield "truncated", raw[: len(raw) // 2]
    yield "repeated", raw + b"\n" + raw
    paths = list(_paths(record)) if isinstance(record, dict) else []
    if not paths:
        return
    path = rng.choice(paths)
    at = record
    for k in path:
        at = at[k]
    for name, value in WRONG.items():
        if name != _kind(at):
            yield "wrong-type", json.dumps(_set(record, path, value)).encode()
    deep = value = "x"
    for i in range(200):
        value = [value] if i % 2 else {"k": value}
    yield "deep", json.dumps(_set(record, path, value)).encode()
    deep = json.dumps(_set(record, path, "@@"))
    yield "deeper", deep.replace('"@@"', "[" * 50000 + "]" * 50000).encode()
    strings = [p for p in paths if isinstance(_get(record, p), str)]
    if strings:
        huge = " ".join("word%d" % (i % 5000) for i in range(400000))  # 3.5 MB
        yield "huge", json.dumps(_set(record, rng.choice(strings), huge)).encode()


def _get(record, path):
    for k in path:
        record = record[k]
    return record


def _said(path):
    events, _info, _ = agentmem.read_transcript(path)
    return collections.Counter((e.role, e.text) for e in events)


def _kept(path):
    """What `agentmem capture` keeps of a transcript, into a store of its own: the passages of
    its words (a typed memory may rightly depend on a neighbour: a question and its answer)."""
    import contextlib
    import io
    import shutil

    store = tempfile.mkdtemp(prefix="agentmem-fuzz-")
    try:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = agentmem.main(["capture", "--store", store, "--no-llm", "--transcript", path])
        if code:
            raise RuntimeError("capture exited %d: %s" % (code, err.getvalue().strip()))
        mems = agentmem.open_store(store).memories(["episode"])
        # a message's passage names the calls after it: those are the calls' records, not its;
        # lines, not passages, are compared: a mutated record read as a message of its own
        # rightly splits the passage around it, and loses none of its words
        return collections.Counter(
            line.strip()
            for m in mems
            for line in m.text.split("\n(then ")[0].splitlines()
            if line.strip()
        )
    finally:
        shutil.rmtree(store, ignore_errors=True)


class Transcript:
    """One transcript as records: JSON lines, or a legacy Gemini chat's messages."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            data = f.read()
        self.legacy = path.endswith(".json")
        if self.legacy:
            doc = json.loads(data)
            self.head = {k: v for k, v in doc.items() if k != "messages"}
            self.raws = [json.dumps(m).encode() for m in doc["messages"]]
        else:
            self.raws = data.rstrip(b"\n").split(b"\n")

    def record(self, i):
        try:
            return json.loads(self.raws[i])
        except ValueError:
            return None

    def write(self, folder, raws, head=None):
        path = os.path.join(folder, os.path.basename(self.path))
        with open(path, "wb") as f:
            if self.legacy:  # a mutated header: all on one line, as json.dumps writes it
                nl = b"" if head else b"\n"
                head = head or json.dumps(self.head)[:-1].encode()
                f.write(head + b', "messages": [' + nl + (b"," + nl).join(raws) + nl + b"]}\n")
            else:
                f.write(b"\n".join(raws) + b"\n")
        return path


def run_case(t, i, raw, folder, original, said=_said):
    """None when the mutated record i cost itself only, else what went wrong. What the other
    records say is what the transcript says without record i (and says with it: without it a
    later record may read differently, a wait on a command it started)."""
    head, raws = (raw, t.raws) if i is None else (None, t.raws[:i] + [raw] + t.raws[i + 1:])
    try:  # (i None: a legacy chat's header, before its messages, is the record)
        reference = original if i is None else said(t.write(folder, raws[:i] + raws[i + 1:]))
        reference &= original
    except (agentmem.AgentmemError, RuntimeError):
        reference = collections.Counter()  # the record was all there was
    net, agentmem._RECORD_ERRORS = agentmem._RECORD_ERRORS, ()
    try:
        got = said(t.write(folder, raws, head))
    except (agentmem.AgentmemError, RuntimeError) as e:
        return "lost: %s" % e
    except Exception as e:  # noqa: BLE001 -- what the fuzz is for
        return "exception: %s: %s" % (type(e).__name__, e)
    finally:
        agentmem._RECORD_ERRORS = net
    missing = reference - got
    if missing:
        lost, _n = next(iter(missing.items()))
        return "neighbours lost %d, e.g. %r" % (sum(missing.values()), str(lost)[:100])
    return None


def cases(paths, per, seed):
    """(transcript, record index, mutation, bytes), `per` records for each mutation."""
    rng = random.Random(seed)
    for path in paths:
        t = Transcript(path)
        picked = collections.Counter()
        if t.legacy:  # its header nested past the parser's depth: the messages stay
            for mutation, raw in mutants(t.head, json.dumps(t.head).encode(), rng):
                if mutation in ("deep", "deeper"):
                    yield t, None, mutation, raw[:-1]
            # a message with tool calls, then a value nested past the parser's depth: the
            # messages after it stay (a call inside it is never read as one of them)
            for i in rng.sample(range(len(t.raws) - 1), min(per, len(t.raws) - 1)):
                record = t.record(i)
                deep = json.dumps(dict(record, toolCalls=record.get("toolCalls") or [CALL], deeper="@@"))
                yield t, i, "deeper", deep.replace('"@@"', "[" * 50000 + "]" * 50000).encode()
        for i in rng.sample(range(len(t.raws)), len(t.raws)):
            record = t.record(i)
            for mutation, raw in mutants(record, t.raws[i], rng):
                if picked[mutation] < per * (6 if mutation == "wrong-type" else 1):
                    picked[mutation] += 1
                    yield t, i, mutation, raw
            if min(picked[m] for m in MUTATIONS) >= per:
                break


def fuzz(paths, per=2, seed=0, out=None, capture=False):
    """{mutation: [cases, failures]} and the failures' descriptions; with `capture`, each case
    goes through `agentmem capture` whole (slower), and what the store keeps is compared."""
    said = _kept if capture else _said
    tally, failures = collections.defaultdict(lambda: [0, 0]), []
    with tempfile.TemporaryDirectory() as folder:
        originals = {}
        for t, i, mutation, raw in cases(paths, per, seed):
            if t.path not in originals:
                originals[t.path] = said(t.path)
            why = run_case(t, i, raw, folder, originals[t.path], said)
            tally[mutation][0] += 1
            if why:
                tally[mutation][1] += 1
                failures.append("%s record %d %s: %s" % (os.path.basename(t.path), i, mutation, why))
                if out:
                    out.write(failures[-1] + "\n")
    return dict(tally), failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--per", type=int, default=5, help="records mutated per mutation and file")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--capture", action="store_true", help="each case through capture, whole")
    a = ap.parse_args(argv)
    tally, failures = fuzz(a.paths or shared_transcripts(), a.per, a.seed, sys.stdout, a.capture)
    for mutation, (n, bad) in sorted(tally.items()):
        print("%-11s %5d cases, %d failed" % (mutation, n, bad))
    print("fuzz: %d cases over %d transcripts, %d failed" % (
        sum(n for n, _b in tally.values()), len(a.paths or shared_transcripts()), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
