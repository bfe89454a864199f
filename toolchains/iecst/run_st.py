"""Runs inside the sandbox. Two modes, each writes a JSON report:

  python run_st.py check PROGRAM.st OUT.json [IR.json]
      blark parse, vendor-extension scan, declaration and type checks; on success also writes the
      program's IR (default ir.json) for `run`
  python run_st.py run OUT.json [GOLD_IR.json]
      interface and property checks of ir.json against oracle.json; with GOLD_IR the expected
      outputs are those of the reference program (imported upstream tasks)

Diagnostics are deterministic (line numbers, no paths or times).
"""
import json
import re
import sys

import st_eval

VENDOR = [
    (re.compile(r"\{"), "pragma '{...}' is a CODESYS/TwinCAT extension"),
    (re.compile(r"(?<![\w#])#\s*[A-Za-z_]"), "'#' variable prefix is Siemens SCL, not IEC 61131-3 ST"),
    (re.compile(r"\bMETHOD\b", re.I), "METHOD (object-oriented extension) is not allowed"),
    (re.compile(r"\bPROPERTY\b", re.I), "PROPERTY is a CODESYS/TwinCAT extension"),
    (re.compile(r"\b(EXTENDS|IMPLEMENTS|INTERFACE)\b", re.I), "object-oriented extension is not allowed"),
    (re.compile(r"\b(POINTER|REFERENCE)\s+TO\b", re.I), "POINTER TO / REFERENCE TO is a vendor extension"),
    (re.compile(r"\b__\w+", re.I), "'__' operators are CODESYS/TwinCAT extensions"),
    (re.compile(r"\b(VAR_INST|VAR_STAT)\b", re.I), "VAR_INST/VAR_STAT are TwinCAT extensions"),
    (re.compile(r"\b(BEGIN|END_ORGANIZATION_BLOCK|ORGANIZATION_BLOCK|DATA_BLOCK)\b", re.I),
     "Siemens SCL block syntax is not IEC 61131-3 ST"),
]


def strip_comments(src: str) -> str:
    """Blank out comments and string literals, keeping newlines (so line numbers stay right)."""
    out, i, n = [], 0, len(src)
    while i < n:
        two = src[i:i + 2]
        if two in ("(*", "/*"):
            end = src.find("*)" if two == "(*" else "*/", i + 2)
            end = n if end < 0 else end + 2
        elif two == "//":
            end = src.find("\n", i)
            end = n if end < 0 else end
        elif src[i] in "'\"":
            end = src.find(src[i], i + 1)
            end = n if end < 0 else end + 1
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", src[i:end]))
        i = end
    return "".join(out)


def vendor_errors(src: str) -> list[str]:
    code = strip_comments(src)
    found = []
    for pattern, msg in VENDOR:
        m = pattern.search(code)
        if m:
            found.append((code.count("\n", 0, m.start()) + 1, msg))
    return [f"line {line}: {msg}" for line, msg in sorted(found)]


# --- blark dataclasses -> IR --------------------------------------------------------------------------

def line_of(node, default=0):
    meta = getattr(node, "meta", None)
    if meta is not None and getattr(meta, "line", None):
        return meta.line
    if hasattr(node, "line") and node.line:
        return node.line
    return default


MAX_INIT_ITEMS = 100_000   # entries of one array initialiser's IR (a repeat count is one entry)


class Converter:
    def __init__(self, tf):
        self.tf = tf

    def pou(self, item):
        tf = self.tf
        if isinstance(item, tf.FunctionBlock):
            kind = "FUNCTION_BLOCK"
        elif isinstance(item, tf.Function):
            kind = "FUNCTION"
        elif isinstance(item, tf.Program):
            kind = "PROGRAM"
        else:
            return None, f"line {line_of(item, 1)}: {type(item).__name__} declarations are not supported"
        pou = {"kind": kind, "name": str(item.name).upper(), "line": line_of(item, 1), "returns": None,
               "vars": [], "body": []}
        if kind == "FUNCTION" and item.return_type is not None:
            pou["returns"] = self.type_of(item.return_type)
        for block in item.declarations:
            section = {"InputDeclarations": "INPUT", "OutputDeclarations": "OUTPUT",
                       "InputOutputDeclarations": "IN_OUT", "VariableDeclarations": "VAR",
                       "FunctionVariableDeclarations": "VAR", "TemporaryVariableDeclarations": "TEMP"}.get(
                type(block).__name__)
            if section is None:
                return None, f"line {line_of(block, pou['line'])}: {type(block).__name__} are not supported"
            for decl in block.items:
                pou["vars"] += self.decl(decl, section)
        if item.body is not None:
            pou["body"] = self.stmts(item.body)
        return pou, None

    def decl(self, d, section):
        tf, line = self.tf, line_of(d)
        if isinstance(d, tf.FunctionBlockNameDeclaration):
            return [{"name": str(v).upper(), "section": section, "type": str(d.spec).upper(), "init": None,
                     "line": line} for v in d.variables]
        names = [str(v.variable.name).upper() for v in d.variables]
        init = getattr(d, "init", None)
        if isinstance(init, tf.ArrayTypeInitialization):
            t = self.array_type(init.spec)
            value = None if init.value is None else self.array_init(init.value, line)
        elif isinstance(init, tf.TypeInitialization):
            t = self.type_of(init.spec)
            value = self.expr(init.value) if init.value is not None else None
        elif init is not None and hasattr(init, "spec") and hasattr(init.spec, "type_name"):
            t, value = "STRING", None
        else:
            t = ["UNSUPPORTED", type(init).__name__]
            value = None
        return [{"name": n, "section": section, "type": t, "init": value, "line": line} for n in names]

    def type_of(self, spec):
        tf = self.tf
        if isinstance(spec, tf.SimpleSpecification):
            return str(spec.type).upper()
        if isinstance(spec, tf.ArraySpecification):
            return self.array_type(spec)
        return str(getattr(spec, "type", spec)).upper()

    def array_type(self, spec):
        dims = []
        for sr in spec.subranges:
            lo, hi = self.const(sr.start), self.const(sr.stop)
            dims.append([lo, hi])
        elem = spec.type
        elem = self.type_of(elem) if not isinstance(elem, str) else elem.upper()
        return ["ARRAY", dims, elem]

    def array_init(self, value, line):
        """`[31, 28, 2(0)]` -> ["array_init", [[repeat count, element expression], ...], line]."""
        if not isinstance(value, self.tf.ArrayInitialization):
            return ["unsupported", f"array initial value {type(value).__name__}", line]
        items = []
        for el in value.elements:
            count = 1 if el.count is None else self.const(el.count)
            if isinstance(el.element, self.tf.ArrayInitialization):   # blark nests the tail of the list
                inner = self.array_init(el.element, line)
                if inner[0] != "array_init":
                    return inner
                if count * len(inner[1]) > MAX_INIT_ITEMS:   # `1000000000([1, 2])`: not expanded here
                    return ["unsupported", f"array initial value of more than {MAX_INIT_ITEMS} items", line]
                items += inner[1] * count
            elif isinstance(el.element, self.tf.Expression):
                items.append([count, self.expr(el.element)])
            else:
                return ["unsupported", f"array initial element {type(el.element).__name__}", line]
        return ["array_init", items, line]

    def const(self, e):
        ir = self.expr(e)
        if ir[0] == "lit" and isinstance(ir[2], int):
            return ir[2]
        if ir[0] == "un" and ir[1] == "-" and ir[2][0] == "lit":
            return -ir[2][2]
        raise ValueError("array bounds must be integer literals")

    def stmts(self, sl):
        if sl is None:
            return []
        out = []
        for s in sl.statements:
            ir = self.stmt(s)
            if ir is not None:
                out.append(ir)
        return out

    def stmt(self, s):
        tf, line = self.tf, line_of(s)
        name = type(s).__name__
        if isinstance(s, tf.AssignmentStatement):
            if len(s.variables) != 1:
                return ["unsupported", "chained assignment", line]
            return ["assign", self.expr(s.variables[0]), self.expr(s.expression), line]
        if isinstance(s, tf.IfStatement):
            branches = [[self.expr(s.if_expression), self.stmts(s.statements)]]
            for ei in s.else_ifs:
                branches.append([self.expr(ei.if_expression), self.stmts(ei.statements)])
            other = self.stmts(s.else_clause.statements) if s.else_clause else []
            return ["if", branches, other, line]
        if isinstance(s, tf.CaseStatement):
            cases = []
            for c in s.cases:
                matches = []
                for m in c.matches:
                    if isinstance(m, tf.Subrange):
                        matches.append(["range", self.expr(m.start), self.expr(m.stop)])
                    else:
                        matches.append(["val", self.expr(m)])
                cases.append([matches, self.stmts(c.statements)])
            other = self.stmts(s.else_clause.statements) if s.else_clause else []
            return ["case", self.expr(s.expression), cases, other, line]
        if isinstance(s, tf.ForStatement):
            ctl = self.expr(s.control)
            if ctl[0] != "var":
                return ["unsupported", "FOR over a non-simple variable", line]
            return ["for", ctl[1], self.expr(s.from_), self.expr(s.to),
                    self.expr(s.step) if s.step is not None else None, self.stmts(s.statements), line]
        if isinstance(s, tf.WhileStatement):
            return ["while", self.expr(s.expression), self.stmts(s.statements), line]
        if isinstance(s, tf.RepeatStatement):
            return ["repeat", self.stmts(s.statements), self.expr(s.expression), line]
        if isinstance(s, tf.FunctionCallStatement):
            ins, outs = {}, {}
            for p in s.parameters:
                if isinstance(p, tf.OutputParameterAssignment):
                    if p.inverted:
                        return ["unsupported", "inverted output assignment", line]
                    outs[str(p.name.name).upper()] = self.expr(p.value)
                elif p.name is None:
                    return ["unsupported", "positional arguments in a function block call", line]
                else:
                    ins[str(p.name.name).upper()] = self.expr(p.value)
            return ["fbcall", self.expr(s.name), ins, outs, line]
        if isinstance(s, (tf.SetStatement, tf.ResetStatement, tf.ReferenceAssignmentStatement)):
            return ["vendor", "S=/R=/REF= assignments are TwinCAT extensions", line]
        if isinstance(s, tf.ExitStatement):
            return ["exit", line]
        if isinstance(s, tf.ContinueStatement):
            return ["continue", line]
        if isinstance(s, tf.ReturnStatement):
            return ["return", line]
        if isinstance(s, tf.NoOpStatement):
            return ["noop", self.expr(s.variable), line]
        return ["unsupported", f"{name} statement", line]

    def expr(self, e):
        tf, line = self.tf, line_of(e)
        if isinstance(e, tf.Boolean):
            return ["lit", "BOOL", str(e.value).upper() in ("TRUE", "1")]
        if isinstance(e, tf.Real):
            return ["lit", str(e.type_name).upper() if e.type_name else "ANY_REAL", float(str(e.value).replace("_", ""))]
        if isinstance(e, tf.Integer):
            text = str(e.value).replace("_", "")
            value = int(text.split("#")[-1], getattr(e, "base", 10))
            t = str(e.type_name).upper() if e.type_name else "ANY_INT"
            if t == "BOOL":
                return ["lit", "BOOL", bool(value)]
            return ["lit", t, float(value) if t in st_eval.REAL_TYPES else value]
        if isinstance(e, tf.Duration):
            return ["lit", "TIME", st_eval.parse_time(str(e))]
        if isinstance(e, tf.String):
            return ["lit", "STRING", str(e.value)[1:-1]]
        if isinstance(e, tf.ParenthesizedExpression):
            return self.expr(e.expr)
        if isinstance(e, tf.SimpleVariable):
            if e.dereferenced:
                return ["unsupported", "pointer dereference", line]
            return ["var", str(e.name).upper(), line]
        if isinstance(e, tf.MultiElementVariable):
            cur = self.expr(e.name)
            for el in e.elements:
                if getattr(el, "dereferenced", False):
                    return ["unsupported", "pointer dereference", line]
                if isinstance(el, tf.SubscriptList):
                    cur = ["index", cur, [self.expr(x) for x in el.subscripts], line]
                else:
                    cur = ["field", cur, str(el.field.name).upper(), line]
            return cur
        if isinstance(e, tf.UnaryOperation):
            op = str(e.op).upper()
            return ["un", op, self.expr(e.expr), line]
        if isinstance(e, tf.BinaryOperation):
            op = re.sub(r"\s+", "_", str(e.op).upper())
            op = {"&": "AND", "==": "="}.get(op, op)
            return ["bin", op, self.expr(e.left), self.expr(e.right), line]
        if isinstance(e, tf.FunctionCall):
            args, named = [], {}
            for p in e.parameters:
                if isinstance(p, tf.OutputParameterAssignment):
                    return ["unsupported", "output parameter in a function call", line]
                if p.name is None:
                    args.append(self.expr(p.value))
                else:
                    named[str(p.name.name).upper()] = self.expr(p.value)
            callee = self.expr(e.name)
            if callee[0] != "var":
                return ["unsupported", "call of a non-simple name", line]
            return ["call", callee[1], args, named, line]
        return ["unsupported", type(e).__name__, line]


def first_parse_error(exc) -> str:
    text = str(exc).strip().splitlines()
    head = text[0] if text else type(exc).__name__
    return head[:300]


def check(program_path, out_path, ir_path="ir.json"):
    src = open(program_path, encoding="utf-8").read()
    report = {"ok": False, "errors": []}
    vendor = vendor_errors(src)
    if vendor:  # judged before importing blark (saves its start-up)
        report["errors"] = vendor
        return report
    import blark.transform as tf
    from blark.parse import parse_source_code
    try:
        result = parse_source_code(src, fn="program.st")
    except Exception as e:  # blark raises lark errors for some inputs
        report["errors"] = [f"parse error: {first_parse_error(e)}"]
        return report
    if result.exception is not None:
        report["errors"] = [f"parse error: {first_parse_error(result.exception)}"]
        return report
    try:
        source = result.transform()
    except Exception as e:
        report["errors"] = [f"parse error: {type(e).__name__}: {str(e)[:200]}"]
        return report
    conv = Converter(tf)
    pous, errors = [], []
    for item in source.items:
        try:
            pou, err = conv.pou(item)
        except ValueError as e:
            pou, err = None, f"line {line_of(item, 1)}: {e}"
        if err:
            errors.append(err)
        elif pou:
            pous.append(pou)
    if not errors and not pous:
        errors.append("line 1: no FUNCTION, FUNCTION_BLOCK or PROGRAM declared")
    names = [p["name"] for p in pous]
    for p in pous:
        if names.count(p["name"]) > 1:
            errors.append(f"line {p['line']}: POU {p['name']} declared twice")
            break
        seen = set()
        for v in p["vars"]:
            if v["name"] in seen:
                errors.append(f"line {v['line']}: variable {v['name']} declared twice in {p['name']}")
            seen.add(v["name"])
            if isinstance(v["type"], list) and v["type"][0] == "UNSUPPORTED":
                errors.append(f"line {v['line']}: unsupported declaration of {v['name']} ({v['type'][1]})")
    if not errors:
        errors = st_eval.Checker(pous).check()
    report["errors"] = errors
    report["ok"] = not errors
    report["pous"] = [{"kind": p["kind"], "name": p["name"]} for p in pous]
    if not errors:
        with open(ir_path, "w") as f:
            json.dump(pous, f)
    return report


def run(out_path, gold_ir=None):
    pous = json.load(open("ir.json"))
    oracle = json.load(open("oracle.json"))
    try:
        if gold_ir:  # expected values from the reference program (imported upstream tasks)
            try:
                oracle = st_eval.expected_from_gold(json.load(open(gold_ir)), oracle, oracle.get("step_budget", 200_000))
            except (st_eval.STError, KeyError, TypeError, ValueError) as e:
                return {"ok": None, "reason": f"the reference program does not run on the oracle inputs: {e}"}
        return st_eval.run_sequences(pous, oracle, oracle.get("step_budget", 200_000))
    except st_eval.Unsupported as e:
        # our evaluator is a stand-in for a PLC runtime: a construct it lacks is not the program's fault
        return {"ok": None, "fault": "unsupported_by_judge", "reason": f"the evaluator does not support: {e}"}


def main():
    mode = sys.argv[1]
    if mode == "check":
        report = check(*sys.argv[2:5])
        out = sys.argv[3]
    else:
        out = sys.argv[2]
        report = run(out, sys.argv[3] if len(sys.argv) > 3 else None)
    with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
