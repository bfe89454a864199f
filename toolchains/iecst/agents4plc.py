"""Import Agents4PLC (github Luoji-zju/Agents4PLC_release) as its authors publish it.

Layout: benchmark_v1/{easy,medium}.jsonl and benchmark_v2/{medium,hard,high-fidelity}.jsonl. Quirk:
despite the suffix, all but high-fidelity.jsonl hold pretty-printed JSON objects one after another
(one object over many lines), so a file is read as a stream of JSON values, not line by line. Fields:
id, instruction, properties_to_be_validated (PLCverif patterns, or null); only the 21 high-fidelity
records add ground_truth (the reference ST), test_cases and (mostly) difficulty. A record without
reference code has no executable oracle here and is skipped (no_reference_code); so is one whose
reference POU cannot be driven through elementary ports or one-dimensional arrays of them, or reads a
VAR_OUTPUT it never writes (reference_interface gives the code). A VAR_IN_OUT is compared like an output.
Earlier invented fixtures name the reference `code` or `reference_code`: read as well.

A task's oracle runs the reference and the candidate on seeded input sequences (expected_from: gold);
the upstream test_cases are not used: their traces leave inputs out (their notes say so). Most
references are written for Siemens TIA: a `{ S7_Optimized_Access := 'TRUE' }` block attribute (no
behaviour) is taken out of the gold; other vendor syntax stays, and with `check` (dslbench import
--verify) a gold that fails either level here is skipped (gold_fails_syntax, gold_fails_semantic,
gold_unsupported when our evaluator lacks a construct it uses).
"""
from __future__ import annotations

import json
import random
import re
import tempfile
import zlib
from pathlib import Path

from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each, dump_task, one_mutant_per_kind

from .validator import ELEMENTARY, port_type

FOLDERS = ("benchmark_v1", "benchmark_v2")
S7_ATTRIBUTE = re.compile(r"^[ \t]*\{\s*S7_\w+\s*:=\s*'[^']*'\s*\}[ \t]*\n", re.M)


def find_files(source: Path) -> tuple[Path, list[Path]]:
    """(the folder record names are relative to, the *.jsonl files): a clone, a benchmark folder or a file."""
    if source.is_file():
        return source.parent, [source]
    folders = [source / f for f in FOLDERS if (source / f).is_dir()] or [source]
    files = sorted(p for f in folders for p in f.glob("*.jsonl"))
    if not files:
        raise NotThisBenchmark(f"{source}: no {'/ or '.join(FOLDERS)}/ with *.jsonl files "
                               "(give the Agents4PLC_release clone, one of its benchmark folders or a .jsonl file)")
    return source, files


def read_records(path: Path, label: str) -> list[tuple[str, object]]:
    """(record id, record) for each JSON value in the file, one a line or pretty-printed over many. A
    value that does not parse ends the file (nothing after it can be told apart): it is returned as the
    JSONDecodeError in place of a record."""
    text, decoder, i, out = path.read_text(encoding="utf-8"), json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if i >= len(text):
            return out
        line = text.count("\n", 0, i) + 1
        try:
            rec, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            return out + [(f"{label}:{line}", e)]
        rid = rec.get("id") if isinstance(rec, dict) else None
        out.append((f"{label}:{rid if isinstance(rid, (str, int)) and str(rid).strip() else line}", rec))


def load(source: Path, tc, check: bool = False) -> Imported:
    root, files = find_files(Path(source))
    records = [r for p in files for r in read_records(p, p.relative_to(root).as_posix())]
    labels = {}                                       # task id -> record id, to name a gold skipped later

    def convert(record_id: str, rec):
        if isinstance(rec, json.JSONDecodeError):
            raise ValueError(f"not JSON at line {rec.lineno}: {rec.msg} (the rest of the file is not read)")
        if isinstance(rec, dict) and isinstance(rec.get("ground_truth"), str):
            rec = {**rec, "ground_truth": S7_ATTRIBUTE.sub("", rec["ground_truth"])}
        split = record_id.split(":")[0].rsplit("/", 1)[-1].removesuffix(".jsonl")
        task, reason, detail = agents4plc_task(rec, record_id, split)
        if task is None:
            return Skip(record_id, reason, detail)
        labels[task["id"]] = record_id
        return task

    made = convert_each(records, convert, progress=True, total=len(records))
    return check_golds(made, tc, labels) if check else made


def check_golds(made: Imported, tc, labels: dict) -> Imported:
    """The tasks whose gold passes both levels here; the others skipped with the level that failed."""
    from dslbench import pipeline
    from dslbench.tasks import TaskError, load_task_file
    out = Imported(skipped=list(made.skipped))
    with tempfile.TemporaryDirectory(prefix="a4plc-gold-") as d:
        folder = Path(d) / "iecst"                     # the loader wants the folder named after the DSL
        folder.mkdir()
        for task in made.tasks:
            path = folder / f"{task['id']}.yaml"
            path.write_text(dump_task(task), encoding="utf-8")
            try:
                loaded = load_task_file(path, tc.check_oracle)
            except TaskError:
                out.tasks.append(task)                 # write_tasks skips it as invalid_task, with the reason
                continue
            got = pipeline.evaluate("iecst", loaded, task["gold"])
            record = labels.get(task["id"], task["id"])
            for level in ("syntax", "semantic"):
                status = got[level]["status"]
                if status != "pass":                   # unavailable: our evaluator lacks a construct it uses
                    reason = "gold_unsupported" if status == "unavailable" else f"gold_fails_{level}"
                    out.skipped.append(Skip(record, reason, got[level]["diagnostics"][:300]))
                    break
            else:
                out.tasks.append(task)
    return out


# --- Agents4PLC records -> tasks -----------------------------------------------------------------------

HEADER = re.compile(r"^\s*(FUNCTION_BLOCK|FUNCTION|PROGRAM)\s+([A-Za-z_]\w*)\s*(?::\s*([A-Za-z_]\w*))?",
                    re.I | re.M)
SECTION = re.compile(r"\b(VAR_INPUT|VAR_OUTPUT|VAR_IN_OUT)\b(.*?)\bEND_VAR\b", re.I | re.S)


# text that is no statement: comments, pragmas and string literals
NOT_CODE = re.compile(r"\(\*.*?\*\)|/\*.*?\*/|//[^\n]*|\{[^{}]*\}|'[^']*'|\"[^\"]*\"", re.S)


def code_only(code: str) -> str:
    """The code with comments, pragmas and string literals blanked out, at the same offsets: what the
    interface reader, the constant scan and the mutants look at."""
    return NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), code)


def reference_interface(code: str) -> tuple[dict | None, str, str]:
    """POU kind, name, return type and VAR_INPUT/VAR_OUTPUT of the first POU (text scan, nothing run);
    else None, a reason code and the detail."""
    text = code_only(code)
    m = HEADER.search(text)
    if not m:
        return None, "no_pou", "no FUNCTION, FUNCTION_BLOCK or PROGRAM in the reference code"
    kind, name, ret = m.group(1).upper(), m.group(2), m.group(3)
    end = re.search(r"\bEND_" + kind + r"\b", text[m.end():], re.I)
    body = text[m.end(): m.end() + end.start()] if end else text[m.end():]
    ports = {"VAR_INPUT": {}, "VAR_OUTPUT": {}, "VAR_IN_OUT": {}}
    for sec, decls in SECTION.findall(re.sub(r"\{[^{}]*\}", " ", body)):      # pragmas out
        for decl in decls.split(";"):             # every `names : type [:= init]`, arrays and structs too
            if ":" not in decl:
                continue
            names, t = decl.split(":", 1)
            t = " ".join(t.split(":=")[0].split())
            port = port_type(t)
            if port is None:
                return None, "non_elementary_port", (f"port type {t} is neither elementary nor a one-dimensional "
                                                     "array of an elementary type (the oracle drives only those)")
            if (port[1] or 0) > MAX_ARRAY_PORT:
                return None, "array_port_too_large", (f"port type {t}: {port[1]} values for each of "
                                                      f"{SEQUENCES * STEPS} scans would swell the task file "
                                                      f"(at most {MAX_ARRAY_PORT} elements)")
            for n in names.split(","):
                if n.split():
                    ports[sec.upper()][n.split()[0]] = port[2]     # `x AT %IX0.0` is x
    if not ports["VAR_INPUT"]:
        return None, "no_inputs", "the reference POU has no VAR_INPUT to drive"
    statements = body[list(re.finditer(r"\bEND_VAR\b", body, re.I))[-1].end():]
    for out in ports["VAR_OUTPUT"]:
        if (re.search(rf"\b{out}\b", statements, re.I)
                and not re.search(rf"\b{out}\b\s*(\[[^\]]*\])?\s*:=|=>\s*{out}\b", statements, re.I)):
            return None, "output_read_as_parameter", (
                f"VAR_OUTPUT {out} is read but never written: the reference takes it as a setting the caller "
                "writes into the instance (the upstream test cases set it), which our oracle does not drive")
    iface = {"pou": kind, "name": name, "inputs": ports["VAR_INPUT"], "outputs": ports["VAR_OUTPUT"]}
    if ports["VAR_IN_OUT"] and kind != "FUNCTION":
        # the caller's variable, passed by reference: it keeps its value between scans and is compared
        # after each one like an output (a database the block fills, a buffer it sorts)
        iface["in_outs"] = ports["VAR_IN_OUT"]
    if kind == "FUNCTION":
        if not ret or ret.upper() not in ELEMENTARY:
            return None, "no_return_type", "FUNCTION without an elementary return type"
        iface["returns"] = ret.upper()
    elif not ports["VAR_OUTPUT"]:
        return None, "no_outputs", "the reference POU has no VAR_OUTPUT to check"
    return iface, "", ""


INT_RANGE = {"SINT": (-128, 127), "INT": (-32768, 32767), "DINT": (-2**31, 2**31 - 1), "LINT": (-2**63, 2**63 - 1),
             "USINT": (0, 255), "BYTE": (0, 255), "UINT": (0, 65535), "WORD": (0, 65535),
             "UDINT": (0, 2**32 - 1), "DWORD": (0, 2**32 - 1), "ULINT": (0, 2**64 - 1), "LWORD": (0, 2**64 - 1)}


def _boundary_values(code: str) -> list[int]:
    """Each decimal constant of the code and its neighbours (c-1, c, c+1), and 0: inputs there reach the
    branches and limits the reference tests (`level > 100`, `MOD 10`), which uniform draws seldom hit."""
    consts = {int(float(n)) for n in re.findall(r"(?<![\w#.])\d+(?:\.\d+)?(?![\w#])", code_only(code))}
    return sorted({c + d for c in consts | {0} for d in (-1, 0, 1)})


def _compared_values(code: str, name: str) -> list[int]:
    """The constants the code compares input `name` with directly (`Month = 2`, `29 < Day`) and their
    neighbours: where that input's branches turn. A draw from all the code's constants seldom gives
    two inputs their bounds at once (February 29 needs Month = 2 and Day = 29)."""
    text, op = code_only(code), r"(?:<>|<=|>=|<|>|(?<![:<>=])=(?!>))"
    consts = {int(float(c)) for c in re.findall(rf"\b{re.escape(name)}\b\s*{op}\s*(-?\d+(?:\.\d+)?)(?![\w#.])", text, re.I)}
    consts |= {int(float(c)) for c in re.findall(rf"(?<![\w#.])(-?\d+(?:\.\d+)?)\s*{op}\s*\b{re.escape(name)}\b", text, re.I)}
    return sorted({c + d for c in consts for d in (-1, 0, 1)})


def _random_value(rng, t: str, near=(), p_true=0.5):
    """A value of type t: half the time one of `near` (when it fits the type), else a uniform draw over a
    range that also spans `near` (a 4-20 mA scaling tests 1200..7000, far beyond +-100). An array port
    gets a list of such values, one per element."""
    elem, length, _ = port_type(t)
    if length is not None:
        return [_random_value(rng, elem, near, p_true) for _ in range(length)]
    t = t.upper()
    lo, hi = INT_RANGE.get(t, (None, None))
    fits = [v for v in near if lo is None or lo <= v <= hi]
    if t not in ("BOOL", "TIME", "STRING") and fits and rng.random() < 0.5:
        return float(rng.choice(fits)) if t in ("REAL", "LREAL") else rng.choice(fits)
    low, high = min([-100, *fits]), max([100, *fits])
    if t == "BOOL":
        return rng.random() < p_true
    if t in ("REAL", "LREAL"):
        return round(rng.uniform(low, high), 2)
    if t == "TIME":
        return f"T#{rng.randrange(0, 5000, 100)}ms"
    if t == "STRING":
        return rng.choice(["", "A", "OK"])
    if t in ("USINT", "UINT", "UDINT", "ULINT", "BYTE", "WORD", "DWORD", "LWORD"):
        return rng.randint(0, max(199, high))
    return rng.randint(low, high)


def _properties_text(props) -> str:
    lines = []
    for p in props:
        if isinstance(p, dict):
            desc = p.get("property_description") or p.get("description")
            lines.append(f"- {desc}" if desc else f"- {json.dumps(p, sort_keys=True)}")
        else:
            lines.append(f"- {p}")
    return "\n".join(lines)


# long enough for a state machine to go round (a counter to its limit, a sequence through its steps)
SEQUENCES, STEPS = 8, 24
# an array port's values are written out for every scan: 100 elements keep a task file under 1 MB
MAX_ARRAY_PORT = 100


def agents4plc_task(rec, where: str, split_name: str = "") -> tuple[dict | None, str, str]:
    """One Agents4PLC record as (task dict, "", ""), or (None, reason code, detail) when it cannot be
    judged here. A malformed record raises ValueError."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: record is not a JSON object")
    rid = rec.get("id")
    if not isinstance(rid, (str, int)) or not str(rid).strip():
        raise ValueError(f"{where}: record has no 'id'")
    if not isinstance(rec.get("instruction"), str) or not rec["instruction"].strip():
        raise ValueError(f"{where}: record {rid!r}: field 'instruction' must be a non-empty string")
    if not isinstance(rec.get("properties_to_be_validated") or [], list):   # null in a published record
        raise ValueError(f"{where}: record {rid!r}: field 'properties_to_be_validated' must be a list")
    code = rec.get("ground_truth") or rec.get("code") or rec.get("reference_code") or ""
    if not isinstance(code, str) or not code.strip():
        return None, "no_reference_code", "no reference ST code: the formal properties alone give no executable oracle"
    iface, reason, detail = reference_interface(code)
    if iface is None:
        return None, reason, detail
    seed = zlib.crc32(str(rid).encode())
    rng = random.Random(seed)
    near = _boundary_values(code)
    near_input = {n: _compared_values(code, n) or near for n in iface["inputs"]}
    sequences = []
    for s in range(SEQUENCES):
        # after the first sequence each BOOL input leans one way (a reset seldom set, a push often): a state
        # machine or a counter then gets deep, which fair coin flips on every input seldom allow
        p_true = {n: 0.5 if s == 0 else rng.choice((0.1, 0.9)) for n in iface["inputs"]}
        steps = [{"in": {n: _random_value(rng, t, near_input[n], p_true[n]) for n, t in iface["inputs"].items()}}
                 for _ in range(STEPS)]
        sequences.append({"name": f"seeded sequence {s + 1}", "steps": steps})
    oracle = {**iface, "cycle_ms": 100, "tolerance": 1e-6, "expected_from": "gold", "sequences": sequences}
    safe = re.sub(r"[^A-Za-z0-9]+", "-", str(rid)).strip("-").lower()
    props = _properties_text(rec.get("properties_to_be_validated") or [])
    instruction = rec["instruction"].strip()
    instruction += (f"\n\nImplement it as {iface['pou']} {iface['name']} with VAR_INPUT "
                    + ", ".join(f"{n} : {t}" for n, t in iface["inputs"].items())
                    + (", VAR_OUTPUT " + ", ".join(f"{n} : {t}" for n, t in iface["outputs"].items())
                       if iface["outputs"] else "")
                    + (", VAR_IN_OUT " + ", ".join(f"{n} : {t}" for n, t in iface["in_outs"].items())
                       if iface.get("in_outs") else "")
                    + (f", returning {iface['returns']}" if iface.get("returns") else "") + ".")
    if props:
        instruction += "\n\nProperties to be validated:\n" + props
    level = str(rec.get("difficulty") or split_name or "").lower()     # high-fidelity: medium when not given
    difficulty = level if level in ("easy", "medium", "hard") else "medium"
    return {
        "id": f"iecst-a4plc-{safe}", "dsl": "iecst", "domain": "Industrial Automation",
        "title": str(rec.get("title") or f"Agents4PLC {rid}")[:100], "difficulty": difficulty,
        "constructs": [iface["pou"]], "failure_modes": [],
        "instruction": instruction + "\n", "context": {}, "gold": code.strip() + "\n", "oracle": oracle,
        "provenance": {"source": "upstream", "benchmark": "Agents4PLC", "upstream_id": str(rid),
                       "licence": str(rec.get("licence") or "Apache-2.0")},    # the repository's LICENSE
        "split": "test", "mutants": semantic_mutants(code.strip() + "\n", seed),
    }, "", ""


# --- semantic mutants: single slips in the gold's body ------------------------------------------------

POU_HEAD = re.compile(r"\b(FUNCTION_BLOCK|FUNCTION|PROGRAM)\s+[A-Za-z_]\w*", re.I)
# `=` of a comparison, not of `:=`, `<=`, `>=` or a call's `=>`
RELATIONAL = re.compile(r"<>|<=|>=|<|>|(?<![:<>=])=(?!>)")
# written the wrong way round, not off by one: `<` for `<=` often changes nothing where both branches agree
# at the bound (a clamp, a piecewise-linear scale: IF raw < 0 THEN 0.0 ELSE raw * k)
FLIP_REL = {"<>": "=", "=": "<>", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
# a binary + or -: after an operand, not the sign of an exponent (1.0E-5)
ARITHMETIC = re.compile(r"(?<=[\w)\]])(?<!\d[eE])\s*([+\-])")
LOGICAL = re.compile(r"\b(AND|OR)\b", re.I)
# a decimal number that is not part of 16#FF / T#5s / a name, nor a CASE label (`3:`) or a range bound
NUMBER = re.compile(r"(?<![\w#.])(\d+)(\.\d+)?(?![\w#.])(?!\s*:(?!=))(?!\s*\.\.)")
COMPARED = re.compile(r"(<>|<=|>=|<|>|(?<![:<>=])=(?!>))\s*$")
COMPARED_AFTER = re.compile(r"\s*(<>|<=|>=|<|>|=(?!>))")
INITIAL = re.compile(r":=\s*(FALSE|0+(\.0*)?|\d+#0+)\s*;", re.I)
BOOLEAN = re.compile(r"\b(TRUE|FALSE)\b", re.I)
CONDITION = re.compile(r"\b(IF|ELSIF)\b(\s+)(.*?)(\s+)THEN\b", re.I | re.S)
# a simple assignment standing alone as a statement (its own line start, one line)
ASSIGNMENT = re.compile(r"(?m)^[ \t]*[A-Za-z_][\w.]*(\[[^\]\n]*\])?\s*:=[^;\n]*;")


def _body_span(masked: str) -> tuple[int, int, str] | None:
    """Where the statements of the first POU are (from its last END_VAR to its END_ keyword), and its kind."""
    head = POU_HEAD.search(masked)
    if not head:
        return None
    end = re.search(r"\bEND_" + head.group(1) + r"\b", masked[head.end():], re.I)
    stop = head.end() + end.start() if end else len(masked)
    decls = list(re.finditer(r"\bEND_VAR\b", masked[head.end():stop], re.I))
    start = head.end() + decls[-1].end() if decls else head.end()
    return start, stop, head.group(1).upper()


def _sites(gold: str, masked: str, start: int, stop: int, kind: str) -> dict[str, list[tuple[int, int, str, str]]]:
    """Each kind of slip -> its candidate edits (from, to, new text, note), all inside the body."""
    body = masked[start:stop]
    sites: dict[str, list] = {k: [] for k in ("relational", "arithmetic", "logical", "constant", "condition", "drop")}
    for m in RELATIONAL.finditer(body):
        new = FLIP_REL[m.group()]
        sites["relational"].append((m.start(), m.end(), new, f"comparison {m.group()} written as {new}"))
    for m in ARITHMETIC.finditer(body):
        new = "-" if m.group(1) == "+" else "+"
        sites["arithmetic"].append((m.start(1), m.end(1), new, f"operator {m.group(1)} written as {new}"))
    for m in LOGICAL.finditer(body):
        new = "OR" if m.group(1).upper() == "AND" else "AND"
        sites["logical"].append((m.start(), m.end(), new, f"{m.group(1).upper()} written as {new}"))
    for m in NUMBER.finditer(body):
        if COMPARED.search(body[:m.start()]) or COMPARED_AFTER.match(body, m.end()):
            continue      # a bound of a comparison: the relational slip's job (n+1 there is often no change)
        new = str(int(m.group(1)) + 1) + (m.group(2) or "")
        sites["constant"].append((m.start(), m.end(), new, f"constant {m.group()} changed to {new}"))
    for m in BOOLEAN.finditer(body):
        new = "FALSE" if m.group(1).upper() == "TRUE" else "TRUE"
        sites["constant"].append((m.start(), m.end(), new, f"constant {m.group(1).upper()} changed to {new}"))
    for m in CONDITION.finditer(body):
        cond = " ".join(m.group(3).split())
        # negating the condition is the same slip as swapping the THEN and ELSE branches
        sites["condition"].append((m.start(3), m.end(3), f"NOT ({m.group(3)})",
                                   f"{m.group(1).upper()} condition negated (THEN and ELSE swapped): {cond[:60]}"))
    statements = [" ".join(m.group().split()) for m in ASSIGNMENT.finditer(body)]
    for m in ASSIGNMENT.finditer(body):
        if statements.count(" ".join(m.group().split())) > 1:
            continue      # written more than once (a reset repeated in every branch): dropping one rarely shows
        if kind == "FUNCTION" and INITIAL.search(m.group()):
            continue      # a FUNCTION starts every call from 0 / FALSE: writing that is often no change
        # an empty statement keeps an IF branch that held only this one syntactically valid
        sites["drop"].append((m.start(), m.end(), m.group()[:len(m.group()) - len(m.group().lstrip())] + ";",
                              f"statement dropped: {' '.join(gold[start + m.start():start + m.end()].split())[:60]}"))
    return {k: [(a + start, b + start, new, note) for a, b, new, note in v] for k, v in sites.items()}


def semantic_mutants(gold: str, index: int) -> list[dict]:
    """Up to 3 single slips in the statements of the gold's first POU, each of a different kind:
    a comparison turned round (< and >, <= and >=, = and <>), + and - swapped, AND and OR swapped, a
    constant changed (n+1, TRUE and FALSE), an IF condition negated, an assignment dropped. Declarations,
    comments and string literals are never touched. Deterministic: `index` seeds which kinds come first
    and which site of each."""
    masked = code_only(gold)
    span = _body_span(masked)
    if span is None:
        return []
    sites = _sites(gold, masked, *span)
    rng = random.Random(index)
    kinds = [k for k in sites if sites[k]]
    rng.shuffle(kinds)

    def alternatives(kind):   # the kind's sites in a seeded order: the next one if a slip repeats
        for a, b, new, note in rng.sample(sites[kind], len(sites[kind])):
            yield note, gold[:a] + new + gold[b:]

    return one_mutant_per_kind(gold, (alternatives(kind) for kind in kinds))
