"""Import an upstream benchmark (in its own published layout) into our task schema.

Each DSL's validator may implement `import_upstream(source) -> Imported`: the task dictionaries in
our schema (with `provenance: {source: upstream, benchmark, upstream_id, licence}`) and one `Skip`
per upstream record it could not convert, with a reason code. `convert_each` gives an importer the
per-record isolation for free: one bad record is skipped with its reason, never the whole import.
`write_tasks` loads every task back strictly before writing it; one that does not load is skipped
too (reason `invalid_task`), so whatever is written is a valid task file.

An importer raises `NotThisBenchmark` when the source is not the benchmark's published layout at all
(the user pointed at the wrong folder): that, or nothing importable, is the only failed import.
"""
from __future__ import annotations

import json
import subprocess
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from . import toolchains
from .errors import UserError
from .tasks import TaskError, load_task_file, stratified_sample


class NotThisBenchmark(UserError):
    """The source given to an importer is not the upstream benchmark's published layout."""


@dataclass(frozen=True)
class Skip:
    """One upstream record that was not imported: which one, a reason code (snake_case), the detail."""
    record: str
    reason: str
    detail: str = ""


@dataclass
class Imported:
    """What an importer made of a source: tasks in our schema and the records it skipped."""
    tasks: list[dict] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)

    @property
    def read(self) -> int:
        return len(self.tasks) + len(self.skipped)


def convert_each(records: Iterable[tuple[str, Any]], convert: Callable[[str, Any], Any],
                 progress: bool = False, total: int | None = None) -> Imported:
    """Convert (record id, record) pairs one by one with `convert(record_id, record)`.

    `convert` returns a task dict, a list of task dicts, or a `Skip`; an exception it raises skips
    that record with reason `malformed_record` and the message, so one bad record never aborts the
    import. A task id seen before is skipped as `duplicate_id`.
    """
    from tqdm.auto import tqdm
    out, seen = Imported(), set()
    for record_id, record in tqdm(records, total=total, desc="import", unit="record", disable=not progress):
        try:
            made = convert(record_id, record)
        except (KeyError, ValueError, TypeError, AttributeError, IndexError, OSError, yaml.YAMLError) as e:
            kind = f"missing field {e}" if isinstance(e, KeyError) else f"{type(e).__name__}: {e}"
            out.skipped.append(Skip(str(record_id), "malformed_record", kind))
            continue
        for item in (made if isinstance(made, list) else [made]):
            if isinstance(item, Skip):
                out.skipped.append(item)
            elif item["id"] in seen:
                out.skipped.append(Skip(str(record_id), "duplicate_id", f"task id {item['id']} made twice"))
            else:
                seen.add(item["id"])
                out.tasks.append(item)
    return out


MAX_MUTANTS = 3   # semantic mutants derived from one imported gold


def one_mutant_per_kind(gold: str, kinds: Iterable[Iterable[tuple[str, str]]], limit: int = MAX_MUTANTS,
                        same: Callable[[str, str], bool] = str.__eq__) -> list[dict]:
    """Semantic mutants of an imported gold, at most one of each kind and `limit` in all.

    Each kind is an iterable of (note, program) alternatives, tried in order: the first program that
    is neither the gold nor a mutant kept already is kept. Kinds and alternatives are consumed lazily,
    so an importer's costly slips are only made when needed.
    """
    out: list[dict] = []
    for alternatives in kinds:
        if len(out) == limit:
            break
        for note, program in alternatives:
            if not same(program, gold) and not any(same(program, m["program"]) for m in out):
                out.append({"level": "semantic", "note": note, "program": program})
                break
    return out


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (programs, instructions) as readable `|` blocks."""


def _str(dumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)

FIELD_ORDER = ["id", "dsl", "domain", "title", "difficulty", "constructs", "failure_modes", "instruction",
               "context", "gold", "oracle", "equivalents", "provenance", "split", "mutants"]


def dump_task(task: dict) -> str:
    ordered = {k: task[k] for k in FIELD_ORDER if k in task}
    return yaml.dump(ordered, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def write_tasks(dsl: str, tasks: list[dict], out_dir: Path, skipped: list[Skip] | None = None) -> list[Path]:
    """Write tasks to out_dir/<dsl>/<id>.yaml, each loaded back strictly first.

    With a `skipped` list, a task that does not load is left out and recorded there (`invalid_task`);
    without one, it raises its TaskError and nothing is written. Files are staged and moved in only
    once all are checked, so an interrupted import leaves no half-written file behind.
    """
    tc = toolchains.get(dsl)
    final = Path(out_dir) / dsl
    staging = Path(tempfile.mkdtemp(prefix=f"import-{dsl}-"))
    stage = staging / dsl  # load_task_file checks that the folder is named after the DSL
    stage.mkdir()
    try:
        for task in tasks:
            path = stage / f"{task['id']}.yaml"
            path.write_text(dump_task(task), encoding="utf-8")
            try:
                load_task_file(path, tc.check_oracle)
            except TaskError as e:
                if skipped is None:
                    raise
                path.unlink()
                upstream_id = (task.get("provenance") or {}).get("upstream_id", task["id"])
                skipped.append(Skip(str(upstream_id), "invalid_task", str(e).replace(str(stage) + "/", "")))
        final.mkdir(parents=True, exist_ok=True)
        written = []
        for path in sorted(stage.glob("*.yaml")):
            target = final / path.name
            shutil.move(str(path), target)
            written.append(target)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def sample_tasks(tasks: list[dict], n: int, seed: int = 0) -> list[dict]:
    """n task dicts drawn reproducibly, stratified by difficulty (tasks.stratified_sample)."""
    return stratified_sample(tasks, n, seed, lambda t: t["id"], lambda t: t.get("difficulty", ""))


@dataclass
class ImportReport:
    dsl: str
    read: int
    written: list[Path]
    skipped: list[Skip]
    sampled_out: int = 0

    def reasons(self) -> Counter:
        return Counter(s.reason for s in self.skipped)

    def summary(self) -> str:
        lines = [f"{self.dsl}: read {self.read} record(s), imported {len(self.written)}, "
                 f"skipped {len(self.skipped)}" + (f", left out by --sample {self.sampled_out}" if self.sampled_out else "")]
        for reason, n in self.reasons().most_common():
            example = next(s for s in self.skipped if s.reason == reason)
            lines.append(f"  {n:6d}  {reason}  (e.g. {example.record}: {example.detail[:120]})")
        return "\n".join(lines)


def import_upstream(dsl: str, source: Path, out_dir: Path, sample: int | None = None, seed: int = 0,
                    verify_gold: bool = False) -> ImportReport:
    """Import `source` for `dsl` into out_dir/<dsl>/: what was written, what was skipped and why.

    `verify_gold` (`dslbench import --verify`) is passed to an importer that takes it: one that can run
    the upstream gold while importing (Dafny) then skips gold that fails or times out, with a reason."""
    source = Path(source)
    if not source.exists():
        raise UserError(f"{source}: no such file or folder (give the upstream clone or unpacked archive)")
    tc = toolchains.get(dsl)
    try:
        import inspect
        takes_verify = "verify_gold" in inspect.signature(tc.import_upstream).parameters
        made = (tc.import_upstream(source, verify_gold=verify_gold) if takes_verify and verify_gold
                else tc.import_upstream(source))
    except UserError:
        raise
    except (ValueError, KeyError, TypeError, OSError, yaml.YAMLError) as e:  # a whole-source failure, told plainly
        kind = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise NotThisBenchmark(f"{source}: cannot be read as the {dsl} upstream benchmark: {kind}") from None
    if not isinstance(made, Imported):   # the plugin contract (toolchains.Toolchain.import_upstream)
        raise TypeError(f"{dsl}: import_upstream returned {type(made).__name__}, not dslbench.upstream.Imported")
    tasks, sampled_out = made.tasks, 0
    if sample is not None:
        tasks = sample_tasks(made.tasks, sample, seed)
        sampled_out = len(made.tasks) - len(tasks)
    skipped = list(made.skipped)
    written = write_tasks(dsl, tasks, out_dir, skipped)
    report = ImportReport(dsl, made.read, written, skipped, sampled_out)
    if written:
        benchmarks = Counter((t.get("provenance") or {}).get("benchmark", "") for t in tasks)
        write_report_file(Path(out_dir) / dsl, {
            "dsl": dsl, "benchmark": benchmarks.most_common(1)[0][0], "source": str(source.resolve()),
            "source_revision": _git_revision(source), "read": made.read, "imported": len(written),
            "skipped": len(skipped), "skipped_by_reason": dict(report.reasons().most_common()),
            "sample": sample, "seed": seed if sample is not None else None, "sampled_out": sampled_out})
    return report


REPORT_FILE = "import_report.json"   # beside the imported task files (the task loader reads *.yaml only)


def write_report_file(folder: Path, fields: dict) -> None:
    """Merge `fields` into the folder's import report (the import's figures, then --verify's)."""
    path = folder / REPORT_FILE
    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.write_text(json.dumps({**old, **fields}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_report_files(tree: Path) -> list[dict]:
    """The import reports under a task tree (one per imported DSL folder)."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(tree).glob(f"*/{REPORT_FILE}"))]


def _git_revision(source: Path) -> str | None:
    """The commit of a git clone (the revision an import was measured on), else None."""
    folder = source if source.is_dir() else source.parent
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None
