"""Oracle specs are declared once, in each DSL card's `oracle_schema`, and checked by one function that
names the field at fault; the task loader turns that into file:line:field errors."""
from pathlib import Path

import pytest
import yaml

from dslbench import oracle_schema, toolchains
from dslbench.tasks import TaskError, load_task_file, load_tasks

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["top"],
    "properties": {
        "top": {"type": "string", "description": "name of the module under test"},
        "order": {"enum": ["ordered", "unordered"]},
        "ports": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1,
                                                             "description": "a positive width"}},
        "vectors": {"type": "array", "items": {"type": "object", "required": ["a"]}},
    },
}


def test_problems_name_the_field_at_fault():
    assert oracle_schema.problems(SCHEMA, {"top": "m", "order": "ordered"}) == []
    found = dict(oracle_schema.problems(SCHEMA, {"order": "sideways", "ports": {"a": 0, "b": 2},
                                                 "vectors": [{"a": 1}, {}], "ordr": 1}))
    assert set(found) == {"top", "order", "ports.a", "vectors[1].a", "ordr"}
    assert found["top"] == "missing required field: name of the module under test"
    assert found["ports.a"] == "a positive width (got 0)"
    assert found["ordr"].startswith("unknown key (allowed: order, ports, top, vectors)")
    assert "sideways" in found["order"]
    assert oracle_schema.problems(None, {"anything": 1}) == []


def test_a_broken_schema_fails_loudly():
    with pytest.raises(Exception, match="is not valid"):
        oracle_schema.check_schema({"type": "no-such-type"})


@pytest.mark.parametrize("dsl", sorted(load_tasks()))
def test_cards_declare_a_valid_oracle_schema(dsl):
    """Every DSL, a new one too, declares its oracle's shape; validators add rules, never re-check the shape."""
    tc = toolchains.get(dsl)
    schema = tc.card.get("oracle_schema")
    assert isinstance(schema, dict) and schema.get("type") == "object", f"{dsl}: card has no oracle_schema"
    oracle_schema.check_schema(schema)
    assert type(tc).check_oracle is toolchains.Toolchain.check_oracle, f"{dsl}: declare rules in oracle_rules()"
    for task in load_tasks([dsl])[dsl]:       # every bundled oracle conforms
        assert tc.check_oracle(task) == [], task.id


def test_a_key_at_fault_is_named_and_integers_are_integers():
    schema = {"type": "object", "propertyNames": {"enum": ["x", "y"]},
              "additionalProperties": {"type": "integer", "description": "a count"}}
    assert oracle_schema.problems(schema, {"x": 1, "z": 2}) == [("z", "'z' is not one of ['x', 'y']")]
    assert dict(oracle_schema.problems(schema, {"x": 2.0, "y": True})) == {"x": "a count (got 2.0)", "y": "a count (got true)"}
    listed = {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}
    assert [f for f, _ in oracle_schema.problems(listed, {"a": ["ok", 3], 1: ["b"]})] == ["a[1]"]
    named = {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "string"}}}
    assert "every key must be a string" in oracle_schema.problems(named, {1: "x"})[0][1]


def test_a_bad_oracle_is_reported_with_file_line_and_field(tmp_path):
    task = next(iter(load_tasks(["jq"])["jq"]))
    path = Path(task.path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["oracle"]["order"] = "sideways"
    data["oracle"]["ordr"] = "ordered"
    bad = tmp_path / "jq" / path.name
    bad.parent.mkdir()
    bad.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(TaskError) as e:
        load_task_file(bad, toolchains.get("jq").check_oracle)
    assert e.value.field in ("oracle.order", "oracle.ordr") and e.value.line > 1
    assert str(bad) in str(e.value)


def test_the_book_lists_the_fields_of_every_form_of_an_oracle():
    from dslbench.book import oracle_spec_md
    page = "\n".join(oracle_spec_md(toolchains.get("solidity").card["oracle_schema"]))
    assert "When `kind` is `repository`:" in page and "Otherwise:" in page
    assert "| `marker` | yes | string |" in page and "| `scenarios` | yes | array |" in page
    for dsl in load_tasks():       # every card's oracle is documented in the book
        assert "| field | required |" in "\n".join(oracle_spec_md(toolchains.get(dsl).card["oracle_schema"])), dsl
