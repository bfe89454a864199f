"""The oracle cache: a gold program runs once per task and toolchain version, alone, and a gold that
does not run is never kept."""
from dslbench import toolchains
from dslbench.tasks import load_tasks


def _task():
    return load_tasks(["jq"], sampled=False)["jq"][0]


def test_gold_runs_once_alone_and_is_kept_per_task(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLBENCH_ORACLE_CACHE", str(tmp_path / "oracle"))
    tc, task = toolchains.get("jq"), _task()
    calls = []

    def compute(work):
        calls.append(sorted(p.name for p in work.iterdir()))
        return {"outputs": [1, 2]}, "run"

    assert tc.gold_expected(task, compute) == ({"outputs": [1, 2]}, "run")
    assert tc.gold_expected(task, compute) == ({"outputs": [1, 2]}, None)     # from the cache, no run
    assert calls == [sorted(task.context)]                # one run, in a folder with the task's files only
    assert len(list((tmp_path / "oracle" / "jq").glob("*.json"))) == 1

    changed = type(task)(**{**vars(task), "gold": task.gold + " | ."})
    tc.gold_expected(changed, compute)                     # another gold is another entry
    assert len(calls) == 2


def test_a_gold_that_does_not_run_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLBENCH_ORACLE_CACHE", str(tmp_path / "oracle"))
    tc, task = toolchains.get("jq"), _task()
    calls = []

    def broken(work):
        calls.append(1)
        return None, "failed run"

    assert tc.gold_expected(task, broken) == (None, "failed run")
    assert tc.gold_expected(task, broken) == (None, "failed run")
    assert len(calls) == 2 and not (tmp_path / "oracle" / "jq").exists()
