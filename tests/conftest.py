import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def dslbench_cmd(*args: str) -> list[str]:
    return [str(BIN / "dslbench"), *args]


@pytest.fixture
def project_copy(tmp_path, monkeypatch):
    """A copy of the project's data and toolchains that a test may break; DSLBENCH_ROOT points at it."""
    root = tmp_path / "project"
    for sub in ("toolchains", "data", "notebooks"):
        shutil.copytree(ROOT / sub, root / sub, ignore=shutil.ignore_patterns("node_modules", "__pycache__", ".venv"))
    # A side environment (cypher's FalkorDBLite, 115 MB) is linked, not copied: some 40 tests take a
    # copy, and copying it filled a CI machine's disk with 5.7 GB per run.
    for venv in (ROOT / "toolchains").glob("*/.venv"):
        (root / "toolchains" / venv.parent.name / ".venv").symlink_to(venv)
    (root / "lib").symlink_to(ROOT / "lib")
    monkeypatch.setenv("DSLBENCH_ROOT", str(root))
    from dslbench import toolchains
    toolchains.discover.cache_clear()
    toolchains.probe.cache_clear()
    yield root
    toolchains.discover.cache_clear()
    toolchains.probe.cache_clear()


def run_cli(*args, env=None, timeout=1800, **kw) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(dslbench_cmd(*args), capture_output=True, text=True, env=full_env, timeout=timeout, **kw)


def skip_without_toolchain(dsl: str):
    """A module-wide autouse fixture: `available = skip_without_toolchain("jq")` skips the module's
    tests when the DSL's toolchain cannot judge here (with the probe's reason)."""
    @pytest.fixture(scope="module", autouse=True)
    def available():
        from dslbench import toolchains
        probe = toolchains.probe(dsl)
        if not probe.available:
            pytest.skip(f"{dsl} toolchain unavailable here: {probe.reason}")
    return available


def tasks_if_available(dsl: str):
    """A module fixture `tasks = tasks_if_available("jq")`: the DSL's bundled tasks by id; the tests that
    use it are skipped (with the probe's reason) when the DSL's toolchain cannot judge here."""
    @pytest.fixture(scope="module")
    def tasks():
        from dslbench import toolchains
        from dslbench.tasks import load_tasks
        probe = toolchains.probe(dsl)
        if not probe.available:
            pytest.skip(f"{dsl} toolchain unavailable here: {probe.reason}")
        return {t.id: t for t in load_tasks([dsl])[dsl]}
    return tasks


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _evaluate_in_child(conn, dsl, task, program):
    from dslbench import pipeline
    try:
        conn.send(("ok", pipeline.evaluate(dsl, task, program)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(("crash", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def evaluate_in_fork(dsl: str, task, program: str, wall_s: float,
                     rss_mb: float | None = None) -> tuple[dict | None, float, str]:
    """pipeline.evaluate in a forked child, which sees this process's monkeypatched cards (lowered
    limits). The child is killed past `wall_s` seconds or `rss_mb` MB resident, so a program that turns
    the host side against itself cannot take the test process down; a killed child's work dirs are
    removed. Returns (outcome or None, wall seconds, what went wrong on the host side or '')."""
    import multiprocessing
    import re
    import tempfile
    import time
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_evaluate_in_child, args=(send, dsl, task, program), daemon=True)
    t0 = time.monotonic()
    child.start()
    send.close()
    problem, message = "", None
    while message is None:
        if receive.poll(0.1):
            try:
                message = receive.recv()
            except EOFError:
                problem = f"the evaluating process died (exit {child.exitcode})"
            break
        rss = _rss_mb(child.pid) if rss_mb else 0.0
        if rss_mb and rss > rss_mb:
            problem = f"the host side of the evaluation grew past {rss_mb} MB ({rss:.0f} MB resident)"
        elif time.monotonic() - t0 > wall_s:
            problem = f"the host side of the evaluation ran longer than {wall_s:.0f} s"
        elif not child.is_alive() and not receive.poll(0.1):
            problem = f"the evaluating process died (exit {child.exitcode})"
        if problem:
            break
    wall = time.monotonic() - t0
    if child.is_alive() and problem:
        child.kill()
    child.join()
    receive.close()
    if problem:
        for leftover in Path(tempfile.gettempdir()).glob(f"dslbench-*{child.pid}-*"):
            if re.match(rf"dslbench-(?:[a-z]+-)*{child.pid}-", leftover.name):
                shutil.rmtree(leftover, ignore_errors=True)
    if message and message[0] == "crash":
        problem = f"pipeline.evaluate raised {message[1]}"
    return (message[1] if message and message[0] == "ok" else None), wall, problem


def gold_generations(run_dir, n_per_dsl=8, dsls=("jq", "verilog")):
    """A run whose 'model' replays gold solutions: lets the store test run real validators fast."""
    from dslbench.prompting import PROMPT_VERSION
    from dslbench.store import RunStore
    from dslbench.tasks import load_tasks
    store = RunStore(run_dir)
    tasks = load_tasks(list(dsls), limit=n_per_dsl)
    for ts in tasks.values():
        for t in ts:
            store.append("generations", {"dsl": t.dsl, "task_id": t.id, "model": "gold-replay", "method": "baseline",
                                         "sample": 0, "domain": t.domain, "difficulty": t.difficulty, "split": t.split,
                                         "messages": [], "raw_output": t.gold, "program": t.gold,
                                         "extraction_rule": "whole-output", "prompt_version": PROMPT_VERSION,
                                         "generation_status": "ok"})
    return sum(len(ts) for ts in tasks.values())
