"""Vega-Lite validator: real toolchain (jsonschema + v5 schema, vl-convert, node vega/vega-lite).

The generic self-check (every gold passes, every mutant fails its level) lives in
test_validators.py; here: diagnostics, equivalent specs that must pass, intent normalisation,
strict oracle checking and containment (the nvBench importer: test_import_nvbench.py).
"""
import json
import shutil
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains
from dslbench.tasks import TaskError, load_task_file, load_tasks
from dslbench.upstream import dump_task

FIXTURES = Path(__file__).parent / "fixtures" / "vegalite"


@pytest.fixture(scope="module")
def tc():
    return toolchains.get("vegalite")


@pytest.fixture(scope="module")
def tasks():
    return {t.id: t for t in load_tasks(["vegalite"])["vegalite"]}


@pytest.fixture(scope="module")
def available(tc):
    probe = toolchains.probe("vegalite")
    if not probe.available:
        pytest.skip(f"vegalite toolchain unavailable here: {probe.reason}")
    return probe


def V(module: str = "intent"):
    """A sibling module of the validator (toolchains/vegalite/<module>.py, in the validator's package)."""
    import importlib
    import sys
    package = sys.modules[type(toolchains.get("vegalite")).__module__].__package__
    return importlib.import_module(f"{package}.{module}")


def spec(**kw):
    base = {"data": {"url": "sales.csv"}, "mark": "bar",
            "encoding": {"x": {"field": "region", "type": "nominal"},
                         "y": {"aggregate": "sum", "field": "revenue", "type": "quantitative"}}}
    base.update(kw)
    return json.dumps(base)


# --- probe --------------------------------------------------------------------------------------

def test_probe_reports_versions(available):
    assert available.available
    assert "vega-lite 5." in available.version and "vl-convert-python" in available.version
    assert "vega 5." in available.version and "node" in available.version
    assert available.dialect.startswith("Vega-Lite v5")


def test_missing_npm_packages_make_it_unavailable(tc, tmp_path):
    folder = tmp_path / "vegalite"
    folder.mkdir()
    shutil.copy(tc.folder / "toolchain.yaml", folder / "toolchain.yaml")
    probe = type(tc)(folder, tc.card).probe()
    assert not probe.available
    assert "npm vega-lite" in probe.reason and "npm ci" in probe.reason


# --- syntax level -------------------------------------------------------------------------------

@pytest.mark.parametrize("program, stage, needle", [
    ('{"mark": "bar", // a comment\n "encoding": {}}', "fail", "not JSON: line 1"),
    ("[1, 2]", "fail", "a Vega-Lite spec is a JSON object"),
    ("[" * 100000 + "]" * 100000, "fail", "nested too deeply"),
    (spec(**{"$schema": "https://vega.github.io/schema/vega-lite/v6.json"}), "fail", "is not the Vega-Lite v5 schema"),
    (spec(selection={"brush": {"type": "interval"}}), "fail", "('selection' was unexpected)"),
    (spec(mark="bars"), "fail", "at mark: 'bars' is not one of"),
    (spec(transform=[{"calculate": "datum.revenue +* 2", "as": "r"}]), "fail", "vega-lite compile: Error: Unexpected token"),
    (spec(**{"$schema": "https://vega.github.io/schema/vega-lite/v5.21.0.json"}), "pass", "compiles to Vega"),
])
def test_syntax_level_diagnostics(available, tasks, program, stage, needle):
    out = pipeline.evaluate("vegalite", tasks["vegalite-001"], program)
    assert out["syntax"]["status"] == stage, out["syntax"]
    assert needle in out["syntax"]["diagnostics"]
    assert out["syntax"]["sandbox"]          # judged through the sandbox


# --- semantic level: equivalent specs pass, wrong ones say why ------------------------------------

EQUIVALENT = {
    # an aggregate transform with its own output name instead of the encoding's aggregate
    "vegalite-001": {"data": {"url": "sales.csv"},
                     "transform": [{"aggregate": [{"op": "sum", "field": "revenue", "as": "total"}],
                                    "groupby": ["region"]}],
                     "mark": {"type": "bar", "color": "teal"},
                     "encoding": {"x": {"field": "region", "type": "nominal", "title": "Region"},
                                  "y": {"field": "total", "type": "quantitative"},
                                  "tooltip": [{"field": "total", "type": "quantitative"}]}},
    # the facet operator instead of the row channel
    "vegalite-013": {"data": {"url": "weather.csv"}, "facet": {"row": {"field": "city", "type": "nominal"}},
                     "spec": {"mark": "bar", "encoding": {
                         "x": {"field": "date", "timeUnit": "yearmonth", "type": "ordinal"},
                         "y": {"aggregate": "sum", "field": "precip_mm", "type": "quantitative"}}}},
    # an explicit hconcat instead of repeat
    "vegalite-021": {"data": {"url": "laptops.json"}, "hconcat": [
        {"mark": "bar", "encoding": {"x": {"field": f, "bin": True, "type": "quantitative"},
                                     "y": {"aggregate": "count", "type": "quantitative"}}}
        for f in ("price_usd", "weight_kg", "battery_h")]},
    # toNumber() instead of a parse format; explicit sort object instead of "-x"
    "vegalite-017": {"data": {"url": "sales.csv"},
                     "transform": [{"calculate": "toNumber(datum.cost) + toNumber(datum.shipping)", "as": "total_cost"}],
                     "mark": "bar",
                     "encoding": {"x": {"field": "region", "type": "nominal"},
                                  "y": {"aggregate": "sum", "field": "total_cost", "type": "quantitative"}}},
    # circle (filled) instead of point (stroked): the colour comes from the same field
    "vegalite-002": {"title": {"text": "Price vs weight"}, "data": {"url": "laptops.json"}, "mark": "circle",
                     "encoding": {"x": {"field": "weight_kg", "type": "quantitative"},
                                  "y": {"field": "price_usd", "type": "quantitative"},
                                  "color": {"field": "brand", "type": "nominal"}}},
    "vegalite-006": {"data": {"url": "countries.json"}, "mark": "bar",
                     "encoding": {"y": {"field": "country", "type": "nominal",
                                        "sort": {"field": "population_m", "order": "descending"}},
                                  "x": {"field": "population_m", "type": "quantitative"}}},
}


@pytest.mark.parametrize("task_id", sorted(EQUIVALENT))
def test_equivalent_specs_pass(available, tasks, task_id):
    out = pipeline.evaluate("vegalite", tasks[task_id], json.dumps(EQUIVALENT[task_id]))
    assert out["syntax"]["status"] == "pass", out["syntax"]
    assert out["semantic"]["status"] == "pass", out["semantic"]["diagnostics"]


def test_inline_values_equal_to_the_file_pass(available, tasks):
    rows = [{"region": r, "revenue": v} for r, v in (("North", 4100), ("South", 2750), ("East", 1700), ("West", 1850))]
    program = spec(data={"values": rows})
    out = pipeline.evaluate("vegalite", tasks["vegalite-001"], program)
    assert out["semantic"]["status"] == "pass", out["semantic"]["diagnostics"]


def test_data_mismatch_names_the_row(available, tasks):
    program = spec(transform=[{"filter": "datum.region != 'East'"}])
    out = pipeline.evaluate("vegalite", tasks["vegalite-001"], program)
    assert out["semantic"]["status"] == "fail"
    assert out["semantic"]["diagnostics"].startswith("data: mark 1 (rect): 3 items drawn (not as many as the gold")
    assert out["semantic"]["expected"] == "data: mark 1 (rect): the gold chart draws 4 items"


def test_gold_values_go_to_expected_not_diagnostics(available, tasks):
    # refinement feeds diagnostics back to the model: the gold chart's data and the intent's targets stay out
    task = tasks["vegalite-008"]
    data_mutant, field_mutant = [m.program for m in task.mutants if m.level == "semantic"]
    sem = pipeline.evaluate("vegalite", task, data_mutant)["semantic"]
    assert sem["status"] == "fail" and sem["diagnostics"].startswith("data: mark 1 (rect): draws {")
    assert "1700" not in sem["diagnostics"] and "1700" in sem["expected"]       # the gold's stacked bar
    sem = pipeline.evaluate("vegalite", task, field_mutant)["semantic"]
    assert sem["status"] == "fail" and sem["diagnostics"] == "intent: chart: x shows field 'quarter' (wrong field)"
    assert "region" not in sem["diagnostics"] and sem["expected"] == "intent: chart: x expected field 'region'"


def test_missing_data_file_is_reported(available, tasks):
    out = pipeline.evaluate("vegalite", tasks["vegalite-001"], spec(data={"url": "sale.csv"}))
    assert out["semantic"]["status"] == "fail"
    assert "Loading failed sale.csv" in out["semantic"]["diagnostics"]


def test_vega_runtime_error_is_a_semantic_failure(available, tasks):
    program = spec(transform=[{"filter": "nosuchfn(datum.revenue) > 1"}])
    out = pipeline.evaluate("vegalite", tasks["vegalite-001"], program)
    assert out["syntax"]["status"] == "pass"
    assert out["semantic"]["status"] == "fail"
    assert "Unrecognized function: nosuchfn" in out["semantic"]["diagnostics"]


def test_runaway_dataflow_is_contained(available, tasks, tc, monkeypatch):
    monkeypatch.setitem(tc.card["limits"], "timeout_s", 6)
    program = json.dumps({"data": {"sequence": {"start": 0, "stop": 300000000, "as": "revenue"}},
                          "transform": [{"calculate": "'r' + (datum.revenue % 7)", "as": "region"}],
                          "mark": "bar",
                          "encoding": {"x": {"field": "region", "type": "nominal"},
                                       "y": {"aggregate": "sum", "field": "revenue", "type": "quantitative"}}})
    out = pipeline.evaluate("vegalite", tasks["vegalite-001"], program)
    assert out["semantic"]["status"] == "fail"
    assert "timed out" in out["semantic"]["diagnostics"] or "killed" in out["semantic"]["diagnostics"]


def test_verdicts_are_deterministic(available, tasks):
    task = tasks["vegalite-008"]
    wrong = task.mutants[1].program
    a = pipeline.evaluate("vegalite", task, wrong)
    b = pipeline.evaluate("vegalite", task, wrong)
    for level in ("syntax", "semantic"):
        assert (a[level]["status"], a[level]["diagnostics"], a[level]["command"]) == \
               (b[level]["status"], b[level]["diagnostics"], b[level]["command"])
    assert "/tmp/dslbench" not in a["semantic"]["log"]


# --- intent normalisation (pure Python on parsed JSON) --------------------------------------------

def test_views_normalise_facets_repeats_and_layers():
    v = V()
    unit_with_row = v.views({"mark": "bar", "encoding": {"row": {"field": "a"}, "x": {"field": "b"}}})
    operator = v.views({"facet": {"row": {"field": "a"}}, "spec": {"mark": "bar", "encoding": {"x": {"field": "b"}}}})
    assert unit_with_row["kind"] == operator["kind"] == "facet"
    assert set(unit_with_row["facet"]) == set(operator["facet"]) == {"row"}
    rep = v.views({"repeat": {"row": ["p", "q"]}, "spec": {"mark": "point", "encoding": {"x": {"field": {"repeat": "row"}}}}})
    assert rep["kind"] == "vconcat" and [c["encoding"]["x"]["field"] for c in rep["children"]] == ["p", "q"]
    layered = v.views({"encoding": {"x": {"field": "a"}}, "layer": [{"mark": "bar"}, {"mark": "rule", "encoding": {"x": {"field": "c"}}}]})
    assert [c["encoding"]["x"]["field"] for c in layered["children"]] == ["a", "c"]


def test_effective_follows_transforms_and_default_types():
    v = V()
    transforms = ({"aggregate": [{"op": "sum", "field": "units", "as": "total"}], "groupby": ["p"]},
                  {"calculate": "datum.total * 2", "as": "double"})
    eff = v.effective({"field": "total", "type": "quantitative"}, "y", transforms)
    assert (eff["field"], eff["aggregate"], eff["derived"]) == ("units", "sum", False)
    assert v.effective({"field": "double"}, "y", transforms)["derived"]
    assert v.effective({"field": "d", "timeUnit": "month"}, "x", ())["type"] == "temporal"
    assert v.effective({"field": "d"}, "x", ())["type"] == "nominal"         # v5 default without type
    assert v.effective({"aggregate": "count", "type": "nominal"}, "y", ())["type"] == "quantitative"
    assert v.effective({"field": "d", "timeUnit": "utcyearmonth"}, "x", ())["timeUnit"] == "yearmonth"


def test_mark_props_resolve_through_config():
    v = V()
    want = {"mark": "boxplot", "mark_props": {"extent": "min-max"}}
    plain = v.views({"mark": "boxplot"})
    assert v.check_view(want, plain, "chart") is not None
    assert v.check_view(want, plain, "chart", {"boxplot": {"extent": "min-max"}}) is None
    assert v.check_view(want, plain, "chart", {"boxplot": {"extent": 1.5}}) is not None
    # the mark's own value wins over config; composite marks ignore config.mark
    own = v.views({"mark": {"type": "boxplot", "extent": 1.5}})
    assert v.check_view(want, own, "chart", {"boxplot": {"extent": "min-max"}}) is not None
    assert v.check_view(want, plain, "chart", {"mark": {"extent": "min-max"}}) is not None
    bar = {"mark": "bar", "mark_props": {"color": "red"}}
    assert v.check_view(bar, v.views({"mark": "bar"}), "chart", {"mark": {"color": "red"}}) is None


def test_compare_marks_tolerance_and_multisets():
    v = V("data_compare")
    want = [{"marktype": "rect", "props": {"x": ["a"], "y": ["b"]}, "constants": {},
             "rows": [{"x": "A", "y": 1.0}, {"x": "B", "y": 2.5}]}]
    same = [{"marktype": "rect", "props": {"x": ["k"], "y": ["v"]}, "constants": {},
             "rows": [{"x": "B", "y": "2.5000000001"}, {"x": "A", "y": 1}]}]
    assert v.compare_marks(same, want) is None
    off = [{**same[0], "rows": [{"x": "B", "y": 2.6}, {"x": "A", "y": 1}]}]
    what, expected = v.compare_marks(off, want)
    assert "draws {x: \"B\", y: 2.6}" in what and "2.5" not in what
    assert "the gold chart draws {x: \"B\", y: 2.5} instead" in expected


# --- strict oracle checking ----------------------------------------------------------------------

def _write(tmp_path, task: dict) -> Path:
    folder = tmp_path / "vegalite"
    folder.mkdir(exist_ok=True)
    path = folder / f"{task['id']}.yaml"
    path.write_text(dump_task(task), encoding="utf-8")
    return path


@pytest.mark.parametrize("edit, field", [
    (lambda o: o["intent"]["encoding"]["x"].update(type="categorical"), "oracle.intent.encoding.x.type"),
    (lambda o: o["intent"].update(mark="pie"), "oracle.intent.mark"),
    (lambda o: o["intent"]["encoding"]["y"].update(aggregate="total"), "oracle.intent.encoding.y.aggregate"),
    (lambda o: o["intent"]["encoding"]["x"].update(sorted=True), "oracle.intent.encoding.x.sorted"),
    (lambda o: o["intent"]["encoding"].update(row={"field": "quarter"}), "oracle.intent.encoding.row"),
    (lambda o: o.pop("intent"), "oracle.intent"),
    (lambda o: o.update(compare="rows"), "oracle.compare"),
])
def test_malformed_oracle_is_rejected_with_its_field(tc, tasks, tmp_path, edit, field):
    task = yaml.safe_load(Path(tasks["vegalite-001"].path).read_text())
    edit(task["oracle"])
    path = _write(tmp_path, task)
    with pytest.raises(TaskError) as err:
        load_task_file(path, tc.check_oracle)
    assert err.value.field == field
    assert err.value.line and err.value.line > 1


def test_gold_must_load_a_context_file(tc, tasks, tmp_path):
    task = yaml.safe_load(Path(tasks["vegalite-001"].path).read_text())
    task["gold"] = task["gold"].replace("sales.csv", "missing.csv")
    with pytest.raises(TaskError, match="missing.csv"):
        load_task_file(_write(tmp_path, task), tc.check_oracle)
