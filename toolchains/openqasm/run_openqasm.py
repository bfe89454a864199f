"""Runs inside the sandbox: judge OpenQASM 3 programs and write a JSON report.

usage: python run_openqasm.py JOB.json

  job: {"mode": "syntax" | "semantic" | "both" | "gold", "program": FILE, "includes": {name: text},
        "gold": FILE, "oracle": {...}, "variants": [{name: text}, ...],
        "syntax_out": FILE, "semantic_out": FILE, "expected": [[distribution, how], ...] (optional)}
  (variant 0 is the task's own context files; "both" runs the semantic level only when the
  syntax level passed, after writing the syntax report; "gold" writes the gold's distributions per
  variant (counts mode), which a later job passes back as "expected" instead of running the gold)

Syntax: the openqasm3 reference parser must parse the program, its OPENQASM version (if stated)
must be 3, every include other than stdgates.inc must name a file the task provides, and
qiskit.qasm3.loads (qiskit-qasm3-import) must build a circuit from it. Qiskit's importer only knows
stdgates.inc, so task include files are inlined (on one line: line numbers stay right) first.

Semantic: gold and candidate circuits are put on the task's register interface (registers matched
by name, not by declaration order) and compared: unitary (Operator.equiv), statevector from
|0...0> (Statevector.equiv), both up to global phase after final measurements are removed, or
the distribution of the observed classical registers within a total variation distance: exact when
every measurement is final (the task's exact_tolerance, if it gives one, then applies), else
sampled with Qiskit Aer (seeded). The comparison is repeated for every include variant (hidden oracles).
"""
import json
import sys
import time

import openqasm3
from openqasm3 import ast

MAX_MSG = 300
EXACT = "exact probabilities"
T0 = time.monotonic()


class Reject(Exception):
    """The program is rejected; the message says why (one line)."""


def one_line(text: str, limit: int = MAX_MSG) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --- syntax -------------------------------------------------------------------------------------

def parser_error(text: str) -> str:
    """The first ANTLR diagnostic for a program the (bail-out) reference parser rejected."""
    from antlr4 import CommonTokenStream, InputStream
    from antlr4.error.ErrorListener import ErrorListener
    from openqasm3._antlr.qasm3Lexer import qasm3Lexer
    from openqasm3._antlr.qasm3Parser import qasm3Parser

    class Collect(ErrorListener):
        def __init__(self):
            self.errors = []

        def syntaxError(self, recognizer, symbol, line, column, msg, exc):
            self.errors.append(f"line {line}:{column} {msg}")

    listener = Collect()
    lexer = qasm3Lexer(InputStream(text))
    lexer.removeErrorListeners()
    lexer.addErrorListener(listener)
    parser = qasm3Parser(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    try:
        parser.program()
    except Exception:  # the permissive parse only exists to find the message
        pass
    return listener.errors[0] if listener.errors else "rejected by the parser"


def parse(text: str, what: str) -> ast.Program:
    try:
        return openqasm3.parse(text)
    except Exception as e:
        msg = str(e) or parser_error(text)
        raise Reject(f"openqasm3 parser{what}: {msg}") from None


def _offsets(text: str) -> list[int]:
    starts, pos = [0], 0
    for line in text.split("\n"):
        pos += len(line) + 1
        starts.append(pos)
    return starts


def inline_includes(text: str, includes: dict, top_has_stdgates: bool | None = None, stack=()) -> str:
    """The program with every task include file pasted in place of its include statement.

    The pasted text is the include file re-printed by openqasm3 (comments dropped) on one line, so
    line numbers in later error messages still refer to the candidate's own lines.
    """
    prog = parse(text, f" (in {stack[-1]})" if stack else "")
    if top_has_stdgates is None:
        top_has_stdgates = any(isinstance(s, ast.Include) and s.filename == "stdgates.inc" for s in prog.statements)
    edits = []
    for st in prog.statements:
        if not isinstance(st, ast.Include):
            continue
        name = st.filename
        if name == "stdgates.inc":
            if stack and top_has_stdgates:  # already included by the program itself
                edits.append((st.span, ""))
            continue
        if name not in includes:
            offered = ", ".join(["stdgates.inc", *sorted(includes)])
            raise Reject(f"include \"{name}\": no such file (files that can be included: {offered})")
        if name in stack or len(stack) > 4:
            raise Reject(f"include \"{name}\": recursive include")
        inner = inline_includes(includes[name], includes, top_has_stdgates, (*stack, name))
        inner_prog = parse(inner, f" (in {name})")
        inner_prog.version = None
        flat = " ".join(openqasm3.dumps(inner_prog).split("\n")).strip()
        edits.append((st.span, flat))
    if not edits:
        return text
    starts = _offsets(text)
    out = text
    for span, replacement in sorted(edits, key=lambda e: (e[0].start_line, e[0].start_column), reverse=True):
        a = starts[span.start_line - 1] + span.start_column
        b = starts[span.end_line - 1] + span.end_column + 1
        out = out[:a] + replacement + "\n" * (span.end_line - span.start_line) + out[b:]
    return out


def check_version(prog: ast.Program):
    if prog.version is not None and not str(prog.version).startswith("3"):
        raise Reject(f"the program declares OPENQASM {prog.version}; OpenQASM 3 is required "
                     "(OpenQASM 2 programs are judged as a version error)")


def load(text: str, includes: dict):
    """(circuit, declarations) of a program, or Reject with the first problem."""
    import qiskit_qasm3_import
    prog = parse(text, "")
    check_version(prog)
    flat = inline_includes(text, includes)
    try:
        # qiskit.qasm3.loads is convert(openqasm3.parse(flat)); doing its two steps here keeps the
        # parsed tree for the declarations, so a large oracle include (850 kB) is parsed once, not twice
        tree = openqasm3.parse(flat)
        circuit = qiskit_qasm3_import.convert(tree)
    except Exception as e:
        msg = str(e).strip().strip("'\"") or type(e).__name__
        if type(e).__name__ not in ("QASM3ImporterError", "QASM3ParsingError", "ConversionError"):
            msg = f"{type(e).__name__}: {msg}"
        raise Reject(f"Qiskit importer: {msg}") from None
    return circuit, declarations(tree, circuit)


def _const_int(expr):
    if expr is None:
        return 1
    if isinstance(expr, ast.IntegerLiteral):
        return expr.value
    if isinstance(expr, ast.BinaryExpression):
        a, b = _const_int(expr.lhs), _const_int(expr.rhs)
        if a is not None and b is not None:
            ops = {"+": a + b, "-": a - b, "*": a * b}
            return ops.get(expr.op.name)
    return None


def declarations(prog: ast.Program, circuit) -> dict:
    """Top-level qubit and bit declarations in order: [(name, size)] (a scalar counts as size 1).

    Qiskit's importer adds bits in declaration order, so these give each circuit bit its
    (register, index)."""
    decl = {"qubits": [], "clbits": []}
    for st in prog.statements:
        if isinstance(st, ast.QubitDeclaration):
            decl["qubits"].append((st.qubit.name, _const_int(st.size)))
        elif isinstance(st, ast.ClassicalDeclaration) and isinstance(st.type, ast.BitType):
            decl["clbits"].append((st.identifier.name, _const_int(st.type.size)))
    for kind, n in (("qubits", circuit.num_qubits), ("clbits", circuit.num_clbits)):
        if any(size is None for _, size in decl[kind]) or sum(s for _, s in decl[kind]) != n:
            raise Reject(f"cannot map the {kind} of the circuit to declared registers "
                         "(declare registers with integer literal sizes)")
    return decl


def run_syntax(job: dict) -> tuple[dict, tuple | None]:
    """The syntax report, and the (circuit, registers) it built with the task's includes, which are the
    semantic level's first variant (so that level need not parse the program again)."""
    text = open(job["program"], encoding="utf-8").read()
    try:
        circuit, decl = load(text, job.get("includes", {}))
    except Reject as e:
        return {"ok": False, "error": one_line(e)}, None
    regs = ", ".join(f"{n}[{s}]" for n, s in decl["qubits"] + decl["clbits"])
    return {"ok": True, "summary": f"{circuit.num_qubits} qubits, {circuit.num_clbits} clbits, "
                                   f"{len(circuit.data)} top-level instructions; registers {regs}"}, (circuit, decl)


# --- semantic -----------------------------------------------------------------------------------

def show_regs(regs) -> str:
    return ", ".join(f"{n}[{s}]" for n, s in regs) or "none"


def interface(decl: dict, oracle: dict, kind: str) -> list | None:
    """Target index (canonical order) for each circuit bit of this kind, or None if not checked."""
    spec = oracle.get(kind)
    if spec is None:
        return None
    want, got = list(spec.items()), decl[kind]
    if sorted(want) != sorted(got):
        word = "qubit" if kind == "qubits" else "bit"
        raise Reject(f"{word} registers differ from the task's interface: expected {show_regs(want)}, "
                     f"declared {show_regs(got)}")
    base, off = {}, 0
    for name, size in want:
        base[name] = off
        off += size
    return [base[name] + i for name, size in got for i in range(size)]


def canonical(circuit, decl: dict, oracle: dict):
    """The circuit re-registered on the task's interface (registers in the oracle's order)."""
    from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
    qmap = interface(decl, oracle, "qubits")
    cmap = interface(decl, oracle, "clbits")
    regs = [QuantumRegister(s, n) for n, s in oracle["qubits"].items()]
    if cmap is None:
        if circuit.num_clbits:
            regs.append(ClassicalRegister(circuit.num_clbits, "bits"))
        cmap = list(range(circuit.num_clbits))
    else:
        regs += [ClassicalRegister(s, n) for n, s in oracle["clbits"].items()]
    out = QuantumCircuit(*regs)
    out.compose(circuit, qubits=qmap, clbits=cmap, inplace=True)
    return out


def unitary_part(circuit, mode: str):
    """Loops unrolled, final measurements removed; leading resets dropped in statevector mode.
    Anything left that is not a gate (mid-circuit measurement, reset, if/while) is a Reject."""
    from qiskit.circuit import Gate
    from qiskit.transpiler import PassManager
    from qiskit.transpiler.passes import UnrollForLoops
    c = PassManager([UnrollForLoops()]).run(circuit)
    c = c.remove_final_measurements(inplace=False)
    touched, keep = set(), []
    for inst in c.data:
        op = inst.operation
        qs = {c.find_bit(q).index for q in inst.qubits}
        if op.name == "reset" and mode == "statevector" and not (qs & touched):
            c.metadata = {**(c.metadata or {}), "dropped_reset": True}  # only |0...0> inputs are then meaningful
            continue  # a reset of a fresh qubit does nothing to |0>
        if op.name not in ("barrier", "delay") and not isinstance(op, Gate):
            what = {"measure": "a mid-circuit measurement", "reset": "a reset", "if_else": "an if statement",
                    "while_loop": "a while loop", "for_loop": "a for loop that cannot be unrolled"}.get(op.name, op.name)
            goal = "a unitary" if mode == "unitary" else "a pure state from |0...0>"
            raise Reject(f"the circuit contains {what}; the task asks for {goal} (no measurement, reset "
                         "or classical control before the end)")
        touched |= qs
        keep.append(inst)
    c.data = keep
    return c


def label_fn(oracle: dict):
    regs = list(oracle["qubits"].items())

    def label(index: int) -> str:
        parts, off = [], 0
        for name, size in regs:
            bits = (index >> off) & ((1 << size) - 1)
            parts.append(f"{name}={bits:0{size}b}")
            off += size
        return "|" + ",".join(parts) + ">"
    return label


def fmt_amp(a: complex) -> str:
    re_, im = round(a.real, 3) + 0.0, round(a.imag, 3) + 0.0
    if abs(im) < 5e-4:
        return f"{re_:g}"
    if abs(re_) < 5e-4:
        return f"{im:g}i"
    return f"({re_:g}{im:+g}i)"


def fmt_state(vec, label, k: int = 4) -> str:
    import numpy as np
    idx = [int(i) for i in np.argsort(-np.abs(vec), kind="stable")[:k] if abs(vec[i]) > 1e-3]
    terms = [f"{fmt_amp(vec[i])}{label(i)}" for i in sorted(idx)]
    more = int((np.abs(vec) > 1e-3).sum()) - len(idx)
    return " + ".join(terms) + (f" + {more} more terms" if more > 0 else "") if terms else "0"


def phase_aligned(got, want):
    import numpy as np
    overlap = np.vdot(want, got)
    phase = overlap / abs(overlap) if abs(overlap) > 1e-9 else 1.0
    return got / phase


# compare_*: (ok, message, expected). The message speaks of the program's own circuit only; what the gold
# gives goes to `expected`, which is never shown to the model as diagnostics.

def compare_unitary(cand, gold, oracle) -> tuple[bool, str, str]:
    import numpy as np
    from qiskit.quantum_info import Operator
    tol = oracle.get("tolerance", 1e-6)
    cu, gu = Operator(cand), Operator(gold)
    if cu.equiv(gu, rtol=0, atol=tol):
        return True, "unitary equals the gold's up to global phase", ""
    label = label_fn(oracle)
    U, G = cu.data, gu.data
    aligned = phase_aligned(U.flatten(), G.flatten()).reshape(U.shape)
    dev = np.abs(aligned - G).max(axis=0)
    j = int(np.argmax(dev > tol)) if (dev > tol).any() else int(np.argmax(dev))
    # the program's own column, not the gold-phase-aligned one: the alignment carries the gold's phase
    return (False, f"unitary differs (beyond global phase); first differing input {label(j)}: "
                   f"got {fmt_state(U[:, j], label)}",
            f"input {label(j)}: expected {fmt_state(G[:, j], label)}")


def compare_statevector(cand, gold, oracle) -> tuple[bool, str, str]:
    import numpy as np
    from qiskit.quantum_info import Statevector
    tol = oracle.get("tolerance", 1e-6)
    cs, gs = Statevector(cand), Statevector(gold)
    label = label_fn(oracle)
    if cs.equiv(gs, rtol=0, atol=tol):
        # a transform (not a state preparation) is also run on the basis inputs the oracle lists
        inputs = [k for k in oracle.get("basis_inputs", []) if k < 2 ** cand.num_qubits]
        if any((c.metadata or {}).get("dropped_reset") for c in (cand, gold)):
            inputs = []
        for k in inputs:
            ck = Statevector.from_int(k, 2 ** cand.num_qubits).evolve(cand)
            gk = Statevector.from_int(k, 2 ** gold.num_qubits).evolve(gold)
            if not ck.equiv(gk, rtol=0, atol=tol):
                return (False, f"from input {label(k)} the final state differs from the gold's (beyond global phase): "
                               f"got {fmt_state(ck.data, label)}", f"input {label(k)}: expected {fmt_state(gk.data, label)}")
        more = f" and from {len(inputs)} other basis input(s)" if inputs else ""
        return True, f"final state equals the gold's up to global phase{more}", ""
    fid = abs(np.vdot(gs.data, cs.data)) ** 2
    return (False, f"final state differs from the gold's (beyond global phase): got {fmt_state(cs.data, label)}",
            f"expected {fmt_state(gs.data, label)} (fidelity {fid:.3f} with the program's state)")


def outcome_key(value: int, oracle: dict) -> str:
    """'c=011 out=1' for the observed registers (bits shown most significant first)."""
    offsets, off = {}, 0
    for name, size in oracle["clbits"].items():
        offsets[name] = (off, size)
        off += size
    parts = []
    for name in oracle.get("observe", list(oracle["clbits"])):
        o, size = offsets[name]
        parts.append(f"{name}={(value >> o) & ((1 << size) - 1):0{size}b}")
    return " ".join(parts)


def final_measurement_split(circuit):
    """(gate-only circuit, {clbit: measured qubit}) when every measurement is final and nothing else
    is non-unitary; None when the circuit needs a shot-by-shot simulation."""
    from qiskit.circuit import Gate
    from qiskit.transpiler import PassManager
    from qiskit.transpiler.passes import UnrollForLoops
    c = PassManager([UnrollForLoops()]).run(circuit)
    later, measured, keep = set(), {}, []
    for inst in reversed(c.data):
        op = inst.operation
        qs = {c.find_bit(q).index for q in inst.qubits}
        if op.name == "measure":
            (q,) = qs
            if q in later:
                return None  # something acts on the qubit after it was measured
            measured.setdefault(c.find_bit(inst.clbits[0]).index, q)  # the last write of a bit wins
            later.add(q)
            continue
        if op.name == "barrier":
            continue
        if not isinstance(op, Gate):
            return None  # reset, if, while: simulate shot by shot
        later |= qs
        keep.append(inst)
    gates = c.copy_empty_like()
    for inst in reversed(keep):
        gates.append(inst)
    return gates, measured


def distribution(circuit, oracle) -> tuple[dict, str]:
    """Outcome distribution of the observed bits: exact (statevector probabilities) when all
    measurements are final, else sampled with Qiskit Aer (seeded)."""
    import numpy as np
    split = final_measurement_split(circuit)
    dist = {}
    if split is not None:
        from qiskit.quantum_info import Statevector
        gates, measured = split
        probs = np.abs(Statevector(gates).data) ** 2
        index = np.arange(len(probs))
        outcome = np.zeros(len(probs), dtype=np.int64)
        for clbit, qubit in measured.items():
            outcome |= ((index >> qubit) & 1) << clbit
        weights = np.bincount(outcome, weights=probs)
        for value in np.nonzero(weights > 1e-12)[0]:
            key = outcome_key(int(value), oracle)
            dist[key] = dist.get(key, 0.0) + float(weights[value])
        return dist, EXACT
    from qiskit import transpile
    from qiskit_aer import AerSimulator
    shots, seed = oracle.get("shots", 4000), oracle.get("seed", 1)
    sim = AerSimulator(max_parallel_threads=1)
    compiled = transpile(circuit, sim, optimization_level=0, seed_transpiler=0)
    counts = sim.run(compiled, shots=shots, seed_simulator=seed).result().get_counts()
    for key, n in counts.items():
        value = int(key.replace(" ", ""), 2)
        outcome = outcome_key(value, oracle)
        dist[outcome] = dist.get(outcome, 0.0) + n / shots
    return dist, f"{shots} shots, seed {seed}"


def fmt_dist(dist: dict, k: int = 4) -> str:
    top = sorted(dist.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    more = len(dist) - len(top)
    return "{" + ", ".join(f"{o}: {p:.3f}" for o, p in top) + (f", +{more} more" if more > 0 else "") + "}"


def compare_counts(cand, gold, oracle, want: list | None = None) -> tuple[bool, str, str]:
    """`want`: the gold's (distribution, how) from the oracle cache; else the gold circuit is run."""
    tol = oracle.get("tolerance", 0.05)
    want, how_want = want or distribution(gold, oracle)
    if tol == 0 and max(want.values()) < 1 - 1e-9:
        raise GoldError(f"tolerance 0 needs a deterministic gold outcome, the gold gives {fmt_dist(want)}")
    got, how_got = distribution(cand, oracle)
    if how_want == how_got == EXACT:    # no shot noise on either side: the task may ask for more
        tol = oracle.get("exact_tolerance", tol)
    tvd = 0.5 * sum(abs(want.get(o, 0) - got.get(o, 0)) for o in set(want) | set(got))
    how = how_got if how_got == how_want else f"gold: {how_want}; program: {how_got}"
    if tvd <= tol + 1e-9:
        return True, f"distribution of the measured bits matches the gold's (TVD {tvd:.3f} <= {tol:g}; {how})", ""
    return (False, f"distribution of the measured bits differs from the gold's (TVD above {tol:g}; {how}): "
                   f"got {fmt_dist(got)}",
            f"expected {fmt_dist(want)} (TVD {tvd:.3f})")


class GoldError(Exception):
    """The task's own gold cannot be judged: a task bug, reported as an error."""


def prepare(text: str, includes: dict, oracle: dict, built: tuple | None = None):
    """The circuit as compared; `built` is the (circuit, registers) of this text and includes, if made already."""
    circuit, decl = built or load(text, includes)
    circuit = canonical(circuit, decl, oracle)
    return unitary_part(circuit, oracle["mode"]) if oracle["mode"] != "counts" else circuit


def run_semantic(job: dict, built: tuple | None = None) -> dict:
    """`built`: the candidate's circuit with the first variant's includes, from the syntax level."""
    oracle = job["oracle"]
    compare = {"unitary": compare_unitary, "statevector": compare_statevector, "counts": compare_counts}[oracle["mode"]]
    cand_text = open(job["program"], encoding="utf-8").read()
    gold_text = open(job["gold"], encoding="utf-8").read()
    variants = job["variants"]
    cached = job.get("expected")       # counts mode: the gold's distributions, from gold_distributions
    message = ""
    for i, includes in enumerate(variants):
        where = "" if i == 0 else f"with hidden include variant {i} ({', '.join(sorted(includes))}): "
        try:
            gold = None if cached else prepare(gold_text, includes, oracle)
        except Exception as e:
            return {"status": "error", "diagnostics": one_line(f"{where}the gold cannot be judged: {e}")}
        try:
            cand = prepare(cand_text, includes, oracle, built if i == 0 else None)
            if cached:
                ok, message, expected = compare_counts(cand, None, oracle, cached[i])
            else:
                ok, message, expected = compare(cand, gold, oracle)
        except GoldError as e:
            return {"status": "error", "diagnostics": one_line(f"{where}{e}")}
        except Reject as e:
            return {"status": "fail", "diagnostics": one_line(f"{where}{e}")}
        except Exception as e:  # the candidate circuit cannot be simulated
            return {"status": "fail", "diagnostics": one_line(f"{where}simulation failed: {type(e).__name__}: {e}")}
        if not ok:
            return {"status": "fail", "diagnostics": one_line(f"{where}{message}", 600),
                    "expected": one_line(f"{where}{expected}", 600)}
    extra = f" on all {len(variants)} include variants" if len(variants) > 1 else ""
    return {"status": "pass", "diagnostics": message + extra}


def gold_distributions(job: dict) -> dict:
    """The gold alone (counts mode): its outcome distribution under each include variant, kept by the
    validator in the oracle cache so that candidates do not run the gold again."""
    gold_text = open(job["gold"], encoding="utf-8").read()
    try:
        return {"distributions": [list(distribution(prepare(gold_text, includes, job["oracle"]), job["oracle"]))
                                  for includes in job["variants"]]}
    except Exception as e:   # the candidate's run then runs the gold itself and reports why it cannot be judged
        return {"error": one_line(f"the gold cannot be judged: {e}")}


def write(path: str, report: dict):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f)


def main():
    job = json.load(open(sys.argv[1], encoding="utf-8"))
    if job["mode"] == "syntax":
        write(job["syntax_out"], run_syntax(job)[0])
    elif job["mode"] == "gold":
        write(job["semantic_out"], gold_distributions(job))
    elif job["mode"] == "semantic":
        write(job["semantic_out"], run_semantic(job))
    else:  # "both": the syntax report is written first, so it survives a timeout in the simulation
        syntax, built = run_syntax(job)
        syntax["elapsed"] = time.monotonic() - T0
        write(job["syntax_out"], syntax)
        if syntax["ok"]:
            start = time.monotonic()
            semantic = run_semantic(job, built)
            semantic["seconds"] = time.monotonic() - start
            write(job["semantic_out"], semantic)


main()
