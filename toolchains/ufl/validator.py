"""UFL: syntax = the Python program runs and defines the task's forms, which UFL preprocesses, with the
right arity; semantic = preprocessed form-signature equivalence with the gold, backed by a pointwise
numeric check of the integrands (per integral type, subdomain id and quadrature rule).

The gold and the program run in separate sandboxed processes (the gold in a work dir of its own,
removed before the program runs); each reports only its own forms' facts and the comparison happens
here, on the host, so a program cannot read or borrow the gold's forms.
"""
import ast
import hashlib
import json
import math
import shutil
import threading
from pathlib import Path

from dslbench.sandbox import new_workdir
from dslbench.toolchains import Toolchain

RUNNER = Path(__file__).with_name("run_ufl.py")
GOLD_FILE = "_gold_forms.py"
RESERVED = {"run_ufl.py", "spec.json", "report.json", GOLD_FILE}
ARITY_NAMES = {0: "a functional (arity 0)", 1: "a linear form (arity 1)", 2: "a bilinear form (arity 2)"}
DEFAULT_RTOL = 1e-9
# Single-threaded BLAS: the runner does tiny array work, and thread pools would reserve memory.
ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# The gold's report per task (key: hash of task id, gold, context, oracle): the gold is deterministic,
# so one run per task and process is enough. Only whole reports are kept, never failed runs.
_GOLD_REPORTS: dict[str, dict] = {}
_GOLD_LOCK = threading.Lock()


def _assigned_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    return names


def _fmt(v: float) -> str:
    return f"{v:.6g}"


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # the program runs and defines UFL forms
    SEMANTIC_FAIL = "wrong_output"  # form equivalence

    PACKAGES = {"fenics-ufl": "ufl", "fenics-basix": "basix"}

    # --- oracle rules beyond the card's oracle_schema ------------------------------------------------
    def oracle_rules(self, task):
        problems = []
        forms = task.oracle["forms"]
        for i, s in enumerate(task.oracle.get("symbols", [])):
            if s in forms:
                problems.append((f"symbols[{i}]", f"'{s}' is also a form name"))
        for name in task.context:
            if name in RESERVED or name == self.file_name:
                problems.append(("", f"context file name '{name}' is reserved by the validator"))
            elif name.endswith(".py") and not name[:-3].isidentifier():
                problems.append(("", f"context file '{name}' is not importable as a Python module"))
        try:
            tree = ast.parse(task.gold)
        except SyntaxError as e:
            problems.append(("", f"the gold is not valid Python: {e.msg} (line {e.lineno})"))
        else:
            assigned = _assigned_names(tree)
            for name in forms:
                if name not in assigned:
                    problems.append((f"forms.{name}", f"the gold never assigns '{name}'"))
        return problems

    # --- running ----------------------------------------------------------------------------------
    def _run(self, work: Path, program_file: str, task, numeric: bool):
        """Run one program alone in the sandbox; its report holds only its own forms' facts."""
        modules = sorted(n[:-3] for n in task.context if n.endswith(".py"))
        spec = {"program": program_file, "forms": task.oracle["forms"],
                "symbols": task.oracle.get("symbols", []), "modules": modules, "numeric": numeric}
        (work / "spec.json").unlink(missing_ok=True)  # never write through a symlink the program left
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        return self.run_runner([RUNNER], ["spec.json", "report.json"], work, env=ENV)

    def _gold_report(self, task):
        """(report or None, the run or None when cached): the gold run in a fresh work dir of its own."""
        key = hashlib.sha256(json.dumps([task.id, task.gold, task.context, task.oracle],
                                        sort_keys=True, default=str).encode()).hexdigest()
        with _GOLD_LOCK:
            if key in _GOLD_REPORTS:
                return _GOLD_REPORTS[key], None
        gold_work = new_workdir()
        try:
            for name, content in task.context.items():
                (gold_work / name).write_text(content, encoding="utf-8")
            (gold_work / GOLD_FILE).write_text(task.gold, encoding="utf-8")
            result, report = self._run(gold_work, GOLD_FILE, task, numeric=True)
        finally:
            shutil.rmtree(gold_work, ignore_errors=True)
        if report is not None:
            with _GOLD_LOCK:
                _GOLD_REPORTS[key] = report
        return report, result

    def _runner_failure(self, result):
        if result.timed_out:
            return "fail", f"timed out after {self.limits().timeout_s:.0f} s"
        return "error", f"UFL runner failed (exit {result.returncode})"

    def _preflight(self, entry: dict, forms: dict) -> str | None:
        """First reason why a program's forms are unusable, or None."""
        if not entry["ran"]:
            return f"the program does not run: {entry['error']}"
        for name, arity in forms.items():
            rec = entry["forms"].get(name, {})
            if not rec.get("present"):
                return f"the program defines no form named '{name}'"
            if "arity" in rec and rec["arity"] != arity:
                nums = ", ".join(map(str, rec["argument_numbers"])) or "none"
                return (f"'{name}' has arity {rec['arity']} (argument numbers: {nums}); "
                        f"the task asks for {ARITY_NAMES[arity]}")
            if "arity" in rec and rec["argument_numbers"] != list(range(arity)):
                return (f"'{name}' has arguments numbered {rec['argument_numbers']}; expected "
                        f"{list(range(arity))} (test function 0, trial function 1)")
            if rec.get("error"):
                return rec["error"]
        return None

    @staticmethod
    def _fault(entry: dict) -> str:
        """The reason for a program that died of a limit inside the runner (caught there, so no signal)."""
        if entry["ran"]:
            return ""
        return "resource_limit" if entry["error"].startswith("MemoryError") else ""

    def syntax(self, program, task, work):
        result, report = self._run(work, self.file_name, task, numeric=False)
        if report is None:
            status, why = self._runner_failure(result)
            return self.verdict(status, why, result)
        forms = task.oracle["forms"]
        problem = self._preflight(report, forms)
        if problem:
            return self.verdict("fail", problem, result, reason=self._fault(report))
        shown = ", ".join(f"{n} (arity {a})" for n, a in forms.items())
        return self.verdict("pass", f"runs; defines {shown}; UFL preprocessing accepts them", result)

    def semantic(self, program, task, work):
        forms = task.oracle["forms"]
        gold, gold_run = self._gold_report(task)
        if gold is None:   # the gold's run is ours: never blamed on the program
            why = "timed out" if gold_run.timed_out else f"the UFL runner failed (exit {gold_run.returncode})"
            return self.verdict("error", f"the gold is unusable: {why}", gold_run, reason="gold_broken")
        gold_problem = self._preflight(gold, forms)
        if gold_problem:
            return self.verdict("error", f"the gold is unusable: {gold_problem}", gold_run, reason="gold_broken")
        result, cand = self._run(work, self.file_name, task, numeric=True)
        spent = result.duration_s + (gold_run.duration_s if gold_run else 0.0)
        if cand is None:
            status, why = self._runner_failure(result)
            return self.verdict(status, why, result, duration_s=spent)
        problem = self._preflight(cand, forms)
        if problem:
            return self.verdict("fail", problem, result, duration_s=spent, reason=self._fault(cand))
        rtol = float(task.oracle.get("rtol", DEFAULT_RTOL))
        notes = []
        for name in forms:
            status, note, expected = self._compare(name, gold["forms"][name], cand["forms"][name], rtol)
            if status != "pass":
                scaled = self._compare_scaled(forms, gold, cand, rtol)
                if scaled is not None:
                    return self.verdict("pass", scaled, result, duration_s=spent)
                return self.verdict(status, note, result, duration_s=spent, expected=expected)
            notes.append(note)
        return self.verdict("pass", "; ".join(notes), result, duration_s=spent)

    def _compare_scaled(self, forms: dict, gold: dict, cand: dict, rtol: float) -> str | None:
        """A pass note when the program's forms are the gold's times one common nonzero factor, or None.

        Only for a discrete problem, i.e. when the task's forms include a linear and a bilinear form
        (a u = L, or a residual F with its Jacobian J, with or without an energy): multiplying every
        form of the problem by the same c != 0 leaves the discrete problem and its solution unchanged
        (e.g. `-a == -L`). A factor on only some of the forms does change the problem and still fails,
        and tasks whose forms are independent (a single form, two matrices) never get this leeway."""
        if not ({1, 2} <= set(forms.values())):
            return None
        # the factor from the largest gold sample over all forms and integral groups
        best = None
        for name in forms:
            g, c = gold["forms"][name].get("numeric"), cand["forms"][name].get("numeric")
            if g is None or c is None:
                return None
            for key, vals in g.items():
                for i, b in enumerate(vals):
                    if key in c and i < len(c[key]) and math.isfinite(b) and (best is None or abs(b) > abs(best[0])):
                        best = (b, c[key][i])
        if best is None or best[0] == 0.0 or not math.isfinite(best[1]):
            return None
        factor = best[1] / best[0]
        if abs(factor) < 1e-6 or abs(factor - 1.0) <= 1e-12:
            return None
        for name in forms:
            status, _, _ = self._compare(name, gold["forms"][name], cand["forms"][name], rtol, factor)
            if status != "pass":
                return None
        return (f"{', '.join(forms)}: every form equals the task's times the common factor {_fmt(factor)} "
                f"(the same discrete problem; numeric check)")

    # --- comparison -------------------------------------------------------------------------------
    def _compare(self, name: str, gold: dict, cand: dict, rtol: float,
                 factor: float = 1.0) -> tuple[str, str, str]:
        """(status, what the program's form does, what the gold's form has there): the gold's facts are
        kept out of the message (they go to the verdict's `expected`). With a `factor`, the program's
        form is compared with the gold's times that factor (numeric check only)."""
        if factor != 1.0:
            differs, roles = f"equal to the task's form times {_fmt(factor)}", ""
        elif cand["signature"] == gold["signature"]:
            if cand["signature_names"] == gold["signature_names"]:
                return "pass", f"{name}: preprocessed form signature equal", ""
            # Same structure, but the signature numbers other coefficients in each place.
            differs = (f"signature equal only with coefficients in other roles (program order "
                       f"{', '.join(cand['signature_names'])})")
            roles = f"{name}: the task's coefficient order is {', '.join(gold['signature_names'])}"
        else:
            differs, roles = "signature differs", ""

        def told(*parts):
            return "; ".join(p for p in (roles, *parts) if p)
        role = {"0": "test", "1": "trial"}
        for num, want in gold["arguments"].items():
            got = cand["arguments"].get(num)
            if got != want:
                return ("fail", f"{name}: the {role[num]} function's space is {got}, not the task's",
                        told(f"{name}: the task's {role[num]} space is {want}"))
        if cand["meshes"] != gold["meshes"]:
            return ("fail", f"{name}: defined on {'; '.join(cand['meshes'])}, not the task's mesh",
                    told(f"{name}: the task's form is on {'; '.join(gold['meshes'])}"))
        for sym, want in gold["symbols"].items():
            got = cand["symbols"].get(sym)
            if got is not None and got != want:
                return ("fail", f"{name}: '{sym}' is {got}, not the task's '{sym}'",
                        told(f"{name}: the task's '{sym}' is {want}"))
        if "numeric_error" in gold:
            return "error", f"{name}: numeric check impossible on the gold: {gold['numeric_error']['message']}", ""
        if "numeric_error" in cand:
            err = cand["numeric_error"]
            status = "fail" if err["kind"] == "unnamed" else "error"
            return status, f"{name}: {differs} and the numeric check cannot judge it: {err['message']}", told()
        g, c = gold["numeric"], cand["numeric"]
        if factor != 1.0:
            g = {k: [factor * v for v in vals] for k, vals in g.items()}
        scale = max([1.0] + [abs(v) for vals in g.values() for v in vals if math.isfinite(v)])
        close = lambda a, b: math.isfinite(a) and abs(a - b) <= rtol * (abs(b) + scale)  # noqa: E731
        for key, vals in g.items():
            if not all(math.isfinite(v) for v in vals):
                return "error", f"{name}: the gold integrand over {key} is not finite at the sample points", ""
        # integrals over measures that only one side has (wrong subdomain id, ds instead of dS, ...)
        extra = [k for k in sorted(set(c) - set(g)) if not all(close(v, 0.0) for v in c[k])]
        missing = [k for k in sorted(set(g) - set(c)) if not all(close(0.0, v) for v in g[k])]
        if extra or missing:
            parts = []
            if extra:
                parts.append(f"the program integrates over {', '.join(extra)}, where the task's form has no integral")
            if missing:
                parts.append("the task's form has an integral the program lacks")
            gold_has = f"{name}: the task's form also integrates over {', '.join(missing)}" if missing else ""
            return "fail", f"{name}: {differs} and " + "; ".join(parts), told(gold_has)
        npts = 0
        for key in sorted(set(g) & set(c)):
            for i, (a, b) in enumerate(zip(c[key], g[key])):
                if not close(a, b):
                    return "fail", (f"{name}: {differs} and the integrand over {key} differs from the task's "
                                    f"(at sample point {i}: {_fmt(a)})"), \
                        told(f"{name}: at sample point {i} over {key} the task's integrand is {_fmt(b)}")
            npts += len(g[key])
        return "pass", (f"{name}: {differs}, integrands equal at {npts} sample points over "
                        f"{len(g)} integral group(s) (numeric check)"), ""
