"""Dafny validator on the real toolchain (Dafny 2.3 from Debian, or Dafny 4 when on PATH):
resolution and verification verdicts, the anti-cheating checks, strict oracle checking and the
MBPP-DFY upstream loader. Skipped with the probe's reason where Dafny is not installed."""
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains
from dslbench.tasks import TaskError, load_task_file, load_tasks
from dslbench.upstream import dump_task, write_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "dafny"


@pytest.fixture(scope="module")
def tc():
    return toolchains.get("dafny")


@pytest.fixture(scope="module")
def available():
    probe = toolchains.probe("dafny")
    if not probe.available:
        pytest.skip(f"dafny unavailable here: {probe.reason}")
    return probe


@pytest.fixture(scope="module")
def task():
    return next(t for t in load_tasks(["dafny"])["dafny"] if t.id == "dafny-001")   # Abs


def test_probe_names_toolchain_version_and_dialect(available):
    assert available.version.startswith("Dafny ")
    assert "Dafny" in available.dialect
    if available.version.startswith("Dafny 2."):
        assert available.exact and "2.3" in available.dialect
    else:
        assert not available.exact   # Dafny 4 accepts the tasks' Dafny 4 syntax mutants


def test_gold_passes_and_verdicts_are_deterministic(available, task):
    a = pipeline.evaluate("dafny", task, task.gold)
    b = pipeline.evaluate("dafny", task, task.gold)
    assert a["syntax"]["status"] == a["semantic"]["status"] == "pass"
    assert "verified" in a["semantic"]["diagnostics"]
    for level in ("syntax", "semantic"):
        assert a[level]["diagnostics"] == b[level]["diagnostics"]
    assert "/tmp/dslbench" not in a["syntax"]["log"]


def test_parse_error_names_the_first_error_line(available, task):
    bad = task.gold.replace("y := -x;", "y := -x")
    out = pipeline.evaluate("dafny", task, bad)
    assert out["syntax"]["status"] == "fail"
    assert out["syntax"]["diagnostics"].startswith("program.dfy(") and "Error" in out["syntax"]["diagnostics"]
    assert out["semantic"]["status"] == "fail"


def test_dafny4_syntax_is_rejected_by_the_2_3_dialect(available):
    if not available.exact:
        pytest.skip("Dafny 4 judges: it accepts Dafny 4 syntax")
    t = next(t for t in load_tasks(["dafny"])["dafny"] if t.id == "dafny-002")   # function method Max3
    out = pipeline.evaluate("dafny", t, t.gold.replace("function method Max3", "function Max3"))
    assert out["syntax"]["status"] == "fail"
    assert "specification contexts" in out["syntax"]["diagnostics"] or "ghost" in out["syntax"]["diagnostics"]


@pytest.mark.parametrize("cheat, reason", [
    ("{\n  assume y >= 0 && (y == x || y == -x);\n}\n", "assume"),
    ("{\n  y := x;\n}\n", None),                                    # plain verification failure
])
def test_semantic_failures_say_why(available, task, cheat, reason):
    head = task.gold[:task.gold.index("{")]
    out = pipeline.evaluate("dafny", task, head + cheat)
    assert out["syntax"]["status"] == "pass"
    assert out["semantic"]["status"] == "fail"
    if reason:
        assert reason in out["semantic"]["diagnostics"]
    else:
        assert "postcondition" in out["semantic"]["diagnostics"]


def test_bodyless_and_unverified_declarations_are_rejected(tc, available, task):
    head = task.gold[:task.gold.index("{")]
    bodyless = pipeline.evaluate("dafny", task, head)
    assert bodyless["syntax"]["status"] == "pass", bodyless["syntax"]["diagnostics"]
    assert bodyless["semantic"]["status"] == "fail"
    assert bodyless["semantic"]["diagnostics"].endswith("has no body")
    # A bodyless helper lemma with a postcondition would prove anything: /noCheating:1 rejects it.
    helper = task.gold + "\nlemma Helper(x: int)\n  ensures x > 0\n"
    out = pipeline.evaluate("dafny", task, helper)
    assert out["syntax"]["status"] == "pass", out["syntax"]["diagnostics"]
    assert out["semantic"]["status"] == "fail" and "must have a body" in out["semantic"]["diagnostics"]
    # Lexical checks, no toolchain needed.
    unverified = task.gold.replace("method Abs", "method {:verify false} Abs")
    from importlib import import_module
    v = import_module(type(tc).__module__)
    assert v.cheats(unverified) == ["attribute {:verify} is not allowed"]
    assert v.cheats("lemma {:axiom} L() ensures false") == ["attribute {:axiom} is not allowed"]
    assert "decreases *" in v.cheats("method M() decreases * { while true decreases * {} }")[0]
    assert v.cheats("// assume in a comment\nmethod M() { var s := \"assume\"; }") == []


def test_weakened_or_changed_specification_fails(tc, task):
    from importlib import import_module
    v = import_module(type(tc).__module__)
    sigs = task.oracle["signatures"]
    assert v.missing_signatures(task.gold, sigs) == []
    relaid = task.gold.replace("\n  ensures y >= 0\n", "  ensures y >= 0 // same clause, other layout\n")
    assert v.missing_signatures(relaid, sigs) == []
    weakened = task.gold.replace("  ensures y == x || y == -x\n", "")
    assert "missing or changed" in v.missing_signatures(weakened, sigs)[0]
    extra = task.gold.replace("  ensures y == x || y == -x\n", "  ensures y == x || y == -x\n  requires x > 0\n")
    assert "extra clauses" in v.missing_signatures(extra, sigs)[0]
    # the same clauses in another order are the same specification (a conjunction)
    reordered = task.gold.replace("  ensures y >= 0\n  ensures y == x || y == -x\n",
                                  "  ensures y == x || y == -x\n  ensures y >= 0\n")
    assert reordered != task.gold and v.missing_signatures(reordered, sigs) == []
    # ... but a clause that only starts like one of them is a changed clause
    extended = reordered.replace("  ensures y >= 0\n", "  ensures y >= 0 || x == 7\n")
    assert "missing or changed" in v.missing_signatures(extended, sigs)[0]
    inserted = reordered.replace("  ensures y >= 0\n", "  requires x > 0\n  ensures y >= 0\n")
    assert "missing or changed" in v.missing_signatures(inserted, sigs)[0]


def test_failing_test_method_is_reported_as_such(available):
    t = next(t for t in load_tasks(["dafny"])["dafny"] if t.id == "dafny-003")   # Sign
    wrong = t.gold.replace("if x < 0 then -1 else if x == 0 then 0 else 1", "if x < 0 then -1 else 1")
    out = pipeline.evaluate("dafny", t, wrong)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "fail"
    assert out["semantic"]["diagnostics"].startswith("test method: dslbench_test.dfy(")
    assert out["semantic"]["expected"] == "the hidden test, line 4: assert Sign(0) == 0;"


def test_hidden_test_assertion_is_kept_out_of_the_diagnostics(available):
    # The refinement loop feeds diagnostics back to the model: the hidden test's text goes to `expected`.
    t = next(t for t in load_tasks(["dafny"])["dafny"] if t.id == "dafny-002")   # Max3
    m = next(m for m in t.mutants if m.level == "semantic")
    sem = pipeline.evaluate("dafny", t, m.program)["semantic"]
    assert sem["status"] == "fail" and sem["diagnostics"].startswith("test method: dslbench_test.dfy(3,")
    assert "Max3(1, 5, 3)" not in sem["diagnostics"]
    assert sem["expected"] == "the hidden test, line 3: assert Max3(1, 5, 3) == 5;"


def _write(tmp_path, data):
    folder = tmp_path / "dafny"
    folder.mkdir(exist_ok=True)
    path = folder / f"{data['id']}.yaml"
    path.write_text(dump_task(data), encoding="utf-8")
    return path


def test_malformed_oracle_is_rejected_with_file_line_and_field(tc, task, tmp_path):
    data = task.to_dict()
    data.pop("path")
    data["mutants"] = [{k: v for k, v in m.items()} for m in data["mutants"]]
    data["oracle"] = {"signatures": ["method Abs(x: int) returns (y: int)\n  ensures y > 0"],
                      "test": task.oracle["test"]}
    with pytest.raises(TaskError) as e:
        load_task_file(_write(tmp_path, data), tc.check_oracle)
    assert e.value.field == "oracle.signatures[0]" and "gold does not contain" in e.value.message
    assert e.value.line and e.value.path.endswith("dafny-001.yaml")
    data["oracle"] = {"signatures": task.oracle["signatures"], "tests": "method T() {}"}
    with pytest.raises(TaskError) as e:
        load_task_file(_write(tmp_path, data), tc.check_oracle)
    assert e.value.field in ("oracle.tests", "oracle.test")
    data["oracle"] = {"signatures": task.oracle["signatures"], "test": "method T() { assume false; assert 1 == 2; }"}
    with pytest.raises(TaskError) as e:
        load_task_file(_write(tmp_path, data), tc.check_oracle)
    assert e.value.field == "oracle.test" and "assume" in e.value.message


def test_upstream_loader_maps_mbpp_dfy_fields(tc, tmp_path):
    tasks = tc.import_upstream(FIXTURES / "mbpp_dfy")
    by_id = {t["id"]: t for t in tasks}
    assert sorted(by_id) == ["dafny-mbpp-901", "dafny-mbpp-902"]
    assert tc.skipped == [("903", "no solution file src/task_id_<id>.dfy")]
    t = by_id["dafny-mbpp-901"]
    assert t["provenance"]["source"] == "upstream" and t["provenance"]["benchmark"] == "MBPP-DFY"
    assert t["provenance"]["upstream_id"] == "901"
    assert t["oracle"]["signatures"] == [
        "method SmallerOf(a: int, b: int) returns (m: int)\n  ensures m <= a && m <= b\n  ensures m == a || m == b"]
    assert "SmallerOf(-2, -7)" in t["oracle"]["test"]            # from test/task_id_901.dfy
    assert t["oracle"]["signatures"][0] in t["instruction"] and t["mutants"] == []
    t2 = by_id["dafny-mbpp-902"]
    assert t2["oracle"]["test"].startswith("method TestTask_902()")   # built from test_cases
    assert "assert n >= 0;" in t2["oracle"]["test"] and t2["difficulty"] == "medium"
    written = write_tasks("dafny", tasks, tmp_path)                  # strict load of every task
    assert [p.name for p in written] == ["dafny-mbpp-901.yaml", "dafny-mbpp-902.yaml"]
    assert yaml.safe_load(written[0].read_text())["oracle"]["signatures"] == t["oracle"]["signatures"]


def test_imported_task_gold_verifies(tc, available):
    t = {x["id"]: x for x in tc.import_upstream(FIXTURES / "mbpp_dfy")}["dafny-mbpp-902"]
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = write_tasks("dafny", [t], Path(d))[0]
        task = load_task_file(path, tc.check_oracle)
        out = pipeline.evaluate("dafny", task, task.gold)
    assert out["syntax"]["status"] == out["semantic"]["status"] == "pass", out["semantic"]["diagnostics"]


def test_malformed_upstream_record_names_the_record(tc):
    with pytest.raises(ValueError, match=r"tasks.json record 1 \(task_id 951\): missing field 'method_signature'"):
        tc.import_upstream(FIXTURES / "mbpp_dfy_bad")
