"""The README's examples run as written: the CLI block of "Using the library and CLI" (in a scratch
folder, with its own generation cache) and the papermill line. Lines left out say why."""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# covered elsewhere, as written: the whole pipeline (test_pipeline.py), the book of the reference run
# (test_book.py) and an upstream import, which needs the user's download (test_upstream.py and the per-benchmark import tests use fixtures)
NOT_HERE = {"pipeline": "tests/test_pipeline.py", "import": "needs an upstream download",
            "book": "tests/test_book.py builds the book from the reference run and checks it"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One generation cache for both tests: the papermill line asks for the same jq replies again."""
    return tmp_path_factory.mktemp("cache")


def cli_block() -> list[list[str]]:
    section = README.split("## Using the library and CLI", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        line = line.split("  #")[0].strip()
        if line.startswith("dslbench "):
            commands.append(shlex.split(line)[1:])
    return commands


def test_the_readme_cli_block_runs_as_written(tmp_path, cache):
    commands = cli_block()
    assert [c[0] for c in commands][:4] == ["doctor", "generate", "validate", "report"]
    env = {"DSLBENCH_CACHE": str(cache), "DSLBENCH_LLAMA_THREADS": os.environ.get("DSLBENCH_LLAMA_THREADS", "2")}
    ran = []
    for args in commands:
        if args[0] in NOT_HERE:
            continue
        r = run_cli(*args, env=env, cwd=tmp_path, timeout=1200)
        assert r.returncode == 0, f"dslbench {shlex.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}"
        ran.append((args, r.stdout))
    names = [a[0] if a[0] != "audit" else f"audit {a[1]}" for a, _ in ran]
    assert names == ["doctor", "generate", "validate", "report", "selfcheck", "audit sample", "audit mark", "audit report"]
    out = dict((n, o) for n, (_, o) in zip(names, ran))
    assert "semantic_pct" in out["report"] and "jq" in out["report"]
    assert (tmp_path / "runs" / "r1" / "audit.jsonl").exists()
    assert "jq" in out["audit report"]


def test_the_readme_papermill_line_runs_as_written(tmp_path, cache):
    line = re.search(r"`(papermill notebooks/02_generation\.ipynb [^`]+)`", README).group(1)
    args = shlex.split(line)
    env = {**os.environ, "DSLBENCH_CACHE": str(cache),
           "DSLBENCH_LLAMA_THREADS": os.environ.get("DSLBENCH_LLAMA_THREADS", "2")}
    papermill = Path(sys.executable).with_name("papermill")
    notebook = ROOT / args[1]
    r = subprocess.run([str(papermill), str(notebook), *args[2:]], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / args[args.index("run_dir") + 1]
    gens = (run / "generations.jsonl").read_text().splitlines()
    limit = int(args[args.index("limit") + 1])
    assert len(gens) == limit and all('"dsl": "jq"' in g for g in gens)
