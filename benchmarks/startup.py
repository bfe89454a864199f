"""Start-up of the `dslbench` command and of a validation worker, as whole processes.

    .venv/bin/python benchmarks/startup.py [--repeats 5]

Times, each in a fresh process: bare Python; `dslbench --help`; `dslbench doctor` (every probe);
`dslbench validate --dsl jq` on a run with nothing left to judge (imports, task loading, the store's
index); and what a spawned worker pays before its first program (importing the judging code and
loading one validator). Prints min/median/max seconds and each figure over bare Python's.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    run = Path(tempfile.mkdtemp(prefix="dslbench-startup-")) / "run"
    cases = {
        "bare python": [sys.executable, "-c", "pass"],
        "dslbench --help": [str(BIN / "dslbench"), "--help"],
        "dslbench doctor": [str(BIN / "dslbench"), "doctor"],
        "dslbench validate --dsl jq (nothing to do)": [str(BIN / "dslbench"), "validate", "--run", str(run), "--dsl", "jq",
                                                       "--min-judged", "0", "--no-progress"],
        "worker: judging code + one validator": [sys.executable, "-c", "from dslbench import judge, toolchains; "
                                                 "toolchains.get('jq'); toolchains.probe('jq')"],
    }
    print(f"{'whole process':<44} {'min s':>7} {'median s':>8} {'max s':>7} {'x bare':>7}")
    bare = None
    for label, cmd in cases.items():
        times = [timed(cmd) for _ in range(args.repeats)]
        med = statistics.median(times)
        bare = bare or med
        print(f"{label:<44} {min(times):7.2f} {med:8.2f} {max(times):7.2f} {med / bare:7.1f}")


if __name__ == "__main__":
    main()
