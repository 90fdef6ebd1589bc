#!/usr/bin/env python3
"""Statement coverage of agentmem.py by the test suite, subprocesses included.

usage: bench/coverage_run.py [--html DIR]

Most tests run agentmem.py as a command, so coverage.py measures every Python
process the suite starts (`patch = subprocess`, coverage 7.10 or newer), its data saved
before agentmem's own processes leave by os._exit (`patch = _exit`). Prints
the per-file report for agentmem.py; the last line is the figure:

  coverage: agentmem.py N% of S statements (M missed)
"""
import os
import subprocess
import sys
import tempfile

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.join(PROJECT, "agentmem.py")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    work = tempfile.mkdtemp(prefix="agentmem-coverage-")
    rc = os.path.join(work, "coveragerc")
    with open(rc, "w", encoding="utf-8") as f:
        f.write("[run]\ninclude = %s\nparallel = true\npatch = subprocess, _exit\ndata_file = %s\n"
                % (TARGET, os.path.join(work, ".coverage")))
    cov = [sys.executable, "-m", "coverage"]
    pytest = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--doctest-modules", "agentmem.py",
              "tests"]
    tests = subprocess.run(cov + ["run", "--rcfile", rc] + pytest, cwd=PROJECT)
    subprocess.run(cov + ["combine", "--rcfile", rc, "-q"], cwd=PROJECT, check=True)
    report = subprocess.run(cov + ["report", "--rcfile", rc, "--include", TARGET,
                                   "--precision", "1"],
                            cwd=PROJECT, capture_output=True, text=True, check=True)
    print(report.stdout.rstrip())
    if "--html" in argv:
        folder = argv[argv.index("--html") + 1]
        subprocess.run(cov + ["html", "--rcfile", rc, "-d", folder], cwd=PROJECT)
    last = report.stdout.strip().splitlines()[-1].split()
    stmts, missed, pct = int(last[-3]), int(last[-2]), last[-1]
    print("coverage: agentmem.py %s of %d statements (%d missed)%s"
          % (pct, stmts, missed, "" if tests.returncode == 0 else "; the suite FAILED"))
    return tests.returncode


if __name__ == "__main__":
    sys.exit(main())
