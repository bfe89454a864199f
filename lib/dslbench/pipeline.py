"""The benchmark stages as library functions: generate, validate, self-check, report.

Each stage loads (and strictly checks) every task it needs before writing anything, fans work out
through an Executor, and appends one record per finished item to the run store, so an interrupted
stage resumes where it stopped.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import as_completed
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm
from tqdm.std import tqdm as std_tqdm

from . import decoding, judge, metrics, toolchains, verdicts
from .metrics import final_verdicts, with_rounds  # noqa: F401 (re-exported: the book and notebooks use them)
from .errors import UserError
from .executors import make_executor, run_batch, stop_workers
from .judge import evaluate  # noqa: F401 (re-exported: tests and benchmarks use it)
from .prompting import PROMPT_VERSION, build_messages, extract_program
from .revision import code_revision
from .store import RunStore, now, record_key
from .tasks import Task, load_tasks, select
from .verdicts import INTERVENTION_FIELDS, verdict_record


# Set by `dslbench pipeline` for the stage kernels it starts: their bars go to the terminal.
PROGRESS_ENV = "DSLBENCH_PROGRESS"


@contextmanager
def progress_bar(total: int, desc: str, enabled: bool = True):
    """tqdm over `total` items. In a stage kernel of `dslbench pipeline` the live bar (done/total, rate,
    ETA) goes to the terminal the pipeline runs in, and the notebook keeps one summary line instead
    of a widget that a saved notebook would show frozen at 0."""
    in_kernel = sys.stderr is not sys.__stderr__
    if not (enabled and os.environ.get(PROGRESS_ENV) == "terminal" and in_kernel):
        with tqdm(total=total, desc=desc, disable=not enabled) as bar:
            yield bar
        return
    # ipykernel may capture fd 2 into the notebook too; its copy of the original stderr is not captured
    terminal_fd = getattr(sys.stderr, "_original_stdstream_copy", None)
    terminal = sys.__stderr__ if terminal_fd is None else os.fdopen(terminal_fd, "w", closefd=False)
    with std_tqdm(total=total, desc=f"  {desc}", file=terminal, mininterval=1.0, dynamic_ncols=True) as bar:
        yield bar
        elapsed = bar.format_dict["elapsed"]
    print(f"{desc}: {bar.n}/{total} in {elapsed:.0f} s ({bar.n / elapsed if elapsed else 0:.2f}/s)")


def batch_size(executor, jobs: int) -> int:
    """Jobs per work unit: 1 on a local pool; on a dask cluster about four units per worker thread
    (at most MAX_BATCH jobs each), so that a scheduler round trip per program does not dominate while
    the units still spread evenly over the workers."""
    threads = getattr(executor, "threads", None)
    if not threads:
        return 1
    return max(1, min(MAX_BATCH, jobs // (4 * threads)))


MAX_BATCH = 16


def fan_out(jobs: list, on_result, executor: str | None, workers: int | None, desc: str, progress: bool) -> None:
    """Run jobs [(tag, fn, args)] on an Executor; call on_result(tag, result) in this process as each ends.

    Results are handled (stored) one at a time as they arrive, so an interrupt keeps every finished
    one; on Ctrl-C or an error, queued jobs are cancelled instead of being run to the end. On a dask
    cluster jobs travel in batches (`batch_size`); a batch's results are handled when it ends.
    """
    if not jobs:
        return
    ex = make_executor(executor, workers)
    try:
        size = batch_size(ex, len(jobs))
        units = [jobs[i:i + size] for i in range(0, len(jobs), size)]
        futures = {ex.submit(run_batch, [(fn, args) for _, fn, args in unit]): [tag for tag, _, _ in unit]
                   for unit in units}
        with progress_bar(len(jobs), desc, progress) as bar:
            for fut in as_completed(futures):
                for tag, result in zip(futures[fut], fut.result()):
                    on_result(tag, result)
                    bar.update()
    except BaseException:
        stop_workers(ex)        # first: shutdown forgets the pool's processes
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


# --- generation --------------------------------------------------------------------------------

def _generate_job(model_name: str, messages: list, params: dict, sample: int, cache_dir: str | None,
                  timeout: float | None = None, fences: tuple[str, ...] = (), endpoint: dict | None = None) -> dict:
    from .generation import GenerationCache, generate, resolve_model
    spec = resolve_model(model_name, **(endpoint or {}))
    cache = GenerationCache(Path(cache_dir)) if cache_dir else None
    kw = {"timeout": timeout} if timeout else {}
    res = generate(spec, messages, params, sample=sample, cache=cache, fences=fences, **kw)
    return res.__dict__


def task_fields(task: Task) -> dict:
    """The task fields every generation record carries (stage 02 and stage 07 alike)."""
    return {"dsl": task.dsl, "task_id": task.id, "domain": task.domain, "difficulty": task.difficulty,
            "split": task.split}


def generation_record(rec: dict, messages: list[dict], res: dict, max_tokens_from: str) -> dict:
    """The generation record of one model reply (`res`: a generation.GenerationResult as a dict) for the
    item `rec` (task fields, model, method, sample...). The only writer of generation records."""
    tc = toolchains.get(rec["dsl"])
    program, rule = extract_program(res["text"], tc.fence_aliases) if res["status"] == "ok" else ("", "none")
    return {
        "prompt_version": PROMPT_VERSION, **rec, "messages": messages, "litellm_model": res["model"],
        "params": res["params"], "raw_output": res["text"], "program": program, "extraction_rule": rule,
        "generation_status": res["status"], "generation_error": res["error"],
        "generation_reason": res.get("reason") or ("ok" if res["status"] == "ok" else "provider_error"),
        "finish_reason": res.get("finish_reason"), "provider_finish_reason": res.get("provider_finish_reason"),
        "reasoning": res.get("reasoning", ""), "max_tokens_from": max_tokens_from,
        "decoding": decoding.PROTOCOL, "api_base": res.get("api_base"), "cached": res["cached"],
        "usage": res["usage"], "generation_duration_s": res["duration_s"], "attempts": res["attempts"],
        "revision": code_revision(), "finished": now()}


def run_generation(run_dir, dsls=None, models=None, limit=None, samples: int = 1, method: str = "baseline",
                   params: dict | None = None, executor: str | None = None, workers: int | None = None,
                   cache_dir: str | None = None, progress: bool = True, prompt_fn=None,
                   retry_errors: bool = True, timeout: float | None = None, api_base: str | None = None,
                   api_key_env: str | None = None) -> pd.DataFrame:
    """Generate one output per (task, model, sample) not yet in the run; returns the stage's summary.

    Items whose earlier model call failed (provider errors) are tried again unless retry_errors is
    False; `timeout` is the overall deadline of one model call including its retries. `api_base` /
    `api_key_env` send every (served) model to that server; one run keeps one server per model.

    `prompt_fn(task, toolchain, model, sample)` (interventions) replaces the zero-shot prompt: it returns
    None (nothing to generate for this item) or a dict with `messages`, `prompt_version` and any further
    fields to store on the record (e.g. `round`, which becomes part of the record key).
    """
    from .generation import (DEFAULT_PARAMS, GenerationCache, cached, default_cache_dir, default_model_name,
                             effective_api_base, resolve_model)
    every = load_tasks(dsls or None, sampled=False)      # strict: stops before anything is written
    tasks = select(every, limit)                          # the DSLBENCH_SAMPLE sample, the first `limit`
    models = list(models or [default_model_name()])
    endpoint = {k: v for k, v in (("api_base", api_base), ("api_key_env", api_key_env)) if v}
    specs = {m: resolve_model(m, **endpoint) for m in models}
    user_params = dict(params or {})
    params = {**DEFAULT_PARAMS, **user_params}
    if samples < 1:
        raise UserError(f"option --samples: must be at least 1, got {samples}")
    if samples > 1 and not float(params.get("temperature") or 0) > 0:
        # at temperature 0 every sample is the same reply: pass@k would count one answer N times
        raise UserError(f"option --samples {samples}: repeated sampling needs a temperature above 0 "
                        f"(e.g. --params '{{\"temperature\": 0.8}}'); it is {params.get('temperature')}")
    # one decoding protocol (decoding.py): max_tokens per DSL from all its golds (whatever the sample, so
    # that a sampled run and a full one decode alike), unless the user set it
    budgets = {dsl: (user_params["max_tokens"], "user") if "max_tokens" in user_params else
               decoding.token_budget(toolchains.get(dsl).card, [t.gold for t in every[dsl]])
               for dsl in tasks}
    cache_dir = str(cache_dir or default_cache_dir())
    store = RunStore(run_dir)
    with store.writer("generate"):  # one writer per run folder
        store.log_invocation("generate", {"dsls": list(tasks), "models": models, "limit": limit, "samples": samples,
                                          "method": method, "params": params, "executor": executor,
                                          "max_tokens": {d: b[0] for d, b in budgets.items()},
                                          "retry_errors": retry_errors, "timeout": timeout,
                                          "api_base": api_base, "api_key_env": api_key_env})
        _one_server_per_model(store, {m: effective_api_base(s) for m, s in specs.items()})
        done = store.keys("generations", retry=retry_errors)
        todo = []
        for dsl, task_list in tasks.items():
            tc = toolchains.get(dsl)
            for task in task_list:
                base = {"messages": build_messages(task, tc), "prompt_version": PROMPT_VERSION} if prompt_fn is None else None
                for model in models:
                    for sample in range(samples):
                        p = base or prompt_fn(task, tc, model, sample)
                        if p is None:
                            continue
                        extra = {k: v for k, v in p.items() if k != "messages"}
                        rec = {**task_fields(task), "model": model, "method": method, "sample": sample, **extra}
                        if record_key(rec) not in done:
                            todo.append((rec, p["messages"]))
        # A local in-process model wants one worker (it uses every core itself); remote APIs wait on I/O.
        embedded = any(s.embedded for s in specs.values())
        workers = workers or (1 if embedded else 4)
        kind = executor or ("process" if embedded else "thread")
        def write(item, res: dict) -> None:
            rec, messages = item
            store.append("generations", generation_record(rec, messages, res, budgets[rec["dsl"]][1]))

        cache = GenerationCache(Path(cache_dir))
        jobs = []
        for rec, messages in todo:
            call = (messages, {**params, "max_tokens": budgets[rec["dsl"]][0]}, rec["sample"])
            fences = toolchains.get(rec["dsl"]).fence_aliases
            # a reply already in the cache is written here: no worker, no model load (a warm rerun)
            hit = cached(specs[rec["model"]], *call, cache, fences)
            if hit is not None:
                write((rec, messages), hit.__dict__)
            else:
                jobs.append(((rec, messages), _generate_job, (rec["model"], *call, cache_dir, timeout, fences, endpoint)))
        fan_out(jobs, write, kind, workers, "generate", progress)
    return summarize_generations(store)


def _one_server_per_model(store: RunStore, servers: dict) -> None:
    """Refuse to mix two servers' answers under one model name in a run (their records would look alike)."""
    for g in store.table("generations", ["model", "generation_status", "api_base"]).to_dict("records"):
        m = g["model"]
        if m in servers and g.get("generation_status") == "ok" and (_text(g.get("api_base")) or None) != servers[m]:
            raise UserError(f"{store.dir}: model {m!r} was generated from {_text(g.get('api_base')) or 'its default server'}"
                            f", this call would use {servers[m] or 'its default server'}: use a new --run folder "
                            "(the generation cache keeps each server's answers apart)")


def _text(value) -> str:
    """A table cell that may be missing (None or NaN) as text."""
    return value if isinstance(value, str) else ""


def summarize_generations(store: RunStore) -> pd.DataFrame:
    df = store.table("generations", ["dsl", "model", "generation_status", "extraction_rule"])
    if df.empty or "extraction_rule" not in df.columns:
        return df
    return (df.groupby(["dsl", "model", "generation_status", "extraction_rule"]).size()
              .rename("outputs").reset_index())


# --- validation --------------------------------------------------------------------------------

def run_validation(run_dir, dsls=None, executor: str | None = None, workers: int | None = None,
                   progress: bool = True, min_judged: float | None = metrics.DEFAULT_MIN_JUDGED) -> pd.DataFrame:
    """Validate every generation of the run that has no verdict yet; returns the verdict table.

    Raises metrics.RunCannotJudge (after every verdict is stored) when fewer than `min_judged` of a
    DSL's records were judged, e.g. because the sandbox could not start its runner (None: no check).
    """
    store = RunStore(run_dir)
    with store.writer("validate"):
        table = _validate_into(store, dsls, executor, workers, progress)
    if min_judged is not None:
        metrics.require_judged(table[table["dsl"].isin(dsls)] if dsls else table, min_judged)
    return table


def _validate_into(store: RunStore, dsls, executor, workers, progress) -> pd.DataFrame:
    # Which generations need a verdict is decided on the store's index; only those records are read.
    gens = store.table("generations", ["_key", "dsl", "task_id", "generation_status"])
    if dsls:
        gens = gens[gens["dsl"].isin(dsls)]
    # every generation of the run is judged, whatever task sample made it (stage 07 uses the whole set)
    tasks = load_tasks(sorted(set(gens["dsl"])), sampled=False) if len(gens) else {}
    by_id = {t.id: t for ts in tasks.values() for t in ts}
    missing = sorted(set(gens["task_id"]) - set(by_id)) if len(gens) else []
    if missing:
        raise ValueError(f"generations refer to tasks that no longer exist: {', '.join(missing[:10])}")
    store.log_invocation("validate", {"dsls": dsls, "executor": executor})
    done = store.keys("verdicts", retry=True)
    retried = store.keys("verdicts") - done      # verdicts on failed model calls: redo once the call succeeded
    todo_keys = [k for k, status in zip(gens["_key"], gens.get("generation_status", [None] * len(gens)))
                 if k not in done and not (k in retried and status != "ok")]
    todo = store.records("generations", keys=todo_keys)

    def write(gen: dict, out: dict) -> None:
        store.append("verdicts", verdict_record(gen, out, store.dir.name, code_revision()))

    jobs = []
    for gen in todo:
        if gen["generation_status"] != "ok":
            # The model call failed (rate limit, network...): an error, never a failed program.
            v = verdicts.level("error", "provider_error", f"generation failed: {gen.get('generation_error', '')}").to_dict()
            write(gen, {"probe": toolchains.probe(gen["dsl"]).to_dict(), "validator": "", "syntax": v, "semantic": v,
                        "started": now(), "finished": now()})
        else:
            jobs.append((gen, judge.evaluate_job, (gen["dsl"], by_id[gen["task_id"]], gen["program"])))
    fan_out(jobs, write, executor, workers, "validate", progress)
    store.export()
    return store.verdict_table()


# --- validators proving themselves -------------------------------------------------------------

def expected_outcome(kind: str) -> tuple[str, str]:
    """(syntax, semantic) statuses a program of this kind must get."""
    return {"gold": ("pass", "pass"), "equivalent": ("pass", "pass"), "syntax": ("fail", "fail"),
            "semantic": ("pass", "fail"), "placeholder_gold": ("pass", "fail")}[kind]


def expected_reasons(kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(syntax, semantic) reasons a program of this kind may get: a mutant must be killed for the right cause."""
    return {"gold": (("ok",), ("ok",)), "equivalent": (("ok",), ("ok",)),
            "syntax": (verdicts.SYNTAX_REASONS, ("syntax_failed",)),
            # a semantic mutant may also never terminate (a loop variable never updated): killed by the limit
            "semantic": (("ok",), (*verdicts.ORACLE_REASONS, "timeout")),
            # a placeholder (no upstream solution) must be accepted by the toolchain and rejected by the oracle
            "placeholder_gold": (("ok",), verdicts.ORACLE_REASONS)}[kind]


SELFCHECK_COLUMNS = ["dsl", "task_id", "program", "index", "syntax", "semantic", "syntax_reason", "semantic_reason",
                     "syntax_diagnostics", "semantic_diagnostics", "semantic_expected", "toolchain", "version", "seconds"]


def selfcheck(dsls=None, executor: str | None = None, workers: int | None = None, progress: bool = True,
              limit: int | None = None, shard: tuple[int, int] | None = None) -> pd.DataFrame:
    """Run every gold solution and known-bad program; column `ok` says whether it got what it must.

    Gold and its equivalents (correct programs that differ from it) must pass both levels; a syntax
    mutant must fail syntax with a parse or compile reason; a semantic mutant must pass syntax and fail
    semantics with an oracle reason (wrong output, a failed structural check or proof, a runtime error).
    A placeholder gold (Toolchain.gold_is_solution is False: the upstream ships no solution) is checked
    like a semantic mutant, as kind `placeholder_gold`. A level that cannot be judged here (no toolchain,
    or a semantic level `unavailable` for a program meant to pass syntax) gives ok = None.
    `shard` = (k, n) keeps every n-th task of each DSL in id order, starting at the k-th (0-based), so
    that n runs, on other days or machines, check a large imported set exactly once between them.
    """
    tasks = load_tasks(dsls or None, limit=limit)
    if shard:
        k, n = shard
        tasks = {dsl: sorted(ts, key=lambda t: t.id)[k::n] for dsl, ts in tasks.items()}
    jobs = []
    for dsl, ts in tasks.items():
        for t in ts:
            gold_kind = "gold" if toolchains.get(dsl).gold_is_solution(t) else "placeholder_gold"
            jobs.append((dsl, t, gold_kind, 0, t.gold))
            jobs += [(dsl, t, m.level, i, m.program) for i, m in enumerate(t.mutants)]
            jobs += [(dsl, t, "equivalent", i, e.program) for i, e in enumerate(t.equivalents)]
    rows = []
    fan_out([(None, judge.selfcheck_job, job) for job in jobs], lambda _, row: rows.append(row),
            executor, workers, "self-check", progress)
    df = pd.DataFrame(rows, columns=SELFCHECK_COLUMNS)
    df["expected_syntax"] = df["program"].map(lambda k: expected_outcome(k)[0])
    df["expected_semantic"] = df["program"].map(lambda k: expected_outcome(k)[1])
    reasons_ok = [r.syntax_reason in expected_reasons(r.program)[0] and r.semantic_reason in expected_reasons(r.program)[1]
                  for r in df.itertuples()]
    # no judge for the level that decides: syntax, or the semantics of a program meant to pass syntax
    unavailable = (df["syntax"] == "unavailable") | ((df["semantic"] == "unavailable") & (df["expected_syntax"] == "pass"))
    df["ok"] = ((df["syntax"] == df["expected_syntax"]) & (df["semantic"] == df["expected_semantic"])
                & pd.Series(reasons_ok, index=df.index, dtype=bool)).astype(object)
    df.loc[unavailable, "ok"] = None
    # What each mutant changed, so that a survivor can be read without reloading the tasks.
    notes = {(t.id, m.level, i): m.note or "" for ts in tasks.values() for t in ts for i, m in enumerate(t.mutants)}
    df["note"] = [notes.get((r.task_id, r.program, r.index), "") for r in df.itertuples()]
    return df.sort_values(["dsl", "task_id", "program", "index"]).reset_index(drop=True)


# --- reporting ----------------------------------------------------------------------------------

def pass_rates(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per DSL x model x method pass rates (%): `dslbench.metrics.rates`, the one definition."""
    return metrics.rates(verdicts)


def doctor() -> pd.DataFrame:
    """Availability matrix: DSL, toolchain, version, dialect, available or why not, sandbox mode."""
    from .sandbox import sandbox_mode
    df = pd.DataFrame(toolchains.availability())
    df.attrs["sandbox"] = sandbox_mode()
    return df
