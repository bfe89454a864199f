"""The sandbox every validator uses: isolation, limits, timeout, output cap, degraded mode."""
import shutil
import sys

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
