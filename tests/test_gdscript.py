"""GDScript validator: real Godot 3 runs (no mocks of the engine), the harness's comparison rules,
the oracle checks and the learn-gdscript loader."""
import dataclasses
import importlib
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


def spec(oracle):
    return TC.check_oracle(dataclasses.replace(TASKS["gdscript-001"], oracle=oracle))


def test_check_oracle_rejects_malformed_spec(tmp_path):
    src = Path(TASKS["gdscript-001"].path).read_text()
    bad = src.replace("{emitted: died, expect: []}", "{emitted: died, call: x}")
    folder = tmp_path / "gdscript"
    folder.mkdir()
    (folder / "gdscript-001.yaml").write_text(bad)
    with pytest.raises(TaskError) as e:
        load_task_file(folder / "gdscript-001.yaml", TC.check_oracle)
    assert "oracle.scenarios[0].steps[6]" in str(e.value) and "exactly one action" in str(e.value)
    problems = spec({"base": "Node", "scenarios": [{"steps": [{"call": "f", "on": "ghost"}]}]})
    assert any(f.endswith(".on") for f, _ in problems)
    assert spec({"base": "Node", "scenarios": [{"steps": [{"set": "x", "value": 1}]}]})[0][0] == "scenarios"


# --- learn-gdscript importer (fixture in the published layout: clone root with project.godot) ------

def _import(source=FIXTURES):
    return TC.import_upstream(source)


def test_importer_maps_practices_and_skips_with_reasons():
    made = _import()
    assert isinstance(made, upstream.Imported) and made.read == 10
    by_title = {t["title"]: t for t in made.tasks}
    assert sorted(by_title) == ["A Small Square", "Count the Coins", "Drive the Cart", "Open the Crates",
                                "Read the Labels", "Spin the Wheel", "Wave Hello"]
    coins, spin = by_title["Count the Coins"], by_title["Spin the Wheel"]
    assert coins["id"] == "gdscript-up-lesson-3-counting-coins-1"
    assert coins["provenance"]["upstream_id"] == "res://course/lesson-3-counting-coins/practice-Ab12Cd34.tres"
    assert "func add_coins():\n\tcoins += 3\n" in coins["gold"] and "EXPORT" not in coins["gold"]
    assert "func add_coins():\n\tpass\n" in coins["instruction"] and "[code]" not in coins["instruction"]
    # A frame passes and the state the starting code gives is read before the run; then the run's result.
    assert coins["oracle"]["scenarios"][0]["steps"][:4] == [{"tick": 1}, {"get": "coins"},
                                                            {"call": "_run", "ignore": True}, {"get": "coins"}]
    assert {"get": "visible"} in coins["oracle"]["scenarios"][0]["steps"]       # the node's own state too
    # The Events autoload the practice emits on is given as a stand-in, registered by project.godot.
    assert sorted(coins["context"]) == ["Events.gd", "project.godot"]
    assert 'Events="*res://Events.gd"' in coins["context"]["project.godot"]
    assert "signal practice_run_completed" in coins["context"]["Events.gd"]
    # res:// paths resolve against the project root; a _process practice is judged after ticked frames.
    assert spin["provenance"]["tester"] == "res://course/lesson-3-counting-coins/spin/TestsSpin.gd"
    assert {"tick": 60} in spin["oracle"]["scenarios"][0]["steps"]
    assert {"get": "rotation"} in spin["oracle"]["scenarios"][0]["steps"]
    # semantic mutants of the gold: an operator flip, a constant change or a dropped statement
    assert coins["mutants"] and all(m["level"] == "semantic" and m["program"] != coins["gold"] for m in coins["mutants"])
    # A scene node reached by find_node(): a recording stand-in of the scene's type; the scene's start
    # values are set first; a practice that prints is judged on its output.
    wave = by_title["Wave Hello"]["oracle"]
    assert wave["nodes"] == [{"path": "AnimationTree", "type": "AnimationTree", "methods": ["travel"],
                              "props": [], "signals": []}]
    assert wave["output"] is True and wave["scenarios"][0]["steps"][0] == {"set": "visible", "value": False}
    assert wave["scenarios"][0]["steps"][-1] == {"get": "dslbench_calls", "on": "node0"}
    assert {"get": "_animation_tree"} not in wave["scenarios"][0]["steps"]
    reasons = {s.record.rsplit("/", 1)[-1]: s.reason for s in made.skipped}
    assert reasons == {"practice-Yz56Ab78.tres": "needs_course_scene",       # get_children(), no scene file
                       "practice-Mn34Op56.tres": "malformed_record",         # names a missing tester
                       "practice-Uv12Wx34.tres": "needs_course_runtime"}     # another autoload (MessageBus)
    details = {s.record.rsplit("/", 1)[-1]: s.detail for s in made.skipped}
    assert "no scene beside the script" in details["practice-Yz56Ab78.tres"]
    bad = next(s for s in made.skipped if s.reason == "malformed_record")
    assert "TestsMissing.gd" in bad.detail and "lesson.tres:" in bad.detail


def test_importer_reads_the_course_folder_too_and_rejects_a_wrong_folder(tmp_path):
    assert [t["id"] for t in _import(FIXTURES / "course").tasks] == [t["id"] for t in _import().tasks]
    with pytest.raises(upstream.NotThisBenchmark):
        _import(FIXTURES / "course" / "lesson-3-counting-coins")
    with pytest.raises(upstream.NotThisBenchmark):
        _import(tmp_path)


def test_import_writes_valid_tasks_and_summary(tmp_path):
    report = upstream.import_upstream("gdscript", FIXTURES, tmp_path)
    assert len(report.written) == 7 and report.read == 10
    assert report.reasons() == {"needs_course_scene": 1, "malformed_record": 1, "needs_course_runtime": 1}


def test_a_course_class_is_taken_from_the_clone(tmp_path):
    """A DrawingTurtle practice gets the clone's turtle script, an empty scene of the root type for the
    scene it preloads, stand-ins for the nodes of the turtle's scene, and a probe of the drawing that
    reads what the tester reads (absolute vertices, the heading)."""
    square = next(t for t in _import().tasks if t["title"] == "A Small Square")
    turtle = (FIXTURES / "course/common/turtle/DrawingTurtle.gd").read_text()
    assert square["context"]["DrawingTurtle.gd"] == turtle
    assert 'type="PanelContainer"' in square["context"]["DrawingTurtleLabel.tscn"]
    assert "label_panel.tres" not in square["context"]["DrawingTurtleLabel.tscn"]      # looks are not given
    assert '"class": "DrawingTurtle"' in square["context"]["project.godot"]
    assert '"path": "res://DrawingTurtle.gd"' in square["context"]["project.godot"]
    oracle = square["oracle"]
    assert oracle["base"] == "Node2D"
    assert [(n["path"], n["type"]) for n in oracle["nodes"]] == [("Canvas", "Node2D"), ("Pivot", "Position2D"),
                                                               ("Pivot/Sprite", "Sprite")]
    assert {"probe": "drawing"} in oracle["scenarios"][0]["steps"]
    probe = oracle["probes"]["drawing"]
    assert "point.abs()" in probe and '"facing"' in probe and "polygon.position" not in probe
    # Without the class's script in the clone, the practice is skipped with the reason.
    clone = tmp_path / "clone"
    shutil.copytree(FIXTURES, clone)
    (clone / "course/common/turtle/DrawingTurtle.gd").unlink()
    skipped = {s.record.rsplit("/", 1)[-1]: s for s in _import(clone).skipped}
    assert skipped["practice-Qr78St90.tres"].reason == "needs_course_class"
    assert "not in the clone" in skipped["practice-Qr78St90.tres"].detail


def _skipped_in_edited_clone(tmp_path, path: str, edit) -> dict:
    """Record name -> Skip of an import of a copy of the fixture clone whose file `path` is changed by
    `edit` (text -> text)."""
    clone = tmp_path / "clone"
    if not clone.exists():
        shutil.copytree(FIXTURES, clone)
    changed = clone / path
    changed.write_text(edit((FIXTURES / path).read_text()))
    return {s.record.rsplit("/", 1)[-1]: s for s in _import(clone).skipped}


def _gold_passes_and_mutants_fail(imported: dict, tmp_path):
    """The imported task, written and loaded strictly: its gold passes both levels on the real Godot
    and every mutant fails."""
    task = load_task_file(upstream.write_tasks("gdscript", [imported], tmp_path)[0], TC.check_oracle)
    syn, sem = run(task, task.gold)
    assert syn["status"] == sem["status"] == "pass", sem
    assert task.mutants and all(run(task, m.program)[1]["status"] == "fail" for m in task.mutants)
    return task


def _judge_variants(task, old: str, cases) -> dict:
    """The gold with `old` replaced by each (new text, expected semantic status); returns the last
    semantic verdict."""
    assert old in task.gold
    for new, status in cases:
        syn, sem = run(task, task.gold.replace(old, new))
        assert syn["status"] == "pass" and sem["status"] == status, (new, sem)
    return sem


def test_a_practice_that_walks_its_scene_gets_the_whole_scene(godot, tmp_path):
    """A script that loops over its scene's nodes runs on the scene built from the clone's .tscn files:
    the inherited base scene, the node inserted at an index, the instanced crates with the scene's
    values, and recording stand-ins for the crates' own script; what it did to the scene is compared
    through the scene probe, and an array the tester only asks membership of is compared unordered."""
    crates = next(t for t in _import().tasks if t["title"] == "Open the Crates")
    nodes = {n["path"]: n for n in crates["oracle"]["nodes"]}
    assert list(nodes) == ["Title", "Rows", "Rows/Crate", "Rows/Crate/Icon", "Rows/Crate/Count", "Rows/Crate2",
                           "Rows/Crate2/Icon", "Rows/Crate2/Count", "Rows/Crate3", "Rows/Crate3/Icon",
                           "Rows/Crate3/Count", "Footer"]
    assert nodes["Rows/Crate2"]["type"] == "Panel" and nodes["Rows/Crate2"]["values"] == {"visible": "false"}
    assert nodes["Title"]["values"] == {"text": '"Crates"'} and nodes["Rows/Crate/Count"]["values"] == {"text": '"0"'}
    assert "open" in nodes["Rows/Crate"]["methods"] and nodes["Rows/Crate/Icon"]["methods"] == []
    assert nodes["Rows/Crate"]["signals"] == ["opened"]                 # connected in _ready
    assert "texture" not in nodes["Rows/Crate/Icon"]["values"]          # a resource is never given
    steps = crates["oracle"]["scenarios"][0]["steps"]
    after = steps[steps.index({"call": "_run", "ignore": True}):]
    assert {"probe": "scene"} in after and {"probe": "unordered"} in after and {"get": "opened"} not in after
    task = _gold_passes_and_mutants_fail(crates, tmp_path)
    loop = "\tfor crate in _rows.get_children():\n\t\tif crate.visible:\n"
    same_work = loop.replace("if crate.visible:", "if not crate.visible:\n\t\t\tcontinue\n\t\tif true:")
    sem = _judge_variants(task, loop, ((same_work, "pass"), (loop.replace("if crate.visible:", "if true:"), "fail")))
    assert "probe unordered" in sem["diagnostics"]
    # Which crates the script keeps is compared by their paths in the scene.
    syn, sem = run(task, task.gold.replace("opened.append(crate)", "opened.append(_rows.get_child(0))"))
    assert sem["status"] == "fail" and "probe scene" in sem["diagnostics"]


def test_a_node_whose_state_the_practice_uses_runs_the_scenes_own_script(godot, tmp_path):
    """The cart's stops are its own state (`cart.stops.clear()`): a recording stand-in cannot give them,
    so the cart runs the script the scene builds into it, taken from the clone, and its stops are
    compared."""
    cart = next(t for t in _import().tasks if t["title"] == "Drive the Cart")
    assert cart["oracle"]["nodes"] == [{"path": "Cart", "type": "Node2D", "methods": [], "props": [], "signals": [],
                                        "script": "CartMoves_Cart.gd", "values": {"position": "Vector2( 0, 40 )"}}]
    assert 'print("cart at ", stop)' in cart["context"]["CartMoves_Cart.gd"]     # the built-in source, unescaped
    assert cart["oracle"]["scenarios"][0]["steps"][-2:] == [
        {"call": "get_node", "args": ["Cart"], "as": "node0", "ignore": True}, {"get": "stops", "on": "node0"}]
    task = _gold_passes_and_mutants_fail(cart, tmp_path)
    sem = _judge_variants(task, "\tfor stop in route:\n\t\tcart.go_to(stop)",
                          (("\tfor i in range(route.size()):\n\t\tcart.go_to(route[i])", "pass"),
                           ("\tfor stop in route:\n\t\tcart.stops.append(stop)", "fail")))
    assert "probe scene" in sem["diagnostics"]           # the cart did not move
    # Without the script in the scene file, the practice is skipped with the reason.
    scene = "course/lesson-6-crate-shelf/cart_moves/CartMoves.tscn"
    skipped = _skipped_in_edited_clone(tmp_path, scene, lambda t: t.replace("script = SubResource( 1 )\n", ""))
    assert skipped["practice-Ct9Mv4s6.tres"].reason == "needs_course_scene"
    assert "Cart.stops (Cart: the scene gives it no script" in skipped["practice-Ct9Mv4s6.tres"].detail
    # So is one whose node script uses more of the course app than the task gives (an autoload).
    skipped = _skipped_in_edited_clone(tmp_path, scene, lambda t: t.replace(
        "stops.append(stop)", "stops.append(stop)\n\tMessageBus.emit_signal(\\\"moved\\\")"))
    assert skipped["practice-Ct9Mv4s6.tres"].reason == "needs_course_scene"
    assert "its script needs more of the course: MessageBus" in skipped["practice-Ct9Mv4s6.tres"].detail


def test_a_node_whose_return_value_the_practice_uses_runs_its_own_script_with_stand_in_images(godot, tmp_path):
    """The labels come from the crates' own get_label(), which names the crate's image: the crates run
    Crate.gd from the clone, and each image it preloads or the scene sets loads as the one stand-in
    texture under its own path, so the names are the course's."""
    labels = next(t for t in _import().tasks if t["title"] == "Read the Labels")
    assert labels["context"]["Crate.gd"] == (FIXTURES / "course/common/crate/Crate.gd").read_text()
    assert labels["oracle"]["textures"] == ["res://course/common/crate/moon.png", "res://course/common/crate/star.png"]
    nodes = {n["path"]: n for n in labels["oracle"]["nodes"]}
    assert nodes["Rows/Crate2"]["script"] == "Crate.gd" and nodes["Rows/Crate2"]["methods"] == []
    assert nodes["Rows/Crate2"]["values"] == {"count": "2", "icon": 'Resource( "res://course/common/crate/moon.png" )'}
    assert "script" not in nodes["Rows/Crate/Icon"]
    task = _gold_passes_and_mutants_fail(labels, tmp_path)
    sem = _judge_variants(task, "\t\tvar label = crate.get_label()\n\t\tlabels.append(label)",
                          (("\t\tlabels.append(crate.get_label())", "pass"),
                           ("\t\tlabels.append(crate.get_label().to_upper())", "fail")))
    assert '"0 MOON"' in sem["diagnostics"]          # the image's own name, through the stand-in texture
    # A crate script that loads more than images cannot be given: the practice is skipped with the reason.
    skipped = _skipped_in_edited_clone(tmp_path, "course/common/crate/Crate.gd", lambda t: t.replace(
        "\nexport var count", '\nconst SHELF := preload("res://course/common/shelf/ShelfBase.tscn")\nexport var count'))
    assert skipped["practice-Rd7Lb3l2.tres"].reason == "needs_course_scene"
    assert skipped["practice-Rd7Lb3l2.tres"].detail.startswith("the solution uses what the scene's own scripts return: get_label() (Rows/Crate: its script needs more of the course: preload(")
    # A task naming an image outside its textures is refused.
    bad = dict(labels["oracle"], textures=["res://course/common/crate/star.png"])
    assert [f for f, _ in spec(bad)] == ["nodes[4].values.icon"]
    assert [f for f, _ in spec(dict(labels["oracle"], textures=["res:///etc/x.png"]))][0] == "textures[0]"


def test_tick_step_is_checked():
    ok = {"base": "Node2D", "scenarios": [{"steps": [{"tick": 10, "delta": 0.1}, {"get": "rotation"}]}]}
    assert spec(ok) == []
    assert spec({**ok, "output": True, "nodes": [{"path": "A/B", "type": "Label", "props": ["text"]}]}) == []
    assert [f for f, _ in spec({**ok, "output": 1, "nodes": [{"path": "../x", "type": "Label"}]})] == \
        ["nodes[0].path", "output"]
    # a node's scene values are Godot literals as written in the .tscn; a resource is never one
    assert spec({**ok, "nodes": [{"path": "A", "type": "Label", "values": {"text": '"hi"', "rect_position": "Vector2( 1, 2 )"}}]}) == []
    assert [f for f, _ in spec({**ok, "nodes": [{"path": "A", "type": "TextureRect",
                                                 "values": {"texture": "ExtResource( 2 )", "visible": False}}]})] == \
        ["nodes[0].values.texture", "nodes[0].values.visible"]
    probed = {**ok, "probes": {"drawing": "extends Reference\n"}, "scenarios": [{"steps": [{"probe": "drawing"}]}]}
    assert spec(probed) == []
    assert [f for f, _ in spec({**probed, "probes": {}})] == ["scenarios[0].steps[0].probe"]
    assert [f for f, _ in spec({**probed, "probes": {"drawing": 3}})] == ["probes.drawing"]
    bad = {"base": "Node2D", "scenarios": [{"steps": [{"tick": "x"}, {"tick": 5, "delta": 0}, {"get": "a"}]}]}
    assert [f for f, _ in spec(bad)] == ["scenarios[0].steps[0].tick", "scenarios[0].steps[1].delta"]


def test_imported_gold_passes_and_mutants_are_killed(godot, tmp_path):
    written = upstream.write_tasks("gdscript", _import().tasks, tmp_path)
    tasks = {t.title: t for t in (load_task_file(p, TC.check_oracle) for p in written)}
    for task in tasks.values():
        syn, sem = run(task, task.gold)
        assert syn["status"] == sem["status"] == "pass", (task.id, syn, sem)
    spin = tasks["Spin the Wheel"]
    # _process is ticked: a slower wheel ends at another rotation.
    syn, sem = run(spin, spin.gold.replace("rotate(3 * delta)", "rotate(2 * delta)"))
    assert syn["status"] == "pass" and sem["status"] == "fail" and "get rotation" in sem["diagnostics"]
    # The turtle's drawing: a shorter side, a missing turn and a left-handed square (the same square
    # for the tester, which takes absolute vertices) through the probe.
    square = tasks["A Small Square"]
    end = "\n\n\nfunc _complete_run"                                 # the line after draw_square()
    for old, new, status in (("move_forward(150)\n\tturn_right(90)" + end, "move_forward(140)\n\tturn_right(90)" + end, "fail"),
                             ("\tturn_right(90)" + end, "\tpass" + end, "fail"),
                             ("turn_right(90)", "turn_left(90)", "pass")):
        assert old in square.gold
        syn, sem = run(square, square.gold.replace(old, new))
        assert syn["status"] == "pass" and sem["status"] == status, (new, sem)
    assert square.mutants and all(run(square, m.program)[1]["status"] == "fail" for m in square.mutants)
    coins = tasks["Count the Coins"]
    for m in coins.mutants:
        syn, sem = run(coins, m.program)
        assert syn["status"] == "pass" and sem["status"] == "fail", m.note
    wave = tasks["Wave Hello"]
    for old, new in (("\tshow()\n", "\tpass\n"), ('travel("wave")', 'travel("jump")'), ('"Hi!"', '"Hello!"')):
        syn, sem = run(wave, wave.gold.replace(old, new))
        assert syn["status"] == "pass" and sem["status"] == "fail", (old, sem)
    assert "printed output differs at line 1" in sem["diagnostics"] and "Hi!" in sem["expected"]
    # An autoload name that the project does not register is still a syntax failure.
    coins = tasks["Count the Coins"]
    syn, sem = run(coins, coins.gold.replace("Events.emit_signal", "Evnts.emit_signal"))
    assert syn["status"] == "fail" and "Evnts" in syn["diagnostics"] and "program.gd:" in syn["diagnostics"]


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


# --- the oracle of imported practices besides the run's own result: a frame before the run, the state
# the starting code gives, the slice's functions called with other amounts (a practice written here in
# the course's published layout)

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
