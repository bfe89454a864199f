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


# In a process-pool worker: a stop was asked for (SIGINT or SIGTERM), and whether a work unit is running.
_stopping = False
_in_unit = False


def run_batch(items: list) -> list:
    """Several jobs as one work unit: [(fn, args)] -> their results, in order. It lives here, not in
    the pipeline, so that a worker unpickling it imports nothing heavy (no pandas)."""
    global _in_unit
    _in_unit = True
    try:
        if _stopping:           # a unit queued before the stop: do not start it
            raise KeyboardInterrupt
        return [fn(*args) for fn, args in items]
    finally:
        _in_unit = False


def _on_stop(signum, frame) -> None:
    """A worker's SIGINT/SIGTERM: the unit it runs ends now (the sandbox kills its program and removes
    its work folder), and so does every unit already queued to it. An idle worker only notes the stop
    and leaves when the pool shuts down, without printing a traceback."""
    global _stopping
    _stopping = True
    if _in_unit:
        raise KeyboardInterrupt


def _worker_init() -> None:
    """Process-pool worker initializer. If the parent is killed (SIGKILL, OOM), the worker dies too
    instead of finishing a long model call as an orphan (Linux only; elsewhere a no-op); a SIGINT or
    SIGTERM stops its work at once (_on_stop)."""
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_stop)
    try:
        import ctypes
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def stop_workers(ex: Executor) -> None:
    """After Ctrl-C or SIGTERM in the parent: stop what a local process pool's workers are running,
    instead of waiting at exit for their programs (a forge or Dafny run takes minutes) and for the
    units queued to them. A Ctrl-C in a terminal signals the workers too; `kill` signals only the parent."""
    import signal
    # ProcessPoolExecutor keeps its workers in _processes (CPython 3.8+; 3.14 adds terminate_workers())
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, TypeError):
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
                                   initializer=_worker_init)
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
