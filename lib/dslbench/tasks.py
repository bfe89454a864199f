"""Task schema and strict loading.

One YAML file per task: data/tasks/<dsl>/<id>.yaml. Loading checks every field before anything
is returned, so a malformed file stops a run before it writes a single record. Errors name the
file, the line and the field.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from . import settings
from .errors import UserError
from .paths import tasks_dir

DIFFICULTIES = ("easy", "medium", "hard")
FAILURE_MODES = ("knowledge", "structure", "version")
SPLITS = ("test", "dev")
MUTANT_LEVELS = ("syntax", "semantic")


class TaskError(UserError):
    """A task file does not follow the schema."""

    def __init__(self, path: Path | str, line: int | None, field_name: str, message: str):
        self.path, self.line, self.field, self.message = str(path), line, field_name, message
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: field '{field_name}': {message}")


@dataclass(frozen=True)
class Mutant:
    """A known-bad program: it must fail the level it targets (and pass syntax if it targets semantics)."""
    level: str
    program: str
    note: str


@dataclass(frozen=True)
class Equivalent:
    """A correct program that differs from the gold (reordered, renamed, an equivalent form or idiom):
    it must pass both levels, so an oracle that only accepts the gold's own shape is caught."""
    program: str
    note: str


@dataclass(frozen=True)
class Task:
    id: str
    dsl: str
    domain: str
    title: str
    difficulty: str
    constructs: tuple[str, ...]
    failure_modes: tuple[str, ...]
    instruction: str
    context: dict[str, str]          # file name -> content, shown to the model and given to the oracle
    gold: str
    oracle: dict[str, Any]           # DSL-specific oracle specification
    provenance: dict[str, Any]
    split: str
    mutants: tuple[Mutant, ...] = ()
    equivalents: tuple[Equivalent, ...] = ()
    path: str = ""

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["mutants"] = [m.__dict__ for m in self.mutants]
        d["equivalents"] = [e.__dict__ for e in self.equivalents]
        d["constructs"], d["failure_modes"] = list(self.constructs), list(self.failure_modes)
        return d


def _line_map(node: yaml.Node, file: Path, prefix: str = "", out: dict | None = None) -> dict[str, int]:
    """Map dotted field paths (a.b[2].c) to 1-based line numbers using the composed YAML tree.

    A key given twice in one mapping is an error: YAML loaders silently keep the last value."""
    out = {} if out is None else out
    out.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            path = f"{prefix}.{key.value}" if prefix else str(key.value)
            line = key.start_mark.line + 1
            if path in seen:
                raise TaskError(file, line, path, f"duplicate key (first given on line {seen[path]})")
            seen[path] = out[path] = line
            _line_map(value, file, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_map(item, file, f"{prefix}[{i}]", out)
    return out


def _fault_line(text: str, e: yaml.MarkedYAMLError) -> tuple[int | None, str]:
    """(1-based line of the fault, a note on where yaml noticed it if that differs).

    yaml's problem_mark is where it gave up, which can be lines after the fault."""
    if e.problem_mark is None:
        return None, ""
    noticed = e.problem_mark.line + 1
    mark = e.problem_mark
    if e.context_mark is not None and (e.context or "").startswith(("while scanning", "while parsing a flow")):
        mark = e.context_mark  # a token or bracket opened there and never ended well
    # An unclosed quote, or a key line without its colon, runs on into the next lines as one string;
    # yaml trips only on what follows that string, so the fault is where the string started.
    prev = None
    try:
        for tok in yaml.scan(text, Loader=yaml.SafeLoader):
            if tok.start_mark.index >= mark.index:
                break
            prev = tok
    except yaml.YAMLError:
        pass
    if (isinstance(prev, yaml.ScalarToken) and prev.start_mark.line < prev.end_mark.line == mark.line
            and (prev.style in ("'", '"') or not text.splitlines()[prev.start_mark.line][:prev.start_mark.column]
                 .strip(" -"))):
        mark = prev.start_mark
    line = mark.line + 1
    return line, "" if line == noticed else f" (noticed on line {noticed})"


_LIBYAML = getattr(yaml, "CSafeLoader", None)


def _compose(text: str):
    """The file's YAML node tree, parsed once: by libyaml where PyYAML has it (several times faster), else
    or when libyaml rejects the text by the pure-Python parser, whose errors carry the messages we report."""
    if _LIBYAML is not None:
        try:
            return yaml.compose(text, Loader=_LIBYAML)
        except yaml.YAMLError:
            pass
    return yaml.compose(text, Loader=yaml.SafeLoader)


def _construct(node):
    """The Python data of a composed node tree, as yaml.safe_load gives it (None for an empty file)."""
    if node is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml_with_lines(path: Path) -> tuple[Any, Callable[[str], int | None]]:
    """Parse a YAML file and return (data, line_of(field_path))."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise TaskError(path, line, "<file>", f"not UTF-8 text (byte 0x{raw[e.start]:02x})") from None
    try:
        node = _compose(text)
        data = _construct(node)
    except yaml.MarkedYAMLError as e:
        line, note = _fault_line(text, e)
        raise TaskError(path, line, "<yaml>", f"not valid YAML: {e.problem}{note}") from None
    lines = _line_map(node, path) if node is not None else {}

    def line_of(field_path: str) -> int | None:
        # Fall back to the nearest enclosing field that exists in the file.
        while field_path and field_path not in lines:
            field_path = field_path.rsplit(".", 1)[0] if "." in field_path else ""
        return lines.get(field_path, 1)
    return data, line_of


class _Checker:
    def __init__(self, path: Path, data: dict, line_of, prefix: str = ""):
        self.path, self.data, self.line_of, self.prefix = path, data, line_of, prefix

    def fail(self, field_name: str, message: str):
        full = self.prefix + field_name
        raise TaskError(self.path, self.line_of(full), full, message)

    def get(self, name: str, kind: type | tuple, required: bool = True, default=None):
        if name not in self.data:
            if required:
                self.fail(name, "missing required field")
            return default
        value = self.data[name]
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(name, f"expected {names}, got {type(value).__name__}")
        return value

    def text(self, name: str, required: bool = True) -> str:
        value = self.get(name, str, required, "")
        if required and not value.strip():
            self.fail(name, "must not be empty")
        return value

    def choice(self, name: str, allowed: tuple[str, ...]) -> str:
        value = self.text(name)
        if value not in allowed:
            self.fail(name, f"'{value}' is not one of {', '.join(allowed)}")
        return value

    def str_list(self, name: str, allowed: tuple[str, ...] | None = None, required: bool = True) -> tuple[str, ...]:
        values = self.get(name, list, required, [])
        for i, v in enumerate(values):
            if not isinstance(v, str) or not v.strip():
                self.fail(f"{name}[{i}]", "expected a non-empty string")
            if allowed and v not in allowed:
                self.fail(f"{name}[{i}]", f"'{v}' is not one of {', '.join(allowed)}")
        return tuple(values)


KNOWN_FIELDS = {"id", "dsl", "domain", "title", "difficulty", "constructs", "failure_modes", "instruction",
                "context", "gold", "oracle", "provenance", "split", "mutants", "equivalents"}


def parse_task(path: Path, data: Any, line_of, dsl_folder: str,
               check_oracle: Callable[[dict], list[tuple[str, str]]] | None = None) -> Task:
    if not isinstance(data, dict):
        raise TaskError(path, 1, "<root>", "a task file must be a YAML mapping")
    c = _Checker(path, data, line_of)
    for key in data:
        if key not in KNOWN_FIELDS:
            c.fail(str(key), f"unknown field (allowed: {', '.join(sorted(KNOWN_FIELDS))})")
    task_id = c.text("id")
    if task_id != path.stem:
        c.fail("id", f"'{task_id}' must equal the file name '{path.stem}'")
    dsl = c.text("dsl")
    if dsl != dsl_folder:
        c.fail("dsl", f"'{dsl}' must equal the folder name '{dsl_folder}'")
    context = c.get("context", dict, required=False, default={}) or {}
    for name, content in context.items():
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            c.fail(f"context.{name}", "context file names must be plain file names")
        if not isinstance(content, str):
            c.fail(f"context.{name}", "context file content must be a string")
    oracle = c.get("oracle", dict)
    provenance = c.get("provenance", dict)
    source = provenance.get("source")
    if source not in ("authored", "upstream"):
        c.fail("provenance.source", "must be 'authored' or 'upstream'")
    needed = ("licence",) if source == "authored" else ("benchmark", "upstream_id", "licence")
    for key in needed:
        if not isinstance(provenance.get(key), (str, int)) or not str(provenance.get(key)).strip():
            c.fail(f"provenance.{key}", "missing required field")
    mutants = []
    for i, m in enumerate(c.get("mutants", list, required=False, default=[]) or []):
        if not isinstance(m, dict):
            c.fail(f"mutants[{i}]", "expected a mapping with level, program, note")
        mc = _Checker(path, m, line_of, prefix=f"mutants[{i}].")
        mutants.append(Mutant(level=mc.choice("level", MUTANT_LEVELS), program=mc.get("program", str),
                              note=mc.text("note")))
    equivalents = []
    for i, e in enumerate(c.get("equivalents", list, required=False, default=[]) or []):
        if not isinstance(e, dict):
            c.fail(f"equivalents[{i}]", "expected a mapping with program, note")
        ec = _Checker(path, e, line_of, prefix=f"equivalents[{i}].")
        program = ec.get("program", str)
        if program.strip() == c.text("gold").strip():
            ec.fail("program", "is the gold itself: an equivalent must differ from it")
        equivalents.append(Equivalent(program=program, note=ec.text("note")))
    task = Task(
        id=task_id, dsl=dsl, domain=c.text("domain"), title=c.text("title"),
        difficulty=c.choice("difficulty", DIFFICULTIES),
        constructs=c.str_list("constructs"),
        failure_modes=c.str_list("failure_modes", FAILURE_MODES, required=False),
        instruction=c.text("instruction"), context=dict(context), gold=c.text("gold"),
        oracle=oracle, provenance=provenance, split=c.choice("split", SPLITS),
        mutants=tuple(mutants), equivalents=tuple(equivalents), path=str(path),
    )
    if check_oracle:
        for field_name, message in check_oracle(task):
            c.fail(f"oracle.{field_name}" if field_name else "oracle", message)
    return task


def load_task_file(path: Path, check_oracle=None) -> Task:
    path = Path(path)
    data, line_of = read_yaml_with_lines(path)
    return parse_task(path, data, line_of, path.parent.name, check_oracle)


SAMPLE_ENV, SEED_ENV = "DSLBENCH_SAMPLE", "DSLBENCH_SEED"


def stratified_sample(items: list, n: int, seed: int, id_of: Callable, level_of: Callable) -> list:
    """n items drawn reproducibly, stratified by difficulty (proportional, every level kept if it can be),
    returned in id order. The one sampler of tasks: `dslbench import --sample` and DSLBENCH_SAMPLE."""
    if n >= len(items):
        return list(items)
    rng = random.Random(seed)
    by_level: dict[str, list] = {}
    for t in sorted(items, key=id_of):
        by_level.setdefault(level_of(t) or "", []).append(t)
    # largest-remainder allocation of n over the levels
    quota = {k: n * len(v) / len(items) for k, v in by_level.items()}
    take = {k: int(q) for k, q in quota.items()}
    for k in sorted(quota, key=lambda k: (quota[k] - take[k], k), reverse=True)[: n - sum(take.values())]:
        take[k] += 1
    picked = [t for k, v in sorted(by_level.items()) for t in rng.sample(v, take[k])]
    return sorted(picked, key=id_of)


def task_sample() -> tuple[int | None, int]:
    """The per-DSL sample every stage uses (DSLBENCH_SAMPLE tasks per DSL, seed DSLBENCH_SEED), so that a
    2-core run and a paper-scale run of the same tree draw the same tasks; (None, 0) means all tasks."""
    raw, seed = (settings.get(SAMPLE_ENV) or "").strip(), (settings.get(SEED_ENV) or "0").strip() or "0"
    try:
        n, s = (int(raw) if raw else None), int(seed)
    except ValueError:
        raise UserError(f"environment {SAMPLE_ENV}={raw!r} / {SEED_ENV}={seed!r}: must be whole numbers") from None
    if n is not None and n < 1:
        raise UserError(f"environment {SAMPLE_ENV}: must be at least 1 task per DSL, got {n}")
    return n, s


def load_tasks(dsls: list[str] | None = None, root: Path | None = None, limit: int | None = None,
               sampled: bool = True) -> dict[str, list[Task]]:
    """Load and check every task of the given DSLs (all discovered DSLs by default).

    Raises TaskError on the first malformed file; nothing is returned in that case.
    With DSLBENCH_SAMPLE set (`--sample N --seed S`), each DSL keeps a difficulty-stratified sample of N
    tasks (unless `sampled` is False: the DSL cards describe the whole set); `limit` then keeps the first
    N tasks per DSL in id order (for quick runs).
    """
    _check_limit(limit)
    from .toolchains import discover  # local import: toolchains imports tasks for typing only
    root = Path(root) if root else tasks_dir()
    toolchains = discover()
    names = dsls if dsls else sorted(p.name for p in root.iterdir() if p.is_dir())
    ids: dict[str, str] = {}
    out: dict[str, list[Task]] = {}
    for dsl in names:
        folder = root / dsl
        if dsl not in toolchains:
            raise TaskError(folder, None, "dsl", f"no toolchain folder toolchains/{dsl}/ for these tasks")
        if not folder.is_dir():
            raise TaskError(folder, None, "dsl", "no task folder for this DSL")
        tasks = []
        for path in sorted(folder.glob("*.yaml")):
            task = load_task_file(path, toolchains[dsl].check_oracle)
            if task.id in ids:
                raise TaskError(path, 1, "id", f"duplicate task id, also in {ids[task.id]}")
            ids[task.id] = str(path)
            tasks.append(task)
        out[dsl] = tasks
    return select(out, limit, sampled)


def _check_limit(limit: int | None) -> None:
    # 0 must not mean "no limit" (a falsy check did that), nor a negative one "all but the last N"
    if limit is not None and limit < 1:
        raise UserError(f"option --limit: must be at least 1 (omit it for all tasks), got {limit}")


def select(tasks: dict[str, list[Task]], limit: int | None = None, sampled: bool = True) -> dict[str, list[Task]]:
    """The tasks a stage runs out of every loaded task: per DSL the DSLBENCH_SAMPLE sample (unless `sampled`
    is False), then the first `limit` in id order (see load_tasks)."""
    _check_limit(limit)
    sample, seed = task_sample() if sampled else (None, 0)
    out = {}
    for dsl, ts in tasks.items():
        if sample is not None:
            ts = stratified_sample(ts, sample, seed, lambda t: t.id, lambda t: t.difficulty)
        out[dsl] = ts if limit is None else ts[:limit]
    return out
