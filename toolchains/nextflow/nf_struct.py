"""Our DSL2 structure parser for Nextflow scripts (pure text analysis, no execution).

Used inside the sandbox by run_nextflow.py (candidate programs) and by the upstream loader (to derive
a structural oracle from an nf-core module's main.nf). It works on a *masked* copy of the script in
which comments are blanked and string contents replaced, so braces and keywords inside strings and
comments never count.

parse(text) -> dict with processes, workflows, includes, params, dsl, and `errors`: DSL2 structure
errors a Nextflow stub run would also reject (DSL1 channel clauses, removed operators, calls to
undefined processes, wrong number of process inputs, a process used twice without an alias...).
check(model, oracle) -> list of mismatches against a task's structural oracle, as (what is wrong, what was expected).
"""
from __future__ import annotations

import re

INPUT_QUALIFIERS = {"val", "path", "file", "tuple", "env", "stdin", "each"}
OUTPUT_QUALIFIERS = {"val", "path", "file", "tuple", "env", "stdout", "eval"}
INNER_QUALIFIERS = ("val", "path", "file", "env", "stdin", "stdout", "eval", "each")
SECTIONS = ("input", "output", "when", "script", "shell", "exec", "stub")
REMOVED_OPERATORS = {"into", "separate", "choice", "countBy", "groupBy", "route", "spread"}
NOT_OPERATORS = {"out", "set", "tap"}
FACTORY_OWNERS = ("Channel", "channel")
OPEN, CLOSE = "([{", ")]}"


# --- masking -------------------------------------------------------------------------------------

def literals(text: str):
    """(kind, start, end, quote) for every comment ("comment", quote "") and string literal ("string")
    in text, in order: the one scan that mask() and one_line_interpolations() share."""
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i) or text.startswith("/*", i):
            line = text[i + 1] == "/"
            j = text.find("\n" if line else "*/", i + 2)
            j = n if j < 0 else j + (0 if line else 2)
            yield "comment", i, j, ""
            i = j
        elif text[i] in "'\"":
            q = _quote_at(text, i)
            j = _string_end(text, i, q)
            yield "string", i, j, q
            i = j
        else:
            i += 1


def _quote_at(text: str, i: int) -> str:
    return text[i:i + 3] if text[i:i + 3] in ("'''", '"""') else text[i]


def mask(text: str) -> str:
    """Same length as text: comments blanked, string contents replaced by '_' (quotes kept).

    Interpolations ${...} inside double-quoted strings are masked too: their braces never count, and
    they may span lines (nf-core's `container "${ cond ? 'a' : 'b' }"` written over three lines).
    """
    out = list(text)
    for kind, i, end, q in literals(text):
        if kind == "comment":
            first, last, fill = i, end, " "
        else:
            closed = text.startswith(q, end - len(q)) and end - len(q) > i
            first, last, fill = i + len(q), end - len(q) if closed else end, "_"
        for k in range(first, last):
            if out[k] != "\n":
                out[k] = fill
    return "".join(out)


MAX_NESTING = 64   # strings inside interpolations inside strings...: deeper than this is read as text


def _string_end(text: str, i: int, q: str, depth: int = 0) -> int:
    """Index just past the string literal opening with quote `q` at i (a one-line string that is not
    closed stops at the end of its line)."""
    j, n = i + len(q), len(text)
    while j < n:
        if text.startswith(q, j):
            return j + len(q)
        if text[j] == "\\":
            j += 2
            continue
        if q[0] == '"' and text.startswith("${", j) and depth < MAX_NESTING:
            j = _interpolation_end(text, j + 2, depth + 1)
            continue
        if len(q) == 1 and text[j] == "\n":
            return j
        j += 1
    return n


def _interpolation_end(text: str, j: int, nesting: int = 0) -> int:
    """Index just past the `}` closing the interpolation whose body starts at j (strings inside skipped)."""
    depth, n = 1, len(text)
    while j < n:
        c = text[j]
        if c in "'\"":
            j = _string_end(text, j, _quote_at(text, j), nesting)
            continue
        depth += {"{": 1, "}": -1}.get(c, 0)
        j += 1
        if depth == 0:
            return j
    return n


def one_line_interpolations(text: str) -> str:
    """Text for the Groovy 2.4 parser: a one-line double-quoted string whose ${...} spans lines (Groovy 3,
    and so Nextflow, accepts it; 2.4 stops at the line end) is joined onto one line, and the newlines
    are put back after its closing quote so that every later line keeps its number."""
    out, at = [], 0
    for kind, i, end, q in literals(text):
        literal = text[i:end]
        if kind == "string" and q == '"' and "\n" in literal:
            out += [text[at:i], literal.replace("\n", " ") + "\n" * literal.count("\n")]
            at = end
    return "".join(out) + text[at:]


DECLARATION_CALL = re.compile(r"[ \t]*(?:" + "|".join(sorted(INPUT_QUALIFIERS | OUTPUT_QUALIFIERS)) + r")[ \t]*\(")


def one_call_declarations(text: str) -> str:
    """Text for the Groovy 2.4 parser: a declaration written as a call followed by named arguments on
    its line (`path("x.h5ad"), emit: adata`, current nf-core modules) becomes one call
    (`path("x.h5ad", emit: adata)`). Nextflow accepts the first form; Groovy 2.4 stops at the comma.
    Line numbers are kept."""
    m = mask(text)
    out, at, start = [], 0, 0
    for line in m.split("\n"):
        end, code = start + len(line), line.rstrip()
        call = DECLARATION_CALL.match(line)
        if call and not code.endswith(","):
            close = match_close(m, start + call.end() - 1)
            if close < start + len(code) and m[close + 1:start + len(code)].lstrip().startswith(","):
                out += [text[at:close], text[close + 1:start + len(code)], ")"]
                at = start + len(code)
        start = end + 1
    return "".join(out) + text[at:]


IN_PARAMETER = re.compile(r"\{\s*in\s*->")
IN_WORD = re.compile(r"(?<![\w.])in(?![\w$])")


def renamed_in_parameters(text: str) -> str:
    """Text for the Groovy 2.4 parser: a closure whose parameter is named `in` (`collect { in -> "-i ${in}" }`,
    nf-core's sentieon modules; Groovy 3, and so Nextflow, accepts it; `in` is a keyword in 2.4) has the
    parameter renamed `in_` in its whole body. Line numbers are kept."""
    m = mask(text)
    out, at = [], 0
    for head in IN_PARAMETER.finditer(m):
        if head.start() >= at:
            close = match_close(m, head.start())
            out += [text[at:head.start()], IN_WORD.sub(_in_as_name, text[head.start():close + 1])]
            at = close + 1
    return "".join(out) + text[at:]


def _in_as_name(word: re.Match) -> str:
    # `a in b` is the operator: its `in` follows the end of an operand; the name follows `{`, `${`, `$`,
    # `(`, `,`, `->`, `=` or another operator
    text, i = word.string, word.start() - 1
    while i >= 0 and text[i].isspace():       # the character before it, without copying the text
        i -= 1
    before = text[i] if i >= 0 else ""
    return "in" if before.isalnum() or before in ")]_'\"" else "in_"


def match_close(m: str, start: int) -> int:
    """Index of the bracket closing the one at m[start] (len(m) when unbalanced)."""
    depth = 0
    for i in range(start, len(m)):
        if m[i] in OPEN:
            depth += 1
        elif m[i] in CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return len(m)


def depth_map(m: str) -> list[int]:
    d, out = 0, []
    for ch in m:
        if ch in CLOSE:
            d -= 1
        out.append(d)
        if ch in OPEN:
            d += 1
    return out


def statements(orig: str, m: str) -> list[tuple[str, str, int]]:
    """Split a block into logical statements (orig, masked, offset) at depth-0 newlines and ';'.

    A newline does not end a statement after a trailing operator or comma, nor before a line that
    starts with '.', '|' (not '||'), '?' or ':' (method chains, pipes, ternaries).
    """
    out, depth, start = [], 0, 0
    n = len(m)

    def push(end):
        if m[start:end].strip():
            out.append((orig[start:end], m[start:end], start))

    i = 0
    while i < n:
        ch = m[i]
        if ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth -= 1
        elif depth <= 0 and (ch == ";" or ch == "\n"):
            if ch == "\n":
                before = m[start:i].rstrip()
                after = m[i + 1:].lstrip()
                cont = (before.endswith((",", "=", "+", "-", "*", "&&", "||", "(", "?", ":", ".", "|"))
                        or (after.startswith((".", "?", ":")) and not after.startswith("..")) or
                        (after.startswith("|") and not after.startswith("||")))
                if before and cont:
                    i += 1
                    continue
            push(i)
            start = i + 1
        i += 1
    push(n)
    return out


# --- top level -------------------------------------------------------------------------------------

def _norm_value(v: str) -> str:
    v = " ".join(v.strip().split())
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        v = v[1:-1]
    return v


def _norm_path(p: str) -> str:
    p = p.strip()
    if p.startswith("./"):
        p = p[2:]
    return p[:-3] if p.endswith(".nf") else p


def parse(text: str) -> dict:
    m = mask(text)
    depth = depth_map(m)
    model = {"processes": {}, "workflows": {}, "includes": {}, "params": {}, "dsl": None, "errors": [],
             "functions": []}
    errors = model["errors"]

    def line_of(pos):
        return text.count("\n", 0, pos) + 1

    for mo in re.finditer(r"\bnextflow\s*\.\s*enable\s*\.\s*dsl\s*=\s*(\d+)", m):
        model["dsl"] = int(mo.group(1))
        if model["dsl"] != 2:
            errors.append(f"line {line_of(mo.start())}: DSL1 is not supported: "
                          f"nextflow.enable.dsl = {mo.group(1)} (DSL2 is required)")
    for mo in re.finditer(r"(?m)^\s*include\s*\{", m):
        close = match_close(m, m.index("{", mo.start()))
        names = text[m.index("{", mo.start()) + 1:close]
        rest = re.match(r"\s*from\s*(['\"])(.*?)\1", text[close + 1:])
        if not rest:
            errors.append(f"line {line_of(mo.start())}: include without a `from 'path'` clause")
            continue
        for part in names.split(";"):
            part = part.strip()
            if not part:
                continue
            am = re.fullmatch(r"(\w+)(?:\s+as\s+(\w+))?", part)
            if not am:
                errors.append(f"line {line_of(mo.start())}: cannot read include item {part!r}")
                continue
            model["includes"][am.group(2) or am.group(1)] = {"name": am.group(1), "path": _norm_path(rest.group(2))}
    for mo in re.finditer(r"(?m)^[ \t]*params\s*\.\s*(\w+)\s*=(?!=)\s*(.*)$", m):
        if depth[mo.start(1)] == 0:
            end = mo.end()
            model["params"][mo.group(1)] = _norm_value(text[mo.start(2):end])
    for mo in re.finditer(r"(?m)^[ \t]*def\s+(\w+)\s*\(", m):
        model["functions"].append(mo.group(1))
    for mo in re.finditer(r"\bprocess\s+(\w+)\s*\{", m):
        if mo.start() > 0 and m[mo.start() - 1] == ".":
            continue
        brace = mo.end() - 1
        if depth[mo.start()] != 0:
            errors.append(f"line {line_of(mo.start())}: process {mo.group(1)} is defined inside another block")
            continue
        close = match_close(m, brace)
        model["processes"][mo.group(1)] = _process(text[brace + 1:close], m[brace + 1:close], mo.group(1),
                                                   line_of(brace), errors)
    for mo in re.finditer(r"(?<![.\w])workflow\s*(\w*)\s*\{", m):
        brace = mo.end() - 1
        if depth[mo.start()] != 0:
            errors.append(f"line {line_of(mo.start())}: workflow is defined inside another block")
            continue
        name = mo.group(1) or "main"
        if name in ("main",) and mo.group(1):
            name = "main_"
        close = match_close(m, brace)
        model["workflows"][name] = {"body": (text[brace + 1:close], m[brace + 1:close]), "line": line_of(brace)}
    for name, wf in model["workflows"].items():
        body, mbody = wf.pop("body")
        model["workflows"][name] = _workflow(body, mbody, wf["line"], model, errors)
    return model


def _sections(orig: str, m: str, names) -> tuple[str, str, dict]:
    """Split a block at depth-0 `label:` lines; returns (head_orig, head_masked, {label: (orig, masked)})."""
    depth = depth_map(m)
    pat = re.compile(r"(?m)^[ \t]*(" + "|".join(names) + r")[ \t]*:(?!:)")
    hits = [mo for mo in pat.finditer(m) if depth[mo.start(1)] == 0]
    if not hits:
        return orig, m, {}
    secs = {}
    for k, mo in enumerate(hits):
        end = hits[k + 1].start() if k + 1 < len(hits) else len(m)
        secs.setdefault(mo.group(1), (orig[mo.end():end], m[mo.end():end]))
    return orig[:hits[0].start()], m[:hits[0].start()], secs


def _declaration(orig: str, m: str, allowed: set, where: str, errors: list) -> dict | None:
    mo = re.match(r"\s*(\w+)", m)
    if not mo:
        errors.append(f"{where}: cannot read declaration {orig.strip()[:60]!r}")
        return None
    qual = mo.group(1)
    rest_m = m[mo.end():]
    depth = depth_map(rest_m)
    for kw in ("from", "into"):
        for km in re.finditer(rf"\b{kw}\b", rest_m):
            if depth[km.start()] == 0:
                errors.append(f"{where}: DSL1 channel clause `{kw}` in {orig.strip()[:60]!r} (DSL2 has no from/into)")
                return None
    if qual == "set":
        errors.append(f"{where}: DSL1 `set` declaration {orig.strip()[:60]!r} (use tuple in DSL2)")
        return None
    if qual not in allowed:
        errors.append(f"{where}: unknown qualifier `{qual}` in {orig.strip()[:60]!r}")
        return None
    options = {}
    for om in re.finditer(r"(\w+)\s*:", rest_m):
        if depth[om.start()] == 0:
            val = re.match(r"\s*([^,]+)", orig[mo.end() + om.end():])
            options[om.group(1)] = _norm_value(val.group(1)) if val else ""
    if qual == "tuple":
        inner = [q.group(1) for q in re.finditer(r"\b(" + "|".join(INNER_QUALIFIERS) + r")\b\s*(?=\(|\s|,|$)", rest_m)
                 if depth[q.start()] <= 1 and not (q.start() > 0 and rest_m[q.start() - 1] == ".")]
        shape = "tuple(" + ",".join(inner) + ")"
    else:
        shape = qual
    return {"shape": shape, "emit": options.get("emit"), "optional": options.get("optional") == "true",
            "options": options, "text": " ".join(orig.split())}


def _process(orig: str, m: str, name: str, line: int, errors: list) -> dict:
    where = f"process {name} (line {line})"
    head, mhead, secs = _sections(orig, m, SECTIONS)
    directives = {}
    for so, sm, _ in statements(head, mhead):
        dm = re.match(r"\s*(\w+)\b", sm)
        if dm:
            directives.setdefault(dm.group(1), _norm_value(so[dm.end():]))
    proc = {"inputs": [], "outputs": [], "directives": directives, "script": "", "script_kind": None,
            "has_when": "when" in secs, "has_stub": "stub" in secs}
    for key, allowed in (("input", INPUT_QUALIFIERS), ("output", OUTPUT_QUALIFIERS)):
        if key in secs:
            for so, sm, _ in statements(*secs[key]):
                d = _declaration(so, sm, allowed, f"{where} {key}", errors)
                if d:
                    proc[key + "s"].append(d)
    for kind in ("script", "shell", "exec"):
        if kind in secs:
            proc["script"], proc["script_kind"] = secs[kind][0], kind
            break
    else:
        # A process whose body is only directives and a bare string: that string is the script.
        last = statements(head, mhead)[-1:] if not secs else []
        if last and last[0][1].strip()[:1] in "'\"":
            proc["script"], proc["script_kind"] = last[0][0], "script"
        else:
            errors.append(f"{where}: missing script, shell or exec section")
    return proc


# --- workflows: calls, lineage, conditions -------------------------------------------------------------

def _callables(model) -> dict[str, str]:
    out = {n: "process" for n in model["processes"]}
    out.update({n: "workflow" for n in model["workflows"] if n != "main"})
    out.update({n: "include" for n in model["includes"]})
    return out


def _workflow(orig: str, m: str, line: int, model: dict, errors: list) -> dict:
    _, _, secs = _sections(orig, m, ("take", "main", "emit", "publish"))
    if not secs:
        secs = {"main": (orig, m)}
    wf = {"take": [], "emit": {}, "calls": [], "operators": set(), "env": {}, "line": line}
    if "take" in secs:
        for so, sm, _ in statements(*secs["take"]):
            tm = re.match(r"\s*(\w+)", sm)
            if tm:
                wf["take"].append(tm.group(1))
    wf["env"] = {t: {f"take[{i}]": set()} for i, t in enumerate(wf["take"])}
    callables = _callables(model)
    _block(*secs.get("main", ("", "")), [], wf, callables, model, errors)
    if "emit" in secs:
        for so, sm, _ in statements(*secs["emit"]):
            em = re.match(r"\s*(\w+)\s*=(?!=)(.*)$", sm, re.S)
            if em:
                wf["emit"][em.group(1)] = _lineage(so[em.start(2):], em.group(2), wf, callables, errors)
            else:
                names = re.findall(r"\w+", sm)
                if names:
                    wf["emit"][names[-1]] = _lineage(so, sm, wf, callables, errors)
    wf["operators"] = sorted(wf["operators"])
    return wf


def _block(orig, m, conds, wf, callables, model, errors):
    for so, sm, _ in statements(orig, m):
        im = re.match(r"\s*if\s*\(", sm)
        if im:
            _if_chain(so, sm, conds, wf, callables, model, errors)
        else:
            _statement(so, sm, conds, wf, callables, model, errors)


def _if_chain(so, sm, conds, wf, callables, model, errors):
    pos, negated = 0, []
    while True:
        im = re.match(r"\s*if\s*\(", sm[pos:])
        if not im:
            break
        p_open = pos + im.end() - 1
        p_close = match_close(sm, p_open)
        cond = " ".join(so[p_open + 1:p_close].split())
        b_open = sm.find("{", p_close)
        if b_open < 0:
            return
        b_close = match_close(sm, b_open)
        _block(so[b_open + 1:b_close], sm[b_open + 1:b_close], conds + negated + [cond], wf, callables, model, errors)
        negated = negated + [f"!({cond})"]
        em = re.match(r"\s*else\s*", sm[b_close + 1:])
        if not em:
            return
        pos = b_close + 1 + em.end()
        if re.match(r"if\s*\(", sm[pos:]):
            continue
        if pos < len(sm) and sm[pos] == "{":
            e_close = match_close(sm, pos)
            _block(so[pos + 1:e_close], sm[pos + 1:e_close], conds + negated, wf, callables, model, errors)
        return


def _call_spans(m: str, callables):
    """(name, open_paren, close_paren) of direct calls NAME(...) in a masked expression."""
    out = []
    for cm in re.finditer(r"(?<![.\w])([A-Za-z_]\w*)\s*\(", m):
        name = cm.group(1)
        if name in callables or re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            close = match_close(m, cm.end() - 1)
            out.append((name, cm.start(), cm.end() - 1, close))
    # keep outermost only
    outer, last_end = [], -1
    for span in out:
        if span[1] > last_end:
            outer.append(span)
            last_end = span[3]
    return outer


def _ops(m: str, callables) -> set:
    ops = set()
    for om in re.finditer(r"\.\s*(\w+)\s*(?=[({])", m):
        name = om.group(1)
        before = m[:om.start()].rstrip()
        if re.search(r"(?<![.\w])(Channel|channel)$", before):
            continue  # a channel factory, not an operator
        if name not in NOT_OPERATORS:
            ops.add(name)
    for om in re.finditer(r"(?<![|])\|(?![|])\s*(\w+)", m):
        if om.group(1) not in callables and om.group(1) not in NOT_OPERATORS:
            ops.add(om.group(1))
    # bare operators without parentheses or closure: ch.collect, ch.flatten
    for om in re.finditer(r"\.\s*(collect|flatten|unique|first|last|count|toList|toSortedList|view|"
                          r"distinct|sum|min|max|mix|transpose|dump)\b(?!\s*[({])", m):
        ops.add(om.group(1))
    return ops


def _merge(into: dict, other: dict, extra: set = frozenset()) -> None:
    for src, ops in other.items():
        into.setdefault(src, set()).update(ops, extra)


def _lineage(so: str, sm: str, wf, callables, errors, record=None) -> dict:
    """Sources (process names, channel.<factory>, params.<name>, take[i]) whose data reach this expression,
    each with the operators applied on the way (over-approximated per statement)."""
    result: dict = {}
    spans = _call_spans(sm, callables)
    skip = []
    for name, start, p_open, p_close in spans:
        if record is not None:
            record(name, so[p_open + 1:p_close], sm[p_open + 1:p_close], start)
        result.setdefault(name, set())
        skip.append((start, p_close + 1))

    def outside(pos):
        return all(not (a <= pos < b) for a, b in skip)

    for rm in re.finditer(r"(?<![.\w])([A-Za-z_]\w*)\s*\.\s*out\b", sm):
        if outside(rm.start()):
            result.setdefault(rm.group(1), set())
    for rm in re.finditer(r"(?<![.\w])(Channel|channel)\s*\.\s*(\w+)", sm):
        if outside(rm.start()):
            result.setdefault(f"channel.{rm.group(2)}", set())
    for rm in re.finditer(r"(?<![.\w])params\s*\.\s*(\w+)", sm):
        if outside(rm.start()):
            result.setdefault(f"params.{rm.group(1)}", set())
    for rm in re.finditer(r"(?<![.\w])([A-Za-z_]\w*)\b", sm):
        if outside(rm.start()) and rm.group(1) in wf["env"]:
            _merge(result, wf["env"][rm.group(1)])
    masked_outside = "".join(ch if outside(i) else " " for i, ch in enumerate(sm))
    ops = _ops(masked_outside, callables)
    wf["operators"].update(ops)
    for src in result:
        result[src] |= ops
    return result


def _statement(so, sm, conds, wf, callables, model, errors):
    def record(name, args_o, args_m, start, piped=None):
        if name not in callables:
            if name not in model["functions"]:
                errors.append(f"workflow: missing process or function {name} (not defined or included)")
            return
        args = [] if piped is None else [piped]
        if piped is None and args_m.strip():
            depth, last = depth_map(args_m), 0
            cuts = [i for i, ch in enumerate(args_m) if ch == "," and depth[i] == 0]
            for cut in cuts + [len(args_m)]:
                args.append(_lineage(args_o[last:cut], args_m[last:cut], wf, callables, errors, record))
                last = cut + 1
        wf["calls"].append({"name": name, "args": args, "conds": list(conds)})

    # pipes: a | B | op
    depth = depth_map(sm)
    cuts = [i for i, ch in enumerate(sm) if ch == "|" and depth[i] == 0 and sm[i - 1:i] != "|" and sm[i + 1:i + 2] != "|"]
    target = None
    am = re.match(r"\s*(?:def\s+)?([A-Za-z_]\w*)\s*=(?!=)", sm)
    body_o, body_m = (so[am.end():], sm[am.end():]) if am else (so, sm)
    if am:
        target = am.group(1)
        cuts = [c - am.end() for c in cuts]
    sets = [s.group(1) for s in re.finditer(r"(?:\.|\|)\s*(?:set|tap)\s*\{\s*(\w+)\s*\}", body_m)]
    if cuts:
        segs, last = [], 0
        for cut in cuts + [len(body_m)]:
            segs.append((body_o[last:cut], body_m[last:cut]))
            last = cut + 1
        cur = _lineage(*segs[0], wf, callables, errors, record)
        for seg_o, seg_m in segs[1:]:
            word = seg_m.strip()
            if word in callables:
                record(word, "", "", 0, piped=cur)
                cur = {word: set()}
            else:
                lm = re.match(r"\s*(\w+)", seg_m)
                if lm and lm.group(1) in ("set", "tap"):
                    continue
                ops = _ops("|" + seg_m, callables)
                wf["operators"].update(ops)
                cur = {k: v | ops for k, v in cur.items()}
        value = cur
    else:
        value = _lineage(body_o, body_m, wf, callables, errors, record)
    for name in ([target] if target else []) + sets:
        if conds and name in wf["env"]:
            # assigned in a branch: either value may reach later uses
            merged = {k: set(v) for k, v in wf["env"][name].items()}
            _merge(merged, value)
            wf["env"][name] = merged
        else:
            wf["env"][name] = value


# --- checks -----------------------------------------------------------------------------------

def stub_errors(model: dict, included: dict[str, dict]) -> list[str]:
    """Errors a stub run would raise beyond the per-declaration ones: arity, reuse without alias."""
    errors = list(model["errors"])
    for wname, wf in model["workflows"].items():
        seen = set()
        for call in wf["calls"]:
            name = call["name"]
            if name in seen and name in _callables(model):
                errors.append(f"workflow {wname}: {name} is invoked twice; include it again under an alias")
            seen.add(name)
            n_in = _arity(name, model, included)
            if n_in is not None and n_in != len(call["args"]):
                errors.append(f"workflow {wname}: {name} declares {n_in} input channel(s) but "
                              f"{len(call['args'])} were given")
    for wname, wf in model["workflows"].items():
        for op in wf["operators"]:
            if op in REMOVED_OPERATORS:
                errors.append(f"workflow {wname}: operator `{op}` is not available in DSL2")
    return errors


def _arity(name, model, included):
    if name in model["processes"]:
        return len(model["processes"][name]["inputs"])
    if name in model["workflows"]:
        return len(model["workflows"][name]["take"])
    inc = model["includes"].get(name)
    if inc and inc["path"] in included:
        other = included[inc["path"]]
        if inc["name"] in other["processes"]:
            return len(other["processes"][inc["name"]]["inputs"])
        if inc["name"] in other["workflows"]:
            return len(other["workflows"][inc["name"]]["take"])
    return None


def _cond_polarity(conds: list[str], param: str):
    """None if no condition mentions params.<param>; else True/False when the call runs only when the
    parameter is true/false, or 'mentioned' when the condition is too complex to read."""
    pat = re.compile(rf"^(!*)\(*\s*(!*)\s*params\s*\.\s*{re.escape(param)}\s*\)*$")
    found = None
    for c in conds:
        neg = 0
        while c.startswith("!(") and c.endswith(")"):
            neg, c = neg + 1, c[2:-1]
        if not re.search(rf"params\s*\.\s*{re.escape(param)}\b", c):
            continue
        pm = pat.match(c.replace(" ", ""))
        if pm:
            return (neg + len(pm.group(1)) + len(pm.group(2))) % 2 == 0
        found = "mentioned"
    return found


def check(model: dict, oracle: dict) -> list[tuple[str, str]]:
    """Mismatches between a parsed program and the task's structural oracle (empty = pass), each as
    (what the program does, what the oracle expects). The first part is fed back to the model: it
    names the program's own elements, never the oracle's targets (required names, shapes, patterns)."""
    out = []
    for name, want in (oracle.get("params") or {}).items():
        if name not in model["params"]:
            out.append(("a required parameter is not defined at top level", f"expected params.{name}"))
        elif want is not None and model["params"][name] != _norm_value(str(want)):
            out.append((f"params.{name} = {model['params'][name]!r} (wrong default)",
                        f"expected params.{name} = {_norm_value(str(want))!r}"))
    for name, path in (oracle.get("includes") or {}).items():
        inc = model["includes"].get(name)
        if not inc:
            out.append(("a required include is missing", f"expected {name} to be included from {_norm_path(path)!r}"))
        elif inc["path"] != _norm_path(path):
            out.append((f"{name} is included from {inc['path']!r} (wrong path)",
                        f"expected {name} included from {_norm_path(path)!r}"))
    for name, spec in (oracle.get("processes") or {}).items():
        proc = model["processes"].get(name)
        if proc is None:
            have = ", ".join(sorted(model["processes"])) or "none"
            out.append((f"a required process is not defined (processes: {have})", f"expected process {name}"))
            continue
        out += _check_process(name, proc, spec or {})
    for name, spec in (oracle.get("workflows") or {}).items():
        wf = model["workflows"].get(name)
        if wf is None:
            if name == "main":
                out.append(("no entry workflow block", ""))
            else:
                have = ", ".join(sorted(w for w in model["workflows"] if w != "main")) or "none"
                out.append((f"a required workflow is not defined (named workflows: {have})",
                            f"expected workflow {name}"))
            continue
        out += _check_workflow(name, wf, spec or {})
    return out


def _check_process(name, proc, spec):
    out = []
    for key in ("inputs", "outputs"):
        if key not in spec:
            continue
        want = [w if isinstance(w, dict) else {"shape": w} for w in spec[key]]
        got = proc[key]
        if len(got) != len(want):
            out.append((f"process {name}: {len(got)} {key[:-1]} declaration(s) (wrong number)",
                        f"process {name}: expected {len(want)} {key[:-1]} declaration(s) "
                        f"({', '.join(w['shape'] for w in want)})"))
            continue
        for i, (g, w) in enumerate(zip(got, want)):
            at = f"process {name}: {key[:-1]} {i + 1}"
            if g["shape"] != w["shape"].replace(" ", ""):
                out.append((f"{at} is `{g['text']}` ({g['shape']}, wrong shape)", f"{at}: expected {w['shape']}"))
            elif "emit" in w and g["emit"] != w["emit"]:
                out.append((f"{at} emits {g['emit']!r} (wrong emit name)", f"{at}: expected emit {w['emit']!r}"))
            elif "optional" in w and g["optional"] != bool(w["optional"]):
                out.append((f"{at} optional is {g['optional']} (wrong)", f"{at}: expected optional {w['optional']}"))
            elif "pattern" in w and not re.search(w["pattern"], g["text"]):
                out.append((f"{at} `{g['text']}` does not match the required pattern",
                            f"{at}: expected a match of /{w['pattern']}/"))
    for d, val in (spec.get("directives") or {}).items():
        if d not in proc["directives"]:
            out.append((f"process {name}: a required directive is missing",
                        f"process {name}: expected directive `{d}`"))
        elif val is not None and not re.fullmatch(str(val), proc["directives"][d]):
            out.append((f"process {name}: directive `{d} {proc['directives'][d]}` has the wrong value",
                        f"process {name}: expected directive `{d}` to match /{val}/"))
    script = " ".join(proc["script"].split())
    for i, pat in enumerate(spec.get("script") or []):
        if not re.search(pat, script):
            out.append((f"process {name}: the script lacks required command {i + 1}",
                        f"process {name}: expected the script to match /{pat}/"))
    for pat in spec.get("script_absent") or []:
        if re.search(pat, script):
            out.append((f"process {name}: the script contains a forbidden command",
                        f"process {name}: expected the script not to match /{pat}/"))
    if "when" in spec and proc["has_when"] != bool(spec["when"]):
        out.append((f"process {name}: when: section {'missing' if spec['when'] else 'not expected'}", ""))
    return out


def _check_workflow(name, wf, spec):
    out, where = [], ("entry workflow" if name == "main" else f"workflow {name}")
    called = [c["name"] for c in wf["calls"]]
    have = ", ".join(dict.fromkeys(called)) or "nothing"
    for c in spec.get("calls") or []:
        if c not in called:
            out.append((f"{where}: a required process or workflow is never called (calls: {have})",
                        f"{where}: expected a call of {c}"))
    if "take" in spec and len(wf["take"]) != spec["take"]:
        out.append((f"{where}: takes {len(wf['take'])} channel(s) (wrong number)",
                    f"{where}: expected to take {spec['take']} channel(s)"))
    for e in spec.get("emit") or []:
        if e not in wf["emit"]:
            out.append((f"{where}: a required emit is missing (emits {', '.join(wf['emit']) or 'nothing'})",
                        f"{where}: expected to emit `{e}`"))
    for e, src in (spec.get("emit_from") or {}).items():
        if e in wf["emit"] and src not in wf["emit"][e]:
            out.append((f"{where}: emit `{e}` does not come from the required source",
                        f"{where}: expected emit `{e}` to come from {src}"))
    for op in spec.get("operators") or []:
        if op not in wf["operators"]:
            out.append((f"{where}: a required operator is not used (operators: {', '.join(wf['operators']) or 'none'})",
                        f"{where}: expected operator `{op}`"))
    for op in spec.get("forbidden_operators") or []:
        if op in wf["operators"]:
            out.append((f"{where}: operator `{op}` must not be used", ""))
    for f in spec.get("feeds") or []:
        calls = [c for c in wf["calls"] if c["name"] == f["to"]]
        if not calls:
            out.append((f"{where}: a required process or workflow is never called (calls: {have})",
                        f"{where}: expected a call of {f['to']}"))
            continue
        ok, seen_ops = False, set()
        for c in calls:
            args = c["args"] if "arg" not in f else c["args"][f["arg"] - 1:f["arg"]]
            for a in args:
                if f["from"] in a:
                    seen_ops |= a[f["from"]]
                    if set(f.get("via") or []) <= a[f["from"]] and not (set(f.get("not_via") or []) & a[f["from"]]):
                        ok = True
        if not ok:
            arg = f" (input {f['arg']})" if "arg" in f else ""
            in_arg = any(f["from"] in a for c in calls
                         for a in (c["args"] if "arg" not in f else c["args"][f["arg"] - 1:f["arg"]]))
            if not in_arg and any(f["from"] in a for c in calls for a in c["args"]):
                out.append((f"{where}: {f['from']} reaches {f['to']} through another input than the required one",
                            f"{where}: expected {f['from']} to reach {f['to']} as input {f['arg']}"))
            elif in_arg:
                need = f"through {', '.join(f.get('via') or [])}" if f.get("via") else ""
                bad = f" without {', '.join(f.get('not_via'))}" if f.get("not_via") else ""
                out.append((f"{where}: {f['from']} reaches {f['to']}{arg}, but not through the required operators "
                            f"(operators on the way: {', '.join(sorted(seen_ops)) or 'none'})",
                            f"{where}: expected {f['from']} to reach {f['to']}{arg} {need}{bad}".rstrip()))
            else:
                out.append((f"{where}: {f['to']}{arg} does not receive data from the required source",
                            f"{where}: expected {f['to']}{arg} to receive data from {f['from']}"))
    for g in spec.get("guards") or []:
        calls = [c for c in wf["calls"] if c["name"] == g["call"]]
        if not calls:
            out.append((f"{where}: a required process or workflow is never called (calls: {have})",
                        f"{where}: expected a call of {g['call']}"))
            continue
        for c in calls:
            pol = _cond_polarity(c["conds"], g["param"])
            if pol is None:
                out.append((f"{where}: {g['call']} is not called under the required condition",
                            f"{where}: expected {g['call']} to be called under a condition on params.{g['param']}"))
                break
            if pol != "mentioned" and "when" in g and pol != bool(g["when"]):
                out.append((f"{where}: {g['call']} runs when params.{g['param']} is {str(pol).lower()} "
                            "(wrong polarity)",
                            f"{where}: expected {g['call']} to run when params.{g['param']} is "
                            f"{str(bool(g['when'])).lower()}"))
                break
    for u in spec.get("unguarded") or []:
        for c in wf["calls"]:
            if c["name"] == u and c["conds"]:
                out.append((f"{where}: {u} must run unconditionally, but is under `{c['conds'][0]}`", ""))
                break
    return out
