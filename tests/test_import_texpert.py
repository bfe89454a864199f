"""TeXpert import (toolchains/latex/texpert.py) on a fixture in the published layout
(tests/fixtures/latex/texpert/data/TeXpert_Dataset.xlsx: sheets Simple, Average, Hard; columns ID,
Task Instructions, Verified LaTeX Code, Verified LaTeX Source LLM, Class), hand-written with the
upstream's quirks: the Hard sheet's CLASS column, code in a Markdown fence (sometimes with the code
on the fence line: "```latex\\documentclass"), a fragment that is no document; plus a row with no
instruction (malformed)."""
import pytest

from conftest import ROOT, run_cli
from dslbench import toolchains
from dslbench.upstream import NotThisBenchmark

FIXTURE = ROOT / "tests" / "fixtures" / "latex" / "texpert"
IMPORTED = ["latex-texpert-simple-1a2b3c4d", "latex-texpert-average-0a1b2c3d", "latex-texpert-hard-4e5f6a7b"]


def load(source):
    return toolchains.get("latex").import_upstream(source)


@pytest.fixture(scope="module")
def made():
    return load(FIXTURE)


def test_the_published_workbook_imports_and_bad_rows_are_skipped_with_reasons(made):
    assert made.read == 5
    assert [t["id"] for t in made.tasks] == IMPORTED
    assert {s.record: s.reason for s in made.skipped} == {"Simple/5E6F7A8B": "not_a_document",
                                                          "Simple/9C0D1E2F": "malformed_record"}


def test_the_fence_is_removed_and_the_oracle_comes_from_the_gold(made):
    memo, report, hard = made.tasks
    assert memo["gold"].startswith("\\documentclass{article}\n") and memo["gold"].endswith("\\end{document}\n")
    assert report["gold"].startswith("\\documentclass{report}\n")          # code on the fence's line
    assert all("```" not in t["gold"] for t in made.tasks)
    assert memo["oracle"]["sections"] == [{"level": "section", "title": "Scope"},
                                          {"level": "section", "title": "Permits"}]
    assert report["oracle"]["captions"] == [{"type": "table", "text": "Office supplies"}]
    assert hard["oracle"]["sections"] == [{"level": "section", "title": "Growth model"}]   # not the starred one
    assert [t["difficulty"] for t in made.tasks] == ["easy", "medium", "hard"]
    assert report["constructs"] == ["sectioning", "table", "tabular", "captions"]
    assert memo["provenance"]["upstream_id"] == "Simple/1A2B3C4D"


def test_mutants_keep_a_compilable_document(made):
    memo, report, _ = made.tasks
    assert [m["note"] for m in memo["mutants"]] == ["the first \\section taken out", "class article -> report"]
    assert "\\section{Scope}" not in memo["mutants"][0]["program"]
    assert [m["note"] for m in report["mutants"]] == ["the first \\chapter taken out"]   # no article with \chapter


def test_the_data_folder_or_the_workbook_imports_and_a_wrong_folder_does_not(tmp_path):
    assert load(FIXTURE / "data").read == 5
    assert load(FIXTURE / "data" / "TeXpert_Dataset.xlsx").read == 5
    with pytest.raises(NotThisBenchmark, match="TeXpert_Dataset.xlsx"):
        load(tmp_path)


def test_cli_import_verify_passes_the_gold_and_kills_the_mutants(tmp_path):
    if not toolchains.probe("latex").available:
        pytest.skip("latex toolchain unavailable here")
    done = run_cli("import", "latex", str(FIXTURE), "--out", str(tmp_path), "--verify", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "read 5 record(s), imported 3, skipped 2" in done.stdout
    assert "gold through both levels: 3/3 pass" in done.stdout
    assert "semantic mutants killed by the semantic level: 5/5 (100.0 %)" in done.stdout


def test_a_gold_this_installation_cannot_build_is_told_apart_from_a_broken_one():
    import importlib
    reason = importlib.import_module("dslbench.plugins.latex.texpert").gold_reason
    assert reason("syntax", "main.tex:3: ! LaTeX Error: File `lipsum.sty' not found.") == "package_not_installed"
    assert reason("syntax", "main.tex:9: LaTeX Error: File `example-image-a' not found.") == "package_not_installed"
    assert reason("syntax", "main.tex:9: Package pdftex.def Error: File `image1.jpg' not found") == "missing_file"
    assert reason("syntax", "fontspec.sty:45: Fatal Package fontspec Error") == "needs_xelatex"
    assert reason("syntax", "unicode-math.sty:40: Package unicode-math Error: Cannot be run with pdftex!") == "needs_xelatex"
    assert reason("syntax", "babel.sty:4357: Package babel Error: Unknown option 'french'.") == "package_not_installed"
    assert reason("syntax", "main.tex:1: Undefined control sequence.") == "gold_fails_syntax"
    assert reason("semantic", "a required section is missing") == "gold_fails_semantic"
