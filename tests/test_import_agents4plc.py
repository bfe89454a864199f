"""Agents4PLC import (toolchains/iecst/agents4plc.py) on a fixture in the published layout
(tests/fixtures/iecst/agents4plc_release/benchmark_v1/easy.jsonl, benchmark_v2/{medium,hard,
high-fidelity}.jsonl), hand-written with the upstream's quirks: .jsonl files holding indented JSON
objects one after another (the last without a final newline), reference code only in high-fidelity
records (`ground_truth`, one a line), a record without difficulty, properties_to_be_validated null,
a Siemens `{ S7_Optimized_Access := 'TRUE' }` block attribute; plus records that must be skipped (no reference code, a struct-typed input, no VAR_INPUT, an object
cut off at the end of a file)."""
import json

import pytest

from conftest import ROOT, run_cli
from dslbench import toolchains
from dslbench.upstream import NotThisBenchmark

FIXTURE = ROOT / "tests" / "fixtures" / "iecst" / "agents4plc_release"
HF = "benchmark_v2/high-fidelity.jsonl"


def load(source):
    return toolchains.get("iecst").import_upstream(source)


@pytest.fixture(scope="module")
def made():
    return load(FIXTURE)


def test_the_published_layout_imports_and_bad_records_are_skipped_with_reasons(made):
    assert made.read == 13
    assert [t["id"] for t in made.tasks] == ["iecst-a4plc-301-tankalarm", "iecst-a4plc-302-scaleraw",
                                             "iecst-a4plc-305-zonemax", "iecst-a4plc-306-eventlog"]
    assert {s.record: s.reason for s in made.skipped} == {
        "benchmark_v1/easy.jsonl:v1-E-1": "no_reference_code", "benchmark_v1/easy.jsonl:v1-E-2": "no_reference_code",
        "benchmark_v2/hard.jsonl:hard_1": "no_reference_code", "benchmark_v2/hard.jsonl:13": "malformed_record",
        "benchmark_v2/medium.jsonl:medium_1": "no_reference_code",
        f"{HF}:303_PalletQueue": "non_elementary_port", f"{HF}:304_Blink": "no_inputs",
        f"{HF}:307_GainScale": "output_read_as_parameter", f"{HF}:308_TraceBuffer": "array_port_too_large"}


def test_task_fields_come_from_the_record(made):
    tank, scale = made.tasks[:2]
    source = json.loads((FIXTURE / HF).read_text().splitlines()[0])
    attribute = "{ S7_Optimized_Access := 'TRUE' }\n"        # a Siemens block attribute: taken out
    assert attribute in source["ground_truth"]
    assert tank["gold"] == source["ground_truth"].replace(attribute, "") + "\n"
    assert tank["instruction"].startswith(source["instruction"])
    assert "- After a reset the alarm is off." in tank["instruction"]
    assert tank["oracle"]["name"] == "FB_TankAlarm" and tank["oracle"]["expected_from"] == "gold"
    assert tank["oracle"]["inputs"] == {"level": "INT", "limit": "INT", "reset": "BOOL"}
    assert tank["difficulty"] == "easy"
    assert tank["provenance"] == {"source": "upstream", "benchmark": "Agents4PLC", "upstream_id": "301_TankAlarm",
                                 "licence": "Apache-2.0"}
    assert scale["difficulty"] == "medium"                         # no difficulty given (null properties too)
    assert scale["oracle"]["pou"] == "FUNCTION" and scale["oracle"]["returns"] == "REAL"


def test_a_benchmark_folder_or_a_file_imports_and_a_wrong_folder_does_not(tmp_path):
    assert load(FIXTURE / "benchmark_v2").read == 11
    one = load(FIXTURE / HF)
    assert [s.record for s in one.skipped] == ["high-fidelity.jsonl:303_PalletQueue", "high-fidelity.jsonl:304_Blink",
                                               "high-fidelity.jsonl:307_GainScale", "high-fidelity.jsonl:308_TraceBuffer"]
    with pytest.raises(NotThisBenchmark, match="benchmark_v1"):
        load(tmp_path)


def test_cli_import_verify_passes_the_gold(tmp_path):
    if not toolchains.probe("iecst").available:
        pytest.skip("iecst toolchain unavailable here")
    done = run_cli("import", "iecst", str(FIXTURE), "--out", str(tmp_path), "--verify", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "read 13 record(s), imported 4, skipped 9" in done.stdout
    assert "gold through both levels: 4/4 pass" in done.stdout


def test_imported_tasks_carry_semantic_mutants_of_the_body_only(made):
    for task in made.tasks:
        gold, mutants = task["gold"], task["mutants"]
        assert 1 <= len(mutants) <= 3
        programs = [m["program"] for m in mutants]
        assert len(set(programs)) == len(programs) and gold not in programs
        head = gold[:gold.upper().rindex("END_VAR")]                  # declarations are never touched
        for m in mutants:
            assert m["level"] == "semantic" and m["note"]
            assert m["program"].startswith(head)
    again = load(FIXTURE)                                              # deterministic
    assert [t["mutants"] for t in again.tasks] == [t["mutants"] for t in made.tasks]


def test_semantic_mutants_leave_comments_and_strings_alone():
    import importlib
    package = type(toolchains.get("iecst")).__module__.rsplit(".", 1)[0]     # the toolchain's package
    semantic_mutants = importlib.import_module(package + ".agents4plc").semantic_mutants
    gold = ("FUNCTION_BLOCK FB_X\nVAR_INPUT\n a : INT := 1;\nEND_VAR\nVAR_OUTPUT\n y : BOOL;\n s : STRING;\nEND_VAR\n"
            "(* if a < 1 AND b + 2 *)\nIF a > 3 AND a < 9 THEN\n y := TRUE; // keep a = 5 + 1\n s := 'a < b + 1';\n"
            "ELSE\n y := FALSE;\nEND_IF;\nEND_FUNCTION_BLOCK\n")
    seen = set()
    for index in range(40):
        mutants = semantic_mutants(gold, index)
        assert mutants == semantic_mutants(gold, index) and len(mutants) <= 3
        for m in mutants:
            assert m["program"] != gold
            for kept in ("a : INT := 1;", "(* if a < 1 AND b + 2 *)", "// keep a = 5 + 1"):
                assert kept in m["program"]
            dropped = m["note"] == "statement dropped: s := 'a < b + 1';"    # the string goes only with its statement
            assert ("s := 'a < b + 1';" in m["program"]) != dropped
            seen.add(m["note"].split()[0])
    assert seen >= {"comparison", "AND", "constant", "IF", "statement"}


def test_the_real_validator_passes_the_gold_and_kills_every_mutant(made, tmp_path):
    if not toolchains.probe("iecst").available:
        pytest.skip("iecst toolchain unavailable here")
    from dslbench import pipeline
    from dslbench.tasks import load_task_file
    from dslbench.upstream import dump_task
    tc = toolchains.get("iecst")
    (tmp_path / "iecst").mkdir()
    for task in made.tasks:
        path = tmp_path / "iecst" / f"{task['id']}.yaml"
        path.write_text(dump_task(task), encoding="utf-8")
        loaded = load_task_file(path, tc.check_oracle)
        got = pipeline.evaluate("iecst", loaded, task["gold"])
        assert (got["syntax"]["status"], got["semantic"]["status"]) == ("pass", "pass"), task["id"]
        for m in task["mutants"]:
            got = pipeline.evaluate("iecst", loaded, m["program"])
            assert got["syntax"]["status"] == "pass", (task["id"], m["note"], got["syntax"]["diagnostics"])
            assert got["semantic"]["status"] == "fail", (task["id"], m["note"])


def test_array_ports_and_in_out_variables_are_driven_and_compared(made, tmp_path):
    """A one-dimensional array of an elementary type is a port (its values a list per scan); a VAR_IN_OUT
    is the caller's variable, kept between scans and compared like an output; an array's initial values
    (`[1, 1, 2, 2, 2(3)]`) are evaluated."""
    if not toolchains.probe("iecst").available:
        pytest.skip("iecst toolchain unavailable here")
    from dslbench import pipeline
    from dslbench.tasks import load_task_file
    from dslbench.upstream import dump_task
    zone, log = made.tasks[2:]
    assert zone["oracle"]["inputs"] == {"readings": "ARRAY[1..6] OF INT", "limit": "INT"}
    assert zone["oracle"]["outputs"] == {"over": "ARRAY[1..3] OF BOOL", "peak": "INT"}
    first = zone["oracle"]["sequences"][0]["steps"][0]["in"]["readings"]
    assert isinstance(first, list) and len(first) == 6
    assert log["oracle"]["in_outs"] == {"log": "ARRAY[1..4] OF INT"}
    assert "VAR_IN_OUT log : ARRAY[1..4] OF INT" in log["instruction"]
    (tmp_path / "iecst").mkdir()

    def judge(task, program):
        path = tmp_path / "iecst" / f"{task['id']}.yaml"
        path.write_text(dump_task(task), encoding="utf-8")
        got = pipeline.evaluate("iecst", load_task_file(path, toolchains.get("iecst").check_oracle), program)
        return got["syntax"]["status"], got["semantic"]["status"], got["semantic"]["diagnostics"]

    spelled_out = zone["gold"].replace("[1, 1, 2, 2, 2(3)]", "[1, 1, 2, 2, 3, 3]")
    assert judge(zone, spelled_out)[:2] == ("pass", "pass")
    too_many = zone["gold"].replace("[1, 1, 2, 2, 2(3)]", "[1, 1, 2, 2, 3(3)]")
    status = judge(zone, too_many)
    assert status[:2] == ("pass", "fail") and "7 initial values for 6 array elements" in status[2]
    huge = zone["gold"].replace("[1, 1, 2, 2, 2(3)]", "[1000000000(1)]")      # counted, never expanded
    status = judge(zone, huge)
    assert status[:2] == ("pass", "fail") and "1000000000 initial values for 6 array elements" in status[2]
    wrong_zone = zone["gold"].replace("[1, 1, 2, 2, 2(3)]", "[1, 2, 2, 2, 2(3)]")
    assert judge(zone, wrong_zone)[1] == "fail"
    as_local = log["gold"].replace("VAR_IN_OUT\n \tlog : ARRAY[1..4] OF INT;\nEND_VAR\nVAR\n",
                                   "VAR\n \tlog : ARRAY[1..4] OF INT;\n")
    status = judge(log, as_local)
    assert status[1] == "fail" and "VAR_IN_OUT log is missing" in status[2]
    never_cleared = log["gold"].replace("\t\tlog[i] := 0;\n", "\t\ti := i;\n")
    status = judge(log, never_cleared)
    assert status[1] == "fail" and "LOG = [" in status[2]
