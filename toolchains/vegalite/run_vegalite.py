"""Runs inside the sandbox: the syntax level of Vega-Lite specs, written to a JSON report.

usage: python run_vegalite.py OUT.json SCHEMA.json VL_VERSION SPEC.json ...

For each spec, in order: it must be strict JSON (no comments, trailing commas, NaN), a JSON
object, declare no "$schema" other than Vega-Lite v5, validate against the Vega-Lite v5 JSON
schema (draft-07, jsonschema), and compile to Vega with vl-convert (vegalite_to_vega at the
given Vega-Lite version). The first failing step is reported as {ok: false, stage, error}.
"""
import json
import re
import sys

import jsonschema
import vl_convert

V5_SCHEMA = re.compile(r"^https?://vega\.github\.io/schema/vega-lite/v5(\.\d+){0,2}\.json$")
# Which top-level definition a spec means, from its composition keyword (for readable errors:
# against TopLevelSpec, jsonschema can only say "is not valid under any of the given schemas").
KINDS = [("layer", "TopLevelLayerSpec"), ("facet", "TopLevelFacetSpec"), ("repeat", "TopLevelRepeatSpec"),
         ("hconcat", "TopLevelHConcatSpec"), ("vconcat", "TopLevelVConcatSpec"), ("concat", "TopLevelConcatSpec")]


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def _where(path) -> str:
    text = ""
    for p in path:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "(top level)"


PRIORITY = {"additionalProperties": 0, "enum": 1, "const": 1, "type": 2, "required": 4}


def _weight(e) -> int:
    """How wrong one error says its branch is: an additionalProperties error counts each
    unexpected property, so the branch that expects most of the given properties wins."""
    if e.validator == "additionalProperties" and isinstance(e.instance, dict):
        known = set((e.schema.get("properties") or {}))
        return max(1, len(set(e.instance) - known))
    return 1


def _score(errors) -> tuple:
    """How well one anyOf/oneOf branch matches, from its errors: (fits the instance's type, fewer
    weighted errors, reaches deeper into the spec, names the allowed values). Nested anyOf errors
    are scored by their own best branch."""
    fits, weight, depth, enum = True, 0, 0, False
    for e in errors:
        if e.validator in ("anyOf", "oneOf") and e.context:
            f, w, d, n = _best_branch(e)[0]
            # only an anyOf at the branch's own root says whether the branch fits the instance
            fits = fits and (f or len(e.relative_path) > 0)
            weight, depth, enum = weight - w, max(depth, d), enum or n
            continue
        if len(e.relative_path) == 0 and e.validator in ("type", "enum", "const"):
            fits = False
        weight += _weight(e)
        depth = max(depth, len(e.absolute_path))
        enum = enum or e.validator == "enum"
    return fits, -weight, depth, enum


def _best_branch(error):
    branches = {}
    for e in error.context:
        branches.setdefault(e.relative_schema_path[0], []).append(e)
    return max(((_score(errs), errs) for errs in branches.values()), key=lambda t: t[0])


def _deepest(error):
    """Follow anyOf/oneOf branches to the most specific error: at each level the best-matching
    branch (see _score), and inside it the deepest error, an unexpected property before a wrong
    value before a missing property."""
    while error.context:
        error = _pick(_best_branch(error)[1])
    return error


def _pick(errors):
    return max(errors, key=lambda e: (len(e.absolute_path), -PRIORITY.get(e.validator, 3)))


def schema_error(validator_for, spec):
    name = next((d for key, d in KINDS if key in spec), "TopLevelUnitSpec")
    errors = list(validator_for(name).iter_errors(spec))
    if not errors:
        # valid for the definition we guessed: the full TopLevelSpec decides
        errors = list(validator_for("TopLevelSpec").iter_errors(spec))
        if not errors:
            return None
    error = _deepest(_pick(errors))
    message = error.message
    if len(message) > 240:
        message = message[:237] + "..."
    return f"schema: at {_where(error.absolute_path)}: {message}"


def judge(path, validator_for, vl_version):
    try:
        text = open(path, encoding="utf-8").read()
    except UnicodeDecodeError as e:
        return {"ok": False, "stage": "json", "error": f"not UTF-8 text: {e}"}
    try:
        spec = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        return {"ok": False, "stage": "json", "error": f"not JSON: line {e.lineno} column {e.colno}: {e.msg}"}
    except ValueError as e:
        return {"ok": False, "stage": "json", "error": f"not JSON: {e}"}
    except RecursionError:
        return {"ok": False, "stage": "json", "error": "not accepted: JSON nested too deeply"}
    if not isinstance(spec, dict):
        return {"ok": False, "stage": "json", "error": f"a Vega-Lite spec is a JSON object, got {type(spec).__name__}"}
    declared = spec.get("$schema")
    if declared is not None and not (isinstance(declared, str) and V5_SCHEMA.match(declared)):
        return {"ok": False, "stage": "schema",
                "error": f"$schema {str(declared)[:120]!r} is not the Vega-Lite v5 schema"}
    try:
        problem = schema_error(validator_for, spec)
    except RecursionError:
        problem = "schema: the spec is nested too deeply to validate"
    if problem:
        return {"ok": False, "stage": "schema", "error": problem}
    try:
        vl_convert.vegalite_to_vega(spec, vl_version=vl_version)
    except Exception as e:  # vl-convert raises ValueError/RuntimeError with a JS stack
        lines = [l.strip() for l in str(e).splitlines() if l.strip() and not l.strip().startswith("at ")]
        first = " ".join(lines[:2]) if lines else type(e).__name__
        first = first.replace("Vega-Lite to Vega conversion failed: ", "")
        return {"ok": False, "stage": "compile", "error": f"vega-lite compile: {first[:300]}"}
    return {"ok": True, "stage": "done", "error": ""}


def main():
    out_path, schema_path, vl_version, programs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    schema = json.load(open(schema_path, encoding="utf-8"))
    cache = {}

    def validator_for(definition):
        if definition not in cache:
            sub = {"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]}
            cache[definition] = jsonschema.Draft7Validator(sub)
        return cache[definition]

    report = {}
    for path in programs:
        report[path] = judge(path, validator_for, vl_version)
        with open(out_path, "w") as f:
            json.dump(report, f)


main()
