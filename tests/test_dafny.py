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


def _import(tc, source=FIXTURES / "mbpp_dfy"):
    return tc.import_upstream(source, verify_gold=False)


def test_upstream_import_reads_the_published_layout(tc, tmp_path):
    made = _import(tc)
    by_id = {t["id"]: t for t in made.tasks}
    assert sorted(by_id) == ["dafny-mbpp-901", "dafny-mbpp-902", "dafny-mbpp-903"]
    assert made.read == 5                    # one record per src/task_id_<id>.dfy; JSON id 950 has none
    reasons = {s.record: s.reason for s in made.skipped}
    assert reasons == {"904": "dafny4_only_construct", "905": "malformed_record"}   # 905: unbalanced braces
    assert "continue" in next(s.detail for s in made.skipped if s.record == "904")
    t = by_id["dafny-mbpp-901"]
    assert t["provenance"] == {"source": "upstream", "benchmark": "MBPP-DFY", "upstream_id": "901",
                               "licence": t["provenance"]["licence"]} and "GPL-3.0" in t["provenance"]["licence"]
    assert t["instruction"].startswith("Write a method in Dafny that returns the sum")   # from the dict-keyed JSON
    # the tested method's header and clauses, and the spec's helper whole (a Dafny 4 `function` is compiled)
    assert t["oracle"]["signatures"][0] == "method SeqTotal(s: seq<int>) returns (t: int)\n  ensures t == totalOf(s, |s|)"
    assert t["oracle"]["signatures"][1].startswith("function method totalOf(") and t["oracle"]["signatures"][1].endswith("}")
    # the `for` loop became a while loop with Dafny 4's implicit invariant and the loop's own
    assert "for k" not in t["gold"] and "while k < |s|" in t["gold"] and "invariant 0 <= k <= |s|" in t["gold"]
    assert "invariant t == totalOf(s, k)" in t["gold"] and "k := k + 1;" in t["gold"]
    # the harness is the test file without the members it re-declares from the solution
    test = t["oracle"]["test"]
    assert test.startswith("method SeqTotalTest()") and "totalOf" not in test and "method Main" in test
    assert "run_main" not in t["oracle"]
    t2 = by_id["dafny-mbpp-902"]
    assert t2["oracle"]["run_main"] is True and "expect" not in t2["oracle"]["test"]
    assert 'if !(a == 6) { print "DSLBENCH_EXPECT_FAILED check 1\\n"; return; }' in t2["oracle"]["test"]
    t3 = by_id["dafny-mbpp-903"]
    assert t3["oracle"]["spec_only"] is True           # the test only prints, for a human to compare
    assert t3["oracle"]["signatures"][1].startswith("predicate method isVowel(c: char)")
    written = write_tasks("dafny", made.tasks, tmp_path)                 # strict load of every task
    assert [p.name for p in written] == ["dafny-mbpp-901.yaml", "dafny-mbpp-902.yaml", "dafny-mbpp-903.yaml"]


def test_upstream_import_of_the_folder_alone_and_wrong_folders(tc, tmp_path):
    assert len(_import(tc, FIXTURES / "mbpp_dfy" / "MBPP-DFY-153").tasks) == 3   # the JSON is its sibling
    from dslbench.upstream import NotThisBenchmark
    with pytest.raises(NotThisBenchmark, match="descriptions"):
        _import(tc, FIXTURES / "mbpp_dfy_bad")                # the folder copied without MBPP-san-DFY-228
    with pytest.raises(NotThisBenchmark, match="not MBPP-DFY"):
        _import(tc, tmp_path)


def test_imported_gold_passes_and_runtime_checks_fail_a_weak_candidate(tc, available, tmp_path):
    tasks = {t["id"]: t for t in _import(tc).tasks}
    for path in write_tasks("dafny", list(tasks.values()), tmp_path):
        task = load_task_file(path, tc.check_oracle)
        out = pipeline.evaluate("dafny", task, task.gold)
        assert out["syntax"]["status"] == out["semantic"]["status"] == "pass", (task.id, out["semantic"])
        if task.id == "dafny-mbpp-902":
            # y := x meets the weak specification (y >= x) but not the test's expect a == 6
            weak = pipeline.evaluate("dafny", task, task.gold.replace("y := 3 * x;", "y := x;"))
            assert weak["syntax"]["status"] == "pass"
            assert weak["semantic"]["status"] == "fail" and "run-time check 1" in weak["semantic"]["diagnostics"]
            assert "a == 6" in weak["semantic"]["expected"] and "a == 6" not in weak["semantic"]["diagnostics"]
            # a harness that does not resolve is not a syntax failure of the candidate
            broken = load_task_file(path, tc.check_oracle)
            broken.oracle["test"] = broken.oracle["test"].replace("Triple(0)", "Triple(0, 1)")
            bad = pipeline.evaluate("dafny", broken, broken.gold)
            assert bad["syntax"]["status"] == "pass", bad["syntax"]
            assert bad["semantic"]["status"] == "fail" and bad["semantic"]["diagnostics"].startswith("test method:")


def test_gold_check_skips_timeouts_and_keeps_killed_mutants(tc, available):
    from dslbench.upstream import Imported, Skip
    import importlib
    module = importlib.import_module("dslbench.plugins.dafny.mbpp_dfy")
    v = importlib.import_module(type(tc).__module__)
    task = next(t for t in _import(tc).tasks if t["id"] == "dafny-mbpp-902")
    made = Imported([task], [])
    # a gold that does not finish within the wall-clock limit is skipped, the run killed
    out = tc._verify_golds(made, Skip, wall_s=0.05)
    assert out.tasks == [] and [(s.record, s.reason) for s in out.skipped] == [("902", "gold_timeout")]
    tried = module.mutant_candidates(task["gold"], task, v._STRIP)
    assert [m["note"].split(" (")[0] for m in tried] == ["operator flip * -> +", "constant change 3 -> 4",
                                                          "dropped statement"]
    tc.mutant_tally = [0, 0]
    out = tc._verify_golds(made, Skip, mutants=lambda t: module.mutant_candidates(t["gold"], t, v._STRIP))
    assert out.skipped == [] and len(out.tasks) == 1
    # 3 * x -> 3 + x: Triple(0) == 3 fails check 2; 4 * x fails check 1; no assignment: y >= x unproved
    assert len(out.tasks[0]["mutants"]) == 3 and tc.mutant_tally == [3, 3]
