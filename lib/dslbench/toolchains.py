"""Toolchain discovery and the validator interface.

A DSL is one folder toolchains/<dsl>/ holding:
  toolchain.yaml     its card: language, domain, toolchain, validators, validation boundary, prompt rules
  validator.py       a class `Validator(Toolchain)` with probe(), syntax(), semantic(), check_oracle()
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
import shutil
import stat
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass, asdict
from pathlib import Path
import yaml

from . import sandbox
from .paths import toolchains_dir
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
    the validator knows it; otherwise `judge_level` fills it in: a run that timed out, hit a limit or
    died by a signal is the program's `timeout` / `resource_limit` / `runtime_error`, and any other
    `fail` gets the DSL's declared default below.
    """
    SYNTAX_FAIL = "parse_error"      # reason of a syntax-level fail (or "compile_error" for compilers)
    SEMANTIC_FAIL = "wrong_output"   # reason of a semantic-level fail (or "oracle_mismatch", ...)

    def __init__(self, folder: Path, card: dict):
        self.folder = folder
        self.dsl = folder.name
        self.card = card

    # --- what subclasses provide -------------------------------------------------------------
    @abc.abstractmethod
    def probe(self) -> Probe:
        """Which toolchain and version would judge programs here, or why none can."""

    @abc.abstractmethod
    def syntax(self, program: str, task, work: Path) -> LevelVerdict:
        """Does the real toolchain accept the program? `work` holds the program and context files."""

    @abc.abstractmethod
    def semantic(self, program: str, task, work: Path) -> LevelVerdict:
        """Does the program meet the task's oracle? Called only after syntax passed."""

    def check_oracle(self, task) -> list[tuple[str, str]]:
        """Problems with a task's oracle spec as (field, message); empty when fine."""
        return []

    def gold_is_solution(self, task) -> bool:
        """False when the task's gold is a placeholder, not a solution (an upstream that ships no
        solutions, e.g. a Lean statement proved by `sorry`): the self-check then expects it to pass the
        syntax level and fail the semantic one, and reports it apart from real gold."""
        return True

    def import_upstream(self, source: Path) -> list[dict]:
        """Task dicts (our schema, provenance.source = upstream) from the DSL's upstream benchmark files."""
        raise ValueError(f"{self.dsl}: no loader for an upstream benchmark format")

    # --- shared helpers ----------------------------------------------------------------------
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
        try:
            return result, json.loads(read_work_file(work / report))
        except OSError as e:
            if (work / report).is_symlink() or ((work / report).exists() and not (work / report).is_file()):
                result.tampered = f"{report} was replaced by the program ({e})"
            return result, None
        except ValueError:
            return result, None

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

    def judge_level(self, level: str, program: str, task, work: Path) -> LevelVerdict:
        """One level, settled: a crashing validator is a `harness_error`, never a verdict on the program."""
        fn = self.syntax if level == "syntax" else self.semantic
        try:
            v = fn(program, task, work)
        except Exception as e:
            import traceback
            v = LevelVerdict("error", f"validator crashed: {type(e).__name__}: {e}",
                             log=traceback.format_exc()[-4000:], reason="harness_error")
        return settle(level, v, self.SYNTAX_FAIL, self.SEMANTIC_FAIL)

    @property
    def validator_name(self) -> str:
        """Where the code behind a verdict lives, relative to the repository."""
        return f"toolchains/{self.dsl}/validator.py:{type(self).__name__}"


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
