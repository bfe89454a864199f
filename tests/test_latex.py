"""LaTeX validator with the real toolchain (pdflatex in the sandbox, pypdf in the runner).

The generic self-check (every gold passes, every mutant fails its level) lives in
test_validators.py; here: diagnostics, sandbox file-access policy, an equivalent document that must
pass, strict oracle checking, and the TeXpert loader on an invented workbook.
"""
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains
from dslbench.tasks import TaskError, load_task_file, load_tasks
from dslbench.upstream import dump_task, write_tasks


@pytest.fixture(scope="module")
def tc():
    return toolchains.get("latex")


@pytest.fixture(scope="module")
def tasks():
    return {t.id: t for t in load_tasks(["latex"])["latex"]}


@pytest.fixture(scope="module")
def available():
    probe = toolchains.probe("latex")
    if not probe.available:
        pytest.skip(f"latex toolchain unavailable here: {probe.reason}")
    return probe


def test_probe_names_engine_and_kernel(available):
    assert "pdfTeX" in available.version and "TeX Live" in available.version
    assert "LaTeX2e <" in available.dialect and available.exact


def test_the_packages_the_prompt_promises_are_installed_or_the_judge_is_unavailable(available, tc, monkeypatch):
    """The prompt rules say tikz, enumitem, multirow... are there: a document using them must compile.
    A TeX installation without them (base + recommended only) cannot judge under these rules."""
    from importlib import import_module
    module = import_module(type(tc).__module__)
    assert "latex-extra" in available.dialect and all(f[:-4] in tc.card["prompt"]["rules"] for f in module.PROMISED_PACKAGES)
    monkeypatch.setattr(module, "PROMISED_PACKAGES", module.PROMISED_PACKAGES + ("no-such-collection.sty",))
    probe = tc.probe()
    assert not probe.available and probe.reason.startswith("no-such-collection.sty not found by kpsewhich")


def test_a_document_using_tikz_and_enumitem_compiles(available, tasks):
    program = tasks["latex-018"].gold.replace(r"\begin{document}", "\\usepackage{tikz,enumitem,multirow}\n\\begin{document}", 1)
    assert r"\usepackage{tikz" in program
    out = pipeline.evaluate("latex", tasks["latex-018"], program)
    assert out["syntax"]["status"] == "pass", out["syntax"]


def test_syntax_diagnostic_is_first_error_line(available, tasks):
    out = pipeline.evaluate("latex", tasks["latex-003"], tasks["latex-003"].gold.replace(r"\textbf{mandatory}", r"{\bf mandatory}"))
    assert out["syntax"]["status"] == "fail"
    assert out["syntax"]["diagnostics"].startswith("main.tex:4: Class scrartcl Error: undefined old font command")
    assert out["semantic"]["status"] == "fail"


def test_absolute_input_refused_in_sandbox(available, tasks):
    t = tasks["latex-021"]
    prog = t.gold.replace(r"\input{abstract}", r"\input{/etc/hostname}")
    out = pipeline.evaluate("latex", t, prog)
    assert out["syntax"]["status"] == "fail" and "not found" in out["syntax"]["diagnostics"]


def test_parent_directory_input_refused_even_when_the_path_exists(available, tc, tasks, tmp_path):
    # sub/../abstract.tex resolves to a real file; only openin_any=p ("no .. components") stops it,
    # so this fails for the policy, not for a missing file. The control compiles the same way.
    t = tasks["latex-021"]
    verdicts = {}
    for name, ref in (("refused", "sub/../abstract"), ("control", "abstract")):
        work = tmp_path / name
        (work / "sub").mkdir(parents=True)
        work.chmod(0o777)
        for fname, content in t.context.items():
            (work / fname).write_text(content)
        prog = t.gold.replace(r"\input{abstract}", "\\input{" + ref + "}")
        (work / tc.file_name).write_text(prog)
        verdicts[name] = tc.syntax(prog, t, work)
    assert verdicts["control"].status == "pass"
    assert verdicts["refused"].status == "fail" and "sub/../abstract.tex' not found" in verdicts["refused"].diagnostics


def test_shell_escape_is_off(available, tc, tasks, tmp_path):
    t = tasks["latex-012"]
    prog = t.gold.replace(r"\begin{document}", "\\begin{document}\n\\immediate\\write18{touch pwned}")
    work = tmp_path / "w"
    work.mkdir()
    work.chmod(0o777)
    (work / tc.file_name).write_text(prog)
    v = tc.syntax(prog, t, work)  # \write18 is not executed: the document is still valid
    assert v.status == "pass" and not (work / "pwned").exists()
    assert "-no-shell-escape" in v.command


def test_equivalent_document_passes(available, tasks):
    """Different but equivalent markup: the reference goes through a user macro."""
    t = tasks["latex-009"]
    prog = t.gold.replace(r"Figure~\ref{fig:layout}", r"\newcommand{\figref}[1]{Figure~\ref{#1}}\figref{fig:layout}")
    out = pipeline.evaluate("latex", t, prog)
    assert out["semantic"]["status"] == "pass", out["semantic"]["diagnostics"]


def test_semantic_diagnostics_say_why(available, tasks):
    t = tasks["latex-010"]
    out = pipeline.evaluate("latex", t, t.mutants[1].program)
    assert out["syntax"]["status"] == "pass"
    assert out["semantic"]["diagnostics"] == "environment align begins 1 time(s) (wrong count)"
    assert out["semantic"]["expected"] == "expected environment align 2 time(s)"
    t = tasks["latex-015"]
    out = pipeline.evaluate("latex", t, t.mutants[1].program)
    assert out["semantic"]["diagnostics"] == "2 page(s) (wrong page count)"
    assert out["semantic"]["expected"] == "expected 1 page(s)"


def test_oracle_targets_go_to_expected_not_diagnostics(available, tasks):
    # refinement feeds diagnostics back to the model: the oracle's required numbers and texts stay out
    t = tasks["latex-001"]
    mutant = next(m.program for m in t.mutants if m.level == "semantic")      # Results after Conclusion
    sem = pipeline.evaluate("latex", t, mutant)["semantic"]
    assert sem["status"] == "fail" and sem["diagnostics"] == "section 'Results' is numbered '4' (wrong number)"
    assert "'3'" not in sem["diagnostics"] and sem["expected"] == "expected section 'Results' numbered '3'"
    sem = pipeline.evaluate("latex", t, t.gold.replace("Field Station Team", "Field Team"))["semantic"]
    assert sem["status"] == "fail"
    assert sem["diagnostics"] == "required text 2 (of 4, in order) is not found in the PDF"
    assert "Field Station Team" not in sem["diagnostics"] and "Field Station Team" in sem["expected"]


def test_identical_runs_identical_verdicts(available, tasks):
    t = tasks["latex-004"]
    a = pipeline.evaluate("latex", t, t.mutants[1].program)
    b = pipeline.evaluate("latex", t, t.mutants[1].program)
    for level in ("syntax", "semantic"):
        assert a[level]["status"] == b[level]["status"]
        assert a[level]["diagnostics"] == b[level]["diagnostics"]
    assert a["semantic"]["diagnostics"].startswith("undefined: reference eq:fourrier")


def _task_file(tmp_path, oracle):
    src = Path(load_tasks(["latex"])["latex"][0].path)
    data = yaml.safe_load(src.read_text())
    data["oracle"] = oracle
    folder = tmp_path / "latex"
    folder.mkdir(exist_ok=True)
    path = folder / src.name
    path.write_text(dump_task(data))
    return path


@pytest.mark.parametrize("oracle, field", [
    ({"pages": 0}, "oracle.pages"),
    ({"sections": [{"level": "chapter", "title": "X", "number": 1}]}, "oracle.sections[0].number"),
    ({"environments": {"itemize": "two"}}, "oracle.environments.itemize"),
    ({"captions": [{"type": "figure"}]}, "oracle.captions[0]"),
    ({"page_size": "b5"}, "oracle.page_size"),
    ({"txt": ["a"]}, "oracle.txt"),
    ({"sections_exact": True}, "oracle"),
])
def test_check_oracle_rejects_malformed(tc, tmp_path, oracle, field):
    path = _task_file(tmp_path, oracle)
    with pytest.raises(TaskError) as e:
        load_task_file(path, tc.check_oracle)
    assert e.value.field == field and e.value.line and e.value.path == str(path)


# --- TeXpert loader ------------------------------------------------------------------------------

HEADER = ["ID", "Task Instructions", "Verified LaTeX Code", "Class"]
DOC_A = ("\\documentclass{article}\n\\begin{document}\n\\section{Scope}\nText.\n\\section{Terms \\& Conditions}\n"
         "\\begin{itemize}\\item one\\end{itemize}\n% \\section{Hidden}\n\\end{document}\n")
DOC_B = ("\\documentclass[12pt]{report}\n\\begin{document}\n\\chapter{Overview}\n\\begin{table}\\centering\n"
         "\\begin{tabular}{ll}a & b\\end{tabular}\n\\caption{Costs per unit}\\end{table}\n\\end{document}\n")


def _workbook(path: Path, sheets: dict):
    openpyxl = pytest.importorskip("openpyxl")
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
    wb.save(path)
    return path


def test_texpert_loader_maps_fields(tc, tmp_path):
    xlsx = _workbook(tmp_path / "TeXpert.xlsx", {
        "Simple": [HEADER, [1, "Write two sections.", DOC_A, "Formatting, Lists"],
                   [2, "Only a fragment.", "\\textbf{x}", "Formatting"]],
        "Hard": [HEADER, ["H7", "A report with a table.", DOC_B, "Tables"]]})
    made = tc.import_upstream(xlsx)
    got = made.tasks
    assert [t["id"] for t in got] == ["latex-texpert-simple-1", "latex-texpert-hard-h7"]
    a, b = got
    assert a["difficulty"] == "easy" and b["difficulty"] == "hard"
    assert a["constructs"] == ["sectioning", "itemize"] and a["instruction"] == "Write two sections.\n"
    assert a["provenance"] == {"source": "upstream", "benchmark": "TeXpert", "upstream_id": "Simple/1",
                               "licence": "see the TeXpert repository (no licence file)"}
    assert a["oracle"] == {"class": "article",
                           "sections": [{"level": "section", "title": "Scope"},
                                        {"level": "section", "title": "Terms & Conditions"}],
                           "environments": {"itemize": {"min": 1}}}
    assert b["oracle"]["class"] == "report"
    assert b["oracle"]["captions"] == [{"type": "table", "text": "Costs per unit"}]
    assert [(s.record, s.reason) for s in made.skipped] == [("Simple/2", "not_a_document")]
    written = write_tasks("latex", got, tmp_path / "out")
    assert [p.name for p in written] == ["latex-texpert-hard-h7.yaml", "latex-texpert-simple-1.yaml"]
    loaded = load_task_file(written[1], tc.check_oracle)
    assert loaded.gold == DOC_A
    assert [m.note for m in loaded.mutants] == ["the first \\section taken out", "class article -> report"]


def test_texpert_imported_gold_passes_its_derived_oracle(available, tc, tmp_path):
    xlsx = _workbook(tmp_path / "t.xlsx", {"Average": [HEADER, ["A1", "Report.", DOC_B, "Tables"]]})
    written = write_tasks("latex", tc.import_upstream(xlsx).tasks, tmp_path / "out")
    task = load_task_file(written[0], tc.check_oracle)
    out = pipeline.evaluate("latex", task, task.gold)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "pass", out


DOC_SUBFIGURES = ("\\documentclass{article}\n\\usepackage{subcaption}\n\\begin{document}\n\\begin{figure}\\centering\n"
                  "\\begin{subfigure}{0.4\\textwidth}\\fbox{a}\\caption{Left panel}\\end{subfigure}\n"
                  "\\begin{subfigure}{0.4\\textwidth}\\fbox{b}\\caption{Right panel}\\end{subfigure}\n"
                  "\\caption{Both panels}\\end{figure}\n\\end{document}\n")
DOC_TOCLESS = ("\\documentclass{article}\n\\newcommand{\\nocontentsline}[3]{}\n"
               "\\newcommand{\\tocless}[2]{\\bgroup\\let\\addcontentsline=\\nocontentsline#1{#2}\\egroup}\n"
               "\\begin{document}\n\\tableofcontents\n\\part{First Part}\n\\section{Kept}\n\\tocless\\section{Hidden}\n"
               "\\clearpage\\section{Also kept}\n\\part{Second Part}\n\\end{document}\n")
DOC_STANDALONE = "\\documentclass{standalone}\n\\begin{document}\n\\fbox{A square}\n\\end{document}\n"


def test_texpert_oracle_is_what_the_contents_and_log_show(available, tc, tmp_path):
    """Found on TeXpert's real workbook: a subfigure's caption is no figure caption, a section handed to
    a macro the document defines may stay out of the contents, parts are listed as `I\\hspace{1em}Title`,
    and standalone loads article after it: each made a correct reference fail its own oracle."""
    xlsx = _workbook(tmp_path / "t.xlsx", {"Average": [HEADER, ["S1", "Subfigures.", DOC_SUBFIGURES, "Figures"],
                                                       ["T1", "Parts.", DOC_TOCLESS, "Sectioning"],
                                                       ["C1", "Standalone.", DOC_STANDALONE, "Class"]]})
    written = write_tasks("latex", tc.import_upstream(xlsx).tasks, tmp_path / "out")
    tasks = {p.stem: load_task_file(p, tc.check_oracle) for p in written}
    sub, parts, alone = (tasks[f"latex-texpert-average-{k}"] for k in ("s1", "t1", "c1"))
    assert sub.oracle["captions"] == [{"type": "figure", "text": "Both panels"}]
    assert [s["title"] for s in parts.oracle["sections"]] == ["First Part", "Kept", "Also kept", "Second Part"]
    assert alone.oracle == {"class": "standalone"}
    for task in (sub, parts, alone):
        out = pipeline.evaluate("latex", task, task.gold)
        assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "pass", (task.id, out)
    out = pipeline.evaluate("latex", alone, DOC_STANDALONE.replace("standalone", "article"))
    assert out["semantic"]["status"] == "fail" and "class is article" in out["semantic"]["diagnostics"]


def test_texpert_malformed_record_is_named(tc, tmp_path):
    xlsx = _workbook(tmp_path / "bad.xlsx", {"Average": [HEADER, ["A1", "Fine.", DOC_A, "X"],
                                                         ["A2", "No code here.", None, "X"]]})
    made = tc.import_upstream(xlsx)
    assert [(s.record, s.reason) for s in made.skipped] == [("Average/A2", "malformed_record")]
    assert "empty 'verified latex code'" in made.skipped[0].detail
    xlsx = _workbook(tmp_path / "cols.xlsx", {"Simple": [["ID", "Task", "Code"]]})
    with pytest.raises(ValueError, match="missing column"):
        tc.import_upstream(xlsx)


FIXTURES = Path(__file__).parent / "fixtures" / "latex"


def test_texpert_fixture_workbook(tc, tmp_path):
    made = tc.import_upstream(FIXTURES / "TeXpert_mini.xlsx")
    got = {t["id"]: t for t in made.tasks}
    assert sorted(got) == ["latex-texpert-average-a-01", "latex-texpert-hard-h-01", "latex-texpert-simple-s-01"]
    assert [s.record for s in made.skipped] == ["Simple/S-02"]
    hard = got["latex-texpert-hard-h-01"]
    assert hard["difficulty"] == "hard" and hard["constructs"] == ["sectioning", "table", "tabular", "captions"]
    assert hard["oracle"]["sections"] == [{"level": "chapter", "title": "Budget"},
                                          {"level": "section", "title": "Staff costs"}]  # starred one left out
    assert hard["oracle"]["environments"] == {"table": {"min": 1}, "tabular": {"min": 1}}
    assert got["latex-texpert-average-a-01"]["constructs"] == ["sectioning", "figure", "equation", "captions"]
    assert len(write_tasks("latex", list(got.values()), tmp_path)) == 3


def test_texpert_fixture_malformed(tc):
    made = tc.import_upstream(FIXTURES / "TeXpert_malformed.xlsx")
    assert [(s.record, s.reason) for s in made.skipped] == [("Hard/H-02", "malformed_record")]
    assert "empty 'task instructions'" in made.skipped[0].detail


def test_runaway_expansion_fails_fast(available, tasks):
    t = tasks["latex-012"]
    prog = t.gold.replace(r"\begin{document}", "\\begin{document}\n\\def\\boom{x\\boom\\boom}\\boom")
    out = pipeline.evaluate("latex", t, prog)
    assert out["syntax"]["status"] == "fail" and "TeX capacity exceeded" in out["syntax"]["diagnostics"]


def test_only_a_part_entry_is_split_at_its_hspace():
    """The standard classes write a part's number as `I\\hspace{1em}`; a section title may hold such
    text itself and is kept whole."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("run_latex", Path(__file__).parents[1] / "toolchains/latex/run_latex.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    assert runner.numberline("II\\hspace {1em}Methods", "part") == ("II", "Methods")
    assert runner.numberline("A\\hspace {1em}B", "section") == ("", runner.detex("A\\hspace {1em}B"))
    assert runner.numberline("\\numberline {1.2}Results", "subsection") == ("1.2", "Results")
