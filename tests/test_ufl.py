"""UFL validator specifics, on the real toolchain (fenics-ufl + fenics-basix in the sandbox).

The generic tests/test_validators.py already proves every gold and known-bad program; here: which of
the two semantic criteria decides (signature vs numeric check), the guards around them (coefficient
roles, boundary ids, element spaces, unnamed coefficients), the preflight errors (legacy API,
ArityMismatch), hostile programs (incl. one that tries to borrow the gold's forms), reproducible
logs, the strict oracle check and the missing upstream loader.
"""
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains
from dslbench.tasks import TaskError, load_task_file

from conftest import tasks_if_available

ROOT = Path(__file__).resolve().parents[1]


tasks = tasks_if_available("ufl")


def evaluate_all(tasks, cases: dict) -> dict:
    """Evaluate {label: (task id, program)} concurrently (each evaluation is its own sandboxed process)."""
    with ThreadPoolExecutor(max_workers=2) as ex:
        futures = {label: ex.submit(pipeline.evaluate, "ufl", tasks[tid], program)
                   for label, (tid, program) in cases.items()}
        return {label: f.result() for label, f in futures.items()}


ROBIN_HEAD = "from problem import *\n"
ROBIN_A = ("a = kappa * ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx + alpha * u * v * ufl.ds(1)\n")

# Wrong forms of its own, then every way to take the gold's from its process or work dir: the
# runner's frames, the interpreter's objects, the gold module by name, other files beside it. When
# the gold ran in the same process (the old runner) this passed; now nothing of the gold is there.
FORGER = """from problem import *
import gc, glob, json, runpy, sys

a = u * v * ufl.dx
L = 2 * f * v * ufl.dx


def _theirs(d):
    return (isinstance(d, dict) and d is not globals() and isinstance(d.get("a"), ufl.Form)
            and isinstance(d.get("L"), ufl.Form))


def _steal():
    f = sys._getframe()
    while f is not None:
        for scope in (f.f_locals, f.f_globals):
            for v in list(scope.values()):
                for w in [v] + (list(v.values()) if isinstance(v, dict) else []):
                    for d in [w] + (list(w) if isinstance(w, tuple) else []):
                        if _theirs(d):
                            return d
        f = f.f_back
    for d in gc.get_objects():
        if _theirs(d):
            return d
    try:
        import _gold_forms
        return vars(_gold_forms)
    except BaseException:
        pass
    for path in sorted(glob.glob("*.py") + glob.glob("*.json")):
        if path not in ("forms.py", "problem.py", "run_ufl.py"):
            try:
                d = runpy.run_path(path) if path.endswith(".py") else json.load(open(path))
            except BaseException:
                continue
            if _theirs(d):
                return d
    return None


_gold = _steal()
if _gold is not None:
    globals().update({k: v for k, v in _gold.items() if not k.startswith("__")})
"""

CASES = {
    # inner -> dot, swapped operands: the preprocessed signatures are equal
    "swapped_dot": ("ufl-001", "from problem import *\n"
                    "a = ufl.dot(ufl.grad(v), ufl.grad(u)) * ufl.dx\n"
                    "L = ufl.inner(v, f) * ufl.dx\n"),
    # the same linear form split into lhs/rhs of a residual: signature differs, integrands equal
    "split_sum": ("ufl-007", ROBIN_HEAD +
                  "F = (kappa * ufl.dot(ufl.grad(u), ufl.grad(v)) - f * v) * ufl.dx"
                  " + alpha * (u - u_ext) * v * ufl.ds(1) - g * v * ufl.ds(2)\n"
                  "a, L = ufl.lhs(F), ufl.rhs(F)\n"),
    # the flux on boundary part 3 instead of 2
    "wrong_boundary_id": ("ufl-007", ROBIN_HEAD + ROBIN_A +
                          "L = f * v * ufl.dx + alpha * u_ext * v * ufl.ds(1) + g * v * ufl.ds(3)\n"),
    # coefficients re-created in another order and used in each other's roles: the plain signature
    # collides with the gold's, only the coefficient-name order tells them apart
    "swapped_roles": ("ufl-007", ROBIN_HEAD +
                      "g = ufl.Coefficient(V)\nf = ufl.Coefficient(V)\nu_ext = ufl.Coefficient(V)\n" + ROBIN_A +
                      "L = g * v * ufl.dx + alpha * u_ext * v * ufl.ds(1) + f * v * ufl.ds(2)\n"),
    # a coefficient the task does not name, in a form whose signature differs
    "unnamed_coefficient": ("ufl-001", "from problem import *\n"
                            "s = ufl.Coefficient(V)\n"
                            "a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx\n"
                            "L = s * f * v * ufl.dx\n"),
    # a Lagrange variant other than the default spans the same space: judged by the numeric check
    "lagrange_variant": ("ufl-003", "import basix, basix.ufl, ufl\n"
                         "mesh = ufl.Mesh(basix.ufl.element('P', 'tetrahedron', 1, shape=(3,)))\n"
                         "V = ufl.FunctionSpace(mesh, basix.ufl.element(basix.ElementFamily.P,"
                         " basix.CellType.tetrahedron, 2, basix.LagrangeVariant.equispaced))\n"
                         "u, v = ufl.TrialFunction(V), ufl.TestFunction(V)\n"
                         "rho = ufl.Constant(mesh)\n"
                         "m = ufl.inner(rho * u, v) * ufl.dx\n"),
    # a hand-derived first Piola-Kirchhoff residual equals the derivative of the energy
    "hand_derived_residual": ("ufl-019", "from problem import *\n"
                              "F = ufl.Identity(3) + ufl.grad(u)\nJ = ufl.det(F)\nFiT = ufl.inv(F).T\n"
                              "psi = mu / 2 * (ufl.inner(F, F) - 3) - mu * ufl.ln(J) + lmbda / 2 * ufl.ln(J)**2\n"
                              "Pi = psi * ufl.dx - ufl.dot(B, u) * ufl.dx - ufl.dot(T, u) * ufl.ds(2)\n"
                              "R = (ufl.inner(mu * (F - FiT) + lmbda * ufl.ln(J) * FiT, ufl.grad(v))"
                              " - ufl.dot(B, v)) * ufl.dx - ufl.dot(T, v) * ufl.ds(2)\n"
                              "K = ufl.derivative(R, u, du)\n"),
    # legacy API: must fail the preflight with the error line
    "legacy_api": ("ufl-001", "from ufl import *\n"
                   "element = FiniteElement('Lagrange', triangle, 1)\n"),
    # ArityMismatch derives from BaseException: still a clean syntax failure
    "arity_mismatch": ("ufl-001", "from problem import *\n"
                       "a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx + f * v * ufl.dx\n"
                       "L = f * v * ufl.dx\n"),
    "missing_form": ("ufl-001", "from problem import *\na = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx\n"),
    "sys_exit": ("ufl-001", "import sys\nsys.exit(0)\n"),
    "borrows_gold": ("ufl-001", FORGER),
    # the pair (a, L) times one common factor: the same discrete problem
    "negated_pair": ("ufl-007", ROBIN_HEAD + "a = -(" + ROBIN_A[4:-1] + ")\n"
                     "L = -(f * v * ufl.dx + alpha * u_ext * v * ufl.ds(1) + g * v * ufl.ds(2))\n"),
    "scaled_residual_pair": ("ufl-020", "from problem import *\nu, p = ufl.split(w)\n"
                             "F = -3 * (nu * ufl.inner(ufl.grad(u), ufl.grad(v)) + ufl.inner(ufl.grad(u) * u, v)"
                             " - p * ufl.div(v) - q * ufl.div(u) - ufl.inner(f, v)) * ufl.dx\n"
                             "J = ufl.derivative(F, w, dw)\n"),
    # only one form of the pair negated (a changed problem), and a factor on an independent matrix
    "negated_a_only": ("ufl-001", "from problem import *\n"
                       "a = -ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx\nL = f * v * ufl.dx\n"),
    "negated_L_only": ("ufl-001", "from problem import *\n"
                       "a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx\nL = -f * v * ufl.dx\n"),
    "scaled_matrices": ("ufl-011", "from problem import *\nM = 2 * u * v * ufl.dx\n"
                        "M_lumped = 2 * u * v * ufl.dx(scheme='vertex', degree=1)\n"),
}


@pytest.fixture(scope="module")
def outcomes(tasks):
    return evaluate_all(tasks, CASES)


def _sem(out):
    return out["semantic"]["status"], out["semantic"]["diagnostics"]


def test_probe_names_the_real_toolchain(tasks):
    probe = toolchains.probe("ufl")
    assert probe.available
    assert "fenics-ufl 2026.2.0" in probe.version and "fenics-basix 0.11.0" in probe.version


def test_equivalent_rewrite_passes_by_signature(outcomes):
    status, diag = _sem(outcomes["swapped_dot"])
    assert status == "pass"
    assert "a: preprocessed form signature equal" in diag and "L: preprocessed form signature equal" in diag


def test_split_sum_passes_by_numeric_check(outcomes):
    status, diag = _sem(outcomes["split_sum"])
    assert status == "pass"
    assert "L: signature differs, integrands equal" in diag and "(numeric check)" in diag


@pytest.mark.parametrize("case", ["negated_pair", "scaled_residual_pair"])
def test_problem_forms_times_a_common_factor_pass(outcomes, case):
    status, diag = _sem(outcomes[case])
    assert status == "pass", diag
    assert "common factor" in diag


@pytest.mark.parametrize("case", ["negated_a_only", "negated_L_only", "scaled_matrices"])
def test_a_factor_on_part_of_a_problem_or_on_independent_forms_fails(outcomes, case):
    status, diag = _sem(outcomes[case])
    assert status == "fail", diag


def test_wrong_boundary_id_fails(outcomes):
    out = outcomes["wrong_boundary_id"]
    assert out["syntax"]["status"] == "pass"
    status, diag = _sem(out)
    assert status == "fail"
    assert diag.startswith("L: signature differs") and "ds(3)" in diag
    # the gold's own measure is what the oracle knows: only in `expected`
    assert "ds(2)" not in diag and "ds(2)" in out["semantic"]["expected"]


def test_coefficients_in_swapped_roles_fail_despite_equal_signature(outcomes):
    status, diag = _sem(outcomes["swapped_roles"])
    assert status == "fail"
    assert "signature equal only with coefficients in other roles" in diag
    assert "program order g, f, u_ext, alpha)" in diag and "task order" not in diag
    assert "L: the task's coefficient order is f, g, u_ext, alpha" in outcomes["swapped_roles"]["semantic"]["expected"]


def test_expected_values_are_kept_out_of_the_diagnostics(tasks):
    # The refinement loop feeds diagnostics back to the model: the gold's values go to `expected`.
    t = tasks["ufl-003"]
    m = next(m for m in t.mutants if m.level == "semantic")          # P1 instead of P2
    sem = pipeline.evaluate("ufl", t, m.program)["semantic"]
    assert sem["status"] == "fail"
    assert sem["diagnostics"] == "m: the test function's space is P degree 1 on tetrahedron, not the task's"
    assert "degree 2" not in sem["diagnostics"] and sem["expected"] == "m: the task's test space is P degree 2 on tetrahedron"
    t = tasks["ufl-001"]
    m = next(m for m in t.mutants if m.level == "semantic")
    sem = pipeline.evaluate("ufl", t, m.program)["semantic"]
    assert sem["status"] == "fail" and "(at sample point 0: 0.0620985)" in sem["diagnostics"]
    assert "-0.00249508" not in sem["diagnostics"] and "expected" not in sem["diagnostics"]
    assert sem["expected"] == "a: at sample point 0 over dx the task's integrand is -0.00249508"


def test_unnamed_coefficient_fails_with_reason(outcomes):
    status, diag = _sem(outcomes["unnamed_coefficient"])
    assert status == "fail" and "not one of the task's named symbols" in diag


def test_basis_variant_is_not_a_different_space(outcomes):
    status, diag = _sem(outcomes["lagrange_variant"])
    assert status == "pass" and "numeric check" in diag


def test_hand_derived_hyperelastic_residual_passes(outcomes):
    status, diag = _sem(outcomes["hand_derived_residual"])
    assert status == "pass", diag
    assert "R: signature differs, integrands equal" in diag


def test_legacy_api_fails_preflight(outcomes):
    out = outcomes["legacy_api"]
    assert out["syntax"]["status"] == "fail"
    assert out["syntax"]["diagnostics"] == ("the program does not run: NameError: name 'FiniteElement' "
                                            "is not defined (line 2)")


def test_arity_mismatch_is_a_syntax_failure(outcomes):
    out = outcomes["arity_mismatch"]
    assert out["syntax"]["status"] == "fail"
    assert "UFL rejects form 'a': ArityMismatch: Adding expressions with non-matching form arguments" \
        in out["syntax"]["diagnostics"]


def test_missing_form_and_exit_fail_cleanly(outcomes):
    assert outcomes["missing_form"]["syntax"]["diagnostics"] == "the program defines no form named 'L'"
    assert outcomes["sys_exit"]["syntax"]["status"] == "fail"
    assert "SystemExit" in outcomes["sys_exit"]["syntax"]["diagnostics"]


def test_program_cannot_borrow_the_gold(outcomes):
    out = outcomes["borrows_gold"]
    assert out["syntax"]["status"] == "pass"
    status, diag = _sem(out)
    assert status == "fail" and out["semantic"]["reason"] == "wrong_output"
    assert diag.startswith("a: signature differs and the integrand over dx differs")


def test_gold_file_is_gone_when_the_program_runs(tasks):
    """The gold runs in a work dir of its own, removed before the program runs beside its context files."""
    import shutil
    from dslbench.sandbox import new_workdir
    tc, task = toolchains.get("ufl"), tasks["ufl-001"]
    program = "from problem import *\nexec(open('_gold_forms.py').read())\n"
    work = new_workdir()
    try:
        for name, content in task.context.items():
            (work / name).write_text(content)
        (work / tc.file_name).write_text(program)
        verdict = tc.semantic(program, task, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert verdict.status == "fail"
    assert "FileNotFoundError" in verdict.diagnostics and "_gold_forms.py" in verdict.diagnostics


def test_unusable_gold_is_our_error_not_the_programs(tasks):
    import dataclasses
    task = dataclasses.replace(tasks["ufl-001"], gold="from problem import *\na = u * v * ufl.dx\nL = 1 / 0\n")
    out = pipeline.evaluate("ufl", task, CASES["swapped_dot"][1])
    assert out["semantic"]["status"] == "error" and out["semantic"]["reason"] == "gold_broken"
    assert "the gold is unusable: the program does not run: ZeroDivisionError" in out["semantic"]["diagnostics"]


def test_non_terminating_program_times_out(tasks):
    tc = toolchains.get("ufl")
    saved = dict(tc.card["limits"])
    tc.card["limits"]["timeout_s"] = 5
    try:
        out = pipeline.evaluate("ufl", tasks["ufl-001"], "while True:\n    pass\n")
    finally:
        tc.card["limits"] = saved
    assert out["syntax"]["status"] == "fail" and "timed out" in out["syntax"]["diagnostics"]


def test_verdicts_and_logs_are_reproducible(tasks):
    program = CASES["split_sum"][1]
    a, b = evaluate_all(tasks, {"one": ("ufl-007", program), "two": ("ufl-007", program)}).values()
    for level in ("syntax", "semantic"):
        assert a[level]["diagnostics"] == b[level]["diagnostics"]
        assert a[level]["log"] == b[level]["log"]


# --- oracle spec and upstream ------------------------------------------------------------------

def _broken_copy(tmp_path, task_id: str, edit) -> Path:
    data = yaml.safe_load((ROOT / "data/tasks/ufl" / f"{task_id}.yaml").read_text())
    edit(data)
    folder = tmp_path / "ufl"
    folder.mkdir(exist_ok=True)
    path = folder / f"{task_id}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("edit, field, message", [
    (lambda d: d["oracle"]["forms"].update(a=3), "oracle.forms.a", "arity must be 0, 1 or 2"),
    (lambda d: d["oracle"]["forms"].update(Q=1), "oracle.forms.Q", "the gold never assigns 'Q'"),
    (lambda d: d["oracle"].update(forms={}), "oracle.forms", "non-empty mapping"),
    (lambda d: d["oracle"].update(symbols=["f", "f"]), "oracle.symbols", "unique"),
    (lambda d: d["oracle"].update(tolerance=1e-6), "oracle.tolerance", "unknown key"),
    (lambda d: d.update(gold="from problem import *\na = (\n"), "oracle", "the gold is not valid Python"),
])
def test_malformed_oracle_is_rejected_with_file_line_field(tmp_path, edit, field, message):
    path = _broken_copy(tmp_path, "ufl-001", edit)
    with pytest.raises(TaskError) as err:
        load_task_file(path, toolchains.get("ufl").check_oracle)
    assert err.value.field == field and message in err.value.message
    assert err.value.path == str(path) and err.value.line


def test_no_upstream_loader(tmp_path):
    with pytest.raises(ValueError, match="ufl: no loader for an upstream benchmark format"):
        toolchains.get("ufl").import_upstream(tmp_path)
