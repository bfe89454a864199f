"""OpenQASM 3: syntax = the openqasm3 reference parser and Qiskit's importer both accept the program;
semantic = circuit-level equivalence with the gold (unitary, statevector, or the distribution of measured
bits: exact when all measurements are final, else sampled with Qiskit Aer).

The oracle spec (task.oracle):
  mode: unitary | statevector | counts      what is compared (see the card)
  qubits: {name: size, ...}                 the qubit registers the program must declare (order = the
                                            canonical order used for comparison and diagnostics)
  clbits: {name: size, ...}                 bit registers; required for counts, optional otherwise
  observe: [name, ...]                      counts only: registers whose joint distribution is compared
                                            (default: all clbits)
  tolerance: float                          unitary/statevector: absolute tolerance on amplitudes
                                            (default 1e-6); counts: total variation distance (default 0.05;
                                            0 = exact, only for a deterministic gold)
  exact_tolerance: float                    counts only: the total variation distance used instead when both
                                            distributions are exact, not sampled (default: tolerance)
  shots: int, seed: int                     counts only (defaults 4000, 1); used when a circuit needs shot-by-shot
                                            simulation (mid-circuit measurement, reset, feed-forward)
  basis_inputs: [int, ...]                  statevector only: basis states (index over the canonical
                                            qubit order) the circuit is also run from, for a transform
                                            rather than a state preparation (default: |0...0> only)
  variants: [{file: text, ...}, ...]        hidden replacements of context files (other oracles): gold and
                                            candidate are compared again with each
"""
import json
from pathlib import Path

from dslbench.toolchains import Toolchain

RUNNER = Path(__file__).with_name("run_openqasm.py")
RUNNER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "RAYON_NUM_THREADS": "1", "QISKIT_PARALLEL": "FALSE"}
MAX_QUBITS = {"unitary": 10, "statevector": 20, "counts": 20}
# Names a register cannot take in a program that includes stdgates.inc (Qiskit: "already defined").
RESERVED = {"p", "x", "y", "z", "h", "s", "sdg", "t", "tdg", "sx", "rx", "ry", "rz", "cx", "cy", "cz", "cp", "crx",
            "cry", "crz", "ch", "swap", "ccx", "cswap", "cu", "CX", "phase", "cphase", "id", "u1", "u2", "u3", "U",
            "pi", "tau", "euler"}


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # openqasm3 / Qiskit parse
    SEMANTIC_FAIL = "wrong_output"  # circuit simulation

    PACKAGES = {"openqasm3": "openqasm3", "antlr4-python3-runtime": "antlr4", "qiskit": "qiskit",
                "qiskit-qasm3-import": "qiskit_qasm3_import", "qiskit-aer": "qiskit_aer"}

    def describe(self, v):
        return (f"openqasm3 {v['openqasm3']} (ANTLR {v['antlr4-python3-runtime']}); Qiskit {v['qiskit']} + "
                f"qiskit-qasm3-import {v['qiskit-qasm3-import']}; Qiskit Aer {v['qiskit-aer']}")

    # --- oracle rules beyond the card's oracle_schema ------------------------------------------------
    def oracle_rules(self, task):
        o, problems = task.oracle, []
        mode, qubits, clbits = o["mode"], o["qubits"], o.get("clbits", {})
        for key, regs in (("qubits", qubits), ("clbits", clbits)):
            for name in regs:
                if name in RESERVED:
                    problems.append((f"{key}.{name}", f"'{name}' is a stdgates.inc gate or a constant, not a usable register name"))
        total = sum(qubits.values())
        if total > MAX_QUBITS[mode]:
            problems.append(("qubits", f"{total} qubits: at most {MAX_QUBITS[mode]} for mode {mode}"))
        for name in set(qubits) & set(clbits):
            problems.append((f"clbits.{name}", "a name cannot be both a qubit and a bit register"))
        for i, name in enumerate(o.get("observe", [])):
            if name not in clbits:
                problems.append((f"observe[{i}]", f"'{name}' is not one of the clbits registers"))
        if any(k >= 2 ** total for k in o.get("basis_inputs", [])):
            problems.append(("basis_inputs", f"a non-empty list of basis-state indices in [1, 2^{total})"))
        for i, variant in enumerate(o.get("variants", [])):
            for name in variant:
                if name not in task.context:
                    problems.append((f"variants[{i}].{name}", f"'{name}' is not a context file of the task"))
        return problems

    # --- running the sandboxed runner -----------------------------------------------------------
    # One sandbox call judges both levels (levels()): the runner in mode "both" writes the syntax
    # report first and, only if the program passed, the semantic report, so Python and Qiskit start
    # once per program. A timeout or crash during the simulation cannot change the syntax verdict,
    # whose report exists already. The two verdicts share the command and log; each gets its own
    # share of the time. syntax() and semantic() judge one level alone (mode "syntax" / "semantic").
    def _job(self, mode: str, task) -> dict:
        variants = [dict(task.context)] + [{**task.context, **v} for v in task.oracle.get("variants", [])]
        return {"mode": mode, "program": self.file_name, "includes": dict(task.context), "gold": "gold.qasm",
                "oracle": task.oracle, "variants": variants, "syntax_out": "syntax.json",
                "semantic_out": "semantic.json"}

    def _gold_distributions(self, task) -> list | None:
        """counts mode: the gold's outcome distribution per include variant, run alone once per task
        and toolchain version (the oracle cache). None when the gold cannot be judged: the candidate's
        run then runs the gold too and reports why."""
        def run_gold(work: Path):
            (work / "gold.qasm").write_text(task.gold, encoding="utf-8")
            job = {**self._job("gold", task), "program": "gold.qasm"}
            (work / "job.json").write_text(json.dumps(job), encoding="utf-8")
            result, report = self.run_runner([RUNNER], ["job.json"], work, report="semantic.json", env=RUNNER_ENV)
            return (report or {}).get("distributions"), result
        return self.gold_expected(task, run_gold)[0]

    def _run(self, work: Path, mode: str, task):
        """(result, syntax report, semantic report) of one runner call; a report is None when absent."""
        job = self._job(mode, task)
        if mode != "syntax" and task.oracle["mode"] == "counts":
            job["expected"] = self._gold_distributions(task)
        (work / "gold.qasm").write_text(task.gold, encoding="utf-8")
        (work / "job.json").write_text(json.dumps(job), encoding="utf-8")
        (work / "semantic.json").unlink(missing_ok=True)
        # the runner exits 0 also when the program fails; a report cut off by a limit reads as None
        result, syntax = self.run_runner([RUNNER], ["job.json"], work, report="syntax.json", env=RUNNER_ENV)
        if result.returncode != 0:   # a run killed mid-simulation still leaves its syntax report
            syntax = self.read_report(work / "syntax.json", result)
        return result, syntax, self.read_report(work / "semantic.json", result)

    def levels(self, program, task, work):
        result, syntax, semantic = self._run(work, "both", task)
        if syntax is not None and semantic is None:  # the simulation was cut off: time until the syntax report
            syntax_s = min(syntax.get("elapsed", result.duration_s), result.duration_s)
        else:
            syntax_s = max(result.duration_s - (semantic or {}).get("seconds", 0.0), 0.0)
        syn = self._syntax_verdict(result, syntax, syntax_s)
        if syn.status != "pass":
            return syn, None
        return syn, self._semantic_verdict(task, result, semantic, syntax_s)

    def syntax(self, program, task, work):
        result, syntax, _ = self._run(work, "syntax", task)
        return self._syntax_verdict(result, syntax, None)

    def semantic(self, program, task, work):
        result, _, semantic = self._run(work, "semantic", task)
        return self._semantic_verdict(task, result, semantic, 0.0)

    def _syntax_verdict(self, result, report, duration):
        if report is None:
            if result.timed_out:
                return self.verdict("fail", f"parsing timed out after {self.limits().timeout_s:.0f} s", result)
            return self.verdict("error", f"OpenQASM runner failed (exit {result.returncode})", result)
        if not report["ok"]:
            return self.verdict("fail", report["error"], result)
        return self.verdict("pass", f"accepted by openqasm3 and Qiskit: {report['summary']}", result, duration)

    def _semantic_verdict(self, task, result, report, syntax_s):
        if report is None:
            rest = max(result.duration_s - syntax_s, 0.0)
            if result.timed_out:
                size = sum(task.oracle["qubits"].values())
                return self.verdict("fail", f"simulation did not finish within {self.limits().timeout_s:.0f} s "
                                            f"({size} qubit{'s' if size != 1 else ''}, {task.oracle['mode']} mode: a circuit too large to "
                                            "simulate in the time limit, or a loop that does not end)", result, rest)
            return self.verdict("error", f"OpenQASM runner failed (exit {result.returncode})", result, rest)
        return self.verdict(report["status"], report["diagnostics"], result,
                            report.get("seconds", result.duration_s), expected=report.get("expected", ""))

    # --- upstream: QCircuitBench ----------------------------------------------------------------
    def import_upstream(self, source: Path):
        """Tasks from a QCircuitBench checkout (or any folder below it): see qcircuitbench.py."""
        from . import qcircuitbench
        return qcircuitbench.load(Path(source))
