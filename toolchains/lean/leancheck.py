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


def normalize(s: str) -> str:
    return " ".join(s.split())


def theorem_statement(text: str, name: str) -> str | None:
    """The statement of `theorem NAME` (binders and type, up to the top-level `:=`), normalized; None if absent."""
    m = mask(text)
    mo = re.search(rf"(?m)^\s*(?:@\[[^\]]*\]\s*)?(?:protected\s+|private\s+)?(?:theorem|lemma)\s+{re.escape(name)}(?![\w.'])", m)
    if not mo:
        return None
    depth, i = 0, mo.end()
    while i < len(m):
        ch = m[i]
        if ch in "([{⟨":
            depth += 1
        elif ch in ")]}⟩":
            depth -= 1
        elif depth == 0 and m.startswith(":=", i):
            return normalize(text[mo.end():i])
        elif depth == 0 and m.startswith("|", i) and m[i - 1] in " \n":
            return normalize(text[mo.end():i])   # equation-compiler style definition
        i += 1
    return None


AXIOMS_RE = re.compile(r"'([^']+)' depends on axioms: \[([^\]]*)\]")
NO_AXIOMS_RE = re.compile(r"'([^']+)' does not depend on any axioms")


def parse_axioms(output: str, name: str) -> list[str] | None:
    """Axioms `#print axioms NAME` reported, [] for none; None when the line is missing."""
    for mo in AXIOMS_RE.finditer(output):
        if mo.group(1).split(".")[-1] == name.split(".")[-1] or mo.group(1) == name:
            return [a.strip() for a in mo.group(2).replace("\n", " ").split(",") if a.strip()]
    for mo in NO_AXIOMS_RE.finditer(output):
        if mo.group(1) == name or mo.group(1).split(".")[-1] == name.split(".")[-1]:
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
        stmt = theorem_statement(text[mo.start("kind"):], mo.group("name"))
        if stmt is None:
            out.append({"name": mo.group("name"), "error": "no `:=` after the statement"})
            continue
        after = text[mo.start("kind"):]
        proof_start = after.find(":=", len(after) - len(after.lstrip()))
        nxt = DECL_RE.search(text, mo.end())
        proof = text[mo.start("kind") + proof_start + 2: nxt.start() if nxt else len(text)]
        out.append({"name": mo.group("name"), "statement": stmt, "start": mo.start(),
                    "doc": normalize(mo.group("doc") or ""),
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
