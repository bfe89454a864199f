"""Import QCircuitBench (github EstelYang/QCircuitBench) as its authors publish it: a checkout, or any
folder below it.

Every folder holding a `*_description.txt` and gold circuits `<algo>_n{N}.qasm` is an algorithm; each
(algorithm, N) becomes one task. Records that cannot be judged here are skipped with a reason code
(too many qubits to simulate, no oracle under test_oracle/n{N}/trial*/, an oracle too large to parse
within the limits, no description...); a malformed record (unparseable gold, several description
files, non-literal register sizes) is skipped as `malformed_record`. Each task carries up to three
semantic mutants of its gold (single slips, `qcb_semantic_mutants`).
"""
import re
from pathlib import Path

from dslbench.upstream import NotThisBenchmark, Skip, convert_each, one_mutant_per_kind

from .validator import MAX_QUBITS, RESERVED


def load(source: Path):
    """The imported tasks and the skipped records of a checkout (dslbench.upstream.Imported)."""
    source = Path(source)
    if not source.is_dir():
        raise NotThisBenchmark(f"{source}: not a folder (give the QCircuitBench checkout or a folder below it)")
    records = []
    folders = sorted({p.parent for p in source.rglob("*.qasm") if QCB_GOLD.match(p.name)})
    for folder in folders:
        for gold_path in sorted(folder.glob("*.qasm"), key=lambda p: (len(p.name), p.name)):
            m = QCB_GOLD.match(gold_path.name)
            if m:
                records.append((gold_path.relative_to(source).as_posix(), (folder, gold_path, int(m.group(2)))))
    if not records:
        raise NotThisBenchmark(f"{source}: no QCircuitBench records (<algo>_n<N>.qasm next to a "
                               "*_description.txt) here")

    def convert(record, item):
        try:
            return _qcb_task(source, *item)
        except _Skip as e:
            return Skip(record, e.reason, str(e))
    return convert_each(records, convert, progress=True, total=len(records))


# --- QCircuitBench loader -----------------------------------------------------------------------
QCB_GOLD = re.compile(r"^(.+)_n(\d+)\.qasm$")
QCB_LICENCE = "MIT"
QCB_MAX_VARIANTS = 3
# Grover n = 13's 846 kB oracle needs 1.9 GB of address space to parse (openqasm3's ANTLR tree, then
# Qiskit's conversion), against the card's 2 GB; n = 12's 427 kB parses, but its gold then runs out of
# memory in the simulation (full selfcheck, 2026-12-06); n = 11's 215 kB passes
QCB_MAX_INCLUDE_BYTES = 300_000
QCB_TRANSFORMS = {"quantum_fourier_transformation"}   # circuits judged as transforms, not state preparations


def _basis_inputs(qubits: int) -> list[int]:
    """A few basis inputs beyond |0...0>: |0..01>, all ones, the two alternating patterns."""
    alt = int("01" * qubits, 2) & ((1 << qubits) - 1)
    return sorted({1, (1 << qubits) - 1, alt, alt ^ ((1 << qubits) - 1)} - {0})


class _Skip(Exception):
    """A well-formed upstream record that this validator cannot judge: a reason code and why."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def _trial_number(path: Path) -> int:
    return int(re.sub(r"\D", "", path.parent.name) or 0)


def _gate_variants(oracle_text: str, bodies) -> list[dict]:
    """oracle.inc variants: the upstream oracle gate's name and wires with other bodies. `bodies(wires)`
    gives each body as its lines; one equal to the upstream's body (whitespace aside) is left out."""
    m = re.search(r"gate\s+(\w+)\s+([^{]+)\{", oracle_text)
    if not m:
        return []
    name, wires = m.group(1), [w.strip() for w in m.group(2).split(",") if w.strip()]
    out = []
    for lines in bodies(wires):
        text = f"gate {name} {', '.join(wires)} {{\n" + "".join(f"  {line}\n" for line in lines) + "}\n"
        if re.sub(r"\s", "", text) != re.sub(r"\s", "", oracle_text):
            out.append({"oracle.inc": text})
    return out


def _dj_variants(oracle_text: str) -> list[dict]:
    """Other Deutsch-Jozsa oracles with the upstream oracle's gate signature: the two constant ones and
    balanced parity oracles (the published layout has one oracle per n, so one instance would let a
    circuit that ignores the oracle pass whenever that oracle is constant)."""
    def bodies(wires):
        if len(wires) < 2:
            return []
        inputs, target = wires[:-1], wires[-1]
        return [[""], [f"x {target};"], [" ".join(f"cx {w}, {target};" for w in inputs)], [f"cx {inputs[0]}, {target};"]]
    return _gate_variants(oracle_text, bodies)


def _simon_variants(oracle_text: str) -> list[dict]:
    """Other Simon oracles with the upstream oracle's gate signature (inputs x first, outputs y after):
    for a secret s, y ^= x, then y ^= s wherever x_j = 1 for the lowest set bit j of s, so that f(x) =
    f(x ^ s). Secrets: all ones, and the highest bit alone. The published layout has one oracle per n,
    whose secret leaves some slips unseen (an h moved onto a qubit the secret does not involve)."""
    def bodies(wires):
        n = len(wires) // 2
        if n < 2 or len(wires) != 2 * n:
            return []
        xs, ys = wires[:n], wires[n:]
        out = []
        for secret in ([1] * n, [0] * (n - 1) + [1]):
            j = secret.index(1)
            out.append([f"cx {xs[i]}, {ys[i]};" for i in range(n)] + [f"cx {xs[j]}, {ys[i]};" for i in range(n) if secret[i]])
        return out
    return _gate_variants(oracle_text, bodies)


def _qcb_registers(program) -> tuple[dict, dict]:
    from openqasm3 import ast
    qubits, clbits = {}, {}
    for st in program.statements:
        if isinstance(st, ast.QubitDeclaration):
            regs, name, size = qubits, st.qubit.name, st.size
        elif isinstance(st, ast.ClassicalDeclaration) and isinstance(st.type, ast.BitType):
            regs, name, size = clbits, st.identifier.name, st.type.size
        else:
            continue
        if size is not None and not isinstance(size, ast.IntegerLiteral):
            raise ValueError(f"register '{name}' has a size that is not an integer literal")
        regs[name] = 1 if size is None else size.value
    if not qubits:
        raise ValueError("the gold circuit declares no qubits")
    return qubits, clbits


def _qcb_shape(program) -> tuple[bool, bool, bool]:
    """(measures, mid-circuit operations after a measurement, classical control) of a gold circuit."""
    from openqasm3 import ast
    measured = after = control = False
    for st in program.statements:
        if isinstance(st, (ast.BranchingStatement, ast.WhileLoop, ast.ForInLoop)):
            control = True
        if isinstance(st, ast.QuantumMeasurementStatement) or (
                isinstance(st, ast.ClassicalDeclaration) and isinstance(st.init_expression, ast.QuantumMeasurement)):
            measured = True
        elif measured and isinstance(st, (ast.QuantumGate, ast.QuantumReset, ast.QuantumPhase)):
            after = True
        if isinstance(st, ast.QuantumReset):
            control = True
    return measured, after, control


def _antlr_message(text: str) -> str:
    """The first ANTLR diagnostic for a text the reference parser rejects."""
    from antlr4 import CommonTokenStream, InputStream
    from antlr4.error.ErrorListener import ErrorListener
    from openqasm3._antlr.qasm3Lexer import qasm3Lexer
    from openqasm3._antlr.qasm3Parser import qasm3Parser
    errors = []

    class Collect(ErrorListener):
        def syntaxError(self, recognizer, symbol, line, column, msg, exc):
            errors.append(f"line {line}:{column} {msg}")

    lexer = qasm3Lexer(InputStream(text))
    lexer.removeErrorListeners()
    lexer.addErrorListener(Collect())
    parser = qasm3Parser(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser.addErrorListener(Collect())
    parser.program()
    return errors[0] if errors else "rejected by the parser"


# --- semantic mutants of imported gold -------------------------------------------------------------
_QCB_CALL = re.compile(r"^(\s*)([A-Za-z_]\w*)(?:\(([^;]*)\))?\s+([^;=@{}]+);\s*$")
_QCB_NOT_GATES = {"measure", "reset", "barrier", "include", "qubit", "bit", "gate", "def", "let", "const", "if",
                  "for", "while", "return", "box", "delay", "input", "output", "creg", "qreg", "OPENQASM"}
_QCB_DIAGONAL = {"id", "z", "s", "sdg", "t", "tdg", "rz", "p", "phase", "u1", "cz", "cp", "cphase", "crz", "cu1",
                 "rzz", "ccz"}
_QCB_DIRECTED = {"cx", "CX", "cy", "ch", "crx", "cry", "crz", "csx"}
_QCB_ROTATIONS = {"rx", "ry", "rz", "p", "phase", "u1", "cp", "cphase", "crx", "cry", "crz", "cu1", "rxx", "ryy",
                  "rzz"}
_QCB_OPERAND = re.compile(r"^([A-Za-z_]\w*)(?:\[(\d+)\])?$")


def _qcb_calls(lines: list[str]) -> list[dict]:
    """The gate calls of a gold, one per line: index, depth (0 = top level, 1 = in a gate body), name,
    parameter text, operands. Modified calls (ctrl/inv/pow @) and anything else are left alone."""
    calls, depth, body = [], 0, ""
    for i, line in enumerate(lines):
        m = _QCB_CALL.match(line)
        if m and m.group(2) not in _QCB_NOT_GATES:
            operands = [o.strip() for o in m.group(4).split(",")]
            if all(_QCB_OPERAND.match(o) for o in operands):
                calls.append({"line": i, "depth": depth, "indent": m.group(1), "name": m.group(2),
                              "params": m.group(3), "operands": operands, "in": body})
        g = re.match(r"\s*gate\s+(\w+)", line)
        body = g.group(1) if g else body if depth else ""
        depth += line.count("{") - line.count("}")
        body = body if depth else ""
    return calls


def _qcb_wires(operand: str, qubits: dict) -> set:
    name, index = _QCB_OPERAND.match(operand).groups()
    if index is not None:
        return {(name, int(index))}
    return {(name, k) for k in range(qubits.get(name, 0))}


def _qcb_measured(lines: list[str], qubits: dict) -> set:
    out = set()
    for line in lines:
        m = re.search(r"measure\s+([^;\-]+)", line)
        if m and m.group(1).strip() and _QCB_OPERAND.match(m.group(1).strip()):
            out |= _qcb_wires(m.group(1).strip(), qubits)
    return out


def _qcb_matters(call: dict, calls: list[dict], lines: list[str], oracle: dict, wires: set | None = None) -> bool:
    """A cheap check that changing this top-level call can change what the oracle compares: in counts mode
    some measured qubit lies in its forward light cone (and a diagonal gate is not followed only by
    measurements); from |0...0> alone, a diagonal gate or a controlled gate does not act on untouched qubits."""
    if call["depth"]:
        return True
    qubits, mode = oracle["qubits"], oracle["mode"]
    wires = wires if wires is not None else set().union(*(_qcb_wires(o, qubits) for o in call["operands"]))
    top = [c for c in calls if not c["depth"]]
    if mode == "statevector" and not oracle.get("basis_inputs"):
        before = set().union(*(_qcb_wires(o, qubits) for c in top if c["line"] < call["line"] for o in c["operands"]))
        if call["name"] in _QCB_DIAGONAL and not wires & before:
            return False
        if call["name"] in _QCB_DIRECTED and not _qcb_wires(call["operands"][0], qubits) & before:
            return False
    if mode != "counts":
        return True
    cone, later = set(wires), [c for c in top if c["line"] > call["line"]]
    for c in later:
        touched = set().union(*(_qcb_wires(o, qubits) for o in c["operands"]))
        if touched & cone and (len(touched) > 1 or c["name"] not in _QCB_DIAGONAL):
            cone |= touched
    if call["name"] in _QCB_DIAGONAL and not any(
            set().union(*(_qcb_wires(o, qubits) for o in c["operands"])) & wires and c["name"] not in _QCB_DIAGONAL
            for c in later):
        return False   # only diagonal gates and measurements after it: the measured distribution is unchanged
    return bool(cone & _qcb_measured(lines[call["line"]:], qubits))


def _angle(expr: str) -> float | None:
    """The value of a constant angle expression (numbers, pi, + - * / and parentheses), else None."""
    import ast
    import math
    import operator
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.USub: operator.neg, ast.UAdd: operator.pos}

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.Name) and node.id == "pi":
            return math.pi
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.operand))
        raise ValueError("not a constant angle")    # powers, calls, other names

    try:
        return float(value(ast.parse(expr.replace("π", "pi").strip(), mode="eval").body))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None


def _halved(params: str) -> str | None:
    """The first angle halved (pi/2 -> pi/4, x -> (x)/2), or None when it is 0 or not a plain angle."""
    first = params.split(",")[0].strip()
    if re.fullmatch(r"-?0*(\.0*)?", first):
        return None
    m = re.fullmatch(r"(-?(?:\d+\*)?pi)/(\d+)", first)
    new = f"{m.group(1)}/{2 * int(m.group(2))}" if m else (f"{first}/2" if re.fullmatch(r"-?[\w.]+", first) else f"({first})/2")
    return ", ".join([new] + [p.strip() for p in params.split(",")[1:]])


def qcb_semantic_mutants(gold: str, oracle: dict) -> list[dict]:
    """Up to three single slips in the gold's gate calls, each kind at most once, in this order: a directed
    two-qubit gate with control and target swapped, a rotation angle halved, an h written as x, a one-qubit
    gate applied to the next qubit of its register, a gate dropped (the middle one that matters). Slips the
    cheap check `_qcb_matters` finds cannot change the compared result are not made."""
    lines = gold.splitlines()
    calls = _qcb_calls(lines)
    qubits = oracle["qubits"]
    made: list[tuple[str, int, str | None]] = []

    def text(c, name=None, params=None, operands=None):
        params = c["params"] if params is None else params
        return (f"{c['indent']}{name or c['name']}{f'({params})' if params is not None else ''} "
                f"{', '.join(operands or c['operands'])};")

    def first(test):
        return next((c for c in calls if test(c) and _qcb_matters(c, calls, lines, oracle)), None)

    c = first(lambda c: c["name"] in _QCB_DIRECTED and len(c["operands"]) == 2)
    if c:
        a, b = c["operands"]
        where = f" in gate {c['in']}" if c["in"] else ""
        made.append((f"{c['name']} control and target swapped{where}: {c['name']} {a}, {b} -> {c['name']} {b}, {a}",
                     c["line"], text(c, operands=[b, a])))
    # the largest angle: halving a tiny one (a QFT's pi/2^15) moves amplitudes below any tolerance
    rotations = [c for c in calls if c["name"] in _QCB_ROTATIONS and c["params"] and _halved(c["params"])
                 and _qcb_matters(c, calls, lines, oracle)]
    c = max(rotations, key=lambda c: abs(_angle(c["params"].split(",")[0]) or 0), default=None)
    if c:
        new = _halved(c["params"])
        where = f" in gate {c['in']}" if c["in"] else ""
        made.append((f"rotation angle halved{where}: {c['name']}({c['params']}) -> {c['name']}({new})", c["line"],
                     text(c, params=new)))
    c = first(lambda c: c["name"] == "h")
    if c:
        where = f" in gate {c['in']}" if c["in"] else ""
        made.append((f"h replaced by x on {c['operands'][0]}{where}", c["line"], text(c, name="x")))

    def moved(c):
        if c["depth"] or len(c["operands"]) != 1:
            return None
        name, index = _QCB_OPERAND.match(c["operands"][0]).groups()
        if index is None or qubits.get(name, 0) < 2:
            return None
        return f"{name}[{(int(index) + 1) % qubits[name]}]"

    c = next((c for c in calls if moved(c) and _qcb_matters(c, calls, lines, oracle)
              and _qcb_matters(c, calls, lines, oracle, _qcb_wires(moved(c), qubits))), None)
    if c:
        made.append((f"{c['name']} applied to {moved(c)} instead of {c['operands'][0]}", c["line"],
                     text(c, operands=[moved(c)])))
    droppable = [c for c in calls if not c["depth"] and c["name"] != "id" and _qcb_matters(c, calls, lines, oracle)]
    if droppable:
        c = droppable[len(droppable) // 2]
        made.append((f"gate dropped: {lines[c['line']].strip()}", c["line"], None))
    slips = ([(note, "\n".join(lines[:i] + ([new] if new is not None else []) + lines[i + 1:]) + "\n")]
             for note, i, new in made)
    return one_mutant_per_kind(gold, slips, same=lambda a, b: a.strip() == b.strip())


def _qcb_task(source: Path, folder: Path, gold_path: Path, n: int) -> dict:
    import openqasm3
    descriptions = sorted(folder.glob("*_description.txt"))
    if not descriptions:
        raise _Skip("no *_description.txt next to the circuit", "no_description")
    if len(descriptions) != 1:
        raise ValueError(f"expected one *_description.txt in {folder.relative_to(source).as_posix() or '.'}, "
                         f"found {len(descriptions)}")
    description = descriptions[0].read_text(encoding="utf-8").strip()
    if not description:
        raise ValueError(f"{descriptions[0].name} is empty")
    gold = gold_path.read_text(encoding="utf-8")
    try:
        program = openqasm3.parse(gold)
    except Exception as e:
        raise ValueError(f"the gold circuit does not parse with openqasm3: {str(e) or _antlr_message(gold)}") from None
    if program.version is not None and not str(program.version).startswith("3"):
        raise ValueError(f"the gold circuit declares OPENQASM {program.version}, not 3")
    qubits, clbits = _qcb_registers(program)
    for name in [*qubits, *clbits]:
        if name in RESERVED:
            raise _Skip(f"register name '{name}' clashes with a stdgates.inc name", "reserved_register_name")
    includes = [st.filename for st in program.statements if type(st).__name__ == "Include"]
    context, variants = {}, []
    for name in includes:
        if name == "stdgates.inc":
            continue
        if name != "oracle.inc":
            raise _Skip(f"includes '{name}', which the QCircuitBench layout does not provide", "unsupported_include")
        # the published trials are numbered freely (n3/trial1, n4/trial13...): any of them is an oracle
        trials = sorted((folder / "test_oracle" / f"n{n}").glob("trial*/oracle.inc"), key=_trial_number)
        if not trials:
            raise _Skip(f"the gold includes oracle.inc but there is no test_oracle/n{n}/trial*/oracle.inc",
                        "missing_oracle")
        size = trials[0].stat().st_size
        if size > QCB_MAX_INCLUDE_BYTES:
            raise _Skip(f"its oracle.inc is {size // 1024} kB: the pure-Python OpenQASM parsers need about 2 GB and "
                        "20 s to read 850 kB, and simulating Grover n = 12 (427 kB) runs out of its 2 GB: beyond the "
                        "validator's limits", "oracle_too_large")
        context["oracle.inc"] = trials[0].read_text(encoding="utf-8")
        variants = [{"oracle.inc": p.read_text(encoding="utf-8")} for p in trials[1:]][:QCB_MAX_VARIANTS]
        if folder.name == "deutsch_jozsa":
            variants += _dj_variants(context["oracle.inc"])
        elif folder.name == "simon":
            variants += _simon_variants(context["oracle.inc"])
    total = sum(qubits.values())
    measured, after, control = _qcb_shape(program)
    # What QCircuitBench verifies is read off the measured bits; an unmeasured circuit is judged as a
    # whole (unitary when small enough to build its matrix, else the state it prepares).
    if measured or after or control:
        mode = "counts"
    elif total <= MAX_QUBITS["unitary"]:
        mode = "unitary"
    else:
        mode = "statevector"
    if mode == "counts" and not clbits:
        raise _Skip("measures or branches without bit registers", "no_bit_registers")
    if total > MAX_QUBITS[mode]:
        raise _Skip(f"{total} qubits: more than {MAX_QUBITS[mode]} cannot be judged in {mode} mode here",
                    "too_many_qubits")
    oracle = {"mode": mode, "qubits": qubits}
    algo = folder.name
    if mode == "counts":
        # exact probabilities (every measurement final) carry no shot noise: an angle slip must not hide in 0.05
        oracle.update(clbits=clbits, shots=4000, seed=1, tolerance=0.05, exact_tolerance=1e-6)
    if mode == "statevector" and algo in QCB_TRANSFORMS:
        # from |0...0> alone a QFT is indistinguishable from a layer of H gates
        oracle["basis_inputs"] = _basis_inputs(total)
    if variants:
        oracle["variants"] = variants
    filled = (description.replace("\\{qubit number\\}", str(n)).replace("{qubit number}", str(n))
              .replace("\\{QASM / Qiskit\\}", "OpenQASM 3").replace("{QASM / Qiskit}", "OpenQASM 3"))
    regs = " and ".join([*(f"`qubit[{s}] {q};`" for q, s in qubits.items()),
                         *(f"`bit[{s}] {c};`" for c, s in clbits.items())])
    judged = {"unitary": "its unitary is compared with the reference circuit's up to global phase",
              "statevector": "the state it prepares from |0...0> (final measurements removed) is compared with "
                             "the reference circuit's up to global phase",
              "counts": "the distribution of the measured bits is compared with the reference circuit's "
                        "(exactly, within a total variation distance of 1e-6, when every measurement is at the end; "
                        "else over 4000 seeded Qiskit Aer shots, within 0.05)"}[mode]
    if "basis_inputs" in oracle:
        judged = ("it is judged as a transform: the states it gives from |0...0> and from "
                  f"{len(oracle['basis_inputs'])} other basis inputs are compared with the reference circuit's up to "
                  "global phase")
    files = " and `include \"oracle.inc\";` (the oracle file is shown below)" if context else ""
    oracle_note = (f" It is also checked with {len(variants)} other oracle(s) of the same form." if variants else "")
    instruction = (f"{filled}\n\nHere only the quantum circuit for n = {n} is judged, written as one OpenQASM 3.0 "
                   f"program with `include \"stdgates.inc\";`{files}. Declare exactly the registers {regs}; "
                   f"{judged}.{oracle_note}")
    constructs = ["quantum algorithm", "measurement" if measured else "unitary circuit"]
    if context:
        constructs.append("oracle include")
    return {
        "id": f"openqasm-qcb-{algo.replace('_', '-').lower()}-n{n}",
        "dsl": "openqasm", "domain": "Quantum Computing",
        "title": f"{algo.replace('_', ' ').title()} (n = {n}, QCircuitBench)",
        "difficulty": "easy" if total <= 4 else "medium" if total <= 8 else "hard",
        "constructs": constructs, "failure_modes": [],
        "instruction": instruction, "context": context, "gold": gold, "oracle": oracle,
        "provenance": {"source": "upstream", "benchmark": "QCircuitBench",
                       "upstream_id": gold_path.relative_to(source).as_posix(), "licence": QCB_LICENCE},
        "split": "test", "mutants": qcb_semantic_mutants(gold, oracle),
    }
