"""Loader for MBPP-DFY-style upstream tasks (Dafny translations of MBPP problems).

Layout of `source`:
  *.json / *.jsonl      task records: {task_id, task_description, method_signature, test_cases}
                        (one record, a list of records, or one record per line)
  src/<name>.dfy        the verified solution of a task
  test/<name>.dfy       its test method(s)
where <name> is `task_id_<task_id>` or `<task_id>`. The fixed declaration of our oracle is the
solution's declaration that starts with `method_signature`, taken with all its specification
clauses up to its body. The test is test/<name>.dfy, or, when absent, a method built from
`test_cases` (Dafny statements: a list, or a mapping name -> statements). Records that cannot be
converted (no solution file, signature not in the solution, no test, a forbidden construct in the
solution) are skipped and reported with the reason; a malformed record raises ValueError naming it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

BENCHMARK = "MBPP-DFY"
LICENCE = "upstream licence (see the MBPP-DFY repository); MBPP is CC-BY-4.0"
FIELDS = {"task_id": (str, int), "task_description": str, "method_signature": str}


def _records(source: Path):
    files = sorted(p for p in source.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
    if not files:
        raise ValueError(f"{source}: no task JSON (*.json or *.jsonl) found")
    for f in files:
        text = f.read_text(encoding="utf-8")
        try:
            if f.suffix == ".jsonl":
                items = [json.loads(l) for l in text.splitlines() if l.strip()]
            else:
                data = json.loads(text)
                items = data if isinstance(data, list) else [data]
        except json.JSONDecodeError as e:
            raise ValueError(f"{f.name}: not valid JSON: {e}") from None
        for i, rec in enumerate(items):
            yield f"{f.name} record {i}", rec


def _blank(text: str, strip_re) -> str:
    """Comments and literals replaced by spaces of the same length (positions are kept)."""
    return strip_re.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _declaration(src: str, signature: str, validator_module) -> str | None:
    """The declaration in `src` starting with `signature`, with its clauses, without its body."""
    blank = _blank(src, validator_module._STRIP)
    toks = validator_module.tokens(signature)
    if not toks:
        return None
    pattern = r"\s*".join(re.escape(t) for t in toks)
    m = re.search(r"(?<![A-Za-z0-9_'?])" + pattern, blank)
    if not m:
        return None
    depth, prev = 0, ""
    i = m.end()
    while i < len(blank):
        c = blank[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            nxt = blank[i + 1:].lstrip()[:1]
            if nxt == ":":                       # attribute
                depth += 1
            elif re.search(r"[A-Za-z0-9_'?)\]}>|]$", prev) or prev == "":
                return src[m.start():i].rstrip()
            else:                                # set display inside a clause
                depth += 1
        elif c == "}" and depth > 0:
            depth -= 1
        if not c.isspace():
            prev = blank[max(0, i - 20):i + 1].rstrip()
        i += 1
    return None


def _constructs(gold: str) -> list[str]:
    found = [name for word, name in (("while", "while loop"), ("invariant", "loop invariant"),
                                     ("array", "array"), ("seq", "seq"), ("multiset", "multiset"),
                                     ("forall", "quantifier"), ("exists", "quantifier"), ("lemma", "lemma"),
                                     ("function", "function"), ("predicate", "predicate"),
                                     ("datatype", "datatype"), ("decreases", "decreases"))
             if re.search(rf"\b{word}\b", gold)]
    return list(dict.fromkeys(["method", *found]))


def load(source: Path, validator) -> tuple[list[dict], list[tuple[str, str]]]:
    import sys
    vmod = sys.modules[type(validator).__module__]
    if not source.is_dir():
        raise ValueError(f"{source}: not a directory in the MBPP-DFY layout")
    tasks, skipped, seen = [], [], set()
    for where, rec in _records(source):
        if not isinstance(rec, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        name = f"{where} (task_id {rec.get('task_id')!r})"
        for field, kind in FIELDS.items():
            if field not in rec:
                raise ValueError(f"{name}: missing field '{field}'")
            if not isinstance(rec[field], kind) or isinstance(rec[field], bool) or not str(rec[field]).strip():
                raise ValueError(f"{name}: field '{field}' must be a non-empty "
                                 f"{'string or integer' if field == 'task_id' else 'string'}")
        tid = str(rec["task_id"]).strip()
        if not re.fullmatch(r"[A-Za-z0-9_-]+", tid):
            raise ValueError(f"{name}: field 'task_id' must be letters, digits, - or _")
        if tid in seen:
            raise ValueError(f"{name}: duplicate task_id")
        seen.add(tid)
        cases = rec.get("test_cases", [])
        if isinstance(cases, dict):
            cases = list(cases.values())
        if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
            raise ValueError(f"{name}: field 'test_cases' must be a list of, or a mapping to, Dafny statements")
        stems = [f"task_id_{tid}", tid]
        src = next((source / "src" / f"{s}.dfy" for s in stems if (source / "src" / f"{s}.dfy").is_file()), None)
        if src is None:
            skipped.append((tid, "no solution file src/task_id_<id>.dfy"))
            continue
        gold = src.read_text(encoding="utf-8")
        decl = _declaration(gold, rec["method_signature"], vmod)
        if decl is None:
            skipped.append((tid, "method_signature not found (with a body) in the solution file"))
            continue
        bad = vmod.cheats(gold)
        if bad:
            skipped.append((tid, f"the solution uses a forbidden construct: {bad[0]}"))
            continue
        test_file = next((source / "test" / f"{s}.dfy" for s in stems if (source / "test" / f"{s}.dfy").is_file()),
                         None)
        if test_file is not None:
            test = test_file.read_text(encoding="utf-8")
        elif cases:
            body = "\n".join("  " + line for c in cases for line in c.strip().splitlines())
            test = f"method TestTask_{tid.replace('-', '_')}()\n{{\n{body}\n}}\n"
        else:
            skipped.append((tid, "no test file test/task_id_<id>.dfy and no test_cases"))
            continue
        difficulty = ("hard" if re.search(r"\blemma\b|\bcalc\b", gold) else
                      "medium" if re.search(r"\binvariant\b", gold) else "easy")
        description = rec["task_description"].strip()
        tasks.append({
            "id": f"dafny-mbpp-{tid}", "dsl": "dafny", "domain": "Program Verification",
            "title": description.splitlines()[0][:80],
            "difficulty": difficulty, "constructs": _constructs(gold), "failure_modes": [],
            "instruction": (f"{description}\n\nWrite it in Dafny 2.3 with exactly this signature and specification "
                            f"(keep it unchanged and give it a verified body):\n\n{decl}\n\nThe program is verified "
                            "together with a hidden test method that calls it on concrete inputs and asserts the "
                            "results; do not write a test or a Main method.\n"),
            "gold": gold, "oracle": {"signatures": [decl], "test": test},
            "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": tid, "licence": LICENCE},
            "split": "test", "mutants": [],
        })
    return tasks, skipped
