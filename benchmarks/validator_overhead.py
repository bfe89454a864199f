"""Validator wall time vs. the raw toolchain commands alone, on the same inputs.

For each DSL, every gold solution (and its mutants) is validated through the full validator
(work directory, context files, sandbox, parsing of results). Each command the validator runs is
then re-run plainly (no sandbox, no limits) in the same work directory, and timed. The ratio of
the two totals is the price of the validator machinery. Also prints median and max validation time
per DSL.

usage: python benchmarks/validator_overhead.py [--dsl jq --dsl verilog] [--limit N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dslbench import pipeline, sandbox
from dslbench.tasks import load_tasks

raw_seconds = 0.0
_sandboxed_run = sandbox.run


def run_and_replay(cmd, work, limits=None, env=None, stdin=None):
    """The real sandboxed run, then the same command plainly in the same directory (timed)."""
    global raw_seconds
    result = _sandboxed_run(cmd, work, limits, env=env, stdin=stdin)
    t0 = time.perf_counter()
    plain_env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", **(env or {})}
    subprocess.run(cmd, cwd=work, input=stdin, capture_output=True, text=True, env=plain_env,
                   timeout=(limits.timeout_s if limits else 30) + 5)
    raw_seconds += time.perf_counter() - t0
    return result


def main():
    global raw_seconds
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dsl", action="append", default=[])
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    sandbox.run = run_and_replay
    tasks = load_tasks(args.dsl or None, limit=args.limit)
    print(f"sandbox mode: {sandbox.sandbox_mode()}")
    print(f"{'dsl':10} {'programs':>8} {'validator s':>12} {'raw cmds s':>11} {'ratio':>6} {'median s':>9} {'max s':>7}")
    for dsl, ts in tasks.items():
        programs = [(t, t.gold) for t in ts] + [(t, m.program) for t in ts for m in t.mutants]
        per_program, validator_total, raw_total = [], 0.0, 0.0
        for task, program in programs:
            raw_seconds = 0.0
            t0 = time.perf_counter()
            pipeline.evaluate(dsl, task, program)
            wall = time.perf_counter() - t0 - raw_seconds  # the replay is not part of the validator
            per_program.append(wall)
            validator_total += wall
            raw_total += raw_seconds
        ratio = validator_total / raw_total if raw_total else float("nan")
        print(f"{dsl:10} {len(programs):8d} {validator_total:12.2f} {raw_total:11.2f} {ratio:6.2f} "
              f"{statistics.median(per_program):9.3f} {max(per_program):7.3f}")


if __name__ == "__main__":
    main()
