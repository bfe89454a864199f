"""Import VerilogEval v2 spec-to-rtl (github NVlabs/verilog-eval) as its authors publish it.

Layout: dataset_spec-to-rtl/ with, per problem, ProbNNN_<name>_prompt.txt (the specification),
ProbNNN_<name>_ref.sv (the reference, `module RefModule`) and ProbNNN_<name>_test.sv (module tb:
stimulus, RefModule and TopModule side by side, "Mismatches: N in M samples" at the end); plus
problems.txt (the list), and strays the importer ignores (problems-temp.txt, Prob062_bugs_mux2.sv).

A task's gold is the reference renamed to TopModule; its oracle is the upstream testbench with the
reference (validator.py runs them by the upstream rules), so imported gold passes where it passes
upstream. When iverilog is here, each gold is run through both levels at import and a gold the
upstream testbench itself fails is skipped with its reason; a few semantic mutants of the gold
(operator flip, constant change, dropped inversion) are kept when the testbench kills them.
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

from dslbench.sandbox import new_workdir
from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each

BENCHMARK = "VerilogEval v2 spec-to-rtl"
LICENCE = "MIT"
DATASET = "dataset_spec-to-rtl"
PROMPT = re.compile(r"^(Prob(\d{3})_\w+)_prompt\.txt$")
TOP, REF = "TopModule", "RefModule"
MUTANTS_KEPT = 3
MUTANTS_TRIED = 10          # candidates tried per task at most (the kill rate is over those that compile)
PORT_WORDS = {"input", "output", "inout", "reg", "wire", "logic", "signed", "unsigned", "var", "bit", "integer"}
CONSTRUCTS = [(r"always\s*@\s*\(\s*(posedge|negedge)", "edge-triggered always block"),
              (r"\balways_ff\b", "always_ff"), (r"\balways_comb\b", "always_comb"),
              (r"always\s*@\s*\(\s*\*\s*\)", "combinational always block"),
              (r"\bcase[zx]?\b", "case statement"), (r"\bassign\b", "continuous assignment"),
              (r"\bfor\s*\(", "for loop"), (r"\b(localparam|parameter)\b", "parameters"),
              (r"\?", "conditional operator"), (r"\bgenerate\b", "generate")]

# (note, pattern, replacement): single-site edits of the gold, on code with comments blanked
MUTATIONS = [
    ("operator flip & -> |", r"(?<![&|~^])&(?![&])", "|"),
    ("operator flip | -> &", r"(?<![|&~^])\|(?![|])", "&"),
    ("operator flip ^ -> |", r"(?<![~])\^(?![~])", "|"),
    ("operator flip && -> ||", r"&&", "||"),
    ("operator flip || -> &&", r"\|\|", "&&"),
    ("operator flip == -> !=", r"(?<![=!<>])==(?!=)", "!="),
    ("operator flip != -> ==", r"!=(?!=)", "=="),
    ("operator flip + -> -", r"(?<![+])\+(?![+:])", "-"),
    ("operator flip - -> +", r"(?<![-])-(?![-:>])", "+"),
    ("operator flip < -> >", r"(?<![<])<(?![<=])", ">"),
    ("operator flip > -> <", r"(?<![->=])>(?![>=])", "<"),
    ("dropped inversion ~", r"~(?![&|^])", ""),
    ("constant change", r"\b\d+\s*'[sS]?[bBhHdD][0-9a-fA-F_]+", None),
    ("index change", r"(?<=\w)\[\d+\]", None),
    # the right-hand side of an assignment (continuous, blocking or non-blocking) inverted
    ("inverted assignment", r"(?<![\w\[(.])(?:\b[A-Za-z_]\w*(?:\[[^\]]*\])?|\{[^{}=;]*\})\s*<?=\s*(?!=)[^;]+;", None),
]
NOT_ASSIGNMENTS = re.compile(r"\b(for|parameter|localparam|genvar|typedef|enum|if)\b")


def blank_comments(text: str) -> str:
    """The text with comments and strings replaced by spaces of the same length (offsets kept)."""
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"',
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.DOTALL)


def find_dataset(source: Path) -> Path:
    if not source.is_dir():
        raise NotThisBenchmark(f"{source}: not a folder (give the verilog-eval clone or its {DATASET}/ folder)")
    if source.name.startswith("dataset_code-complete"):
        raise NotThisBenchmark(f"{source}: the code-completion variant; give {DATASET}/ (spec-to-rtl)")
    for folder in (source / DATASET, source):
        if folder.is_dir() and any(PROMPT.match(p.name) for p in folder.iterdir()):
            return folder
    raise NotThisBenchmark(f"{source}: no {DATASET}/ folder and no ProbNNN_<name>_prompt.txt files "
                           f"(give the verilog-eval clone or its {DATASET}/ folder)")


def problem_names(folder: Path) -> list[str]:
    """problems.txt order first (the published list), then any prompt file it does not list."""
    listed = []
    if (folder / "problems.txt").is_file():
        listed = [l.strip() for l in (folder / "problems.txt").read_text().splitlines() if l.strip()]
    found = sorted(m.group(1) for p in folder.iterdir() if (m := PROMPT.match(p.name)))
    return list(dict.fromkeys([*listed, *found]))


def module_ports(text: str, name: str) -> list[str] | None:
    """Port names in the header of `module name (...)`, ANSI or not; None when there is no such module."""
    m = re.search(rf"\bmodule\s+{name}\b\s*(?:#\s*\((?:[^()]|\([^()]*\))*\)\s*)?\(([^;]*?)\)\s*;", blank_comments(text),
                  re.DOTALL)
    if not m:
        return None
    ports = []
    for piece in m.group(1).split(","):
        words = [w for w in re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", " ", piece)) if w not in PORT_WORDS]
        if words:
            ports.append(words[-1])
    return ports


def instance_ports(testbench: str, module: str) -> list[str] | None:
    """Named port connections (.p(x) or .p) of the testbench's instance of `module`."""
    m = re.search(rf"\b{module}\s+\w+\s*\(((?:[^()]|\([^()]*\))*)\)\s*;", blank_comments(testbench), re.DOTALL)
    return re.findall(r"\.\s*(\w+)", m.group(1)) if m else None


def difficulty(ref: str) -> str:
    """VerilogEval has no difficulty label: the reference's size stands in (about thirds of the set)."""
    lines = [l for l in blank_comments(ref).splitlines() if l.strip()]
    return "easy" if len(lines) <= 10 else "medium" if len(lines) <= 22 else "hard"


def mutant_candidates(gold: str) -> list[tuple[str, str]]:
    """(note, program) single-site edits of the gold, at most two sites per kind, in a fixed order."""
    code, out = blank_comments(gold), []
    module_start = code.find(")", code.find(TOP))  # edit the body, not the port list
    for note, pattern, repl in MUTATIONS:
        sites = []
        for m in re.finditer(pattern, code):
            line_start = code.rfind("\n", 0, m.start()) + 1
            before = code[line_start:m.start()]
            if m.start() < module_start or before.count("[") > before.count("]"):
                continue  # in the port list or inside a range / select: a width, not logic
            if note == "inverted assignment" and (NOT_ASSIGNMENTS.search(code[line_start:code.find("\n", m.start())])
                                                  or re.search(r"'[bBhHdD]?\s*[xXzZ?]", m.group(0))):
                continue  # a loop bound, a parameter, a comparison, or an x/z value (~x is x), not a signal's value
            sites.append(m)
        for m in (sites[:1] + sites[len(sites) // 2:][:1]) if len(sites) > 1 else sites:
            text = m.group(0)
            new = repl if repl is not None else edited(note, text)
            if new is None or new == text:
                continue
            line = gold.count("\n", 0, m.start()) + 1
            program = gold[:m.start()] + new + gold[m.end():]
            if all(p != program for _, p in out):
                out.append((f"{note} (line {line}: {text.strip()} -> {new.strip() or 'nothing'})", program))
    return out


def edited(note: str, text: str) -> str | None:
    """The replacement text of a site for the kinds that compute it."""
    if note == "index change":  # [n] -> its neighbour bit
        return f"[{int(text[1:-1]) ^ 1}]"
    if note == "inverted assignment":
        lhs, rhs = re.match(r"(.*?<?=\s*)(.*);$", text, re.DOTALL).groups()
        return f"{lhs}~({rhs.strip()});"
    return changed_constant(text)


def changed_constant(text: str) -> str | None:
    """The sized constant with its last digit changed (a bit flipped for binary)."""
    m = re.match(r"(\d+\s*'[sS]?)([bBhHdD])([0-9a-fA-F_]+)$", text)
    digits = m.group(3).rstrip("_")
    base = {"b": 2, "d": 10, "h": 16}[m.group(2).lower()]
    last = int(digits[-1], 16)
    if last >= base:
        return None
    return m.group(1) + m.group(2) + digits[:-1] + "0123456789abcdef"[(last + 1) % base]


def _judge(tc, iverilog: list[str], program: str, oracle: dict) -> tuple[str, str, str]:
    """('' | 'syntax' | 'semantic', diagnostics, log): both levels, as the validator judges them."""
    work = new_workdir("dslbench-import-")
    try:
        (work / tc.file_name).write_text(program)
        syn = tc.run([*iverilog, "-t", "null", tc.file_name], work)
        if syn.returncode != 0 or syn.timed_out:
            return "syntax", (syn.stderr + syn.stdout).strip()[:300], syn.stderr + syn.stdout
        status, why, result, _ = tc.upstream_testbench(tc.file_name, oracle, work)
        return ("" if status == "pass" else "semantic"), why, result.stdout + result.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load(source: Path, tc, check: bool | None = None) -> Imported:
    """Tasks and skips from the published layout; `check` (default: iverilog is here) runs the gold
    and the mutant candidates, otherwise the tasks are written unchecked and without mutants."""
    folder = find_dataset(Path(source))
    names = problem_names(folder)
    if check is None:
        check = shutil.which("iverilog") is not None and shutil.which("vvp") is not None
    validator = sys.modules[type(tc).__module__]  # the validator module: its iverilog flags
    stats = {"tried": 0, "killed": 0, "survived": []}

    def convert(name: str, _):
        files = {kind: folder / f"{name}_{kind}" for kind in ("prompt.txt", "ref.sv", "test.sv")}
        missing = [p.name for p in files.values() if not p.is_file()]
        if missing:
            return Skip(name, "missing_file", f"no {', '.join(missing)}")
        prompt, ref, test = (files[k].read_text(encoding="utf-8") for k in ("prompt.txt", "ref.sv", "test.sv"))
        if not prompt.strip():
            return Skip(name, "malformed_record", "the prompt file is empty")
        ref_ports = module_ports(ref, REF)
        if ref_ports is None:
            return Skip(name, "no_reference_module", f"{name}_ref.sv declares no `module {REF}`")
        oracle = {"top": TOP, "testbench": test, "reference": ref}
        problems = tc.check_oracle(SimpleNamespace(oracle=oracle))
        if problems:
            return Skip(name, "unsupported_testbench", "; ".join(f"{k}: {v}" for k, v in problems))
        for module in (REF, TOP):
            connected = instance_ports(test, module)
            if connected is None:
                return Skip(name, "unsupported_testbench", f"the testbench does not instantiate {module}")
            unknown = sorted(set(connected) - set(ref_ports))
            if unknown:  # the upstream testbench itself does not elaborate with its reference
                return Skip(name, "testbench_port_mismatch",
                            f"the testbench connects {unknown} to {module}, the reference has ports {ref_ports}")
        gold = re.sub(rf"\b{REF}\b", TOP, ref)
        mutants = []
        if check:
            failed, why, log = _judge(tc, validator.IVERILOG, gold, oracle)
            if failed:
                reason = ("toolchain_unsupported" if "sorry:" in log else
                          "upstream_testbench_timeout" if "TIMEOUT" in why else "gold_fails_upstream_testbench")
                return Skip(name, reason, f"gold fails the {failed} level: {' / '.join(why.splitlines())}")
            for note, program in mutant_candidates(gold)[:MUTANTS_TRIED]:
                failed, _, _ = _judge(tc, validator.IVERILOG, program, oracle)
                if failed == "syntax":
                    continue  # not a semantic mutant
                stats["tried"] += 1
                if not failed:
                    stats["survived"].append((name, note))
                else:
                    stats["killed"] += 1
                    if len(mutants) < MUTANTS_KEPT:
                        mutants.append({"level": "semantic", "program": program, "note": note})
        num, label = name.split("_", 1)
        return {
            "id": f"verilogeval-{num.lower()}",
            "dsl": "verilog",
            "domain": tc.card.get("domain", "Hardware Design"),
            "title": f"VerilogEval {num}: {label.replace('_', ' ')}",
            "difficulty": difficulty(ref),
            "constructs": [c for pattern, c in CONSTRUCTS if re.search(pattern, blank_comments(ref))] or ["module"],
            "failure_modes": [],
            "instruction": prompt.strip() + "\n",
            "gold": gold,
            "oracle": oracle,
            "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": name, "licence": LICENCE},
            "split": "test",
            "mutants": mutants,
        }

    # the simulations dominate: records are converted in parallel, collected in order by convert_each
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        futures = {name: pool.submit(convert, name, None) for name in names}
        made = convert_each(((n, None) for n in names), lambda n, _: futures[n].result(), progress=True,
                            total=len(names))
    made.mutant_stats = stats  # candidates that compiled, were killed, survived (for tests and the report)
    return made
