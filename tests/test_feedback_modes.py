"""Refinement feedback in its two modes: `diagnostics` never shows what only the oracle knows,
`tests` shows it (test-driven repair). Checked on hand-made verdicts and, per DSL, on a real
semantic mutant judged by the real toolchain."""
from __future__ import annotations

import pytest

from dslbench import interventions as I
from dslbench import pipeline, toolchains
from dslbench.tasks import load_tasks

DSLS = sorted(toolchains.discover())


def verdict(diagnostics: str, expected: str) -> dict:
    return {"syntax": {"status": "pass", "diagnostics": "compiles", "expected": ""},
            "semantic": {"status": "fail", "diagnostics": diagnostics, "expected": expected}}


def test_the_modes_differ_only_by_the_expected_values():
    v = verdict("input 0: output [1] differs from the gold's", "input 0: expected [2]")
    plain, tests = I.feedback(v), I.feedback(v, "tests")
    assert "expected [2]" not in plain and "input 0: output [1]" in plain
    assert tests.startswith(plain) and tests.endswith("semantic check expected: input 0: expected [2]")
    assert I.feedback(verdict("x", "")) == I.feedback(verdict("x", ""), "tests")   # nothing to show
    with pytest.raises(ValueError, match="feedback mode 'answers'"):
        I.feedback(v, "answers")


def test_refinement_methods_name_their_mode():
    assert {m: I.FEEDBACK_MODE.get(m, "diagnostics") for m in I.REFINEMENT_START} == {
        "baseline-refinement": "diagnostics", "retrieval-refinement": "diagnostics",
        "rag-refinement": "diagnostics", "tests-refinement": "tests"}
    messages = I.repair_messages([{"role": "user", "content": "task"}], "prog",
                                 verdict("wrong", "expected 42"), "jq", mode="tests")
    assert "expected 42" in messages[-1]["content"]
    assert "expected 42" not in I.repair_messages([], "prog", verdict("wrong", "expected 42"), "jq")[-1]["content"]


def first_mutant_with_expected(dsl: str, tries: int = 12):
    """The first semantic mutant (of the DSL's first tasks) whose verdict names expected values."""
    seen = []
    for task in load_tasks([dsl])[dsl]:
        for m in (m for m in task.mutants if m.level == "semantic"):
            out = pipeline.evaluate(dsl, task, m.program)
            seen.append((task.id, out["semantic"]["status"], out["semantic"]["reason"]))
            if out["semantic"].get("expected"):
                return task, out
            if len(seen) >= tries:
                return None, seen
    return None, seen


@pytest.mark.parametrize("dsl", DSLS)
def test_a_real_mutant_gets_distinct_feedback_in_the_two_modes(dsl):
    if not toolchains.probe(dsl).available:
        pytest.skip(f"{dsl}: {toolchains.probe(dsl).reason}")
    task, out = first_mutant_with_expected(dsl)
    assert task is not None, f"{dsl}: no semantic mutant's verdict names expected values: {out}"
    sem = out["semantic"]
    assert sem["status"] == "fail"
    # the expected part is not repeated in the diagnostics the model sees by default
    assert sem["expected"] not in sem["diagnostics"]
    plain, tests = I.feedback(out), I.feedback(out, "tests")
    assert sem["expected"][:200] in tests and sem["expected"][:200] not in plain
