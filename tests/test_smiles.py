"""SMILES on the real toolchain (RDKit): a wrong molecule's diagnostics give its own canonical form;
the gold's canonical form (the answer itself) goes to the verdict's `expected` field only."""
import pytest

from conftest import skip_without_toolchain
from dslbench import pipeline
from dslbench.tasks import load_tasks

TASKS = {t.id: t for t in load_tasks(["smiles"])["smiles"]}


available = skip_without_toolchain("smiles")


def test_semantic_mutant_keeps_the_gold_smiles_out_of_diagnostics():
    task = TASKS["smiles-001"]                   # phenol; the mutant is cyclohexanol
    mutant = next(m for m in task.mutants if m.level == "semantic")
    sem = pipeline.evaluate("smiles", task, mutant.program)["semantic"]
    assert sem["status"] == "fail" and sem["reason"] == "wrong_output"
    gold = "Oc1ccccc1"                           # RDKit's canonical isomeric SMILES of the gold
    assert gold not in sem["diagnostics"] and "OC1CCCCC1" in sem["diagnostics"]
    assert sem["expected"] == f"canonical isomeric SMILES {gold}"


def test_pass_message_does_not_quote_the_gold():
    task = TASKS["smiles-001"]
    sem = pipeline.evaluate("smiles", task, "c1ccccc1O")["semantic"]     # another spelling of phenol
    assert sem["status"] == "pass" and "Oc1ccccc1" not in sem["diagnostics"]
