"""Provider faults become error records, never exceptions or cached answers.

A fake OpenAI-compatible server runs in a thread on 127.0.0.1 and answers each request with the
next scripted action; the real litellm client talks to it over HTTP. Also: the models.yaml checks.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import run_cli
from dslbench import generation as gen
from dslbench import pipeline
from dslbench.errors import UserError
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
from dslbench.store import RunStore

pytestmark = pytest.mark.filterwarnings("ignore:.*the `ReadOnly` qualifier:UserWarning")

MESSAGES = [{"role": "user", "content": "Write a jq program that prints its input."}]
PARAMS = {"max_tokens": 16}
KEY_ENV = "DSLBENCH_FAKE_KEY"
GOOD_TEXT = "```jq\n.\n```"


def completion(content=GOOD_TEXT, **changes) -> dict:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    body.update(changes)
    return body


def with_reasoning(body: dict, reasoning: str) -> dict:
    body["choices"][0]["message"]["reasoning_content"] = reasoning
    return body


def _json(body: dict) -> bytes:
    return json.dumps(body).encode()


# action -> (HTTP status, body bytes); "hang" and "reset" are handled by the server itself
REPLIES = {
    "good": lambda: (200, _json(completion())),
    "429": lambda: (429, _json({"error": {"message": "rate limit reached", "type": "rate_limit"}})),
    "500": lambda: (500, _json({"error": {"message": "the server broke", "type": "server_error"}})),
    "malformed": lambda: (200, _json(completion())[:60]),  # truncated JSON
    "empty_choices": lambda: (200, _json(completion(choices=[]))),
    "null_content": lambda: (200, _json(completion(content=None))),
    "bad_utf8": lambda: (200, _json(completion(content="ok")).replace(b'"ok"', b'"o\xff\xfek"')),
    "surrogate": lambda: (200, _json(completion(content="ok")).replace(b'"ok"', b'"o\\ud800k"')),
    # Recorded shapes of thinking models' replies (Qwen3 served inline; DeepSeek-R1 style with the
    # reasoning in its own field): a sketch block inside the reasoning must never be the program.
    "think_inline": lambda: (200, _json(completion(content=THINK_INLINE))),
    "think_field": lambda: (200, _json(with_reasoning(completion(content=THINK_ANSWER), THINK_SKETCH))),
}
THINK_SKETCH = "Let me think. A first try:\n```jq\n.items[]\n```\nNo, the task wants the names only."
THINK_ANSWER = "```jq\n[.items[].name]\n```\nThis maps every item to its name.\n\nAnything else?"
THINK_INLINE = f"<think>\n{THINK_SKETCH}\n</think>\n\n{THINK_ANSWER}"


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), FakeHandler)
        self.script: list[str] = []  # actions for the next requests, in order
        self.default = "good"  # action once the script is used up
        self.requests: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()  # ends hanging requests at teardown

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_action(self, path: str, body: dict) -> str:
        with self.lock:
            self.requests.append((path, body))
            return self.script.pop(0) if self.script else self.default


class FakeHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path not in ("/v1/chat/completions", "/chat/completions"):
            return self._send(404, _json({"error": {"message": f"no route {self.path}"}}))
        action = self.server.next_action(self.path, body)
        if action == "reset":  # RST instead of a reply: SO_LINGER 0, then close
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            return
        if action == "hang":  # never answer while the client waits
            self.server.release.wait(60)
            action = "good"
        self._send(*REPLIES[action]())

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up (hang): nothing to answer
            pass


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-fake")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):  # the endpoint must come from the spec alone
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(gen, "BACKOFF_BASE_S", 0.01)
    srv = FakeServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.release.set()
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def spec(server) -> ModelSpec:
    return ModelSpec(name="fake", litellm="openai/fake-model", api_base=server.base, api_key_env=KEY_ENV)


def cache_files(root) -> list:
    return sorted(p for p in root.rglob("*") if p.is_file())


# --- each fault -------------------------------------------------------------------------------

FAULTS = {
    "429": "RateLimitError",
    "500": "InternalServerError",
    "malformed": "Expecting",  # json's message for the truncated body
    "empty_choices": "no choices",
    "null_content": "content is null",
    "bad_utf8": "utf-8",
    "surrogate": "lone surrogate U+D800",
    "reset": "Connection error",
}


def assert_provider_error(result, spec):
    assert result.status == "error" and result.reason == "provider_error", result
    assert result.text == "" and not result.cached and result.error
    assert result.finish_reason is None and result.api_base == spec.api_base


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_is_a_provider_error(fault, server, spec, tmp_path):
    server.script = [fault]
    cache = GenerationCache(tmp_path)
    result = generate(spec, MESSAGES, PARAMS, cache=cache, timeout=10, retries=0)
    assert_provider_error(result, spec)
    assert FAULTS[fault] in result.error, result.error
    assert result.attempts == 1 and len(server.requests) == 1
    assert cache_files(tmp_path) == []


def test_faults_then_good_answer_is_cached_once(server, spec, tmp_path):
    cache = GenerationCache(tmp_path)
    for fault in [*sorted(FAULTS), "hang"]:
        server.script = [fault]
        t0 = time.monotonic()
        result = generate(spec, MESSAGES, PARAMS, cache=cache, timeout=2, retries=0)
        assert time.monotonic() - t0 < 2 + 1.5, fault  # the hang ends with the deadline
        assert_provider_error(result, spec)
        assert cache_files(tmp_path) == [], fault  # no fault is ever cached
    assert len(server.requests) == len(FAULTS) + 1

    good = generate(spec, MESSAGES, PARAMS, cache=cache, timeout=10)
    assert good.status == "ok" and good.reason == "ok" and not good.cached, good.error
    assert good.text == GOOD_TEXT and good.finish_reason == "stop" and good.api_base == server.base
    assert good.usage == {"prompt_tokens": 7, "completion_tokens": 3}
    assert len(cache_files(tmp_path)) == 1

    n = len(server.requests)
    hit = generate(spec, MESSAGES, PARAMS, cache=cache, timeout=10)
    assert hit.cached and hit.status == "ok" and hit.text == GOOD_TEXT and hit.finish_reason == "stop"
    assert len(server.requests) == n  # a cache hit makes no request
    assert len(cache_files(tmp_path)) == 1


def test_both_routes_are_served(server, spec):
    # litellm appends /chat/completions to api_base; a base without /v1 must reach the server too.
    bare = ModelSpec(name="bare", litellm=spec.litellm, api_base=server.base[: -len("/v1")], api_key_env=KEY_ENV)
    assert generate(bare, MESSAGES, PARAMS, timeout=10).status == "ok"
    assert generate(spec, MESSAGES, PARAMS, timeout=10).status == "ok"
    assert [path for path, _ in server.requests] == ["/chat/completions", "/v1/chat/completions"]


# --- retries and the deadline ---------------------------------------------------------------------


def test_transient_and_malformed_replies_are_retried(server, spec, tmp_path):
    server.script = ["500", "429", "reset", "empty_choices", "null_content", "surrogate"]
    cache = GenerationCache(tmp_path)
    result = generate(spec, MESSAGES, PARAMS, cache=cache, timeout=20, retries=6)
    assert result.status == "ok" and result.text == GOOD_TEXT, result.error
    assert result.attempts == 7 == len(server.requests)
    assert len(cache_files(tmp_path)) == 1


def test_retries_exhausted_returns_the_last_error(server, spec):
    server.script = ["500", "429"]
    result = generate(spec, MESSAGES, PARAMS, timeout=20, retries=1)
    assert result.reason == "provider_error" and result.error.startswith("RateLimitError")
    assert result.attempts == 2


def test_one_deadline_bounds_all_attempts_and_waits(server, spec, monkeypatch):
    server.default = "500"
    monkeypatch.setattr(gen, "BACKOFF_BASE_S", 0.2)
    t0 = time.monotonic()
    result = generate(spec, MESSAGES, PARAMS, timeout=1.5, retries=100)
    elapsed = time.monotonic() - t0
    assert elapsed < 1.5 + 0.5
    assert result.reason == "provider_error" and result.error.startswith("DeadlineExceeded")
    assert "1.5 s deadline" in result.error and "InternalServerError" in result.error
    assert 2 <= result.attempts == len(server.requests) < 100


def test_a_hang_ends_with_the_deadline_despite_retries(server, spec):
    server.default = "hang"
    t0 = time.monotonic()
    result = generate(spec, MESSAGES, PARAMS, timeout=2, retries=3)
    assert time.monotonic() - t0 < 2 + 1.5
    assert result.reason == "provider_error" and result.error.startswith("DeadlineExceeded")
    assert "Timeout" in result.error
    assert len(server.requests) == 1  # the one attempt used the whole deadline


def test_each_attempt_gets_the_time_left(server, spec, monkeypatch):
    timeouts = []
    real = gen.litellm_module().completion

    def spy(**kwargs):
        timeouts.append(kwargs["timeout"])
        return real(**kwargs)

    monkeypatch.setattr(gen.litellm_module(), "completion", spy)
    server.script = ["500", "500"]
    assert generate(spec, MESSAGES, PARAMS, timeout=30).status == "ok"
    assert len(timeouts) == 3 and 30 >= timeouts[0] > timeouts[1] > timeouts[2] > 29


# --- the cache ---------------------------------------------------------------------------------


def test_cache_entries_that_are_not_good_replies_are_ignored(server, spec, tmp_path):
    cache = GenerationCache(tmp_path)
    key = cache_key(spec, {**DEFAULT_PARAMS, **PARAMS}, MESSAGES, 0)
    path = tmp_path / key[:2] / f"{key}.json"
    bad_entries = [
        {"status": "error", "text": "", "error": "InternalServerError: old"},
        {"status": "ok", "text": None},
        {"status": "ok", "text": "x", "usage": "lots"},
    ]
    for entry in bad_entries:
        cache.put(key, entry)
        result = generate(spec, MESSAGES, PARAMS, cache=cache, timeout=10)
        assert result.status == "ok" and not result.cached and result.text == GOOD_TEXT
    path.write_text('{"status": "ok", "text": "o\\ud800k", "usage": {}}', encoding="utf-8")  # a lone surrogate
    result = generate(spec, MESSAGES, PARAMS, cache=cache, timeout=10)
    assert not result.cached and result.text == GOOD_TEXT
    assert len(server.requests) == len(bad_entries) + 1
    assert json.loads(path.read_text(encoding="utf-8"))["text"] == GOOD_TEXT  # replaced by the good reply


def test_cache_key_and_record_follow_the_effective_api_base(server, monkeypatch, tmp_path):
    # No api_base in the spec: litellm sends openai/... calls to OPENAI_BASE_URL (then OPENAI_API_BASE).
    env_spec = ModelSpec(name="env", litellm="openai/fake-model", api_key_env=KEY_ENV)
    params = {**DEFAULT_PARAMS, **PARAMS}
    no_env = cache_key(env_spec, params, MESSAGES, 0)
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:1/v1")
    other = cache_key(env_spec, params, MESSAGES, 0)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base)  # wins over OPENAI_API_BASE, as in litellm
    here = cache_key(env_spec, params, MESSAGES, 0)
    assert len({no_env, other, here}) == 3
    assert gen.effective_api_base(env_spec) == server.base
    assert gen.effective_api_base(ModelSpec(name="o", litellm="ollama/x")) is None  # not an openai provider

    cache = GenerationCache(tmp_path)
    result = generate(env_spec, MESSAGES, PARAMS, cache=cache, timeout=10)
    assert result.status == "ok" and result.api_base == server.base, result.error
    assert len(server.requests) == 1  # it really went to the server named by the environment
    assert cache.get(here)["api_base"] == server.base

    # An api_base in the spec wins over the environment, in the key as in the call.
    pinned = ModelSpec(name="p", litellm="openai/fake-model", api_base=server.base, api_key_env=KEY_ENV)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert cache_key(pinned, params, MESSAGES, 0) == here
    assert generate(pinned, MESSAGES, PARAMS, cache=cache, timeout=10).cached


# --- end to end through the pipeline and the run store ---------------------------------------------


def add_fake_model(project_copy, server, name: str) -> None:
    """A data/models.yaml entry in the project copy that points at the fake server."""
    models_yaml = project_copy / "data" / "models.yaml"
    models_yaml.write_text(
        models_yaml.read_text(encoding="utf-8")
        + f"\n  {name}:\n    litellm: openai/fake-model\n    api_base: {server.base}\n    api_key_env: {KEY_ENV}\n",
        encoding="utf-8",
    )


def test_pipeline_records_provider_errors_and_retries_them(server, project_copy, tmp_path):
    add_fake_model(project_copy, server, "fake-local")
    run, cache = tmp_path / "run", tmp_path / "cache"
    common = dict(dsls=["jq"], models=["fake-local"], limit=1, cache_dir=cache, executor="thread", workers=1,
                  progress=False, timeout=5)

    server.default = "null_content"
    pipeline.run_generation(run, retry_errors=True, **common)
    (rec,) = RunStore(run).records("generations")
    assert rec["generation_status"] == "error" and rec["generation_reason"] == "provider_error"
    assert "content is null" in rec["generation_error"]
    assert rec["api_base"] == server.base and rec["finish_reason"] is None
    assert rec["attempts"] == 4 and rec["raw_output"] == "" and rec["program"] == ""
    assert cache_files(cache) == []

    server.default = "good"
    n = len(server.requests)
    pipeline.run_generation(run, retry_errors=False, **common)  # the error record is kept as it is
    assert RunStore(run).records("generations") == [rec] and len(server.requests) == n

    pipeline.run_generation(run, retry_errors=True, **common)  # now it is retried and replaced
    (ok,) = RunStore(run).records("generations")
    assert ok["generation_status"] == "ok" and ok["generation_reason"] == "ok"
    assert ok["raw_output"] == GOOD_TEXT and ok["program"].strip() == "."
    assert ok["finish_reason"] == "stop" and ok["api_base"] == server.base and not ok["cached"]
    assert len((run / "generations.jsonl").read_text(encoding="utf-8").splitlines()) == 2
    assert len(cache_files(cache)) == 1


# --- models.yaml ---------------------------------------------------------------------------------

GOOD_REGISTRY = """\
default: a
models:
  a:
    litellm: ollama/x
    params_b: 8
  b:
    litellm: openai/y
    api_base: http://h/v1
"""

# (edit of GOOD_REGISTRY, line named, field named, words of the message)
REGISTRY_FAULTS = {
    "bad_yaml": (lambda s: s.replace("litellm: ollama/x", "litellm: [ollama/x"), 5, None, "not valid YAML"),
    "unknown_key": (lambda s: s.replace("    params_b: 8", "    api-base: http://h"), 5, "models.a.api-base", "unknown field"),
    "params_b_lots": (lambda s: s.replace("params_b: 8", "params_b: lots"), 5, "models.a.params_b", "'lots'"),
    "params_b_bool": (lambda s: s.replace("params_b: 8", "params_b: true"), 5, "models.a.params_b", "True"),
    "unknown_default": (lambda s: s.replace("default: a", "default: c"), 1, "default", "'c' is not among the models"),
    "default_list": (lambda s: s.replace("default: a", "default: [a]"), 1, "default", "a list"),
    "entry_not_mapping": (lambda s: s.replace("  b:\n    litellm: openai/y\n    api_base: http://h/v1\n",
                                              "  b: openai/y\n"), 6, "models.b", "expected a mapping"),
    "models_list": (lambda s: "default: a\nmodels:\n  - a\n", 3, "models", "a list"),
    "top_level_typo": (lambda s: s.replace("models:", "model:"), 2, "model", "unknown key"),
    "no_litellm": (lambda s: s.replace("    litellm: openai/y\n", ""), 6, "models.b.litellm", "missing"),
    "empty_litellm": (lambda s: s.replace("litellm: openai/y", "litellm: ''"), 7, "models.b.litellm", "non-empty string"),
    "embedded_text": (lambda s: s.replace("params_b: 8", "embedded: maybe"), 5, "models.a.embedded", "true or false"),
    "bad_tag": (lambda s: s.replace("params_b: 8", "params_b: !!int abc"), 5, "models.a.params_b", "not a valid value"),
    "duplicate_model": (lambda s: s + "  a:\n    litellm: ollama/z\n", 9, "models.a", "first on line 3"),
    "duplicate_field": (lambda s: s.replace("params_b: 8", "params_b: 8\n    params_b: 9"), 6, "models.a.params_b",
                        "first on line 5"),
}


@pytest.mark.parametrize("fault", sorted(REGISTRY_FAULTS))
def test_registry_faults_name_file_line_and_field(fault, tmp_path):
    edit, line, field, words = REGISTRY_FAULTS[fault]
    path = tmp_path / "models.yaml"
    path.write_text(edit(GOOD_REGISTRY), encoding="utf-8")
    for read in (load_model_registry, default_model_name):
        with pytest.raises(UserError) as info:
            read(path)
        message = str(info.value)
        assert message.startswith(f"{path}:{line}: "), message
        assert "\n" not in message and words in message, message
        if field:
            assert f"field '{field}'" in message, message


def test_good_registry_reads(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(GOOD_REGISTRY, encoding="utf-8")
    registry = load_model_registry(path)
    assert registry == {
        "a": ModelSpec(name="a", litellm="ollama/x", params_b=8.0),
        "b": ModelSpec(name="b", litellm="openai/y", api_base="http://h/v1"),
    }
    assert default_model_name(path) == "a"
    path.write_text("models:\n  a:\n    litellm: ollama/x\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"models.yaml:1: field 'default': missing"):
        default_model_name(path)


def test_missing_registry_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match=r"nope\.yaml: cannot read the model registry"):
        load_model_registry(tmp_path / "nope.yaml")


def test_unknown_model_name_is_a_user_error():
    with pytest.raises(UserError, match=r"unknown model 'qwen3-8': not in the model registry .*models\.yaml"):
        resolve_model("qwen3-8")


def test_cli_reports_a_bad_registry_on_one_line(project_copy, tmp_path):
    models_yaml = project_copy / "data" / "models.yaml"
    text = re.sub(r"^    params_b: 8\.2$", "    params_b: lots", models_yaml.read_text(encoding="utf-8"), count=1,
                  flags=re.MULTILINE)  # qwen3-8b's entry, not the example in the header comment
    models_yaml.write_text(text, encoding="utf-8")
    r = run_cli("generate", "--run", str(tmp_path / "run"), "--dsl", "jq", "--limit", "1", "--no-progress",
                env={"DSLBENCH_ROOT": str(project_copy)}, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    (line,) = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert f"{models_yaml}:" in line and "field 'models.qwen3-8b.params_b'" in line and "'lots'" in line


# --- thinking models and the protocol's cut ------------------------------------------------------

@pytest.mark.parametrize("action", ["think_inline", "think_field"])
def test_reasoning_is_kept_apart_and_the_answer_is_cut_after_its_block(action, server, spec, tmp_path):
    server.default = action
    res = generate(spec, MESSAGES, PARAMS, cache=GenerationCache(tmp_path), fences=("jq",))
    assert res.status == "ok"
    assert res.text == "```jq\n[.items[].name]\n```\n"          # the chatter after the block is cut
    assert res.finish_reason == "fence_closed" and res.provider_finish_reason == "stop"
    assert "```jq\n.items[]\n```" in res.reasoning and "<think>" not in res.text
    again = generate(spec, MESSAGES, PARAMS, cache=GenerationCache(tmp_path), fences=("jq",))
    assert again.cached and (again.text, again.reasoning, again.finish_reason) == (res.text, res.reasoning, res.finish_reason)


def test_pipeline_extracts_the_answer_not_the_reasoning(server, project_copy, tmp_path):
    add_fake_model(project_copy, server, "fake-thinker")
    server.default = "think_inline"
    run = tmp_path / "run"
    pipeline.run_generation(run, dsls=["jq"], models=["fake-thinker"], limit=1, cache_dir=tmp_path / "cache",
                            executor="thread", workers=1, progress=False, timeout=5)
    (rec,) = RunStore(run).records("generations")
    assert rec["program"] == "[.items[].name]" and rec["extraction_rule"] == "tagged-fence"
    assert "No, the task wants the names only." in rec["reasoning"]
    assert rec["finish_reason"] == "fence_closed" and rec["decoding"]
    # the request carried the DSL's budget from its golds, recorded with where it came from
    sent = server.requests[-1][1]
    assert rec["max_tokens_from"] == "gold" and sent["max_tokens"] == rec["params"]["max_tokens"] >= 512

