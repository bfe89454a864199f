"""Import an upstream benchmark (in its own published layout) into our task schema.

Each DSL's validator may implement `import_upstream(source) -> list[dict]`, returning task
dictionaries in our schema with `provenance: {source: upstream, benchmark, upstream_id, licence}`.
`write_tasks` turns them into task files and loads every one back strictly; if any is malformed,
nothing is left behind.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import yaml

from . import toolchains
from .tasks import load_task_file


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (programs, instructions) as readable `|` blocks."""


def _str(dumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)

FIELD_ORDER = ["id", "dsl", "domain", "title", "difficulty", "constructs", "failure_modes", "instruction",
               "context", "gold", "oracle", "provenance", "split", "mutants"]


def dump_task(task: dict) -> str:
    ordered = {k: task[k] for k in FIELD_ORDER if k in task}
    return yaml.dump(ordered, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def write_tasks(dsl: str, tasks: list[dict], out_dir: Path) -> list[Path]:
    """Write tasks to out_dir/<dsl>/<id>.yaml, all or nothing."""
    tc = toolchains.get(dsl)
    final = Path(out_dir) / dsl
    staging = Path(tempfile.mkdtemp(prefix=f"import-{dsl}-"))
    stage = staging / dsl  # load_task_file checks that the folder is named after the DSL
    stage.mkdir()
    try:
        for task in tasks:
            path = stage / f"{task['id']}.yaml"
            path.write_text(dump_task(task), encoding="utf-8")
            load_task_file(path, tc.check_oracle)
        final.mkdir(parents=True, exist_ok=True)
        written = []
        for path in sorted(stage.glob("*.yaml")):
            target = final / path.name
            shutil.move(str(path), target)
            written.append(target)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def import_upstream(dsl: str, source: Path, out_dir: Path) -> list[Path]:
    tasks = toolchains.get(dsl).import_upstream(Path(source))
    return write_tasks(dsl, tasks, out_dir)
