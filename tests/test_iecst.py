"""IEC 61131-3 ST validator: the evaluator (unit tests on hand-written IR), the real blark-based
checks through the sandboxed pipeline (no mocks), the oracle-spec checks and the Agents4PLC loader."""
import sys
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains, upstream
from dslbench.paths import repo_root
from dslbench.tasks import TaskError, load_task_file, load_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "iecst"
TC = toolchains.get("iecst")
V = sys.modules[type(TC).__module__]
TASKS = {t.id: t for t in load_tasks(["iecst"])["iecst"]}

sys.path.insert(0, str(repo_root() / "toolchains" / "iecst"))
import st_eval as E  # noqa: E402  (the evaluator is pure Python: safe to unit-test on hand-written IR)


@pytest.fixture(scope="module")
def available():
    probe = toolchains.probe("iecst")
    if not probe.available:
        pytest.skip(f"iecst toolchain unavailable here: {probe.reason}")
    return probe


def run(task, program):
    out = pipeline.evaluate("iecst", task, program)
    return out["syntax"], out["semantic"]


# --- evaluator on hand-written IR -------------------------------------------------------------------

def _var(n):
    return ["var", n, 1]


def _lit(v, t="ANY_INT"):
    return ["lit", t, v]


def _fb(body, vars_):
    return {"kind": "FUNCTION_BLOCK", "name": "FB", "line": 1, "returns": None, "body": body,
            "vars": [{"name": n, "section": s, "type": t, "init": None, "line": 1} for n, s, t in vars_]}


def test_ton_follows_the_scan_clock():
    pou = _fb([["fbcall", _var("T"), {"IN": _var("GO"), "PT": _lit(1000, "TIME")}, {}, 1],
               ["assign", _var("Q"), ["field", _var("T"), "Q", 1], 1]],
              [("GO", "INPUT", "BOOL"), ("Q", "OUTPUT", "BOOL"), ("T", "VAR", "TON")])
    oracle = {"pou": "FUNCTION_BLOCK", "name": "FB", "inputs": {"GO": "BOOL"}, "outputs": {"Q": "BOOL"},
              "cycle_ms": 250, "sequences": [{"steps": [
                  {"in": {"GO": True}, "out": {"Q": False}}, {"out": {"Q": False}}, {"out": {"Q": False}},
                  {"out": {"Q": False}}, {"out": {"Q": True}}, {"in": {"GO": False}, "out": {"Q": False}}]}]}
    assert E.run_sequences([pou], oracle)["ok"] is True
    oracle["cycle_ms"] = 200          # Q would come one scan later: the check must notice
    res = E.run_sequences([pou], oracle)
    assert res["ok"] is False and res["reason"].endswith("scan 5: Q = FALSE") and "TRUE" not in res["reason"]
    assert res["expected"].endswith("scan 5: expected Q = TRUE")


def test_integer_semantics_truncating_division_and_wrap():
    ev = E.Evaluator([])
    frame = E.Instance(_fb([], [("X", "VAR", "INT")]), {})
    frame.init(ev)
    assert ev.eval(["bin", "/", _lit(-7), _lit(2), 1], frame) == -3      # toward zero, not floor
    assert ev.eval(["bin", "MOD", _lit(-7), _lit(2), 1], frame) == -1
    ev.store(_var("X"), 32767 + 1, frame)
    assert frame.vars["X"] == -32768                                     # INT wraps at 16 bits
    assert ev.call(["call", "REAL_TO_INT", [_lit(2.5, "REAL")], {}, 1], frame) == 3   # round half away


def test_step_budget_ends_an_endless_loop():
    pou = _fb([["while", _lit(True, "BOOL"), [["assign", _var("N"), ["bin", "+", _var("N"), _lit(1), 1], 2]], 2]],
              [("N", "OUTPUT", "DINT")])
    oracle = {"pou": "FUNCTION_BLOCK", "name": "FB", "outputs": {"N": "DINT"},
              "sequences": [{"steps": [{"out": {"N": 0}}]}]}
    res = E.run_sequences([pou], oracle, step_budget=1000)
    assert res["ok"] is False and "step budget of 1000" in res["reason"] and "line 2" in res["reason"]


def test_array_bounds_and_edge_triggers():
    pou = _fb([["assign", ["index", _var("A"), [_lit(4)], 3], _lit(1), 3]],
              [("A", "VAR", ["ARRAY", [[0, 3]], "INT"]), ("Q", "OUTPUT", "BOOL")])
    oracle = {"pou": "FUNCTION_BLOCK", "name": "FB", "outputs": {"Q": "BOOL"},
              "sequences": [{"steps": [{"out": {"Q": False}}]}]}
    res = E.run_sequences([pou], oracle)
    assert res["ok"] is False and "index 4 outside 0..3" in res["reason"]
    trig, ev = E.StdFB("F_TRIG"), E.Evaluator([])
    seen = []
    for clk in (True, False, False, True, False):
        trig.vars["CLK"] = clk
        trig.execute(ev)
        seen.append(trig.vars["Q"])
    assert seen == [False, True, False, False, True]


def test_checker_reports_type_mismatches_with_lines():
    pou = _fb([["assign", _var("B"), _lit(1), 7], ["assign", _var("I"), _lit(1.5, "ANY_REAL"), 8],
               ["assign", _var("R"), _var("I"), 9], ["if", [[_var("I"), []]], [], 10],
               ["assign", ["var", "Z", 11], _lit(True, "BOOL"), 11]],
              [("B", "VAR", "BOOL"), ("I", "VAR", "INT"), ("R", "VAR", "REAL")])
    errors = E.Checker([pou]).check()
    assert errors == ["line 7: cannot assign integer literal to BOOL (B)",
                      "line 8: cannot assign REAL literal to INT (I)",
                      "line 10: IF condition is INT, expected BOOL",
                      "line 11: undeclared identifier Z"]          # INT into REAL (line 9) is allowed


# --- the real checks through the sandboxed pipeline ---------------------------------------------------

def test_probe_names_blark_and_the_dialect(available):
    assert "blark 0.8.3" in available.version and available.exact
    assert "IEC 61131-3" in available.dialect
    if not V.shutil.which("plc"):
        assert "plc" not in available.version


SHELL = """FUNCTION_BLOCK FB_MotorLatch
VAR_INPUT
    Start : BOOL;
    Stop : BOOL;
END_VAR
VAR_OUTPUT
    Run : BOOL;
END_VAR
{body}
END_FUNCTION_BLOCK
"""


@pytest.mark.parametrize("body, expected", [
    ("Run := (Start OR Running) AND NOT Stop;", "line 9: undeclared identifier RUNNING"),
    ("IF Start THEN\n    Run := 1;\nEND_IF;", "line 10: cannot assign integer literal to BOOL (RUN)"),
    ("{attribute 'hide'}\nRun := Start;", "line 9: pragma '{...}' is a CODESYS/TwinCAT extension"),
    ("#Run := #Start;", "line 9: '#' variable prefix is Siemens SCL"),
    ("Run S= Start;", "S=/R=/REF= assignments are TwinCAT extensions"),
    ("Run := Start\nEND_IF;", "parse error"),
])
def test_syntax_level_rejects_with_line_numbers(available, body, expected):
    syn, sem = run(TASKS["iecst-001"], SHELL.format(body=body))
    assert syn["status"] == "fail" and expected in syn["diagnostics"], syn["diagnostics"]
    assert sem["status"] == "fail" and "not run" in sem["diagnostics"]


def test_interface_is_checked_before_behaviour(available):
    task = TASKS["iecst-001"]
    wrong_type = task.gold.replace("Run : BOOL;", "Run : INT;").replace(
        "Run := (Start OR Run) AND NOT Stop;", "Run := 0;")
    syn, sem = run(task, wrong_type)
    assert syn["status"] == "pass", syn
    assert sem["status"] == "fail" and sem["diagnostics"] == "interface: VAR_OUTPUT Run is INT, not the required type"
    assert sem["expected"] == "interface: VAR_OUTPUT Run is BOOL"
    renamed = task.gold.replace("FB_MotorLatch", "FB_Motor")
    assert run(task, renamed)[1]["diagnostics"].startswith("interface: no POU named FB_MotorLatch")
    as_program = task.gold.replace("FUNCTION_BLOCK FB", "PROGRAM FB").replace("END_FUNCTION_BLOCK", "END_PROGRAM")
    sem = run(task, as_program)[1]
    assert "is a PROGRAM, not the required POU kind" in sem["diagnostics"] and "FUNCTION_BLOCK" not in sem["diagnostics"]
    assert "FB_MotorLatch is a FUNCTION_BLOCK" in sem["expected"]


def test_expected_values_are_kept_out_of_the_diagnostics(available):
    # The refinement loop feeds diagnostics back to the model: the oracle's expected outputs go to `expected`.
    task = TASKS["iecst-002"]
    m = [m for m in task.mutants if m.level == "semantic"][0]
    syn, sem = run(task, m.program)
    assert sem["status"] == "fail"
    assert sem["diagnostics"].endswith("scan 2: return value = 132")           # the candidate's own value
    assert "212" not in sem["diagnostics"] and "expected" not in sem["diagnostics"]
    assert sem["expected"].endswith("scan 2: expected return value = 212")


def test_helper_function_and_case_insensitive_names_pass(available):
    task = TASKS["iecst-013"]
    program = """FUNCTION F_Clamp : INT
VAR_INPUT x : INT; END_VAR
F_Clamp := MAX(0, MIN(x, 27648));
END_FUNCTION

function f_scaleanalog : real
var_input raw : int; loweu : real; higheu : real; end_var
f_scaleanalog := loweu + (higheu - loweu) * INT_TO_REAL(F_Clamp(x := raw)) / 27648.0;
end_function
"""
    syn, sem = run(task, program)
    assert syn["status"] == "pass" and sem["status"] == "pass", (syn, sem)


def test_construct_outside_the_evaluator_is_unsupported_not_a_fail(available):
    # the evaluator stands in for a PLC runtime: what it lacks leaves the denominator, reported as such
    task = TASKS["iecst-009"]
    positional = task.gold.replace("StartDelay(IN := Request, PT := T#2S);", "StartDelay(Request, T#2S);")
    syn, sem = run(task, positional)
    assert syn["status"] == "pass", syn
    assert (sem["status"], sem["reason"]) == ("unavailable", "unsupported_by_judge"), sem
    assert "does not support" in sem["diagnostics"]


def test_verdicts_are_deterministic(available):
    task = TASKS["iecst-012"]
    endless = next(m.program for m in task.mutants if "endless" in m.note)
    first, second = run(task, endless), run(task, endless)
    assert first[1]["status"] == "fail" and "step budget" in first[1]["diagnostics"]
    assert [v["diagnostics"] for v in first] == [v["diagnostics"] for v in second]


# --- the oracle spec -----------------------------------------------------------------------------------

def test_malformed_oracle_is_rejected_with_line_and_field(tmp_path):
    data = yaml.safe_load(Path(TASKS["iecst-001"].path).read_text())
    data["oracle"]["outputs"]["Run"] = "FLOAT"
    data["oracle"]["sequences"][0]["steps"][1]["out"] = {"Running": True}
    folder = tmp_path / "iecst"
    folder.mkdir()
    path = folder / "iecst-001.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(TaskError) as err:
        load_task_file(path, TC.check_oracle)
    assert err.value.field == "oracle.outputs.Run" and err.value.line and "type must be one of" in err.value.message
    data["oracle"]["outputs"]["Run"] = "BOOL"     # the rules beyond the schema run once the shape is right
    problems = dict(TC.check_oracle(type(TASKS["iecst-001"])(**{**TASKS["iecst-001"].__dict__, "oracle": data["oracle"]})))
    assert "sequences[0].steps[1].out.Running" in problems


def test_task_set_covers_difficulties_and_modes():
    diffs = [t.difficulty for t in TASKS.values()]
    assert len(TASKS) >= 22 and {d: diffs.count(d) for d in set(diffs)} == {"easy": 7, "medium": 9, "hard": 7}
    kinds = {t.oracle["pou"] for t in TASKS.values()}
    assert kinds == {"FUNCTION", "FUNCTION_BLOCK", "PROGRAM"}
    assert sum("cycle_ms" in t.oracle for t in TASKS.values()) >= 4          # timer tasks state the time model


# --- Agents4PLC loader ----------------------------------------------------------------------------------

def test_agents4plc_loader_maps_fields_and_writes_strictly(tmp_path):
    made = TC.import_upstream(FIXTURES / "agents4plc.jsonl")
    tasks = made.tasks
    assert [t["id"] for t in tasks] == ["iecst-a4plc-e1", "iecst-a4plc-e2"]
    assert [(s.record, s.reason) for s in made.skipped] == [("agents4plc.jsonl:M7", "no_reference_code")]
    fan, higher = tasks
    assert fan["provenance"] == {"source": "upstream", "benchmark": "Agents4PLC", "upstream_id": "E1",
                                 "licence": "Apache-2.0"}
    assert fan["oracle"]["pou"] == "FUNCTION_BLOCK" and fan["oracle"]["name"] == "FB_CabinetFan"
    assert fan["oracle"]["inputs"] == {"Temp": "REAL", "Limit": "REAL"} and fan["oracle"]["outputs"] == {"FanOn": "BOOL"}
    assert fan["oracle"]["expected_from"] == "gold" and fan["difficulty"] == "easy"
    assert 1 <= len(fan["mutants"]) <= 3 and all(m["program"] != fan["gold"] for m in fan["mutants"])
    assert "When Temp is above Limit, FanOn must be TRUE." in fan["instruction"]
    assert higher["oracle"]["returns"] == "INT" and higher["oracle"]["inputs"] == {"LevelA": "INT", "LevelB": "INT"}
    again = TC.import_upstream(FIXTURES / "agents4plc.jsonl").tasks
    assert again == tasks                                                    # seeded, reproducible inputs
    written = upstream.write_tasks("iecst", tasks, tmp_path)
    assert [p.name for p in written] == ["iecst-a4plc-e1.yaml", "iecst-a4plc-e2.yaml"]
    loaded = load_task_file(written[1], TC.check_oracle)
    assert loaded.provenance["upstream_id"] == "E2"


def test_agents4plc_malformed_record_is_skipped_with_its_name():
    made = TC.import_upstream(FIXTURES / "agents4plc_malformed.jsonl")
    assert [(s.record, s.reason) for s in made.skipped] == [("agents4plc_malformed.jsonl:M9", "malformed_record")]
    assert "record 'M9': field 'instruction'" in made.skipped[0].detail


def test_imported_task_is_judged_against_its_reference(available, tmp_path):
    tasks = TC.import_upstream(FIXTURES / "agents4plc.jsonl").tasks
    path = upstream.write_tasks("iecst", tasks[:1], tmp_path)[0]
    task = load_task_file(path, TC.check_oracle)
    syn, sem = run(task, task.gold)
    assert syn["status"] == sem["status"] == "pass", (syn, sem)
    never_on = task.gold.replace("FanOn := TRUE;", "FanOn := FALSE;")
    syn, sem = run(task, never_on)
    assert syn["status"] == "pass" and sem["status"] == "fail", (syn, sem)
