"""Tests of dslbench.generation and the embedded model. The embedded-model tests run the real
SmolLM2-135M through litellm and llama.cpp (xllamacpp; no mocks); max_tokens stays small for speed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dslbench
from dslbench import generation as gen
from dslbench.generation import (
    DEFAULT_PARAMS,
    GenerationCache,
    ModelSpec,
    cache_key,
    default_model_name,
    generate,
    load_model_registry,
    resolve_model,
)

# pytest resets warning filters per test; re-silence pydantic's notes on litellm's own TypedDicts.
pytestmark = pytest.mark.filterwarnings("ignore:.*the `ReadOnly` qualifier:UserWarning")

PARAMS = {"max_tokens": 32}
MESSAGES = [{"role": "user", "content": "Write a SQL query that selects all rows from a table named users."}]
PAPER_MODELS = {
    "qwen3-1.7b",
    "qwen3-8b",
    "qwen3-32b",
    "qwen2.5-coder-7b",
    "ministral-3-8b",
    "deepseek-v3.2",
    "glm-4.7",
}


@pytest.fixture(scope="module")
def embedded() -> ModelSpec:
    return resolve_model(default_model_name())


# --- registry --------------------------------------------------------------------------------


def test_registry_has_default_and_paper_models():
    registry = load_model_registry()
    assert set(registry) == PAPER_MODELS | {"smollm2-135m"}
    assert default_model_name() == "smollm2-135m"
    smol = registry["smollm2-135m"]
    assert smol.litellm == "dslbench/smollm2-135m-instruct"
    assert smol.embedded and smol.params_b == pytest.approx(0.135)
    assert registry["qwen3-1.7b"].litellm == "hosted_vllm/Qwen/Qwen3-1.7B"
    assert registry["qwen3-1.7b"].api_base == "http://localhost:8000/v1"
    assert registry["deepseek-v3.2"].api_key_env == "DEEPSEEK_API_KEY"
    assert registry["deepseek-v3.2"].params_b == 671
    assert registry["glm-4.7"].litellm.startswith("openai/") and registry["glm-4.7"].api_key_env
    for name in PAPER_MODELS:
        assert not registry[name].embedded
        assert registry[name].params_b and registry[name].params_b > 1


def test_resolve_model_raw_litellm_string():
    spec = resolve_model("ollama/qwen3:8b")
    assert spec == ModelSpec(name="ollama/qwen3:8b", litellm="ollama/qwen3:8b")
    assert resolve_model("dslbench/smollm2-135m-instruct").embedded
    assert resolve_model("qwen3-8b").litellm == "hosted_vllm/Qwen/Qwen3-8B"
    with pytest.raises(ValueError):
        resolve_model("qwen3-8")  # misspelt registry name, no provider prefix


def test_registry_rejects_unknown_keys(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("default: a\nmodels:\n  a:\n    litellm: ollama/x\n    api-base: http://h\n")
    with pytest.raises(ValueError, match="api-base"):
        load_model_registry(path)


# --- cache key and cache -----------------------------------------------------------------------


def test_cache_key_stable_and_sensitive():
    spec = ModelSpec(name="m", litellm="ollama/m")
    params = dict(DEFAULT_PARAMS)
    key = cache_key(spec, params, MESSAGES, 0)
    assert len(key) == 64 and int(key, 16) >= 0
    # Stable: same inputs (also in another dict order) give the same key.
    assert cache_key(spec, dict(reversed(list(params.items()))), [dict(m) for m in MESSAGES], 0) == key
    variants = [
        cache_key(ModelSpec(name="m", litellm="ollama/other"), params, MESSAGES, 0),
        cache_key(ModelSpec(name="m", litellm="ollama/m", api_base="http://h:1"), params, MESSAGES, 0),
        cache_key(spec, {**params, "temperature": 0.7}, MESSAGES, 0),
        cache_key(spec, {**params, "max_tokens": 513}, MESSAGES, 0),
        cache_key(spec, params, [{"role": "user", "content": MESSAGES[0]["content"] + " "}], 0),
        cache_key(spec, params, [{"role": "system", "content": MESSAGES[0]["content"]}], 0),
        cache_key(spec, params, MESSAGES, 1),
    ]
    assert len({key, *variants}) == len(variants) + 1
    # The registry name is a label, not an input of the generation.
    assert cache_key(ModelSpec(name="other-label", litellm="ollama/m"), params, MESSAGES, 0) == key


def test_embedded_cache_key_covers_the_runtime(monkeypatch):
    # another llama.cpp build changes some greedy replies: its cached answers must not be replayed
    from dslbench import generation
    spec = ModelSpec(name="e", litellm="dslbench/smollm2-135m-instruct", embedded=True)
    assert generation.embedded_runtime().startswith("xllamacpp==")
    remote = ModelSpec(name="m", litellm="ollama/m")
    key, remote_key = cache_key(spec, DEFAULT_PARAMS, MESSAGES, 0), cache_key(remote, DEFAULT_PARAMS, MESSAGES, 0)
    monkeypatch.setattr(generation, "embedded_runtime", lambda: "xllamacpp==0.0.0")
    assert cache_key(spec, DEFAULT_PARAMS, MESSAGES, 0) != key
    assert cache_key(remote, DEFAULT_PARAMS, MESSAGES, 0) == remote_key     # a server's model: not ours to version


def test_cache_put_get_atomic(tmp_path):
    cache = GenerationCache(tmp_path / "c")
    key = cache_key(ModelSpec(name="m", litellm="ollama/m"), DEFAULT_PARAMS, MESSAGES, 0)
    assert cache.get(key) is None
    value = {"status": "ok", "text": "SELECT * FROM users; -- é", "usage": {"prompt_tokens": 3}}
    cache.put(key, value)
    path = tmp_path / "c" / key[:2] / f"{key}.json"
    assert path.is_file()
    assert cache.get(key) == value
    cache.put(key, {**value, "text": "v2"})  # overwrite replaces the whole file
    assert cache.get(key)["text"] == "v2"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left behind
    path.write_text('{"status": "ok", "te')  # a torn file (not produced by put) reads as a miss
    assert cache.get(key) is None
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")


def test_cache_put_failure_leaves_no_entry(tmp_path):
    cache = GenerationCache(tmp_path)
    key = "ab" * 32
    with pytest.raises(TypeError):
        cache.put(key, {"text": object()})  # not JSON-serialisable: fails mid-write
    assert cache.get(key) is None
    assert list((tmp_path / key[:2]).iterdir()) == []


# --- embedded model (real) -----------------------------------------------------------------------


def test_embedded_model_answers(embedded):
    result = generate(embedded, MESSAGES, PARAMS)
    assert result.status == "ok", result.error
    assert result.error == ""
    assert result.text.strip()
    assert result.usage["prompt_tokens"] > 0
    assert 0 < result.usage["completion_tokens"] <= PARAMS["max_tokens"]
    assert result.model == "dslbench/smollm2-135m-instruct"
    assert result.params == {**DEFAULT_PARAMS, **PARAMS}
    assert result.attempts == 1 and not result.cached


def test_embedded_deterministic_and_cache_hit_makes_no_call(embedded, tmp_path, monkeypatch):
    cache = GenerationCache(tmp_path)
    first = generate(embedded, MESSAGES, PARAMS, cache=cache)
    other = generate(embedded, [{"role": "user", "content": "Name a colour."}], PARAMS)  # disturb state
    second = generate(embedded, MESSAGES, PARAMS)  # no cache: a real second model call
    assert first.status == second.status == other.status == "ok"
    assert second.text == first.text
    assert second.usage == first.usage

    def no_model_call(*args, **kwargs):
        raise AssertionError("the model was called despite a cache hit")

    monkeypatch.setattr(gen.litellm_module(), "completion", no_model_call)
    hit = generate(embedded, MESSAGES, PARAMS, cache=cache)
    assert hit.cached and hit.status == "ok"
    assert hit.text == first.text and hit.usage == first.usage
    # A different sample index is a separate entry: it misses the cache and so reaches the model.
    miss = generate(embedded, MESSAGES, PARAMS, sample=1, cache=cache, retries=0)
    assert miss.status == "error" and "the model was called" in miss.error


def test_embedded_deterministic_across_processes(embedded):
    here = generate(embedded, MESSAGES, PARAMS)
    assert here.status == "ok", here.error
    script = (
        "import json, sys\n"
        "from dslbench.generation import generate, resolve_model\n"
        "r = generate(resolve_model('smollm2-135m'), json.loads(sys.argv[1]), json.loads(sys.argv[2]))\n"
        "print(json.dumps({'status': r.status, 'error': r.error, 'text': r.text}))\n"
    )
    env = dict(os.environ)
    lib = str(Path(dslbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (lib, env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(MESSAGES), json.dumps(PARAMS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    there = json.loads(proc.stdout.strip().splitlines()[-1])
    assert there["status"] == "ok", there["error"]
    assert there["text"] == here.text


def test_registering_provider_does_not_load_model():
    script = (
        "from dslbench import generation, local_model\n"
        "generation.register_embedded_provider(); generation.register_embedded_provider()\n"
        "import litellm\n"
        "assert [i['provider'] for i in litellm.custom_provider_map] == ['dslbench']\n"
        "assert local_model._server is None\n"
    )
    env = dict(os.environ)
    lib = str(Path(dslbench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (lib, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr


# --- errors --------------------------------------------------------------------------------------


def test_remote_error_is_recorded_not_raised_and_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("DSLBENCH_TEST_KEY", "sk-not-a-real-key")
    spec = ModelSpec(name="x", litellm="openai/gpt-x", api_base="http://127.0.0.1:9", api_key_env="DSLBENCH_TEST_KEY")
    cache = GenerationCache(tmp_path)
    result = generate(spec, MESSAGES, PARAMS, cache=cache, retries=1)
    assert result.status == "error"
    assert result.text == "" and not result.cached
    assert "Error" in result.error and "Connection" in result.error
    assert result.attempts == 2  # connection failures are transient: retried once
    assert cache.get(cache_key(spec, {**DEFAULT_PARAMS, **PARAMS}, MESSAGES, 0)) is None
    assert not any(tmp_path.rglob("*.json"))


def test_missing_api_key_is_an_error_without_a_call(monkeypatch):
    monkeypatch.delenv("DSLBENCH_TEST_MISSING_KEY", raising=False)
    monkeypatch.setattr(gen.litellm_module(), "completion", lambda **kw: pytest.fail("called without a key"))
    spec = ModelSpec(name="x", litellm="deepseek/deepseek-chat", api_key_env="DSLBENCH_TEST_MISSING_KEY")
    result = generate(spec, MESSAGES, PARAMS)
    assert result.status == "error" and "DSLBENCH_TEST_MISSING_KEY" in result.error
    assert result.attempts == 0


def test_transient_errors_are_retried_then_succeed(tmp_path, monkeypatch):
    # The remote side is faked here (no server to rate-limit us); the embedded tests above are real.
    monkeypatch.setattr(gen, "BACKOFF_BASE_S", 0.01)
    calls = []
    real = gen.litellm_module().completion

    def flaky(**kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise gen.litellm_module().RateLimitError(message="slow down", llm_provider="openai", model="gpt-x")
        return real(model="openai/gpt-x", messages=kwargs["messages"], mock_response="SELECT 1;")

    monkeypatch.setattr(gen.litellm_module(), "completion", flaky)
    spec = ModelSpec(name="x", litellm="openai/gpt-x")
    cache = GenerationCache(tmp_path)
    result = generate(spec, MESSAGES, PARAMS, cache=cache, retries=3)
    assert result.status == "ok" and result.text == "SELECT 1;" and result.attempts == 3
    assert cache.get(cache_key(spec, {**DEFAULT_PARAMS, **PARAMS}, MESSAGES, 0))["text"] == "SELECT 1;"

    calls.clear()
    result = generate(spec, MESSAGES, {"max_tokens": 7}, retries=1)  # gives up after 2 attempts
    assert result.status == "error" and result.error.startswith("RateLimitError") and result.attempts == 2


def test_non_transient_error_is_not_retried(monkeypatch):
    calls = []

    def bad_request(**kwargs):
        calls.append(kwargs)
        raise gen.litellm_module().BadRequestError(message="bad", model="gpt-x", llm_provider="openai")

    monkeypatch.setattr(gen.litellm_module(), "completion", bad_request)
    result = generate(ModelSpec(name="x", litellm="openai/gpt-x"), MESSAGES, PARAMS, retries=3)
    assert result.status == "error" and result.error.startswith("BadRequestError")
    assert len(calls) == 1 and result.attempts == 1


def test_samples_get_distinct_seeds(monkeypatch):
    # Sample k is sent with seed + k so that samples at temperature > 0 are not identical copies.
    seen = []
    real = gen.litellm_module().completion

    def record(**kwargs):
        seen.append(kwargs["seed"])
        return real(model="openai/gpt-x", messages=kwargs["messages"], mock_response="x")

    monkeypatch.setattr(gen.litellm_module(), "completion", record)
    spec = ModelSpec(name="x", litellm="openai/gpt-x")
    for sample in range(3):
        result = generate(spec, MESSAGES, PARAMS, sample=sample)
        assert result.status == "ok", result.error
        assert result.params["seed"] == DEFAULT_PARAMS["seed"] + sample
    assert seen == [0, 1, 2]
