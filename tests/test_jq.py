"""jq on the real toolchain (libjq through PyPI jq): a wrong filter's diagnostics speak of its own
outputs only; the gold's outputs go to the verdict's `expected` field."""
import pytest

from conftest import skip_without_toolchain
from dslbench import pipeline
from dslbench.tasks import load_tasks

TASKS = {t.id: t for t in load_tasks(["jq"])["jq"]}


available = skip_without_toolchain("jq")


def test_semantic_mutant_keeps_the_gold_output_out_of_diagnostics():
    task = TASKS["jq-001"]                       # names of active users; the mutant selects inactive ones
    mutant = next(m for m in task.mutants if m.level == "semantic")
    sem = pipeline.evaluate("jq", task, mutant.program)["semantic"]
    assert sem["status"] == "fail" and sem["reason"] == "wrong_output"
    gold_output = '["ada", "cy"]'                # the gold on users.json (input 0)
    assert sem["diagnostics"] == 'input 0: output ["bob"] differs from the gold\'s'
    assert gold_output not in sem["diagnostics"]
    assert sem["expected"] == f"input 0: expected {gold_output}"


def test_gold_passes_with_no_expected_text():
    task = TASKS["jq-001"]
    sem = pipeline.evaluate("jq", task, task.gold)["semantic"]
    assert sem["status"] == "pass" and sem["expected"] == ""
