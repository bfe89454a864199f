"""Run untrusted programs (model outputs fed to toolchains) in a sandbox.

Every validator goes through `run()`. With bubblewrap: no network, read-only root, a private
writable work directory mounted at /tmp/work, private empty /tmp, /var/tmp, /run, /home, /srv,
/mnt and /media (no host scratch files, users' files or Unix sockets; the interpreter, environment
and project are re-exposed read-only wherever they live, e.g. a venv under /tmp), a minimal
/etc/passwd and /etc/group, the process dies with its parent, and
(when we are root) the program runs under a uid of its own, so the process-count limit holds per
sandbox and a fork bomb in one cannot fail the programs judged beside it. Always:
rlimits on CPU, address space, file size, open files and processes, a disk quota on the work dir
(and a size-capped private /tmp), a wall-clock timeout and a cap on captured output. Where bubblewrap cannot run (no user namespaces in some containers) it
degrades to rlimits + timeout and says so in `RunResult.mode`, which lands in every verdict.
"""
from __future__ import annotations

import functools
import os
import re
import resource
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import settings
from .paths import cache_dir, repo_root, runs_dir, tasks_dir

SANDBOX_DIR = "/tmp/work"     # where the work directory appears inside the sandbox
# Each sandboxed run gets its own unprivileged uid from this range (as root): RLIMIT_NPROC counts the
# processes of a uid system-wide, so with one shared uid a fork bomb in one sandbox would starve the
# sandboxes judging beside it. No user owns these uids, so no host file is theirs.
SANDBOX_UIDS = (3_000_000, 3_999_999)
LOG_CAP = 64 * 1024           # bytes of stdout/stderr kept per stream


@dataclass
class Limits:
    timeout_s: float = 30.0
    memory_mb: int | None = 4096      # address space; None for runtimes that reserve huge virtual memory (JVM, mono)
    cpu_s: int | None = None          # defaults to timeout + 1
    fsize_mb: int = 64
    nproc: int = 256
    nofile: int = 1024
    disk_mb: int = 512                # total of the work dir and of the private /tmp (each); files: fsize_mb


@dataclass
class RunResult:
    command: str        # the command as run inside the sandbox, shell-quoted
    returncode: int     # negative (or 128+n under bwrap): killed by signal n; see .signal
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    mode: str           # "bwrap", "bwrap-uid" (root: a private uid per run) or "rlimits-only: <why>"
    killed_for: str = ""  # the limit that ended the program (the disk quota, the output's file-size limit)
    tampered: str = ""    # set by the caller when the program replaced a file the harness reads back

    @property
    def signal(self) -> int | None:
        """The signal that killed the program, if one did.

        Without bubblewrap Popen reports -n; bubblewrap's init exits 128+n for a child killed by
        signal n (a toolchain exiting 129-192 on purpose is rare enough to read as a signal too).
        """
        if self.returncode < 0:
            return -self.returncode
        if self.mode.startswith("bwrap") and 128 < self.returncode <= 128 + 64:
            return self.returncode - 128
        return None

    @property
    def log(self) -> str:
        killed = f", killed: {self.killed_for}" if self.killed_for else ""
        parts = [f"$ {self.command}",
                 f"[exit {self.returncode}{', timed out' if self.timed_out else ''}{killed}; sandbox {self.mode}]"]
        if self.stdout.strip():
            parts += ["--- stdout ---", self.stdout.rstrip()]
        if self.stderr.strip():
            parts += ["--- stderr ---", self.stderr.rstrip()]
        return "\n".join(parts)


def _bwrap_base(as_root: bool, tmp_mb: int = 512) -> list[str]:
    # Building the arguments resolves dozens of paths (~1 ms, more than bwrap's own start): cache them
    # on everything they depend on, including which of the folders to hide exist right now.
    key = tuple((str(c), os.path.isdir(c)) for c in _hide_candidates())
    return list(_bwrap_args(as_root, tmp_mb, key, sys.prefix, sys.base_prefix, sys.executable))


@functools.lru_cache(maxsize=64)
def _bwrap_args(as_root: bool, tmp_mb: int, candidates: tuple, *_interpreter) -> tuple[str, ...]:
    args = ["bwrap", "--die-with-parent", "--new-session",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # Private, empty views of the host's shared scratch and socket places (no host sockets or files),
    # and of root's home (keys, caches) when we are root.
    masked = ["/tmp", "/var/tmp", "/run", "/home", "/srv", "/mnt", "/media"] + (["/root"] if as_root else [])
    for m in masked:
        if Path(m).is_dir() and not Path(m).is_symlink():
            scratch = m in ("/tmp", "/var/tmp")
            args += ["--perms", "1777" if scratch else "0755", "--size", str((tmp_mb if scratch else 1) * 1024 * 1024),
                     "--tmpfs", m]
    # The interpreter, the environment and the project stay visible wherever they live (a venv under
    # /tmp, a checkout under /root...): re-expose each read-only on top of the masks.
    for p in _exposed_paths(masked):
        parents = []
        q = Path(p).parent
        while str(q) != "/" and not any(str(q) == m for m in masked):
            parents.append(q)
            q = q.parent
        for d in reversed(parents):
            args += ["--perms", "0755", "--dir", str(d)]
        args += ["--ro-bind", p, p]
    # What the program must not read although it lies in a visible tree: the tasks (their gold and
    # expected outputs), the runs and caches (other programs' outputs), the tests and the git history.
    for p in _hidden_paths(masked, [Path(c) for c, _ in candidates]):
        args += ["--perms", "0755", "--size", str(1024 * 1024), "--tmpfs", p]
    if as_root:
        args += ["--cap-add", "CAP_SETUID,CAP_SETGID"]
    else:
        args.insert(1, "--unshare-user-try")
    return tuple(args)


def _exposed_paths(masked: list[str]) -> list[str]:
    paths = {sys.base_prefix, sys.prefix, str(repo_root()), str(Path(sys.executable).resolve().parent.parent)}
    paths = {str(Path(p).resolve()) for p in paths} | paths
    under = [p for p in paths if any(p == m or p.startswith(m + "/") for m in masked) and p not in masked]
    # only the outermost of nested paths needs a bind
    return sorted(p for p in under if not any(p != q and p.startswith(q + "/") for q in under))


def _hide_candidates() -> list[Path]:
    root = repo_root()
    return [root / "data", root / "tests", root / "runs", root / ".cache", root / ".git", root / "book",
            tasks_dir(), runs_dir(), cache_dir("generations", "DSLBENCH_CACHE").parent,
            cache_dir("oracle", "DSLBENCH_ORACLE_CACHE")]


def _hidden_paths(masked: list[str], candidates: list[Path]) -> list[str]:
    root = repo_root()
    exposed = _exposed_paths(masked)
    out = set()
    for c in candidates:
        c = Path(c).resolve()
        if not c.is_dir() or c == Path("/") or c in (root.resolve(), Path(sys.prefix).resolve()):
            continue
        p = str(c)
        inside_mask = any(p == m or p.startswith(m + "/") for m in masked)
        if inside_mask and not any(p == e or p.startswith(e + "/") for e in exposed):
            continue        # already invisible
        if any(str(Path(q).resolve()).startswith(p + "/") or str(Path(q).resolve()) == p
               for q in (sys.prefix, sys.base_prefix, sys.executable)):
            continue        # never hide the interpreter
        out.add(p)
    return sorted(p for p in out if not any(p.startswith(q + "/") for q in out))   # outermost only


def _sandbox_uid() -> int:
    return SANDBOX_UIDS[0] + secrets.randbelow(SANDBOX_UIDS[1] - SANDBOX_UIDS[0])


def _drop_privileges(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"]


def path_inside(work: Path) -> str:
    """Where the work directory `work` appears to a sandboxed program, for the rare tool that insists
    on an absolute path (commands should use relative ones)."""
    return SANDBOX_DIR if sandbox_mode().startswith("bwrap") else str(work)


@functools.lru_cache(maxsize=1)
def sandbox_mode() -> str:
    """Which isolation this machine gives us; probed once per process."""
    if settings.get("DSLBENCH_SANDBOX") == "off":
        return "rlimits-only: disabled by DSLBENCH_SANDBOX=off"
    if not shutil.which("bwrap"):
        return "rlimits-only: bubblewrap (bwrap) not installed"
    as_root = os.geteuid() == 0
    cmd = _bwrap_base(as_root) + (_drop_privileges(_sandbox_uid()) if as_root and shutil.which("setpriv") else []) + ["true"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        return f"rlimits-only: bwrap failed to start ({e})"
    if r.returncode != 0:
        return f"rlimits-only: bwrap cannot create namespaces here ({r.stderr.strip()[:200]})"
    return "bwrap-uid" if as_root and shutil.which("setpriv") else "bwrap"


def _set_limits(limits: Limits):
    def apply():
        mb = 1024 * 1024
        cpu = limits.cpu_s or int(limits.timeout_s) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        if limits.memory_mb:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.fsize_mb * mb, limits.fsize_mb * mb))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.nproc, limits.nproc))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.nofile, limits.nofile))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _read_capped(path: Path) -> str:
    size = path.stat().st_size
    with open(path, "rb") as f:
        data = f.read(LOG_CAP)
    text = data.decode("utf-8", errors="replace")
    if size > LOG_CAP:
        text += f"\n[... output capped: {size - LOG_CAP} more bytes not kept]"
    return text


def new_workdir(prefix: str = "dslbench-") -> Path:
    """A private, empty work directory on the host (removed by the caller with shutil.rmtree).

    Its name carries the creating process id, so that `sweep_leftovers` can tell the folders of a
    killed run from those of a live one.
    """
    d = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    d.chmod(0o755)
    return d


_LEFTOVER = re.compile(r"^dslbench-(?:[a-z]+-)*(\d+)-")


def _uid_of(full: list[str]) -> int | None:
    """The uid a bwrap command drops to (from its setpriv --reuid), if any."""
    for a in full:
        if a.startswith("--reuid="):
            return int(a.split("=", 1)[1])
    return None


class _Watch:
    """Kills the program's process group at its deadline (`timed_out`) or once its work dir holds more
    than `mb` (`exceeded`; checked 4x a second).

    The caller blocks in a plain wait, which returns the moment the program ends (Popen.wait with a
    timeout polls with growing sleeps instead, adding milliseconds to every short command).
    Files are capped one by one by RLIMIT_FSIZE and the private /tmp by its tmpfs size; the quota caps
    the total a program can leave in the host work dir. The kill is a SIGKILL.
    """
    INTERVAL_S = 0.25

    def __init__(self, proc: subprocess.Popen, work: Path, mb: int, timeout_s: float):
        self.proc, self.work, self.limit = proc, work, mb * 1024 * 1024
        self.deadline = time.monotonic() + timeout_s
        self.exceeded, self.timed_out = "", False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _watch(self) -> None:
        while not self._done.wait(max(0.0, min(self.INTERVAL_S, self.deadline - time.monotonic()))):
            if time.monotonic() >= self.deadline:
                self.timed_out = True
                return self._kill()
            if _tree_bytes(self.work) > self.limit:
                self.exceeded = f"work dir over its {self.limit // (1024 * 1024)} MB disk quota"
                return self._kill()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _tree_bytes(root: Path) -> int:
    total, todo = 0, [str(root)]
    while todo:
        try:
            with os.scandir(todo.pop()) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            todo.append(e.path)
                        else:
                            total += e.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        pass
        except OSError:
            pass
    return total


def sweep_leftovers() -> int:
    """Remove work and log folders of dslbench processes that no longer exist (a SIGKILL leaves them)."""
    removed = 0
    for d in Path(tempfile.gettempdir()).glob("dslbench-*"):
        m = _LEFTOVER.match(d.name)
        if not m or not d.is_dir():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue                      # its process is alive: not ours to remove
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed += 1
    return removed


def run(cmd: list[str], work: Path, limits: Limits | None = None, env: dict[str, str] | None = None,
        stdin: str | None = None) -> RunResult:
    """Run `cmd` with `work` as its private, writable current directory.

    Paths inside the sandbox: the work directory is /tmp/work (bwrap modes) so logs do not depend
    on host temp paths; commands should use relative paths.
    """
    limits = limits or Limits()
    work = Path(work)
    mode = sandbox_mode()
    base_env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
                "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
    base_env.update(env or {})
    if mode.startswith("bwrap"):
        inside = SANDBOX_DIR
        base_env["HOME"] = inside
        full = _bwrap_base(mode == "bwrap-uid", limits.disk_mb) + ["--bind", str(work), inside, "--chdir", inside,
                                                                  "--clearenv"]
        for k, v in base_env.items():
            full += ["--setenv", k, v]
        if mode == "bwrap-uid":
            uid = _sandbox_uid()
            os.chown(work, uid, uid)
            for p in work.rglob("*"):
                os.chown(p, uid, uid, follow_symlinks=False)
            full += _drop_privileges(uid)
        full += cmd
        popen_env, cwd = None, None
    else:
        base_env["HOME"] = str(work)
        full, popen_env, cwd = cmd, base_env, str(work)
    shown = shlex.join(cmd)
    logs = new_workdir("dslbench-log-")
    if mode.startswith("bwrap"):
        # The host's user and group lists are host facts a program could print into a published log:
        # the sandbox sees a minimal pair naming only root, nobody and its own uid.
        uid = _uid_of(full)
        (logs / "passwd").write_text("root:x:0:0:root:/root:/usr/sbin/nologin\n"
                                     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                                     + (f"sandbox:x:{uid}:{uid}:sandbox:{SANDBOX_DIR}:/usr/sbin/nologin\n" if uid else ""))
        (logs / "group").write_text("root:x:0:\nnogroup:x:65534:\n" + (f"sandbox:x:{uid}:\n" if uid else ""))
        at = full.index("--clearenv")
        full[at:at] = ["--ro-bind", str(logs / "passwd"), "/etc/passwd", "--ro-bind", str(logs / "group"), "/etc/group"]
    try:
        with open(logs / "out", "wb") as out, open(logs / "err", "wb") as err:
            t0 = time.monotonic()
            try:
                proc = subprocess.Popen(full, stdout=out, stderr=err,
                                        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                        cwd=cwd, env=popen_env, start_new_session=True,
                                        preexec_fn=_set_limits(limits))
            except OSError as e:
                return RunResult(shown, 127, "", f"cannot start: {e}", False, 0.0, mode)
            watch = _Watch(proc, work, limits.disk_mb, limits.timeout_s)
            try:
                if stdin is not None:
                    try:
                        proc.stdin.write(stdin.encode())
                        proc.stdin.close()
                    except BrokenPipeError:
                        pass
                proc.wait()
            except BaseException:
                # Ctrl-C or a crash in the caller: never leave the sandboxed program running.
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise
            finally:
                watch.stop()
            duration = time.monotonic() - t0
        killed_for = watch.exceeded
        cap = limits.fsize_mb * 1024 * 1024
        if not killed_for and proc.returncode != 0 and any((logs / n).stat().st_size >= cap for n in ("out", "err")):
            # the program's output reached the file-size limit (EFBIG): a limit, though nobody killed it
            killed_for = f"output over its {limits.fsize_mb} MB file-size limit"
        return RunResult(shown, proc.returncode, _read_capped(logs / "out"), _read_capped(logs / "err"),
                         watch.timed_out, duration, mode, killed_for)
    finally:
        shutil.rmtree(logs, ignore_errors=True)
