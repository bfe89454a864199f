"""Cypher: the CypherBench importer (test.json records, graph schemas under graphs/schemas/)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from dslbench.upstream import Imported, convert_each

from .query import code_only

CYPHERBENCH_REQUIRED = {"qid": str, "graph": str, "gold_cypher": str, "from_template": dict}


def _difficulty(gold: str) -> str:
    """CypherBench has no difficulty label: derive one from the gold query's shape."""
    code = code_only(gold)
    hops = len(re.findall(r"-\s*\[|-->|<--|--", code))
    aggregates = re.search(r"\b(count|sum|avg|min|max|collect)\s*\(", code, re.I) is not None
    nested = re.search(r"\bCALL\s*\{|\bUNION\b|\bWITH\b", code, re.I) is not None
    if hops >= 3 or nested or (hops >= 2 and aggregates):
        return "hard"
    return "easy" if hops <= 1 and not aggregates else "medium"


def _render_schema(schema: dict) -> str:
    """A CypherBench graph schema JSON (entities, relations) in the text form of our bundled graphs."""
    lines = [f'Graph "{schema.get("name", "?")}" (Neo4j property graph, CypherBench).', "", "Nodes"]
    for ent in sorted(schema.get("entities", []), key=lambda e: e.get("label", "")):
        props = {"name": "str", **(ent.get("properties") or {})}
        lines.append(f"  (:{ent['label']} {{" + ", ".join(f"{k}: {v}" for k, v in props.items()) + "})")
    lines += ["", "Relationships"]
    for rel in sorted(schema.get("relations", []), key=lambda r: (r.get("label", ""), r.get("subj_label", ""))):
        props = rel.get("properties") or {}
        inner = f" {{{', '.join(f'{k}: {v}' for k, v in props.items())}}}" if props else ""
        lines.append(f"  (:{rel['subj_label']})-[:{rel['label']}{inner}]->(:{rel['obj_label']})")
    return "\n".join(lines) + "\n"


def import_cypherbench(source: Path) -> Imported:
    """Map CypherBench records (qid, graph, gold_cypher, nl_question, answer_json, from_template) to tasks.

    `source` is test.json or the folder holding it. The graph schema shown to the model comes from
    graphs/schemas/<graph>_schema.json next to test.json when present (CypherBench's layout). The oracle
    marks the graph as external (the user supplies it) and, when answer_json is given, carries the
    expected rows, compared like CypherBench's execution accuracy: any column order, lists unordered,
    row order only when the gold has ORDER BY. A malformed record is skipped (`malformed_record`, the
    detail naming it), and so is a second record with the same qid (`duplicate_id`).
    """
    path = source / "test.json" if source.is_dir() else source
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable CypherBench JSON file: {e}") from None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    schemas = path.parent / "graphs" / "schemas"
    return convert_each(((str(n), rec) for n, rec in enumerate(records)),
                        lambda n, rec: _to_task(path, schemas, int(n), rec))


def _to_task(path: Path, schemas: Path, n: int, rec) -> dict:
    """One CypherBench record as a task; ValueError naming the record when it is malformed."""
    import warnings
    where = f"{path.name} record {n}" + (f" (qid {rec.get('qid')!r})" if isinstance(rec, dict) else "")
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: expected an object, got {type(rec).__name__}")
    for key, kind in CYPHERBENCH_REQUIRED.items():
        if not isinstance(rec.get(key), kind) or (kind is str and not rec[key].strip()):
            raise ValueError(f"{where}: field '{key}' is missing or not a non-empty {kind.__name__}")
    question = rec.get("nl_question") or rec.get("nl_question_raw")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"{where}: field 'nl_question' is missing or empty")
    template = rec["from_template"]
    for key in ("match_category", "return_pattern_id"):
        if not isinstance(template.get(key), str):
            raise ValueError(f"{where}: field 'from_template.{key}' is missing")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", rec["graph"]):
        raise ValueError(f"{where}: field 'graph' {rec['graph']!r} is not a plain graph name")
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", rec["qid"]).strip("-")
    task_id = f"cypher-cb-{slug}"
    oracle = {"graph": rec["graph"], "external": True, "columns": "any", "list_order": "ignore"}
    answer = rec.get("answer_json")
    if answer is not None:
        try:
            rows = json.loads(answer) if isinstance(answer, str) else answer
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: field 'answer_json' is not JSON: {e}") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError(f"{where}: field 'answer_json' must be a JSON list of row objects")
        keys = list(rows[0]) if rows else []
        if any(list(r) != keys for r in rows):
            warnings.warn(f"{where}: answer rows have differing columns; the oracle runs the gold instead")
        else:
            oracle["expected"] = [[r[k] for k in keys] for r in rows]
            oracle["expected_columns"] = keys
    context = {}
    schema_file = schemas / f"{rec['graph']}_schema.json"
    if schema_file.is_file():
        try:
            context["schema.txt"] = _render_schema(json.loads(schema_file.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{schema_file}: not a CypherBench graph schema: {e}") from None
    instruction = (question.strip() + f"\n\nThe graph is the CypherBench knowledge graph '{rec['graph']}'"
                   + (" described in `schema.txt`." if context else " (its schema was not supplied with the "
                      "tasks).") + " Return entity names or properties, not node objects, and avoid "
                   "listing the same entity twice.\n")
    return {
        "id": task_id, "dsl": "cypher", "domain": "Database/Query",
        "title": f"CypherBench {rec['graph']}: {template['match_category']} / {template['return_pattern_id']}",
        "difficulty": _difficulty(rec["gold_cypher"]),
        "constructs": [template["match_category"], template["return_pattern_id"]],
        "failure_modes": [],
        "instruction": instruction, "context": context, "gold": rec["gold_cypher"].strip() + "\n",
        "oracle": oracle,
        "provenance": {"source": "upstream", "benchmark": "CypherBench", "upstream_id": rec["qid"],
                       "licence": "Apache-2.0 (CypherBench)"},
        "split": "test", "mutants": []}
