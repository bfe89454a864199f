"""nvBench import (toolchains/vegalite/nvbench.py) on a fixture in the published layout
(tests/fixtures/vegalite/nvbench/nvBench_VegaLite/VIS_<n>.html: one page per record, the chart as a
Python dict literal in `var vlSpec1 = {...};`, the record's key, hardness, chart and DB in a properties
cell), hand-written with the upstream's quirks: a sort on every x (the renderer's default; only the
key's @x_name@/@y_name@ suffix means one was asked), `zero: 'false'` as a string, a series colour
without type, axis names with dots, an empty first NL query; plus records that must be skipped (x and y
with the same name, no NL query at all, a page cut off in its chart). The older NVBench.json layout
(tests/fixtures/vegalite/NVBench.json, invented records) is read when there are no pages."""
import json

import pytest

from conftest import ROOT, run_cli
from dslbench import toolchains
from dslbench.upstream import NotThisBenchmark

FIXTURE = ROOT / "tests" / "fixtures" / "vegalite" / "nvbench"
PAGES = FIXTURE / "nvBench_VegaLite"
JSON_FIXTURES = ROOT / "tests" / "fixtures" / "vegalite"
IMPORTED = ["vegalite-nvbench-12-y-name-desc", "vegalite-nvbench-30", "vegalite-nvbench-45-x-name-asc",
            "vegalite-nvbench-51", "vegalite-nvbench-60", "vegalite-nvbench-104-y-name-asc"]


def load(source):
    return toolchains.get("vegalite").import_upstream(source)


@pytest.fixture(scope="module")
def made():
    return load(FIXTURE)


def test_the_published_pages_import_in_page_order_and_bad_records_are_skipped_with_reasons(made):
    assert made.read == 9
    assert [t["id"] for t in made.tasks] == IMPORTED            # VIS_10 after VIS_8: numeric page order
    assert {s.record: s.reason for s in made.skipped} == {"VIS_6.html": "same_field_names",
                                                          "VIS_7.html": "no_nl_query",
                                                          "VIS_8.html": "malformed_record"}
    assert "vlSpec1" in next(s.detail for s in made.skipped if s.record == "VIS_8.html")


def test_task_fields_come_from_the_page(made):
    t = {t["id"]: t for t in made.tasks}
    bar = t["vegalite-nvbench-12-y-name-desc"]
    assert bar["difficulty"] == "easy" and bar["split"] == "test"
    assert bar["provenance"] == {"source": "upstream", "benchmark": "nvBench", "upstream_id": "12@y_name@DESC",
                                 "licence": "MIT", "upstream_file": "nvBench_VegaLite/VIS_1.html",
                                 "db_id": "island_ferries",
                                 "vql": "Visualize BAR SELECT harbour , COUNT(*) FROM ferry GROUP BY harbour "
                                        "ORDER BY COUNT(*) DESC"}
    assert bar["instruction"].startswith("How many ferries leave from each harbour?")
    assert json.loads(bar["context"]["data.json"])[0] == {"harbour": "Marlow", "COUNT(*)": 9}
    gold = json.loads(bar["gold"])
    assert gold["data"] == {"url": "data.json"} and gold["mark"] == "bar"
    assert gold["encoding"]["x"]["sort"] == {"field": "COUNT(*)", "op": "sum", "order": "descending"}
    assert bar["oracle"]["intent"]["encoding"]["x"] == {"field": "harbour", "type": "nominal", "sort": True}

    pie = t["vegalite-nvbench-30"]             # the first <li> is empty: the second query is the task's
    assert pie["instruction"].startswith("What share of the loans") and pie["difficulty"] == "medium"
    assert set(pie["oracle"]["intent"]["encoding"]) == {"theta", "color"}
    stacked = t["vegalite-nvbench-45-x-name-asc"]
    assert stacked["oracle"]["intent"]["encoding"]["x"] == {"field": "T1_variety", "type": "nominal", "sort": True}
    assert {r["group"] for r in json.loads(stacked["context"]["data.json"])} == {"east", "west"}
    line = t["vegalite-nvbench-51"]            # the page sorts x, but the key asks for no sort
    assert line["difficulty"] == "hard" and "sort" not in json.loads(line["gold"])["encoding"]["x"]
    assert line["oracle"]["intent"] == {"mark": "line", "encoding": {"x": {"field": "year", "type": "ordinal"},
                                                                     "y": {"field": "COUNT(year)",
                                                                           "type": "quantitative"}}}
    scatter = json.loads(t["vegalite-nvbench-60"]["gold"])  # color only; none of the page's string scale zero
    assert set(scatter["encoding"]) == {"x", "y", "color"} and "scale" not in scatter["encoding"]["x"]
    assert all("x_data" not in task["gold"] and "vlSpec" not in task["gold"] for task in made.tasks)


def test_mutants_are_semantic_edits_and_a_sort_is_reversed_only_when_that_changes_the_order(made):
    t = {t["id"]: t for t in made.tasks}
    assert all(m["level"] == "semantic" for task in made.tasks for m in task["mutants"])
    assert [m["note"] for m in t["vegalite-nvbench-12-y-name-desc"]["mutants"]] == [
        "mark bar -> line", "rows with COUNT(*) = 9 filtered out", "x and y fields swapped",
        "x order descending -> ascending"]
    assert len(t["vegalite-nvbench-30"]["mutants"]) == 3                   # nothing sorted
    assert t["vegalite-nvbench-104-y-name-asc"]["mutants"][-1]["note"] == "x order ascending -> descending"


def test_the_pages_folder_or_nvbench_json_import_and_a_wrong_folder_does_not(tmp_path):
    assert load(PAGES).read == 9
    legacy = load(JSON_FIXTURES / "NVBench.json")
    assert sorted(t["provenance"]["upstream_id"] for t in legacy.tasks) == ["41@y_name@DESC", "57", "63@x_name@ASC",
                                                                            "70", "88"]
    assert [(s.record, s.reason) for s in legacy.skipped] == [("90", "unknown_chart")]
    assert json.loads(legacy.tasks[0]["gold"])["encoding"]["x"]["sort"]["order"] == "descending"
    assert [(s.record, s.reason) for s in load(JSON_FIXTURES / "NVBench_malformed.json").skipped] == [
        ("12", "malformed_record")]
    with pytest.raises(NotThisBenchmark, match="nvBench_VegaLite"):
        load(tmp_path)
    (tmp_path / "NVBench.json").write_text("[1, 2]")
    with pytest.raises(NotThisBenchmark, match="keyed by record id"):
        load(tmp_path)


def test_cli_import_verify_passes_the_gold_and_kills_every_mutant(tmp_path):
    if not toolchains.probe("vegalite").available:
        pytest.skip("vegalite toolchain unavailable here")
    done = run_cli("import", "vegalite", str(FIXTURE), "--out", str(tmp_path), "--verify", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "read 9 record(s), imported 6, skipped 3" in done.stdout
    assert "gold through both levels: 6/6 pass" in done.stdout
    assert "semantic mutants killed by the semantic level: 21/21 (100.0 %)" in done.stdout
    report = json.loads((tmp_path / "vegalite" / "import_report.json").read_text())
    assert report["skipped_by_reason"] == {"same_field_names": 1, "no_nl_query": 1, "malformed_record": 1}
