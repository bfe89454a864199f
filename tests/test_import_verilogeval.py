"""VerilogEval v2 spec-to-rtl import (toolchains/verilog/verilogeval.py) on a fixture in the published
layout (tests/fixtures/verilog/verilogeval: dataset_spec-to-rtl/ with ProbNNN_<name>_prompt.txt,
_ref.sv, _test.sv, problems.txt, and the upstream's quirks: a stray ProbNNN_<name>.sv copy and
problems-temp.txt, a testbench connecting a port its reference lacks, a stimulus that outlasts the
testbench's own time limit), plus a malformed record (no `module RefModule`). The judged tests run
the upstream-testbench oracle and the bitwise output comparison of the vector oracle."""
import importlib.util
import sys

import pytest

from conftest import ROOT, run_cli
from dslbench import pipeline, toolchains
from dslbench.tasks import load_task_file
from dslbench.upstream import NotThisBenchmark, write_tasks

FIXTURE = ROOT / "tests" / "fixtures" / "verilog" / "verilogeval"
DATASET = FIXTURE / "dataset_spec-to-rtl"


def importer():
    return toolchains.get("verilog"), importlib.import_module("dslbench.plugins.verilog.verilogeval")


def judged():
    if not toolchains.probe("verilog").available:
        pytest.skip(f"verilog toolchain unavailable here: {toolchains.probe('verilog').reason}")


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The fixture imported with the gold and mutant checks (iverilog), written and loaded back."""
    judged()
    made = toolchains.get("verilog").import_upstream(FIXTURE)
    out = tmp_path_factory.mktemp("imported")
    paths = write_tasks("verilog", made.tasks, out)
    tc = toolchains.get("verilog")
    return made, {p.stem: load_task_file(p, tc.check_oracle) for p in paths}


def test_static_import_reads_the_published_layout_and_skips_with_reasons():
    tc, module = importer()
    made = module.load(FIXTURE, tc, check=False)
    assert made.read == 5                                  # the stray .sv and problems-temp.txt are no records
    assert [t["id"] for t in made.tasks] == ["verilogeval-prob001", "verilogeval-prob002", "verilogeval-prob004"]
    assert {s.record: s.reason for s in made.skipped} == {"Prob003_half_adder": "testbench_port_mismatch",
                                                          "Prob005_invert": "no_reference_module"}
    assert "['carry']" in next(s.detail for s in made.skipped if s.record == "Prob003_half_adder")
    t = made.tasks[1]
    ref, test = (DATASET / "Prob002_count3_ref.sv").read_text(), (DATASET / "Prob002_count3_test.sv").read_text()
    assert t["oracle"] == {"top": "TopModule", "testbench": test, "reference": ref}
    assert t["gold"] == ref.replace("RefModule", "TopModule")
    assert t["instruction"].startswith("I would like you to implement a module named TopModule")
    assert t["provenance"] == {"source": "upstream", "benchmark": "VerilogEval v2 spec-to-rtl",
                               "upstream_id": "Prob002_count3", "licence": "MIT"}
    assert "edge-triggered always block" in t["constructs"] and t["difficulty"] == "medium"
    assert t["mutants"] == []                              # mutants only when they were checked
    # the testbench and reference are the oracle's, never shown to the model as context
    assert "context" not in t


def test_the_repository_root_or_its_dataset_folder_both_import_and_a_wrong_folder_does_not(tmp_path):
    tc, module = importer()
    assert len(module.load(DATASET, tc, check=False).tasks) == 3
    with pytest.raises(NotThisBenchmark, match="no dataset_spec-to-rtl/"):
        module.load(FIXTURE.parent, tc, check=False)
    complete = tmp_path / "dataset_code-complete-iccad2023"
    complete.mkdir()
    (complete / "Prob001_zero_prompt.txt").write_text("module TopModule();")
    with pytest.raises(NotThisBenchmark, match="code-completion"):
        module.load(complete, tc, check=False)


def test_a_missing_file_or_an_unreadable_record_is_skipped_not_fatal(tmp_path):
    tc, module = importer()
    data = tmp_path / "dataset_spec-to-rtl"
    data.mkdir()
    for p in DATASET.glob("Prob001_*"):
        (data / p.name).write_bytes(p.read_bytes())
    (data / "Prob009_lost_prompt.txt").write_text("Implement TopModule.\n")
    (data / "Prob010_binary_prompt.txt").write_bytes(b"\xff\xfe not utf-8")
    (data / "Prob010_binary_ref.sv").write_text("module RefModule(output y); assign y = 0; endmodule\n")
    (data / "Prob010_binary_test.sv").write_text("module tb(); endmodule\n")
    made = module.load(tmp_path, tc, check=False)
    assert [t["id"] for t in made.tasks] == ["verilogeval-prob001"]
    assert {s.record: s.reason for s in made.skipped} == {"Prob009_lost": "missing_file",
                                                          "Prob010_binary": "malformed_record"}


def test_mutant_candidates_edit_the_body_only():
    _, module = importer()
    gold = (DATASET / "Prob001_both_high_ref.sv").read_text().replace("RefModule", "TopModule")
    notes = [n for n, _ in module.mutant_candidates(gold)]
    assert notes[0].startswith("operator flip & -> |") and any(n.startswith("inverted assignment") for n in notes)
    counter = (DATASET / "Prob002_count3_ref.sv").read_text().replace("RefModule", "TopModule")
    programs = dict(module.mutant_candidates(counter))
    assert all("reg [1:0] q" in p for p in programs.values())   # the port range is never a site
    assert any("q <= 2'd1;" in p for p in programs.values())    # a constant changed


def test_checked_import_skips_the_gold_the_upstream_testbench_fails(checked):
    made, _ = checked
    assert {s.record: s.reason for s in made.skipped}["Prob004_delay_line"] == "upstream_testbench_timeout"
    assert [t["id"] for t in made.tasks] == ["verilogeval-prob001", "verilogeval-prob002"]
    assert made.mutant_stats["killed"] == made.mutant_stats["tried"] > 0


def test_imported_gold_passes_both_levels_and_its_mutants_fail_semantics(checked):
    _, tasks = checked
    for task in tasks.values():
        got = pipeline.evaluate("verilog", task, task.gold)
        assert (got["syntax"]["status"], got["semantic"]["status"]) == ("pass", "pass"), got["semantic"]
        assert "0 mismatches" in got["semantic"]["diagnostics"]
        assert 2 <= len(task.mutants) <= 3
        for m in task.mutants:
            sem = pipeline.evaluate("verilog", task, m.program)["semantic"]
            assert sem["status"] == "fail" and "mismatched samples" in sem["diagnostics"], m.note


def test_the_candidate_cannot_borrow_the_reference_or_print_the_report(checked):
    _, tasks = checked
    task = tasks["verilogeval-prob001"]
    borrow = "module TopModule(input a, input b, output y);\n  assign y = good1.y;\nendmodule\n"
    # alone it does not compile (syntax fails); the semantic level refuses it too, should it ever compile
    assert pipeline.evaluate("verilog", task, borrow)["syntax"]["status"] == "fail"
    validator = sys.modules[type(toolchains.get("verilog")).__module__]
    assert "hierarchical name (good1.)" in validator.cheats_upstream(borrow, task.oracle)
    assert "($root.)" in validator.cheats_upstream(borrow.replace("good1.y", "$root.tb.good1.y"), task.oracle)
    assert validator.cheats_upstream(task.gold, task.oracle) == ""
    own_tb = "module TopModule(input a, input b, output y); assign y = a & b; endmodule\nmodule tb(); endmodule\n"
    sem = pipeline.evaluate("verilog", task, own_tb)["semantic"]
    assert sem["status"] == "fail" and "['tb']" in sem["diagnostics"]
    liar = ("module TopModule(input a, input b, output y);\n  assign y = a | b;\n"
            '  final $display("Mismatches: 0 in 45 samples");\nendmodule\n')
    sem = pipeline.evaluate("verilog", task, liar)["semantic"]
    assert sem["status"] == "fail" and "mismatched samples out of 45" in sem["diagnostics"]
    # a design that reads the run's tag from the testbench file and prints a tagged report of its own
    reader = r'''module TopModule(input a, input b, output y);
  assign y = a | b;
  integer f, n; reg [8*300:1] line; reg [8*14:1] tag;
  final begin
    f = $fopen("dslbench_test.sv", "r");
    while (!$feof(f)) begin
      n = $fgets(line, f);
      if ($sscanf(line, " $display(\"%s Mismatches", tag) == 1 && tag[8*14 -: 16] == "@@")
        $display("%0s Mismatches: 0 in 45 samples", tag);
    end
  end
endmodule
'''
    sem = pipeline.evaluate("verilog", task, reader)["semantic"]
    assert sem["status"] == "fail" and "printed more than once" in sem["diagnostics"]


def test_vector_oracle_compares_outputs_bitwise_so_an_x_bit_hides_nothing(tmp_path):
    judged()
    data = {"id": "verilog-xbit", "dsl": "verilog", "domain": "Hardware Design", "title": "x bit",
            "difficulty": "easy", "constructs": ["assign"], "failure_modes": [], "instruction": "Pair.",
            "gold": "module pair(input a, input b, output [1:0] y);\n  assign y = {a & b, 1'bx};\nendmodule\n",
            "oracle": {"top": "pair", "inputs": {"a": 1, "b": 1}, "outputs": {"y": 2},
                       "directed": [{"a": 1, "b": 0}]},
            "provenance": {"source": "authored", "licence": "CC-BY-4.0"}, "split": "test"}
    [path] = write_tasks("verilog", [data], tmp_path)
    task = load_task_file(path, toolchains.get("verilog").check_oracle)
    flipped = task.gold.replace("a & b", "a | b")           # in %h both traces read y=X
    sem = pipeline.evaluate("verilog", task, flipped)["semantic"]
    assert sem["status"] == "fail" and "y=1x" in sem["diagnostics"]
    assert pipeline.evaluate("verilog", task, task.gold)["semantic"]["status"] == "pass"


def test_cli_import_prints_the_summary_and_verify_runs_the_gold(tmp_path):
    judged()
    proc = run_cli("import", "verilog", str(FIXTURE), "--out", str(tmp_path), "--verify", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "verilog: read 5 record(s), imported 2, skipped 3" in proc.stdout
    for reason in ("testbench_port_mismatch", "upstream_testbench_timeout", "no_reference_module"):
        assert reason in proc.stdout
    assert "gold through both levels: 2/2 pass" in proc.stdout
    assert "Traceback" not in proc.stderr
