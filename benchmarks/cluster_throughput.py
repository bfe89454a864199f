"""Validation throughput per worker: the local process pool against a dask.distributed cluster.

    .venv/bin/python benchmarks/cluster_throughput.py [--dsl jq --dsl verilog | --dsl all] [--sample N --seed S]
                                                      [--repeats 3] [--workers 1 2]

The programs are every gold solution and known-bad program of the DSLs (real toolchains, sandboxed;
jq and Verilog by default, whose programs are short, so that sandbox start-up weighs most), or of a
difficulty-stratified sample of N tasks per DSL (the `--sample` of every stage).
For each worker count N, the same programs are judged through `pipeline.fan_out` (what `validate`
uses) on a process pool of N and on a cluster of N single-threaded worker processes started as a
user would (`dask scheduler`, `dask worker --nworkers N`), connected by `--executor tcp://...`.
Cluster start-up is not timed (a cluster outlives one run); worker start-up is, as in a real run.
Prints programs/s, programs/s per worker and the speed-up over one worker, min/median/max.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dslbench import pipeline
from dslbench.tasks import load_tasks

DASK = Path(sys.executable).with_name("dask")


def start_cluster(n: int, folder: Path):
    info = folder / f"scheduler-{n}.json"
    procs = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(info)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    while not info.exists():
        time.sleep(0.2)
    address = json.loads(info.read_text())["address"]
    procs.append(subprocess.Popen([str(DASK), "worker", "--scheduler-file", str(info), "--nworkers", str(n),
                                   "--nthreads", "1", "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    from dask.distributed import Client
    with Client(address, timeout=60) as client:
        client.wait_for_workers(n, timeout=120)
    return address, procs


def judge_all(jobs, executor: str, workers: int) -> float:
    t0 = time.perf_counter()
    pipeline.fan_out(jobs, lambda tag, out: None, executor, workers, "bench", False)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dsl", action="append", default=[], help="repeatable; 'all' for every DSL")
    ap.add_argument("--sample", type=int, help="a stratified sample of N tasks per DSL")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    if args.sample:
        os.environ.update(DSLBENCH_SAMPLE=str(args.sample), DSLBENCH_SEED=str(args.seed))
    tasks = load_tasks(None if args.dsl == ["all"] else args.dsl or ["jq", "verilog"])
    jobs = [(None, pipeline.evaluate, (dsl, t, program)) for dsl, ts in tasks.items() for t in ts
            for program in [t.gold, *(m.program for m in t.mutants)]]
    print(f"{len(jobs)} programs of {', '.join(tasks)}")
    print(f"{'executor':<10} {'N':>2} {'programs/s min':>15} {'median':>7} {'max':>7} {'per worker':>10} {'vs N=1':>7}")
    # One untimed pass first: gold outputs the oracles keep (the oracle cache) are then there for every
    # timed pass alike, as in any rerun.
    judge_all(jobs, "process", max(args.workers))
    folder = Path(tempfile.mkdtemp(prefix="dslbench-cluster-"))
    base = {}
    for n in args.workers:
        address, procs = start_cluster(n, folder)
        try:
            for name, executor in (("process", "process"), ("dask tcp", address)):
                rates = sorted(len(jobs) / judge_all(jobs, executor, n) for _ in range(args.repeats))
                med = statistics.median(rates)
                base.setdefault(name, med)
                print(f"{name:<10} {n:>2} {rates[0]:15.2f} {med:7.2f} {rates[-1]:7.2f} {med / n:10.2f} "
                      f"{med / base[name]:6.2f}x")
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in procs:
                p.wait(timeout=30)


if __name__ == "__main__":
    main()
