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
    assert made.read == 9
    assert [t["id"] for t in made.tasks] == ["iecst-a4plc-301-tankalarm", "iecst-a4plc-302-scaleraw"]
    assert {s.record: s.reason for s in made.skipped} == {
        "benchmark_v1/easy.jsonl:v1-E-1": "no_reference_code", "benchmark_v1/easy.jsonl:v1-E-2": "no_reference_code",
        "benchmark_v2/hard.jsonl:hard_1": "no_reference_code", "benchmark_v2/hard.jsonl:13": "malformed_record",
        "benchmark_v2/medium.jsonl:medium_1": "no_reference_code",
        f"{HF}:303_PalletQueue": "non_elementary_port", f"{HF}:304_Blink": "no_inputs"}


def test_task_fields_come_from_the_record(made):
    tank, scale = made.tasks
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
    assert load(FIXTURE / "benchmark_v2").read == 7
    one = load(FIXTURE / HF)
    assert [s.record for s in one.skipped] == ["high-fidelity.jsonl:303_PalletQueue", "high-fidelity.jsonl:304_Blink"]
    with pytest.raises(NotThisBenchmark, match="benchmark_v1"):
        load(tmp_path)


def test_cli_import_verify_passes_the_gold(tmp_path):
    if not toolchains.probe("iecst").available:
        pytest.skip("iecst toolchain unavailable here")
    done = run_cli("import", "iecst", str(FIXTURE), "--out", str(tmp_path), "--verify", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "read 9 record(s), imported 2, skipped 7" in done.stdout
    assert "gold through both levels: 2/2 pass" in done.stdout
