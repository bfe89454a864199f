"""Cypher validator: real FalkorDB runs (no mocks of the engine), the comparison rules, the Neo4j
configuration handling and the CypherBench loader."""
import importlib
import json
import sys
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains, upstream
from dslbench.prompting import build_messages
from dslbench.tasks import TaskError, load_task_file, load_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "cypher"
TC = toolchains.get("cypher")
V = sys.modules[type(TC).__module__]          # the validator module
Q = importlib.import_module(f"{V.__package__}.query")      # query text helpers and FalkorDB gaps
R = importlib.import_module(f"{V.__package__}.results")    # result comparison
TASKS = {t.id: t for t in load_tasks(["cypher"])["cypher"]}


@pytest.fixture
def falkordb(monkeypatch):
    """The embedded engine, never a configured Neo4j server."""
    for key in V.NEO4J_ENV:
        monkeypatch.delenv(key, raising=False)
    toolchains.probe.cache_clear()
    probe = toolchains.probe("cypher")
    if not probe.available:
        pytest.skip(f"cypher toolchain unavailable here: {probe.reason}")
    yield probe
    toolchains.probe.cache_clear()


def run(task, program):
    out = pipeline.evaluate("cypher", task, program)
    return out["syntax"], out["semantic"]


# --- the engine ------------------------------------------------------------------------------------

def test_probe_reports_falkordb_version(falkordb):
    assert falkordb.version.startswith("FalkorDB 4.") and "falkordblite 0.11.0" in falkordb.version
    assert "Neo4j 5" in falkordb.dialect


def test_gold_passes_and_result_is_compared_by_position_not_name(falkordb):
    task = TASKS["cypher-003"]
    syn, sem = run(task, task.gold)
    assert syn["status"] == sem["status"] == "pass", (syn, sem)
    renamed = ("MATCH (:Supplier {name: 'Pacific Polymer'})-[s:SUPPLIES]->(p:Part) "
               "RETURN p.sku AS a, p.name AS b, s.unit_price AS c ORDER BY c DESC;")
    assert run(task, renamed)[1]["status"] == "pass"          # names ignored, trailing ';' dropped
    swapped = ("MATCH (:Supplier {name: 'Pacific Polymer'})-[s:SUPPLIES]->(p:Part) "
               "RETURN p.name, p.sku, s.unit_price ORDER BY s.unit_price DESC")
    syn, sem = run(task, swapped)
    assert sem["status"] == "fail" and "row 1" in sem["diagnostics"]


def test_semantic_mutant_keeps_the_gold_rows_out_of_diagnostics(falkordb):
    task = TASKS["cypher-003"]
    mutant = next(m for m in task.mutants if m.level == "semantic" and "ascending" in m.note)
    sem = run(task, mutant.program)[1]
    assert sem["status"] == "fail" and sem["reason"] == "wrong_output"
    gold_row = '["P-201", "Brushless motor", 96]'          # the gold's first row (highest unit price)
    assert sem["diagnostics"] == 'result differs (ordered): row 1: got ["P-302", "Blank PCB", 2.9]'
    assert gold_row not in sem["diagnostics"]
    assert sem["expected"] == f"result: row 1: expected {gold_row}"
    # a wrong row count: the gold's count only in `expected`
    sem = run(task, mutant.program.replace("RETURN", "WITH p, s LIMIT 1 RETURN", 1))[1]
    assert sem["diagnostics"] == "result differs (ordered): 1 row(s) returned"
    assert sem["expected"] == "result: 3 row(s)"


def test_multiset_comparison_when_gold_has_no_order_by(falkordb):
    task = TASKS["cypher-007"]          # write task: judged by its check queries
    reordered = ("MATCH (m:Movie {title: 'Salt Road'}), (p:Person {name: 'Owen Pike'}) "
                 "MERGE (p)-[:REVIEWED {stars: 4, summary: 'Dusty and grand'}]->(m) RETURN p.name")
    assert run(task, reordered)[1]["status"] == "pass"


def test_syntax_errors_unbound_variables_and_unknown_functions_fail(falkordb):
    task = TASKS["cypher-001"]
    for program, needle in [("MATCH (m:Movie) RETURN x.title", "not defined"),
                            ("MATCH (m:Movie) RETURN m.title ORDER m.title", "Invalid input"),
                            ("MATCH (m:Movie) RETURN toInt(m.released)", "Unknown function 'toInt'"),
                            ("MATCH (m:Movie) RETURN m.title; MATCH (n) RETURN n", "more than one statement")]:
        syn, sem = run(task, program)
        assert syn["status"] == "fail" and needle in syn["diagnostics"], (program, syn)
        assert sem["status"] == "fail"


def test_neo4j5_removed_forms_fail_although_falkordb_accepts_them(falkordb):
    task = TASKS["cypher-006"]
    syn, _ = run(task, "MATCH (p:Person) WHERE exists(p.country) RETURN p.name")
    assert syn["status"] == "fail" and "IS NOT NULL" in syn["diagnostics"]
    syn, _ = run(task, "MATCH (p:Person) RETURN p.name, size((p)-[:ACTED_IN]->()) AS n")
    assert syn["status"] == "fail" and "Neo4j 5" in syn["diagnostics"]
    # a string that merely looks like it does not trigger the check
    syn, _ = run(task, "MATCH (p:Person) WHERE p.name <> 'exists(p.country)' RETURN p.name")
    assert syn["status"] == "pass"


def test_valid_neo4j5_constructs_falkordb_lacks_are_unavailable_not_failed(falkordb):
    task = TASKS["cypher-023"]
    for program, construct in [
            ("MATCH (c:Critic) RETURN c.name, COUNT { (c)<-[:FOLLOWS]-() } AS followers", "COUNT/EXISTS"),
            ("MATCH (p:Person) WHERE p.name =~ 'M.*' RETURN p.name", "=~"),
            ("MATCH (m:Movie) RETURN round(m.budget_musd, 1)", "round()"),
            ("MATCH (p:Person:Director|Critic) RETURN p.name", "label expressions"),
            ("MATCH (s:Studio) CALL (s) { MATCH (m)-[:PRODUCED_BY]->(s) RETURN count(m) AS n } RETURN s.name, n",
             "scoped CALL"),
            ("MATCH (p:Person) RETURN elementId(p)", "elementId"),
            ("MATCH (p:Person) WHERE exists((p)-[:FOLLOWS]->()) RETURN p.name", "exists(pattern)")]:
        syn, sem = run(task, program)
        assert syn["status"] == "unavailable" and construct in syn["diagnostics"], (program, syn)
        assert sem["status"] == "unavailable"


def test_runtime_errors_pass_syntax_and_fail_semantics(falkordb):
    task = TASKS["cypher-001"]
    syn, sem = run(task, "MATCH (m:Movie) RETURN m.title AS title, m.released / 0 AS released")
    assert syn["status"] == "pass"
    assert sem["status"] == "fail" and "Division by zero" in sem["diagnostics"]


def test_each_evaluation_gets_a_fresh_graph(falkordb):
    read_task = TASKS["cypher-005"]
    syn, sem = run(read_task, "MATCH (n) DETACH DELETE n")     # wipes its own copy only
    assert syn["status"] == "pass" and sem["status"] == "fail" and "0 row(s)" in sem["diagnostics"]
    assert run(read_task, read_task.gold)[1]["status"] == "pass"
    write_task = TASKS["cypher-016"]                # MERGE +500: a second run would see 1000 if shared
    assert run(write_task, write_task.gold)[1]["status"] == "pass"
    assert run(write_task, write_task.gold)[1]["status"] == "pass"


def test_write_task_catches_duplicates_through_check_queries(falkordb):
    task = TASKS["cypher-016"]
    syn, sem = run(task, task.mutants[1].program)           # CREATE instead of MERGE
    assert syn["status"] == "pass" and sem["status"] == "fail"
    assert "check query" in sem["diagnostics"]


def test_runaway_query_times_out_as_a_failure(falkordb):
    quick = type(TC)(TC.folder, {**TC.card, "limits": {"timeout_s": 4, "memory_mb": 4096}})
    task = TASKS["cypher-001"]
    work = V._workdir()
    try:
        program = "WITH range(1, 100000) AS r UNWIND r AS a UNWIND r AS b RETURN count(*) AS title, 1 AS released"
        (work / quick.file_name).write_text(program)
        assert quick.syntax(program, task, work).status == "pass"
        sem = quick.semantic(program, task, work)
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    assert sem.status == "fail" and "timed out" in sem.diagnostics
    # a query whose planning exhausts memory kills the engine: a resource failure of the program
    syn = run(task, "UNWIND range(1, 2000000000) AS x RETURN x AS title, x AS released")[0]
    assert syn["status"] == "fail" and "out of memory" in syn["diagnostics"]


def test_repeated_relationship_type_adds_a_note(falkordb):
    task = TASKS["cypher-014"]
    program = ("MATCH (:Person {name: 'June Okafor'})-[:ACTED_IN]->(m:Movie)<-[:ACTED_IN]-(a:Person) "
               "RETURN a.name AS name, count(DISTINCT m) AS films ORDER BY films DESC, name")
    sem = run(task, program)[1]
    assert sem["status"] == "fail" and "ACTED_IN twice" in sem["diagnostics"]


# --- comparison rules (pure functions) ---------------------------------------------------------------

def test_order_by_detection_uses_the_last_top_level_return():
    assert Q.ends_with_order_by("MATCH (n) RETURN n.x ORDER BY n.x")
    assert Q.ends_with_order_by("MATCH (n) RETURN n.x ORDER BY n.x SKIP 1 LIMIT 2")
    assert not Q.ends_with_order_by("MATCH (n) WITH n ORDER BY n.x RETURN collect(n.x)")
    assert not Q.ends_with_order_by("CALL { MATCH (n) RETURN n ORDER BY n.x LIMIT 1 } RETURN n.x")
    assert not Q.ends_with_order_by("MATCH (n) RETURN n.x AS `order by`")
    assert not Q.ends_with_order_by("MATCH (n) WHERE n.s = 'RETURN ORDER BY' RETURN n.x")


def test_canonical_values_and_tolerance():
    rs = lambda rows, cols=1: {"columns": [f"c{i}" for i in range(cols)], "rows": rows}
    assert R.compare_results(rs([[2.0]]), rs([[2]]), ordered=True) is None
    assert R.compare_results(rs([[0.1 + 0.2]]), rs([[0.3]]), ordered=True) is None
    assert R.compare_results(rs([[1.0000001]]), rs([[1.0]]), ordered=True) is not None
    assert R.compare_results(rs([[True]]), rs([[1]]), ordered=True) is not None
    assert R.compare_results(rs([["a"], ["b"]]), rs([["b"], ["a"]]), ordered=False) is None
    # (what is wrong, what was expected): the expected rows only in the second part
    assert R.compare_results(rs([["a"], ["b"]]), rs([["b"], ["a"]]), ordered=True) == (
        'row 1: got ["a"]', 'row 1: expected ["b"]')
    assert R.compare_results(rs([["a"]]), rs([["a"], ["a"]]), ordered=False) == (     # multiplicity
        "1 row(s) returned; an expected row is missing", '2 row(s); missing row ["a"]')
    assert R.compare_results(rs([["a"], ["c"]]), rs([["a"], ["b"]]), ordered=False) == (
        'an expected row is missing; unexpected row ["c"]', 'missing row ["b"]')
    assert R.compare_results(rs([[[1, 2]]]), rs([[[2, 1]]]), ordered=False, list_order="ignore") is None
    assert R.compare_results(rs([[[1, 2]]]), rs([[[2, 1]]]), ordered=False) is not None
    assert R.compare_results(rs([[1, 2]], 2), rs([[1]]), ordered=False) == ("2 column(s) returned", "1 column(s)")
    assert R.compare_results(rs([["x", 1]], 2), rs([[1, "x"]], 2), ordered=False, columns="any") is None
    node = {"~node": {"labels": ["B", "A"], "properties": {"y": 1, "x": 2.0}}}
    same = {"~node": {"labels": ["B", "A"], "properties": {"x": 2, "y": 1}}}
    assert R.compare_results(rs([[node]]), rs([[same]]), ordered=True) is None


def test_falkordb_gap_detection_is_specific():
    assert Q.falkordb_gap("RETURN upper('a')", "Unknown function 'upper'") is None          # not Neo4j 5
    assert Q.falkordb_gap("RETURN valueType(1)", "Unknown function 'valueType'")
    assert Q.falkordb_gap("RETURN 1", "FalkorDB does not currently support filter") is None
    q = "MATCH (a:Person) WHERE NOT EXISTS (a)<-[:FOLLOWS]-() RETURN a"
    msg = "errMsg: Invalid input ':': expected an identifier line: 1, column: 42, offset: 41 errCtx: x"
    assert Q.falkordb_gap(q, msg) is None
    q = "MATCH (m:Movie) WHERE NOT exists((m)<-[:REVIEWED]-(:Person)) RETURN m"
    assert "exists(pattern)" in Q.falkordb_gap(q, "Unable to resolve filtered alias '(m)<-[:REVIEWED]-(:Person)'")
    q = "MATCH (m:Movie) WHERE NOT (m)<-[:REVIEWED]-(p:Person) RETURN m"    # p is new: Neo4j rejects it too
    assert Q.falkordb_gap(q, "Unable to resolve filtered alias '(m)<-[:REVIEWED]-(p:Person)'") is None
    assert Q.falkordb_gap(q, "Unable to resolve filtered alias 'm'") is None
    # a variable-length relationship variable is a list in Neo4j 5, a path in FalkorDB
    msg = "Type mismatch: expected List, String, or Null but was Path"
    assert "variable-length" in Q.falkordb_gap("MATCH (a)-[rs:R*]->(b) RETURN size(rs)", msg)
    assert Q.falkordb_gap("MATCH p = (a)-[:R*]->(b) RETURN size(p)", msg) is None          # a real path misuse


# --- configuration and availability ----------------------------------------------------------------

def test_neo4j_configuration_is_parsed_and_checked():
    assert V.neo4j_config({}) is None
    cfg = V.neo4j_config({"DSLBENCH_NEO4J_URI": "bolt://db.example:7687", "DSLBENCH_NEO4J_PASSWORD": "s3cret"})
    assert cfg == {"uri": "bolt://db.example:7687", "user": "neo4j", "password": "s3cret", "database": None}
    cfg = V.neo4j_config({"DSLBENCH_NEO4J_URI": "neo4j+s://x.databases.neo4j.io", "DSLBENCH_NEO4J_USER": "bench",
                          "DSLBENCH_NEO4J_PASSWORD": "", "DSLBENCH_NEO4J_DATABASE": "films"})
    assert cfg["user"] == "bench" and cfg["database"] == "films"
    with pytest.raises(ValueError, match="PASSWORD"):
        V.neo4j_config({"DSLBENCH_NEO4J_URI": "bolt://localhost:7687"})
    with pytest.raises(ValueError, match="bolt://"):
        V.neo4j_config({"DSLBENCH_NEO4J_URI": "http://localhost:7474", "DSLBENCH_NEO4J_PASSWORD": "x"})


def test_neo4j_driver_values_are_normalized_like_falkordb_results():
    import neo4j.graph
    import neo4j.time
    graph = neo4j.graph.Graph()
    node = neo4j.graph.Node(graph, "4:x:1", 1, ["Movie", "Film"], {"title": "T", "runtime": 90.0})
    rel = graph.relationship_type("SEQUEL_OF")(graph, "5:x:2", 2, {})
    got = V._neo4j_value([node, rel, neo4j.time.Date(2024, 1, 15), {"k": [1, None]}])
    assert got == [{"~node": {"labels": ["Film", "Movie"], "properties": {"title": "T", "runtime": 90.0}}},
                   {"~relationship": {"type": "SEQUEL_OF", "properties": {}}}, {"~temporal": "2024-01-15"},
                   {"k": [1, None]}]
    falkor = {"~node": {"labels": ["Film", "Movie"], "properties": {"runtime": 90, "title": "T"}}}
    rs = lambda v: {"columns": ["n"], "rows": [[v]]}
    assert R.compare_results(rs(got[0]), rs(falkor), ordered=True) is None


def test_unreachable_neo4j_server_makes_cypher_unavailable(monkeypatch):
    monkeypatch.setenv("DSLBENCH_NEO4J_URI", "bolt://127.0.0.1:9")
    monkeypatch.setenv("DSLBENCH_NEO4J_PASSWORD", "do-not-print-me")
    toolchains.probe.cache_clear()
    try:
        probe = toolchains.probe("cypher")
        assert not probe.available and "bolt://127.0.0.1:9" in probe.reason
        assert "do-not-print-me" not in probe.reason
        task = TASKS["cypher-001"]
        syn, sem = run(task, task.gold)
        assert syn["status"] == sem["status"] == "unavailable"
        monkeypatch.setenv("DSLBENCH_NEO4J_URI", "localhost")            # malformed: said so
        toolchains.probe.cache_clear()
        assert "bad Neo4j configuration" in toolchains.probe("cypher").reason
    finally:
        toolchains.probe.cache_clear()


def test_missing_falkordb_build_gives_unavailable_with_reason(monkeypatch):
    for key in V.NEO4J_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(V, "falkordb_binaries", lambda: None)
    probe = TC.probe()
    assert not probe.available and "install.sh" in probe.reason and "3.12" in probe.reason


# --- task files ------------------------------------------------------------------------------------

def test_malformed_oracle_is_rejected_with_field_and_line(tmp_path):
    data = yaml.safe_load(Path(TASKS["cypher-001"].path).read_text())
    folder = tmp_path / "cypher"
    folder.mkdir()
    for field, value, needle in [("graph", "moviez", "not a bundled graph"),
                                 ("ordered", "yes", "true or false"),
                                 ("columns", "names", "position"),
                                 ("limit", 3, "unknown key")]:
        bad = dict(data, oracle={**data["oracle"], field: value})
        path = folder / "cypher-001.yaml"
        path.write_text(yaml.safe_dump(bad, sort_keys=False))
        with pytest.raises(TaskError) as e:
            load_task_file(path, TC.check_oracle)
        assert e.value.field.startswith("oracle") and needle in e.value.message and e.value.line, e.value


def test_prompt_shows_schema_and_rules():
    messages = build_messages(TASKS["cypher-018"], TC)
    text = messages[1]["content"]
    assert "COMPONENT_OF {qty: INTEGER}" in text and "Neo4j 5" in text and "```cypher" in text


def test_task_schemas_match_the_bundled_graph_schemas():
    for task in TASKS.values():
        schema = (V.GRAPHS / f"{task.oracle['graph']}.schema.txt").read_text()
        assert task.context == {"schema.txt": schema}, task.id


# --- CypherBench loader ----------------------------------------------------------------------------

def test_cypherbench_import_maps_fields(tmp_path):
    made = TC.import_upstream(FIXTURES / "cypherbench")
    assert made.skipped == []
    tasks = made.tasks
    assert [t["id"] for t in tasks] == ["cypher-cb-toyflix-0001", "cypher-cb-toyflix-0002",
                                        "cypher-cb-toyflix-0003", "cypher-cb-toyflix-0004"]
    first = tasks[0]
    assert first["instruction"].startswith("Which bands has Odile Varga been a member of?")
    assert first["gold"].startswith("MATCH (n:Band)<-[r0:memberOf]-(m0:Musician {name: 'Odile Varga'})")
    assert first["oracle"] == {"graph": "toyflix", "external": True, "columns": "any", "list_order": "ignore",
                               "expected": [["The Paper Kites of Ghent"], ["Lowland Echo"]],
                               "expected_columns": ["n.name"]}
    assert first["provenance"] == {"source": "upstream", "benchmark": "CypherBench", "upstream_id": "toyflix-0001",
                                   "licence": "Apache-2.0 (CypherBench)"}
    assert "(:Musician)-[:memberOf {start_year: int}]->(:Band)" in first["context"]["schema.txt"]
    assert first["constructs"] == ["basic_(n)<-(m0)", "n_name"] and first["difficulty"] == "easy"
    assert tasks[1]["difficulty"] == "hard"
    last = tasks[3]                       # no answer_json, no schema file for its graph
    assert "expected" not in last["oracle"] and last["context"] == {}
    assert "schema was not supplied" in last["instruction"]
    written = upstream.write_tasks("cypher", tasks, tmp_path)          # strict load of every file
    assert len(written) == 4 and all(p.parent.name == "cypher" for p in written)


def test_cypherbench_malformed_record_is_skipped_naming_the_record(tmp_path):
    made = TC.import_upstream(FIXTURES / "cypherbench" / "malformed.json")
    assert [t["id"] for t in made.tasks] == ["cypher-cb-good-1"]
    assert [(s.record, s.reason) for s in made.skipped] == [("1", "malformed_record")]
    assert "record 1 (qid 'broken-2'): field 'gold_cypher'" in made.skipped[0].detail
    record = {"qid": "q", "graph": "g", "gold_cypher": "RETURN 1", "nl_question": "?",
              "from_template": {"match_category": "a", "return_pattern_id": "b"}}
    bad = tmp_path / "test.json"
    bad.write_text(json.dumps([{**record, "answer_json": "not json"}, record, record]))
    made = TC.import_upstream(bad)
    assert [t["id"] for t in made.tasks] == ["cypher-cb-q"]
    assert [(s.record, s.reason) for s in made.skipped] == [("0", "malformed_record"), ("2", "duplicate_id")]
    assert "record 0 (qid 'q'): field 'answer_json' is not JSON" in made.skipped[0].detail
    bad.write_text('{"qid": "q"}')
    with pytest.raises(ValueError, match="expected a JSON list of records"):   # not CypherBench's layout at all
        TC.import_upstream(bad)


def test_imported_tasks_judge_against_expected_answers_on_a_supplied_graph(falkordb, monkeypatch, tmp_path):
    upstream.write_tasks("cypher", TC.import_upstream(FIXTURES / "cypherbench").tasks, tmp_path)
    tasks = {p.stem: load_task_file(p, TC.check_oracle) for p in (tmp_path / "cypher").glob("*.yaml")}
    members = tasks["cypher-cb-toyflix-0003"]
    # graph not supplied: syntax judged against an empty graph, semantics not judged
    monkeypatch.delenv("DSLBENCH_CYPHER_GRAPHS", raising=False)
    syn, sem = run(members, members.gold)
    assert syn["status"] == "pass" and "empty graph" in syn["diagnostics"]
    assert sem["status"] == "unavailable" and "DSLBENCH_CYPHER_GRAPHS" in sem["diagnostics"]
    monkeypatch.setenv("DSLBENCH_CYPHER_GRAPHS", str(FIXTURES / "graphs"))
    assert run(members, members.gold)[1]["status"] == "pass"
    # CypherBench-style matching: any column order, instrument lists unordered
    swapped = ("MATCH (b:Band {name: 'Lowland Echo'})<-[:memberOf]-(m:Musician) "
               "RETURN reverse(m.instruments), m.name")
    assert run(members, swapped)[1]["status"] == "pass"
    wrong = "MATCH (m:Musician)-[:memberOf]->(:Band {name: 'The Paper Kites of Ghent'}) RETURN m.name, m.instruments"
    assert run(members, wrong)[1]["status"] == "fail"
    top2 = tasks["cypher-cb-toyflix-0002"]                  # ordered: the gold has ORDER BY
    assert run(top2, top2.gold)[1]["status"] == "pass"
    assert run(top2, "MATCH (n:Band)<-[:memberOf]-(m) RETURN n.name, count(m) AS c ORDER BY c LIMIT 2")[1][
        "status"] == "fail"
