"""Validation against the raw toolchain on the same programs: whole processes, paired, min/median/max.

    .venv/bin/python benchmarks/validator_overhead.py [--dsl jq --dsl verilog] [--limit 5] [--repeats 5] [--workers 1]

For each DSL the programs are the gold and every known-bad program of its first N tasks.

- validator: one whole `dslbench validate --run R --dsl D --workers W` process on a run folder that holds
  those programs as generations (start-up, workers, sandbox, store writes and the table export included);
  each repeat starts from a fresh copy of the generations-only folder.
- raw: the toolchain commands that validation ran, recorded once (each command with its work folder as it
  was just before the command ran), replayed as plain processes in a fresh copy of that folder with the
  sandbox's environment (PATH, LANG, TMPDIR, HOME), no sandbox and no limits, W at a time.

Repeats alternate the two sides (paired), and the ratio is taken per repeat. Prints, per DSL, the seconds
of each side and the ratio validator/raw as min/median/max, then the median ratio over the DSLs.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dslbench import judge, sandbox
from dslbench.prompting import PROMPT_VERSION
from dslbench.store import RunStore
from dslbench.tasks import load_tasks

DSLBENCH = Path(sys.executable).with_name("dslbench")


def programs_of(tasks) -> list:
    return [(t, kind, p) for t in tasks for kind, p in [("gold", t.gold), *(("mutant", m.program) for m in t.mutants)]]


def generations_folder(folder: Path, programs) -> Path:
    store = RunStore(folder)
    for i, (t, kind, program) in enumerate(programs):
        store.append("generations", {"dsl": t.dsl, "task_id": t.id, "model": "replay", "method": "baseline",
                                     "sample": i, "domain": t.domain, "difficulty": t.difficulty, "split": t.split,
                                     "messages": [], "raw_output": program, "program": program,
                                     "extraction_rule": "whole-output", "prompt_version": PROMPT_VERSION,
                                     "generation_status": "ok"})
    return folder


def record_commands(programs, scratch: Path) -> list:
    """(command, snapshot folder, environment, stdin) of every toolchain run that validation makes."""
    recorded, real_run = [], sandbox.run

    def recording_run(cmd, work, limits=None, env=None, stdin=None):
        snap = scratch / f"cmd-{len(recorded):05d}"
        shutil.copytree(work, snap, symlinks=True)
        plain_env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                     "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
        recorded.append((list(cmd), snap, plain_env, stdin))
        return real_run(cmd, work, limits, env=env, stdin=stdin)

    sandbox.run = recording_run
    try:
        for t, _, program in programs:
            judge.evaluate(t.dsl, t, program)
    finally:
        sandbox.run = real_run
    return recorded


def replay_raw(commands, scratch: Path, workers: int) -> float:
    def one(i_cmd):
        i, (cmd, snap, env, stdin) = i_cmd
        work = scratch / f"replay-{i:05d}"
        shutil.copytree(snap, work, symlinks=True)
        subprocess.run(cmd, cwd=work, env={**env, "HOME": str(work)}, input=stdin, capture_output=True, text=True,
                       timeout=600)
        shutil.rmtree(work, ignore_errors=True)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, enumerate(commands)))
    return time.perf_counter() - t0


def validate_whole(gen_folder: Path, scratch: Path, dsl: str, workers: int) -> float:
    run = scratch / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(gen_folder, run)
    t0 = time.perf_counter()
    r = subprocess.run([str(DSLBENCH), "validate", "--run", str(run), "--dsl", dsl, "--workers", str(workers),
                        "--no-progress", "--min-judged", "0"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"dslbench validate failed for {dsl}:\n{r.stderr[-2000:]}")
    return wall


def spread(values) -> str:
    return f"{min(values):7.2f} {statistics.median(values):7.2f} {max(values):7.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dsl", action="append", default=[])
    ap.add_argument("--limit", type=int, default=5, help="tasks per DSL (gold + every mutant of each)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1, help="workers of validate, and raw commands at a time")
    args = ap.parse_args()
    tasks = load_tasks(args.dsl or ["jq", "smiles", "verilog", "dafny"], limit=args.limit)
    print(f"sandbox mode: {sandbox.sandbox_mode()}; {args.repeats} paired repeats, {args.workers} worker(s); "
          "seconds min/median/max")
    print(f"{'dsl':10} {'programs':>8} {'commands':>8}  {'validate (whole process)':>23}  {'raw commands':>23}  "
          f"{'ratio':>23}")
    medians = []
    for dsl, ts in tasks.items():
        scratch = Path(tempfile.mkdtemp(prefix=f"dslbench-overhead-{dsl}-"))
        try:
            programs = programs_of(ts)
            gens = generations_folder(scratch / "generations", programs)
            commands = record_commands(programs, scratch)
            walls, raws, ratios = [], [], []
            for _ in range(args.repeats):
                w = validate_whole(gens, scratch, dsl, args.workers)
                r = replay_raw(commands, scratch, args.workers)
                walls.append(w), raws.append(r), ratios.append(w / r)
            medians.append(statistics.median(ratios))
            print(f"{dsl:10} {len(programs):8d} {len(commands):8d}  {spread(walls):>23}  {spread(raws):>23}  "
                  f"{spread(ratios):>23}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    if medians:
        print(f"median over DSLs of the median ratio: {statistics.median(medians):.2f} "
              f"(worst {max(medians):.2f}); target <= 1.05 median, <= 1.3 worst")


if __name__ == "__main__":
    os.environ.setdefault("DSLBENCH_LLAMA_THREADS", "1")
    main()
