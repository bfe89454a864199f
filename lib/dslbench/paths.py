"""Where things live. The repository root can be overridden with DSLBENCH_ROOT."""
from pathlib import Path

from . import settings


def repo_root() -> Path:
    env = settings.get("DSLBENCH_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[2]


def tasks_dir() -> Path:
    """Bundled tasks; DSLBENCH_TASKS points a run at another task tree (e.g. imported upstream tasks)."""
    env = settings.get("DSLBENCH_TASKS")
    return Path(env).resolve() if env else repo_root() / "data" / "tasks"


def toolchains_dir() -> Path:
    return repo_root() / "toolchains"


def runs_dir() -> Path:
    return Path(settings.get("DSLBENCH_RUNS") or repo_root() / "runs")


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def cache_dir(kind: str, env_var: str) -> Path:
    """A cache folder under .cache/<kind>, or wherever the environment variable env_var points."""
    env = settings.get(env_var)
    return Path(env) if env else repo_root() / ".cache" / kind
