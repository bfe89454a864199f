"""Bad input gets a one-line error naming the file, line and field (or the option), raised before
anything is written or started. Every test breaks a copy (project_copy), never the real data files."""
import re
import shutil
from pathlib import Path

import pytest

from dslbench.analysis import factors, meta, published
from dslbench.errors import UserError
from dslbench.executors import check_executor, make_executor
from dslbench.tasks import load_task_file, load_tasks

ROOT = Path(__file__).resolve().parents[1]


def task_copy(tmp_path: Path, task: str) -> Path:
    """A copy of one real task file (data/tasks/<dsl>/<id>.yaml) under tmp_path, for the YAML-only checks."""
    dst = tmp_path / task
    dst.parent.mkdir(parents=True)
    shutil.copy(ROOT / "data" / "tasks" / task, dst)
    return dst


def line_of(path: Path, pattern: str) -> int:
    """1-based number of the first line matching pattern (so the tests follow the file, not a count)."""
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if re.search(pattern, line):
            return i
    raise AssertionError(f"{pattern!r} not in {path}")


def replace_line(path: Path, number: int, new: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = new
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def assert_names(err: UserError, path: Path, line: int, field: str) -> None:
    msg = str(err)
    assert "\n" not in msg
    assert f"{path}:{line}: field '{field}'" in msg, msg


# --- task files -------------------------------------------------------------------------------

def test_non_utf8_task_file_names_file_and_line(project_copy):
    path = project_copy / "data" / "tasks" / "jq" / "jq-001.yaml"
    line = line_of(path, r"^title:")
    raw = path.read_bytes().split(b"\n")
    raw[line - 1] = b"title: caf\xe9 users"  # Latin-1, not UTF-8
    path.write_bytes(b"\n".join(raw))
    with pytest.raises(UserError) as err:
        load_tasks(["jq"])
    assert_names(err.value, path, line, "<file>")
    assert "UTF-8" in str(err.value)


def test_duplicate_yaml_key_is_refused(project_copy):
    path = project_copy / "data" / "tasks" / "jq" / "jq-001.yaml"
    first = line_of(path, r"^title:")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\nsplit:", "\ntitle: A second title\nsplit:", 1), encoding="utf-8")
    second = line_of(path, r"^title: A second title")
    with pytest.raises(UserError) as err:
        load_tasks(["jq"])
    assert_names(err.value, path, second, "title")
    assert f"first given on line {first}" in str(err.value)


def test_duplicate_nested_key_is_refused(project_copy):
    path = project_copy / "data" / "tasks" / "jq" / "jq-001.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("  licence: CC-BY-4.0\n", "  licence: CC-BY-4.0\n  licence: MIT\n", 1),
                    encoding="utf-8")
    line = line_of(path, r"^  licence: MIT")
    with pytest.raises(UserError) as err:
        load_tasks(["jq"])
    assert_names(err.value, path, line, "provenance.licence")


# Real task files, one line broken each way; the error must name the broken line, not the line
# where yaml happened to notice (often several lines further on).
BREAKS = {
    "unclosed double quote": (r"^title: ", lambda l: l.replace(": ", ': "', 1)),
    "unclosed single quote": (r"^domain: ", lambda l: l.replace(": ", ": '", 1)),
    "unclosed bracket": (r"^difficulty: ", lambda l: l.replace(": ", ": [", 1)),
    "key without colon": (r"^difficulty: ", lambda l: l.replace(": ", " ", 1)),
    "over-indented key": (r"^domain: ", lambda l: "  " + l),
    "tab indentation": (r"^  licence: ", lambda l: "\t" + l.lstrip()),
    "colon in a plain value": (r"^title: ", lambda l: l + ": more"),
}


@pytest.mark.parametrize("task", ["jq/jq-001.yaml", "lean/lean-003.yaml", "terraform/terraform-002.yaml",
                                  "latex/latex-001.yaml"])
@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_bad_yaml_reports_the_line_of_the_fault(tmp_path, task, kind):
    path = task_copy(tmp_path, task)
    pattern, brk = BREAKS[kind]
    line = line_of(path, pattern)
    replace_line(path, line, brk(path.read_text(encoding="utf-8").splitlines()[line - 1]))
    with pytest.raises(UserError) as err:
        load_task_file(path)
    assert_names(err.value, path, line, "<yaml>")


def test_unclosed_quote_at_end_of_file_reports_its_line(tmp_path):
    path = task_copy(tmp_path, "jq/jq-001.yaml")
    text = path.read_text(encoding="utf-8").replace('"', "").replace("'", "")  # no later quote closes it
    path.write_text(text, encoding="utf-8")
    line = line_of(path, r"^title: ")
    replace_line(path, line, 'title: "Names of active users')
    with pytest.raises(UserError) as err:
        load_task_file(path)
    assert_names(err.value, path, line, "<yaml>")
    assert "noticed on line" in str(err.value)


@pytest.mark.parametrize("limit", [0, -1])
def test_limit_below_one_is_refused_first(tmp_path, limit):
    # checked before any task folder is read: the missing root must not be what is reported
    with pytest.raises(UserError) as err:
        load_tasks(["jq"], root=tmp_path / "nowhere", limit=limit)
    assert "option --limit" in str(err.value) and str(limit) in str(err.value)


def test_limit_keeps_the_first_n(project_copy):
    assert [len(ts) for ts in load_tasks(["jq"], limit=1).values()] == [1]


# --- executor options ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["bogus", "Process", "tcp://", "http://host:8786"])
def test_unknown_executor_is_refused_without_starting_anything(kind):
    for call in (lambda: check_executor(kind), lambda: make_executor(kind, 2)):
        with pytest.raises(UserError) as err:
            call()
        msg = str(err.value)
        assert "option --executor" in msg and repr(kind) in msg
        assert all(k in msg for k in ("process", "thread", "dask-local", "tcp://host:port"))


def test_unknown_executor_from_the_environment_is_refused(monkeypatch):
    monkeypatch.setenv("DSLBENCH_EXECUTOR", "bogus")
    with pytest.raises(UserError, match="option --executor: unknown executor 'bogus'"):
        check_executor(None)


def test_known_executors_pass_the_check():
    for kind in ("process", "thread", "dask-local", "tcp://127.0.0.1:8786", "dask://sched:8786"):
        check_executor(kind)


@pytest.mark.parametrize("workers", [0, -3])
def test_workers_below_one_is_refused(workers):
    with pytest.raises(UserError) as err:
        make_executor("thread", workers)
    assert "option --workers" in str(err.value) and str(workers) in str(err.value)


# --- data files keyed by DSL --------------------------------------------------------------------

def test_real_tables_use_dsl_folder_names():
    folders = meta.dsl_folders()
    years = factors.release_years()
    assert all(d in years for d in folders)  # every DSL gets a Release Year (IEC ST had NaN)
    assert years["iecst"]["year"] == 2013
    flags = meta.executable_oracle_table()
    assert sum(flags[d]["executable"] for d in folders if d in flags) == 11
    assert set(published.load_per_dsl()["dsl"]) <= set(folders)


def test_release_year_unknown_dsl_key(project_copy):
    path = project_copy / "data" / "factors" / "release_year.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("\n  iecst:\n", "\n  iec-st:\n"), encoding="utf-8")
    line = line_of(path, r"^  iec-st:")
    with pytest.raises(UserError) as err:
        factors.release_years()
    assert_names(err.value, path, line, "dsls.iec-st")
    assert "unknown DSL 'iec-st'" in str(err.value) and "iecst" in str(err.value).split("DSL folders:")[1]


def test_release_year_must_cover_every_dsl(project_copy):
    path = project_copy / "data" / "factors" / "release_year.yaml"
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"\n  ufl:\n(    .*\n)+", "\n", text)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as err:
        factors.release_years()
    assert_names(err.value, path, line_of(path, r"^dsls:"), "dsls")
    assert "no entry for DSL folder(s) ufl" in str(err.value)


def test_release_year_alias_must_not_be_a_dsl_folder(project_copy):
    path = project_copy / "data" / "factors" / "release_year.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("aliases: [lean4]", "aliases: [lean4, dafny]"),
                    encoding="utf-8")
    with pytest.raises(UserError) as err:
        factors.release_years()
    assert_names(err.value, path, line_of(path, r"aliases: \[lean4, dafny\]"), "dsls.lean.aliases")


def test_release_year_explicit_missing_file(project_copy):
    with pytest.raises(UserError, match="release_year_typo.yaml"):
        factors.release_years(project_copy / "release_year_typo.yaml")


def test_release_year_bad_yaml_names_line(project_copy):
    path = project_copy / "data" / "factors" / "release_year.yaml"
    line = line_of(path, r"^  jq:")
    replace_line(path, line + 1, '    version: "jq 1.8 language')
    with pytest.raises(UserError) as err:
        factors.release_years()
    assert_names(err.value, path, line + 1, "<yaml>")


def test_executable_oracle_unknown_dsl_key(project_copy):
    path = project_copy / "data" / "published" / "executable_oracle.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("\n  iecst: ", "\n  iec-st: "), encoding="utf-8")
    line = line_of(path, r"^  iec-st: ")
    with pytest.raises(UserError) as err:
        meta.executable_oracle_table()
    assert_names(err.value, path, line, "dsls.iec-st")
    assert "unknown DSL 'iec-st'" in str(err.value)


def test_per_dsl_semantic_unknown_dsl(project_copy):
    path = project_copy / "data" / "published" / "per_dsl_semantic.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("\nopenqasm,", "\nopenqasm3,"), encoding="utf-8")
    line = line_of(path, r"^openqasm3,")
    with pytest.raises(UserError) as err:
        published.load_per_dsl()
    assert_names(err.value, path, line, "dsl")
    assert "unknown DSL 'openqasm3'" in str(err.value)
