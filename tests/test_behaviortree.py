"""Behavior Tree XML (BehaviorTree.CPP v4): the validator on the real toolchain (behaviortreepy), the
oracle spec checks and the BTGenBot importer. No mock of the toolchain: every verdict here comes
from BehaviorTree.CPP running in the sandbox."""
import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains
from dslbench.tasks import TaskError, load_task_file, load_tasks
from dslbench.upstream import write_tasks

from conftest import tasks_if_available

FIXTURES = Path(__file__).parent / "fixtures" / "behaviortree"
DSL = "behaviortree"


tasks = tasks_if_available(DSL)


def judge(task, program):
    out = pipeline.evaluate(DSL, task, program)
    return out["syntax"], out["semantic"]


def mainxml(body: str, extra: str = "") -> str:
    return (f'<root BTCPP_format="4" main_tree_to_execute="MainTree">\n<BehaviorTree ID="MainTree">\n{body}\n'
            f"</BehaviorTree>\n{extra}</root>\n")


def test_probe_names_the_btcpp_release(tasks):
    probe = toolchains.probe(DSL)
    assert probe.available and probe.version.startswith("BehaviorTree.CPP 4.")
    assert "behaviortreepy 0.1.4" in probe.version
    assert "BTCPP_format" in probe.dialect


def test_version_3_constructs_are_rejected_by_btcpp(tasks):
    t = tasks["behaviortree-011"]
    syn, sem = judge(t, t.gold.replace("SequenceWithMemory", "SequenceStar"))
    assert syn["status"] == "fail" and "Node not recognized: SequenceStar" in syn["diagnostics"]
    assert sem["status"] == "fail"
    v3_root = t.gold.replace('BTCPP_format="4" ', "")
    syn, _ = judge(t, v3_root)
    assert syn["status"] == "fail" and 'BTCPP_format="4"' in syn["diagnostics"]
    syn, _ = judge(t, t.gold.replace('BTCPP_format="4"', 'BTCPP_format="3"'))
    assert syn["status"] == "fail"


def test_port_names_and_typed_literals_follow_the_palette(tasks):
    t = tasks["behaviortree-018"]
    syn, _ = judge(t, t.gold.replace('<Spin angle="1.57"/>', '<Spin radians="1.57"/>'))
    assert syn["status"] == "fail"
    assert "a port with name [radians] is found in the XML (<Spin>, line 12)" in syn["diagnostics"]
    syn, _ = judge(t, t.gold.replace('angle="1.57"', 'angle="quarter"'))
    assert syn["status"] == "fail" and 'value "quarter" can not be converted to double' in syn["diagnostics"]
    # std::stod reads a numeric prefix, as BT.CPP does: 1.57rad is accepted and read as 1.57
    syn, sem = judge(t, t.gold.replace('angle="1.57"', 'angle="1.57rad"'))
    assert syn["status"] == "pass" and sem["status"] == "pass", sem["diagnostics"]


def test_line_numbers_point_into_the_candidate_text(tasks):
    t = tasks["behaviortree-001"]
    program = ('<?xml version="1.0"?>\n<!-- header -->\n<root BTCPP_format="4"\n      main_tree_to_execute="MainTree">\n'
               '  <BehaviorTree ID="MainTree">\n    <Sequence>\n      <MoveBase\n          goal="{goal}"/>\n'
               '      <SequenceStar><Recharge/></SequenceStar>\n    </Sequence>\n  </BehaviorTree>\n</root>\n')
    syn, _ = judge(t, program)
    assert syn["diagnostics"] == "Error at line 9: -> Node not recognized: SequenceStar"


def test_mandatory_ports_and_output_bindings_are_checked(tasks):
    t = tasks["behaviortree-002"]
    syn, sem = judge(t, t.gold.replace(' pose="{cup_pose}"/>\n      <Pick', '/>\n      <Pick'))
    assert syn["status"] == "pass" and sem["status"] == "fail"
    assert "lacks its mandatory output port [pose]" in sem["diagnostics"]


def test_dataflow_through_the_blackboard_is_compared(tasks):
    t = tasks["behaviortree-008"]
    syn, sem = judge(t, t.gold.replace('<FollowPath path="{path}"/>', '<FollowPath path="{plan}"/>'))
    assert syn["status"] == "pass" and sem["status"] == "fail"
    assert "FollowPath path=<unset> -> FAILURE (missing input)" in sem["diagnostics"]
    # key names are free: the same wiring under other names is the same program
    renamed = t.gold.replace("{path}", "{global_plan}")
    assert [v["status"] for v in judge(t, renamed)] == ["pass", "pass"]


@pytest.mark.parametrize("path", sorted((FIXTURES / "equivalent").glob("*.xml")), ids=lambda p: p.name)
def test_equivalent_programs_pass(tasks, path):
    task = tasks[path.name.split(".")[0]]
    syn, sem = judge(task, path.read_text())
    assert (syn["status"], sem["status"]) == ("pass", "pass"), (syn["diagnostics"], sem["diagnostics"])


def test_never_ending_trees_are_compared_on_their_prefix(tasks):
    base = tasks["behaviortree-004"]
    patrol = mainxml('<Repeat num_cycles="-1">\n<Sequence>\n<MoveBase goal="dock_a"/>\n<MoveBase goal="dock_b"/>\n'
                     "</Sequence>\n</Repeat>")
    task = dataclasses.replace(base, gold=patrol, oracle={**base.oracle, "scenarios": [
        {"name": "endless patrol", "nodes": {"MoveBase": ["RUNNING", "SUCCESS"]}, "max_ticks": 12}]})
    assert [v["status"] for v in judge(task, patrol)] == ["pass", "pass"]
    syn, sem = judge(task, patrol.replace("-1", "2"))
    assert syn["status"] == "pass" and sem["status"] == "fail"
    assert "the tree ended with SUCCESS after " in sem["diagnostics"] and "too early" in sem["diagnostics"]
    assert "MoveBase goal=dock_a -> SUCCESS' next" in sem["expected"] and "next" not in sem["diagnostics"]


def test_set_blackboard_overwrites_a_scenario_entry(tasks):
    # The scenario seeds `goal`; SetBlackboard overwrites it and MoveBase (a std::string port) reads the
    # new value, as in BT.CPP with the port declared. Seeded untyped, BT.CPP 4.8's SetBlackboard would
    # parse "office" through the entry's missing converter and leave `goal` empty.
    base = tasks["behaviortree-001"]
    scenarios = [{"name": "overwritten", "blackboard": {"goal": "kitchen"}}]
    gold = mainxml('<Sequence>\n<SetBlackboard output_key="goal" value="office"/>\n<MoveBase goal="{goal}"/>\n'
                   '</Sequence>')
    task = dataclasses.replace(base, gold=gold, oracle={**base.oracle, "scenarios": scenarios})
    assert [v["status"] for v in judge(task, mainxml('<MoveBase goal="office"/>'))] == ["pass", "pass"]
    syn, sem = judge(task, mainxml('<MoveBase goal="{goal}"/>'))
    assert syn["status"] == "pass" and sem["status"] == "fail"
    assert "got 'MoveBase goal=kitchen -> SUCCESS'" in sem["diagnostics"]
    assert "expected 'MoveBase goal=office -> SUCCESS'" in sem["expected"]
    # the same through a SubTree port remapped to the scenario's entry
    sub = mainxml('<SubTree ID="Go" target="{goal}"/>',
                  '<BehaviorTree ID="Go">\n<Sequence>\n<SetBlackboard output_key="target" value="office"/>\n'
                  '<MoveBase goal="{target}"/>\n</Sequence>\n</BehaviorTree>\n')
    assert [v["status"] for v in judge(task, sub)] == ["pass", "pass"]


def test_subtrees_see_scenario_entries_only_through_remapping(tasks):
    # BT.CPP 4: a SubTree has its own blackboard; the root's entries reach it through a port
    # remapping or _autoremap="true", never by themselves
    base = tasks["behaviortree-001"]
    scenarios = [{"name": "seeded", "blackboard": {"goal": "kitchen"}}]
    go = '<BehaviorTree ID="Go">\n<MoveBase goal="{goal}"/>\n</BehaviorTree>\n'
    gold = mainxml('<SubTree ID="Go" _autoremap="true"/>', go)
    task = dataclasses.replace(base, gold=gold, oracle={**base.oracle, "scenarios": scenarios})
    assert [v["status"] for v in judge(task, mainxml('<SubTree ID="Go" goal="{goal}"/>', go))] == ["pass", "pass"]
    syn, sem = judge(task, mainxml('<SubTree ID="Go"/>', go))
    assert syn["status"] == "pass" and sem["status"] == "fail"
    assert "got 'MoveBase goal=<unset> -> FAILURE (missing input)'" in sem["diagnostics"]


def test_expected_values_are_kept_out_of_the_diagnostics(tasks):
    # The refinement loop feeds diagnostics back to the model: the gold's trace goes to `expected`.
    t = tasks["behaviortree-005"]
    m = [m for m in t.mutants if m.level == "semantic"][1]           # paraphrases the required sentence
    syn, sem = judge(t, m.program)
    assert sem["status"] == "fail"
    assert "got 'Say text=Parcel arrived -> SUCCESS' (event 4)" in sem["diagnostics"]
    assert "Your parcel has arrived" not in sem["diagnostics"] and "expected" not in sem["diagnostics"]
    assert sem["expected"] == "scenario 'smooth delivery': event 4: expected 'Say text=Your parcel has arrived -> SUCCESS'"
    # a structural requirement: the required attribute value is the oracle's
    t = tasks["behaviortree-017"]
    syn, sem = judge(t, t.gold.replace('msec="45000"', 'msec="45"'))
    assert syn["status"] == "pass" and sem["status"] == "fail"
    assert sem["diagnostics"] == "the tree has no <Timeout> with the attribute values the task requires"
    assert sem["expected"] == 'the task requires <Timeout msec="45000">'


def test_hostile_trees_are_contained(tasks):
    t = tasks["behaviortree-001"]
    recursive = mainxml('<SubTree ID="MainTree"/>')
    syn, _ = judge(t, recursive)
    assert syn["status"] == "fail"
    busy = mainxml('<Repeat num_cycles="-1"><ScriptCondition code="true"/></Repeat>')
    syn, sem = judge(t, busy)
    assert syn["status"] == "pass" and sem["status"] == "fail"
    runtime = mainxml('<Sequence><ScriptCondition code="nobody_set_this == 1"/><MoveBase goal="{goal}"/></Sequence>')
    syn, sem = judge(t, runtime)
    assert sem["status"] == "fail" and "Variable not found: nobody_set_this" in sem["diagnostics"]


def test_verdicts_are_reproducible(tasks):
    t = tasks["behaviortree-012"]
    program = t.mutants[2].program
    first, second = judge(t, program), judge(t, program)
    for a, b in zip(first, second):
        assert (a["status"], a["diagnostics"], a["command"], a["log"]) == (b["status"], b["diagnostics"], b["command"], b["log"])


def _task_yaml(tmp_path, oracle_patch):
    data = yaml.safe_load(Path(load_tasks([DSL])[DSL][0].path).read_text())
    data["oracle"].update(oracle_patch)
    folder = tmp_path / DSL
    folder.mkdir()
    path = folder / f"{data['id']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("patch, field, words", [
    ({"scenarios": [{"name": "x", "nodes": {"Teleport": ["SUCCESS"]}}]}, "oracle.scenarios[0].nodes.Teleport",
     "not a node of the palette"),
    ({"scenarios": [{"name": "x", "nodes": {"IsBatteryLow": ["RUNNING"]}}]}, "oracle.scenarios[0].nodes.IsBatteryLow",
     "cannot return RUNNING"),
    ({"scenarios": [{"name": "x", "nodes": {"MoveBase": ["DONE"]}}]}, "oracle.scenarios[0].nodes.MoveBase",
     "non-empty list"),
    ({"palette": "missing.xml"}, "oracle.palette", "context file"),
    ({"scenarios": [{"name": "x", "max_ticks": 0}]}, "oracle.scenarios[0].max_ticks", "integer"),
    ({"scenarios": [{"name": "x", "outputs": {"MoveBase": {"goal": ["a"]}}}]},
     "oracle.scenarios[0].outputs.MoveBase.goal", "not an output port"),
    ({"tick_limit": 3}, "oracle.tick_limit", "unknown key"),
])
def test_malformed_oracle_is_rejected_with_its_field(tmp_path, patch, field, words):
    path = _task_yaml(tmp_path, patch)
    with pytest.raises(TaskError) as err:
        load_task_file(path, toolchains.get(DSL).check_oracle)
    assert err.value.field == field and words in err.value.message and err.value.line


UPSTREAM = FIXTURES / "btgenbot"            # the repository layout: dataset/bt_dataset.json


def test_btgenbot_import_maps_fields_and_migrates(tmp_path, tasks):
    tc = toolchains.get(DSL)
    imported = tc.import_upstream(UPSTREAM)
    by_id = {t["id"]: t for t in imported.tasks}
    assert sorted(by_id) == [f"behaviortree-btgenbot-{i:04d}" for i in (0, 1, 2, 6, 7, 9, 11, 12, 13)]
    skipped = {s.record: s for s in imported.skipped}
    assert {k: s.reason for k, s in skipped.items()} == {
        "3": "nav2_plugin_node", "4": "malformed_xml", "5": "runtime_error", "8": "invalid_node_id",
        "10": "malformed_record"}
    assert "PipelineSequence" in skipped["3"].detail and "does not parse" in skipped["4"].detail
    assert "Missing parameter [num_cycles]" in skipped["5"].detail   # BT.CPP 3 requires it too
    assert "'output'" in skipped["10"].detail
    restock = by_id["behaviortree-btgenbot-0001"]
    record = json.loads((UPSTREAM / "dataset" / "bt_dataset.json").read_text())[1]
    assert restock["provenance"] == {**restock["provenance"], "source": "upstream", "upstream_id": "1",
                                     "benchmark": "BTGenBot bt_dataset.json"}
    assert record["input"] in restock["instruction"] and "nodes.xml" in restock["instruction"]
    assert "<SequenceStar> -> <SequenceWithMemory>" in restock["provenance"]["migration"]
    assert "SubTree __autoremap -> _autoremap=\"true\"" in restock["provenance"]["migration"]
    assert "SequenceStar" not in restock["gold"] and 'BTCPP_format="4"' in restock["gold"]
    assert restock["failure_modes"] == ["structure", "version"]
    assert '<Condition ID="CrateAttached"/>' in restock["context"]["nodes.xml"]  # from its TreeNodesModel
    guard = by_id["behaviortree-btgenbot-0002"]
    assert "<Precondition if=\"mode == 'armed'\" else=\"SUCCESS\">" in guard["gold"]
    assert 'success_count="1"' in guard["gold"]
    assert guard["oracle"]["scenarios"][-1]["blackboard"]["mode"] == "not_armed"
    hello = by_id["behaviortree-btgenbot-0006"]["context"]["nodes.xml"]
    assert '<input_port name="greeting" type="std::string" default=""/>' in hello
    assert '<Condition ID="IsPersonNearby"/>' in hello
    # tinyxml2-only comment repaired; BT.CPP 2's FallbackStar (memory) is version 4's Fallback
    tidy = by_id["behaviortree-btgenbot-0007"]
    assert "<Fallback name=\"tidy\">" in tidy["gold"] and "<FallbackStar> -> <Fallback>" in tidy["provenance"]["migration"]
    assert any("comment" in c for c in tidy["provenance"]["migration"])
    # a port bound to an entry in one use and given a literal in another is an input port, not inout
    assert '<input_port name="text" type="std::string"/>' in by_id["behaviortree-btgenbot-0009"]["context"]["nodes.xml"]
    # Repeat num_cycles="{laps}": the entry starts as a number, not a placeholder string
    assert by_id["behaviortree-btgenbot-0011"]["oracle"]["scenarios"][0]["blackboard"]["laps"] == "1"
    assert 'success_count="1" failure_count="2"' in by_id["behaviortree-btgenbot-0012"]["gold"]
    # BT.CPP 4 looks the children of a reactive node up by element name: the explicit form is written
    # compact there (the kind kept in the palette); an ID on a built-in node becomes its name
    docking = by_id["behaviortree-btgenbot-0013"]
    assert '<BatteryLow />' in docking["gold"] and '<ReturnToDock dock="{dock}" />' in docking["gold"]
    assert '<Action ID="ContinueMowing" />' in docking["gold"] and '<Fallback name="Docking">' in docking["gold"]
    assert '<Condition ID="BatteryLow"/>' in docking["context"]["nodes.xml"]
    assert '<Condition ID="BatteryLow"> under <ReactiveSequence> -> <BatteryLow>' in docking["provenance"]["migration"]
    assert '<Fallback ID="Docking"> -> <Fallback name="Docking">' in docking["provenance"]["migration"]
    # only a tree that had a <TreeNodesModel> is logged as having it moved
    moved = "moved the tree's <TreeNodesModel> into the palette file"
    assert moved in restock["provenance"]["migration"] and moved not in docking["provenance"]["migration"]
    written = write_tasks(DSL, imported.tasks, tmp_path)  # strict load of every file
    assert len(written) == 9
    for path in written:  # the migrated golds pass their own oracle on the real toolchain
        task = load_task_file(path, tc.check_oracle)
        assert task.provenance["source"] == "upstream"
        assert [v["status"] for v in judge(task, task.gold)] == ["pass", "pass"], task.id


def _btgenbot_module():
    """btgenbot.py, as the behaviortree validator imports it."""
    import importlib
    return importlib.import_module(type(toolchains.get(DSL)).__module__)._btgenbot()


MUTANT_TREE = """<root main_tree_to_execute="MainTree">
  <BehaviorTree ID="MainTree">
    <Fallback name="dock_or_patrol">
      <Sequence name="dock">
        <Condition ID="IsBatteryLow"/>
        <Action ID="GoToDock" speed="0.5"/>
      </Sequence>
      <Sequence name="patrol">
        <Inverter>
          <Condition ID="IsObstacleAhead"/>
        </Inverter>
        <Action ID="Patrol" laps="2"/>
      </Sequence>
    </Fallback>
  </BehaviorTree>
</root>"""


def test_btgenbot_semantic_mutants_pass_syntax_and_fail_semantics(tmp_path, tasks):
    # the same tree five times in the published layout: the record index rotates the kinds of slip
    record = {"instruction": "You will be provided a summary of a task performed by a behavior tree...",
              "input": "The robot docks when its battery is low, otherwise it patrols if no obstacle is ahead.",
              "output": MUTANT_TREE}
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "bt_dataset.json").write_text(json.dumps([record] * 5))
    tc = toolchains.get(DSL)
    imported = tc.import_upstream(tmp_path)
    assert len(imported.tasks) == 5 and not imported.skipped
    notes = set()
    for t in imported.tasks:
        assert 1 <= len(t["mutants"]) <= 3
        assert len({m["program"] for m in t["mutants"]} | {t["gold"]}) == len(t["mutants"]) + 1
        assert all(m["level"] == "semantic" and m["note"] for m in t["mutants"])
        notes |= {m["note"] for m in t["mutants"]}
    assert {"control flow: <Fallback> -> <Sequence> (name=\"dock_or_patrol\")",
            "children 1 and 2 of <Fallback> swapped (<Sequence> after <Sequence>)",
            "leaf <IsBatteryLow> dropped from <Sequence>",
            "Inverter around condition <IsObstacleAhead> removed",
            "numeric port literal: <GoToDock speed> 0.5 -> 1.5"} <= notes
    # deterministic: the same record gives the same mutants
    gold, kinds = imported.tasks[0]["gold"], {"IsBatteryLow": "Condition", "GoToDock": "Action",
                                              "IsObstacleAhead": "Condition", "Patrol": "Action"}
    btgenbot = _btgenbot_module()
    assert btgenbot.semantic_mutants(gold, kinds, 3) == btgenbot.semantic_mutants(gold, kinds, 3)
    written = write_tasks(DSL, imported.tasks, tmp_path / "out")
    seen = set()
    for path in written:   # BT.CPP 4 loads each mutant with the palette; the generated scenarios kill it
        task = load_task_file(path, tc.check_oracle)
        for m in task.mutants:
            if m.program in seen:
                continue
            seen.add(m.program)
            syn, sem = judge(task, m.program)
            assert syn["status"] == "pass", (m.note, syn["diagnostics"])
            assert sem["status"] == "fail" and sem["reason"] == "oracle_mismatch", (m.note, sem["diagnostics"])
    assert len(seen) >= 5


def test_btgenbot_mutants_skip_swaps_of_blackboard_writes():
    btgenbot = _btgenbot_module()
    gold = mainxml('<Sequence>\n<SetBlackboard output_key="a" value="1"/>\n<SetBlackboard output_key="b" value="2"/>\n'
                   '<Wave/>\n</Sequence>')
    mutants = btgenbot.semantic_mutants(gold, {"Wave": "Action"}, 1)
    # the two writes swapped would be the same program: no "children ... swapped" mutant
    assert mutants and not any(m["note"].startswith("children") for m in mutants)
    assert all(m["program"] != gold for m in mutants)


def test_btgenbot_timers_under_a_second_are_skipped_and_delayed_children_never_mutated():
    btgenbot = _btgenbot_module()
    wait = mainxml('<Sequence>\n<Wave/>\n<Delay delay_msec="{ms}">\n<Sequence>\n<Wave/>\n<Patrol laps="2"/>\n'
                   '</Sequence>\n</Delay>\n</Sequence>')
    for ms in ("5", "999", "{pause}"):    # fires or not depending on how fast the ticks run: the gold would be flaky
        with pytest.raises(btgenbot.Unconvertible) as e:
            btgenbot.check_timing(wait.replace("{ms}", ms))
        assert e.value.reason == "timing_dependent"
    slow = wait.replace("{ms}", "2000")
    btgenbot.check_timing(slow)           # a second or more never fires within a scenario: kept
    mutants = btgenbot.semantic_mutants(slow, {"Wave": "Action", "Patrol": "Action"}, 0)
    # the delayed child never runs, so a slip there could not be seen: only the part before the Delay changes
    assert mutants and all("Patrol" not in m["note"] and "laps" not in m["note"] for m in mutants)
    assert all(m["program"].count("<Patrol") == 1 and 'laps="2"' in m["program"] for m in mutants)


def test_btgenbot_layouts_and_wrong_folder(tmp_path):
    tc = toolchains.get(DSL)
    from dslbench.upstream import NotThisBenchmark
    with pytest.raises(NotThisBenchmark):
        tc.import_upstream(tmp_path)                                   # no dataset/bt_dataset.json
    (tmp_path / "bt_dataset.json").write_text('{"not": "a list"}')
    with pytest.raises(NotThisBenchmark):
        tc.import_upstream(tmp_path)


def test_missing_binding_gives_unavailable_with_reason(monkeypatch):
    import importlib.metadata as md
    real = md.version

    def version(name):
        if name == "behaviortreepy":
            raise md.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(md, "version", version)
    toolchains.probe.cache_clear()
    try:
        task = load_tasks([DSL])[DSL][0]
        out = pipeline.evaluate(DSL, task, task.gold)
        assert out["syntax"]["status"] == out["semantic"]["status"] == "unavailable"
        assert "behaviortreepy" in out["syntax"]["diagnostics"]
    finally:
        toolchains.probe.cache_clear()
