"""Judging one program: what a validation worker runs. It imports no pandas and loads only the
validator of the DSL it judges, so a worker process starts in a fraction of a second."""
from __future__ import annotations

import shutil

from . import toolchains, verdicts
from .sandbox import new_workdir
from .tasks import Task
from .verdicts import now


def evaluate(dsl: str, task: Task, program: str) -> dict:
    """Both validation levels for one program, settled (status + reason). Plain dicts: picklable, JSON-ready."""
    tc = toolchains.get(dsl)
    probe = toolchains.probe(dsl)
    out = {"probe": tc.task_probe(task, probe.to_dict()), "validator": tc.validator_name}
    if not probe.available:
        v = verdicts.level("unavailable", "toolchain_unavailable", probe.reason)
        return {**out, "syntax": v.to_dict(), "semantic": v.to_dict()}
    if not program.strip():
        syn = verdicts.level("fail", "no_program", "no program in the model output")
        return {**out, "syntax": syn.to_dict(), "semantic": verdicts.not_run(syn).to_dict()}
    work = new_workdir()
    try:
        for name, content in task.context.items():
            (work / name).write_text(content, encoding="utf-8")
        (work / tc.file_name).write_text(program, encoding="utf-8")
        syn, sem = tc.judge(program, task, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {**out, "syntax": syn.to_dict(), "semantic": sem.to_dict()}


def evaluate_job(dsl: str, task: Task, program: str) -> dict:
    started = now()
    out = evaluate(dsl, task, program)
    out["started"], out["finished"] = started, now()
    return out


def selfcheck_job(dsl: str, task: Task, kind: str, index: int, program: str) -> dict:
    out = evaluate(dsl, task, program)
    syn, sem = out["syntax"], out["semantic"]
    return {"dsl": dsl, "task_id": task.id, "program": kind, "index": index,
            "syntax": syn["status"], "semantic": sem["status"], "syntax_reason": syn["reason"],
            "semantic_reason": sem["reason"], "syntax_diagnostics": syn["diagnostics"],
            "semantic_diagnostics": sem["diagnostics"], "semantic_expected": sem.get("expected", ""), "toolchain": out["probe"]["toolchain"],
            "version": out["probe"]["version"], "seconds": syn["duration_s"] + sem["duration_s"]}
