"""Sandbox start cost per run: the hardened sandbox against the one of an earlier revision, paired.

Each repeat runs the same commands (a no-op `true`, and `python -c pass`, the start of every Python
runner) through both versions of `dslbench.sandbox.run` back to back, in a fresh work dir each, and
through no sandbox at all. Prints min / median / max seconds per run and the median ratio
new / old, which the hardening issue caps at 1.10.

usage: python benchmarks/sandbox_overhead.py [--repeats 40] [--before 1a8da07]
"""
import argparse
import importlib.util
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dslbench import sandbox as current

ROOT = Path(__file__).resolve().parents[1]


def sandbox_at(revision: str):
    """lib/dslbench/sandbox.py as it was at `revision`, loaded as a module of its own."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:lib/dslbench/sandbox.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="bench-sandbox-")) / "sandbox_before.py"
    # its package-relative imports, made absolute so that it loads outside the package
    path.write_text(source.replace("from . import ", "from dslbench import ").replace("from .", "from dslbench."))
    spec = importlib.util.spec_from_file_location("sandbox_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def stats(xs):
    return f"min {min(xs):.4f}  median {statistics.median(xs):.4f}  max {max(xs):.4f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--before", default="1a8da07", help="revision of the sandbox to compare with")
    args = ap.parse_args()
    before = sandbox_at(args.before)
    print(f"sandbox mode now: {current.sandbox_mode()}; at {args.before}: {before.sandbox_mode()}")
    for name, cmd in (("true", ["true"]), ("python -c pass", [Path(sys.executable).name, "-c", "pass"])):
        t = {"raw": [], "before": [], "now": []}
        for _ in range(args.repeats):
            for label, mod in (("before", before), ("now", current)):
                work = current.new_workdir()
                try:
                    r = None
                    def go():
                        nonlocal r
                        r = mod.run(cmd, work, mod.Limits(timeout_s=30))
                    t[label].append(timed(go))
                    assert r.returncode == 0, r.log
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            t["raw"].append(timed(lambda: subprocess.run([sys.executable if cmd[0] != "true" else "true", *cmd[1:]],
                                                          check=True)))
        ratio = statistics.median(t["now"]) / statistics.median(t["before"])
        print(f"\n{name} ({args.repeats} paired repeats, seconds per run)")
        for label in ("raw", "before", "now"):
            print(f"  {label:7} {stats(t[label])}")
        print(f"  median now / before: {ratio:.3f}   (target <= 1.10)")


if __name__ == "__main__":
    main()
