"""Run the stage notebooks (notebooks/NN_name.ipynb) with papermill, in numeric order.

Each executed copy lands in <run>/notebooks/, so a run directory holds both the data and the
notebooks that produced and analysed it.
"""
from __future__ import annotations

import os
from pathlib import Path

from .paths import notebooks_dir, repo_root


class StageFailed(RuntimeError):
    """A stage notebook raised: the message names the stage, the error and the executed copy."""


def stage_notebooks() -> list[Path]:
    return sorted(p for p in notebooks_dir().glob("[0-9][0-9]_*.ipynb"))


def run_pipeline(run_dir, dsls=None, models=None, limit=None, executor=None, stages=None, extra=None,
                 sample: int | None = None, seed: int | None = None) -> list[Path]:
    """Execute the stages in order. `sample`/`seed` set DSLBENCH_SAMPLE/DSLBENCH_SEED, which every stage
    kernel inherits (tasks.load_tasks draws the same stratified sample in each); run.json records them."""
    import papermill as pm
    from .pipeline import PROGRESS_ENV
    from .store import RunStore
    from .tasks import SAMPLE_ENV, SEED_ENV, task_sample
    run_dir = Path(run_dir).resolve()
    out_dir = run_dir / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    if sample is not None:
        os.environ[SAMPLE_ENV] = str(sample)
    if seed is not None:
        os.environ[SEED_ENV] = str(seed)
    n, s = task_sample()                         # checked here, before any stage starts
    params = {"run_dir": str(run_dir), "dsls": list(dsls or []), "models": list(models or []),
              "limit": limit, "executor": executor, **(extra or {})}
    # each notebook gets the parameters it declares (papermill warns about the others); a --param that
    # no stage declares is a typo, refused before anything runs
    declared = {nb: set(pm.inspect_notebook(str(nb))) for nb in stage_notebooks() if not stages or nb.stem in stages}
    unknown = sorted(set(extra or {}) - set().union(*declared.values()))
    if unknown:
        from .errors import UserError
        raise UserError(f"--param {', '.join(unknown)}: no stage notebook to run declares such a parameter")
    RunStore(run_dir).log_invocation("pipeline", {**params, "stages": list(stages or []),
                                                  "task_sample": n, "task_seed": s if n else None})
    done = []
    for nb, names in declared.items():
        out = out_dir / nb.name
        print(f"[pipeline] {nb.stem} -> {out}")
        try:
            # papermill's bar counts cells; the stage's own bars (tasks done/total, rate, ETA) reach
            # this terminal through the kernel's inherited stderr (pipeline.progress_bar)
            os.environ[PROGRESS_ENV] = "terminal"
            pm.execute_notebook(str(nb), str(out), parameters={k: v for k, v in params.items() if k in names},
                                cwd=str(repo_root()),
                                kernel_name="python3", progress_bar={"desc": f"  {nb.stem} cells"},
                                log_output=False)
        except pm.PapermillExecutionError as e:
            raise StageFailed(f"stage {nb.stem} failed: {e.ename}: {e.evalue} (executed notebook: {out})") from None
        done.append(out)
    return done
