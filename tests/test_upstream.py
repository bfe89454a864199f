"""Importing upstream tasks: one bad record is skipped with a reason, what is written loads strictly."""
import pytest

from dslbench import cli, toolchains
from dslbench.tasks import TaskError, load_task_file
from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each, dump_task, import_upstream, \
    sample_tasks, write_tasks


def upstream_task(i, **over):
    task = {"id": f"jq-up-{i}", "dsl": "jq", "domain": "Data Engineering", "title": f"Upstream {i}",
            "difficulty": "easy", "constructs": ["identity"], "failure_modes": [],
            "instruction": "Return the input.\nUnchanged.", "gold": ".", "oracle": {"inputs": [1, [2]]},
            "provenance": {"source": "upstream", "benchmark": "example", "upstream_id": str(i), "licence": "MIT"},
            "split": "test", "mutants": []}
    task.update(over)
    return task


def test_written_tasks_load_back_with_block_strings(tmp_path):
    paths = write_tasks("jq", [upstream_task(1), upstream_task(2)], tmp_path)
    assert [p.name for p in paths] == ["jq-up-1.yaml", "jq-up-2.yaml"]
    assert "instruction: |" in paths[0].read_text()
    assert load_task_file(paths[0]).provenance["benchmark"] == "example"


def test_one_bad_record_writes_nothing(tmp_path):
    bad = upstream_task(2, difficulty="Extra Hard")
    with pytest.raises(TaskError) as err:
        write_tasks("jq", [upstream_task(1), bad], tmp_path)
    assert err.value.field == "difficulty" and "jq-up-2.yaml" in err.value.path
    assert not (tmp_path / "jq").exists() or not list((tmp_path / "jq").iterdir())


def test_dump_orders_fields_like_the_schema():
    text = dump_task(upstream_task(3))
    assert text.index("id:") < text.index("instruction:") < text.index("gold:") < text.index("provenance:")


def test_a_strict_write_without_a_skip_list_raises_but_an_import_skips_the_bad_task(tmp_path):
    skipped = []
    paths = write_tasks("jq", [upstream_task(1), upstream_task(2, difficulty="Extra Hard")], tmp_path, skipped)
    assert [p.name for p in paths] == ["jq-up-1.yaml"]
    assert [(s.record, s.reason) for s in skipped] == [("2", "invalid_task")]
    assert "difficulty" in skipped[0].detail


def test_convert_each_skips_a_malformed_record_and_a_duplicate_and_keeps_the_rest():
    def convert(rid, rec):
        if rec == "short":
            return Skip(rid, "no_solution", "record has no solution")
        return upstream_task(rec["n"])          # a record without "n" is malformed (KeyError)

    got = convert_each([("a", {"n": 1}), ("b", {}), ("c", "short"), ("d", {"n": 1}), ("e", {"n": 2})], convert)
    assert [t["id"] for t in got.tasks] == ["jq-up-1", "jq-up-2"]
    assert [(s.record, s.reason) for s in got.skipped] == [("b", "malformed_record"), ("c", "no_solution"),
                                                           ("d", "duplicate_id")]
    assert "missing field 'n'" in got.skipped[0].detail and got.read == 5


def test_sample_is_reproducible_and_stratified_by_difficulty():
    tasks = [upstream_task(i, difficulty=("easy", "medium", "hard")[i % 3]) for i in range(30)]
    a, b = sample_tasks(tasks, 9, seed=3), sample_tasks(tasks, 9, seed=3)
    assert [t["id"] for t in a] == [t["id"] for t in b]
    assert sorted(t["difficulty"] for t in a) == ["easy"] * 3 + ["hard"] * 3 + ["medium"] * 3
    assert [t["id"] for t in sample_tasks(tasks, 9, seed=4)] != [t["id"] for t in a]
    assert len(sample_tasks(tasks, 100)) == 30


@pytest.fixture
def fake_importer(monkeypatch):
    """jq's toolchain with an importer that reads one JSON list (a stand-in format for the plumbing only)."""
    import json
    tc = toolchains.get("jq")

    def importer(source):
        if source.suffix != ".json":
            raise NotThisBenchmark(f"{source}: not the example benchmark's data file")
        return convert_each(enumerate(json.loads(source.read_text())), lambda i, rec: upstream_task(rec["n"]))
    monkeypatch.setattr(tc, "import_upstream", importer, raising=False)
    return tc


def test_import_summary_counts_read_imported_and_skipped_by_reason(tmp_path, fake_importer, capsys):
    src = tmp_path / "bench.json"
    src.write_text('[{"n": 1}, {"m": 2}, {"n": 3}]')
    report = import_upstream("jq", src, tmp_path / "out")
    assert (report.read, len(report.written), report.reasons()) == (3, 2, {"malformed_record": 1})
    assert cli.main(["import", "jq", str(src), "--out", str(tmp_path / "out2"),
                     "--skipped-csv", str(tmp_path / "skipped.csv")]) == 0
    out = capsys.readouterr().out
    assert "read 3 record(s), imported 2, skipped 1" in out and "malformed_record" in out
    assert "1,malformed_record,missing field 'n'" in (tmp_path / "skipped.csv").read_text()
    # import_report.json beside the tasks (not read as a task): source, counts and skip reasons
    import json
    report = json.loads((tmp_path / "out2" / "jq" / "import_report.json").read_text())
    assert (report["read"], report["imported"], report["skipped_by_reason"]) == (3, 2, {"malformed_record": 1})
    assert report["source"] == str(src.resolve()) and report["source_revision"] is None
    assert report["benchmark"]


def test_import_of_the_wrong_source_or_of_nothing_is_a_clear_error_not_a_traceback(tmp_path, fake_importer, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    assert cli.main(["import", "jq", str(tmp_path / "notes.txt"), "--out", str(tmp_path / "o")]) == 2
    assert "not the example benchmark's data file" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text('[{"m": 1}]')
    assert cli.main(["import", "jq", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "nothing could be imported" in capsys.readouterr().err
    assert cli.main(["import", "jq", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2


def test_an_importer_crashing_on_the_whole_source_is_reported_plainly(tmp_path, monkeypatch, capsys):
    def importer(source):
        raise ValueError("no task JSON found")
    monkeypatch.setattr(toolchains.get("jq"), "import_upstream", importer, raising=False)
    assert cli.main(["import", "jq", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "cannot be read as the jq upstream benchmark: no task JSON found" in capsys.readouterr().err


def test_import_verify_runs_the_imported_gold_through_both_levels(tmp_path, fake_importer, capsys, monkeypatch):
    if not toolchains.probe("jq").available:
        pytest.skip("jq toolchain unavailable here")
    monkeypatch.setenv("DSLBENCH_TASKS", str(tmp_path / "out"))   # --verify points the self-check at the import
    src = tmp_path / "bench.json"
    src.write_text('[{"n": 1}]')
    assert cli.main(["import", "jq", str(src), "--out", str(tmp_path / "out"), "--verify"]) == 0
    out = capsys.readouterr().out
    assert "gold through both levels: 1/1 pass" in out
    # the figures are kept beside the tasks, and the book's Task sources page shows them
    from dslbench.upstream import read_report_files
    [report] = read_report_files(tmp_path / "out")
    assert report["verify"]["gold"] == {"judged": 1, "as_expected": 1, "unavailable": 0}
    from dslbench import book
    from dslbench.tasks import load_tasks
    page = book.task_sources_md(load_tasks(["jq"]), tmp_path / "out", [report])
    assert "## Imports in this task tree" in page and "| 1/1 |" in page and "(`DSLBENCH_TASKS`)" in page


def test_import_verify_counts_mutants_only_where_the_gold_passes(tmp_path, capsys, monkeypatch):
    """A gold that fails its own oracle makes its mutants fail too: they are left out of the kill rate."""
    if not toolchains.probe("jq").available:
        pytest.skip("jq toolchain unavailable here")
    mutant = [{"level": "semantic", "note": "first item only", "program": ".[0]?"}]
    stillborn = {"level": "semantic", "note": "bracket lost", "program": ".[0"}     # jq rejects it: no oracle runs
    tasks = [upstream_task(1, mutants=mutant + [stillborn]), upstream_task(2, gold='error("broken")', mutants=mutant)]
    monkeypatch.setattr(toolchains.get("jq"), "import_upstream",
                        lambda source: convert_each(enumerate(tasks), lambda i, task: task), raising=False)
    monkeypatch.setenv("DSLBENCH_TASKS", str(tmp_path / "out"))
    assert cli.main(["import", "jq", str(tmp_path), "--out", str(tmp_path / "out"), "--verify"]) == 0
    out = capsys.readouterr().out
    assert "gold through both levels: 1/2 pass" in out
    assert "semantic mutants killed by the semantic level: 1/2 (50.0 %)" in out
    assert "1 of them fail the syntax level already (stillborn: the oracle never sees them); " \
           "of the 1 that pass it, 1 are killed (100.0 %)" in out
    assert "not counted: 1 mutant(s) of the 1 task(s) whose gold did not pass" in out
    assert "stillborn:\n  jq-" in out and "bracket lost: syntax fail" in out and "survivors:" not in out


def test_one_mutant_per_kind_keeps_the_first_new_program_of_each_kind_up_to_the_limit():
    from dslbench.upstream import one_mutant_per_kind
    made = []

    def kind(*programs):                      # alternatives made lazily: record which were asked for
        for p in programs:
            made.append(p)
            yield f"note {p}", p

    kinds = [kind("gold", "a", "b"), kind("a", "c"), kind(), kind("d"), kind("e")]
    out = one_mutant_per_kind("gold", kinds, limit=3)
    assert [m["program"] for m in out] == ["a", "c", "d"]
    assert all(m["level"] == "semantic" and m["note"] == f"note {m['program']}" for m in out)
    assert made == ["gold", "a", "a", "c", "d"]   # "b" and kind "e" were never made
    spaced = one_mutant_per_kind("x\n", [[("same", "  x\n")], [("other", "y\n")]], same=lambda a, b: a.strip() == b.strip())
    assert [m["program"] for m in spaced] == ["y\n"]
