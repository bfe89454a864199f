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
"""
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain

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
    fmt = " ".join(f"{n}=%h" for n in ins) + " | " + " ".join(f"{n}=%h" for n in outs)
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


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # iverilog compiles
    SEMANTIC_FAIL = "wrong_output"  # testbench simulation

    def probe(self) -> Probe:
        if not shutil.which("iverilog") or not shutil.which("vvp"):
            return Probe(self.dsl, self.card["toolchain"], "", False,
                         "iverilog/vvp not on PATH (Debian package iverilog)")
        out = subprocess.run(["iverilog", "-V"], capture_output=True, text=True, timeout=20).stdout
        m = re.search(r"version\s+(\S+)", out)
        return Probe(self.dsl, self.card["toolchain"], f"Icarus Verilog {m.group(1) if m else '?'}", True,
                     dialect=self.card["dialect"])

    def check_oracle(self, task):
        o, problems = task.oracle, []
        if not isinstance(o.get("top"), str):
            problems.append(("top", "name of the module under test is required"))
        for key in ("inputs", "outputs"):
            ports = o.get(key)
            if not isinstance(ports, dict) or not ports:
                problems.append((key, "a mapping of port name to width is required"))
            elif not all(isinstance(w, int) and w > 0 for w in ports.values()):
                problems.append((key, "widths must be positive integers"))
        ports = [*(o.get("inputs") or {}), *(o.get("outputs") or {})]
        clash = sorted(set(ports) & set(TB_NAMES))
        if clash:
            problems.append(("inputs", f"port names {clash} are reserved by the testbench"))
        if o.get("clock") and o["clock"] in ports:
            problems.append(("clock", "the clock is driven by the testbench: do not list it in inputs/outputs"))
        if len(set(ports)) != len(ports):
            problems.append(("outputs", "a port is listed both as input and output"))
        reset = o.get("reset")
        if reset and reset.get("name") not in (o.get("inputs") or {}):
            problems.append(("reset.name", "the reset must also be listed in inputs"))
        for i, vec in enumerate(o.get("directed", [])):
            unknown = set(vec) - set(o.get("inputs") or {})
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

    def semantic(self, program, task, work):
        tag = "@@" + hashlib.sha256((task.id + task.gold).encode()).hexdigest()[:10]
        (work / "tb.sv").write_text(testbench(task.oracle, tag))
        (work / "gold.sv").write_text(task.gold)
        gold_run, gold_out = self._simulate("gold.sv", "tb.sv", work)
        if gold_out is None:
            return self.verdict("error", "the gold design does not simulate with the generated testbench", gold_run,
                                reason="gold_broken")
        cand_run, cand_out = self._simulate(self.file_name, "tb.sv", work)
        duration = gold_run.duration_s + cand_run.duration_s
        if cand_out is None:
            why = ("simulation timed out" if cand_run.timed_out else
                   "testbench does not elaborate with the candidate (module name or ports differ)"
                   if cand_run.command.startswith("iverilog") else f"simulation failed (exit {cand_run.returncode})")
            return self.verdict("fail", why, cand_run, duration)
        want = [l for l in gold_out.splitlines() if l.startswith(tag)]
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
