"""GDScript oracle of imported learn-gdscript practices: what the harness observes besides the run's
own result (a frame before the run, the state the starting code gives, the slice's functions called
with other amounts), on a practice written here in the course's published layout."""
import dataclasses
import importlib
import sys
from pathlib import Path

import pytest

from dslbench import pipeline, toolchains, upstream
from dslbench.tasks import load_task_file, load_tasks

TC = toolchains.get("gdscript")
V = sys.modules[type(TC).__module__]
UP = importlib.import_module(V.__name__.rsplit(".", 1)[0] + ".upstream_gd")      # the importer beside it

LESSON = '''[gd_resource type="Resource" load_steps=3 format=2]

[ext_resource path="res://resources/Practice.gd" type="Script" id=3]

[sub_resource type="Resource" id=1]
script = ExtResource( 3 )
practice_id = "res://course/lesson-9-healing/practice-He41Rb07.tres"
title = "Heal the Robot"
goal = "Add [code]amount[/code] to [code]health[/code], but never above [code]80[/code]."
starting_code = "func heal(amount):
	pass"
validator_script_path = "heal/TestsHeal.gd"
script_slice_path = "heal/Heal.gd"
slice_name = "heal"
'''
SCRIPT = '''extends Node2D

onready var _health_bar := find_node("HealthBar")

var health = 50


func _ready() -> void:
	yield(get_tree(), "idle_frame")
	_health_bar.set_health(health)


func _run():
	reset()
	heal(20)
	_health_bar.set_health(health)
	yield(get_tree().create_timer(1.0), "timeout")
	Events.emit_signal("practice_run_completed")


func reset():
	health = 50


# EXPORT heal
func heal(amount):
	health += amount
	if health > 80:
		health = 80
# /EXPORT heal
'''
TESTER = 'extends PracticeTester\n\n\nfunc test_health() -> String:\n\treturn ""\n'


@pytest.fixture(scope="module")
def godot():
    probe = toolchains.probe("gdscript")
    if not probe.available:
        pytest.skip(f"gdscript toolchain unavailable here: {probe.reason}")
    return probe


@pytest.fixture()
def heal_task(tmp_path):
    root = tmp_path / "clone"
    (root / "course" / "lesson-9-healing" / "heal").mkdir(parents=True)
    (root / "project.godot").write_text('config_version=4\n\n[autoload]\n\nEvents="*res://autoload/Events.gd"\n')
    (root / "course" / "lesson-9-healing" / "lesson.tres").write_text(LESSON)
    (root / "course" / "lesson-9-healing" / "heal" / "Heal.gd").write_text(SCRIPT)
    (root / "course" / "lesson-9-healing" / "heal" / "TestsHeal.gd").write_text(TESTER)
    made = TC.import_upstream(root)
    assert [t["title"] for t in made.tasks] == ["Heal the Robot"], made.skipped
    return made.tasks[0], tmp_path / "tasks"


def run(task, program):
    out = pipeline.evaluate("gdscript", task, program)
    return out["syntax"], out["semantic"]


def test_importer_observes_the_start_state_and_probes_amounts(heal_task):
    task, _ = heal_task
    steps = task["oracle"]["scenarios"][0]["steps"]
    run_at = steps.index({"call": "_run", "ignore": True})
    # Before the run: a frame passes (the _ready that waits for one completes), the given state is read.
    assert steps[:run_at] == [{"tick": 1}, {"get": "health"}]
    # After it: heal() (called by the run with a number) is called again with a small and a large
    # amount (it returns nothing: its return value is not compared), the variables read after each.
    for amount in (1, 1000):
        at = steps.index({"call": "heal", "args": [amount], "ignore": True})
        assert steps[at + 1] == {"get": "health"}
    assert steps[-1] == {"get": "dslbench_calls", "on": "node0"}      # after the probes: all calls


def test_only_given_declarations_are_read_before_the_run():
    gold = "extends Node\n\nvar a = 1\nvar b := 2\nvar c = 3\n"
    starting = "extends Node\n\nvar a = 1\nvar b := 5\n"
    assert UP.given_vars(gold, starting, ["a", "b", "c"]) == ["a"]


def test_probes_need_a_numeric_call_and_skip_coroutines():
    gold = ("extends Node\nvar _gain = 40\nvar hp = 1\n\nfunc _run():\n\tgain(_gain)\n\tname_it(\"x\")\n"
            "\twait(3)\n\tcheck(2)\n")
    editable = ("func gain(amount):\n\thp += amount\n\nfunc name_it(who):\n\tprint(who)\n\n"
                "func wait(t):\n\tyield(get_tree().create_timer(t), \"timeout\")\n\n"
                "func check(x: int) -> bool:\n\treturn x > hp\n")
    steps = UP.probe_amounts(gold + editable, editable, ["hp"], set())
    assert [s.get("call") for s in steps if "call" in s] == ["gain", "gain", "check", "check"]
    assert {"call": "gain", "args": [1], "ignore": True} in steps      # returns nothing: not compared
    assert {"call": "check", "args": [1000]} in steps                  # its return value is compared


def test_start_state_frames_and_probes_kill_slips_but_accept_correct_variants(godot, heal_task):
    task_dict, out = heal_task
    written = upstream.write_tasks("gdscript", [task_dict], out)
    task = load_task_file(written[0], TC.check_oracle)
    syn, sem = run(task, task.gold)
    assert syn["status"] == sem["status"] == "pass", (syn, sem)
    body = "\thealth += amount\n\tif health > 80:\n\t\thealth = 80\n"
    for variant in ("\thealth = min(health + amount, 80)\n",
                    "\thealth = health + amount\n\tif health >= 80:\n\t\thealth = 80\n"):
        syn, sem = run(task, task.gold.replace(body, variant))
        assert syn["status"] == sem["status"] == "pass", (variant, sem)
    # The limit is not reached by the run's own amount: only a larger amount shows it is missing.
    syn, sem = run(task, task.gold.replace(body, "\thealth += amount\n"))
    assert sem["status"] == "fail" and "get health): got 1071" in sem["diagnostics"], sem
    # A changed start value (the run resets it) is seen before the run.
    syn, sem = run(task, task.gold.replace("var health = 50\n", "var health = 51\n"))
    assert sem["status"] == "fail" and "step 2 (get health): got 51" in sem["diagnostics"], sem


def test_tick_resumes_a_script_waiting_for_a_frame(godot):
    """yield(get_tree(), "idle_frame") resumes on a ticked frame, as on a real one."""
    gold = ('extends Node\n\nvar state = "waiting"\n\n\nfunc _ready():\n'
            '\tyield(get_tree(), "idle_frame")\n\tstate = "after one frame"\n')
    oracle = {"base": "Node", "scenarios": [{"tree": True, "steps": [
        {"tick": 1}, {"get": "state", "expect": "after one frame"}]}]}
    base = next(iter(load_tasks(["gdscript"])["gdscript"]))
    task = dataclasses.replace(base, gold=gold, oracle=oracle, context={}, mutants=(), equivalents=())
    syn, sem = run(task, gold)
    assert syn["status"] == sem["status"] == "pass", sem
    syn, sem = run(task, gold.replace('"after one frame"', '"after a frame"'))
    assert sem["status"] == "fail" and '"after a frame"' in sem["diagnostics"], sem
    physics = gold.replace("idle_frame", "physics_frame")       # the gold must meet `expect` too
    syn, sem = run(dataclasses.replace(task, gold=physics), physics)
    assert sem["status"] == "pass", sem
