"""The benchmark stages as library functions: generate, validate, self-check, report.

Each stage loads (and strictly checks) every task it needs before writing anything, fans work out
through an Executor, and appends one record per finished item to the run store, so an interrupted
stage resumes where it stopped.
"""
from __future__ import annotations

import shutil
import traceback
from concurrent.futures import as_completed
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from . import toolchains
from .executors import make_executor
from .prompting import PROMPT_VERSION, build_messages, extract_program
from .revision import code_revision
from .sandbox import new_workdir
from .store import KEY_FIELDS, RunStore, now, record_key
from .tasks import Task, load_tasks
from .toolchains import LevelVerdict


def fan_out(jobs: list, on_result, executor: str | None, workers: int | None, desc: str, progress: bool) -> None:
    """Run jobs [(tag, fn, args)] on an Executor; call on_result(tag, result) in this process as each ends.

    Results are handled (stored) one at a time as they arrive, so an interrupt keeps every finished
    one; on Ctrl-C or an error, queued jobs are cancelled instead of being run to the end.
    """
    if not jobs:
        return
    ex = make_executor(executor, workers)
    try:
        futures = {ex.submit(fn, *args): tag for tag, fn, args in jobs}
        with tqdm(total=len(futures), desc=desc, disable=not progress) as bar:
            for fut in as_completed(futures):
                on_result(futures[fut], fut.result())
                bar.update()
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


# --- validation of one program (runs in a worker) -------------------------------------------

def _guard(fn, program: str, task: Task, work: Path) -> LevelVerdict:
    try:
        return fn(program, task, work)
    except Exception as e:  # a validator bug is an error, never a verdict on the program
        return LevelVerdict("error", f"validator crashed: {type(e).__name__}: {e}", log=traceback.format_exc()[-4000:])


def evaluate(dsl: str, task: Task, program: str) -> dict:
    """Both validation levels for one program. Returns plain dicts (picklable, JSON-ready)."""
    tc = toolchains.get(dsl)
    probe = toolchains.probe(dsl)
    if not probe.available:
        v = LevelVerdict("unavailable", probe.reason)
        return {"probe": probe.to_dict(), "syntax": v.to_dict(), "semantic": v.to_dict()}
    if not program.strip():
        syn = LevelVerdict("fail", "no program in the model output")
        sem = LevelVerdict("fail", "not run: the program failed the syntax level")
        return {"probe": probe.to_dict(), "syntax": syn.to_dict(), "semantic": sem.to_dict()}
    work = new_workdir()
    try:
        for name, content in task.context.items():
            (work / name).write_text(content, encoding="utf-8")
        (work / tc.file_name).write_text(program, encoding="utf-8")
        syn = _guard(tc.syntax, program, task, work)
        if syn.status == "pass":
            sem = _guard(tc.semantic, program, task, work)
        elif syn.status == "fail":
            sem = LevelVerdict("fail", "not run: the program failed the syntax level")
        else:
            sem = LevelVerdict(syn.status, f"not run: the syntax level was {syn.status}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"probe": probe.to_dict(), "syntax": syn.to_dict(), "semantic": sem.to_dict()}


# --- generation --------------------------------------------------------------------------------

def _generate_job(model_name: str, messages: list, params: dict, sample: int, cache_dir: str | None) -> dict:
    from .generation import GenerationCache, generate, resolve_model
    spec = resolve_model(model_name)
    cache = GenerationCache(Path(cache_dir)) if cache_dir else None
    res = generate(spec, messages, params, sample=sample, cache=cache)
    return res.__dict__


def _task_fields(task: Task) -> dict:
    return {"dsl": task.dsl, "task_id": task.id, "domain": task.domain, "difficulty": task.difficulty,
            "split": task.split}


def run_generation(run_dir, dsls=None, models=None, limit=None, samples: int = 1, method: str = "baseline",
                   params: dict | None = None, executor: str | None = None, workers: int | None = None,
                   cache_dir: str | None = None, progress: bool = True, prompt_fn=None) -> pd.DataFrame:
    """Generate one output per (task, model, sample) not yet in the run; returns the stage's summary.

    `prompt_fn(task, toolchain, model, sample)` (interventions) replaces the zero-shot prompt: it returns
    None (nothing to generate for this item) or a dict with `messages`, `prompt_version` and any further
    fields to store on the record (e.g. `round`, which becomes part of the record key).
    """
    from .generation import DEFAULT_PARAMS, default_cache_dir, default_model_name, resolve_model
    tasks = load_tasks(dsls or None, limit=limit)        # strict: stops before anything is written
    models = list(models or [default_model_name()])
    specs = {m: resolve_model(m) for m in models}
    params = {**DEFAULT_PARAMS, **(params or {})}
    cache_dir = str(cache_dir or default_cache_dir())
    store = RunStore(run_dir)
    store.log_invocation("generate", {"dsls": list(tasks), "models": models, "limit": limit, "samples": samples,
                                      "method": method, "params": params, "executor": executor})
    done = store.keys("generations")
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
                    rec = {**_task_fields(task), "model": model, "method": method, "sample": sample, **extra}
                    if record_key(rec) not in done:
                        todo.append((rec, p["messages"]))
    # A local in-process model wants one worker (it uses every core itself); remote APIs wait on I/O.
    embedded = any(s.embedded for s in specs.values())
    workers = workers or (1 if embedded else 4)
    kind = executor or ("process" if embedded else "thread")
    def write(item, res: dict) -> None:
        rec, messages = item
        tc = toolchains.get(rec["dsl"])
        program, rule = extract_program(res["text"], tc.fence_aliases) if res["status"] == "ok" else ("", "none")
        store.append("generations", {
            "prompt_version": PROMPT_VERSION, **rec, "messages": messages, "litellm_model": res["model"],
            "params": res["params"], "raw_output": res["text"], "program": program, "extraction_rule": rule,
            "generation_status": res["status"], "generation_error": res["error"], "cached": res["cached"],
            "usage": res["usage"], "generation_duration_s": res["duration_s"], "attempts": res["attempts"],
            "revision": code_revision(), "finished": now()})

    jobs = [((rec, messages), _generate_job, (rec["model"], messages, params, rec["sample"], cache_dir))
            for rec, messages in todo]
    fan_out(jobs, write, kind, workers, "generate", progress)
    return summarize_generations(store)


def summarize_generations(store: RunStore) -> pd.DataFrame:
    df = pd.DataFrame(store.records("generations"))
    if df.empty:
        return df
    return (df.groupby(["dsl", "model", "generation_status", "extraction_rule"]).size()
              .rename("outputs").reset_index())


# --- validation --------------------------------------------------------------------------------

def _evaluate_job(dsl: str, task: Task, program: str) -> dict:
    started = now()
    out = evaluate(dsl, task, program)
    out["started"], out["finished"] = started, now()
    return out


# Fields of intervention records (refinement round, retrieved chunks, ...) carried onto their verdicts.
INTERVENTION_FIELDS = ("round", "refines", "copied_from", "retrieved", "retrieval")


def run_validation(run_dir, dsls=None, executor: str | None = None, workers: int | None = None,
                   progress: bool = True) -> pd.DataFrame:
    """Validate every generation of the run that has no verdict yet; returns the verdict table."""
    store = RunStore(run_dir)
    gens = [g for g in store.records("generations") if not dsls or g["dsl"] in dsls]
    tasks = load_tasks(sorted({g["dsl"] for g in gens})) if gens else {}
    by_id = {t.id: t for ts in tasks.values() for t in ts}
    missing = sorted({g["task_id"] for g in gens} - set(by_id))
    if missing:
        raise ValueError(f"generations refer to tasks that no longer exist: {', '.join(missing[:10])}")
    store.log_invocation("validate", {"dsls": dsls, "executor": executor})
    done = store.keys("verdicts")
    todo = [g for g in gens if record_key(g) not in done]

    def write(gen: dict, out: dict) -> None:
        probe = out["probe"]
        store.append("verdicts", {
            **{k: gen[k] for k in ("dsl", "task_id", "model", "method", "sample", "domain", "difficulty", "split",
                                   "messages", "raw_output", "program", "extraction_rule", "prompt_version",
                                   "generation_status")},
            **{k: gen[k] for k in INTERVENTION_FIELDS if k in gen},
            "run": store.dir.name, "toolchain": probe["toolchain"], "toolchain_version": probe["version"],
            "dialect": probe["dialect"], "syntax": out["syntax"], "semantic": out["semantic"],
            "sandbox": out["syntax"].get("sandbox") or out["semantic"].get("sandbox") or "",
            "revision": code_revision(), "started": out["started"], "finished": out["finished"]})

    jobs = []
    for gen in todo:
        if gen["generation_status"] != "ok":
            # The model call failed (rate limit, network...): an error, never a failed program.
            v = LevelVerdict("error", f"generation failed: {gen.get('generation_error', '')}").to_dict()
            probe = toolchains.probe(gen["dsl"]).to_dict()
            write(gen, {"probe": probe, "syntax": v, "semantic": v, "started": now(), "finished": now()})
        else:
            jobs.append((gen, _evaluate_job, (gen["dsl"], by_id[gen["task_id"]], gen["program"])))
    fan_out(jobs, write, executor, workers, "validate", progress)
    store.export()
    return store.verdict_table()


# --- validators proving themselves -------------------------------------------------------------

def _selfcheck_job(dsl: str, task: Task, kind: str, index: int, program: str) -> dict:
    out = evaluate(dsl, task, program)
    return {"dsl": dsl, "task_id": task.id, "program": kind, "index": index,
            "syntax": out["syntax"]["status"], "semantic": out["semantic"]["status"],
            "syntax_diagnostics": out["syntax"]["diagnostics"], "semantic_diagnostics": out["semantic"]["diagnostics"],
            "toolchain": out["probe"]["toolchain"], "version": out["probe"]["version"],
            "seconds": out["syntax"]["duration_s"] + out["semantic"]["duration_s"]}


def expected_outcome(kind: str) -> tuple[str, str]:
    """(syntax, semantic) statuses a program of this kind must get."""
    return {"gold": ("pass", "pass"), "syntax": ("fail", "fail"), "semantic": ("pass", "fail")}[kind]


def selfcheck(dsls=None, executor: str | None = None, workers: int | None = None, progress: bool = True,
              limit: int | None = None) -> pd.DataFrame:
    """Run every gold solution and known-bad program; column `ok` says whether it got what it must.

    Gold must pass both levels; a syntax mutant must fail syntax; a semantic mutant must pass
    syntax and fail semantics. Unavailable toolchains give ok = None (not judged here).
    """
    tasks = load_tasks(dsls or None, limit=limit)
    jobs = []
    for dsl, ts in tasks.items():
        for t in ts:
            jobs.append((dsl, t, "gold", 0, t.gold))
            jobs += [(dsl, t, m.level, i, m.program) for i, m in enumerate(t.mutants)]
    rows = []
    fan_out([(None, _selfcheck_job, job) for job in jobs], lambda _, row: rows.append(row),
            executor, workers, "self-check", progress)
    df = pd.DataFrame(rows, columns=["dsl", "task_id", "program", "index", "syntax", "semantic", "syntax_diagnostics",
                                     "semantic_diagnostics", "toolchain", "version", "seconds"])
    df["expected_syntax"] = df["program"].map(lambda k: expected_outcome(k)[0])
    df["expected_semantic"] = df["program"].map(lambda k: expected_outcome(k)[1])
    unavailable = (df["syntax"] == "unavailable")
    df["ok"] = ((df["syntax"] == df["expected_syntax"]) & (df["semantic"] == df["expected_semantic"])).astype(object)
    df.loc[unavailable, "ok"] = None
    return df.sort_values(["dsl", "task_id", "program", "index"]).reset_index(drop=True)


# --- reporting ----------------------------------------------------------------------------------

def with_rounds(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdict table with an integer `round` column (0 where a record has none)."""
    df = verdicts.copy()
    rounds = df["round"] if "round" in df else pd.Series(0, index=df.index)
    df["round"] = pd.to_numeric(rounds, errors="coerce").fillna(0).astype(int)
    return df


def final_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One record per (dsl, task, model, method, sample): the last round of each refinement chain."""
    df = with_rounds(verdicts)
    if df.empty or not (df["round"] > 0).any():  # no refinement rounds: one record per key already
        return df
    return (df.sort_values([*KEY_FIELDS, "round"]).groupby(list(KEY_FIELDS), as_index=False).tail(1)
              .reset_index(drop=True))


def pass_rates(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per DSL x model syntax and semantic pass rates (%), unavailable/error verdicts excluded and counted.
    A refinement chain counts once, by its last round."""
    verdicts = final_verdicts(verdicts)
    rows = []
    for (dsl, model, method), g in verdicts.groupby(["dsl", "model", "method"]):
        judged = g[g["syntax_status"].isin(["pass", "fail"])]
        rows.append({"dsl": dsl, "model": model, "method": method, "tasks": len(g), "evaluated": len(judged),
                     "unavailable": int((g["syntax_status"] == "unavailable").sum()),
                     "errors": int((g["syntax_status"] == "error").sum() + (g["semantic_status"] == "error").sum()),
                     "syntax_pass_pct": 100 * (judged["syntax_status"] == "pass").mean() if len(judged) else float("nan"),
                     "semantic_pass_pct": 100 * (judged["semantic_status"] == "pass").mean() if len(judged) else float("nan")})
    return pd.DataFrame(rows)


def doctor() -> pd.DataFrame:
    """Availability matrix: DSL, toolchain, version, dialect, available or why not, sandbox mode."""
    from .sandbox import sandbox_mode
    rows = []
    for dsl, tc in toolchains.discover().items():
        p = toolchains.probe(dsl)
        rows.append({"dsl": dsl, "language": tc.card.get("language", dsl), "domain": tc.card.get("domain", ""),
                     "toolchain": p.toolchain, "version": p.version, "dialect": p.dialect,
                     "available": p.available, "reason": p.reason})
    df = pd.DataFrame(rows)
    df.attrs["sandbox"] = sandbox_mode()
    return df
