"""GDScript validator: real Godot 3 runs (no mocks of the engine), the harness's comparison rules,
the oracle checks and the learn-gdscript loader."""
import shutil
import sys
from pathlib import Path

import pytest

from dslbench import pipeline, toolchains, upstream
from dslbench.tasks import TaskError, load_task_file, load_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "gdscript" / "course"
TC = toolchains.get("gdscript")
V = sys.modules[type(TC).__module__]
TASKS = {t.id: t for t in load_tasks(["gdscript"])["gdscript"]}


@pytest.fixture(scope="module")
def godot():
    probe = toolchains.probe("gdscript")
    if not probe.available:
        pytest.skip(f"gdscript toolchain unavailable here: {probe.reason}")
    return probe


def run(task, program):
    out = pipeline.evaluate("gdscript", task, program)
    return out["syntax"], out["semantic"]


def test_probe_reports_godot3(godot):
    assert godot.version.startswith("Godot 3.") and "Godot 3" in godot.dialect


def test_godot4_syntax_is_a_syntax_failure_with_line(godot):
    task = TASKS["gdscript-022"]
    syn, sem = run(task, task.gold.replace("onready var", "@onready var"))
    assert syn["status"] == "fail" and "program.gd:6" in syn["diagnostics"] and "@" in syn["diagnostics"]
    assert sem["status"] == "fail"


def test_equivalent_program_passes_and_int_float_are_equal(godot):
    task = TASKS["gdscript-003"]
    other = ('extends Reference\n\nfunc score_label(player: String, score: int) -> String:\n'
             '\treturn player + ": " + str(score).pad_zeros(6)\n\n'
             'func clock(seconds: int) -> String:\n\treturn str(seconds / 60) + ":" + str(seconds % 60).pad_zeros(2)\n')
    syn, sem = run(task, other)
    assert syn["status"] == sem["status"] == "pass", (syn, sem)


def test_runtime_error_is_reported_with_step_and_line(godot):
    task = TASKS["gdscript-006"]
    prog = task.gold.replace("func heaviest(items: Array)", "func heaviest(items)").replace(
        "items.empty()", "items.is_empty()")
    syn, sem = run(task, prog)
    assert syn["status"] == "pass"        # untyped: --check-only cannot know the method is missing
    assert sem["status"] == "fail" and "runtime error" in sem["diagnostics"]
    assert "is_empty" in sem["diagnostics"] and "program.gd:" in sem["diagnostics"]


def test_missing_method_and_wrong_base_fail(godot):
    task = TASKS["gdscript-002"]
    syn, sem = run(task, task.gold.replace("func in_range", "func within_range"))
    assert sem["status"] == "fail" and "no method in_range" in sem["diagnostics"]
    syn, sem = run(TASKS["gdscript-005"], TASKS["gdscript-005"].gold.replace("extends Node", "extends Reference"))
    assert sem["status"] == "fail" and "extends Reference, not the required base class" in sem["diagnostics"]
    assert "Node" not in sem["diagnostics"] and sem["expected"] == "the script extends Node"


def test_expected_values_are_kept_out_of_the_diagnostics(godot):
    # The refinement loop feeds diagnostics back to the model: the gold's step values go to `expected`.
    task = TASKS["gdscript-002"]
    m = next(m for m in task.mutants if m.level == "semantic")       # aims away from the target
    syn, sem = run(task, m.program)
    assert sem["status"] == "fail"
    assert "call aim_direction(Vector2(0, 0), Vector2(3, 4))): got Vector2(-0.6, -0.8)" in sem["diagnostics"]
    assert "Vector2(0.6, 0.8)" not in sem["diagnostics"] and "expected" not in sem["diagnostics"]
    assert sem["expected"].endswith("call aim_direction(Vector2(0, 0), Vector2(3, 4))): expected Vector2(0.6, 0.8)")


def test_endless_loop_times_out(godot):
    task = TASKS["gdscript-002"]
    prog = task.gold.replace("    return from.distance_to(to) <= radius".replace("    ", "\t"),
                             "\twhile true:\n\t\tpass\n\treturn false")
    assert prog != task.gold
    syn, sem = run(task, prog)
    assert syn["status"] == "pass" and sem["status"] == "fail" and "timed out" in sem["diagnostics"]


def test_verdicts_are_deterministic(godot):
    task = TASKS["gdscript-009"]
    a = run(task, task.mutants[1].program)
    b = run(task, task.mutants[1].program)
    assert a[1]["diagnostics"] == b[1]["diagnostics"] and a[1]["log"] == b[1]["log"]


# --- values and oracle checks (no engine) -------------------------------------------------------

def test_value_encoding_and_comparison():
    assert V.var_text([1, 2.0, "a\"b", None, {"Vector2": [1, 2]}, {"k": True}]) == \
        '[ 1, 2.0, "a\\"b", null, Vector2( 1.0, 2.0 ), { "k": true } ]'
    assert V.same(1, 1.0) and not V.same(True, 1) and not V.same("1", 1)
    assert V.same({"Dictionary": [["a", 1], ["b", 2]]}, {"Dictionary": [["b", 2], ["a", 1.0]]})
    assert not V.same([1, 2], [2, 1])


def test_check_oracle_rejects_malformed_spec(tmp_path):
    src = Path(TASKS["gdscript-001"].path).read_text()
    bad = src.replace("{emitted: died, expect: []}", "{emitted: died, call: x}")
    folder = tmp_path / "gdscript"
    folder.mkdir()
    (folder / "gdscript-001.yaml").write_text(bad)
    with pytest.raises(TaskError) as e:
        load_task_file(folder / "gdscript-001.yaml", TC.check_oracle)
    assert "oracle.scenarios[0].steps[6]" in str(e.value) and "exactly one action" in str(e.value)
    problems = V.check_spec({"base": "Node", "scenarios": [{"steps": [{"call": "f", "on": "ghost"}]}]})
    assert any(f.endswith(".on") for f, _ in problems)
    assert V.check_spec({"base": "Node", "scenarios": [{"steps": [{"set": "x", "value": 1}]}]})[0][0] == "scenarios"


# --- learn-gdscript loader ------------------------------------------------------------------------

def test_loader_maps_practices_and_skips_with_reason(tmp_path):
    tasks = TC.import_upstream(FIXTURES)
    assert [t["title"] for t in tasks] == ["Count the Coins", "Spin the Wheel"]
    coins, spin = tasks
    assert coins["provenance"]["upstream_id"] == "res://course/lesson-4-coin-counter/practice-Ab12Cd34.tres"
    assert coins["gold"] == "extends Node2D\n\nvar coins := 0\n\n\nfunc _run():\n\tcoins += 3\n"
    assert "`_run()`" in coins["instruction"] and "[code]" not in coins["instruction"]
    assert coins["oracle"]["scenarios"][0]["steps"] == [{"call": "_run", "ignore": True}, {"get": "coins"}]
    assert spin["gold"].endswith("\trotation = 0.0\n\trotate(1.5)\n")
    assert {"get": "rotation"} in spin["oracle"]["scenarios"][0]["steps"]          # read by the tester
    assert TC.last_skipped == [("res://course/lesson-4-coin-counter/practice-Ij90Kl12.tres",
                                "the solution has no argument-free _run()/run() to call")]
    written = upstream.write_tasks("gdscript", tasks, tmp_path)
    assert len(written) == 2 and all(p.parent.name == "gdscript" for p in written)


def test_imported_gold_passes_the_harness(godot, tmp_path):
    written = upstream.write_tasks("gdscript", TC.import_upstream(FIXTURES), tmp_path)
    task = load_task_file(written[1], TC.check_oracle)
    syn, sem = run(task, task.gold)
    assert syn["status"] == sem["status"] == "pass", (syn, sem)
    syn, sem = run(task, task.gold.replace("rotate(1.5)", "rotate(0.5)"))
    assert sem["status"] == "fail" and "get rotation" in sem["diagnostics"]


def test_malformed_upstream_record_names_the_practice(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(FIXTURES, course)
    lesson = course / "lesson-4-coin-counter" / "lesson.tres"
    lesson.write_text(lesson.read_text().replace('validator_script_path = "spin/TestsSpin.gd"\n', ""))
    with pytest.raises(ValueError) as e:
        TC.import_upstream(course)
    assert "practice-Ef56Gh78" in str(e.value) and "validator_script_path" in str(e.value)
    assert "lesson.tres:" in str(e.value)


def test_candidate_never_sees_the_gold(godot):
    """The gold runs in its own work directory: a candidate cannot load it and delegate to it."""
    task = TASKS["gdscript-003"]
    cheat = ('extends Reference\n\nvar _g = load("res://dslbench_gold.gd")\n\n'
             'func score_label(player: String, score: int) -> String:\n'
             '\treturn _g.new().score_label(player, score) if _g else "no gold"\n\n'
             'func clock(seconds: int) -> String:\n\treturn _g.new().clock(seconds) if _g else "no gold"\n')
    syn, sem = run(task, cheat)
    assert syn["status"] == "pass" and sem["status"] == "fail" and '"no gold"' in sem["diagnostics"]


def test_hidden_godot_gives_unavailable_with_reason(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    toolchains.probe.cache_clear()
    try:
        task = TASKS["gdscript-001"]
        out = pipeline.evaluate("gdscript", task, task.gold)
        assert out["syntax"]["status"] == out["semantic"]["status"] == "unavailable"
        assert "godot3-server" in out["syntax"]["diagnostics"]
    finally:
        monkeypatch.undo()
        toolchains.probe.cache_clear()
