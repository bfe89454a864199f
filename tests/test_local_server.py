"""`dslbench serve` (llama.cpp's OpenAI-compatible server on the embedded model, through xllamacpp) and
`dslbench generate --api-base` against it, as a user of vLLM or Ollama would run it. No network: the
server listens on 127.0.0.1."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from dslbench.store import RunStore


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dslbench(*args, timeout=600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL")}
    env["DSLBENCH_LLAMA_THREADS"] = os.environ.get("DSLBENCH_LLAMA_THREADS", "1")
    return subprocess.run([sys.executable, "-m", "dslbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    env = {**os.environ, "DSLBENCH_LLAMA_THREADS": os.environ.get("DSLBENCH_LLAMA_THREADS", "1")}
    log = tmp_path_factory.mktemp("serve") / "serve.log"    # a file: the server's chatter would fill a pipe
    proc = subprocess.Popen([sys.executable, "-m", "dslbench.cli", "serve", "--port", str(port)],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=5) as r:
                    models = json.load(r)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    pytest.fail(f"dslbench serve did not come up:\n{log.read_text()[-3000:]}")
                time.sleep(1)
        assert [m["id"] for m in models["data"]] == ["smollm2-135m"]
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_generate_against_the_served_model_records_the_endpoint(server, tmp_path):
    run, cache = tmp_path / "run", tmp_path / "cache"
    common = ["--dsl", "jq", "--limit", "2", "--model", "openai/smollm2-135m", "--cache", str(cache), "--no-progress"]
    p = dslbench("generate", "--run", str(run), "--api-base", server, *common)
    assert p.returncode == 0, p.stderr
    gens = RunStore(run).records("generations")
    assert len(gens) == 2
    for g in gens:
        assert g["generation_status"] == "ok", g["generation_error"]
        assert g["api_base"] == server and not g["cached"]
        assert g["raw_output"].strip()
    invocation = [json.loads(line) for line in (run / "run.json").read_text().splitlines()][-1]
    assert invocation["params"]["api_base"] == server

    # the same server again, new run: answered from the cache
    p = dslbench("generate", "--run", str(tmp_path / "again"), "--api-base", server, *common)
    assert p.returncode == 0, p.stderr
    assert all(g["cached"] for g in RunStore(tmp_path / "again").records("generations"))

    # another server (nothing listens there): re-generated, not replayed from the cache; a failed call
    dead = f"http://127.0.0.1:{free_port()}/v1"
    p = dslbench("generate", "--run", str(tmp_path / "other"), "--api-base", dead, "--timeout", "10", *common)
    assert p.returncode == 0, p.stderr
    others = RunStore(tmp_path / "other").records("generations")
    assert {g["generation_status"] for g in others} == {"error"}
    assert all(g["api_base"] == dead and not g["cached"] for g in others)

    # the first run's folder refuses the other server: one model name, one server per run
    p = dslbench("generate", "--run", str(run), "--api-base", dead, *common)
    assert p.returncode == 2 and "use a new --run folder" in p.stderr, p.stderr
    assert len(RunStore(run).records("generations")) == 2


def test_endpoint_options_are_checked():
    p = dslbench("generate", "--run", "/nonexistent/run", "--model", "smollm2-135m", "--api-base",
                 "http://127.0.0.1:1/v1", timeout=120)
    assert p.returncode == 2 and "embedded model" in p.stderr
    p = dslbench("generate", "--run", "/nonexistent/run", "--model", "openai/x", "--api-base", "localhost:8000",
                 timeout=120)
    assert p.returncode == 2 and "option --api-base" in p.stderr
