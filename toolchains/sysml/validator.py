"""SysML v2: syntax = the OMG textual grammar (sysmlpy's generated ANTLR parser) accepts the model;
semantic = our own dependency and semantic diagnostics over the parse tree (name resolution, typing of
usages by definitions, redefinition, port/connection consistency) plus the task's required elements
and relations. A SysML v2 pilot implementation or the syside CLI is preferred when it is on PATH."""
from __future__ import annotations

import fcntl
import functools
import re
import shutil
import subprocess
import sys
from pathlib import Path

from dslbench.toolchains import LevelVerdict, Probe, Toolchain, installed_versions, tool_version

from .diagnostics import dependency_diagnostics, oracle_diagnostics
from .model import Model

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "run_sysml.py"
CACHE_DIR = HERE / ".dfa-cache"

V1_PATTERNS = [
    (re.compile(r"<<\s*\w+\s*>>|\u00ab\s*\w+\s*\u00bb"), "UML/SysML v1 stereotype ('<<block>>'): SysML v2 has no stereotypes; use `part def`, `port def`, ..."),
    (re.compile(r"^\s*(?:abstract\s+)?block\s+\w+", re.M), "SysML v1 'block': SysML v2 writes `part def Name { ... }`"),
    (re.compile(r"<\?xml|xmi:|<uml:|<packagedElement", re.I), "XMI/XML is not SysML v2 textual notation"),
    (re.compile(r"^\s*(?:value|valueType|flowPort|proxy\s+port|full\s+port|reference)\s+\w+", re.M),
     "SysML v1 property kind: SysML v2 uses `attribute`, `port`, `ref`, `part`"),
    (re.compile(r"^\s*(?:requirement|req)\s+\w+\s*\{\s*(?:id|text)\s*=", re.M),
     "SysML v1 requirement with id/text properties: SysML v2 uses `requirement def`/`requirement` with a doc comment and constraints"),
    (re.compile(r"^\s*(?:class|interface\s+block|constraint\s+block|activity|stateMachine|statemachine)\s+\w+", re.M),
     "UML/SysML v1 element kind: SysML v2 uses `part def`, `interface def`, `constraint def`, `action def`, `state def`"),
    (re.compile(r"\b(?:satisfy|verify|refine|deriveReqt)\s*\(", re.I), "SysML v1 dependency call style: SysML v2 writes `satisfy Req by part;`"),
]


def v1_hints(text: str) -> list[str]:
    hints = []
    for pattern, hint in V1_PATTERNS:
        m = pattern.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            hints.append(f"line {line}: version interference: {hint}")
    return hints


@functools.lru_cache(maxsize=1)
def _sysmlpy_version() -> str:
    return installed_versions({"sysmlpy": None})[0]["sysmlpy"]


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # the SysML v2 parser
    SEMANTIC_FAIL = "oracle_mismatch"  # dependency and semantic checks

    def _preferred(self):
        """A real SysML v2 implementation on PATH wins: syside CLI, then the OMG pilot's launcher."""
        for exe in ("syside", "sysml-pilot", "sysmlv2"):
            path = shutil.which(exe)
            if path:
                return exe, path
        return None

    PACKAGES = {"sysmlpy": None, "antlr4-python3-runtime": None}

    def probe(self) -> Probe:
        """A preferred implementation on PATH (its first `--version` line), else the declared packages."""
        pref = self._preferred()
        if pref:
            exe, path = pref
            version = tool_version([path, "--version"], r"^\s*(\S.*)")
            if not version:
                return self.unavailable(f"{exe} on PATH but `{exe} --version` did not run or printed nothing",
                                        toolchain=exe)
            return self.available(version, toolchain=exe)
        probe = super().probe()
        if probe.available:
            self._ensure_cache()
        return probe

    def describe(self, versions: dict[str, str]) -> str:
        return (f"sysmlpy {versions['sysmlpy']} (ANTLR grammar of the OMG SysML v2 textual notation, "
                f"antlr4 runtime {versions['antlr4-python3-runtime']})")

    def _ensure_cache(self) -> None:
        """Prepared read-only DFA cache: built once per install from our gold programs (never model output)."""
        if list(CACHE_DIR.glob("dfa-*.pkl")):
            return
        try:
            CACHE_DIR.mkdir(exist_ok=True)
            with open(CACHE_DIR / ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not list(CACHE_DIR.glob("dfa-*.pkl")):
                    subprocess.run([sys.executable, str(HERE / "warm_cache.py")], capture_output=True, timeout=600)
        except (OSError, subprocess.SubprocessError):
            pass  # only speed depends on it

    def oracle_rules(self, task):
        if not task.oracle.get("elements") and not task.oracle.get("relations"):
            return [("elements", "give at least one required element or relation")]
        return []

    # --- the two levels ---------------------------------------------------------------------
    def _parse(self, work: Path):
        caches = sorted(CACHE_DIR.glob("dfa-*.pkl"))
        args = [self.file_name, "report.json"]
        if caches:
            args += [str(caches[-1]), _sysmlpy_version()]
        return self.run_runner([RUNNER], args, work)

    def _external(self, work: Path):
        exe, _ = self._preferred()
        cmd = [exe, "check", self.file_name] if exe == "syside" else [exe, self.file_name]
        return self.run(cmd, work, memory_mb=None)

    def syntax(self, program, task, work):
        pref = self._preferred()
        if pref:
            result = self._external(work)
            if result.returncode != 0:
                first = (result.stdout + result.stderr).strip().splitlines()
                return self.verdict("fail", (first[0] if first else f"{pref[0]} exit {result.returncode}")[:300], result)
        result, report = self._parse(work)
        if result.timed_out:
            return self.verdict("fail", "the parser timed out", result)
        if report is None:
            return self.verdict("error", f"SysML runner failed (exit {result.returncode})", result)
        if not report["ok"]:
            hints = v1_hints(program)
            msg = report["errors"][0][:240]
            more = f" (+{len(report['errors']) - 1} more)" if len(report["errors"]) > 1 else ""
            return self.verdict("fail", msg + more + ("; " + hints[0] if hints else ""), result)
        return self.verdict("pass", f"parsed: {len(report['elements'])} elements, {len(report['relations'])} relations",
                            result)

    def semantic(self, program, task, work):
        report = self.read_report(work / "report.json")     # the syntax level's parse, when it is there
        if report is None:
            result, report = self._parse(work)
            if report is None or not report["ok"]:
                return self.verdict("error", "the SysML runner did not produce a model", result)
        m = Model(report)
        problems = [(d, "") for d in dependency_diagnostics(m)] + oracle_diagnostics(m, task.oracle)
        if problems:
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            log = "\n".join(d + (f" [{e}]" if e else "") for d, e in problems)
            expected = "; ".join(e for _, e in problems[:3] if e)
            return LevelVerdict("fail", "; ".join(d for d, _ in problems[:3]) + more, "semantic checks over the parse tree",
                                log, expected=expected)
        n_el = len(task.oracle.get("elements", []))
        n_rel = len(task.oracle.get("relations", []))
        return LevelVerdict("pass", f"names resolve; {n_el} required elements and {n_rel} relations present",
                            "semantic checks over the parse tree", "")

    # --- upstream: SysMBench ------------------------------------------------------------------
    def import_upstream(self, source: Path):
        """SysMBench (dataset/sysml/dataset.json: [{nl, design, domain, grammar, diagram}]) -> Imported.
        The reference design becomes the gold and the oracle is derived from it; see sysmbench.py."""
        from . import sysmbench
        return sysmbench.load(self, Path(source))
