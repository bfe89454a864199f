"""Verilog: syntax = iverilog compiles the candidate; semantic = its simulated output trace equals the gold's.

The oracle gives the port list and the stimuli:
  top: name of the module to build
  inputs: {name: width, ...}            outputs: {name: width, ...}
  clock: clk                            (optional: sequential design, rising edge)
  reset: {name: rst, active: 1, cycles: 2}   (optional; the reset input is also listed in inputs)
  directed: [{name: value, ...}, ...]   (optional vectors applied first; missing inputs are 0, a
                                         missing reset is held inactive)
  random: 64                            (number of seeded random vectors)
  seed: 1
Outputs are printed bitwise (%b): an x or z in one bit must match exactly (in %h one x bit would
mask a whole hex digit and hide e.g. an `&` -> `|` slip). Inputs are always known, so %h.

An imported VerilogEval task gives the upstream oracle instead of a port list (see verilogeval.py):
  top: TopModule
  testbench: text                       the upstream testbench (module tb, instantiates RefModule and
                                         TopModule, prints "Mismatches: N in M samples")
  reference: text                       the upstream reference model (module RefModule)
The candidate passes when the upstream rules pass it (scripts/sv-iv-analyze): it elaborates with
the testbench, no error/TIMEOUT/no-sensitivity message, and 0 mismatches.
"""
import hashlib
import re
import secrets
from pathlib import Path

from dslbench.toolchains import Toolchain

IVERILOG = ["iverilog", "-g2012", "-Wall", "-Wno-timescale"]
TB_NAMES = ("tb_seed", "tb_vec", "tb_i")  # testbench variables: no port may use these names


def _rand_expr(width: int) -> str:
    # $random is 32 bits wide: concatenate enough of them, then the assignment truncates.
    n = (width + 31) // 32
    return "{" + ", ".join(["$random(tb_seed)"] * n) + "}" if n > 1 else "$random(tb_seed)"


def testbench(oracle: dict, tag: str) -> str:
    """A self-contained testbench printing one `tag`-prefixed line of outputs per vector."""
    ins, outs = oracle["inputs"], oracle["outputs"]
    clock = oracle.get("clock")
    reset = oracle.get("reset")
    decl = [f"  reg [{w - 1}:0] {n};" for n, w in ins.items()]
    if clock:
        decl.append(f"  reg {clock};")
    decl += [f"  wire [{w - 1}:0] {n};" for n, w in outs.items()]
    ports = [*ins, *([clock] if clock else []), *outs]
    fmt = " ".join(f"{n}=%h" for n in ins) + " | " + " ".join(f"{n}=%b" for n in outs)
    args = ", ".join([*ins, *outs])
    show = f'$display("{tag} %0d {fmt}", tb_vec, {args});'
    step = (f"@(posedge {clock}); #1; {show} tb_vec = tb_vec + 1; @(negedge {clock});" if clock
            else f"#5; {show} tb_vec = tb_vec + 1;")
    lines = [f"module dslbench_tb_{tag[2:]};", *decl, f"  integer {', '.join(TB_NAMES)};",
             f"  {oracle['top']} dut(" + ", ".join(f".{p}({p})" for p in ports) + ");"]
    if clock:
        lines.append(f"  always #5 {clock} = ~{clock};")
    body = [f"    tb_seed = {int(oracle.get('seed', 1))}; tb_vec = 0;"]
    body += [f"    {n} = 0;" for n in ins]
    if clock:
        body.append(f"    {clock} = 0;")
    if reset:
        r, active, cycles = reset["name"], int(reset.get("active", 1)), int(reset.get("cycles", 2))
        body.append(f"    {r} = {active};")
        body.append(f"    repeat ({cycles}) @(negedge {clock});" if clock else "    #5;")
        body.append(f"    {r} = {1 - active};")
    hold = {reset["name"]: 1 - int(reset.get("active", 1))} if reset else {}
    for vector in oracle.get("directed", []):
        body.append("    " + " ".join(f"{n} = {int(vector.get(n, hold.get(n, 0)))};" for n in ins) + " " + step)
    rand = " ".join(f"{n} = {hold[n]};" if n in hold else f"{n} = {_rand_expr(w)};" for n, w in ins.items())
    body.append(f"    for (tb_i = 0; tb_i < {int(oracle.get('random', 0))}; tb_i = tb_i + 1) begin {rand} {step} end")
    body.append("    $finish;")
    return "\n".join(["`timescale 1ns/1ps", *lines, "  initial begin", *body, "  end", "endmodule", ""])


# --- the upstream VerilogEval testbench as oracle ---------------------------------------------------
# The upstream harness (Makefile.in): iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb, files
# candidate, test, ref; then the simulation with `timeout 30`.
UPSTREAM_IVERILOG = ["iverilog", "-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb"]
UPSTREAM_TIMEOUT_S = 30
MISMATCH_DISPLAY = '"Mismatches: %1d in %1d samples"'
# sv-iv-analyze fails a log on these (besides "syntax error" / "error" / TIMEOUT), whatever the mismatches
UPSTREAM_FAIL_MARKS = ("always_comb process has no sensitivities", "found no sensitivities so it will never trigger",
                       "is declared here as wire", "Unknown module type")
_COMMENTS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.DOTALL)
_MODULE = re.compile(r"\b(?:module|macromodule|program|interface|package)\s+(\w+)")
_INSTANCE = re.compile(r"^\s*(\w+)\s+(\w+)\s*\(", re.MULTILINE)


def strip_comments(text: str) -> str:
    """Verilog text with comments and string literals blanked."""
    return _COMMENTS.sub(" ", text)


def declared_modules(text: str) -> set[str]:
    return set(_MODULE.findall(strip_comments(text)))


def upstream_scopes(oracle: dict) -> set[str]:
    """Names a candidate could use to reach into the testbench: its modules and instances, tb's variables."""
    tb, ref = strip_comments(oracle["testbench"]), strip_comments(oracle["reference"])
    modules = declared_modules(tb) | declared_modules(ref)
    instances = {inst for mod, inst in _INSTANCE.findall(tb) if mod in modules | {oracle["top"]}}
    return modules | instances | {"stats1", "$root", "$unit"}


def cheats_upstream(program: str, oracle: dict) -> str:
    """Why the candidate could pass the upstream testbench without doing the work ('' when it cannot):
    a module of the testbench's own (a second `tb` or `RefModule`) or a hierarchical name into it
    (`good1.out` resolves upwards to the reference's output)."""
    code = strip_comments(program)
    own = declared_modules(code) & (declared_modules(oracle["testbench"]) | declared_modules(oracle["reference"]))
    if own:
        return f"the design declares module(s) {sorted(own)} that the testbench defines"
    for name in sorted(upstream_scopes(oracle)):
        if re.search(rf"(?<![\w$.]){re.escape(name)}\s*\.\s*[A-Za-z_]", code):
            return f"the design reaches into the testbench with a hierarchical name ({name}.)"
    return ""


def tagged_testbench(testbench: str, tag: str) -> str:
    """The upstream testbench, its final report line prefixed with `tag` (the candidate cannot print it)."""
    return testbench.replace(MISMATCH_DISPLAY, f'"{tag} Mismatches: %1d in %1d samples"')


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # iverilog compiles
    SEMANTIC_FAIL = "wrong_output"  # testbench simulation

    BINARIES = {"iverilog": (["iverilog", "-V"], r"version\s+(\S+)"), "vvp": None}
    INSTALL_HINT = "Debian package iverilog"

    def describe(self, versions):
        return f"Icarus Verilog {versions['iverilog']}"

    def oracle_rules(self, task):
        o, problems = task.oracle, []
        if "testbench" in o:
            if "tb" not in declared_modules(o["testbench"]):
                problems.append(("testbench", "no `module tb` (the upstream top level)"))
            if MISMATCH_DISPLAY not in o["testbench"]:
                problems.append(("testbench", f"no final report {MISMATCH_DISPLAY}"))
            if o["top"] in declared_modules(o["testbench"]) | declared_modules(o["reference"]):
                problems.append(("top", f"module {o['top']} is defined by the testbench or the reference"))
            return problems
        ports = [*o["inputs"], *o["outputs"]]
        clash = sorted(set(ports) & set(TB_NAMES))
        if clash:
            problems.append(("inputs", f"port names {clash} are reserved by the testbench"))
        if o.get("clock") in ports:
            problems.append(("clock", "the clock is driven by the testbench: do not list it in inputs/outputs"))
        if len(set(ports)) != len(ports):
            problems.append(("outputs", "a port is listed both as input and output"))
        if "reset" in o and o["reset"]["name"] not in o["inputs"]:
            problems.append(("reset.name", "the reset must also be listed in inputs"))
        for i, vec in enumerate(o.get("directed", [])):
            unknown = set(vec) - set(o["inputs"])
            if unknown:
                problems.append((f"directed[{i}]", f"unknown inputs {sorted(unknown)}"))
        if not o.get("directed") and not o.get("random"):
            problems.append(("random", "give directed vectors or a number of random vectors"))
        return problems

    def syntax(self, program, task, work):
        result = self.run([*IVERILOG, "-t", "null", self.file_name], work)
        if result.timed_out:
            return self.verdict("fail", "iverilog timed out", result)
        if result.returncode != 0:
            errors = [l for l in (result.stderr + result.stdout).splitlines() if "error" in l.lower() or "syntax" in l.lower()]
            return self.verdict("fail", (errors[0] if errors else f"iverilog exit {result.returncode}")[:300], result)
        return self.verdict("pass", "compiles", result)

    def _simulate(self, design: str, tb: str, work: Path):
        build = self.run([*IVERILOG, "-o", f"{design}.vvp", tb, design], work)
        if build.returncode != 0 or build.timed_out:
            return build, None
        run = self.run(["vvp", "-n", f"{design}.vvp"], work)
        return run, (None if run.timed_out or run.returncode != 0 else run.stdout)

    def upstream_testbench(self, program_file: str, oracle: dict, work: Path):
        """Run the upstream testbench on the design in `program_file`: (status, diagnostics, result, expected).

        Judged by the rules of the upstream's scripts/sv-iv-analyze; the report line is tagged per run."""
        tag = "@@" + secrets.token_hex(6)
        (work / "dslbench_test.sv").write_text(tagged_testbench(oracle["testbench"], tag))
        (work / "dslbench_ref.sv").write_text(oracle["reference"])
        build = self.run([*UPSTREAM_IVERILOG, "-o", "dslbench_up.vvp", program_file, "dslbench_test.sv",
                          "dslbench_ref.sv"], work)
        log = build.stdout + build.stderr
        if build.timed_out:
            return "fail", "iverilog timed out building the testbench", build, ""
        if build.returncode != 0:
            errors = [l for l in log.splitlines() if "error" in l.lower() or "sorry" in l.lower()]
            why = errors[0] if errors else f"iverilog exit {build.returncode}"
            return ("fail", f"testbench does not elaborate with the candidate: {why[:300]}", build, "")
        run = self.run(["vvp", "-n", "dslbench_up.vvp"], work, timeout_s=UPSTREAM_TIMEOUT_S)
        log += run.stdout + run.stderr
        duration = build.duration_s + run.duration_s
        run.duration_s = duration
        if run.timed_out:
            return "fail", f"simulation timed out ({UPSTREAM_TIMEOUT_S} s)", run, ""
        lines = log.splitlines()
        report = [l for l in lines if l.startswith(tag + " Mismatches:")]
        # the candidate's own output (and the testbench's hints) come in the log: never the tag
        for line in lines:
            if "TIMEOUT" in line:
                return "fail", "the testbench's own time limit ended the simulation (TIMEOUT)", run, ""
            if "syntax error" in line or "error" in line or any(m in line for m in UPSTREAM_FAIL_MARKS):
                return "fail", f"the upstream rules fail the log: {line.strip()[:300]}", run, ""
        if not report:
            why = (f"simulation failed (exit {run.returncode})" if run.returncode != 0 else
                   "the simulation ended before the testbench's final report")
            return "fail", why, run, ""
        if len(report) > 1:  # the design read the tag from the work dir and printed a report of its own
            return "fail", "the testbench's final report was printed more than once", run, ""
        m = re.match(rf"{re.escape(tag)} Mismatches: (\d+) in (\d+) samples", report[0])
        if not m:
            return "fail", "unreadable final report of the testbench", run, ""
        if int(m.group(1)):
            hints = [l.strip() for l in lines if l.startswith("Hint: Output") and "no mismatches" not in l]
            return ("fail", f"{m.group(1)} mismatched samples out of {m.group(2)}" +
                    (f"; {hints[0]}" if hints else ""), run, "0 mismatched samples")
        return "pass", f"upstream testbench: 0 mismatches in {m.group(2)} samples", run, ""

    def semantic(self, program, task, work):
        if "testbench" in task.oracle:
            why = cheats_upstream(program, task.oracle)
            if why:
                return self.verdict("fail", why)
            status, why, result, expected = self.upstream_testbench(self.file_name, task.oracle, work)
            return self.verdict(status, why, result, expected=expected)
        tag = "@@" + hashlib.sha256((task.id + task.gold).encode()).hexdigest()[:10]
        tb = testbench(task.oracle, tag)
        want, gold_run = self._gold_trace(task, tb, tag)
        if want is None:
            return self.verdict("error", "the gold design does not simulate with the generated testbench", gold_run,
                                reason="gold_broken")
        (work / "tb.sv").write_text(tb)
        cand_run, cand_out = self._simulate(self.file_name, "tb.sv", work)
        duration = (gold_run.duration_s if gold_run else 0.0) + cand_run.duration_s
        if cand_out is None:
            why = ("simulation timed out" if cand_run.timed_out else
                   "testbench does not elaborate with the candidate (module name or ports differ)"
                   if cand_run.command.startswith("iverilog") else f"simulation failed (exit {cand_run.returncode})")
            return self.verdict("fail", why, cand_run, duration)
        got = [l for l in cand_out.splitlines() if l.startswith(tag)]
        for w, g in zip(want, got):
            if w != g:
                # a trace line is "<vector> <inputs> | <outputs>"; the gold's line goes to `expected` only
                vec, got_line = (g[len(tag) + 1:].split(" ", 1) + [""])[:2]
                want_line = (w[len(tag) + 1:].split(" ", 1) + [""])[1]
                return self.verdict("fail", f"first mismatch at vector {vec}: got '{got_line}'", cand_run, duration,
                                    expected=f"vector {vec}: expected '{want_line}'")
        if len(got) != len(want):
            return self.verdict("fail", f"trace has {len(got)} vectors, a different number from the gold's", cand_run,
                                duration, expected=f"a trace of {len(want)} vectors")
        return self.verdict("pass", f"output trace equals the gold's on {len(want)} vectors", cand_run, duration)

    def _gold_trace(self, task, tb: str, tag: str):
        """The gold's trace lines under the generated testbench (simulated once per task and toolchain
        version: the oracle cache), and the run that made them (None when cached)."""
        def simulate_gold(gold_work: Path):
            (gold_work / "tb.sv").write_text(tb)
            (gold_work / "gold.sv").write_text(task.gold)
            run, out = self._simulate("gold.sv", "tb.sv", gold_work)
            return (None if out is None else [l for l in out.splitlines() if l.startswith(tag)]), run
        return self.gold_expected(task, simulate_gold)

    # --- upstream -------------------------------------------------------------------------------
    def import_upstream(self, source: Path):
        """VerilogEval v2 spec-to-rtl as published (dataset_spec-to-rtl/). See verilogeval.py."""
        from . import verilogeval
        return verilogeval.load(Path(source), self)
