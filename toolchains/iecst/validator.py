"""IEC 61131-3 Structured Text.

syntax   = RuSTy `plc --check` when `plc` is on PATH (preferred, recorded), then always a full blark
           parse + vendor-extension scan + declaration/type checks (undeclared identifiers, INT/BOOL/REAL
           /TIME mismatches, with line numbers); the same sandboxed run writes the program's IR.
semantic = interface checks (POU kind and name, VAR_INPUT/VAR_OUTPUT names and types, return type) and
           property checks: the POU is executed scan by scan on the task's input sequences by our
           evaluator (st_eval.py) and the outputs are compared with the expected values.
"""
import json
import os
import re
import shutil
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain, installed_versions, tool_version

HERE = Path(__file__).parent
RUNNERS = [HERE / "run_st.py", HERE / "st_eval.py"]   # the first one is run
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ELEMENTARY = {"BOOL", "SINT", "INT", "DINT", "LINT", "USINT", "UINT", "UDINT", "ULINT", "BYTE", "WORD", "DWORD",
              "LWORD", "REAL", "LREAL", "TIME", "STRING"}
TIME_LIT = re.compile(r"^T#(\d+(\.\d+)?(d|h|ms|m|s)_?)+$", re.I)
ARRAY_PORT = re.compile(r"^ARRAY\s*\[\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*\]\s*OF\s+([A-Za-z]+)$", re.I)


def port_type(text: str) -> tuple[str, int | None, str] | None:
    """(element type, array length or None, canonical spelling) of a port type: an elementary type or a
    one-dimensional ARRAY[lo..hi] OF an elementary type, as the evaluator writes it; None otherwise."""
    t = " ".join(str(text).split()).upper()
    if t in ELEMENTARY:
        return t, None, t
    m = ARRAY_PORT.match(t)
    if not m or m.group(3) not in ELEMENTARY or int(m.group(2)) < int(m.group(1)):
        return None
    lo, hi, elem = int(m.group(1)), int(m.group(2)), m.group(3)
    return elem, hi - lo + 1, f"ARRAY[{lo}..{hi}] OF {elem}"


def _plc_version(plc: str) -> str:
    """`plc --version` of a RuSTy binary on PATH (trusted tool, not candidate code)."""
    return tool_version([plc, "--version"], r"(\S[^\n]*)", timeout=20)[:80] or "unknown version"


def _value_ok(type_name: str, value) -> bool:
    port = port_type(type_name)
    if port and port[1] is not None:    # an array port takes a list of its length, in index order
        return isinstance(value, list) and len(value) == port[1] and all(_value_ok(port[0], v) for v in value)
    t = type_name.upper()
    if t == "BOOL":
        return isinstance(value, bool)
    if t in ("REAL", "LREAL"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "TIME":
        return isinstance(value, str) and bool(TIME_LIT.match(value))
    if t == "STRING":
        return isinstance(value, str)
    return isinstance(value, int) and not isinstance(value, bool)


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # the ST parser
    SEMANTIC_FAIL = "wrong_output"  # the scan-cycle evaluation

    skipped: tuple = ()   # upstream records the last import_upstream() could not convert, with reasons

    def probe(self) -> Probe:
        versions, problem = installed_versions({"blark": None})
        if problem:
            return self.unavailable(problem)
        version = versions["blark"]
        plc = shutil.which("plc")
        if plc:
            return Probe(self.dsl, f"RuSTy plc --check + blark {version} declaration checks",
                         f"plc {_plc_version(plc)}; blark {version}", True,
                         dialect=self.card["dialect"] + " (judged first by RuSTy)", stand_in_for="")
        return Probe(self.dsl, self.card["toolchain"], f"blark {version} (lark grammar) + dslbench ST checks", True,
                     dialect=self.card["dialect"])

    # --- oracle spec --------------------------------------------------------------------------------
    def oracle_rules(self, task):
        o, problems, ports = task.oracle, [], {}
        for section in ("inputs", "outputs", "in_outs"):
            for name, t in o.get(section, {}).items():
                if not isinstance(name, str) or not IDENT.match(name):
                    problems.append((f"{section}.{name}", "not an ST identifier"))
                else:
                    ports[(section, name.upper())] = t
        if o["pou"] == "FUNCTION" and "returns" not in o:
            problems.append(("returns", "a FUNCTION needs an elementary return type"))
        elif o["pou"] != "FUNCTION" and "returns" in o:
            problems.append(("returns", "only a FUNCTION has a return type"))
        checks = 0
        for i, seq in enumerate(o["sequences"]):
            for k, step in enumerate(seq["steps"]):
                w = f"sequences[{i}].steps[{k}]"
                if "ret" in step:
                    if o["pou"] != "FUNCTION":
                        problems.append((f"{w}.ret", "only a FUNCTION has a return value"))
                    elif "returns" in o and not _value_ok(o["returns"], step["ret"]):
                        problems.append((f"{w}.ret", f"{step['ret']!r} is not a {o['returns']} value"))
                    checks += 1
                for key, sections in (("in", ("inputs",)), ("out", ("outputs", "in_outs"))):
                    for name, value in step.get(key, {}).items():
                        t = next((ports[(sec, str(name).upper())] for sec in sections
                                  if (sec, str(name).upper()) in ports), None)
                        if t is None:
                            problems.append((f"{w}.{key}.{name}", f"not one of the oracle's {' or '.join(sections)}"))
                        elif not _value_ok(t, value):
                            problems.append((f"{w}.{key}.{name}", f"{value!r} is not a {t} value"))
                checks += len(step.get("out", {}))
        if checks == 0 and o.get("expected_from") != "gold":
            problems.append(("sequences", "no expected output or return value to check"))
        return problems

    # --- levels ---------------------------------------------------------------------------------------
    def syntax(self, program, task, work):
        plc = shutil.which("plc")
        plc_result = None
        if plc:
            # RuSTy needs its IEC standard library (TON, R_TRIG, *_TO_*) as extra sources: RUSTY_STDLIB
            # names a folder of its .st files (not exercised on this machine: no plc binary here)
            stdlib = sorted(Path(os.environ["RUSTY_STDLIB"]).glob("*.st")) if os.environ.get("RUSTY_STDLIB") else []
            extra = [a for f in stdlib for a in ("-i", str(f))]
            plc_result = self.run([plc, "--check", self.file_name, *extra], work)
            if plc_result.timed_out:
                return self.verdict("fail", "plc --check timed out", plc_result)
            if plc_result.returncode != 0:
                lines = [ln.strip() for ln in (plc_result.stderr + plc_result.stdout).splitlines() if ln.strip()]
                first = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "")
                return self.verdict("fail", f"plc: {first[:300]}", plc_result)
        result, report = self.run_runner(RUNNERS, ["check", self.file_name, "check.json"], work, report="check.json")
        if result.timed_out:
            return self.verdict("fail", "ST check timed out", result)
        if report is None:
            return self.verdict("error", f"ST check runner failed (exit {result.returncode})", result)
        duration = result.duration_s + (plc_result.duration_s if plc_result else 0.0)
        if not report["ok"]:
            errors = report["errors"]
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            return self.verdict("fail", errors[0][:300] + more, result, duration)
        pous = ", ".join(f"{p['kind']} {p['name']}" for p in report["pous"])
        judge = "plc --check and " if plc else ""
        return self.verdict("pass", f"{judge}blark parse and declaration checks pass ({pous})", result, duration)

    def semantic(self, program, task, work):
        if not (work / "ir.json").exists():
            return self.verdict("error", "no IR from the syntax level")
        (work / "oracle.json").write_text(json.dumps(task.oracle))
        args = ["run", "semantic.json"]
        gold_s = 0.0
        if task.oracle.get("expected_from") == "gold":
            # expected outputs come from the reference program: parse it (sandboxed) into gold_ir.json
            (work / "gold.st").write_text(task.gold, encoding="utf-8")
            gold, _ = self.run_runner(RUNNERS, ["check", "gold.st", "gold_check.json", "gold_ir.json"], work,
                                      report="gold_check.json")
            gold_s = gold.duration_s
            if not (work / "gold_ir.json").exists():     # written only when the gold passes the checks
                return self.verdict("error", "the reference program does not pass the ST checks", gold, reason="gold_broken")
            args.append("gold_ir.json")
        result, report = self.run_runner(RUNNERS, args, work, report="semantic.json")
        if result.timed_out:
            return self.verdict("fail", f"timed out after {self.limits().timeout_s:.0f} s", result)
        if report is None:
            return self.verdict("error", f"ST evaluator failed (exit {result.returncode})", result)
        duration = result.duration_s + gold_s
        if report["ok"] is None:
            unsupported = report.get("fault") == "unsupported_by_judge"
            return self.verdict("unavailable" if unsupported else "error", report["reason"][:300], result, duration,
                                reason=report.get("fault", ""))
        return self.verdict("pass" if report["ok"] else "fail", report["reason"][:300], result, duration,
                            reason=report.get("fault", ""), expected=report.get("expected", "")[:300])

    # --- upstream: Agents4PLC ------------------------------------------------------------------------
    def import_upstream(self, source: Path, verify_gold: bool = False):
        """Agents4PLC as published (benchmark_v1/, benchmark_v2/ *.jsonl). See agents4plc.py. With
        verify_gold (`dslbench import --verify`), a gold that fails either level is skipped with its reason."""
        from . import agents4plc
        return agents4plc.load(Path(source), self, check=verify_gold)
