"""Verilog-A on the real toolchain (openvaf-r compiler + VACASK simulator via OSDI): what the syntax
level rejects and how it says so, which sweep point / time the semantic level reports, the strict
oracle check, and the (absent) upstream loader."""
from pathlib import Path

import pytest
import yaml

from conftest import skip_without_toolchain
from dslbench import pipeline, toolchains
from dslbench.tasks import Task, TaskError, load_task_file, load_tasks

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "veriloga"
H = '`include "disciplines.vams"\n'


available = skip_without_toolchain("veriloga")


def resistor(expr: str = "V(p, n) / r", name: str = "res_t", default: str = "1k") -> str:
    return (H + f"module {name}(p, n);\n  inout p, n;\n  electrical p, n;\n"
            f"  parameter real r = {default} from (0:inf);\n  analog begin\n    I(p, n) <+ {expr};\n  end\nendmodule\n")


ORACLE = {"module": "res_t", "bench": "v1 (a 0) vsource dc=0\nx1 (a 0) dut\n", "model_params": {"r": 500},
          "analyses": [{"name": "dc1", "sweep": {"instance": "v1", "from": -1, "to": 1, "step": 0.5},
                        "probes": ["v1:flow(br)"]}]}


def make_task(gold: str, oracle: dict) -> Task:
    return Task(id="veriloga-test", dsl="veriloga", domain="Analog", title="test", difficulty="easy",
                constructs=("test",), failure_modes=(), instruction="test", context={}, gold=gold,
                oracle=oracle, provenance={"source": "authored", "licence": "CC-BY-4.0"}, split="test")


TASK = make_task(resistor(), ORACLE)


def test_probe_names_compiler_and_simulator():
    probe = toolchains.probe("veriloga")
    assert probe.available and probe.exact
    assert "OpenVAF-Reloaded" in probe.version and "VACASK" in probe.version
    assert "OpenVAF" in probe.dialect


def test_gold_passes_and_equivalent_rewrite_passes():
    out = pipeline.evaluate("veriloga", TASK, resistor("V(p, n) * (1.0 / r)"))
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "pass", out
    assert "5 probed values agree" in out["semantic"]["diagnostics"]


def test_trailing_comment_without_newline_is_judged_not_timed_out():
    # Truncated model outputs often stop inside a // comment; openvaf-r alone hangs on such a file.
    out = pipeline.evaluate("veriloga", TASK, resistor() + "// end of res_t")
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "pass", out  # a hang is "timed out"


def test_syntax_reports_first_error_with_location():
    bad = resistor("V(p, n) / r").replace("  analog begin\n", "  analog begin\n    @(cross(V(p, n), +1)) ;\n")
    out = pipeline.evaluate("veriloga", TASK, bad)
    assert out["syntax"]["status"] == "fail"
    d = out["syntax"]["diagnostics"]
    assert d.startswith("error: unexpected token") and "design.va:7:" in d and "\x1b" not in d
    assert out["semantic"]["status"] == "fail"


def test_digital_realtime_is_rejected():
    out = pipeline.evaluate("veriloga", TASK, resistor("V(p, n) / r + 0 * $realtime"))
    assert out["syntax"]["status"] == "fail" and "$realtime" in out["syntax"]["diagnostics"]


def test_semantic_reports_sweep_point_expected_and_got():
    out = pipeline.evaluate("veriloga", TASK, resistor("V(p, n) / (1.01 * r)"))
    assert out["syntax"]["status"] == "pass"
    d = out["semantic"]["diagnostics"]
    assert out["semantic"]["status"] == "fail"
    # first deviating point of the sweep: v1 = -1 V, expected I(v1) = +2 mA through the source; the
    # expected value is kept out of the diagnostics (they are fed back to the model)
    assert d.startswith("dc1 at v1=-1: v1:flow(br) got 0.0019802, outside the tolerance"), d
    assert "0.002," not in d and "0.002 " not in d
    assert out["semantic"]["expected"] == "dc1 at v1=-1: v1:flow(br) expected 0.002"


def test_semantic_mutant_keeps_the_gold_values_out_of_diagnostics():
    task = next(t for t in load_tasks(["veriloga"])["veriloga"] if t.id == "veriloga-001")
    mutant = next(m for m in task.mutants if m.level == "semantic")         # V * r instead of V / r
    sem = pipeline.evaluate("veriloga", task, mutant.program)["semantic"]
    assert sem["status"] == "fail" and sem["reason"] == "wrong_output"
    # r = 2200 ohm, v1 = -5 V: the gold's current through the source is 5 / 2200 A
    gold_value = f"{5 / 2200:.6g}"
    assert sem["diagnostics"].startswith("dc1 at v1=-5: v1:flow(br) got 11000,"), sem["diagnostics"]
    assert gold_value not in sem["diagnostics"]
    assert sem["expected"] == f"dc1 at v1=-5: v1:flow(br) expected {gold_value}"


def test_semantic_within_tolerance_passes():
    # a 1e-5 relative difference is below rtol 1e-3
    out = pipeline.evaluate("veriloga", TASK, resistor("V(p, n) / (1.00001 * r)"))
    assert out["semantic"]["status"] == "pass", out["semantic"]


def test_wrong_module_or_parameter_name_fails_with_reason():
    out = pipeline.evaluate("veriloga", TASK, resistor(name="res_other"))
    assert out["semantic"]["status"] == "fail" and "vacask" in out["semantic"]["diagnostics"]
    renamed = resistor().replace("real r =", "real rr =").replace("/ r;", "/ rr;")
    out = pipeline.evaluate("veriloga", TASK, renamed)
    assert out["semantic"]["status"] == "fail" and "'r' not found" in out["semantic"]["diagnostics"]


def test_transient_mismatch_names_the_time():
    gold = H + ("module cap_t(p, n);\n  inout p, n;\n  electrical p, n;\n  parameter real c = 1n;\n"
                "  analog I(p, n) <+ c * ddt(V(p, n));\nendmodule\n")
    oracle = {"module": "cap_t", "bench": 'v1 (a 0) vsource dc=0 type="pulse" val0=0 val1=1 delay=1u rise=10u '
              'fall=10u width=10u period=1\nx1 (a 0) dut\n',
              "analyses": [{"name": "tr1", "tran": {"step": 1e-7, "stop": 4e-5, "maxstep": 1e-7},
                            "probes": ["v1:flow(br)"], "at": [5e-6, 30e-6], "rtol": 1e-2, "atol": 1e-8}]}
    task = make_task(gold, oracle)
    assert pipeline.evaluate("veriloga", task, gold)["semantic"]["status"] == "pass"
    out = pipeline.evaluate("veriloga", task, gold.replace("c * ddt", "2 * c * ddt"))
    assert out["semantic"]["status"] == "fail"
    assert out["semantic"]["diagnostics"].startswith("tr1 at t=5e-06: v1:flow(br) got -0.0002, outside")
    assert "-0.0001" not in out["semantic"]["diagnostics"]
    assert out["semantic"]["expected"] == "tr1 at t=5e-06: v1:flow(br) expected -0.0001"


def test_identical_runs_give_identical_diagnostics():
    a = pipeline.evaluate("veriloga", TASK, resistor("V(p, n) / (2 * r)"))
    b = pipeline.evaluate("veriloga", TASK, resistor("V(p, n) / (2 * r)"))
    assert a["semantic"]["diagnostics"] == b["semantic"]["diagnostics"]
    assert a["syntax"]["log"] == b["syntax"]["log"]


@pytest.mark.parametrize("patch, field", [
    ({"module": "nope"}, "oracle.module"),
    ({"bench": "v1 (a 0) vsource dc=0\n"}, "oracle.bench"),
    ({"model_params": {"R": 1}}, "oracle.model_params.R"),     # the key at fault (lower-case names)
    ({"analyses": []}, "oracle.analyses"),
    ({"analyses": [{"name": "a", "sweep": {"instance": "vx", "from": 0, "to": 1, "step": 0.1},
                    "probes": ["a"]}]}, "oracle.analyses[0].sweep.instance"),
    ({"analyses": [{"name": "a", "tran": {"step": 1e-6}, "probes": ["a"]}]}, "oracle.analyses[0].tran"),
    ({"analyses": [{"name": "a", "op": {}, "probes": []}]}, "oracle.analyses[0].probes"),
    ({"tolerance": 1}, "oracle.tolerance"),
])
def test_malformed_oracle_is_rejected_with_file_line_and_field(tmp_path, patch, field):
    src = ROOT / "data" / "tasks" / "veriloga" / "veriloga-001.yaml"
    data = yaml.safe_load(src.read_text())
    data["oracle"].update(patch)
    folder = tmp_path / "veriloga"
    folder.mkdir()
    path = folder / "veriloga-001.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    tc = toolchains.get("veriloga")
    with pytest.raises(TaskError) as err:
        load_task_file(path, tc.check_oracle)
    assert err.value.field == field and err.value.line and "veriloga-001.yaml" in str(err.value)


def test_every_shipped_task_loads_strictly():
    tc = toolchains.get("veriloga")
    paths = sorted((ROOT / "data" / "tasks" / "veriloga").glob("*.yaml"))
    assert len(paths) >= 22
    for p in paths:
        load_task_file(p, tc.check_oracle)


def test_no_upstream_benchmark_gives_a_clear_error():
    tc = toolchains.get("veriloga")
    from dslbench.errors import UserError
    with pytest.raises(UserError, match="no upstream benchmark for Verilog-A"):
        tc.import_upstream(FIXTURES / "va_dir")


def test_non_terminating_model_is_contained():
    # x is used in the contribution, so the endless loop cannot be optimised away
    spin = resistor("V(p, n) / r + 1e-30 * x").replace(
        "  analog begin\n", "  real x;\n  analog begin\n    x = 0;\n    while (x >= 0) x = x + 1;\n")
    out = pipeline.evaluate("veriloga", TASK, spin)
    assert out["syntax"]["status"] == "pass"
    assert out["semantic"]["status"] == "fail"
    assert "simulation did not finish within 20 s" in out["semantic"]["diagnostics"]
