"""Task schema: bundled tasks load; malformed files stop with file, line and field, and write nothing."""
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from dslbench.errors import UserError
from dslbench.tasks import TaskError, load_task_file, load_tasks

GOOD = textwrap.dedent("""\
    id: jq-900
    dsl: jq
    domain: Data Engineering
    title: Identity
    difficulty: easy
    constructs: [identity]
    failure_modes: [structure]
    instruction: |
      Output the input unchanged.
    gold: |
      .
    oracle:
      inputs: [1, {"a": 2}]
    provenance:
      source: authored
      licence: CC-BY-4.0
    split: test
    """)


def write_task(root: Path, text: str, name="jq-900.yaml") -> Path:
    path = root / "data" / "tasks" / "jq" / name
    path.write_text(text)
    return path


def test_bundled_tasks_load_with_unique_ids():
    tasks = load_tasks()
    ids = [t.id for ts in tasks.values() for t in ts]
    assert len(ids) == len(set(ids))
    assert {"jq", "smiles", "verilog"} <= set(tasks)


def test_good_task_loads(project_copy):
    task = load_task_file(write_task(project_copy, GOOD))
    assert task.id == "jq-900" and task.oracle["inputs"] == [1, {"a": 2}]
    task = load_task_file(write_task(project_copy, GOOD + "equivalents:\n  - program: '[.] | .[0]'\n    note: idiom\n"))
    assert [(e.program, e.note) for e in task.equivalents] == [("[.] | .[0]", "idiom")]


@pytest.mark.parametrize("edit, field, line", [
    (lambda t: t.replace("difficulty: easy", "difficulty: trivial"), "difficulty", 5),
    (lambda t: t.replace("title: Identity\n", ""), "title", 1),
    (lambda t: t.replace("constructs: [identity]", "constructs: identity"), "constructs", 6),
    (lambda t: t.replace("  licence: CC-BY-4.0\n", ""), "provenance.licence", 14),
    (lambda t: t.replace("id: jq-900", "id: jq-901"), "id", 1),
    (lambda t: t.replace("split: test", "split: test\ncolour: red"), "colour", 18),
    (lambda t: t.replace("  inputs: [1, {\"a\": 2}]", "  inputs: 5"), "oracle.inputs", 13),
    (lambda t: t + "mutants:\n  - level: runtime\n    program: x\n    note: y\n", "mutants[0].level", 19),
    (lambda t: t.replace("failure_modes: [structure]", "failure_modes: [speed]"), "failure_modes[0]", 7),
    (lambda t: t + "equivalents:\n  - program: |\n      .\n    note: the gold again\n", "equivalents[0].program", 19),
    (lambda t: t + "equivalents:\n  - program: '[.] | .[0]'\n", "equivalents[0].note", 19),
])
def test_malformed_task_names_file_line_and_field(project_copy, edit, field, line):
    path = write_task(project_copy, edit(GOOD))
    with pytest.raises(TaskError) as err:
        load_tasks(["jq"])
    assert err.value.path == str(path)
    assert err.value.field == field
    assert err.value.line == line
    assert f"{path}:{line}" in str(err.value) and f"'{field}'" in str(err.value)


def test_invalid_yaml_reports_line(project_copy):
    path = write_task(project_copy, GOOD.replace("title: Identity", "title: [Identity"))
    with pytest.raises(TaskError) as err:
        load_tasks(["jq"])
    assert err.value.path == str(path) and err.value.line is not None


def test_malformed_task_stops_cli_before_writing_anything(project_copy, tmp_path):
    write_task(project_copy, GOOD.replace("difficulty: easy", "difficulty: 3"))
    run = tmp_path / "run"
    r = run_cli("generate", "--run", str(run), "--dsl", "jq", "--no-progress", env={"DSLBENCH_ROOT": str(project_copy)})
    assert r.returncode == 2
    assert "jq-900.yaml:5: field 'difficulty': expected str" in r.stderr
    assert not run.exists(), "a failed load must leave no partial output"


def test_task_sample_is_stratified_reproducible_and_checked(monkeypatch):
    """DSLBENCH_SAMPLE (pipeline --sample N --seed S): the same N tasks per DSL in every stage, every
    difficulty level kept, another seed another draw, a bad value a clear error."""
    full = load_tasks(["verilog", "jq"])
    monkeypatch.setenv("DSLBENCH_SAMPLE", "3")
    monkeypatch.setenv("DSLBENCH_SEED", "0")
    a = load_tasks(["verilog", "jq"])
    assert {d: len(v) for d, v in a.items()} == {"verilog": 3, "jq": 3}
    for dsl, ts in a.items():
        assert {t.difficulty for t in ts} == {"easy", "medium", "hard"}, dsl
        assert [t.id for t in ts] == sorted(t.id for t in ts)
    assert [t.id for t in load_tasks(["verilog"])["verilog"]] == [t.id for t in a["verilog"]]
    seeds = set()
    for seed in range(6):
        monkeypatch.setenv("DSLBENCH_SEED", str(seed))
        seeds.add(tuple(t.id for t in load_tasks(["jq"])["jq"]))
    assert len(seeds) > 1
    assert len(load_tasks(["jq"], sampled=False)["jq"]) == len(full["jq"])
    monkeypatch.setenv("DSLBENCH_SAMPLE", "1000")
    assert len(load_tasks(["jq"])["jq"]) == len(full["jq"])
    for bad in ("0", "three"):
        monkeypatch.setenv("DSLBENCH_SAMPLE", bad)
        with pytest.raises(UserError, match="DSLBENCH_SAMPLE"):
            load_tasks(["jq"])
