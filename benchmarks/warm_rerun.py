"""A warm rerun of generation (every reply already known) against the cold run, as whole processes.

    .venv/bin/python benchmarks/warm_rerun.py [--limit 2] [--repeats 3]

Cold: `dslbench generate` on the first --limit tasks of every DSL with the embedded model, a new run
folder and an empty generation cache (every reply is a model call). Then, timed --repeats times each:
- same run folder: the rerun finds every record in the run store and has nothing to do;
- new run folder, same cache: every reply is a cache hit and is written to the new run.
Prints seconds min/median/max and each warm figure as a share of the cold run (target <= 3 %).
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DSLBENCH = Path(sys.executable).with_name("dslbench")


def generate(run: Path, cache: Path, limit: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(DSLBENCH), "generate", "--run", str(run), "--cache", str(cache), "--limit", str(limit),
                    "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def spread(xs):
    return f"{min(xs):7.2f} / {statistics.median(xs):7.2f} / {max(xs):7.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=2, help="first N tasks of every DSL")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="dslbench-warm-"))
    cache = scratch / "cache"
    cold = generate(scratch / "run-cold", cache, args.limit)
    same = [generate(scratch / "run-cold", cache, args.limit) for _ in range(args.repeats)]
    fresh = [generate(scratch / f"run-new-{i}", cache, args.limit) for i in range(args.repeats)]
    calls = sum(1 for _ in (cache.glob("*/*.json")))
    print(f"{calls} model calls in the cold run (first {args.limit} tasks of every DSL), scratch {scratch}")
    print(f"{'whole process':<34} {'s min / median / max':>26} {'share of cold':>14}")
    print(f"{'cold (every reply a model call)':<34} {cold:26.2f} {'100 %':>14}")
    for name, xs in (("warm, same run folder", same), ("warm, new run folder, same cache", fresh)):
        print(f"{name:<34} {spread(xs):>26} {100 * statistics.median(xs) / cold:12.1f} %")


if __name__ == "__main__":
    main()
