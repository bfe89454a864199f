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


# --- upstream importers (fixtures in the published layouts of miniF2F-lean4 and PutnamBench) ----------------

def _import(name):
    got = TC.import_upstream(FIX / name)
    assert isinstance(got, upstream.Imported)
    return {t["id"]: t for t in got.tasks}, {s.record: s.reason for s in got.skipped}


def test_minif2f_follows_the_import_graph_from_imports_only_index_modules(tmp_path):
    # MiniF2F.lean and MiniF2F/Test.lean, Valid.lean hold only imports: they contribute nothing and are
    # no error; the problems are the modules they import, one theorem per file
    tasks, skipped = _import("minif2f")
    assert sorted(tasks) == ["lean-up-fixture-algebra-7", "lean-up-imo-2031-p2", "lean-up-mathd-numbertheory-12"]
    assert skipped == {}
    imo, nt = tasks["lean-up-imo-2031-p2"], tasks["lean-up-mathd-numbertheory-12"]
    assert imo["split"] == "dev" and nt["split"] == tasks["lean-up-fixture-algebra-7"]["split"] == "test"
    assert (imo["difficulty"], nt["difficulty"]) == ("hard", "easy")
    assert imo["oracle"]["statement"] == "(a b : ℕ) (h₀ : a + b = 10) (h₁ : a - b = 2) (h₂ : b ≤ a) : a = 6"
    assert imo["oracle"]["imports"] == ["Mathlib"] and imo["oracle"]["reference_proof"] is False
    assert imo["oracle"]["preamble"] == "import Mathlib\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat"
    assert imo["provenance"] == {"source": "upstream", "benchmark": "miniF2F-lean4", "licence": "MIT",
                                 "upstream_id": "MiniF2F/Valid/imo_2031_p2.lean:imo_2031_p2",
                                 "lean_toolchain": "leanprover/lean4:v4.99.0", "mathlib": "v4.99.0"}
    # the comment between the binders is not part of the statement the candidate must write
    assert nt["oracle"]["statement"] == "(n : ℕ) (h₀ : n = 2 ^ 10) : n % 7 = 2"
    assert "theorem mathd_numbertheory_12 (n : ℕ) (h₀ : n = 2 ^ 10) : n % 7 = 2" in nt["instruction"]
    assert nt["gold"].startswith("import Mathlib") and nt["gold"].rstrip().endswith("sorry")
    written = upstream.write_tasks("lean", list(tasks.values()), tmp_path)
    assert len(written) == 3 and all(load_task_file(w, TC.check_oracle).oracle["reference_proof"] is False for w in written)


def test_putnambench_fills_the_solution_abbrev_and_reads_informal_json(tmp_path):
    tasks, skipped = _import("putnambench")
    assert sorted(tasks) == ["lean-up-putnam-2031-a1", "lean-up-putnam-2031-b2"]
    assert skipped == {"informal/putnam.json:putnam_2031_b6": "no_formal_statement"}
    a1, b2 = tasks["lean-up-putnam-2031-a1"], tasks["lean-up-putnam-2031-b2"]
    assert a1["provenance"]["benchmark"] == "PutnamBench" and a1["provenance"]["licence"] == "Apache-2.0"
    assert a1["provenance"]["lean_toolchain"] == "leanprover/lean4:v4.98.0"
    assert a1["difficulty"] == b2["difficulty"] == "easy"  # A1/B2: the session's first two problems
    assert a1["split"] == "test" and "number theory" in a1["constructs"]
    assert a1["instruction"].startswith("Find the least integer $n > 2$ such that $4$ divides $n^2 + n$.")
    # the answer from the comment below the abbrev is part of the fixed preamble (as the upstream's
    # rewrite_solutions.py inlines it): a candidate cannot pick a convenient answer
    assert "abbrev putnam_2031_a1_solution : ℕ := 3" in a1["oracle"]["preamble"]
    assert "sorry" not in a1["oracle"]["preamble"] and "-- 3" not in a1["gold"]
    assert a1["oracle"]["statement"] == ": IsLeast {n : ℕ | 2 < n ∧ 4 ∣ n ^ 2 + n} putnam_2031_a1_solution"
    # a `let ... :=` inside the statement is not the proof's `:=`; the helper def stays in the preamble
    assert b2["oracle"]["statement"] == "(n : ℕ) (hn : 0 < n) : ∃ p : ℕ × ℕ, let (a, m) := p; a = fixture_step m ∧ m = n"
    assert "def fixture_step" in b2["oracle"]["preamble"]
    assert len(upstream.write_tasks("lean", list(tasks.values()), tmp_path)) == 2


def test_malformed_records_are_skipped_with_reasons_not_fatal():
    tasks, skipped = _import("malformed/minif2f")
    assert list(tasks) == ["lean-up-fixture-pair-main"]
    assert skipped == {"MiniF2F/Test/fixture_broken.lean:fixture_broken": "malformed_statement",
                       "MiniF2F/Test/fixture_gone.lean": "missing_module",
                       "MiniF2F/Test/fixture_latin1.lean": "malformed_record",
                       "MiniF2F/Valid/fixture_pair.lean:fixture_pair_helper": "not_a_problem",
                       "MiniF2F/Test/fixture_stray.lean": "not_in_import_graph"}
    assert tasks["lean-up-fixture-pair-main"]["oracle"]["preamble"] == "import Mathlib\nopen Nat"
    tasks, skipped = _import("malformed/putnambench")
    assert list(tasks) == ["lean-up-putnam-2032-a2"]
    assert skipped == {"lean4/src/putnam_2032_a1.lean:putnam_2032_a1": "no_solution_answer"}
    assert tasks["lean-up-putnam-2032-a2"]["instruction"].startswith("A well-formed problem next to the broken one.")


def test_wrong_folder_is_not_this_benchmark(tmp_path):
    (tmp_path / "notes.lean").write_text("theorem t : True := trivial\n")
    with pytest.raises(upstream.NotThisBenchmark, match="neither miniF2F-lean4"):
        TC.import_upstream(tmp_path)
    (tmp_path / "MiniF2F").mkdir()
    with pytest.raises(upstream.NotThisBenchmark, match="MiniF2F.lean or MiniF2F/Test.lean"):
        TC.import_upstream(tmp_path)
    (tmp_path / "lean4" / "src").mkdir(parents=True)
    with pytest.raises(upstream.NotThisBenchmark, match="putnam_"):
        TC.import_upstream(tmp_path)


def test_dslbench_import_summary(tmp_path):
    report = upstream.import_upstream("lean", FIX / "malformed" / "minif2f", tmp_path)
    assert report.read == 6 and len(report.written) == 1
    assert "skipped 5" in report.summary() and "missing_module" in report.summary()


def _loaded(tmp_path, name):
    tasks, _ = _import(name)
    return [load_task_file(w, TC.check_oracle) for w in upstream.write_tasks("lean", list(tasks.values()), tmp_path)]


def test_imported_mutants_are_killed_by_the_exact_statement_or_preamble_check(tmp_path, monkeypatch):
    monkeypatch.delenv("DSLBENCH_LEAN_PROJECT", raising=False)
    notes = []
    for t in _loaded(tmp_path / "m", "minif2f") + _loaded(tmp_path / "p", "putnambench"):
        assert t.mutants and all(m.level == "semantic" for m in t.mutants), t.id
        for m in t.mutants:  # all decided before lean runs: no toolchain needed
            v = TC.semantic(m.program, t, tmp_path)
            assert v.status == "fail" and ("not the one the task states" in v.diagnostics
                                           or "preamble" in v.diagnostics), (t.id, m.note, v.diagnostics)
            notes.append(m.note)
        # the gold passes both text checks and stops only at its placeholder `sorry`
        v = TC.semantic(t.gold, t, tmp_path)
        assert v.status == "fail" and "uses sorry" in v.diagnostics, (t.id, v.diagnostics)
    joined = " ".join(notes)
    assert "constant in the conclusion changed" in joined and "= replaced by ≠" in joined
    assert "hypothesis h₁ dropped" in joined and "answer mutant" in joined


def test_a_proof_with_the_right_statement_needs_mathlib_unavailable_not_fail(tmp_path, monkeypatch):
    monkeypatch.delenv("DSLBENCH_LEAN_PROJECT", raising=False)
    (t,) = [t for t in _loaded(tmp_path, "minif2f") if t.id == "lean-up-imo-2031-p2"]
    proof = t.gold.replace("sorry", "omega")
    for level in (TC.syntax, TC.semantic):
        v = level(proof, t, tmp_path)
        assert v.status == "unavailable" and v.reason == "toolchain_unavailable"
        assert "Mathlib" in v.diagnostics and "DSLBENCH_LEAN_PROJECT is not set" in v.diagnostics
    # a changed preamble (another answer, a dropped open) is a fail even without Mathlib
    v = TC.semantic(proof.replace("open BigOperators Real Nat Topology Rat", "open Nat"), t, tmp_path)
    assert v.status == "fail" and "preamble" in v.diagnostics


def test_preamble_prefix_ends_at_a_declaration():
    pre = "import Mathlib\n\nabbrev s : ℕ := 12"
    assert lc.starts_with_preamble(pre + "\n-- c\ntheorem t : s = 12 := rfl", pre)
    assert not lc.starts_with_preamble("import Mathlib\nabbrev s : ℕ := 12 + 1\ntheorem t : s = 13 := rfl", pre)
    assert not lc.starts_with_preamble("import Mathlib\nabbrev s : ℕ := 123\ntheorem t : True := trivial", pre)


def test_imported_gold_with_mathlib_project():
    """With lean and a Mathlib Lake project: the gold (statement + sorry) elaborates, the mutants
    elaborate and fail the semantic level. Skipped here (no toolchain, no project)."""
    import os
    if not toolchains.probe("lean").available:
        pytest.skip(f"lean toolchain unavailable here: {toolchains.probe('lean').reason}")
    if not os.environ.get("DSLBENCH_LEAN_PROJECT"):
        pytest.skip("DSLBENCH_LEAN_PROJECT (a Lake project with Mathlib) is not set")
    tasks, _ = _import("putnambench")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for t in [load_task_file(w, TC.check_oracle) for w in upstream.write_tasks("lean", list(tasks.values()), Path(d))]:
            out = pipeline.evaluate("lean", t, t.gold)
            assert out["syntax"]["status"] == "pass" and "sorry" in out["semantic"]["diagnostics"], t.id
            for m in t.mutants:
                out = pipeline.evaluate("lean", t, m.program)
                assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "fail", (t.id, m.note)


def test_import_verify_reports_placeholder_gold_apart_and_says_why_it_is_unavailable(tmp_path, monkeypatch, capsys):
    from dslbench import cli
    monkeypatch.setenv("DSLBENCH_TASKS", str(tmp_path / "out"))
    monkeypatch.delenv("DSLBENCH_LEAN_PROJECT", raising=False)
    assert cli.main(["import", "lean", str(FIX / "minif2f"), "--out", str(tmp_path / "out"), "--verify"]) == 0
    out = capsys.readouterr().out
    # sorry-gold is not counted as broken gold, and the reason for `unavailable` is the verdict's own
    assert "gold through both levels" not in out
    line = next(x for x in out.splitlines() if x.startswith("placeholder gold"))
    assert "must pass syntax, fail semantics" in line and "unavailable (" in line
    assert "no toolchain here" not in out
    assert TC.gold_is_solution(load_tasks(["lean"])["lean"][0]) is False
    df = pipeline.selfcheck(["lean"], progress=False)
    assert set(df.loc[df["program"] != "semantic", "program"]) == {"placeholder_gold"}
