"""Papermill batch runs: one executed notebook per combination of a parameter grid.

A grid file (YAML):
  notebook: notebooks/02_generation.ipynb      # or `notebooks: [...]`, run in order per combination
  output_dir: runs/batch
  parameters:                                   # each a list of values
    run_dir: [runs/batch/a, runs/batch/b]
    dsls: [[jq], [verilog]]
  zip: true                                     # pair lists element-wise (default: full product)
Finished notebooks are skipped on a rerun (resumable); output_dir/batch.json lists every notebook
with its parameters and status, and the book's "Batch runs" page is built from it.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
from pathlib import Path

import yaml

from .paths import repo_root


def load_grid(path: Path) -> dict:
    path = Path(path)
    grid = yaml.safe_load(path.read_text()) or {}
    notebooks = grid.get("notebooks") or ([grid["notebook"]] if grid.get("notebook") else [])
    if not notebooks:
        raise ValueError(f"{path}: field 'notebook' (or 'notebooks') is required")
    params = grid.get("parameters") or {}
    if not isinstance(params, dict) or not all(isinstance(v, list) and v for v in params.values()):
        raise ValueError(f"{path}: field 'parameters' must map each name to a non-empty list of values")
    names = list(params)
    if grid.get("zip"):
        lengths = {len(v) for v in params.values()}
        if len(lengths) > 1:
            raise ValueError(f"{path}: with zip: true every parameter list needs the same length")
        combos = [dict(zip(names, vals)) for vals in zip(*params.values())]
    else:
        combos = [dict(zip(names, vals)) for vals in itertools.product(*params.values())]
    return {"notebooks": [Path(n) for n in notebooks], "output_dir": Path(grid.get("output_dir", "runs/batch")),
            "combos": combos}


def _combo_id(params: dict) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]


def _finished(nb_path: Path) -> bool:
    if not nb_path.exists():
        return False
    import nbformat   # here: `dslbench batch --help` shows this module's docstring without loading it
    try:
        nb = nbformat.read(nb_path, as_version=4)
    except Exception:
        return False
    meta = nb.metadata.get("papermill", {})
    return not meta.get("exception") and meta.get("end_time") is not None  # papermill: None on success


def run_batch(grid_path: Path, force: bool = False) -> list[dict]:
    import papermill as pm
    grid = load_grid(grid_path)
    out_dir = grid["output_dir"] if grid["output_dir"].is_absolute() else repo_root() / grid["output_dir"]
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for params in grid["combos"]:
        cid = _combo_id(params)
        for nb in grid["notebooks"]:
            src = nb if nb.is_absolute() else repo_root() / nb
            out = out_dir / f"{src.stem}__{cid}.ipynb"
            status = "skipped (already finished)"
            if force or not _finished(out):
                try:
                    pm.execute_notebook(str(src), str(out), parameters=params, cwd=str(repo_root()),
                                        kernel_name="python3", progress_bar=False)
                    status = "finished"
                except pm.PapermillExecutionError as e:
                    status = f"failed: {e.ename}: {e.evalue}"[:300]
            entries.append({"output": str(out.relative_to(out_dir)), "notebook": str(nb), "parameters": params,
                            "status": status})
            tmp = out_dir / "batch.json.tmp"
            tmp.write_text(json.dumps(entries, indent=2, default=str))
            os.replace(tmp, out_dir / "batch.json")
    return entries
