"""Where fan-out work runs: every stage takes a concurrent.futures.Executor.

  "process"          local process pool (default)
  "thread"           local threads (remote API models: the work is waiting on the network)
  "dask-local"       a dask.distributed LocalCluster on this machine (tests the cluster path)
  "tcp://host:port"  an existing dask.distributed scheduler; its workers need this repository
                     installed (same install script) so that toolchains and tasks resolve there
All return objects with the Executor interface (submit, shutdown), so the stages never change.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

from . import settings
from .errors import UserError


class _DaskExecutor:
    """A dask ClientExecutor that also closes its client (and local cluster) on shutdown."""

    def __init__(self, client, cluster=None):
        self.client, self.cluster = client, cluster
        self._ex = client.get_executor()
        # worker threads of the cluster now (pipeline.batch_size sizes work units by it)
        self.threads = sum(client.nthreads().values()) or 1

    def submit(self, fn, *args, **kwargs):
        return self._ex.submit(fn, *args, **kwargs)

    def shutdown(self, wait=True, cancel_futures=False):
        self._ex.shutdown(wait=wait)
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown(wait=exc[0] is None, cancel_futures=exc[0] is not None)
        return False


def run_batch(items: list) -> list:
    """Several jobs as one work unit: [(fn, args)] -> their results, in order. It lives here, not in
    the pipeline, so that a worker unpickling it imports nothing heavy (no pandas)."""
    return [fn(*args) for fn, args in items]


def _die_with_parent() -> None:
    """Worker initializer: if the parent is killed (SIGKILL, OOM), the worker dies too instead of
    finishing a long model call as an orphan. Linux only; elsewhere a no-op."""
    try:
        import ctypes
        import signal
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


KINDS = ("process", "thread", "dask-local")
REMOTE = ("tcp://", "tls://", "dask://")


def check_executor(kind: str | None) -> None:
    """Refuse an unknown executor (the option or DSLBENCH_EXECUTOR) before anything starts or is written."""
    kind = kind or settings.get("DSLBENCH_EXECUTOR")
    # a bare "tcp://" has no scheduler address to connect to
    if kind not in KINDS and not (kind.startswith(REMOTE) and kind.split("://", 1)[1]):
        raise UserError(f"option --executor: unknown executor {kind!r}; allowed: {', '.join(KINDS)}, "
                        f"tcp://host:port, tls://host:port, dask://host:port")


def make_executor(kind: str | None = None, workers: int | None = None) -> Executor:
    check_executor(kind)
    kind = kind or settings.get("DSLBENCH_EXECUTOR")
    if workers is not None and workers < 1:  # 0 must not silently mean "one per CPU"
        raise UserError(f"option --workers: must be at least 1, got {workers}")
    workers = workers or os.cpu_count() or 1
    if kind == "process":
        # spawn: workers start clean (no inherited threads or half-loaded models)
        return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_die_with_parent)
    if kind == "thread":
        return ThreadPoolExecutor(max_workers=workers)
    if kind == "dask-local" or kind.startswith(REMOTE):
        from dask.distributed import Client, LocalCluster
        if kind == "dask-local":
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None, host="127.0.0.1")
            return _DaskExecutor(Client(cluster), cluster)
        return _DaskExecutor(Client(kind.replace("dask://", "tcp://", 1)))
    raise AssertionError(f"check_executor let {kind!r} through")  # KINDS and the branches above disagree
