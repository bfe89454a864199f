"""Declaration checks and a scan-cycle evaluator for the IEC 61131-3 ST subset the tasks use.

Pure Python, no third-party imports: it works on the JSON IR that run_st.py builds from blark's
parse tree, and it runs inside the sandbox (copied into the work directory with the runner).

IR (all identifiers upper-cased: ST is case-insensitive)
  pou   {"kind": FUNCTION|FUNCTION_BLOCK|PROGRAM, "name", "line", "returns": type|None,
         "vars": [{"name", "section", "type", "init", "line"}], "body": [stmt]}
  init  expr | ["array_init", [[repeat count, expr], ...], line]   (an array's `[1, 2, 3(0)]`)
  type  "INT" | "TON" | <FB name> | ["ARRAY", [[lo, hi], ...], elem_type]
  expr  ["lit", type, value] | ["var", name, line] | ["index", expr, [expr], line]
        | ["field", expr, name, line] | ["bin", op, a, b, line] | ["un", op, a, line]
        | ["call", name, [expr], {name: expr}, line] | ["unsupported", what, line]
  stmt  ["assign", target, expr, line] | ["if", [[cond, body]], else_body, line]
        | ["case", expr, [[[match], body]], else_body, line]   match: ["val", e] | ["range", lo, hi]
        | ["for", name, from, to, step|None, body, line] | ["while", cond, body, line]
        | ["repeat", body, cond, line] | ["fbcall", target, {in: expr}, {out: target}, line]
        | ["noop", expr, line] | ["vendor", message, line] | ["exit", line] | ["continue", line] | ["return", line] | ["unsupported", what, line]

Time model: scan k (k = 0, 1, ...) of a sequence runs at t = k * cycle_ms; timers read that clock.
"""
from __future__ import annotations

import math
import re

INT_TYPES = {"SINT": (-2**7, 2**7 - 1), "INT": (-2**15, 2**15 - 1), "DINT": (-2**31, 2**31 - 1),
             "LINT": (-2**63, 2**63 - 1), "USINT": (0, 2**8 - 1), "UINT": (0, 2**16 - 1),
             "UDINT": (0, 2**32 - 1), "ULINT": (0, 2**64 - 1), "BYTE": (0, 2**8 - 1),
             "WORD": (0, 2**16 - 1), "DWORD": (0, 2**32 - 1), "LWORD": (0, 2**64 - 1)}
REAL_TYPES = {"REAL", "LREAL"}
TIME_TYPES = {"TIME", "LTIME"}
STRING_TYPES = {"STRING", "WSTRING"}
ELEMENTARY = set(INT_TYPES) | REAL_TYPES | TIME_TYPES | STRING_TYPES | {"BOOL"}

# Standard function blocks the evaluator implements: inputs, outputs (with types).
STD_FBS = {
    "TON": ({"IN": "BOOL", "PT": "TIME"}, {"Q": "BOOL", "ET": "TIME"}),
    "TOF": ({"IN": "BOOL", "PT": "TIME"}, {"Q": "BOOL", "ET": "TIME"}),
    "TP": ({"IN": "BOOL", "PT": "TIME"}, {"Q": "BOOL", "ET": "TIME"}),
    "R_TRIG": ({"CLK": "BOOL"}, {"Q": "BOOL"}),
    "F_TRIG": ({"CLK": "BOOL"}, {"Q": "BOOL"}),
    "CTU": ({"CU": "BOOL", "R": "BOOL", "PV": "INT"}, {"Q": "BOOL", "CV": "INT"}),
    "CTD": ({"CD": "BOOL", "LD": "BOOL", "PV": "INT"}, {"Q": "BOOL", "CV": "INT"}),
    "SR": ({"S1": "BOOL", "R": "BOOL"}, {"Q1": "BOOL"}),
    "RS": ({"S": "BOOL", "R1": "BOOL"}, {"Q1": "BOOL"}),
}
STD_FUNCS = {"ABS", "SQRT", "MIN", "MAX", "LIMIT", "SEL", "TRUNC", "EXPT", "LN", "LOG", "EXP", "SIN", "COS",
             "TAN", "MOVE"}
CONVERSION = re.compile(r"^([A-Z]+)_TO_([A-Z]+)$")


class STError(Exception):
    """A runtime failure of the program under test (out-of-bounds index, division by zero, ...)."""


class StepLimit(STError):
    pass


class Unsupported(Exception):
    """The program uses a construct this evaluator does not implement (a validator limit, not a verdict)."""


def family(t) -> str | None:
    """BOOL, INT, REAL, TIME, STRING, ANY_INT (untyped integer literal), or None when not elementary."""
    if t in ("ANY_INT", "ANY_REAL"):
        return t
    if not isinstance(t, str):
        return None
    if t == "BOOL":
        return "BOOL"
    if t in INT_TYPES:
        return "INT"
    if t in REAL_TYPES:
        return "REAL"
    if t in TIME_TYPES:
        return "TIME"
    if t in STRING_TYPES:
        return "STRING"
    return None


def assignable(target, source) -> bool:
    """IEC implicit conversions allowed by the checks: same family, or integer into REAL."""
    ft, fs = family(target), family(source)
    if ft is None or fs is None:
        return True  # arrays, FB instances, unknown: not judged here
    if fs == "ANY_INT":
        return ft in ("INT", "REAL")
    if fs == "ANY_REAL":
        return ft == "REAL"
    if ft == fs:
        return True
    return ft == "REAL" and fs == "INT"


def type_text(t) -> str:
    if isinstance(t, list):
        dims = ", ".join(f"{lo}..{hi}" for lo, hi in t[1])
        return f"ARRAY[{dims}] OF {type_text(t[2])}"
    return {"ANY_INT": "integer literal", "ANY_REAL": "REAL literal"}.get(t, str(t))


# --- declaration and type checks ------------------------------------------------------------------

class Checker:
    """Undeclared identifiers and INT/BOOL/REAL/TIME mismatches, each with its line number."""

    def __init__(self, pous: list[dict]):
        self.pous = {p["name"]: p for p in pous}
        self.errors: list[str] = []

    def err(self, line, msg):
        self.errors.append(f"line {line}: {msg}")

    def check(self) -> list[str]:
        for pou in self.pous.values():
            self.scope = {v["name"]: v["type"] for v in pou["vars"]}
            if pou["kind"] == "FUNCTION" and pou.get("returns"):
                self.scope.setdefault(pou["name"], pou["returns"])
            for v in pou["vars"]:
                self.check_type(v["type"], v["line"])
                if v.get("init") is not None and v["init"][0] == "array_init" and isinstance(v["type"], list):
                    for _, expr in v["init"][1]:
                        t = self.expr(expr)
                        if not assignable(v["type"][2], t):
                            self.err(v["line"], f"initial value of {v['name']} has an element of {type_text(t)}, "
                                                f"declared {type_text(v['type'])}")
                elif v.get("init") is not None:
                    t = self.expr(v["init"])
                    if not assignable(v["type"], t):
                        self.err(v["line"], f"initial value of {v['name']} is {type_text(t)}, "
                                            f"declared {type_text(v['type'])}")
            self.block(pou["body"])
        return self.errors

    def check_type(self, t, line):
        if isinstance(t, list):
            return self.check_type(t[2], line)
        if t not in ELEMENTARY and t not in STD_FBS and not (t in self.pous and
                                                              self.pous[t]["kind"] == "FUNCTION_BLOCK"):
            self.err(line, f"unknown type {t}")

    def members(self, t):
        """(inputs, outputs) of an FB type, or None."""
        if isinstance(t, str) and t in STD_FBS:
            return STD_FBS[t]
        if isinstance(t, str) and t in self.pous and self.pous[t]["kind"] == "FUNCTION_BLOCK":
            vs = self.pous[t]["vars"]
            return ({v["name"]: v["type"] for v in vs if v["section"] in ("INPUT", "IN_OUT")},
                    {v["name"]: v["type"] for v in vs if v["section"] in ("OUTPUT", "IN_OUT")})
        return None

    def block(self, stmts):
        for s in stmts:
            self.stmt(s)

    def cond(self, e, line, what):
        t = self.expr(e)
        if family(t) not in (None, "BOOL"):
            self.err(line, f"{what} condition is {type_text(t)}, expected BOOL")

    def stmt(self, s):
        kind, line = s[0], s[-1]
        if kind == "assign":
            tt = self.expr(s[1], target=True)
            st = self.expr(s[2])
            if not assignable(tt, st):
                self.err(line, f"cannot assign {type_text(st)} to {type_text(tt)} ({_name(s[1])})")
        elif kind == "if":
            for c, body in s[1]:
                self.cond(c, line, "IF")
                self.block(body)
            self.block(s[2])
        elif kind == "case":
            t = self.expr(s[1])
            if family(t) not in (None, "INT", "ANY_INT"):
                self.err(line, f"CASE selector is {type_text(t)}, expected an integer")
            for matches, body in s[2]:
                for m in matches:
                    for e in m[1:]:
                        self.expr(e)
                self.block(body)
            self.block(s[3])
        elif kind == "for":
            t = self.scope.get(s[1])
            if t is None:
                self.err(line, f"undeclared identifier {s[1]}")
            elif family(t) != "INT":
                self.err(line, f"FOR control variable {s[1]} is {type_text(t)}, expected an integer")
            for e in s[2:5]:
                if e is not None:
                    te = self.expr(e)
                    if family(te) not in (None, "INT", "ANY_INT"):
                        self.err(line, f"FOR bound is {type_text(te)}, expected an integer")
            self.block(s[5])
        elif kind == "while":
            self.cond(s[1], line, "WHILE")
            self.block(s[2])
        elif kind == "repeat":
            self.block(s[1])
            self.cond(s[2], line, "UNTIL")
        elif kind == "fbcall":
            self.fbcall(s)
        elif kind == "noop":
            self.expr(s[1])  # a bare name as a statement: still must be declared
        elif kind == "vendor":
            self.err(line, s[1])
        # "unsupported" statements are left to the evaluator (an `error` verdict, not a syntax fail)

    def fbcall(self, s):
        target, ins, outs, line = s[1], s[2], s[3], s[4]
        if target[0] == "var" and target[1] in self.pous and target[1] not in self.scope:
            self.call(["call", target[1], [], ins, line])  # a function called as a statement
            return
        t = self.expr(target)
        m = self.members(t)
        if m is None:
            if t is not None:
                self.err(line, f"{_name(target)} is not a function block instance")
            return
        for name, e in ins.items():
            if name not in m[0]:
                self.err(line, f"{type_text(t)} has no input {name}")
                continue
            te = self.expr(e)
            if not assignable(m[0][name], te):
                self.err(line, f"input {name} of {_name(target)} is {type_text(m[0][name])}, got {type_text(te)}")
        for name, e in outs.items():
            if name not in m[1]:
                self.err(line, f"{type_text(t)} has no output {name}")
                continue
            te = self.expr(e, target=True)
            if not assignable(te, m[1][name]):
                self.err(line, f"output {name} of {_name(target)} is {type_text(m[1][name])}, "
                               f"stored into {type_text(te)}")

    def expr(self, e, target=False):
        kind = e[0]
        if kind == "lit":
            return e[1]
        if kind == "var":
            if e[1] in self.scope:
                return self.scope[e[1]]
            self.err(e[2], f"undeclared identifier {e[1]}")
            return None
        if kind == "index":
            t = self.expr(e[1])
            for i in e[2]:
                ti = self.expr(i)
                if family(ti) not in (None, "INT", "ANY_INT"):
                    self.err(e[3], f"array index is {type_text(ti)}, expected an integer")
            if isinstance(t, list):
                if len(e[2]) != len(t[1]):
                    self.err(e[3], f"{_name(e[1])} has {len(t[1])} dimension(s), indexed with {len(e[2])}")
                return t[2]
            if t is not None:
                self.err(e[3], f"{_name(e[1])} is not an array")
            return None
        if kind == "field":
            t = self.expr(e[1])
            m = self.members(t)
            if m is None:
                if t is not None:
                    self.err(e[3], f"{_name(e[1])} has no members (type {type_text(t)})")
                return None
            if e[2] in m[1]:
                return m[1][e[2]]
            if e[2] in m[0]:
                return m[0][e[2]]
            self.err(e[3], f"{type_text(t)} has no member {e[2]}")
            return None
        if kind == "un":
            t = self.expr(e[2])
            f = family(t)
            if e[1] == "NOT" and f not in (None, "BOOL", "INT", "ANY_INT"):
                self.err(e[3], f"NOT applied to {type_text(t)}")
            if e[1] == "-" and f in ("BOOL", "STRING"):
                self.err(e[3], f"unary minus applied to {type_text(t)}")
            return t
        if kind == "bin":
            return self.binop(e)
        if kind == "call":
            return self.call(e)
        return None  # "unsupported": the evaluator reports it (an `error` verdict)

    def binop(self, e):
        op, line = e[1], e[4]
        ta, tb = self.expr(e[2]), self.expr(e[3])
        fa, fb = family(ta), family(tb)
        if fa is None or fb is None:
            return "BOOL" if op in ("=", "<>", "<", ">", "<=", ">=") else (ta if fa else tb)
        nums = {"INT", "ANY_INT", "REAL", "ANY_REAL"}
        if op in ("AND", "OR", "XOR", "AND_THEN", "OR_ELSE"):
            if fa == fb == "BOOL":
                return "BOOL"
            if fa in ("INT", "ANY_INT") and fb in ("INT", "ANY_INT"):
                return ta if fa == "INT" else tb
            self.err(line, f"{op} of {type_text(ta)} and {type_text(tb)}")
            return "BOOL"
        if op in ("=", "<>", "<", ">", "<=", ">="):
            same = (fa == fb or {fa, fb} <= nums)
            if not same:
                self.err(line, f"comparison {op} of {type_text(ta)} and {type_text(tb)}")
            return "BOOL"
        # arithmetic
        if fa == "TIME" and fb == "TIME" and op in ("+", "-"):
            return ta
        if fa == "TIME" and fb in ("INT", "ANY_INT", "REAL", "ANY_REAL") and op in ("*", "/"):
            return ta
        if fa not in nums or fb not in nums:
            self.err(line, f"arithmetic {op} on {type_text(ta)} and {type_text(tb)}")
            return None
        if op == "MOD" and ("REAL" in (fa, fb) or "ANY_REAL" in (fa, fb)):
            self.err(line, f"MOD on {type_text(ta)} and {type_text(tb)}")
        if op == "**":
            return "REAL"
        if fa == "REAL":
            return ta
        if fb == "REAL":
            return tb
        if fa == "ANY_REAL" or fb == "ANY_REAL":
            return "ANY_REAL" if {fa, fb} <= {"ANY_REAL", "ANY_INT"} else "REAL"
        return ta if fa == "INT" else tb

    def call(self, e):
        name, args, named, line = e[1], e[2], e[3], e[4]
        types = [self.expr(a) for a in args] + [self.expr(a) for a in named.values()]
        conv = CONVERSION.match(name)
        if conv:
            return conv.group(2) if conv.group(2) in ELEMENTARY else None
        if name in STD_FUNCS:
            fams = [family(t) for t in types]
            if name in ("SQRT", "LN", "LOG", "EXP", "SIN", "COS", "TAN", "EXPT"):
                return "REAL"
            if name == "TRUNC":
                return "DINT"
            if name == "SEL":
                return types[1] if len(types) > 1 else None
            if "BOOL" in fams and name != "MOVE":
                self.err(line, f"{name} applied to BOOL")
            for t, f in zip(types, fams):
                if f == "REAL":
                    return t
            for t, f in zip(types, fams):
                if f == "INT":
                    return t
            return types[0] if types else None
        pou = self.pous.get(name)
        if pou is None or pou["kind"] != "FUNCTION":
            self.err(line, f"undeclared function {name}")
            return None
        params = [v for v in pou["vars"] if v["section"] == "INPUT"]
        pnames = {v["name"]: v["type"] for v in params}
        for k, a in named.items():
            if k not in pnames:
                self.err(line, f"function {name} has no input {k}")
            elif not assignable(pnames[k], self.expr(a)):
                self.err(line, f"input {k} of {name} is {type_text(pnames[k])}, got {type_text(self.expr(a))}")
        for v, a in zip(params, args):
            if not assignable(v["type"], self.expr(a)):
                self.err(line, f"input {v['name']} of {name} is {type_text(v['type'])}")
        return pou.get("returns")


def _name(e) -> str:
    if e[0] == "var":
        return e[1]
    if e[0] == "field":
        return f"{_name(e[1])}.{e[2]}"
    if e[0] == "index":
        return f"{_name(e[1])}[...]"
    return "expression"


# --- evaluation ------------------------------------------------------------------------------------

class Exit(Exception):
    pass


class Continue(Exception):
    pass


class Return(Exception):
    pass


def default_value(t, pous):
    if isinstance(t, list):
        dims = t[1]
        return {"dims": dims, "data": {idx: default_value(t[2], pous) for idx in _indices(dims)}}
    f = family(t)
    if f == "BOOL":
        return False
    if f in ("INT", "TIME"):
        return 0
    if f == "REAL":
        return 0.0
    if f == "STRING":
        return ""
    if t in STD_FBS:
        return StdFB(t)
    if t in pous and pous[t]["kind"] == "FUNCTION_BLOCK":
        return Instance(pous[t], pous)
    raise Unsupported(f"type {type_text(t)}")


def _indices(dims):
    out = [()]
    for lo, hi in dims:
        out = [p + (i,) for p in out for i in range(lo, hi + 1)]
    return out


def coerce(t, v):
    """Store v into a variable of type t: integers wrap to the type's width, REAL becomes float."""
    f = family(t)
    if f == "INT":
        if isinstance(v, bool) or not isinstance(v, int):
            raise STError(f"cannot store {v!r} into {t}")
        lo, hi = INT_TYPES[t]
        return (v - lo) % (hi - lo + 1) + lo
    if f == "REAL":
        return float(v)
    if f == "BOOL":
        return bool(v)
    return v


class StdFB:
    """TON/TOF/TP/R_TRIG/F_TRIG/CTU/CTD/SR/RS with IEC semantics on the simulated clock."""

    def __init__(self, kind):
        self.kind = kind
        ins, outs = STD_FBS[kind]
        self.vars = {n: (0 if t in ("TIME", "INT") else False) for n, t in {**ins, **outs}.items()}
        self.types = {**ins, **outs}
        self.mem = False      # previous CLK/IN/CU/CD
        self.start = None     # timer start time

    def execute(self, ev):
        v, k, now = self.vars, self.kind, ev.now
        if k in ("R_TRIG", "F_TRIG"):
            clk = v["CLK"]
            v["Q"] = (clk and not self.mem) if k == "R_TRIG" else (not clk and self.mem)
            self.mem = clk
        elif k == "TON":
            if not v["IN"]:
                self.start, v["Q"], v["ET"] = None, False, 0
            else:
                if self.start is None:
                    self.start = now
                v["ET"] = min(now - self.start, v["PT"])
                v["Q"] = now - self.start >= v["PT"]
        elif k == "TOF":
            if v["IN"]:
                self.start, v["Q"], v["ET"] = None, True, 0
            elif v["Q"]:
                if self.start is None:
                    self.start = now
                v["ET"] = min(now - self.start, v["PT"])
                v["Q"] = now - self.start < v["PT"]
        elif k == "TP":
            if v["IN"] and not self.mem and not v["Q"]:
                self.start, v["Q"] = now, True
            if self.start is not None:
                v["ET"] = min(now - self.start, v["PT"])
                if now - self.start >= v["PT"]:
                    v["Q"] = False
                    if not v["IN"]:
                        self.start, v["ET"] = None, 0
            self.mem = v["IN"]
        elif k == "CTU":
            if v["R"]:
                v["CV"] = 0
            elif v["CU"] and not self.mem and v["CV"] < 32767:
                v["CV"] += 1
            self.mem = v["CU"]
            v["Q"] = v["CV"] >= v["PV"]
        elif k == "CTD":
            if v["LD"]:
                v["CV"] = v["PV"]
            elif v["CD"] and not self.mem and v["CV"] > -32768:
                v["CV"] -= 1
            self.mem = v["CD"]
            v["Q"] = v["CV"] <= 0
        elif k == "SR":
            v["Q1"] = v["S1"] or (v["Q1"] and not v["R"])
        elif k == "RS":
            v["Q1"] = not v["R1"] and (v["S"] or v["Q1"])


class Instance:
    """State of one FUNCTION_BLOCK or PROGRAM instance (or one FUNCTION call frame)."""

    def __init__(self, pou, pous):
        self.pou = pou
        self.types = {v["name"]: v["type"] for v in pou["vars"]}
        if pou["kind"] == "FUNCTION" and pou.get("returns"):
            self.types.setdefault(pou["name"], pou["returns"])
        self.vars = {}
        self.pous = pous
        self.initialized = False

    def initial_value(self, v, ev):
        """A variable's value before its first scan (VAR_TEMP: before every scan): its declared initial
        value, or the type's default. An array's list fills it in index order; the rest keep the default."""
        value = default_value(v["type"], self.pous)
        init = v.get("init")
        if init is None:
            return value
        if not isinstance(value, dict):
            return coerce(v["type"], ev.eval(init, self))
        if init[0] != "array_init":
            raise Unsupported(init[1] if init[0] == "unsupported" else "array initial value")
        indices = _indices(value["dims"])
        given = sum(count for count, _ in init[1])
        if given > len(indices):
            raise STError(f"line {init[2]}: {given} initial values for {len(indices)} array elements")
        items = (expr for count, expr in init[1] for _ in range(count))
        for idx, expr in zip(indices, items):
            value["data"][idx] = coerce(v["type"][2], ev.eval(expr, self))
        return value

    def init(self, ev):
        for v in self.pou["vars"]:
            self.vars[v["name"]] = self.initial_value(v, ev)
        if self.pou["name"] in self.types and self.pou["name"] not in self.vars:
            self.vars[self.pou["name"]] = default_value(self.types[self.pou["name"]], self.pous)
        self.initialized = True

    def execute(self, ev):
        if not self.initialized:
            self.init(ev)
        # VAR_TEMP is re-initialised on every call
        for v in self.pou["vars"]:
            if v["section"] == "TEMP":
                self.vars[v["name"]] = self.initial_value(v, ev)
        try:
            ev.block(self.pou["body"], self)
        except Return:
            pass


class Evaluator:
    def __init__(self, pous: list[dict], step_budget: int = 200_000):
        self.pous = {p["name"]: p for p in pous}
        self.budget = step_budget
        self.steps = 0
        self.now = 0

    def tick(self, line):
        self.steps += 1
        if self.steps > self.budget:
            raise StepLimit(f"step budget of {self.budget} statements exceeded at line {line} "
                            "(non-terminating loop?)")

    # statements
    def block(self, stmts, frame):
        for s in stmts:
            self.stmt(s, frame)

    def stmt(self, s, frame):
        kind, line = s[0], s[-1]
        self.tick(line)
        if kind == "assign":
            self.store(s[1], self.eval(s[2], frame), frame)
        elif kind == "if":
            for c, body in s[1]:
                if self.truth(c, frame):
                    self.block(body, frame)
                    return
            self.block(s[2], frame)
        elif kind == "case":
            sel = self.eval(s[1], frame)
            for matches, body in s[2]:
                for m in matches:
                    if (m[0] == "val" and self.eval(m[1], frame) == sel) or (
                            m[0] == "range" and self.eval(m[1], frame) <= sel <= self.eval(m[2], frame)):
                        self.block(body, frame)
                        return
            self.block(s[3], frame)
        elif kind == "for":
            name = s[1]
            start, stop = self.eval(s[2], frame), self.eval(s[3], frame)
            step = self.eval(s[4], frame) if s[4] is not None else 1
            if step == 0:
                raise STError(f"line {line}: FOR step is 0")
            frame.vars[name] = coerce(frame.types[name], start)
            while (frame.vars[name] <= stop) if step > 0 else (frame.vars[name] >= stop):
                self.tick(line)
                try:
                    self.block(s[5], frame)
                except Continue:
                    pass
                except Exit:
                    break
                frame.vars[name] = coerce(frame.types[name], frame.vars[name] + step)
        elif kind == "while":
            while self.truth(s[1], frame):
                self.tick(line)
                try:
                    self.block(s[2], frame)
                except Continue:
                    pass
                except Exit:
                    break
        elif kind == "repeat":
            while True:
                self.tick(line)
                try:
                    self.block(s[1], frame)
                except Continue:
                    pass
                except Exit:
                    break
                if self.truth(s[2], frame):
                    break
        elif kind == "fbcall":
            self.fbcall(s, frame)
        elif kind == "noop":
            pass
        elif kind == "exit":
            raise Exit()
        elif kind == "continue":
            raise Continue()
        elif kind == "return":
            raise Return()
        else:
            raise Unsupported(f"line {line}: {s[1] if len(s) > 2 else kind}")

    def fbcall(self, s, frame):
        target, ins, outs, line = s[1], s[2], s[3], s[4]
        if target[0] == "var" and target[1] in self.pous and target[1] not in frame.vars:
            self.call(["call", target[1], [], ins, line], frame)
            return
        inst = self.eval(target, frame)
        if not isinstance(inst, (StdFB, Instance)):
            raise STError(f"line {line}: {_name(target)} is not a function block instance")
        for name, e in ins.items():
            inst.vars[name] = coerce(inst.types[name], self.eval(e, frame))
        if isinstance(inst, StdFB):
            inst.execute(self)
        else:
            inst.execute(self)
        for name, e in outs.items():
            self.store(e, inst.vars[name], frame)

    def truth(self, e, frame):
        v = self.eval(e, frame)
        if not isinstance(v, bool):
            raise STError(f"condition is not BOOL: {v!r}")
        return v

    def store(self, target, value, frame):
        kind = target[0]
        if kind == "var":
            name = target[1]
            if name not in frame.vars:
                raise STError(f"line {target[2]}: undeclared {name}")
            frame.vars[name] = coerce(frame.types[name], value)
        elif kind == "index":
            arr = self.eval(target[1], frame)
            idx = self.index(arr, target, frame)
            t = _elem_type(self, target[1], frame)
            arr["data"][idx] = coerce(t, value) if t else value
        elif kind == "field":
            inst = self.eval(target[1], frame)
            if not isinstance(inst, (StdFB, Instance)) or target[2] not in inst.vars:
                raise STError(f"line {target[3]}: no member {target[2]}")
            inst.vars[target[2]] = coerce(inst.types[target[2]], value)
        else:
            raise Unsupported(f"assignment target {kind}")

    def index(self, arr, e, frame):
        idx = tuple(self.eval(i, frame) for i in e[2])
        if not isinstance(arr, dict) or len(idx) != len(arr["dims"]):
            raise STError(f"line {e[3]}: bad array access")
        for i, (lo, hi) in zip(idx, arr["dims"]):
            if not lo <= i <= hi:
                raise STError(f"line {e[3]}: index {i} outside {lo}..{hi}")
        return idx

    # expressions
    def eval(self, e, frame):
        kind = e[0]
        if kind == "lit":
            return e[2]
        if kind == "var":
            if e[1] not in frame.vars:
                raise STError(f"line {e[2]}: undeclared {e[1]}")
            return frame.vars[e[1]]
        if kind == "index":
            arr = self.eval(e[1], frame)
            return arr["data"][self.index(arr, e, frame)]
        if kind == "field":
            inst = self.eval(e[1], frame)
            if not isinstance(inst, (StdFB, Instance)) or e[2] not in inst.vars:
                raise STError(f"line {e[3]}: no member {e[2]}")
            return inst.vars[e[2]]
        if kind == "un":
            v = self.eval(e[2], frame)
            if e[1] == "NOT":
                return (not v) if isinstance(v, bool) else ~v
            return -v if e[1] == "-" else v
        if kind == "bin":
            return self.binop(e, frame)
        if kind == "call":
            return self.call(e, frame)
        raise Unsupported(f"line {e[-1]}: {e[1]}")

    def binop(self, e, frame):
        op = e[1]
        a = self.eval(e[2], frame)
        if op in ("AND_THEN", "OR_ELSE"):
            if (op == "AND_THEN") != bool(a):
                return a
            return self.eval(e[3], frame)
        b = self.eval(e[3], frame)
        line = e[4]
        if op == "AND":
            return (a and b) if isinstance(a, bool) else a & b
        if op == "OR":
            return (a or b) if isinstance(a, bool) else a | b
        if op == "XOR":
            return (a != b) if isinstance(a, bool) else a ^ b
        if op == "=":
            return a == b
        if op == "<>":
            return a != b
        if op == "<":
            return a < b
        if op == ">":
            return a > b
        if op == "<=":
            return a <= b
        if op == ">=":
            return a >= b
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if b == 0:
                raise STError(f"line {line}: division by zero")
            if isinstance(a, int) and isinstance(b, int):
                q = abs(a) // abs(b)        # IEC integer division truncates toward zero
                return q if (a >= 0) == (b >= 0) else -q
            return a / b
        if op == "MOD":
            if b == 0:
                raise STError(f"line {line}: MOD by zero")
            return int(math.fmod(a, b))
        if op == "**":
            return float(a) ** float(b)
        raise Unsupported(f"operator {op}")

    def call(self, e, frame):
        name, line = e[1], e[4]
        args = [self.eval(a, frame) for a in e[2]]
        named = {k: self.eval(a, frame) for k, a in e[3].items()}
        conv = CONVERSION.match(name)
        if conv:
            (v,) = args or list(named.values())
            to = conv.group(2)
            f = family(to)
            if f == "INT":
                if isinstance(v, float):
                    v = int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))  # round half away
                return coerce(to, int(v))
            if f == "REAL":
                return float(v)
            if f == "BOOL":
                return v != 0
            raise Unsupported(f"conversion {name}")
        if name in STD_FUNCS:
            vals = args or list(named.values())
            if name == "ABS":
                return abs(vals[0])
            if name == "SQRT":
                if vals[0] < 0:
                    raise STError(f"line {line}: SQRT of a negative number")
                return math.sqrt(vals[0])
            if name == "MIN":
                return min(vals)
            if name == "MAX":
                return max(vals)
            if name == "LIMIT":
                mn, x, mx = (named["MN"], named["IN"], named["MX"]) if named else vals
                return min(max(x, mn), mx)
            if name == "SEL":
                g, a, b = (named["G"], named["IN0"], named["IN1"]) if named else vals
                return b if g else a
            if name == "TRUNC":
                return int(vals[0])
            if name == "EXPT":
                return float(vals[0]) ** float(vals[1])
            if name == "MOVE":
                return vals[0]
            fn = {"LN": math.log, "LOG": math.log10, "EXP": math.exp, "SIN": math.sin, "COS": math.cos,
                  "TAN": math.tan}[name]
            try:
                return fn(vals[0])
            except ValueError:
                raise STError(f"line {line}: {name} domain error") from None
        pou = self.pous.get(name)
        if pou is None or pou["kind"] != "FUNCTION":
            raise STError(f"line {line}: unknown function {name}")
        inst = Instance(pou, self.pous)
        inst.init(self)
        params = [v["name"] for v in pou["vars"] if v["section"] == "INPUT"]
        for p, v in zip(params, args):
            inst.vars[p] = coerce(inst.types[p], v)
        for p, v in named.items():
            if p not in inst.vars:
                raise STError(f"line {line}: function {name} has no input {p}")
            inst.vars[p] = coerce(inst.types[p], v)
        inst.initialized = True
        inst.execute(self)
        return inst.vars.get(name)


def _elem_type(ev, arr_expr, frame):
    if arr_expr[0] == "var":
        t = frame.types.get(arr_expr[1])
        return t[2] if isinstance(t, list) else None
    return None


# --- interface and property checks -------------------------------------------------------------------

def interface_problems(pous: list[dict], oracle: dict) -> list[tuple[str, str]]:
    """The POU the task names, with its kind, inputs, outputs and return type: (problem, what the oracle
    requires there or '') pairs, the requirement kept apart from the problem."""
    want = oracle["name"].upper()
    by_name = {p["name"]: p for p in pous}
    pou = by_name.get(want)
    if pou is None:
        found = ", ".join(f"{p['kind']} {p['name']}" for p in pous) or "none"
        return [(f"no POU named {oracle['name']} (found: {found})", "")]
    out = []
    if pou["kind"] != oracle["pou"]:
        out.append((f"{oracle['name']} is a {pou['kind']}, not the required POU kind",
                    f"{oracle['name']} is a {oracle['pou']}"))
    sections = {"INPUT": oracle.get("inputs", {}), "OUTPUT": oracle.get("outputs", {})}
    if "in_outs" in oracle:    # only tasks that name them require exactly these VAR_IN_OUT
        sections["IN_OUT"] = oracle["in_outs"]
    for section, wanted in sections.items():
        have = {v["name"]: v["type"] for v in pou["vars"] if v["section"] == section}
        for name, t in wanted.items():
            if name.upper() not in have:
                out.append((f"VAR_{section} {name} is missing", ""))
            elif type_text(have[name.upper()]) != _norm_type(t):
                out.append((f"VAR_{section} {name} is {type_text(have[name.upper()])}, not the required type",
                            f"VAR_{section} {name} is {_norm_type(t)}"))
        extra = sorted(set(have) - {n.upper() for n in wanted})
        if extra:
            out.append((f"unexpected VAR_{section} {', '.join(extra)}", ""))
    if oracle["pou"] == "FUNCTION" and oracle.get("returns"):
        if type_text(pou.get("returns")) != _norm_type(oracle["returns"]):
            out.append((f"{oracle['name']} returns {type_text(pou.get('returns'))}, not the required type",
                        f"{oracle['name']} returns {oracle['returns']}"))
    return out


def _norm_type(t: str) -> str:
    return re.sub(r"\s+", " ", t.upper().replace("[", "[").strip())


def _as_list(v):
    """A one-dimensional array's elements in index order (how the oracle writes them); other values as they are."""
    if isinstance(v, dict) and len(v.get("dims", ())) == 1:
        return [v["data"][(i,)] for i in range(v["dims"][0][0], v["dims"][0][1] + 1)]
    return v


def _same(got, want, tol) -> bool:
    got, want = _as_list(got), _as_list(want)
    if isinstance(want, list) or isinstance(got, list):
        return (isinstance(got, list) and isinstance(want, list) and len(got) == len(want)
                and all(_same(g, w, tol) for g, w in zip(got, want)))
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(want, float) or isinstance(got, float):
        return isinstance(got, (int, float)) and abs(got - want) <= tol * max(1.0, abs(want))
    return got == want


def _show(v):
    v = _as_list(v)
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        return f"{v:.6g}"
    return repr(v)


def run_sequences(pous: list[dict], oracle: dict, step_budget: int = 200_000) -> dict:
    """Execute the named POU over the oracle's sequences; first mismatch wins. `reason` says what the
    program did, `expected` what the oracle wanted (kept apart: not shown to the model by default)."""
    problems = interface_problems(pous, oracle)
    if problems:
        wanted = [e for _, e in problems[:3] if e]
        return {"ok": False, "reason": "interface: " + "; ".join(p for p, _ in problems[:3]),
                "expected": "interface: " + "; ".join(wanted) if wanted else ""}
    name = oracle["name"].upper()
    cycle = int(oracle.get("cycle_ms", 0))
    tol = float(oracle.get("tolerance", 1e-6))
    checked = 0
    for si, seq in enumerate(oracle["sequences"]):
        ev = Evaluator(pous, step_budget)
        pou = ev.pous[name]
        inst = Instance(pou, ev.pous)
        label = seq.get("name", f"sequence {si + 1}")
        for k, step in enumerate(seq["steps"]):
            ev.now = k * cycle
            try:
                if pou["kind"] == "FUNCTION":
                    args = {n.upper(): _to_st(v, inst.types.get(n.upper())) for n, v in step.get("in", {}).items()}
                    result = ev.call(["call", name, [], {n: ["lit", None, v] for n, v in args.items()}, 0], inst)
                    values = {"RETURN": result}
                else:
                    if not inst.initialized:
                        inst.init(ev)
                    for n, v in step.get("in", {}).items():
                        inst.vars[n.upper()] = coerce(inst.types[n.upper()], _to_st(v, inst.types[n.upper()]))
                    inst.execute(ev)
                    values = inst.vars
            except StepLimit as e:   # the evaluator's own time limit: the program does not terminate
                return {"ok": False, "fault": "timeout", "reason": f"{label}, scan {k + 1}: {e}"}
            except RecursionError:   # unbounded recursion of the program's POUs, not a fault of ours
                return {"ok": False, "fault": "runtime_error",
                        "reason": f"{label}, scan {k + 1}: runtime error: recursion too deep"}
            except STError as e:
                return {"ok": False, "reason": f"{label}, scan {k + 1}: runtime error: {e}"}
            except (ZeroDivisionError, OverflowError, TypeError, KeyError, ValueError) as e:
                return {"ok": False, "reason": f"{label}, scan {k + 1}: runtime error: {type(e).__name__}: {e}"}
            expected = dict(step.get("out", {}))
            if "ret" in step:
                expected["RETURN"] = step["ret"]
            for n, want in expected.items():
                key = n.upper()
                got = values.get(key)
                want_v = _to_st(want, inst.types.get(key) or (pou.get("returns") if key == "RETURN" else None))
                if not _same(got, want_v, tol):
                    what = "return value" if key == "RETURN" else n
                    return {"ok": False, "reason": f"{label}, scan {k + 1}: {what} = {_show(got)}",
                            "expected": f"{label}, scan {k + 1}: expected {what} = {_show(want_v)}"}
                checked += 1
    return {"ok": True, "reason": f"{checked} output checks over {len(oracle['sequences'])} sequence(s) hold"}


def expected_from_gold(gold_pous: list[dict], oracle: dict, step_budget: int = 200_000) -> dict:
    """Oracle with every step's outputs (and return value) filled in by running the reference POU."""
    filled = {**oracle, "sequences": []}
    name = oracle["name"].upper()
    pou = {p["name"]: p for p in gold_pous}[name]
    in_outs = {n.upper() for n in oracle.get("in_outs", {})}
    outputs = [v["name"] for v in pou["vars"] if v["section"] == "OUTPUT" or v["name"] in in_outs]
    for seq in oracle["sequences"]:
        ev = Evaluator(gold_pous, step_budget)
        inst = Instance(pou, ev.pous)
        steps = []
        for k, step in enumerate(seq["steps"]):
            ev.now = k * int(oracle.get("cycle_ms", 0))
            if pou["kind"] == "FUNCTION":
                args = {n.upper(): ["lit", None, _to_st(v, inst.types.get(n.upper()))] for n, v in step.get("in", {}).items()}
                ret = ev.call(["call", name, [], args, 0], inst)
                steps.append({"in": step.get("in", {}), "ret": ret})
                continue
            if not inst.initialized:
                inst.init(ev)
            for n, v in step.get("in", {}).items():
                inst.vars[n.upper()] = coerce(inst.types[n.upper()], _to_st(v, inst.types[n.upper()]))
            inst.execute(ev)
            values = {n: _as_list(inst.vars[n]) for n in outputs}
            steps.append({"in": step.get("in", {}), "out": {n: v for n, v in values.items()
                                                            if not isinstance(v, (dict, StdFB, Instance))}})
        filled["sequences"].append({**seq, "steps": steps})
    return filled


def parse_time(text: str) -> int:
    """T#1s500ms -> 1500 (milliseconds)."""
    m = re.fullmatch(r"(?:L?T|L?TIME)#(-)?((?:\d+(?:\.\d+)?(?:d|h|ms|m|s|us|ns)_?)+)", text.strip(), re.I)
    if not m:
        raise ValueError(f"not a TIME literal: {text}")
    scale = {"d": 86400000, "h": 3600000, "m": 60000, "s": 1000, "ms": 1, "us": 0.001, "ns": 0.000001}
    total = 0.0
    for num, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|us|ns|d|h|m|s)", m.group(2), re.I):
        total += float(num) * scale[unit.lower()]
    return int(round(-total if m.group(1) else total))


def _to_st(v, t):
    if isinstance(t, list) and isinstance(v, list):    # an array port's values, a list in index order
        (lo, hi), elem = t[1][0], t[2]
        if len(t[1]) != 1 or len(v) != hi - lo + 1:
            raise ValueError(f"{len(v)} value(s) for {type_text(t)}")
        return {"dims": t[1], "data": {(lo + i,): coerce(elem, _to_st(x, elem)) for i, x in enumerate(v)}}
    f = family(t)
    if f == "TIME" and isinstance(v, int) and not isinstance(v, bool):
        return v
    if f == "TIME" and isinstance(v, str):
        return parse_time(v)
    if f == "REAL" and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return v
