"""Oracle specs, declared once per DSL.

A DSL's card (toolchains/<dsl>/toolchain.yaml) declares `oracle_schema`: a JSON Schema (draft 2020-12,
written in YAML) of a task's `oracle` mapping. `problems()` checks an oracle against it and names
every problem by its field path (`a.b[2].c`), which `tasks.py` turns into file:line:field errors.
What a schema cannot say (a context file the oracle names must exist, a port may not be both input
and output) stays in the validator's `oracle_rules()`, which runs once the shape is right.

A schema node may carry `description`: it is the message shown when that node is violated, so a
task author reads what is expected instead of the validator library's wording.
"""
from __future__ import annotations

import functools
import json

from jsonschema import Draft202012Validator, validators

# JSON Schema counts 2.0 as an integer and Python counts True as one; an oracle's counts and widths are
# neither, so "integer" here means a YAML integer only.
_Validator = validators.extend(Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, x: isinstance(x, int) and not isinstance(x, bool)))


@functools.lru_cache(maxsize=None)
def _validator(schema_json: str):
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)   # a broken card fails loudly, not as a task error
    return _Validator(schema)


def check_schema(schema: dict) -> None:
    """Raise jsonschema.SchemaError when a card's oracle_schema is not a valid JSON Schema."""
    _validator(json.dumps(schema, sort_keys=True))


def field_path(parts, instance=None) -> str:
    """('processes', 'FASTQC', 'inputs', 0) -> 'processes.FASTQC.inputs[0]'.

    Given the oracle, a list index is written [i] and a mapping key .k even when the key is a number
    (YAML `1:`); without it, integers are taken as list indices."""
    out, node = "", instance
    for p in parts:
        is_index = isinstance(node, list) if instance is not None else isinstance(p, int)
        out += f"[{p}]" if is_index else (f".{p}" if out else str(p))
        try:
            node = node[p] if node is not None else None
        except (KeyError, IndexError, TypeError):
            node = None
    return out


def _short(value) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _explain(error) -> list[tuple[list, str]]:
    """(path parts, message) for one schema violation, pointing at the key at fault where there is one."""
    path, schema, instance = list(error.absolute_path), error.schema, error.instance
    if "propertyNames" in error.relative_schema_path:    # the key itself is at fault: name it
        path = path + [instance]
    if error.validator == "required":
        props = schema.get("properties", {})
        return [(path + [key], "missing required field" + (f": {props[key]['description']}"
                                                           if isinstance(props.get(key), dict) and "description" in props[key] else ""))
                for key in error.validator_value if key not in instance]
    if error.validator == "additionalProperties" and schema.get("additionalProperties") is False:
        allowed = sorted(schema.get("properties", {}))
        extra = [k for k in instance if k not in schema.get("properties", {})]
        return [(path + [k], f"unknown key (allowed: {', '.join(allowed)})") for k in extra]
    if "description" in schema:
        return [(path, f"{schema['description']} (got {_short(instance)})")]
    return [(path, error.message if len(error.message) <= 200 else error.message[:197] + "...")]


def problems(schema: dict | None, oracle) -> list[tuple[str, str]]:
    """(field path, message) for every way `oracle` breaks `schema`; empty when it conforms (or no schema)."""
    if not schema:
        return []
    validator = _validator(json.dumps(schema, sort_keys=True))
    found = []
    try:
        errors = sorted(validator.iter_errors(oracle), key=lambda e: [str(p) for p in e.absolute_path])
    except TypeError as e:    # patternProperties and propertyNames need string keys; YAML allows others
        return [("", f"every key must be a string ({e})")]
    for error in errors:
        for path, message in _explain(error):
            item = (field_path(path, oracle), message)
            if item not in found:
                found.append(item)
    return found
