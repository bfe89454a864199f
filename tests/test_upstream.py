"""Importing upstream tasks is all or nothing, and what is written loads strictly."""
import pytest

from dslbench.tasks import TaskError, load_task_file
from dslbench.upstream import dump_task, write_tasks


def upstream_task(i, **over):
    task = {"id": f"jq-up-{i}", "dsl": "jq", "domain": "Data Engineering", "title": f"Upstream {i}",
            "difficulty": "easy", "constructs": ["identity"], "failure_modes": [],
            "instruction": "Return the input.\nUnchanged.", "gold": ".", "oracle": {"inputs": [1, [2]]},
            "provenance": {"source": "upstream", "benchmark": "example", "upstream_id": str(i), "licence": "MIT"},
            "split": "test", "mutants": []}
    task.update(over)
    return task


def test_written_tasks_load_back_with_block_strings(tmp_path):
    paths = write_tasks("jq", [upstream_task(1), upstream_task(2)], tmp_path)
    assert [p.name for p in paths] == ["jq-up-1.yaml", "jq-up-2.yaml"]
    assert "instruction: |" in paths[0].read_text()
    assert load_task_file(paths[0]).provenance["benchmark"] == "example"


def test_one_bad_record_writes_nothing(tmp_path):
    bad = upstream_task(2, difficulty="Extra Hard")
    with pytest.raises(TaskError) as err:
        write_tasks("jq", [upstream_task(1), bad], tmp_path)
    assert err.value.field == "difficulty" and "jq-up-2.yaml" in err.value.path
    assert not (tmp_path / "jq").exists() or not list((tmp_path / "jq").iterdir())


def test_dump_orders_fields_like_the_schema():
    text = dump_task(upstream_task(3))
    assert text.index("id:") < text.index("instruction:") < text.index("gold:") < text.index("provenance:")
