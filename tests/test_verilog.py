"""Verilog on the real toolchain (Icarus Verilog): a wrong design's diagnostics give its own trace line;
the gold's trace line and vector count go to the verdict's `expected` field only."""
import pytest

from conftest import skip_without_toolchain
from dslbench import pipeline
from dslbench.tasks import load_tasks

TASKS = {t.id: t for t in load_tasks(["verilog"])["verilog"]}


available = skip_without_toolchain("verilog")


def test_semantic_mutant_keeps_the_gold_trace_out_of_diagnostics():
    task = TASKS["verilog-001"]                  # mux2; the mutant inverts the select
    mutant = next(m for m in task.mutants if m.level == "semantic")
    sem = pipeline.evaluate("verilog", task, mutant.program)["semantic"]
    assert sem["status"] == "fail" and sem["reason"] == "wrong_output"
    # first directed vector a=3 b=12 sel=0: the gold gives y=a=3, the mutant y=b=c (outputs in bits)
    assert sem["diagnostics"] == "first mismatch at vector 0: got 'a=3 b=c sel=0 | y=1100'"
    assert "y=0011" not in sem["diagnostics"]
    assert sem["expected"] == "vector 0: expected 'a=3 b=c sel=0 | y=0011'"


def test_short_trace_keeps_the_vector_count_out_of_diagnostics():
    task = TASKS["verilog-001"]
    vectors = len(task.oracle["directed"]) + task.oracle["random"]
    # the gold's logic, but the design ends the simulation after two vectors (5 ns each)
    early = task.gold.replace("endmodule", "  initial #12 $finish;\nendmodule")
    sem = pipeline.evaluate("verilog", task, early)["semantic"]
    assert sem["status"] == "fail"
    assert sem["diagnostics"] == "trace has 2 vectors, a different number from the gold's"
    assert str(vectors) not in sem["diagnostics"]
    assert sem["expected"] == f"a trace of {vectors} vectors"
