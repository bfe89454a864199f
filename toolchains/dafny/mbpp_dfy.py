"""Importer for MBPP-DFY as published in Mondego/dafny-synthesis (GPL-3.0).

Layout (a clone of the repository, or its MBPP-DFY-153 folder):
  MBPP-DFY-153/src/task_id_<id>.dfy    the verified solution (Dafny 4 syntax)
  MBPP-DFY-153/test/task_id_<id>.dfy   a copy of the solution's members plus a test method and a Main
  MBPP-san-DFY-228/mbpp-san-dfy-228-all-task-test.json
                                       {"<id>": {task_id, task_description, method_signature, test_cases}}
The JSON's method_signature does not name the solution's members (`kthElement` vs `KthElement`), so
only its description is used. The fixed declarations are the solution's members the test calls
(header and specification clauses; the candidate writes the bodies) and every function, predicate
or datatype those specifications use (whole definitions: a candidate must not redefine them). The
harness is the test file minus the members it re-declares from the solution, so the candidate's own
members are the ones tested.

The solution and test are Dafny 4; our judge is Dafny 2.3. Translated where the meaning is kept
exactly: `function`/`predicate` (compiled in Dafny 4) -> `function method`/`predicate method`,
`ghost function`/`ghost predicate` -> `function`/`predicate`; `for i := lo to hi` -> a block with a
`while i < hi` loop carrying `invariant lo <= i <= hi` (Dafny 4's implicit one) and the loop's own
clauses, when the body assigns no variable of the bounds and uses no `continue`; a test's
`expect E;` -> `if !(E) { print "<marker> check <n>"; return; }` and the task is run after verifying
(oracle `run_main`): the verifier knows E afterwards as with expect, and a failed check is reported.
Anything else Dafny 4-only is skipped as `dafny4_only_construct`.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

BENCHMARK = "MBPP-DFY"
LICENCE = "GPL-3.0 (Mondego/dafny-synthesis); MBPP descriptions CC-BY-4.0"
FOLDER = "MBPP-DFY-153"
JSON_NAME = "mbpp-san-dfy-228-all-task-test.json"
EXPECT_MARKER = "DSLBENCH_EXPECT_FAILED"
START = re.compile(r"^[ \t]*(?:(?:ghost|static|abstract)\s+)*"
                   r"(method|function|predicate|lemma|datatype|codatatype|type|class|const|module|import|include|"
                   r"iterator|trait|newtype|twostate|least|greatest|constructor)\b", re.MULTILINE)
CALLABLE = ("method", "function", "predicate", "lemma")


class Untranslatable(Exception):
    """A Dafny 4 construct with no exact Dafny 2.3 equivalent here (the record is skipped)."""


def find_root(source: Path) -> tuple[Path, Path | None]:
    """(MBPP-DFY-153 folder, description JSON or None) of a clone or of the folder itself."""
    source = Path(source)
    folder = source / FOLDER if (source / FOLDER).is_dir() else source
    if not (folder / "src").is_dir() or not any((folder / "src").glob("task_id_*.dfy")):
        return folder, None
    for base in (folder.parent, source):
        for p in (base / "MBPP-san-DFY-228" / JSON_NAME, base / "Scripts" / "data" / JSON_NAME):
            if p.is_file():
                return folder, p
    return folder, None


# --- text helpers ---------------------------------------------------------------------------------
def blank(text: str, strip_re) -> str:
    """Comments and literals replaced by spaces (positions and newlines kept)."""
    return strip_re.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def match_close(b: str, i: int) -> int:
    """Index of the bracket closing the one at b[i]."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = []
    for k in range(i, len(b)):
        c = b[k]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")}]":
            if not stack or stack.pop() != c:
                raise ValueError(f"unbalanced `{c}` at offset {k}")
            if not stack:
                return k
    raise ValueError(f"unclosed `{b[i]}` at offset {i}")


def members(text: str, strip_re) -> list[dict]:
    """Top-level declarations: {kind, name, start, end} (end after the last `}` of the member)."""
    b = blank(text, strip_re)
    if b.count("{") != b.count("}"):
        raise ValueError(f"unbalanced braces ({b.count('{')} `{{`, {b.count('}')} `}}`)")
    depth, starts, k = 0, [], 0
    for m in START.finditer(b):
        depth += b.count("{", k, m.start()) - b.count("}", k, m.start())
        k = m.start()
        if depth == 0:
            starts.append(m)
    out = []
    for n, m in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(b)
        seg = b[m.start():end]
        last = max(seg.rfind("}"), -1)
        stop = m.start() + last + 1 if last >= 0 else m.start() + len(seg.rstrip())
        kind = m.group(1)
        after = re.match(r"\s*(?:method\s+)?(?:\{:[^}]*\}\s*)*([A-Za-z_][A-Za-z0-9_'?]*)", b[m.end():])
        out.append({"kind": kind, "name": after.group(1) if after else "", "start": m.start(), "end": stop})
    return out


def _body_open(b: str, i: int) -> int:
    """Index of the `{` that opens the body of the declaration starting at b[i] (-1: none).

    A `{` at bracket depth 0 is an attribute `{:...}`, a set display inside a clause (it follows an
    operator or a clause keyword), or the body (it follows the header or the end of a clause)."""
    depth, k = 0, i
    while k < len(b):
        c = b[k]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            prev = b[:k].rstrip()
            if b[k + 1:].lstrip().startswith(":") or re.search(r"([=!&+\-*/%,:(]|\|\||\b(requires|ensures|reads|"
                                                                r"modifies|decreases|in))$", prev):
                k = match_close(b, k) + 1
                continue
            return k
        k += 1
    return -1


# --- Dafny 4 -> Dafny 2.3 -------------------------------------------------------------------------
def translate_functions(text: str, strip_re) -> str:
    """Dafny 4 function syntax in Dafny 2.3 terms (compiled unless marked ghost)."""
    b = blank(text, strip_re)
    if re.search(r"\b(function|predicate)\s+method\b", b):
        raise Untranslatable("`function method` in a Dafny 4 file (mixed syntax)")
    if re.search(r"\bby\s+method\b", b):
        raise Untranslatable("`function ... by method`")
    out, k = [], 0
    for m in re.finditer(r"\b(?:(ghost)\s+)?(function|predicate)\b", b):
        out.append(text[k:m.start()])
        out.append(m.group(2) if m.group(1) else f"{m.group(2)} method")
        k = m.end()
    out.append(text[k:])
    return "".join(out)


LOOP_CLAUSE = re.compile(r"\b(invariant|decreases|modifies)\b")


def translate_for_loops(text: str, strip_re) -> str:
    """`for i := lo to hi <clauses> { body }` as an exactly equivalent while loop (innermost first)."""
    while True:
        b = blank(text, strip_re)
        found = list(re.finditer(r"\bfor\s+([A-Za-z_][A-Za-z0-9_']*)\s*(:\s*[A-Za-z_][A-Za-z0-9_<>]*\s*)?:=", b))
        if not found:
            return text
        m = found[-1]
        var, typ = m.group(1), (m.group(2) or "").strip()
        head_end = _body_open(b, m.end())
        if head_end < 0:
            raise Untranslatable(f"`for {var}` loop without a body")
        head = text[m.end():head_end]
        hb = b[m.end():head_end]
        c = LOOP_CLAUSE.search(hb)
        bounds_b, clauses = (hb[:c.start()], head[c.start():]) if c else (hb, "")
        bounds = head[:len(bounds_b)]
        parts = re.split(r"\b(to|downto)\b", bounds)
        if len(parts) != 3 or parts[1] != "to":
            raise Untranslatable(f"`for {var}` loop that is not `lo to hi` ({bounds.strip()!r})")
        lo, hi = parts[0].strip(), parts[2].strip()
        if hi == "*" or not lo or not hi:
            raise Untranslatable(f"unbounded `for {var}` loop")
        close = match_close(b, head_end)
        body_b = b[head_end + 1:close]
        if re.search(r"\bcontinue\b", body_b):
            raise Untranslatable("`continue` in a `for` loop (no `continue` in Dafny 2.3)")
        # Dafny 4 evaluates the bounds once: exact only if the body assigns none of their variables
        names = set(re.findall(r"(?<![.\w])([A-Za-z_][A-Za-z0-9_']*)", lo + " " + hi)) - {"Length", "old"}
        for lhs in re.findall(r"(?:^|[;{}])\s*([^;{}]*?):=", body_b):
            lhs = re.sub(r"^\s*var\b", "", lhs)
            if "[" not in lo + hi:   # an element update changes no bound unless a bound reads elements
                lhs = re.sub(r"\[[^\]]*\]|\.[A-Za-z_]\w*", "", lhs)
            hit = names & set(re.findall(r"[A-Za-z_][A-Za-z0-9_']*", lhs))
            if hit:
                raise Untranslatable(f"`for {var}` loop whose body assigns its bound {sorted(hit)[0]}")
        indent = re.search(r"[ \t]*$", text[:m.start()]).group(0)
        decl = f"var {var}{(' ' + typ) if typ else ''} := {lo};"
        new = (f"{{\n{indent}{decl}\n{indent}while {var} < {hi}\n{indent}  invariant {lo} <= {var} <= {hi}\n"
               f"{indent}  {clauses.strip()}\n{indent}{{" if clauses.strip() else
               f"{{\n{indent}{decl}\n{indent}while {var} < {hi}\n{indent}  invariant {lo} <= {var} <= {hi}\n{indent}{{")
        new += f"{text[head_end + 1:close]}\n{indent}  {var} := {var} + 1;\n{indent}}}\n{indent}}}"
        text = text[:m.start()] + new + text[close + 1:]


def translate_expects(text: str, strip_re) -> tuple[str, int]:
    """A test's `expect E[, msg];` as a run-time check that ends the method when E is false."""
    n = 0
    while True:
        b = blank(text, strip_re)
        m = re.search(r"(?<![.\w])expect\b", b)
        if not m:
            return text, n
        depth, k = 0, m.end()
        comma = -1
        while k < len(b):
            c = b[k]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    raise Untranslatable("`expect` without its `;`")
            elif c == "," and depth == 0 and comma < 0:
                comma = k
            elif c == ";" and depth == 0:
                break
            k += 1
        else:
            raise Untranslatable("`expect` without its `;`")
        cond = text[m.end():comma if comma >= 0 else k].strip()
        text = (text[:m.start()] + f'if !({cond}) {{ print "{EXPECT_MARKER} check {n + 1}\\n"; return; }}'
                + text[k + 1:])
        n += 1


# Dafny 3/4 constructs Dafny 2.3 does not have and that have no local exact rewrite (found by its parser).
DAFNY4_ONLY = ((re.compile(r"(?<![\w.])seq\s*\("), "the seq(n, f) constructor"),
               (re.compile(r"\bcontinue\b"), "`continue`"),
               (re.compile(r":-"), "the `:-` update-with-failure operator"),
               (re.compile(r"\bopaque\s+(function|predicate)\b"), "`opaque` functions"))


def to_dafny23(text: str, strip_re) -> str:
    text = translate_for_loops(translate_functions(text, strip_re), strip_re)
    b = blank(text, strip_re)
    for pattern, what in DAFNY4_ONLY:
        if pattern.search(b):
            raise Untranslatable(f"{what} (not in Dafny 2.3)")
    return text


# --- one record -----------------------------------------------------------------------------------
def convert(tid: str, rec: dict, folder: Path, vmod, Skip) -> dict | object:
    src_path, test_path = folder / "src" / f"task_id_{tid}.dfy", folder / "test" / f"task_id_{tid}.dfy"
    description = (rec or {}).get("task_description") if isinstance(rec, dict) else None
    if not isinstance(description, str) or not description.strip():
        return Skip(tid, "no_description", f"no task_description for {tid} in {JSON_NAME}")
    if not test_path.is_file():
        return Skip(tid, "no_test", f"no test/task_id_{tid}.dfy")
    strip = vmod._STRIP
    raw_src, raw_test = src_path.read_text(encoding="utf-8"), test_path.read_text(encoding="utf-8")
    if re.search(r"(?<![.\w])expect\b", blank(raw_src, strip)):
        return Skip(tid, "gold_uses_expect", "the solution itself uses `expect` (assumed by the verifier)")
    try:
        gold = to_dafny23(raw_src, strip)
        test = to_dafny23(raw_test, strip)
        test, expects = translate_expects(test, strip)
    except Untranslatable as e:
        return Skip(tid, "dafny4_only_construct", str(e))
    bad = vmod.cheats(gold)
    if bad:
        return Skip(tid, "gold_forbidden_construct", bad[0])
    gmem = members(gold, strip)
    declared = {m["name"]: m for m in gmem if m["name"]}
    # the harness: the test file without the members it re-declares from the solution
    tmem = members(test, strip)
    keep, pos = [], 0
    for m in tmem:
        if m["name"] in declared:
            keep.append(test[pos:m["start"]])
            pos = m["end"]
    harness = ("".join(keep) + test[pos:]).strip() + "\n"
    hb = blank(harness, strip)
    harness_words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_'?]*", hb))
    called = [m for m in gmem if m["name"] in harness_words and m["kind"] in CALLABLE]
    if not called:
        return Skip(tid, "no_tested_member", "the test calls none of the solution's methods or functions")
    # A test that only prints its results (for a human to compare with `//expected` comments) still
    # calls the members (their preconditions are checked); the specification is then the whole oracle,
    # as in upstream's own check (dafny verify).
    spec_only = "assert" not in harness_words and not expects
    gb = blank(gold, strip)

    def words(m):
        return set(re.findall(r"[A-Za-z_][A-Za-z0-9_'?]*", gb[m["start"]:m["end"]]))

    # Whole definitions: every function/predicate/datatype a fixed specification uses (transitively).
    signatures, whole, todo = [], [], []
    for m in called:
        if m["kind"] == "lemma":
            return Skip(tid, "no_tested_member", f"the test calls lemma {m['name']}")
        open_ = _body_open(gb, m["start"])
        if open_ < 0:
            return Skip(tid, "bodyless_member", f"{m['name']} has no body in the solution")
        sig = gold[m["start"]:open_].rstrip()
        signatures.append((m, sig))
        todo.extend(set(re.findall(r"[A-Za-z_][A-Za-z0-9_'?]*", blank(sig, strip))))
    while todo:
        w = todo.pop()
        m = declared.get(w)
        if m is None or w in whole or m["kind"] in ("method", "lemma"):
            continue
        if m["kind"] not in ("function", "predicate", "datatype"):
            return Skip(tid, "unsupported_declaration", f"the specification uses a {m['kind']} ({w})")
        whole.append(w)
        todo.extend(words(m))
    fixed = [sig for m, sig in signatures if m["name"] not in whole]
    fixed += [gold[declared[w]["start"]:declared[w]["end"]] for w in sorted(whole, key=lambda w: declared[w]["start"])]
    oracle = {"signatures": fixed, "test": harness}
    if expects:
        oracle["run_main"] = True
    if spec_only:
        oracle["spec_only"] = True
    difficulty = ("hard" if re.search(r"\blemma\b|\bcalc\b", gb) else
                  "medium" if re.search(r"\binvariant\b", gb) else "easy")
    shown = "\n\n".join(fixed)
    return {
        "id": f"dafny-mbpp-{tid}", "dsl": "dafny", "domain": "Program Verification",
        "title": description.strip().splitlines()[0][:80], "difficulty": difficulty,
        "constructs": constructs(gb), "failure_modes": [],
        "instruction": (f"{description.strip()}\n\nWrite it in Dafny 2.3 with exactly these declarations and "
                        f"specifications (keep them unchanged; give every method or function without a body a "
                        f"verified body; definitions given whole must be included verbatim):\n\n{shown}\n\n"
                        "The program is verified together with a hidden test that calls it on concrete inputs"
                        + (" and is then run" if expects else "") +
                        "; do not write a test or a Main method.\n"),
        "gold": gold, "oracle": oracle,
        "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": tid, "licence": LICENCE},
        "split": "test", "mutants": [],
    }


def constructs(b: str) -> list[str]:
    found = [name for word, name in (("while", "while loop"), ("invariant", "loop invariant"),
                                     ("array", "array"), ("seq", "seq"), ("multiset", "multiset"),
                                     ("forall", "quantifier"), ("exists", "quantifier"), ("lemma", "lemma"),
                                     ("function", "function"), ("predicate", "predicate"),
                                     ("datatype", "datatype"), ("decreases", "decreases"))
             if re.search(rf"\b{word}\b", b)]
    return list(dict.fromkeys(["method", *found]))


def records(folder: Path, json_path: Path):
    """(id, JSON record) per solution file, in id order; ids come from src/task_id_<id>.dfy."""
    data = json.loads(json_path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{json_path.name}: expected an object keyed by task id, got {type(data).__name__}")
    ids = sorted((p.stem[len("task_id_"):] for p in (folder / "src").glob("task_id_*.dfy")),
                 key=lambda s: (len(s), s))
    return [(tid, data.get(tid)) for tid in ids]


# --- mutants of the gold (checked to be killed by the importer's gold check) -----------------------
SPEC_LINE = re.compile(r"^\s*(invariant|decreases|assert|requires|ensures|modifies|reads|var\b[^:]*;)")
FLIPS = ((" + ", " - ", "operator flip + -> -"), (" - ", " + ", "operator flip - -> +"),
         (" <= ", " < ", "operator flip <= -> <"), (" < ", " <= ", "operator flip < -> <="),
         (" >= ", " > ", "operator flip >= -> >"), (" > ", " >= ", "operator flip > -> >="),
         (" == ", " != ", "operator flip == -> !="), (" != ", " == ", "operator flip != -> =="),
         (" && ", " || ", "operator flip && -> ||"), (" || ", " && ", "operator flip || -> &&"),
         (" * ", " + ", "operator flip * -> +"))


def mutant_candidates(gold: str, task: dict, strip_re) -> list[dict]:
    """Up to one operator flip, one constant change and one dropped assignment in the bodies of the
    members the task fixes by signature only (the code a candidate writes), in that order."""
    b = blank(gold, strip_re)
    spans = []
    for m in members(gold, strip_re):
        sig_only = [s for s in task["oracle"]["signatures"] if not s.rstrip().endswith("}")]
        if m["kind"] in ("method", "function", "predicate") and any(gold[m["start"]:].startswith(s) for s in sig_only):
            open_ = _body_open(b, m["start"])
            if open_ >= 0:
                spans.append((open_ + 1, match_close(b, open_)))
    lines, pos, code = gold.split("\n"), 0, []
    for n, line in enumerate(lines):
        if any(a <= pos < z for a, z in spans) and line.strip() and not SPEC_LINE.match(line) \
                and "//" not in line and "/*" not in line and '"' not in line and "'" not in line:
            code.append(n)
        pos += len(line) + 1
    out = []

    def add(n, new, note):
        program = "\n".join(lines[:n] + ([new] if new is not None else []) + lines[n + 1:])
        if program != gold:
            out.append({"level": "semantic", "program": program, "note": f"{note} (line {n + 1})"})
            return True
        return False

    for n in code:
        hit = next(((a, z, note) for a, z, note in FLIPS if a in lines[n]), None)
        if hit and add(n, lines[n].replace(hit[0], hit[1], 1), hit[2]):
            break
    for n in code:
        m = re.search(r"(?<![\w.])(\d+)(?![\w.])", lines[n])
        if m and add(n, lines[n][:m.start()] + str(int(m.group(1)) + 1) + lines[n][m.end():],
                     f"constant change {m.group(1)} -> {int(m.group(1)) + 1}"):
            break
    for n in code:
        if re.match(r"^\s*[A-Za-z_][\w\[\]. +\-]*(,\s*[A-Za-z_][\w\[\]. ]*)*:=[^;]*;\s*$", lines[n]) \
                and not lines[n].lstrip().startswith("var "):
            if add(n, None, "dropped statement"):
                break
    return out
