import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def dslbench_cmd(*args: str) -> list[str]:
    return [str(BIN / "dslbench"), *args]


@pytest.fixture
def project_copy(tmp_path, monkeypatch):
    """A copy of the project's data and toolchains that a test may break; DSLBENCH_ROOT points at it."""
    root = tmp_path / "project"
    for sub in ("toolchains", "data", "notebooks"):
        shutil.copytree(ROOT / sub, root / sub, ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
    (root / "lib").symlink_to(ROOT / "lib")
    monkeypatch.setenv("DSLBENCH_ROOT", str(root))
    from dslbench import toolchains
    toolchains.discover.cache_clear()
    toolchains.probe.cache_clear()
    yield root
    toolchains.discover.cache_clear()
    toolchains.probe.cache_clear()


def run_cli(*args, env=None, timeout=1800, **kw) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(dslbench_cmd(*args), capture_output=True, text=True, env=full_env, timeout=timeout, **kw)


def skip_without_toolchain(dsl: str):
    """A module-wide autouse fixture: `available = skip_without_toolchain("jq")` skips the module's
    tests when the DSL's toolchain cannot judge here (with the probe's reason)."""
    @pytest.fixture(scope="module", autouse=True)
    def available():
        from dslbench import toolchains
        probe = toolchains.probe(dsl)
        if not probe.available:
            pytest.skip(f"{dsl} toolchain unavailable here: {probe.reason}")
    return available
