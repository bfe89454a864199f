"""OpenQASM 3 on the real toolchain (openqasm3 reference parser + Qiskit importer + Qiskit Aer): what each
level rejects and why, the register interface, hidden oracle variants, the strict oracle spec check,
and the QCircuitBench loader (fixtures in tests/fixtures/openqasm, written for these tests)."""
import shutil
import importlib
from pathlib import Path

import pytest
import yaml

from conftest import skip_without_toolchain
from dslbench import pipeline, toolchains
from dslbench.tasks import Task, TaskError, load_task_file, load_tasks
from dslbench.upstream import NotThisBenchmark, dump_task, write_tasks

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "openqasm"
QCB = FIXTURES / "qcircuitbench"
H = 'OPENQASM 3.0;\ninclude "stdgates.inc";\n'


available = skip_without_toolchain("openqasm")


def make_task(gold: str, oracle: dict, context: dict | None = None) -> Task:
    return Task(id="openqasm-test", dsl="openqasm", domain="Quantum Computing", title="test", difficulty="easy",
                constructs=("test",), failure_modes=(), instruction="test", context=context or {}, gold=gold,
                oracle=oracle, provenance={"source": "authored", "licence": "CC-BY-4.0"}, split="test")


BELL = make_task(H + "qubit[2] q;\nh q[0];\ncx q[0], q[1];\n", {"mode": "statevector", "qubits": {"q": 2}})


def test_probe_names_both_parsers_and_the_simulator():
    probe = toolchains.probe("openqasm")
    for part in ("openqasm3 1.", "ANTLR 4.", "Qiskit 2.", "qiskit-qasm3-import 0.", "Qiskit Aer 0."):
        assert part in probe.version
    assert "OpenQASM 3" in probe.dialect


@pytest.mark.parametrize("program, reason", [
    (H + "qubit[2] q;\nh q[0]\ncx q[0], q[1];\n", "openqasm3 parser: line 5:0 missing ';' at 'cx'"),
    ('OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\nh q[0];\ncx q[0],q[1];\n', "declares OPENQASM 2.0"),
    ('OPENQASM 3.0;\ninclude "qelib1.inc";\nqubit[2] q;\nh q[0];\n', 'include "qelib1.inc": no such file'),
    (H + "qubit[2] q;\nh q[0];\ncu1(pi/2) q[0], q[1];\n", "Qiskit importer: 5,0: gate 'cu1' is not defined"),
    (H + "qubit[2] q;\nh q[2];\n", "Qiskit importer: IndexError: index out of range"),
    (H + "qubit[2] q;\nbit[2] c;\nc[0] = measure q[0];\nif (c[0] == 1) x q[1];\n",
     "conditions must be 'bit == const bool'"),
])
def test_syntax_failures_say_which_tool_rejected_what(program, reason):
    out = pipeline.evaluate("openqasm", BELL, program)
    assert out["syntax"]["status"] == "fail"
    assert reason in out["syntax"]["diagnostics"]
    assert out["semantic"]["status"] == "fail" and "not run" in out["semantic"]["diagnostics"]


def test_qasm2_register_syntax_is_legal_openqasm3_and_judged_on_behaviour():
    program = H + "qreg q[2];\ncreg c[2];\nh q[0];\ncx q[0], q[1];\nmeasure q -> c;\n"
    out = pipeline.evaluate("openqasm", BELL, program)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "pass"


def test_included_oracle_is_inlined_without_shifting_line_numbers():
    oracle_inc = "// a comment line\ngate Oracle a, b {\n  cx a, b;\n}\n"
    task = make_task(H + 'include "oracle.inc";\nqubit[2] q;\nOracle q[0], q[1];\n',
                     {"mode": "unitary", "qubits": {"q": 2}}, {"oracle.inc": oracle_inc})
    assert pipeline.evaluate("openqasm", task, task.gold)["semantic"]["status"] == "pass"
    wrong = H + 'include "oracle.inc";\nqubit[2] q;\n\nOracle q[0], q[1];\nfoo q[0];\n'
    out = pipeline.evaluate("openqasm", task, wrong)
    assert "7,0: gate 'foo' is not defined" in out["syntax"]["diagnostics"]


def test_registers_are_matched_by_name_not_declaration_order():
    task = make_task(H + "qubit[1] a;\nqubit[2] b;\nx a[0];\ncx a[0], b[1];\n",
                     {"mode": "unitary", "qubits": {"a": 1, "b": 2}})
    swapped = H + "qubit[2] b;\nqubit a;\nx a;\ncx a, b[1];\n"
    assert pipeline.evaluate("openqasm", task, swapped)["semantic"]["status"] == "pass"
    out = pipeline.evaluate("openqasm", task, H + "qubit[3] q;\nx q[0];\ncx q[0], q[2];\n")
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "fail"
    assert "expected a[1], b[2], declared q[3]" in out["semantic"]["diagnostics"]


def test_semantic_diagnostics_show_the_first_difference():
    # the program's own state/column in the diagnostics; the gold's (and the fidelity with it) in `expected`
    out = pipeline.evaluate("openqasm", BELL, H + "qubit[2] q;\nh q[0];\ncx q[1], q[0];\n")
    sem = out["semantic"]
    assert sem["status"] == "fail"
    assert sem["diagnostics"] == ("final state differs from the gold's (beyond global phase): "
                                  "got 0.707|q=00> + 0.707|q=01>")
    assert sem["expected"] == "expected 0.707|q=00> + 0.707|q=11> (fidelity 0.250 with the program's state)"
    cz = make_task(H + "qubit[2] q;\ncz q[0], q[1];\n", {"mode": "unitary", "qubits": {"q": 2}})
    sem = pipeline.evaluate("openqasm", cz, H + "qubit[2] q;\ncx q[0], q[1];\n")["semantic"]
    assert sem["diagnostics"] == ("unitary differs (beyond global phase); first differing input |q=01>: "
                                  "got 1|q=11>")
    assert sem["expected"] == "input |q=01>: expected 1|q=01>"
    # Equal up to global phase passes: rz and p differ only by a phase.
    phase = make_task(H + "qubit[1] q;\np(pi/3) q[0];\n", {"mode": "unitary", "qubits": {"q": 1}})
    assert pipeline.evaluate("openqasm", phase, H + "qubit[1] q;\nrz(pi/3) q[0];\n")["semantic"]["status"] == "pass"


def test_semantic_mutant_keeps_the_gold_state_out_of_diagnostics():
    task = next(t for t in load_tasks(["openqasm"])["openqasm"] if t.id == "openqasm-001")     # Bell pair
    mutant = next(m for m in task.mutants if m.level == "semantic")          # CNOT control and target swapped
    sem = pipeline.evaluate("openqasm", task, mutant.program)["semantic"]
    assert sem["status"] == "fail" and sem["reason"] == "wrong_output"
    gold_state = "0.707|q=00> + 0.707|q=11>"
    assert gold_state not in sem["diagnostics"] and "fidelity" not in sem["diagnostics"]
    assert sem["expected"].startswith(f"expected {gold_state}")


def test_counts_mismatch_keeps_the_gold_distribution_out_of_diagnostics():
    task = make_task(H + "qubit[2] q;\nbit[2] c;\nx q[1];\nc = measure q;\n",
                     {"mode": "counts", "qubits": {"q": 2}, "clbits": {"c": 2}})
    sem = pipeline.evaluate("openqasm", task, H + "qubit[2] q;\nbit[2] c;\nx q[0];\nc = measure q;\n")["semantic"]
    assert sem["status"] == "fail"
    assert sem["diagnostics"] == ("distribution of the measured bits differs from the gold's (TVD above 0.05; "
                                  "exact probabilities): got {c=01: 1.000}")
    assert sem["expected"] == "expected {c=10: 1.000} (TVD 1.000)"


def test_mid_circuit_measurement_is_not_a_unitary():
    task = make_task(H + "qubit[2] q;\nh q[0];\n", {"mode": "unitary", "qubits": {"q": 2}})
    program = H + "qubit[2] q;\nbit b;\nh q[0];\nb = measure q[0];\nh q[0];\n"
    out = pipeline.evaluate("openqasm", task, program)
    assert out["semantic"]["status"] == "fail" and "mid-circuit measurement" in out["semantic"]["diagnostics"]
    program = H + "qubit[2] q;\nbit b;\nh q[0];\nb = measure q[0];\nif (b) x q[1];\n"
    out = pipeline.evaluate("openqasm", task, program)
    assert out["semantic"]["status"] == "fail" and "contains an if statement" in out["semantic"]["diagnostics"]


def test_hidden_oracle_variants_catch_hard_coded_answers():
    task = next(t for t in load_tasks(["openqasm"])["openqasm"] if t.id == "openqasm-013")
    hard_coded = next(m.program for m in task.mutants if "hard-coded" in m.note)
    out = pipeline.evaluate("openqasm", task, hard_coded)
    assert out["semantic"]["status"] == "fail"
    assert out["semantic"]["diagnostics"].startswith("with hidden include variant 1 (oracle.inc)")
    assert out["semantic"]["expected"].startswith("with hidden include variant 1 (oracle.inc): expected")
    assert "on all 3 include variants" in pipeline.evaluate("openqasm", task, task.gold)["semantic"]["diagnostics"]


def test_counts_use_exact_probabilities_unless_the_circuit_needs_shots():
    # Same distribution over 2^10 outcomes, different gate order: sampling would differ, exact does not.
    gold = H + "qubit[10] q;\nbit[10] c;\nh q;\ncx q[0], q[5];\ncz q[1], q[2];\nc = measure q;\n"
    other = H + "qubit[10] q;\nbit[10] c;\ncz q[1], q[2];\nh q[9];\nh q[0:8];\ncx q[0], q[5];\nc = measure q;\n"
    task = make_task(gold, {"mode": "counts", "qubits": {"q": 10}, "clbits": {"c": 10}, "tolerance": 0.01})
    out = pipeline.evaluate("openqasm", task, other)
    assert out["semantic"]["status"] == "pass" and "exact probabilities" in out["semantic"]["diagnostics"]
    feed = next(t for t in load_tasks(["openqasm"])["openqasm"] if t.id == "openqasm-014")
    assert "4000 shots, seed 21" in pipeline.evaluate("openqasm", feed, feed.gold)["semantic"]["diagnostics"]


def test_non_terminating_loop_is_a_timeout_failure(monkeypatch):
    tc = toolchains.get("openqasm")
    monkeypatch.setitem(tc.card, "limits", {**tc.card["limits"], "timeout_s": 6})
    task = make_task(H + "qubit[1] q;\nbit[1] c;\nc[0] = measure q[0];\n",
                     {"mode": "counts", "qubits": {"q": 1}, "clbits": {"c": 1}})
    spin = task.gold + "while (c == 0) {\n  x q[0];\n  x q[0];\n  c[0] = measure q[0];\n}\n"
    out = pipeline.evaluate("openqasm", task, spin)
    assert out["syntax"]["status"] == "pass"
    assert out["semantic"]["status"] == "fail" and "did not finish within 6 s" in out["semantic"]["diagnostics"]
    assert "non-terminating" not in out["semantic"]["diagnostics"] and "1 qubit, counts mode" in out["semantic"]["diagnostics"]


def test_statevector_basis_inputs_judge_a_transform_beyond_the_zero_input():
    qft = H + "qubit[2] q;\nh q[1];\ncp(pi/2) q[0], q[1];\nh q[0];\nswap q[0], q[1];\n"
    layer = H + "qubit[2] q;\nh q[0];\nh q[1];\n"   # the same state from |00> only
    zero_only = make_task(qft, {"mode": "statevector", "qubits": {"q": 2}})
    assert pipeline.evaluate("openqasm", zero_only, layer)["semantic"]["status"] == "pass"
    task = make_task(qft, {"mode": "statevector", "qubits": {"q": 2}, "basis_inputs": [1, 2, 3]})
    assert toolchains.get("openqasm").check_oracle(task) == []
    out = pipeline.evaluate("openqasm", task, qft)
    assert out["semantic"]["status"] == "pass" and "3 other basis input(s)" in out["semantic"]["diagnostics"]
    out = pipeline.evaluate("openqasm", task, layer)
    assert out["semantic"]["status"] == "fail" and out["semantic"]["diagnostics"].startswith("from input |q=01>")


@pytest.mark.parametrize("change, field, message", [
    ({"mode": "density"}, "oracle.mode", "must be one of unitary, statevector, counts"),
    ({"qubits": {"q": 0}}, "oracle.qubits.q", "positive integer"),
    ({"qubits": {"t": 2}}, "oracle.qubits.t", "stdgates.inc gate"),
    ({"shots": 100}, "oracle.shots", "only meaningful in counts mode"),
    ({"tolerance": 0.5}, "oracle.tolerance", "(0, 0.1]"),
    ({"variants": [{"noise.inc": "gate noise a { x a; }"}]}, "oracle.variants[0].noise.inc", "not a context file"),
    ({"qubits": {"q": 11}, "mode": "unitary"}, "oracle.qubits", "at most 10"),
    ({"basis_inputs": [4]}, "oracle.basis_inputs", "basis-state indices"),
    ({"extra": 1}, "oracle.extra", "unknown key"),
])
def test_malformed_oracle_spec_names_file_line_and_field(tmp_path, change, field, message):
    data = yaml.safe_load((ROOT / "data/tasks/openqasm/openqasm-001.yaml").read_text())
    data["oracle"].update(change)
    folder = tmp_path / "openqasm"
    folder.mkdir()
    path = folder / "openqasm-001.yaml"
    path.write_text(dump_task(data))
    with pytest.raises(TaskError) as err:
        load_task_file(path, toolchains.get("openqasm").check_oracle)
    assert err.value.field == field and message in err.value.message
    assert err.value.line and err.value.line > 1


def test_counts_mode_needs_observed_registers_to_exist():
    task = make_task(H, {"mode": "counts", "qubits": {"q": 1}, "clbits": {"c": 1}, "observe": ["d"]})
    assert ("observe[0]", "'d' is not one of the clbits registers") in toolchains.get("openqasm").check_oracle(task)


# --- QCircuitBench loader ---------------------------------------------------------------------------

def _import(source=QCB):
    made = toolchains.get("openqasm").import_upstream(source)
    return made.tasks, {s.record: s for s in made.skipped}


def test_loader_maps_each_algorithm_and_size_to_a_task():
    tasks, skipped = _import()
    by_id = {t["id"]: t for t in tasks}
    assert sorted(by_id) == ["openqasm-qcb-deutsch-jozsa-n2", "openqasm-qcb-pair-maker-n2", "openqasm-qcb-pair-maker-n3",
                             "openqasm-qcb-parity-probe-n2", "openqasm-qcb-parity-probe-n3",
                             "openqasm-qcb-phase-ladder-n2"]
    probe = by_id["openqasm-qcb-parity-probe-n2"]
    folder = QCB / "Algorithm_Design/Quantum_Computing/parity_probe"
    assert probe["gold"] == (folder / "parity_probe_n2.qasm").read_text()
    assert probe["context"] == {"oracle.inc": (folder / "test_oracle/n2/trial1/oracle.inc").read_text()}
    assert probe["oracle"]["variants"] == [{"oracle.inc": (folder / f"test_oracle/n2/trial{k}/oracle.inc").read_text()}
                                           for k in (2, 3)]
    assert probe["oracle"]["mode"] == "counts" and probe["oracle"]["clbits"] == {"c": 2}
    assert probe["oracle"]["qubits"] == {"q": 3}
    assert "for $n = $2: 1. the circuit written in OpenQASM 3." in probe["instruction"]
    assert "{qubit number}" not in probe["instruction"] and "`qubit[3] q;` and `bit[2] c;`" in probe["instruction"]
    assert probe["provenance"] == {"source": "upstream", "benchmark": "QCircuitBench", "licence": "MIT",
                                   "upstream_id": "Algorithm_Design/Quantum_Computing/parity_probe/parity_probe_n2.qasm"}
    assert probe["split"] == "test"
    assert [m["note"] for m in probe["mutants"]] == ["h replaced by x on q[0]", "x applied to q[0] instead of q[2]",
                                                     "gate dropped: h q[2];"]
    assert all(m["level"] == "semantic" and m["program"] != probe["gold"] for m in probe["mutants"])
    # the published trials are numbered freely: n3's only oracle is trial13
    assert by_id["openqasm-qcb-parity-probe-n3"]["context"] == {
        "oracle.inc": (folder / "test_oracle/n3/trial13/oracle.inc").read_text()}
    assert by_id["openqasm-qcb-pair-maker-n3"]["oracle"] == {"mode": "unitary", "qubits": {"q": 3}}
    assert by_id["openqasm-qcb-pair-maker-n3"]["context"] == {}
    assert by_id["openqasm-qcb-pair-maker-n2"]["oracle"]["mode"] == "counts"  # feed-forward
    # one constant Deutsch-Jozsa oracle published: the other constant one and balanced ones are added
    dj = by_id["openqasm-qcb-deutsch-jozsa-n2"]["oracle"]["variants"]
    assert len(dj) == 3 and any("cx _gate_q_0, _gate_q_2;" in v["oracle.inc"] for v in dj)
    assert {k: s.reason for k, s in skipped.items()} == {
        "Algorithm_Design/Quantum_Computing/lost_oracle/lost_oracle_n2.qasm": "missing_oracle",
        "Algorithm_Design/Quantum_Computing/wide_register/wide_register_n24.qasm": "too_many_qubits"}
    assert "24 qubits" in skipped["Algorithm_Design/Quantum_Computing/wide_register/wide_register_n24.qasm"].detail


def test_imported_tasks_load_strictly_and_their_golds_pass(tmp_path):
    tasks, _ = _import()
    paths = write_tasks("openqasm", tasks, tmp_path)
    assert len(paths) == 6
    loaded = {p.stem: load_task_file(p, toolchains.get("openqasm").check_oracle) for p in paths}
    probe = loaded["openqasm-qcb-parity-probe-n2"]
    out = pipeline.evaluate("openqasm", probe, probe.gold)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "pass"
    assert "on all 3 include variants" in out["semantic"]["diagnostics"]
    hard_coded = H + 'include "oracle.inc";\nbit[2] c;\nqubit[3] q;\nx q[1];\nc = measure q[0:1];\n'
    out = pipeline.evaluate("openqasm", probe, hard_coded)
    assert out["semantic"]["status"] == "fail" and "hidden include variant 1" in out["semantic"]["diagnostics"]
    dj = loaded["openqasm-qcb-deutsch-jozsa-n2"]
    out = pipeline.evaluate("openqasm", dj, dj.gold)
    assert [out["syntax"]["status"], out["semantic"]["status"]] == ["pass", "pass"], out["semantic"]["diagnostics"]
    # answering "constant" without a query passes the published (constant) oracle, not the added ones
    blind = H + 'include "oracle.inc";\nbit[2] c;\nqubit[3] q;\nc[0] = measure q[0];\nc[1] = measure q[1];\n'
    out = pipeline.evaluate("openqasm", dj, blind)
    assert out["semantic"]["status"] == "fail" and "hidden include variant" in out["semantic"]["diagnostics"]


def test_imported_gold_gets_semantic_mutants_that_pass_syntax_and_fail_semantics(tmp_path):
    tasks, _ = _import()
    ladder = next(t for t in tasks if t["id"] == "openqasm-qcb-phase-ladder-n2")
    assert [m["note"] for m in ladder["mutants"]] == [
        "cx control and target swapped: cx q[0], q[1] -> cx q[1], q[0]",
        "rotation angle halved in gate Ladder: cp(pi/2) -> cp(pi/4)",
        "h replaced by x on _gate_q_1 in gate Ladder"]
    assert "  cp(pi/4) _gate_q_0, _gate_q_1;\n" in ladder["mutants"][1]["program"]
    paths = write_tasks("openqasm", tasks, tmp_path)
    loaded = {p.stem: load_task_file(p, toolchains.get("openqasm").check_oracle) for p in paths}
    for task_id in ("openqasm-qcb-phase-ladder-n2", "openqasm-qcb-parity-probe-n2"):
        task = loaded[task_id]
        assert len(task.mutants) == 3
        for m in task.mutants:
            out = pipeline.evaluate("openqasm", task, m.program)
            assert [out["syntax"]["status"], out["semantic"]["status"]] == ["pass", "fail"], (m.note, out)


def test_mutant_generator_avoids_slips_that_cannot_change_the_measured_bits():
    qcb_semantic_mutants = importlib.import_module("dslbench.plugins.openqasm.qcircuitbench").qcb_semantic_mutants
    oracle = {"mode": "counts", "qubits": {"q": 2}, "clbits": {"c": 1}}
    # rz before the measurement only changes a phase; q[1] is never measured nor coupled to q[0]
    gold = H + "bit[1] c;\nqubit[2] q;\nh q[1];\nh q[0];\nrz(pi/2) q[0];\nc[0] = measure q[0];\n"
    notes = [m["note"] for m in qcb_semantic_mutants(gold, oracle)]
    assert notes == ["h replaced by x on q[0]", "gate dropped: h q[0];"]
    # a state prepared from |0...0>: a controlled gate whose control is still |0> acts trivially
    gold = H + "qubit[3] q;\ncx q[2], q[1];\nh q[0];\ncx q[0], q[1];\n"
    notes = [m["note"] for m in qcb_semantic_mutants(gold, {"mode": "statevector", "qubits": {"q": 3}})]
    assert notes[0] == "cx control and target swapped: cx q[0], q[1] -> cx q[1], q[0]"


def test_malformed_upstream_record_is_skipped_not_fatal(tmp_path):
    made = toolchains.get("openqasm").import_upstream(FIXTURES / "broken")
    assert made.tasks == [] and len(made.skipped) == 1
    bad = made.skipped[0]
    assert bad.record == "Algorithm_Design/Quantum_Computing/cracked_circuit/cracked_circuit_n2.qasm"
    assert bad.reason == "malformed_record" and "line 5:0 missing ';'" in bad.detail
    folder = tmp_path / "two_texts"
    shutil.copytree(QCB / "Algorithm_Design/Quantum_Computing/pair_maker", folder)
    (folder / "second_description.txt").write_text("another text")
    made = toolchains.get("openqasm").import_upstream(tmp_path)
    assert {s.reason for s in made.skipped} == {"malformed_record"}
    assert "expected one *_description.txt" in made.skipped[0].detail
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotThisBenchmark, match="no QCircuitBench records"):
        toolchains.get("openqasm").import_upstream(tmp_path / "empty")


def test_exact_tolerance_applies_only_when_both_distributions_are_exact():
    gold = H + "qubit[1] q;\nbit[1] c;\nh q[0];\nc[0] = measure q[0];\n"
    slip = H + "qubit[1] q;\nbit[1] c;\nry(pi/2 + 0.05) q[0];\nc[0] = measure q[0];\n"    # P(1) = 0.525
    oracle = {"mode": "counts", "qubits": {"q": 1}, "clbits": {"c": 1}, "tolerance": 0.05}
    assert pipeline.evaluate("openqasm", make_task(gold, oracle), slip)["semantic"]["status"] == "pass"
    tight = make_task(gold, {**oracle, "exact_tolerance": 1e-6})
    sem = pipeline.evaluate("openqasm", tight, slip)["semantic"]
    assert sem["status"] == "fail" and "TVD above 1e-06; exact probabilities" in sem["diagnostics"]
    # a candidate that measures mid-circuit is sampled: shot noise falls under the task's tolerance again
    sampled = H + "qubit[1] q;\nbit[1] c;\nh q[0];\nc[0] = measure q[0];\nx q[0];\nx q[0];\n"
    sem = pipeline.evaluate("openqasm", tight, sampled)["semantic"]
    assert sem["status"] == "pass" and "program: 4000 shots" in sem["diagnostics"]


def test_counts_gold_runs_once_per_task_then_comes_from_the_oracle_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLBENCH_ORACLE_CACHE", str(tmp_path / "oracle"))
    task = make_task(H + "qubit[2] q;\nbit[2] c;\nh q[0];\ncx q[0], q[1];\nc = measure q;\n",
                     {"mode": "counts", "qubits": {"q": 2}, "clbits": {"c": 2}})
    wrong = H + "qubit[2] q;\nbit[2] c;\nh q[0];\nh q[1];\nc = measure q;\n"
    first = pipeline.evaluate("openqasm", task, wrong)["semantic"]
    kept = list((tmp_path / "oracle" / "openqasm").glob("*.json"))
    assert len(kept) == 1 and '"c=11"' in kept[0].read_text()
    again = pipeline.evaluate("openqasm", task, wrong)["semantic"]
    assert first["status"] == again["status"] == "fail" and first["expected"] == again["expected"]
    assert list((tmp_path / "oracle" / "openqasm").glob("*.json")) == kept
    # a gold that cannot be judged is not kept: the candidate's run judges it and says why
    broken = make_task(H + "qubit[2] q;\nbit[2] c;\nc = measure q;\n", {**task.oracle, "clbits": {"d": 2}})
    sem = pipeline.evaluate("openqasm", broken, wrong)["semantic"]
    assert sem["status"] == "error" and "the gold cannot be judged" in sem["diagnostics"]
    assert len(list((tmp_path / "oracle" / "openqasm").glob("*.json"))) == 1


def test_an_oracle_too_large_to_parse_within_the_limits_is_skipped(monkeypatch):
    qcb = importlib.import_module("dslbench.plugins.openqasm.qcircuitbench")
    monkeypatch.setattr(qcb, "QCB_MAX_INCLUDE_BYTES", 10)
    made = toolchains.get("openqasm").import_upstream(QCB)
    large = [s for s in made.skipped if s.reason == "oracle_too_large"]
    assert large and all("oracle.inc is 0 kB" in s.detail for s in large)
    assert all(t["context"] == {} for t in made.tasks)     # only the tasks without an include are left


def _classical(gate_text: str, n: int):
    """The function x -> y of an oracle made of cx and x gates on |x>|0>, evaluated bit by bit."""
    import re
    wires = re.search(r"gate\s+\w+\s+([^{]+)\{", gate_text).group(1)
    index = {w.strip(): i for i, w in enumerate(wires.split(","))}
    ops = re.findall(r"(cx|x)\s+([^;]+);", gate_text.split("{", 1)[1])

    def f(x: int) -> int:
        bits = [(x >> i) & 1 for i in range(n)] + [0] * n
        for name, operands in ops:
            w = [index[o.strip()] for o in operands.split(",")]
            if name == "x":
                bits[w[0]] ^= 1
            elif bits[w[0]]:
                bits[w[1]] ^= 1
        return sum(b << i for i, b in enumerate(bits[n:]))
    return f


def test_simon_variants_are_two_to_one_oracles_with_other_secrets():
    """A single published Simon oracle (secret 011 here) cannot show an h moved onto q[2]; the variants
    are true Simon oracles of the same gate, for the secrets 111 and 100 (q[2] alone)."""
    qcb = importlib.import_module("dslbench.plugins.openqasm.qcircuitbench")
    upstream = ("gate Oracle _gate_q_0, _gate_q_1, _gate_q_2, _gate_q_3, _gate_q_4, _gate_q_5 {\n"
                "  cx _gate_q_0, _gate_q_3;\n  cx _gate_q_1, _gate_q_4;\n  cx _gate_q_2, _gate_q_5;\n"
                "  cx _gate_q_0, _gate_q_3;\n  cx _gate_q_0, _gate_q_4;\n  x _gate_q_3;\n}\n")
    variants = [v["oracle.inc"] for v in qcb._simon_variants(upstream)]
    assert len(variants) == 2 and all(v.startswith("gate Oracle _gate_q_0, _gate_q_1") for v in variants)
    secrets = []
    for text in [upstream] + variants:
        f = _classical(text, 3)
        images = [f(x) for x in range(8)]
        assert len(set(images)) == 4                      # two-to-one
        s = next(x ^ y for x in range(8) for y in range(x + 1, 8) if images[x] == images[y])
        assert all(f(x) == f(x ^ s) for x in range(8))
        secrets.append(s)
    assert secrets == [0b011, 0b111, 0b100]
    assert qcb._simon_variants("gate Oracle a, b, c {\n}\n") == []     # not 2n wires
