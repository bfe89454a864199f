"""The code revision recorded on every record: git commit (+dirty) or a content hash."""
import functools
import hashlib
import subprocess

from .paths import repo_root


@functools.lru_cache(maxsize=1)
def code_revision() -> str:
    root = repo_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "lib", "toolchains", "data"],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    # Not a git checkout (e.g. an unpacked archive): hash the code that decides verdicts.
    h = hashlib.sha256()
    for sub in ("lib/dslbench", "toolchains"):
        for p in sorted((root / sub).rglob("*.py")):
            h.update(p.read_bytes())
    return "content-" + h.hexdigest()[:12]
