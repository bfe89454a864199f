"""The cluster path as a user runs it: a dask scheduler and worker processes started from the command
line, and `dslbench validate --executor tcp://...` sending the work there. Its verdicts must equal
those of the local process pool on the same generations."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import gold_generations, run_cli
from dslbench.store import RunStore, comparable

DASK = Path(sys.executable).with_name("dask")


@pytest.fixture
def scheduler(tmp_path):
    """`dask scheduler` plus `dask worker` with two single-threaded worker processes, on localhost."""
    info = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(info)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + 60
        while not info.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        procs.append(subprocess.Popen([str(DASK), "worker", "--scheduler-file", str(info), "--nworkers", "2",
                                       "--nthreads", "1", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from dask.distributed import Client
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_validate_on_a_dask_scheduler_gives_the_process_pool_verdicts(tmp_path, scheduler):
    for name in ("local", "cluster"):
        gold_generations(tmp_path / name, n_per_dsl=3)
    local = run_cli("validate", "--run", str(tmp_path / "local"), "--no-progress")
    remote = run_cli("validate", "--run", str(tmp_path / "cluster"), "--executor", scheduler, "--no-progress")
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    a, b = (comparable(RunStore(tmp_path / n).verdict_table()) for n in ("local", "cluster"))
    assert len(a) == 6 and (a["semantic_status"] == "pass").all(), a[["task_id", "semantic_status"]]
    cols = ["dsl", "task_id", "syntax_status", "semantic_status", "syntax_reason", "semantic_reason", "toolchain_version"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_cluster_work_units_are_batched_and_every_result_is_handled(monkeypatch):
    """On a cluster (an executor that reports its worker threads) jobs travel in batches of about
    jobs / (4 x threads); every job's result still reaches on_result with its own tag."""
    from concurrent.futures import ThreadPoolExecutor
    from dslbench import pipeline
    units = []

    class TwoThreadCluster(ThreadPoolExecutor):
        threads = 2

        def submit(self, fn, *args, **kwargs):
            units.append(len(args[0]))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(pipeline, "make_executor", lambda kind, workers: TwoThreadCluster(2))
    got = []
    pipeline.fan_out([(i, pow, (i, 2)) for i in range(100)], lambda tag, r: got.append((tag, r)),
                     None, None, "test", False)
    assert sorted(got) == [(i, i * i) for i in range(100)]
    assert units == [12] * 8 + [4]
    assert pipeline.batch_size(ThreadPoolExecutor(1), 100) == 1          # a local pool: one job per unit
