"""jqBench import (toolchains/jq/jqbench.py) on a fixture written in the published layout, as the
upstream's loader reads it (tests/fixtures/jq/jqbench/: jqStack.jsonl, jqStackEasy.jsonl, jqSpider.jsonl,
one JSON object per line, `*_json` members holding JSON text, jqSpider's input as a relative `inputfile`
whose member "data" is the document), and the jq validator's rule for these tasks: jqBench's value
match (one of several references, exact / wrapped / unwrapped in one way on every input, keyless)."""
import importlib
import json
import shutil

import pytest

from conftest import ROOT, run_cli, skip_without_toolchain
from dslbench import pipeline, toolchains
from dslbench.tasks import load_task_file
from dslbench.upstream import NotThisBenchmark, write_tasks

FIXTURE = ROOT / "tests" / "fixtures" / "jq" / "jqbench"

available = skip_without_toolchain("jq")   # the importer runs the gold and mutants with libjq


def importer():
    toolchains.get("jq")
    return importlib.import_module("dslbench.plugins.jq.jqbench")


@pytest.fixture(scope="module")
def made():
    return importer().load(FIXTURE, progress=False)


@pytest.fixture(scope="module")
def tasks(made, tmp_path_factory):
    tc = toolchains.get("jq")
    paths = write_tasks("jq", made.tasks, tmp_path_factory.mktemp("jqbench"))
    return {p.stem: load_task_file(p, tc.check_oracle) for p in paths}


def judge(task, program):
    got = pipeline.evaluate("jq", task, program)
    return got["syntax"]["status"], got["semantic"]["status"], got["semantic"]["diagnostics"]


def test_every_record_is_imported_or_skipped_with_its_reason(made):
    assert made.read == 12
    assert [t["id"] for t in made.tasks] == [
        "jqbench-jqstack-101", "jqbench-jqstack-102", "jqbench-jqstack-so-7", "jqbench-jqstackeasy-3",
        "jqbench-jqspider-concert_singer.0", "jqbench-jqspider-concert_singer.1"]
    assert {s.record: s.reason for s in made.skipped} == {
        "jqStack:4": "malformed_record",              # a line that is not JSON
        "jqStack:105": "malformed_record",            # both inputs and inputfile
        "jqStackEasy:101": "duplicate_record",        # jqStackEasy repeats a jqStack record
        "jqSpider:pets_1.4": "missing_input_file",
        "jqStack:103": "gold_fails",                  # the gold raises on an input: the upstream cannot score it
        "jqStack:108": "gold_fails",                  # an alternative reference does not compile
    }


def test_task_fields_keep_the_upstream_record(made):
    t = {t["id"]: t for t in made.tasks}
    users = t["jqbench-jqstack-101"]
    assert users["gold"] == ".users[] | select(.age > 30) | .name\n"
    assert users["oracle"]["references"] == [".users | map(select(.age > 30).name) | .[]\n"]
    assert users["oracle"]["inputs"][1] == {"users": []} and users["oracle"]["wrapping"] == "lenient"
    assert users["oracle"]["keys"] == "compared" and users["oracle"]["order"] == "ordered"
    assert '- `{"users": []}`' in users["instruction"]        # the inputs are shown, as the upstream's prompt does
    assert users["provenance"] == {"source": "upstream", "benchmark": "jqBench (jqStack)", "upstream_id": "101",
                                   "licence": "see the jqBench dataset card (PidgeyUsedGust/jqBench)"}
    assert "filtering" in users["constructs"] and users["failure_modes"] == ["knowledge"]
    assert t["jqbench-jqstack-102"]["oracle"]["keys"] == "ignored"
    assert t["jqbench-jqstack-so-7"]["difficulty"] == "hard" and t["jqbench-jqstackeasy-3"]["difficulty"] == "easy"
    singers = t["jqbench-jqspider-concert_singer.1"]
    data = json.loads((FIXTURE / "jqSpider" / "concert_singer.json").read_text())["data"]
    assert singers["oracle"]["inputs"] == [data] and singers["oracle"]["order"] == "ordered"
    assert json.loads(singers["context"]["schema.json"])["properties"]["singer"]["type"] == "array"
    assert "schema.json" in singers["instruction"] and singers["failure_modes"] == ["structure"]
    assert t["jqbench-jqspider-concert_singer.0"]["oracle"]["order"] == "unordered"


def test_gold_and_references_pass_both_levels_and_mutants_fail_semantics(tasks):
    assert sum(len(t.mutants) for t in tasks.values()) >= 10
    for task in tasks.values():
        for program in [task.gold, *task.oracle.get("references", [])]:
            assert judge(task, program)[:2] == ("pass", "pass"), (task.id, program)
        for m in task.mutants:
            assert m.level == "semantic"
            assert judge(task, m.program)[:2] == ("pass", "fail"), (task.id, m.note)


def test_jqbench_value_match_wrapped_unwrapped_and_keyless(tasks):
    users = tasks["jqbench-jqstack-101"]
    # the names as one array instead of a stream: jqBench's "wrapped" match passes
    assert judge(users, "[.users[] | select(.age > 30) | .name]")[:2] == ("pass", "pass")
    # wrapped on one input and exact on the other is not one way of matching
    mixed = "if (.users | length) > 0 then [.users[] | select(.age > 30) | .name] else empty end"
    status = judge(users, mixed)
    assert status[:2] == ("pass", "fail") and "not in one way" in status[2]
    assert judge(users, ".users[] | select(.age >= 30) | .name")[:2] == ("pass", "fail")
    # keys: ignored: another key name passes, another value does not
    rename = tasks["jqbench-jqstack-102"]
    assert judge(rename, "map({id_only: .id})")[:2] == ("pass", "pass")
    assert judge(rename, "map({key: .x})")[:2] == ("pass", "fail")
    # keyless and unordered: the count in a one-element array is the unwrapped match
    count = tasks["jqbench-jqspider-concert_singer.0"]
    assert judge(count, "[.singer | length]")[:2] == ("pass", "pass")
    # keyless but ordered: the oldest-first order is checked
    singers = tasks["jqbench-jqspider-concert_singer.1"]
    assert judge(singers, "[.singer[] | select(.age > 30)] | sort_by(.age) | map({country, name})")[:2] == ("pass", "fail")


def test_a_file_the_data_folder_or_a_checkout_imports_and_a_wrong_folder_does_not(tmp_path):
    module = importer()
    assert [t["id"] for t in module.load(FIXTURE / "jqStackEasy.jsonl", progress=False).tasks] == [
        "jqbench-jqstackeasy-101", "jqbench-jqstackeasy-3"]     # alone, the easy file has no duplicate
    checkout = tmp_path / "jqBench"
    shutil.copytree(FIXTURE, checkout / "data")
    assert module.load(checkout, progress=False).read == 12
    with pytest.raises(NotThisBenchmark, match="jqStack.jsonl"):
        module.load(FIXTURE.parent, progress=False)
    with pytest.raises(NotThisBenchmark, match="not one of jqBench's files"):
        module.load(FIXTURE / "jqSpider" / "concert_singer.json", progress=False)


def test_cli_import_prints_the_summary_and_a_wrong_folder_is_a_clear_error(tmp_path):
    done = run_cli("import", "jq", str(FIXTURE), "--out", str(tmp_path), "--verify")
    assert done.returncode == 0, done.stderr
    assert "read 12 record(s), imported 6, skipped 6" in done.stdout
    assert "gold_fails" in done.stdout and "duplicate_record" in done.stdout
    assert "gold through both levels: 6/6 pass" in done.stdout
    wrong = run_cli("import", "jq", str(FIXTURE.parent), "--out", str(tmp_path / "x"))
    assert wrong.returncode != 0 and "Traceback" not in wrong.stderr and "jqStack.jsonl" in wrong.stderr


def test_verify_names_every_surviving_mutant(tmp_path, monkeypatch, capsys):
    """A mutant the oracle lets through is listed with its task and note, to be read (equivalent, or a
    gap in the oracle); here one is made a copy of its gold, so it must survive."""
    import yaml
    from dslbench import cli
    assert run_cli("import", "jq", str(FIXTURE), "--out", str(tmp_path)).returncode == 0
    path = sorted((tmp_path / "jq").glob("*.yaml"))[0]
    task = yaml.safe_load(path.read_text())
    k = next(i for i, m in enumerate(task["mutants"]) if m["level"] == "semantic")
    task["mutants"][k]["program"] = task["gold"]
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    monkeypatch.setenv("DSLBENCH_TASKS", str(tmp_path))
    assert cli._verify_import("jq", tmp_path) == 0
    out = capsys.readouterr().out
    assert f"  {task['id']} mutant {k}: {task['mutants'][k]['note']}: syntax pass, semantic pass" in out
    assert out.count(" mutant ") == 1
