"""Toolchain discovery and the validator interface.

A DSL is one folder toolchains/<dsl>/ holding:
  toolchain.yaml     its card: language, domain, toolchain, validators, validation boundary, prompt rules
  validator.py       a class `Validator(Toolchain)`: it declares its probe (PACKAGES / BINARIES, or
                     overrides probe()), judges with syntax() and semantic() (or levels() when one
                     toolchain run yields both); oracle_rules() checks what the card's
                     oracle_schema (the oracle spec's declared shape) cannot say
  requirements.txt   pip requirements (exact pins), optional
  apt.txt            Debian packages, optional
Nothing in the pipeline lists DSLs: they are discovered here.
"""
from __future__ import annotations

import abc
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, asdict
from pathlib import Path
import yaml

from . import sandbox, verdicts
from .paths import cache_dir, toolchains_dir
from .verdicts import STATUSES, LevelVerdict, settle  # noqa: F401 (re-exported for validators)


def installed_versions(packages: dict[str, str | None]) -> tuple[dict[str, str], str]:
    """Versions of PyPI distributions {dist: module to find, or None}; the first problem ('' when none).

    Probes use it so a missing or unimportable package always gives the same kind of reason.
    """
    versions = {}
    for dist, module in packages.items():
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return versions, f"PyPI package '{dist}' is not installed"
        if module and importlib.util.find_spec(module) is None:
            return versions, f"module '{module}' cannot be imported"
    return versions, ""


def tool_version(cmd: list[str], pattern: str = r"(\d+\.\d+(?:\.\d+)*)", timeout: float = 60,
                 env: dict | None = None) -> str:
    """Group 1 of `pattern` in what a version command prints (stdout, then stderr); "" when it cannot
    run or prints no match. The one place probes start a toolchain to ask its version."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(pattern, out.stdout) or re.search(pattern, out.stderr)
    return m.group(1) if m else ""


@dataclass
class Probe:
    """Whether a DSL's toolchain can judge programs on this machine, and which one."""
    dsl: str
    toolchain: str
    version: str
    available: bool
    reason: str = ""      # why not, when unavailable
    dialect: str = ""     # language version / dialect the toolchain judges
    exact: bool = True    # False for a weaker fallback judge: known-bad programs may slip through
    # the judge the paper (Table I) names when ours is another one, e.g. "Neo4j 5" for FalkorDB; None:
    # the card's `stand_in_for` applies, "": this judge is the reference one
    stand_in_for: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class Toolchain(abc.ABC):
    """Base class of every DSL validator. Subclasses live in toolchains/<dsl>/validator.py.

    A verdict's reason (dslbench.verdicts.REASONS) is given with `self.verdict(..., reason=...)` when
    the validator knows it; otherwise `judge` settles it: a run that timed out, hit a limit or
    died by a signal is the program's `timeout` / `resource_limit` / `runtime_error`, and any other
    `fail` gets the DSL's declared default below.
    """
    SYNTAX_FAIL = "parse_error"      # reason of a syntax-level fail (or "compile_error" for compilers)
    SEMANTIC_FAIL = "wrong_output"   # reason of a semantic-level fail (or "oracle_mismatch", ...)

    # The declared probe (used by the default probe()): what must be installed, and how to read versions.
    PACKAGES: dict[str, str | None] = {}    # PyPI distribution -> module that must import (None: any)
    BINARIES: dict[str, tuple[list[str], str] | None] = {}   # executable -> (version command, regex) or None
    INSTALL_HINT = ""                      # where the missing parts come from, e.g. "Debian package iverilog"

    def __init__(self, folder: Path, card: dict):
        self.folder = folder
        self.dsl = folder.name
        self.card = card

    # --- what subclasses provide -------------------------------------------------------------
    def probe(self) -> Probe:
        """Which toolchain and version would judge programs here, or why none can.

        By default from the declarations: every PACKAGES entry installed and importable, every
        BINARIES entry on PATH; the version text is `describe(versions)`. Override for anything else.
        """
        versions, problem = installed_versions(self.PACKAGES)
        for exe, how in self.BINARIES.items():
            if problem:
                break
            if not shutil.which(exe):
                problem = f"{exe} not on PATH"
            elif how:
                versions[exe] = tool_version(*how) or "?"
        if problem:
            return self.unavailable(problem + (f" ({self.INSTALL_HINT})" if self.INSTALL_HINT else ""))
        return self.available(self.describe(versions))

    def describe(self, versions: dict[str, str]) -> str:
        """The probe's version text from the declared parts' versions."""
        return ", ".join(f"{name} {v}" for name, v in versions.items())

    def task_probe(self, task, probe: dict) -> dict:
        """The probe as recorded in a verdict on `task`: the same for every task unless a validator judges
        some tasks with another judge (SolEval tasks run the paper's own judge, their project's tests)."""
        return probe

    def syntax(self, program: str, task, work: Path) -> LevelVerdict:
        """Does the real toolchain accept the program? `work` holds the program and context files."""
        raise NotImplementedError(f"{self.dsl}: the validator defines neither syntax() nor levels()")

    def semantic(self, program: str, task, work: Path) -> LevelVerdict:
        """Does the program meet the task's oracle? Called only after syntax passed."""
        raise NotImplementedError(f"{self.dsl}: the validator defines neither semantic() nor levels()")

    def levels(self, program: str, task, work: Path) -> tuple[LevelVerdict, LevelVerdict | None]:
        """Both levels before settling; the semantic one is None when it was not run.

        Default: syntax(), then semantic() if syntax passed, each guarded on its own so a crash in
        the second keeps the first. A toolchain whose one run yields both levels (a verifier that
        resolves and proves in one call) overrides this instead of carrying state between calls.
        """
        syn = self._guarded(self.syntax, program, task, work)
        if syn.status != "pass":    # settling never makes a pass of anything else
            return syn, None
        return syn, self._guarded(self.semantic, program, task, work)

    def check_oracle(self, task) -> list[tuple[str, str]]:
        """Problems with a task's oracle spec as (field, message); empty when fine.

        The shape is declared once, as the card's `oracle_schema` (dslbench.oracle_schema); the rules a
        schema cannot state are the validator's `oracle_rules()`, run once the shape is right."""
        from . import oracle_schema
        return oracle_schema.problems(self.card.get("oracle_schema"), task.oracle) or self.oracle_rules(task)

    def oracle_rules(self, task) -> list[tuple[str, str]]:
        """Checks of an oracle spec beyond its schema (cross-field rules, context files): (field, message)."""
        return []

    def gold_is_solution(self, task) -> bool:
        """False when the task's gold is a placeholder, not a solution (an upstream that ships no
        solutions, e.g. a Lean statement proved by `sorry`): the self-check then expects it to pass the
        syntax level and fail the semantic one, and reports it apart from real gold."""
        return True

    def import_upstream(self, source: Path):
        """A `dslbench.upstream.Imported`: task dicts in our schema (provenance.source = upstream) read from
        the DSL's upstream benchmark as published, and every record skipped with a reason code
        (`upstream.convert_each` does the per-record bookkeeping). An importer that can run the upstream
        gold while importing also takes `verify_gold`."""
        raise ValueError(f"{self.dsl}: no loader for an upstream benchmark format")

    # --- shared helpers ----------------------------------------------------------------------
    def available(self, version: str, **fields) -> Probe:
        """A probe that found the card's toolchain (card fields `toolchain`, `dialect` unless given)."""
        fields.setdefault("dialect", self.card.get("dialect", ""))
        return Probe(self.dsl, fields.pop("toolchain", self.card.get("toolchain", self.dsl)), version, True, **fields)

    def unavailable(self, reason: str, toolchain: str | None = None, version: str = "") -> Probe:
        """A probe that cannot judge here, with the reason a user can act on."""
        return Probe(self.dsl, toolchain or self.card.get("toolchain", self.dsl), version, False, reason)

    @property
    def fence(self) -> str:
        return self.card.get("fence", self.dsl)

    @property
    def fence_aliases(self) -> tuple[str, ...]:
        return (self.fence, *self.card.get("fence_aliases", []))

    @property
    def file_name(self) -> str:
        """Name under which the candidate program is written in the work directory."""
        return self.card.get("program_file", f"program.{self.fence}")

    def limits(self, **overrides) -> sandbox.Limits:
        base = dict(self.card.get("limits", {}))
        base.update(overrides)
        return sandbox.Limits(**base)

    def run(self, cmd: list[str], work: Path, env: dict | None = None, stdin: str | None = None,
            **limit_overrides) -> sandbox.RunResult:
        return sandbox.run(cmd, work, self.limits(**limit_overrides), env=env, stdin=stdin)

    def run_runner(self, scripts: list[Path], args: list[str], work: Path, report: str = "report.json",
                   env: dict | None = None, **limit_overrides) -> tuple[sandbox.RunResult, dict | None]:
        """Run one of our Python runner scripts in the sandbox: (result, its JSON report or None).

        `scripts` are copied into `work` and the first one is run. The report counts only when the
        runner exited 0 and the file is whole JSON (a resource limit can cut it off mid-write).
        """
        for script in scripts:
            # unlink first: an earlier run of the program may have left a symlink to a host path here
            (work / Path(script).name).unlink(missing_ok=True)
            shutil.copy(script, work / Path(script).name)
        (work / report).unlink(missing_ok=True)
        result = self.run([Path(sys.executable).name, Path(scripts[0]).name, *args], work, env=env, **limit_overrides)
        if result.returncode != 0:
            return result, None
        return result, self.read_report(work / report, result)

    @staticmethod
    def read_report(path: Path, result: sandbox.RunResult | None = None) -> dict | None:
        """A runner's JSON report, or None when it is missing, cut off mid-write or not JSON. It is read
        as the hostile program may have left it: never through a symlink, never unbounded; a replaced
        report marks `result.tampered`."""
        try:
            return json.loads(read_work_file(path))
        except FileNotFoundError:
            return None
        except OSError as e:
            if result is not None and (path.is_symlink() or (path.exists() and not path.is_file())):
                result.tampered = f"{path.name} was replaced by the program ({e})"
            return None
        except ValueError:
            return None

    def gold_expected(self, task, compute) -> tuple[object, sandbox.RunResult | None]:
        """The gold program's expected outputs for the task's oracle, and the run that made them
        (None when they came from the oracle cache).

        `compute(work)` runs the gold alone in a fresh work dir that holds only the task's context
        files, and returns (JSON-ready outputs, or None when the gold does not run; the RunResult).
        Outputs are kept in the oracle cache (.cache/oracle, DSLBENCH_ORACLE_CACHE) per task, gold,
        oracle, context, toolchain version and judging code, so a gold runs once however many
        candidates and models are judged. Only gold-only runs fill it: no candidate can poison it.
        """
        key = hashlib.sha256(json.dumps(
            [ORACLE_CACHE_VERSION, self.dsl, task.id, task.gold, task.oracle, task.context, self.file_name,
             probe(self.dsl).version, _code_fingerprint(str(self.folder))], sort_keys=True, default=str).encode()).hexdigest()
        path = cache_dir("oracle", "DSLBENCH_ORACLE_CACHE") / self.dsl / f"{key}.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))["expected"], None
        except (OSError, ValueError, KeyError):
            pass
        work = sandbox.new_workdir("dslbench-gold-")
        try:
            for name, content in task.context.items():
                (work / name).write_text(content, encoding="utf-8")
            expected, result = compute(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if expected is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps({"task": task.id, "expected": expected}), encoding="utf-8")
                tmp.replace(path)
            except OSError:
                pass    # a read-only cache still judges, it just computes again
        return expected, result

    @staticmethod
    def verdict(status: str, diagnostics: str, result: sandbox.RunResult | None = None,
                duration_s: float | None = None, reason: str = "", expected: str = "") -> LevelVerdict:
        """`diagnostics` must not reveal what the oracle expects: that goes to `expected` (see LevelVerdict)."""
        if result is None:
            return LevelVerdict(status, diagnostics, duration_s=duration_s or 0.0, reason=reason, expected=expected)
        if status == "error" and result.tampered and not reason:
            # the program replaced the harness's own files: its doing, not a failure of ours
            status, reason, diagnostics = "fail", "runtime_error", f"{diagnostics}: {result.tampered}"
        return LevelVerdict(status, diagnostics, result.command, result.log,
                            result.duration_s if duration_s is None else duration_s, result.mode, reason,
                            result.returncode, result.signal, result.timed_out, result.killed_for, expected)

    @staticmethod
    def _guarded(fn, *args) -> LevelVerdict:
        """fn(*args), or a `harness_error` verdict when the validator crashes: never a verdict on the program."""
        try:
            return fn(*args)
        except Exception as e:
            return _crashed(e)

    def judge(self, program: str, task, work: Path) -> tuple[LevelVerdict, LevelVerdict]:
        """Both levels, settled (dslbench.verdicts.settle): the one entry point the pipeline calls."""
        try:
            syn, sem = self.levels(program, task, work)
        except Exception as e:   # an overriding levels() crashed as a whole
            syn, sem = _crashed(e), None
        syn = settle("syntax", syn, self.SYNTAX_FAIL, self.SEMANTIC_FAIL)
        if syn.status != "pass":
            return syn, verdicts.not_run(syn)
        if sem is None:
            sem = LevelVerdict("error", "the validator gave no semantic verdict after the syntax level passed",
                               reason="harness_error")
        return syn, settle("semantic", sem, self.SYNTAX_FAIL, self.SEMANTIC_FAIL)

    @property
    def validator_name(self) -> str:
        """Where the code behind a verdict lives, relative to the repository: the file and the methods
        that judged (`levels` when one run yields both levels, else `syntax` and `semantic`)."""
        joint = type(self).levels is not Toolchain.levels
        return f"toolchains/{self.dsl}/validator.py:{type(self).__name__}." + ("levels" if joint else "syntax+semantic")


ORACLE_CACHE_VERSION = 1
JUDGE_CODE = (".py", ".js", ".gd", ".rego", ".groovy", ".yaml", ".json")


@functools.lru_cache(maxsize=None)
def _code_fingerprint(folder: str) -> str:
    """A hash of the judging code in a DSL folder (its own files, not installed packages)."""
    h = hashlib.sha256()
    for path in sorted(Path(folder).iterdir()):
        if path.is_file() and path.suffix in JUDGE_CODE:
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _crashed(e: Exception) -> LevelVerdict:
    import traceback
    return LevelVerdict("error", f"validator crashed: {type(e).__name__}: {e}",
                        log="".join(traceback.format_exception(e))[-4000:], reason="harness_error")


REPORT_CAP = 64 * 1024 * 1024


def read_work_file(path: Path, cap: int = REPORT_CAP) -> str:
    """A file the sandboxed program could have tampered with: never through a symlink, never unbounded."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        data = f.read(cap + 1)
    if len(data) > cap:
        raise OSError(f"{path.name} is larger than {cap} bytes")
    return data.decode("utf-8")


class Registry(Mapping):
    """DSL name -> Toolchain for every folder under toolchains/ with a card. A validator module is
    imported the first time its DSL is asked for, so a command about one DSL (or a worker judging
    one) does not pay for importing all 18 and their toolchain bindings."""

    def __init__(self, base: Path):
        self.folders = {p.name: p for p in sorted(base.iterdir()) if p.is_dir() and (p / "toolchain.yaml").exists()}
        self._loaded: dict[str, Toolchain] = {}

    def __getitem__(self, dsl: str) -> Toolchain:
        if dsl not in self._loaded:
            self._loaded[dsl] = _load(self.folders[dsl])   # KeyError for an unknown DSL, as a dict
        return self._loaded[dsl]

    def __iter__(self):
        return iter(self.folders)

    def __len__(self) -> int:
        return len(self.folders)


def _package_for(base: Path) -> str:
    """The package whose submodules are the DSL folders under `base`: dslbench.plugins for the
    repository's toolchains/, a package made here for another folder (a test's copy, a profile)."""
    from . import plugins
    if Path(plugins.__path__[0]).resolve() == base.resolve():
        return plugins.__name__
    name = "dslbench_plugins_" + hashlib.sha1(str(base.resolve()).encode()).hexdigest()[:12]
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = [str(base)]
        sys.modules[name] = package
    return name


def _load(folder: Path) -> Toolchain:
    card = yaml.safe_load((folder / "toolchain.yaml").read_text(encoding="utf-8")) or {}
    module = importlib.import_module(f"{_package_for(folder.parent)}.{folder.name}.validator")
    return module.Validator(folder, card)


@functools.lru_cache(maxsize=None)
def discover(root: str | None = None) -> Registry:
    """All DSL toolchains under toolchains/, keyed by folder name (loaded when first used)."""
    return Registry(Path(root) if root else toolchains_dir())


def get(dsl: str) -> Toolchain:
    tcs = discover()
    if dsl not in tcs:
        raise KeyError(f"unknown DSL {dsl!r}; toolchains found: {', '.join(tcs)}")
    return tcs[dsl]


@functools.lru_cache(maxsize=None)
def probe(dsl: str) -> Probe:
    """Probe a toolchain once per process; a crashing probe means unavailable, with the reason."""
    tc = get(dsl)
    try:
        p = tc.probe()
    except Exception as e:  # a probe must never take the pipeline down
        p = Probe(dsl, tc.card.get("toolchain", dsl), "", False, f"probe failed: {type(e).__name__}: {e}")
    if p.stand_in_for is None:
        p.stand_in_for = str(tc.card.get("stand_in_for") or "")
    return p



def availability() -> list[dict]:
    """One row per DSL: card fields and its probe. The probes run side by side (most wait on a
    `--version` subprocess), so `dslbench doctor` takes about as long as the slowest one."""
    from concurrent.futures import ThreadPoolExecutor
    reg = dict(discover())   # validator modules are loaded one after the other, only the probes in parallel
    with ThreadPoolExecutor(max_workers=8) as pool:
        probes = dict(zip(reg, pool.map(probe, reg)))
    return [{"dsl": dsl, "language": tc.card.get("language", dsl), "domain": tc.card.get("domain", ""),
             "toolchain": probes[dsl].toolchain, "version": probes[dsl].version, "dialect": probes[dsl].dialect,
             "available": probes[dsl].available, "reason": probes[dsl].reason} for dsl, tc in reg.items()]
