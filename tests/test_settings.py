"""Every environment variable the code reads is declared once (dslbench.settings) and in the README."""
import re
from pathlib import Path

from dslbench import settings

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"\bDSLBENCH_[A-Z0-9_]*[A-Z0-9]\b")
# not environment variables: a marker the Dafny tests print on a failed run-time check
NOT_SETTINGS = {"DSLBENCH_EXPECT_FAILED"}


def _code_files():
    for sub in ("lib", "toolchains", "notebooks", "benchmarks", "binder"):
        for path in (ROOT / sub).rglob("*"):
            if path.suffix in (".py", ".ipynb", ".sh", ".yml", ".yaml", ".js") and not any(
                    part in (".venv", "node_modules", "__pycache__") for part in path.parts):
                yield path
    yield from (ROOT / name for name in ("install.sh", "run.sh", "Dockerfile") if (ROOT / name).exists())


def test_every_variable_in_the_code_is_declared():
    used = {}
    for path in _code_files():
        for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace")):
            used.setdefault(name, path.relative_to(ROOT).as_posix())
    undeclared = {n: where for n, where in used.items() if n not in settings.SETTINGS and n not in NOT_SETTINGS}
    assert not undeclared, f"declare these in lib/dslbench/settings.py (and the README): {undeclared}"
    unused = set(settings.SETTINGS) - set(used)
    assert not unused, f"declared but read nowhere: {sorted(unused)}"


def test_readme_settings_table_lists_every_setting_with_its_default():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Settings", 1)[1].split("\n## ", 1)[0]
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(DSLBENCH_\w+)` \| (.*?) \|", section, re.M)}
    assert set(rows) == set(settings.SETTINGS)
    for name, shown in rows.items():
        assert shown == settings.SETTINGS[name].shown, name


def test_get_reads_the_environment_and_falls_back_to_the_default(monkeypatch):
    monkeypatch.delenv("DSLBENCH_EXECUTOR", raising=False)
    assert settings.get("DSLBENCH_EXECUTOR") == "process"
    monkeypatch.setenv("DSLBENCH_EXECUTOR", "")
    assert settings.get("DSLBENCH_EXECUTOR") == "process"          # empty counts as unset
    monkeypatch.setenv("DSLBENCH_EXECUTOR", "thread")
    assert settings.get("DSLBENCH_EXECUTOR") == "thread"
    try:
        settings.get("DSLBENCH_NOT_DECLARED")
    except KeyError:
        pass
    else:
        raise AssertionError("an undeclared setting must not be readable")
