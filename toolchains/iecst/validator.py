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


def _plc_version(plc: str) -> str:
    """`plc --version` of a RuSTy binary on PATH (trusted tool, not candidate code)."""
    return tool_version([plc, "--version"], r"(\S[^\n]*)", timeout=20)[:80] or "unknown version"


def _value_ok(type_name: str, value) -> bool:
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
        for section in ("inputs", "outputs"):
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
                for key, section in (("in", "inputs"), ("out", "outputs")):
                    for name, value in step.get(key, {}).items():
                        t = ports.get((section, str(name).upper()))
                        if t is None:
                            problems.append((f"{w}.{key}.{name}", f"not one of the oracle's {section}"))
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


# --- Agents4PLC records -> tasks -----------------------------------------------------------------------

HEADER = re.compile(r"^\s*(FUNCTION_BLOCK|FUNCTION|PROGRAM)\s+([A-Za-z_]\w*)\s*(?::\s*([A-Za-z_]\w*))?",
                    re.I | re.M)
SECTION = re.compile(r"\b(VAR_INPUT|VAR_OUTPUT)\b(.*?)\bEND_VAR\b", re.I | re.S)


def _strip_comments(code: str) -> str:
    return re.sub(r"\(\*.*?\*\)|//[^\n]*|/\*.*?\*/", " ", code, flags=re.S)


def reference_interface(code: str) -> tuple[dict | None, str, str]:
    """POU kind, name, return type and VAR_INPUT/VAR_OUTPUT of the first POU (text scan, nothing run);
    else None, a reason code and the detail."""
    text = _strip_comments(code)
    m = HEADER.search(text)
    if not m:
        return None, "no_pou", "no FUNCTION, FUNCTION_BLOCK or PROGRAM in the reference code"
    kind, name, ret = m.group(1).upper(), m.group(2), m.group(3)
    end = re.search(r"\bEND_" + kind + r"\b", text[m.end():], re.I)
    body = text[m.end(): m.end() + end.start()] if end else text[m.end():]
    ports = {"VAR_INPUT": {}, "VAR_OUTPUT": {}}
    for sec, decls in SECTION.findall(re.sub(r"\{[^{}]*\}", " ", body)):      # pragmas out
        for decl in decls.split(";"):             # every `names : type [:= init]`, arrays and structs too
            if ":" not in decl:
                continue
            names, t = decl.split(":", 1)
            t = " ".join(t.split(":=")[0].split())
            if t.upper() not in ELEMENTARY:
                return None, "non_elementary_port", f"port type {t} is not elementary (the oracle drives elementary ports only)"
            for n in names.split(","):
                if n.split():
                    ports[sec.upper()][n.split()[0]] = t.upper()     # `x AT %IX0.0` is x
    if not ports["VAR_INPUT"]:
        return None, "no_inputs", "the reference POU has no VAR_INPUT to drive"
    iface = {"pou": kind, "name": name, "inputs": ports["VAR_INPUT"], "outputs": ports["VAR_OUTPUT"]}
    if kind == "FUNCTION":
        if not ret or ret.upper() not in ELEMENTARY:
            return None, "no_return_type", "FUNCTION without an elementary return type"
        iface["returns"] = ret.upper()
    elif not ports["VAR_OUTPUT"]:
        return None, "no_outputs", "the reference POU has no VAR_OUTPUT to check"
    return iface, "", ""


INT_RANGE = {"SINT": (-128, 127), "INT": (-32768, 32767), "DINT": (-2**31, 2**31 - 1), "LINT": (-2**63, 2**63 - 1),
             "USINT": (0, 255), "BYTE": (0, 255), "UINT": (0, 65535), "WORD": (0, 65535),
             "UDINT": (0, 2**32 - 1), "DWORD": (0, 2**32 - 1), "ULINT": (0, 2**64 - 1), "LWORD": (0, 2**64 - 1)}


def _boundary_values(code: str) -> list[int]:
    """Each decimal constant of the code and its neighbours (c-1, c, c+1), and 0: inputs there reach the
    branches and limits the reference tests (`level > 100`, `MOD 10`), which uniform draws seldom hit."""
    consts = {int(float(n)) for n in re.findall(r"(?<![\w#.])\d+(?:\.\d+)?(?![\w#])", _strip_comments(code))}
    return sorted({c + d for c in consts | {0} for d in (-1, 0, 1)})


def _random_value(rng, t: str, near=(), p_true=0.5):
    """A value of type t: half the time one of `near` (when it fits the type), else a uniform draw over a
    range that also spans `near` (a 4-20 mA scaling tests 1200..7000, far beyond +-100)."""
    t = t.upper()
    lo, hi = INT_RANGE.get(t, (None, None))
    fits = [v for v in near if lo is None or lo <= v <= hi]
    if t not in ("BOOL", "TIME", "STRING") and fits and rng.random() < 0.5:
        return float(rng.choice(fits)) if t in ("REAL", "LREAL") else rng.choice(fits)
    low, high = min([-100, *fits]), max([100, *fits])
    if t == "BOOL":
        return rng.random() < p_true
    if t in ("REAL", "LREAL"):
        return round(rng.uniform(low, high), 2)
    if t == "TIME":
        return f"T#{rng.randrange(0, 5000, 100)}ms"
    if t == "STRING":
        return rng.choice(["", "A", "OK"])
    if t in ("USINT", "UINT", "UDINT", "ULINT", "BYTE", "WORD", "DWORD", "LWORD"):
        return rng.randint(0, max(199, high))
    return rng.randint(low, high)


def _properties_text(props) -> str:
    lines = []
    for p in props:
        if isinstance(p, dict):
            desc = p.get("property_description") or p.get("description")
            lines.append(f"- {desc}" if desc else f"- {json.dumps(p, sort_keys=True)}")
        else:
            lines.append(f"- {p}")
    return "\n".join(lines)


# long enough for a state machine to go round (a counter to its limit, a sequence through its steps)
SEQUENCES, STEPS = 8, 24


def agents4plc_task(rec, where: str, split_name: str = "") -> tuple[dict | None, str, str]:
    """One Agents4PLC record as (task dict, "", ""), or (None, reason code, detail) when it cannot be
    judged here. A malformed record raises ValueError."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: record is not a JSON object")
    rid = rec.get("id")
    if not isinstance(rid, (str, int)) or not str(rid).strip():
        raise ValueError(f"{where}: record has no 'id'")
    if not isinstance(rec.get("instruction"), str) or not rec["instruction"].strip():
        raise ValueError(f"{where}: record {rid!r}: field 'instruction' must be a non-empty string")
    if not isinstance(rec.get("properties_to_be_validated") or [], list):   # null in a published record
        raise ValueError(f"{where}: record {rid!r}: field 'properties_to_be_validated' must be a list")
    code = rec.get("ground_truth") or rec.get("code") or rec.get("reference_code") or ""
    if not isinstance(code, str) or not code.strip():
        return None, "no_reference_code", "no reference ST code: the formal properties alone give no executable oracle"
    iface, reason, detail = reference_interface(code)
    if iface is None:
        return None, reason, detail
    import random
    import zlib

    from .agents4plc import semantic_mutants
    seed = zlib.crc32(str(rid).encode())
    rng = random.Random(seed)
    near = _boundary_values(code)
    sequences = []
    for s in range(SEQUENCES):
        # after the first sequence each BOOL input leans one way (a reset seldom set, a push often): a state
        # machine or a counter then gets deep, which fair coin flips on every input seldom allow
        p_true = {n: 0.5 if s == 0 else rng.choice((0.1, 0.9)) for n in iface["inputs"]}
        steps = [{"in": {n: _random_value(rng, t, near, p_true[n]) for n, t in iface["inputs"].items()}}
                 for _ in range(STEPS)]
        sequences.append({"name": f"seeded sequence {s + 1}", "steps": steps})
    oracle = {**iface, "cycle_ms": 100, "tolerance": 1e-6, "expected_from": "gold", "sequences": sequences}
    safe = re.sub(r"[^A-Za-z0-9]+", "-", str(rid)).strip("-").lower()
    props = _properties_text(rec.get("properties_to_be_validated") or [])
    instruction = rec["instruction"].strip()
    instruction += (f"\n\nImplement it as {iface['pou']} {iface['name']} with VAR_INPUT "
                    + ", ".join(f"{n} : {t}" for n, t in iface["inputs"].items())
                    + (", VAR_OUTPUT " + ", ".join(f"{n} : {t}" for n, t in iface["outputs"].items())
                       if iface["outputs"] else "")
                    + (f", returning {iface['returns']}" if iface.get("returns") else "") + ".")
    if props:
        instruction += "\n\nProperties to be validated:\n" + props
    level = str(rec.get("difficulty") or split_name or "").lower()     # high-fidelity: medium when not given
    difficulty = level if level in ("easy", "medium", "hard") else "medium"
    return {
        "id": f"iecst-a4plc-{safe}", "dsl": "iecst", "domain": "Industrial Automation",
        "title": str(rec.get("title") or f"Agents4PLC {rid}")[:100], "difficulty": difficulty,
        "constructs": [iface["pou"]], "failure_modes": [],
        "instruction": instruction + "\n", "context": {}, "gold": code.strip() + "\n", "oracle": oracle,
        "provenance": {"source": "upstream", "benchmark": "Agents4PLC", "upstream_id": str(rid),
                       "licence": str(rec.get("licence") or "Apache-2.0")},    # the repository's LICENSE
        "split": "test", "mutants": semantic_mutants(code.strip() + "\n", seed),
    }, "", ""
