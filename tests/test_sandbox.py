"""The sandbox every validator uses: isolation, limits, timeout, output cap, degraded mode."""
import shutil
import sys
from pathlib import Path

import pytest

from dslbench import sandbox
from dslbench.sandbox import Limits, run

PY = sys.executable


@pytest.fixture
def work():
    d = sandbox.new_workdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_bubblewrap_is_used_on_this_machine():
    assert sandbox.sandbox_mode().startswith("bwrap"), sandbox.sandbox_mode()


def test_private_writable_workdir_and_readonly_root(work):
    (work / "in.txt").write_text("hello")
    r = run(["sh", "-c", "cat in.txt && echo out > out.txt && touch /usr/evil; echo rc=$?"], work)
    assert r.stdout.startswith("hello") and "rc=1" in r.stdout
    assert (work / "out.txt").read_text() == "out\n"
    assert "Read-only file system" in r.stderr or "Permission denied" in r.stderr


def test_no_network(work):
    code = "import socket\ntry:\n socket.create_connection(('127.0.0.1', 22), timeout=2)\nexcept OSError as e:\n print(type(e).__name__, e.errno)"
    r = run([PY, "-c", code], work)
    assert r.returncode == 0
    ifaces = run(["cat", "/proc/net/dev"], work).stdout
    assert "eth0" not in ifaces and "lo" in ifaces  # only a private loopback exists


def test_secrets_in_env_and_home_are_hidden(work, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    r = run(["sh", "-c", "env; ls -A /root"], work)
    assert "sk-secret" not in r.stdout
    assert ".cache" not in r.stdout.split()


def test_timeout_kills_the_whole_process_group(work):
    r = run(["sh", "-c", "sleep 30 & sleep 30"], work, Limits(timeout_s=1))
    assert r.timed_out and r.duration_s < 10


def test_memory_limit(work):
    r = run([PY, "-c", "x = bytearray(2 * 1024**3)"], work, Limits(memory_mb=512))
    assert r.returncode != 0 and "MemoryError" in r.stderr


def test_process_limit_contains_fork_bomb(work):
    r = run(["sh", "-c", "for i in $(seq 200); do sleep 2 & done; wait"], work, Limits(nproc=32, timeout_s=20))
    assert "fork" in r.stderr.lower()


def test_file_size_limit(work):
    r = run([PY, "-c", "open('big', 'wb').write(b'x' * 5 * 1024**2)"], work, Limits(fsize_mb=1))
    assert r.returncode != 0
    assert (work / "big").stat().st_size <= 1024**2


def test_output_is_capped(work):
    r = run([PY, "-c", "print('y' * 500000)"], work)
    assert len(r.stdout) < sandbox.LOG_CAP + 200 and "output capped" in r.stdout


def test_degrades_to_rlimits_and_says_so(work, monkeypatch):
    monkeypatch.setenv("DSLBENCH_SANDBOX", "off")
    sandbox.sandbox_mode.cache_clear()
    try:
        r = run(["sh", "-c", "echo hi"], work, Limits(timeout_s=5))
        assert r.mode.startswith("rlimits-only") and r.stdout == "hi\n"
        assert run(["sleep", "20"], work, Limits(timeout_s=1)).timed_out
    finally:
        monkeypatch.delenv("DSLBENCH_SANDBOX")
        sandbox.sandbox_mode.cache_clear()


def test_an_environment_under_tmp_stays_visible(work, monkeypatch, tmp_path):
    """A venv or checkout under /tmp (masked by the sandbox's private /tmp) is re-exposed read-only."""
    prefix = tmp_path / "env"          # pytest's tmp_path lives under /tmp
    prefix.mkdir()
    (prefix / "marker").write_text("interpreter files")
    for p in (tmp_path, prefix, prefix / "marker"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    r = run(["cat", str(prefix / "marker")], work)
    assert r.returncode == 0 and r.stdout == "interpreter files", r.log
    r = run(["sh", "-c", f"echo x > {prefix}/new; echo rc=$?"], work)
    assert "rc=0" not in r.stdout and "Read-only" in r.stderr and not (prefix / "new").exists()


def test_host_scratch_files_and_unix_sockets_are_not_visible(work, tmp_path):
    """Files and listening Unix sockets under /var/tmp and /run are host state: the sandbox sees empty ones."""
    import os
    import socket
    secret = f"/var/tmp/dslbench-test-secret-{os.getpid()}"
    sock_path = f"/var/tmp/dslbench-test-{os.getpid()}.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with open(secret, "w") as f:
            f.write("s3cret")
        os.chmod(secret, 0o644)
        listener.bind(sock_path)
        os.chmod(sock_path, 0o777)
        listener.listen(1)
        listener.settimeout(3)
        probe = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
                 f"try:\n    s.connect({sock_path!r}); s.send(b'hi'); print('connected')\n"
                 "except OSError as e:\n    print('refused', e)\n"
                 f"print(open({secret!r}).read() if __import__('os').path.exists({secret!r}) else 'no secret')\n")
        (work / "probe.py").write_text(probe)
        r = run([sys.executable, "probe.py"], work)
        assert "refused" in r.stdout and "no secret" in r.stdout and "s3cret" not in r.log, r.log
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
        for p in (secret, sock_path):
            if os.path.exists(p):
                os.unlink(p)


def test_a_fork_bomb_does_not_fail_programs_judged_beside_it(work):
    """Each sandbox has its own uid, so exhausting the process limit in one cannot starve another
    (measured with a shared uid: 6 Verilog golds beside a bomb got 3 syntax fails, 2 semantic fails)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from dslbench import pipeline
    from dslbench.tasks import load_tasks
    if sandbox.sandbox_mode() != "bwrap-uid":
        pytest.skip(f"per-sandbox uids need root and bubblewrap; here: {sandbox.sandbox_mode()}")
    import time
    from dslbench import toolchains
    # the bomb runs with the very limits the golds get (the shared-uid failure needs equal nproc limits)
    limits = toolchains.get("verilog").limits(timeout_s=12)
    bomb = threading.Thread(target=run, args=(["sh", "-c", "b() { b | b & }; b; sleep 20"], work, limits))
    bomb.start()
    time.sleep(1)                       # let it reach the process limit first
    try:
        golds = load_tasks(["verilog"], limit=6)["verilog"]
        with ThreadPoolExecutor(2) as ex:
            outs = list(ex.map(lambda t: pipeline.evaluate("verilog", t, t.gold), golds))
    finally:
        bomb.join()
    got = [(o["syntax"]["status"], o["semantic"]["status"]) for o in outs]
    assert got == [("pass", "pass")] * len(golds), [o["syntax"]["diagnostics"] + o["semantic"]["diagnostics"] for o in outs]


def test_disk_quota_caps_the_work_dir_and_tmp(work):
    """Files are capped one by one (fsize); the total is capped too: a disk filler is killed, a resource limit."""
    filler = ("import os\nfor i in range(200):\n    with open(f'f{i}', 'wb') as f:\n        f.write(os.urandom(8 << 20))\n")
    (work / "fill.py").write_text(filler)
    r = run([PY, "fill.py"], work, Limits(timeout_s=60, disk_mb=64))
    total = sum(p.stat().st_size for p in work.glob("f*"))
    assert r.signal == 9 and "disk quota" in r.killed_for and "disk quota" in r.log, r.log
    assert total < 64 * 2**20 + 200 * 2**20, total      # killed within a poll interval of crossing the quota
    r = run(["sh", "-c", "for i in 1 2 3; do dd if=/dev/zero of=/tmp/big$i bs=1M count=40 2>&1; done"], work,
            Limits(timeout_s=60, disk_mb=64))
    assert "No space left on device" in r.stdout, r.log      # the private /tmp is a tmpfs of the same size


def test_host_users_and_homes_are_not_visible(work):
    """What a hostile program could print into a published log: the host's user list and users' files."""
    import os
    home = "/home/dslbench-test-user"
    os.makedirs(home, exist_ok=True)
    try:
        with open(f"{home}/secret.txt", "w") as f:
            f.write("s3cret")
        os.chmod(home, 0o755)
        os.chmod(f"{home}/secret.txt", 0o644)
        r = run(["sh", "-c", f"cat /etc/passwd; cat {home}/secret.txt; id -un"], work)
        users = {line.split(":")[0] for line in r.stdout.splitlines() if ":" in line}
        assert users <= {"root", "nobody", "sandbox"} and "s3cret" not in r.log, r.log
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_task_files_runs_and_caches_are_not_readable(work):
    """The project is visible (toolchains, lib), but not the tasks: their gold and expected outputs."""
    from dslbench.paths import repo_root, tasks_dir
    gold_file = sorted((tasks_dir() / "jq").glob("*.yaml"))[0]
    r = run(["sh", "-c", f"cat {gold_file}; ls {repo_root() / 'toolchains' / 'jq'}"], work)
    assert "gold" not in r.stdout and "No such file" in r.stderr, r.log
    assert "validator.py" in r.stdout, r.log


def test_a_runs_folder_made_after_the_first_run_is_hidden_too(work, monkeypatch):
    """The sandbox's arguments are cached per process: a folder to hide that appears later is not missed."""
    import tempfile
    from dslbench.paths import repo_root
    parent = Path(tempfile.mkdtemp(prefix=".sandbox-test-", dir=repo_root()))   # visible, unlike /tmp
    parent.chmod(0o755)
    try:
        runs = parent / "runs"
        monkeypatch.setenv("DSLBENCH_RUNS", str(runs))
        assert run(["true"], work).returncode == 0       # arguments built while the folder does not exist
        (runs / "r1").mkdir(parents=True)
        (runs / "r1" / "verdicts.jsonl").write_text("secret\n")
        r = run(["cat", str(runs / "r1" / "verdicts.jsonl")], work)
        assert "secret" not in r.stdout and "No such file" in r.stderr, r.log
    finally:
        shutil.rmtree(parent)


def test_host_never_writes_or_reads_through_a_symlink_the_program_left(work, tmp_path):
    """A program's first run leaves symlinks in its work dir; the validator's next copy must not write
    through them (as root, to any host path) and its report read must not follow them (/dev/zero)."""
    import os
    from dslbench import toolchains
    tc = toolchains.get("ufl")
    marker = tmp_path / "host-marker"
    runner = sorted((tc.folder).glob("run_*.py"))[0]
    os.symlink(marker, work / runner.name)
    os.symlink("/dev/zero", work / "report.json")
    (work / "spec.json").write_text("{}")
    result, report = tc.run_runner([runner], ["spec.json", "report.json"], work)
    assert not marker.exists() and report is None or isinstance(report, dict)
    assert not (work / runner.name).is_symlink()
