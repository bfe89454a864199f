"""Runs inside the sandbox: execute one UFL program, inspect the forms it defines, write a JSON report.

usage: python run_ufl.py SPEC.json REPORT.json

SPEC = {"program": file,                        # the one program this process runs
        "forms": {name: arity, ...},            # the forms the task asks for
        "symbols": [name, ...],                 # coefficient / constant names, matched by name
        "modules": [name, ...],                 # context modules (problem.py -> problem)
        "numeric": bool}                        # also evaluate the integrands (numeric check)

The report holds whether the program ran (first error line otherwise) and, per requested form:
arity, argument elements, UFL preprocessing status, the preprocessed form signature (with the task
names of the coefficients in the order the signature numbers them) and, when asked, the integrand
values of the numeric check grouped by (integral type, subdomain id, quadrature rule).

Only this program's own facts are reported: the gold and the candidate each run in a process of
their own and the validator compares the two reports on the host, so nothing of the gold is in a
candidate's process (stand-ins are seeded by the task's symbol names and argument numbers alone).
"""
import hashlib
import itertools
import json
import math
import os
import re
import runpy
import sys
import traceback
import contextlib

import numpy as np

import ufl
from ufl.algorithms import compute_form_data
from ufl import classes as C

SIGNATURE_OPTIONS = dict(do_apply_function_pullbacks=True, do_apply_integral_scaling=True,
                         do_apply_geometry_lowering=True, do_remove_component_tensors=True,
                         preserve_geometry_types=(C.Jacobian,), do_apply_restrictions=True,
                         do_append_everywhere_integrals=False, complex_mode=False)
N_SAMPLES = 3        # sets of replacement functions (sample 1 reverses sample 0's facet normal)
N_POINTS = 6         # evaluation points per set


# --- running a program -----------------------------------------------------------------------------

def first_line(exc: BaseException) -> str:
    """Exception type and first message line, without object ids/addresses (logs must be reproducible)."""
    text = str(exc).strip().splitlines()
    msg = text[0] if text else ""
    msg = re.sub(r" id=\d+", "", msg)
    msg = re.sub(r" at 0x[0-9a-f]+", "", msg)
    return f"{type(exc).__name__}: {msg}"[:300]


def where(exc: BaseException, path: str) -> str:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return f" (line {lines[-1]})" if lines else ""


def run_program(path: str):
    """Execute the program file as a module; returns (namespace, error)."""
    cwd = os.getcwd()
    try:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            ns = runpy.run_path(path, run_name="ufl_program")
        return ns, None
    except SyntaxError as e:
        return None, f"SyntaxError: {e.msg} (line {e.lineno})"
    except BaseException as e:  # noqa: BLE001  (SystemExit, UFL's ArityMismatch derive from BaseException)
        return None, first_line(e) + where(e, path)
    finally:
        os.chdir(cwd)


# --- describing elements -----------------------------------------------------------------------

def element_desc(e) -> str:
    """Family, degree, cell, continuity and shape; blind to basis variants (same spanned space)."""
    try:
        if type(e).__name__ == "_MixedElement":
            return "mixed[" + ", ".join(element_desc(s) for s in e.sub_elements) + "]"
        if type(e).__name__ == "_BlockedElement":
            return f"{element_desc(e.sub_elements[0])} with shape {tuple(e.reference_value_shape)}"
        if hasattr(e, "family_name") and hasattr(e, "cell_type"):
            dc = " discontinuous" if e.discontinuous else ""
            return f"{e.family_name}{dc} degree {e.degree} on {e.cell_type.name}"
    except Exception:  # noqa: BLE001
        pass
    return repr(e)


def space_desc(obj) -> str:
    return element_desc(obj.ufl_function_space().ufl_element())


# --- names of coefficients ----------------------------------------------------------------------

def symbol_names(ns: dict) -> dict:
    """id(object) -> task name, for the task's named coefficients and constants."""
    names = {}
    for name in SPEC["symbols"]:
        obj = ns.get(name)
        if obj is None:
            for mod in sorted(SPEC_MODULES):
                m = sys.modules.get(mod)
                if m is not None and hasattr(m, name):
                    obj = getattr(m, name)
                    break
        if isinstance(obj, (C.Coefficient, C.Constant)):
            names.setdefault(id(obj), name)
    return names


def terminal_names(form, names: dict) -> list:
    """Task names of the form's coefficients then constants, in the order its signature numbers them."""
    out = []
    for c in list(form.coefficients()) + list(form.constants()):
        out.append(names.get(id(c), f"<unnamed {type(c).__name__}>"))
    return out


# --- numeric check: stand-in values for the terminals, integrands evaluated at points ----------

class Unsupported(Exception):
    """The numeric check cannot evaluate this integrand (kind: 'unnamed' symbol or 'unsupported' node)."""

    def __init__(self, message, kind="unsupported"):
        super().__init__(message)
        self.kind = kind


def _rng(*key) -> np.random.Generator:
    digest = hashlib.sha256("|".join(map(str, key)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


GEOMETRY_SCALARS = ("CellDiameter", "Circumradius", "CellVolume", "FacetArea", "MinCellEdgeLength",
                    "MaxCellEdgeLength", "MinFacetEdgeLength", "MaxFacetEdgeLength")


class StandIns:
    """Values (and up to second derivatives) of the stand-ins for the terminals of an integrand.

    Arguments, Coefficients and Constants (by task name) get deterministic functions per sample
    and side ('+' and '-' differ, so jumps do not vanish). Each scalar component is
      phi(x) = b + 0.1 (c.x + c' x0 x1 + s sin(w.x + t) + e exp(0.3 x0)),
    a generic smooth function with a positive part b and small gradients (so det(I + grad u) > 0
    for stand-in displacements and square roots / logarithms of coefficients stay defined).
    Constants are constant; facet normals are opposite unit vectors on the two sides (sample 1
    reverses sample 0's, so b.n takes both signs); cell-size quantities are positive numbers.
    Arrays have shape (points, *value shape, *(gdim,) * derivatives).
    """

    def __init__(self, names, sample, X):
        self.names, self.sample, self.X = names, sample, X
        self.P, self.gdim = X.shape
        self.missing = []

    def leaf(self, t, side, k):
        P, d = self.P, self.gdim
        shape = tuple(t.ufl_shape)
        if isinstance(t, C.SpatialCoordinate):
            if k == 0:
                return self.X
            if k == 1:
                return np.broadcast_to(np.eye(d), (P, d, d))
            return np.zeros((P, d) + (d,) * k)
        if isinstance(t, C.Argument):
            return self._functions(("argument", t.number(), t.part(), side or ""), shape, k)
        if isinstance(t, (C.Coefficient, C.Constant)):
            name = self.names.get(id(t))
            if name is None:
                self.missing.append(type(t).__name__)
                name = f"<unnamed {len(self.missing)}>"
            if isinstance(t, C.Constant):
                return self._constant(("symbol", name, side or ""), shape, k)
            return self._functions(("symbol", name, side or ""), shape, k)
        if isinstance(t, C.FacetNormal):
            vec = _rng("normal", self.sample - self.sample % 2).normal(size=d)
            vec = vec / np.linalg.norm(vec) * (-1.0 if self.sample % 2 else 1.0) * (-1.0 if side == "-" else 1.0)
            return self._with_zero_derivatives(vec, k)
        name = type(t).__name__
        if name in GEOMETRY_SCALARS:
            value = _rng("geometry", name, side or "+", self.sample).uniform(0.1, 0.5)
            return self._with_zero_derivatives(np.float64(value), k)
        raise Unsupported(f"no stand-in for {name}")

    def _with_zero_derivatives(self, value, k):
        value = np.asarray(value, dtype=float)
        if k:
            return np.zeros((self.P,) + value.shape + (self.gdim,) * k)
        return np.broadcast_to(value, (self.P,) + value.shape)

    def _constant(self, key, shape, k):
        n = int(np.prod(shape)) if shape else 1
        values = _rng(*key, self.sample).uniform(0.6, 1.4, size=n).reshape(shape)
        return self._with_zero_derivatives(values, k)

    def _functions(self, key, shape, k):
        if k > 2:
            raise Unsupported("derivatives of order above 2")
        P, d, X = self.P, self.gdim, self.X
        n = int(np.prod(shape)) if shape else 1
        rng = _rng(*key, self.sample)
        base = rng.uniform(0.6, 1.4, size=n)
        lin = rng.uniform(-1.0, 1.0, size=(n, d))
        cross, amp_s, phase, amp_e = (rng.uniform(-1.0, 1.0, size=n) for _ in range(4))
        freq = rng.uniform(0.5, 1.5, size=(n, d))
        x0 = X[:, 0]
        x1 = X[:, 1] if d > 1 else X[:, 0]
        arg = X @ freq.T + phase                                  # (P, n)
        ex = np.exp(0.3 * x0)[:, None]                            # (P, 1)
        if k == 0:
            val = base + 0.1 * (X @ lin.T + cross * (x0 * x1)[:, None] + amp_s * np.sin(arg) + amp_e * ex)
            return val.reshape((P,) + shape)
        e0 = np.zeros(d)
        e0[0] = 1.0
        dx0x1 = np.zeros((P, d))                                  # gradient of x0 * x1
        if d > 1:
            dx0x1[:, 0], dx0x1[:, 1] = x1, x0
        else:
            dx0x1[:, 0] = 2 * x0
        if k == 1:
            g = (lin[None, :, :] + cross[None, :, None] * dx0x1[:, None, :]
                 + (amp_s * np.cos(arg))[:, :, None] * freq[None, :, :]
                 + (0.3 * amp_e * ex)[:, :, None] * e0)
            return (0.1 * g).reshape((P,) + shape + (d,))
        h2 = np.zeros((d, d))                                     # Hessian of x0 * x1
        if d > 1:
            h2[0, 1] = h2[1, 0] = 1.0
        else:
            h2[0, 0] = 2.0
        hess = (cross[None, :, None, None] * h2
                - (amp_s * np.sin(arg))[:, :, None, None] * (freq[:, :, None] * freq[:, None, :])[None]
                + (0.09 * amp_e * ex)[:, :, None, None] * np.outer(e0, e0))
        return (0.1 * hess).reshape((P,) + shape + (d, d))


UNARY = {"Sqrt": np.sqrt, "Exp": np.exp, "Ln": np.log, "Cos": np.cos, "Sin": np.sin, "Tan": np.tan,
         "Cosh": np.cosh, "Sinh": np.sinh, "Tanh": np.tanh, "Acos": np.arccos, "Asin": np.arcsin,
         "Atan": np.arctan, "Abs": np.abs, "Sign": np.sign,
         "Erf": np.vectorize(math.erf, otypes=[float])}
LETTERS = "abcdefghijklmnopqrstuvwxyABCDEFGHIJKLMNOPQRSTUVWXYZ"
COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
           "GE": np.greater_equal}


class Evaluator:
    """Vectorised evaluation of a UFL expression DAG at points.

    A node's value is an array of shape (points, *ufl_shape, *free index dimensions), the free
    index axes in the node's ufl_free_indices order.
    """

    def __init__(self, stand: StandIns):
        self.stand = stand
        self.X = stand.X               # (P, gdim)
        self.P = stand.P

    @staticmethod
    def _lift(val, node, target_fi):
        """Insert unit axes so that val (axes of node's free indices) broadcasts to target_fi."""
        fi = node.ufl_free_indices
        nshape = len(node.ufl_shape)
        shape = list(val.shape[:1 + nshape])
        j = 0
        for idx in target_fi:
            if j < len(fi) and fi[j] == idx:
                shape.append(val.shape[1 + nshape + j])
                j += 1
            else:
                shape.append(1)
        return val.reshape(shape)

    def _full(self, o, value):
        shape = (self.P,) + tuple(o.ufl_shape) + tuple(o.ufl_index_dimensions)
        return np.broadcast_to(np.asarray(value, dtype=float), shape)

    def _target(self, o, v):
        shape = (self.P,) + tuple(o.ufl_shape) + tuple(o.ufl_index_dimensions)
        return np.broadcast_to(v, shape)

    def value(self, expr):
        """Evaluate expr; chains Restricted(Grad(...Grad(terminal))) are leaves given by the stand-ins."""
        memo = {}
        stack = [expr]
        while stack:
            o = stack[-1]
            if o in memo:
                stack.pop()
                continue
            chain = self._chain(o)
            if chain is not None:
                memo[o] = self.stand.leaf(*chain)
                stack.pop()
                continue
            pending = [op for op in o.ufl_operands
                       if not isinstance(op, (C.MultiIndex, C.Label)) and op not in memo]
            if pending:
                stack.extend(pending)
                continue
            memo[o] = self._node(o, memo)
            stack.pop()
        return memo[expr]

    @staticmethod
    def _chain(o):
        side = None
        if isinstance(o, C.Restricted):
            side, o = o.side(), o.ufl_operands[0]
        k = 0
        while isinstance(o, C.Grad):
            o, k = o.ufl_operands[0], k + 1
        if isinstance(o, C.Terminal) and not isinstance(o, C.ConstantValue):
            return o, side, k
        if isinstance(o, C.ConstantValue):
            if k:
                raise Unsupported("gradient of a literal")
            return None                      # a restricted literal is the literal (see _node)
        if side is not None or k:
            raise Unsupported(f"restriction or gradient of a non-terminal {type(o).__name__}")
        return None

    def _node(self, o, memo):
        name = type(o).__name__
        ops = o.ufl_operands
        fi = o.ufl_free_indices
        lift = lambda a: self._lift(memo[a], a, fi)  # noqa: E731
        if isinstance(o, C.SpatialCoordinate):
            return self.X
        if isinstance(o, C.Zero):
            return self._full(o, 0.0)
        if isinstance(o, C.ScalarValue):
            v = o.value()
            if isinstance(v, complex):
                raise Unsupported("complex literal")
            return self._full(o, float(v))
        if isinstance(o, C.Identity):
            n = o.ufl_shape[0]
            return self._full(o, np.eye(n))
        if isinstance(o, C.PermutationSymbol):
            n = o.ufl_shape[0]
            eps = np.zeros((n,) * n)
            for perm in itertools.permutations(range(n)):
                eps[perm] = np.linalg.det(np.eye(n)[list(perm)])
            return self._full(o, eps)
        if name == "Sum":
            return self._target(o, lift(ops[0]) + lift(ops[1]))
        if name == "Product":
            return self._target(o, lift(ops[0]) * lift(ops[1]))
        if name == "Division":
            return self._target(o, lift(ops[0]) / lift(ops[1]))
        if name == "Power":
            return self._target(o, np.power(lift(ops[0]), lift(ops[1])))
        if name in UNARY:
            return UNARY[name](memo[ops[0]])
        if name == "Atan2":
            return self._target(o, np.arctan2(lift(ops[0]), lift(ops[1])))
        if name in ("MinValue", "MaxValue"):
            f = np.minimum if name == "MinValue" else np.maximum
            return self._target(o, f(lift(ops[0]), lift(ops[1])))
        if name in COMPARE:
            a, b = ops
            tfi = tuple(sorted(set(a.ufl_free_indices) | set(b.ufl_free_indices)))
            return COMPARE[name](self._lift(memo[a], a, tfi), self._lift(memo[b], b, tfi))
        if name in ("AndCondition", "OrCondition"):
            a, b = ops
            f = np.logical_and if name == "AndCondition" else np.logical_or
            return f(memo[a], memo[b])
        if name == "NotCondition":
            return np.logical_not(memo[ops[0]])
        if name == "Conditional":
            cond, t, f = ops
            c = memo[cond]
            cfi = tuple(sorted(set(getattr(cond, "ufl_free_indices", ()))))
            if c.ndim == 1:
                c = c.reshape((self.P,) + (1,) * (len(o.ufl_shape) + len(fi)))
            elif cfi:
                raise Unsupported("condition with free indices")
            return self._target(o, np.where(c, lift(t), lift(f)))
        if isinstance(o, C.Restricted):     # only around literals: other chains are leaves
            return memo[ops[0]]
        if name == "Variable":
            return memo[ops[0]]
        if name in ("Conj", "Real"):
            return memo[ops[0]]
        if name == "Imag":
            return np.zeros_like(memo[ops[0]])
        if name == "ListTensor":
            vals = [np.broadcast_to(lift(a), (self.P,) + tuple(a.ufl_shape) + tuple(o.ufl_index_dimensions))
                    for a in ops]
            return np.stack(vals, axis=1)
        if name == "Indexed":
            A, mi = ops
            val = memo[A]
            sel, letters, pool = [slice(None)], {}, iter(LETTERS)
            sub = ["z"]
            for idx in mi:
                if isinstance(idx, C.FixedIndex):
                    sel.append(int(idx))
                else:
                    sel.append(slice(None))
                    sub.append(letters.setdefault(idx.count(), next(pool)))
            val = val[tuple(sel)]
            sub += [letters.setdefault(i, next(pool)) for i in A.ufl_free_indices]
            out = "z" + "".join(letters[i] for i in fi)
            return np.einsum("".join(sub) + "->" + out, val)
        if name == "ComponentTensor":
            A, mi = ops
            val = memo[A]
            afi = list(A.ufl_free_indices)
            comp = [i.count() for i in mi]
            perm = [0] + [1 + afi.index(i) for i in comp] + [1 + afi.index(i) for i in fi]
            return np.transpose(val, perm)
        if name == "IndexSum":
            A, mi = ops
            axis = 1 + len(A.ufl_shape) + list(A.ufl_free_indices).index(mi[0].count())
            return memo[A].sum(axis=axis)
        raise Unsupported(f"cannot evaluate {name}")


MEASURES = {"cell": "dx", "exterior_facet": "ds", "interior_facet": "dS"}


def points(gdim: int) -> np.ndarray:
    return _rng("points", gdim).uniform(0.1, 0.9, size=(N_POINTS, gdim))


def numeric_values(form, names) -> dict:
    """{integral group: [values]} of the integrands at the sample points, or raises Unsupported."""
    fd = compute_form_data(form, do_append_everywhere_integrals=False, do_estimate_degrees=False)
    groups = {}
    for idata in fd.integral_data:
        for itg in idata.integrals:
            gdim = itg.ufl_domain().geometric_dimension
            rule = itg.metadata().get("quadrature_rule", "default")
            for sid in itg.subdomain_id():
                key = MEASURES.get(idata.integral_type, idata.integral_type)
                key += "" if sid == "otherwise" else f"({sid})"
                key += "" if rule == "default" else f" with {rule} quadrature"
                groups.setdefault(key, []).append((itg.integrand(), gdim))
    out, missing = {}, []
    for key, parts in sorted(groups.items()):
        vals = []
        for s in range(N_SAMPLES):
            total = np.zeros(N_POINTS)
            for integrand, gdim in parts:
                stand = StandIns(names, s, points(gdim))
                v = Evaluator(stand).value(integrand)
                missing += stand.missing
                total = total + np.broadcast_to(v, (N_POINTS,))
            vals += [float(t) + 0.0 for t in total]
        out[key] = vals
    if missing:
        raise Unsupported(f"the form uses a coefficient or constant that is not one of the task's named "
                          f"symbols ({', '.join(sorted(set(missing)))} without a task name)", kind="unnamed")
    return out


# --- analysing one form ------------------------------------------------------------------------

def analyse_form(name, obj, names):
    rec = {"present": obj is not None}
    if obj is None:
        return rec
    if not isinstance(obj, ufl.Form):
        hint = " (an expression: multiply it by a measure such as dx)" if isinstance(obj, ufl.core.expr.Expr) else ""
        rec["error"] = f"'{name}' is a {type(obj).__name__}, not a UFL Form{hint}"
        return rec
    args = sorted(obj.arguments(), key=lambda a: (a.number(), a.part() or 0))
    rec["arity"] = len({a.number() for a in args})
    rec["argument_numbers"] = sorted({a.number() for a in args})
    rec["arguments"] = {str(a.number()): space_desc(a) for a in args}
    rec["symbols"] = {}
    for c in list(obj.coefficients()) + list(obj.constants()):
        nm = names.get(id(c))
        if nm is None:
            continue
        if isinstance(c, C.Constant):
            rec["symbols"][nm] = f"a Constant of shape {tuple(c.ufl_shape)}" if c.ufl_shape else "a scalar Constant"
        else:
            rec["symbols"][nm] = f"a Coefficient in {space_desc(c)}"
    domains = obj.ufl_domains()
    rec["meshes"] = [f"{d.ufl_cell().cellname} mesh with coordinate element "
                     f"{element_desc(d.ufl_coordinate_element())}" for d in domains]
    rec["integral_types"] = sorted({f"{i.integral_type()}" for i in obj.integrals()})
    try:
        fd = compute_form_data(obj, **SIGNATURE_OPTIONS)
        rec["signature"] = fd.preprocessed_form.signature()
        rec["signature_names"] = terminal_names(fd.preprocessed_form, names)
    except BaseException as e:  # noqa: BLE001  (ArityMismatch derives from BaseException)
        # Report the error as UFL states it on the user's own objects (before geometry lowering
        # renames FacetNormal to ReferenceNormal, Grad to Jacobian products, ...).
        try:
            compute_form_data(obj, do_estimate_degrees=False)
            rec["error"] = f"UFL rejects form '{name}': {first_line(e)}"
        except BaseException as plain:  # noqa: BLE001
            rec["error"] = f"UFL rejects form '{name}': {first_line(plain)}"
    return rec


def numeric_record(form, names) -> dict:
    try:
        return {"numeric": numeric_values(form, names)}
    except Unsupported as e:
        return {"numeric_error": {"kind": e.kind, "message": str(e)}}
    except Exception as e:  # noqa: BLE001
        if os.environ.get("UFL_RUNNER_DEBUG"):
            traceback.print_exc()
        return {"numeric_error": {"kind": "crash", "message": first_line(e)}}


def main():
    global SPEC, SPEC_MODULES
    spec_path, out_path = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(spec_path) as f:
        SPEC = json.load(f)
    SPEC_MODULES = set(SPEC.get("modules", []))
    sys.path.insert(0, os.getcwd())
    np.seterr(all="ignore")   # non-finite integrand values are judged, not warned about
    ns, err = run_program(SPEC["program"])
    report = {"ufl": ufl.__version__, "ran": err is None, "error": err, "forms": {}}
    if err is None:
        names = symbol_names(ns)
        for fname in SPEC["forms"]:
            rec = analyse_form(fname, ns.get(fname), names)
            # Evaluated whatever the signature: whether the gold's differs is known only on the host.
            if SPEC.get("numeric") and "signature" in rec:
                rec.update(numeric_record(ns.get(fname), names))
            report["forms"][fname] = rec
    with open(out_path, "w") as f:
        json.dump(report, f)


SPEC, SPEC_MODULES = {}, set()
if __name__ == "__main__":
    main()
