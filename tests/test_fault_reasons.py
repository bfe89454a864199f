"""Fault reasons: a program that does not terminate, crashes or exhausts a limit is the program's fault.

Issue "Measurement integrity": whatever a validator makes of such a run, `verdicts.settle` must turn it
into status `fail` with reason `timeout`, `runtime_error` or `resource_limit`, never into a pass, an
`error` (our fault, excluded from the pass rate) or an ordinary wrong answer.

1. test_hostile_candidate: per DSL, real programs that hang, crash or exhaust memory in the DSL's own
   toolchain. Each matches the interface of its task (names, ports, signatures) so that the run
   reaches the hostile part, at the level named in the table. The DSL's timeout is lowered for the
   test (a monkeypatched copy of its card's limits); a control in the same test shows that the task's
   gold passes both levels under the same limits, so the limit is what stopped the candidate. The
   wall time of `evaluate` must stay under timeout x toolchain runs + a margin.
2. test_run_that_cannot_start_in_time: per available DSL, the first task's gold with a timeout far
   below the toolchain's start-up is `fail` / `timeout` at the syntax level (a run that could not
   finish is never silently an `error`).

Evaluations run in a forked child with a hard deadline, so a validator that hangs on the host side
(outside the sandbox's timeout) fails its test instead of stalling the suite.

Entries with `known=` are validator misclassifications found while writing this file: `known` is the
verdict the level gets today ("status/reason", or "no answer" when evaluate() does not return in time).
While exactly that verdict comes back the test xfails; any other wrong verdict fails it, and so does a
correct one (then the fix is in: drop `known`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import pytest

from conftest import evaluate_in_fork
from dslbench import toolchains
from dslbench.tasks import load_tasks

FAULTS = {"timeout", "runtime_error", "resource_limit"}
MARGIN_S = 15.0       # on top of timeout x runs: toolchain start-up, gold runs, a loaded machine


@dataclass(frozen=True)
class Setup:
    task: str             # the task whose interface the candidates of the DSL match
    timeout_s: float      # the DSL's timeout in this test: enough for the gold, far below the card's
    runs: int             # sandboxed toolchain runs of one evaluate() over both levels (bounds the wall time)


@dataclass(frozen=True)
class Hostile:
    name: str
    program: str | Callable[[str], str]   # the program, or a function of the task's gold giving it
    level: str                            # the level whose run the program hangs, crashes or exhausts
    reasons: frozenset                    # the reasons that level may settle to (as precise as it can be)
    limits: dict = field(default_factory=dict)   # further limits for this candidate (and its control)
    known: str = ""                       # the wrong verdict the level gets today (a known misclassification)


def hostile(name, program, level, reasons, limits=None, known=""):
    return Hostile(name, program, level, frozenset(reasons), limits or {}, known)


SETUP = {
    "behaviortree": Setup("behaviortree-001", 6, 2),
    "cypher": Setup("cypher-001", 5, 2),
    "dafny": Setup("dafny-001", 20, 3),
    "gdscript": Setup("gdscript-001", 5, 3),
    "iecst": Setup("iecst-001", 8, 3),
    "jq": Setup("jq-001", 4, 2),
    "latex": Setup("latex-001", 5, 2),
    "lean": Setup("lean-001", 20, 2),
    "nextflow": Setup("nextflow-001", 6, 2),
    "openqasm": Setup("openqasm-002", 6, 2),
    "smiles": Setup("smiles-001", 5, 2),
    "solidity": Setup("solidity-001", 15, 3),
    "sysml": Setup("sysml-001", 5, 2),
    "terraform": Setup("terraform-001", 20, 2),
    "ufl": Setup("ufl-001", 6, 3),
    "vegalite": Setup("vegalite-001", 7, 2),
    "verilog": Setup("verilog-001", 5, 5),
    "veriloga": Setup("veriloga-001", 5, 3),
}

# --- the candidates --------------------------------------------------------------------------------

# Solidity: 70 pairings per call in the bn256 pairing precompile (address 8) fit in the 3M gas of a
# transaction, but py-evm computes each in pure Python (~1 s): six calls take minutes, not an out-of-gas.
SOLIDITY_PAIRINGS = """// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Counter {
    uint256 public count;

    event Changed(uint256 newValue);
    error Underflow();

    function _pairings() private view {
        uint256[6] memory g = [uint256(1), 2,
            11559732032986387107991004021392285783925812861821192530917403151452391805634,
            10857046999023057135944570762232829481370756359578518086990519993285655852781,
            4082367875863433681332203403145435568316851327593401208105741076214120093531,
            8495653923123431417604973247489272438418190587263600148770280649306958101930];
        bytes memory input = new bytes(192 * 70);
        for (uint256 i = 0; i < 70 * 6; i++) {
            uint256 w = g[i % 6];
            assembly { mstore(add(add(input, 32), mul(i, 32)), w) }
        }
        (bool ok, ) = address(8).staticcall(input);
        require(ok);
    }

    function increment() external {
        _pairings();
        count += 1;
        emit Changed(count);
    }

    function decrement() external {
        _pairings();
        if (count == 0) revert Underflow();
        count -= 1;
        emit Changed(count);
    }

    function add(uint256 amount) external {
        _pairings();
        count += amount;
        emit Changed(count);
    }
}
"""

IECST_HEADER = """FUNCTION_BLOCK FB_MotorLatch
VAR_INPUT
    Start : BOOL;
    Stop : BOOL;
END_VAR
VAR_OUTPUT
    Run : BOOL;
END_VAR
"""


# DSL -> the hostile candidates of its task (Setup.task); each comment says why the program is hostile.
HOSTILE = {
    "behaviortree": [
        # MainTree includes itself as a SubTree: BT.CPP instantiates subtrees without end (std::bad_alloc)
        hostile("recursive_subtree", lambda gold: gold.replace(
            '<MoveBase goal="{goal}"/>', '<MoveBase goal="{goal}"/>\n        <SubTree ID="MainTree"/>'),
            "syntax", {"resource_limit"}),
    ],
    "cypher": [
        # six-fold cartesian product of all nodes of the films graph, counted row by row
        hostile("cartesian_product", "MATCH (a), (b), (c), (d), (e), (f)\nRETURN count(*) AS title, 0 AS released\n",
                "semantic", {"timeout"}),
        # the planner folds range(1, 2e9) into one 32 GB list while planning (EXPLAIN): FalkorDB dies of OOM
        hostile("planner_oom", "UNWIND range(1, 2000000000) AS x\nRETURN count(x) AS title, 0 AS released\n",
                "syntax", {"resource_limit"}),
        # a range bound known only at run time: the query itself collects 1e10 values, FalkorDB dies of OOM
        hostile("query_oom", "MATCH (m:Movie) WITH count(m) AS n\nUNWIND range(1, n * 1000000000) AS x\n"
                             "WITH collect(x) AS xs\nRETURN size(xs) AS title, 0 AS released\n",
                "semantic", {"resource_limit"}),
    ],
    "dafny": [
        # a lemma with no proof of x^3 + y^3 != z^3 (Fermat, n = 3): z3 searches nonlinear arithmetic
        hostile("fermat_cubes", lambda gold: gold + "\nlemma NoCubes(a: int, b: int, c: int)\n"
                "  requires a > 0 && b > 0 && c > 0\n  ensures a * a * a + b * b * b != c * c * c\n{}\n",
                "semantic", {"timeout"}),
    ],
    "gdscript": [
        # the method the harness calls first never returns
        hostile("endless_loop", lambda gold: gold.replace(
            "func take_damage(amount: int) -> void:\n", "func take_damage(amount: int) -> void:\n\twhile true:\n\t\tpass\n"),
            "semantic", {"timeout"}),
        # unbounded recursion in a called method: Godot 3's VM overflows the C stack (SIGSEGV)
        hostile("unbounded_recursion", lambda gold: gold.replace(
            "func is_alive() -> bool:\n", "func is_alive() -> bool:\n\treturn is_alive()\n\n\nfunc _unused() -> bool:\n"),
            "semantic", {"runtime_error"}),
    ],
    "iecst": [
        # a 20000 x 20000 LINT array: the evaluator materializes 4e8 elements at the first scan
        hostile("huge_array", IECST_HEADER + "VAR\n    Huge : ARRAY[1..20000, 1..20000] OF LINT;\nEND_VAR\n"
                "Run := (Start OR Run) AND NOT Stop;\nEND_FUNCTION_BLOCK\n",
                "semantic", {"resource_limit"}, limits={"memory_mb": 256}),
        # the scan never ends (stopped by the evaluator's step budget, its own time limit)
        hostile("endless_loop", IECST_HEADER + "WHILE TRUE DO\n    Run := NOT Run;\nEND_WHILE;\nEND_FUNCTION_BLOCK\n",
                "semantic", {"timeout"}),
        # a FUNCTION that calls itself without end: Python's RecursionError in the evaluator
        hostile("unbounded_recursion", "FUNCTION Deep : INT\nVAR_INPUT\n    N : INT;\nEND_VAR\n"
                "Deep := Deep(N + 1);\nEND_FUNCTION\n\n" + IECST_HEADER + "VAR\n    Depth : INT;\nEND_VAR\n"
                "Depth := Deep(0);\nRun := (Start OR Run) AND NOT Stop;\nEND_FUNCTION_BLOCK\n",
                "semantic", {"runtime_error", "resource_limit"}),
    ],
    "jq": [
        # an infinite stream of outputs
        hostile("endless_stream", "repeat(1)\n", "semantic", {"timeout"}),
        # unbounded recursion that builds ever deeper arrays: libjq runs out of memory
        hostile("unbounded_recursion", "def f: [f]; f\n", "semantic", {"resource_limit"}, limits={"memory_mb": 256}),
    ],
    "latex": [
        # a macro that expands to itself: TeX loops without using memory
        hostile("self_expanding_macro", lambda gold: gold.replace("\\maketitle\n", "\\maketitle\n\\def\\a{\\a}\\a\n"),
                "syntax", {"timeout"}),
    ],
    "lean": [
        # a partial function that never returns, evaluated while elaborating (not run here: no Lean 4)
        hostile("endless_eval", lambda gold: gold + "\npartial def spin (n : Nat) : Nat := spin (n + 1)\n\n#eval spin 0\n",
                "syntax", {"timeout"}),
    ],
    "nextflow": [
        # the judge only parses (no script runs): 400k top-level statements (15 MB) the Groovy parser
        # cannot get through in time
        hostile("huge_script", lambda gold: gold + "".join(f"def v{i} = [{i}, {i}, {i}]\n" for i in range(400_000)),
                "syntax", {"timeout"}),
    ],
    "openqasm": [
        # a while loop on a bit that nothing in its body changes: Aer simulates it for ever
        hostile("endless_while", 'OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[4] g;\nbit[4] m;\n'
                                 "while (m[0] == false) {\n  h g[3];\n}\n"
                                 "h g[0];\ncx g[0], g[1];\ncx g[1], g[2];\ncx g[2], g[3];\nm = measure g;\n",
                "semantic", {"timeout"}),
    ],
    "smiles": [
        # a 30000-atom chain: RDKit's canonical ranking is quadratic in the chain length
        hostile("long_chain", "C" * 30_000 + "\n", "syntax", {"timeout"}),
    ],
    "solidity": [
        # every function the scenarios call makes 70 pure-Python pairings in py-evm (SOLIDITY_PAIRINGS)
        hostile("expensive_precompile", SOLIDITY_PAIRINGS, "semantic", {"timeout"}),
    ],
    "sysml": [
        # 300k part definitions (6 MB): more than the ANTLR parser can read in time
        hostile("huge_model", lambda gold: gold.rstrip()[:-1] + "".join(f"    part def P{i};\n" for i in range(300_000))
                + "}\n", "syntax", {"timeout"}),
    ],
    "terraform": [
        # nested for expressions over range(1024) three deep: 1e9 values to evaluate while planning
        hostile("cubic_for", lambda gold: gold + "\nlocals {\n  cube = [for a in range(1024) : [for b in range(1024) :"
                " [for c in range(1024) : a * b * c]]]\n}\n\noutput \"cube_size\" {\n  value = length(flatten(local.cube))\n}\n",
                "syntax", {"timeout"}),
    ],
    "ufl": [
        # the form module never finishes importing
        hostile("endless_loop", lambda gold: gold + "\nwhile True:\n    pass\n", "syntax", {"timeout"}),
        # the form module aborts the interpreter (SIGABRT)
        hostile("abort", lambda gold: gold + "\nimport os\nos.abort()\n", "syntax", {"runtime_error"}),
        # the form module allocates 64 MB blocks until the address space is gone
        hostile("memory_hog", lambda gold: gold + "\nhog = []\nwhile True:\n    hog.append(bytearray(1 << 26))\n",
                "syntax", {"resource_limit"}, limits={"memory_mb": 768}),
    ],
    "vegalite": [
        # loess over 300k generated rows: Vega's loess is quadratic in the rows per group
        hostile("quadratic_loess", """{
  "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
  "data": {"sequence": {"start": 0, "stop": 300000, "as": "revenue"}},
  "transform": [
    {"calculate": "'r' + (datum.revenue % 3)", "as": "region"},
    {"loess": "revenue", "on": "revenue", "groupby": ["region"], "bandwidth": 1}
  ],
  "mark": "bar",
  "encoding": {
    "x": {"field": "region", "type": "nominal"},
    "y": {"aggregate": "sum", "field": "revenue", "type": "quantitative"}
  }
}
""", "semantic", {"timeout"}),
    ],
    "verilog": [
        # a combinational loop that oscillates in zero time once sel is 1: simulation time stops
        hostile("combinational_loop", "module mux2(input [3:0] a, input [3:0] b, input sel, output [3:0] y);\n"
                "  wire osc;\n  assign osc = sel ? ~osc : 1'b0;\n  assign y = sel ? b : a;\nendmodule\n",
                "semantic", {"timeout"}),
        # a 16 GiB memory array: vvp cannot allocate it (std::bad_alloc)
        hostile("huge_memory", "module mux2(input [3:0] a, input [3:0] b, input sel, output [3:0] y);\n"
                "  reg [63:0] mem [0:(1<<28)-1];\n  initial mem[0] = 0;\n  assign y = sel ? b : a;\nendmodule\n",
                "semantic", {"resource_limit"}),
    ],
    "veriloga": [
        # a while loop in the analog block whose condition is always true: the model evaluation never returns
        hostile("endless_loop", '`include "disciplines.vams"\nmodule res_lin(p, n);\n  inout p, n;\n  electrical p, n;\n'
                "  parameter real r = 1k from (0:inf);\n  real k;\n  analog begin\n    k = 1;\n"
                "    while (V(p, n) == V(p, n)) k = k + 1;\n    I(p, n) <+ V(p, n) / r + 1e-30 * k;\n  end\nendmodule\n",
                "semantic", {"timeout"}),
    ],
}


# --- helpers ---------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def tasks_of(dsl: str) -> dict:
    return {t.id: t for t in load_tasks([dsl])[dsl]}


def first_task(dsl: str):
    return next(iter(tasks_of(dsl).values()))


def available_or_skip(dsl: str):
    """The DSL's validator; probed before any limit is lowered (the probe runs the toolchain itself)."""
    probe = toolchains.probe(dsl)
    if not probe.available:
        pytest.skip(f"{dsl}: {probe.reason}")
    return toolchains.get(dsl)


def lower_limits(monkeypatch, tc, **limits) -> None:
    """A copy of the card's limits with these values; the card itself is restored after the test."""
    monkeypatch.setitem(tc.card, "limits", {**tc.card.get("limits", {}), **limits})


def evaluate_within(dsl: str, task, program: str, deadline_s: float) -> tuple[dict | None, float]:
    """pipeline.evaluate in a forked child (it sees the lowered limits): (outcome or None if it did not
    return within deadline_s, wall seconds). A late child is killed (its sandboxes die with it)."""
    outcome, wall, _ = evaluate_in_fork(dsl, task, program, deadline_s)
    return outcome, wall


def shown(level: dict) -> str:
    return f"{level['status']}/{level['reason']}: {level['diagnostics'][:300]}"


def hostile_cases():
    for dsl in sorted(toolchains.discover()):
        assert dsl in HOSTILE and dsl in SETUP, f"{dsl}: add its hostile candidates and setup to this file"
        for h in HOSTILE[dsl]:
            assert h.reasons <= FAULTS and h.level in ("syntax", "semantic"), f"{dsl}-{h.name}"
            yield pytest.param(dsl, h, id=f"{dsl}-{h.name}")


# --- 1. hostile candidates -------------------------------------------------------------------------

@pytest.mark.parametrize("dsl,h", list(hostile_cases()))
def test_hostile_candidate(dsl, h, monkeypatch):
    tc = available_or_skip(dsl)
    setup = SETUP[dsl]
    task = tasks_of(dsl)[setup.task]
    lower_limits(monkeypatch, tc, timeout_s=setup.timeout_s, **h.limits)
    bound = setup.timeout_s * setup.runs + MARGIN_S

    # control: under the same limits the gold passes both levels
    gold, gold_wall = evaluate_within(dsl, task, task.gold, bound)
    assert gold is not None, f"the gold did not finish within {bound:.0f} s"
    for lvl in ("syntax", "semantic"):
        assert gold[lvl]["status"] == "pass", f"gold, {lvl} level with the lowered limits: {shown(gold[lvl])}"

    program = h.program(task.gold) if callable(h.program) else h.program
    out, wall = evaluate_within(dsl, task, program, bound)
    got = "no answer" if out is None else f"{out[h.level]['status']}/{out[h.level]['reason']}"
    print(f"{dsl}/{h.name}: gold passes in {gold_wall:.1f} s; {h.level} level {got} in {wall:.1f} s (bound {bound:.0f} s)")
    if h.known and got == h.known:
        pytest.xfail(f"known misclassification: the {h.level} level is {got}, expected "
                     f"fail/{'|'.join(sorted(h.reasons))}")
    assert out is not None, f"evaluate did not return within {bound:.0f} s (timeout {setup.timeout_s} s x {setup.runs} runs + margin)"
    verdict = out[h.level]
    assert verdict["status"] == "fail" and verdict["reason"] in h.reasons, (
        f"{h.level} level: expected fail/{'|'.join(sorted(h.reasons))}, got {shown(verdict)}")
    if h.level == "syntax":
        assert out["semantic"]["reason"] == "syntax_failed", shown(out["semantic"])
    else:
        assert out["syntax"]["status"] == "pass", f"the candidate must reach the semantic level: {shown(out['syntax'])}"
    assert wall < bound, f"evaluate took {wall:.1f} s, bound {bound:.0f} s"
    assert not h.known, f"judged correctly now ({got}): drop known={h.known!r} from the table"


# --- 2. a run that cannot even start in time -------------------------------------------------------

STARTUP_TIMEOUT_S = 0.001   # far below the start-up of any toolchain (iverilog -t null on a tiny gold can finish in 10 ms)
STARTUP_DEADLINE_S = 60.0   # only a guard against a hang: a loaded machine needs seconds to fork and load


@pytest.mark.parametrize("dsl", sorted(toolchains.discover()))
def test_run_that_cannot_start_in_time(dsl, monkeypatch):
    tc = available_or_skip(dsl)
    task = first_task(dsl)
    lower_limits(monkeypatch, tc, timeout_s=STARTUP_TIMEOUT_S)
    out, wall = evaluate_within(dsl, task, task.gold, STARTUP_DEADLINE_S)
    assert out is not None, f"evaluate did not return within {STARTUP_DEADLINE_S:.0f} s"
    syntax = out["syntax"]
    assert (syntax["status"], syntax["reason"]) == ("fail", "timeout"), shown(syntax)
    assert syntax["timed_out"], "the verdict must come from the run that timed out"
    assert out["semantic"]["reason"] == "syntax_failed", shown(out["semantic"])
