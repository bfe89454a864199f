"""Lean 4 validator specifics. No Lean 4 toolchain is installable on this machine, so these tests cover
what does not need one: toolchain detection (a missing `lean` gives `unavailable` with the reason; a
FAKE `lean` script on PATH is used ONLY inside the probe unit test, never as a verdict source), the
sorry/axiom screening and statement matching on the real task files, the parsing of `#print axioms`
output on hand-written samples (tests/fixtures/lean/outputs, labelled as such), the strict oracle
check, and the miniF2F / PutnamBench loaders. When a real `lean` is on PATH the generic
tests/test_validators.py self-check judges every gold and mutant with it.
"""
import stat
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains, upstream
from dslbench.tasks import TaskError, load_task_file, load_tasks

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "lean"
TC = toolchains.get("lean")
lc = __import__("sys").modules[type(TC).__module__].lc
TASKS = {t.id: t for t in load_tasks(["lean"])["lean"]}


# --- detection ------------------------------------------------------------------------------------

def test_missing_lean_gives_unavailable_with_reason(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    toolchains.probe.cache_clear()
    try:
        task = TASKS["lean-001"]
        out = pipeline.evaluate("lean", task, task.gold)
        assert out["syntax"]["status"] == out["semantic"]["status"] == "unavailable"
        assert "lean not on PATH" in out["syntax"]["diagnostics"]
    finally:
        toolchains.probe.cache_clear()


def _fake_lean(tmp_path, version_line):
    """FAKE `lean` (unit test of the probe only): prints a version line, judges nothing."""
    exe = tmp_path / "lean"
    exe.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def test_probe_detects_lean4_on_path_FAKE_BINARY(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{_fake_lean(tmp_path, 'Lean (version 4.9.1, x86_64-unknown-linux-gnu, commit 0, Release)')}:/usr/bin:/bin")
    p = TC.probe()
    assert p.available and p.version == "Lean 4.9.1" and "core" in p.dialect


def test_probe_rejects_lean3_on_path_FAKE_BINARY(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{_fake_lean(tmp_path, 'Lean (version 3.51.1, commit 0, Release)')}:/usr/bin:/bin")
    p = TC.probe()
    assert not p.available and "not Lean 4" in p.reason


def test_doctor_reports_lean():
    row = pipeline.doctor().set_index("dsl").loc["lean"]
    if not shutil_which("lean"):
        assert not row["available"] and "lean not on PATH" in row["reason"]


def shutil_which(name):
    import shutil
    return shutil.which(name)


# --- screening and statements on the real task set ------------------------------------------------------

def test_golds_screen_clean_and_state_the_task_theorem():
    for t in TASKS.values():
        assert lc.screen(t.gold) == [], t.id
        assert lc.theorem_statement(t.gold, t.oracle["theorem"]) == lc.normalize(t.oracle["statement"]), t.id


def test_every_semantic_mutant_is_caught_without_lean_or_needs_axioms():
    """Each semantic mutant is rejected by the text checks (screen / statement / name) — except those
    whose flaw only `#print axioms` can see, of which there are none in the authored set."""
    for t in TASKS.values():
        for m in t.mutants:
            if m.level != "semantic":
                continue
            caught = (lc.screen(m.program) or
                      lc.theorem_statement(m.program, t.oracle["theorem"]) != lc.normalize(t.oracle["statement"]))
            assert caught, (t.id, m.note)


def test_screen_ignores_comments_and_strings_but_not_code():
    ok = 'theorem t : True := by\n  -- no sorry here\n  /- admit /- nested sorry -/ -/\n  trivial\n#eval "sorry"\n'
    assert lc.screen(ok) == []
    assert lc.screen("theorem t : 1 = 1 := by\n  native_decide\n") == ["line 2: uses native_decide (trusts the compiler, not the kernel)"]
    bad = "local notation a \" ⊕ \" b => a + b\ninstance : Add Nat := ⟨Nat.mul⟩\ntheorem t : True := by\n  exact sorry\n"
    found = " ".join(lc.screen(bad))
    assert "notation" in found and "instance" in found and "sorry" in found
    assert lc.screen("theorem my_sorry_lemma : True := trivial\n") == []  # identifiers containing the word


def test_semantic_level_rejects_screened_programs_before_running_lean(tmp_path):
    t = TASKS["lean-002"]
    v = TC.semantic(t.mutants[1].program, t, tmp_path)
    assert v.status == "fail" and "admit" in v.diagnostics
    v = TC.semantic(TASKS["lean-005"].mutants[1].program, TASKS["lean-005"], tmp_path)
    assert v.status == "fail" and "lt_succ_of_nat is not declared" in v.diagnostics
    v = TC.semantic(TASKS["lean-008"].mutants[1].program, TASKS["lean-008"], tmp_path)
    assert v.status == "fail" and "not the one the task states" in v.diagnostics
    assert v.expected == "theorem " + TASKS["lean-008"].oracle["theorem"] + " (xs ys : List Nat) : (xs ++ ys).length = xs.length + ys.length"


def test_expected_statement_is_kept_out_of_the_diagnostics():
    # The refinement loop feeds diagnostics back to the model: the task's statement goes to `expected`.
    if not toolchains.probe("lean").available:
        pytest.skip(f"lean toolchain unavailable here: {toolchains.probe('lean').reason}")
    t = TASKS["lean-008"]
    m = next(m for m in t.mutants if m.level == "semantic")
    sem = pipeline.evaluate("lean", t, m.program)["semantic"]
    assert sem["status"] == "fail"
    stmt = "(xs ys : List Nat) : (xs ++ ys).length = xs.length + ys.length"
    assert stmt not in sem["diagnostics"] and stmt in sem["expected"]


# --- `#print axioms` and error output parsing (hand-written samples) ----------------------------------------

def test_axiom_output_parsing():
    out = lambda name: (FIX / "outputs" / name).read_text()
    assert lc.parse_axioms(out("axioms_standard.txt"), "two_mul_self") == ["propext", "Classical.choice", "Quot.sound"]
    assert lc.parse_axioms(out("axioms_none.txt"), "my_add_comm") == []
    assert lc.parse_axioms(out("axioms_sorry.txt"), "my_add_comm") == ["sorryAx"]
    assert "Lean.ofReduceBool" in lc.parse_axioms(out("axioms_native.txt"), "bool_and_swap")
    assert lc.parse_axioms(out("axioms_standard.txt"), "other_name") is None
    assert lc.first_error(out("error.txt")) == "line 2:2: unknown tactic"


# --- oracle spec ------------------------------------------------------------------------------------------

def test_malformed_oracle_is_rejected_with_line_and_field(tmp_path):
    data = yaml.safe_load((ROOT / "data/tasks/lean/lean-008.yaml").read_text())
    data["oracle"]["statement"] = "(xs ys : List Nat) : (xs ++ ys).length = ys.length + xs.length"
    folder = tmp_path / "lean"
    folder.mkdir()
    path = folder / "lean-008.yaml"
    path.write_text(upstream.dump_task(data))
    with pytest.raises(TaskError) as e:
        load_task_file(path, TC.check_oracle)
    assert e.value.field == "oracle.statement" and e.value.line and "gold" in e.value.message


# --- upstream loaders ---------------------------------------------------------------------------------------

def test_minif2f_loader(tmp_path):
    got = TC.import_upstream(FIX / "minif2f")
    by_id = {t["id"]: t for t in got}
    assert sorted(by_id) == ["lean-up-fixture-algebra-7", "lean-up-fixture-amc-3", "lean-up-fixture-numbertheory-12"]
    amc = by_id["lean-up-fixture-amc-3"]
    assert amc["oracle"]["statement"] == "(a b : ℕ) (h₀ : a + b = 10) (h₁ : a - b = 2) (h₂ : b ≤ a) : a = 6"
    assert amc["oracle"]["imports"] == ["Mathlib"] and amc["oracle"]["reference_proof"] is False
    assert amc["split"] == "dev" and amc["provenance"]["upstream_id"] == "MiniF2F/Valid.lean:fixture_amc_3"
    assert "fixture_helper" not in " ".join(by_id)  # solved lemmas are not problems
    written = upstream.write_tasks("lean", got, tmp_path)
    assert len(written) == 3 and load_task_file(written[0], TC.check_oracle).provenance["benchmark"] == "miniF2F-lean4"


def test_putnambench_loader_keeps_solution_abbrev_and_informal_statement(tmp_path):
    (t,) = TC.import_upstream(FIX / "putnambench")
    assert t["provenance"]["benchmark"] == "PutnamBench" and t["difficulty"] == "hard"
    assert t["instruction"].startswith("Find the least positive integer")
    assert "abbrev putnam_2031_a1_solution" in t["gold"]
    assert lc.theorem_statement(t["gold"], "putnam_2031_a1") == t["oracle"]["statement"]
    assert upstream.write_tasks("lean", [t], tmp_path)


def test_malformed_upstream_record_is_named():
    with pytest.raises(ValueError, match=r"Bad\.lean:fixture_broken.*:="):
        TC.import_upstream(FIX / "malformed")
