"""Pure-text helpers of the Lean 4 validator (no Lean needed): comment/string masking, screening of
forbidden commands, theorem-statement matching, `#print axioms` output parsing, upstream parsing.

Forbidden in candidate proofs, and why:
  sorry, admit              an incomplete proof (elaborates with a warning only)
  axiom                     a new axiom can assert the goal
  native_decide, Lean.ofReduceBool, Lean.trustCompiler
                            trusts the compiler instead of the kernel (adds Lean.ofReduceBool)
  implemented_by, extern    replace a definition's compiled code (with native_decide: unsound)
  unsafe                    unsafe definitions escape the kernel's checks
  debug.skipKernelTC        set_option that skips kernel type checking
  notation, infix, infixl, infixr, prefix, postfix, macro, macro_rules, syntax, elab, elab_rules,
  instance                  could change what the task's statement means while its text stays equal
  #exit                     stops elaboration before the appended axiom check
"""
from __future__ import annotations

import re

STANDARD_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
FORBIDDEN = {
    "sorry": "uses sorry (incomplete proof)",
    "admit": "uses admit (incomplete proof)",
    "axiom": "declares an axiom",
    "native_decide": "uses native_decide (trusts the compiler, not the kernel)",
    "Lean.ofReduceBool": "uses Lean.ofReduceBool (trusts the compiler)",
    "Lean.trustCompiler": "uses Lean.trustCompiler",
    "implemented_by": "uses @[implemented_by]",
    "extern": "uses @[extern]",
    "unsafe": "declares something unsafe",
    "debug.skipKernelTC": "disables kernel type checking",
    "notation": "declares notation (could change the statement's meaning)",
    "infix": "declares notation (could change the statement's meaning)",
    "infixl": "declares notation (could change the statement's meaning)",
    "infixr": "declares notation (could change the statement's meaning)",
    "prefix": "declares notation (could change the statement's meaning)",
    "postfix": "declares notation (could change the statement's meaning)",
    "macro": "declares a macro (could change the statement's meaning)",
    "macro_rules": "declares macro rules (could change the statement's meaning)",
    "syntax": "declares syntax (could change the statement's meaning)",
    "elab": "declares an elaborator (could change the statement's meaning)",
    "elab_rules": "declares elaboration rules (could change the statement's meaning)",
    "instance": "declares an instance (could change the statement's meaning)",
    "#exit": "stops elaboration early (#exit)",
}


def mask(text: str) -> str:
    """Same length: comments (-- and nested /- -/) blanked, string and char literal contents replaced by '_'."""
    out, i, n, depth = list(text), 0, len(text), 0
    while i < n:
        if depth == 0 and text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/-", i):
            depth += 1
            out[i:i + 2] = "  "
            i += 2
        elif depth and text.startswith("-/", i):
            depth -= 1
            out[i:i + 2] = "  "
            i += 2
        elif depth:
            if text[i] != "\n":
                out[i] = " "
            i += 1
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if out[k] != "\n":
                    out[k] = "_"
            i = j + 1
        else:
            i += 1
    return "".join(out)


def screen(text: str) -> list[str]:
    """Forbidden tokens in the program outside comments and strings, as 'line N: reason' (first per token)."""
    m = mask(text)
    found = []
    for token, why in FORBIDDEN.items():
        pat = re.escape(token) if token.startswith("#") else rf"(?<![\w.']){re.escape(token)}(?![\w'])"
        mo = re.search(pat, m)
        if mo:
            found.append((mo.start(), f"line {m.count(chr(10), 0, mo.start()) + 1}: {why}"))
    return [f for _, f in sorted(found)]


def strip_comments(text: str) -> str:
    """The text with its comments (-- and nested /- -/, doc comments too) blanked; strings kept."""
    m = mask(text)
    return "".join(" " if mc == " " and tc not in " \n" else tc for tc, mc in zip(text, m))


def normalize(s: str) -> str:
    """Comments dropped, whitespace collapsed: an upstream statement may carry a comment between its
    binders (miniF2F amc12b_2002_p3), which a candidate need not copy."""
    return " ".join(strip_comments(s).split())


def theorem_statement(text: str, name: str) -> str | None:
    """The statement of `theorem NAME` (binders and type, up to the top-level `:=`), normalized; None if absent."""
    span = statement_span(text, name)
    return normalize(text[span[0]:span[1]]) if span else None


def statement_span(text: str, name: str) -> tuple[int, int] | None:
    """Where the statement of `theorem NAME` lies in the text (after the name, up to its `:=` or first equation)."""
    m = mask(text)
    mo = re.search(rf"(?m)^\s*(?:@\[[^\]]*\]\s*)?(?:protected\s+|private\s+)?(?:theorem|lemma)\s+{re.escape(name)}(?![\w.'])", m)
    if not mo:
        return None
    depth, i, pending = 0, mo.end(), 0
    while i < len(m):
        ch = m[i]
        if ch in "([{⟨⦃":
            depth += 1
        elif ch in ")]}⟩⦄":
            depth -= 1
        elif depth == 0 and LOCAL_BINDING_RE.match(m, i) and not re.match(r"[\w.']", m[i - 1]):
            pending += 1   # `let x := v; ...` inside the statement: its `:=` is not the proof's
        elif depth == 0 and m.startswith(":=", i):
            if not pending:
                return mo.end(), i
            pending -= 1
            i += 1
        elif depth == 0 and ch == "|" and EQUATION_RE.match(m, i) and not m[m.rfind("\n", 0, i) + 1:i].strip():
            return mo.end(), i   # equation-compiler style (`| 0 => ...` opening a line)
        i += 1
    return None


LOCAL_BINDING_RE = re.compile(r"(let|have|letI|haveI)(?![\w'])")
EQUATION_RE = re.compile(r"\|[^\n|]*=>")  # `| pattern => ...`, not the absolute value `|x - 1| ≤ 2`


AXIOMS_RE = re.compile(r"'([^']+)' depends on axioms: \[([^\]]*)\]")
NO_AXIOMS_RE = re.compile(r"'([^']+)' does not depend on any axioms")


def parse_axioms(output: str, name: str) -> list[str] | None:
    """Axioms `#print axioms NAME` reported, [] for none; None when the line is missing."""
    # the exact name only: a `Foo.NAME` proved inside a namespace (where the statement's names may
    # resolve to local redefinitions) is not the top-level theorem the task asks for
    for mo in AXIOMS_RE.finditer(output):
        if mo.group(1) == name:
            return [a.strip() for a in mo.group(2).replace("\n", " ").split(",") if a.strip()]
    for mo in NO_AXIOMS_RE.finditer(output):
        if mo.group(1) == name:
            return []
    return None


def first_error(output: str) -> str:
    """First `error:` message of lean's output without the file path prefix (deterministic)."""
    for line in output.splitlines():
        mo = re.match(r"^(?:.*?):(\d+):(\d+): error:\s*(.*)$", line)
        if mo:
            return f"line {mo.group(1)}:{mo.group(2)}: {mo.group(3)}"[:300]
    for line in output.splitlines():
        if "error" in line.lower():
            return line.strip()[:300]
    return ""


# --- upstream layouts: miniF2F-lean4 (many theorems per file) and PutnamBench (one per file) --------

DECL_RE = re.compile(r"(?m)^(?:/--(?P<doc>(?:(?!-/).|\n)*)-/\s*\n)?(?P<kind>theorem|lemma)\s+(?P<name>[\w.']+)")


def upstream_theorems(text: str) -> list[dict]:
    """Theorems of an upstream file: name, statement, informal doc comment, whether the proof is sorry,
    and the file's imports/opens (needed to elaborate the statement)."""
    m = mask(text)
    out = []
    for mo in DECL_RE.finditer(text):
        if m[mo.start("kind"):mo.end("kind")] != mo.group("kind"):
            continue  # inside a comment or string
        span = statement_span(text[mo.start("kind"):], mo.group("name"))
        if span is None:
            out.append({"name": mo.group("name"), "error": "no `:=` after the statement"})
            continue
        stmt = normalize(text[mo.start("kind") + span[0]:mo.start("kind") + span[1]])
        nxt = DECL_RE.search(text, mo.end())
        proof = text[mo.start("kind") + span[1]: nxt.start() if nxt else len(text)]
        out.append({"name": mo.group("name"), "statement": stmt, "start": mo.start(),
                    "doc": " ".join((mo.group("doc") or "").split()),
                    "sorry": bool(re.search(r"(?<![\w.])sorry(?![\w])", mask(proof)))})
    return out


def header(text: str) -> str:
    """`import`, `open` and `set_option` lines before the first declaration (kept as task context)."""
    lines = []
    for line in text.splitlines():
        if re.match(r"\s*(import|open|set_option|namespace|universe|variable)\b", line):
            lines.append(line.rstrip())
        elif re.match(r"\s*(/--|theorem|lemma|def|abbrev|noncomputable)\b", line):
            break
    return "\n".join(lines)


def imports(text: str) -> list[str]:
    """The modules a file imports (its `import` lines, which Lean allows only at the top)."""
    return re.findall(r"(?m)^\s*import\s+([\w.']+)", mask(text))


def only_imports(text: str) -> bool:
    """A file that is nothing but `import` lines (and comments): an index module such as miniF2F's Test.lean."""
    return all(re.match(r"import\s+[\w.']+$", ln.strip()) for ln in strip_comments(text).splitlines() if ln.strip())


# PutnamBench: `abbrev NAME_solution : T := sorry` with the upstream's answer on the next line as `-- ANSWER`
ABBREV_SORRY_RE = re.compile(r"(?m)^(?:noncomputable\s+)?abbrev\s+(?P<name>[\w.']+)[^\n]*?:=\s*(?P<sorry>sorry)[ \t]*$")


def fill_solutions(preamble: str) -> tuple[str, list[str]]:
    """The preamble with each `abbrev ... := sorry` filled with the answer from the comment that follows
    it (as the upstream's scripts/rewrite_solutions.py reads it), and the names that have no answer."""
    out, last, missing = [], 0, []
    for mo in ABBREV_SORRY_RE.finditer(preamble):
        nxt = re.match(r"\n[ \t]*--(?!-)[ \t]*(\S[^\n]*)", preamble[mo.end():])
        if not nxt:
            missing.append(mo.group("name"))
            continue
        out.append(preamble[last:mo.start("sorry")] + nxt.group(1).strip())
        last = mo.end() + nxt.end()
    out.append(preamble[last:])
    return "".join(out), missing


DECL_START_RE = re.compile(r"(theorem|lemma|def|abbrev|noncomputable|open|set_option|namespace|section|end|variable|"
                           r"universe|example|private|protected|attribute|structure|inductive|@\[|#)(?![\w'])")


def starts_with_preamble(program: str, preamble: str) -> bool:
    """Whether the program begins with the preamble (comments and whitespace aside), the preamble's last
    declaration ending where the preamble does (`:= 12` is not the prefix of `:= 12 + 1`)."""
    prog, pre = normalize(program), normalize(preamble)
    if not pre:
        return True
    if not prog.startswith(pre):
        return False
    rest = prog[len(pre):]
    return rest == "" or (rest.startswith(" ") and bool(DECL_START_RE.match(rest[1:])))


# --- semantic mutants of an imported statement (killed by the exact-statement check) -------------------

OPENERS, CLOSERS = "([{⟨⦃", ")]}⟩⦄"


def split_statement(stmt: str) -> tuple[str, str] | None:
    """(binders, conclusion): the statement split at its first colon outside brackets."""
    m, depth = mask(stmt), 0
    for i, ch in enumerate(m):
        if ch in OPENERS:
            depth += 1
        elif ch in CLOSERS:
            depth -= 1
        elif ch == ":" and depth == 0 and not m.startswith(":=", i) and not m.startswith("::", i) and m[i - 1:i] != ":":
            return stmt[:i], stmt[i + 1:]
    return None


def _binder_groups(binders: str) -> list[tuple[int, int]]:
    """Spans of the top-level bracketed binder groups."""
    spans, depth, start = [], 0, 0
    for i, ch in enumerate(mask(binders)):
        if ch in OPENERS:
            if depth == 0:
                start = i
            depth += 1
        elif ch in CLOSERS:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


RELATION_FLIPS = [(" = ", " ≠ "), (" ≠ ", " = "), (" ≤ ", " < "), (" < ", " ≤ "), (" ≥ ", " > "), (" > ", " ≥ ")]
OPERATOR_FLIPS = [(" + ", " - "), (" - ", " + "), (" * ", " + "), (" ∧ ", " ∨ "), (" ∨ ", " ∧ ")]
NUMBER_RE = re.compile(r"(?<![\w.'])[0-9]+(?![\w.'])")


def change_constant(expr: str) -> str | None:
    """The last integer literal (outside comments and strings) plus one."""
    found = list(NUMBER_RE.finditer(mask(expr)))
    if not found:
        return None
    mo = found[-1]
    return expr[:mo.start()] + str(int(mo.group()) + 1) + expr[mo.end():]


def flip_first(expr: str, flips) -> tuple[str, str] | None:
    """The expression with the first (leftmost) of the given operators swapped, and a note."""
    m = mask(expr)
    hits = [(m.find(a), a, b) for a, b in flips if m.find(a) >= 0]
    if not hits:
        return None
    i, a, b = min(hits)
    return expr[:i] + b + expr[i + len(a):], f"{a.strip()} replaced by {b.strip()}"


def statement_mutants(stmt: str) -> list[tuple[str, str]]:
    """A few wrong statements made from the right one: a changed constant and a flipped relation or
    operator in the conclusion, a dropped hypothesis (one whose name nothing else uses). Each differs
    from the statement after normalization, so the exact-statement check must reject it."""
    parts = split_statement(stmt)
    if parts is None:
        return []
    binders, concl = parts
    out = []
    changed = change_constant(concl)
    if changed is not None:
        out.append((f"{binders}:{changed}", "constant in the conclusion changed"))
    flipped = flip_first(concl, RELATION_FLIPS) or flip_first(concl, OPERATOR_FLIPS)
    if flipped:
        out.append((f"{binders}:{flipped[0]}", f"conclusion: {flipped[1]}"))
    for a, b in reversed(_binder_groups(binders)):
        group = binders[a:b]
        names = split_statement(group[1:-1])
        if group[0] != "(" or names is None:
            continue
        rest = binders[:a] + binders[b:] + concl
        if not any(re.search(rf"(?<![\w.']){re.escape(n)}(?![\w'])", mask(rest)) for n in names[0].split()):
            out.append((f"{binders[:a].rstrip()} {binders[b:].lstrip()}".strip() + f" :{concl}",
                        f"hypothesis {' '.join(names[0].split())} dropped"))
            break
    return [(s, note) for s, note in out if normalize(s) != normalize(stmt)]
