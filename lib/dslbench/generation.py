"""Model calls: one code path (litellm) for every provider, plus a content-addressed disk cache.

The embedded default model (see local_model.py) is reached through the same litellm call as
remote ones, so the pipeline never special-cases it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from . import decoding
from .errors import UserError
from .paths import cache_dir, repo_root

# litellm downloads its model cost map (and a few other catalogs) at import time unless told to
# use the copies bundled in the wheel. This must run before the first `import litellm` in the
# process, so every dslbench module gets litellm from here (`litellm_module()`).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


@functools.lru_cache(maxsize=1)
def litellm_module():
    """litellm, imported and set up on first use: its import takes seconds, and a run whose replies are
    all in the cache (a rerun) never calls a model."""
    import litellm

    # No "Give Feedback / Get Help" banners or debug hints on every provider error; we record errors.
    litellm.suppress_debug_info = True
    litellm.disable_hf_tokenizer_download = True
    # Drop sampling params a provider does not accept (e.g. `seed`) instead of failing the call.
    litellm.drop_params = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # litellm's first completion builds pydantic schemas for its own TypedDicts and pydantic warns
    # about their ReadOnly items: a dozen lines of noise that concern litellm, not us.
    warnings.filterwarnings("ignore", message=r".*is using the `ReadOnly` qualifier", category=UserWarning)
    warnings.filterwarnings("ignore", message=r".*are using the `ReadOnly` qualifier", category=UserWarning)
    return litellm


EMBEDDED_PROVIDER = "dslbench"
EMBEDDED_MODEL = f"{EMBEDDED_PROVIDER}/smollm2-135m-instruct"

DEFAULT_PARAMS = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 512, "seed": 0}



def transient_errors() -> tuple[type[BaseException], ...]:
    """Errors worth retrying: the request may succeed later. Anything else (bad request, auth, unknown
    model, ...) will fail the same way again, so it is recorded at once."""
    litellm = litellm_module()
    return (litellm.RateLimitError, litellm.APIConnectionError, litellm.Timeout,
            litellm.ServiceUnavailableError, litellm.InternalServerError)


BACKOFF_BASE_S = 0.5  # first wait; doubles each retry
BACKOFF_MAX_S = 30.0
MAX_ERROR_CHARS = 2000  # provider errors can embed whole responses


# ---------------------------------------------------------------------------------------------
# Model registry


@dataclass(frozen=True)
class ModelSpec:
    name: str  # registry key or the raw litellm string
    litellm: str  # litellm model string, e.g. "hosted_vllm/Qwen/Qwen3-8B"
    api_base: str | None = None
    api_key_env: str | None = None  # name of the env var holding the key; keys are never stored
    params_b: float | None = None  # parameter count in billions
    embedded: bool = False
    notes: str = ""


_SPEC_FIELDS = ("litellm", "api_base", "api_key_env", "params_b", "embedded", "notes")
_TOP_FIELDS = ("default", "models")


def _registry_path(path: Path | None) -> Path:
    return Path(path) if path is not None else repo_root() / "data" / "models.yaml"


def load_model_registry(path: Path | None = None) -> dict[str, ModelSpec]:
    """The models of data/models.yaml (or `path`). A bad file raises UserError naming file, line and field."""
    return _load_registry(_registry_path(path))[0]


def default_model_name(path: Path | None = None) -> str:
    path = _registry_path(path)
    default = _load_registry(path)[1]
    if not default:
        raise UserError(f"{path}:1: field 'default': missing; name the model to use when none is given")
    return default


class _Registry:
    """Reads models.yaml from its composed node tree, so every complaint can name its line."""

    def __init__(self, path: Path):
        self.path = path
        self._loader = yaml.SafeLoader("")  # only used to turn scalar nodes into Python values

    def fail(self, node: yaml.Node, field: str, message: str):
        raise UserError(f"{self.path}:{node.start_mark.line + 1}: field '{field}': {message}")

    def mapping(self, node: yaml.Node, field: str, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """{key: (key node, value node)} of a mapping node; duplicate keys are an error (yaml keeps the last)."""
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, field, f"expected {what}, got {_node_kind(node)}")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.fail(key_node, field, f"keys must be plain names, got {_node_kind(key_node)}")
            key = str(key_node.value)
            sub = f"{field}.{key}" if field else key
            if key in out:
                first = out[key][0].start_mark.line + 1
                self.fail(key_node, sub, f"duplicate key (first on line {first}); keep one of them")
            out[key] = (key_node, value_node)
        return out

    def scalar(self, node: yaml.Node, field: str):
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, field, f"expected a single value, got {_node_kind(node)}")
        try:
            return self._loader.construct_object(node)
        except (yaml.YAMLError, ValueError) as e:  # e.g. an explicit tag that does not fit the value (`!!int abc`)
            self.fail(node, field, f"not a valid value: {getattr(e, 'problem', None) or e}")

    def text(self, node: yaml.Node, field: str, optional: bool = True) -> str | None:
        value = self.scalar(node, field)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(node, field, f"expected a non-empty string, got {value!r}")
        return value

    def read(self) -> tuple[dict[str, ModelSpec], str | None]:
        try:
            with open(self.path, encoding="utf-8") as f:
                root = yaml.compose(f, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as e:
            line = e.problem_mark.line + 1 if e.problem_mark else 1
            raise UserError(f"{self.path}:{line}: not valid YAML: {e.problem}") from None
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise UserError(f"{self.path}: not a readable YAML file: {e}") from None
        except OSError as e:  # missing file, e.g. DSLBENCH_ROOT pointing at the wrong folder
            raise UserError(f"{self.path}: cannot read the model registry: {e.strerror}") from None
        if root is None:
            return {}, None
        top = self.mapping(root, "", "a mapping with `default:` and `models:`")
        for key, (key_node, _) in top.items():
            if key not in _TOP_FIELDS:
                self.fail(key_node, key, f"unknown key (known: {', '.join(_TOP_FIELDS)})")
        registry = {}
        if "models" in top and not _is_null(top["models"][1]):
            for name, (name_node, entry_node) in self.mapping(top["models"][1], "models", "a mapping of models").items():
                registry[name] = self.model(name, name_node, entry_node)
        default = None
        if "default" in top:
            node = top["default"][1]
            default = self.text(node, "default")
            if default is not None and default not in registry:
                self.fail(node, "default", f"{default!r} is not among the models ({', '.join(sorted(registry))})")
        return registry, default

    def model(self, name: str, name_node: yaml.Node, node: yaml.Node) -> ModelSpec:
        field = f"models.{name}"
        fields = {} if _is_null(node) else self.mapping(node, field, f"a mapping of fields ({', '.join(_SPEC_FIELDS)})")
        for key, (key_node, _) in fields.items():
            if key not in _SPEC_FIELDS:  # a typo like `api-base` would otherwise silently call the wrong server
                self.fail(key_node, f"{field}.{key}", f"unknown field (known: {', '.join(_SPEC_FIELDS)})")
        if "litellm" not in fields:
            self.fail(name_node, f"{field}.litellm", "missing; give the litellm 'provider/model' string")
        values = {}
        for key, (_, value_node) in fields.items():
            sub = f"{field}.{key}"
            if key in ("litellm", "api_base", "api_key_env"):
                values[key] = self.text(value_node, sub, optional=key != "litellm")
            elif key == "params_b":
                value = self.scalar(value_node, sub)
                if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                    self.fail(value_node, sub, f"expected a positive number of billions of parameters, got {value!r}")
                values[key] = float(value) if value is not None else None
            elif key == "embedded":
                value = self.scalar(value_node, sub)
                if not isinstance(value, bool):
                    self.fail(value_node, sub, f"expected true or false, got {value!r}")
                values[key] = value
            else:  # notes: free text
                value = self.scalar(value_node, sub)
                values[key] = "" if value is None else str(value)
        values.setdefault("embedded", _is_embedded(values["litellm"]))
        return ModelSpec(name=name, **values)


def _node_kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"the value {node.value!r}"


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _load_registry(path: Path) -> tuple[dict[str, ModelSpec], str | None]:
    return _Registry(path).read()


def _is_embedded(litellm_str: str) -> bool:
    return litellm_str.startswith(EMBEDDED_PROVIDER + "/")


def resolve_model(name_or_litellm_string: str, registry: dict[str, ModelSpec] | None = None,
                  api_base: str | None = None, api_key_env: str | None = None) -> ModelSpec:
    """A registry name, else a raw litellm "provider/model" string; `api_base` / `api_key_env` (the
    command line's --api-base / --api-key-env) point a served model at another server."""
    where = ""
    if registry is None:
        registry = load_model_registry()
        where = f" {_registry_path(None)}"
    if name_or_litellm_string in registry:
        spec = registry[name_or_litellm_string]
    elif "/" in name_or_litellm_string:
        spec = ModelSpec(
            name=name_or_litellm_string,
            litellm=name_or_litellm_string,
            embedded=_is_embedded(name_or_litellm_string),
        )
    else:
        spec = None
    if spec is not None:
        if (api_base or api_key_env) and spec.embedded:
            raise UserError(f"model {spec.name!r} is the embedded model (no server): --api-base / --api-key-env "
                            "do not apply to it; serve it with `dslbench serve` and use openai/<alias>")
        if api_base:
            if not re.match(r"^https?://[^\s/]+", api_base):
                raise UserError(f"option --api-base: expected an http(s) URL such as http://127.0.0.1:8000/v1, "
                                f"got {api_base!r}")
            spec = replace(spec, api_base=api_base.rstrip("/"))
        if api_key_env:
            spec = replace(spec, api_key_env=api_key_env)
        return spec
    # Without a provider prefix it is most likely a misspelt registry name: say so, don't guess.
    raise UserError(
        f"unknown model {name_or_litellm_string!r}: not in the model registry{where} "
        f"({', '.join(sorted(registry))}) and not a litellm 'provider/model' string"
    )


# Where litellm sends an openai-compatible call that has no api_base (its own lookup order).
_ENV_API_BASES = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "text-completion-openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE",),
}


def effective_api_base(spec: ModelSpec) -> str | None:
    """The server a call goes to when it is not the provider's fixed default: spec, else environment."""
    if spec.api_base:
        return spec.api_base
    provider = spec.litellm.split("/", 1)[0]
    for var in _ENV_API_BASES.get(provider, ()):
        if os.environ.get(var):
            return os.environ[var]
    return None


# ---------------------------------------------------------------------------------------------
# Cache


def cache_key(model: ModelSpec, params: dict, messages: list[dict], sample: int) -> str:
    """sha256 over everything that determines a generation. `params` are the merged params."""
    payload = {
        "model": model.litellm,
        "api_base": effective_api_base(model),  # switching servers must not replay the other's answers
        "params": params,
        "messages": messages,
        "sample": sample,
    }
    if model.embedded or _is_embedded(model.litellm):
        # another llama.cpp build gives other greedy replies on some prompts: never replay its answers
        payload["runtime"] = embedded_runtime()
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def embedded_runtime() -> str:
    """The binding that runs the embedded model, with its version (it pins llama.cpp's own)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return f"xllamacpp=={version('xllamacpp')}"
    except PackageNotFoundError:
        return "xllamacpp (not installed)"


_KEY_RE = re.compile(r"^[0-9a-f]{64}$")


class GenerationCache:
    """One JSON file per key: root/<k[:2]>/<k>.json. Safe to share between processes."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        if not _KEY_RE.match(key):  # keys become file names: refuse anything but a sha256 hex
            raise ValueError(f"bad cache key {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            with open(self._path(key), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # unreadable entry (e.g. disk trouble): regenerate rather than crash

    def put(self, key: str, value: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write a temp file in the same directory, then rename over the target: os.replace is
        # atomic, so a reader or a killed run sees either no entry or a complete one.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False, sort_keys=True, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()


def default_cache_dir() -> Path:
    return cache_dir("generations", "DSLBENCH_CACHE")


# ---------------------------------------------------------------------------------------------
# Generation


@dataclass
class GenerationResult:
    text: str
    status: str  # "ok" or "error"; an error is a failed call, never a verdict on the model
    error: str  # "" when ok; else "<ExceptionClass>: <message>"
    cached: bool
    usage: dict  # prompt_tokens, completion_tokens
    duration_s: float
    attempts: int
    model: str  # litellm string
    params: dict
    reason: str = "ok"  # "ok" or "provider_error"
    finish_reason: str | None = None  # as the provider reported it ("stop", "length", ...)
    api_base: str | None = None  # the endpoint called (effective_api_base), None for a provider's default
    reasoning: str = ""  # a thinking model's reasoning, kept apart from the answer (decoding.split_reasoning)
    provider_finish_reason: str | None = None  # finish_reason before the protocol cut the reply


class MalformedReply(Exception):
    """The provider answered, but not with a usable completion (no choices, null or invalid text)."""


_register_lock = threading.Lock()


def register_embedded_provider() -> None:
    """Make `dslbench/...` model strings reach local_model. Idempotent; does not load the model."""
    litellm = litellm_module()
    with _register_lock:
        if any(item.get("provider") == EMBEDDED_PROVIDER for item in litellm.custom_provider_map):
            return
        from . import local_model  # imported late: it needs this module's litellm set-up

        litellm.custom_provider_map = [
            *litellm.custom_provider_map,
            {"provider": EMBEDDED_PROVIDER, "custom_handler": local_model.EmbeddedLLM()},
        ]


def _backoff(attempt: int) -> float:
    return min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_MAX_S)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _is_text(value) -> bool:
    """A str that can be written as UTF-8: no lone surrogates (a JSON "\\ud800" escape decodes to one)."""
    return isinstance(value, str) and _SURROGATE_RE.search(value) is None


def _tokens(usage_obj, name: str) -> int:
    value = getattr(usage_obj, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _read_reply(response) -> tuple[str, str | None, dict, str]:
    """(text, finish_reason, usage, reasoning content) of a completion, or MalformedReply.

    Null content is an error, not an empty answer: the model said nothing we could judge. Text with a
    lone surrogate is not valid Unicode; repairing it would record text the model never produced.
    """
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise MalformedReply("the reply has no choices")
    choice = choices[0]
    finish = getattr(choice, "finish_reason", None)
    finish = None if finish is None else str(finish)
    text = getattr(getattr(choice, "message", None), "content", None)
    if text is None:
        raise MalformedReply(f"the reply's message content is null (finish_reason={finish!r})")
    if not isinstance(text, str):
        raise MalformedReply(f"the reply's message content is a {type(text).__name__}, not text")
    bad = _SURROGATE_RE.search(text)
    if bad:
        raise MalformedReply(
            f"the reply's text is not valid Unicode: lone surrogate U+{ord(bad.group()):04X} at position {bad.start()}"
        )
    usage_obj = getattr(response, "usage", None)
    usage = {"prompt_tokens": _tokens(usage_obj, "prompt_tokens"), "completion_tokens": _tokens(usage_obj, "completion_tokens")}
    # litellm puts a provider's separate reasoning (DeepSeek-R1, Qwen3 on vLLM, ...) here
    reasoning = getattr(getattr(choice, "message", None), "reasoning_content", None)
    return text, finish, usage, reasoning if _is_text(reasoning) else ""


def _cut(text: str, finish: str | None, fences: tuple[str, ...]) -> tuple[str, str | None]:
    """The answer as the protocol ends it; finish_reason says so when the protocol ended it."""
    cut, why = decoding.cut_reply(text, fences)
    return cut, (why if why and (cut != text or finish in (None, why)) else finish)


def _good_entry(hit) -> bool:
    """A cache entry that is a good reply; anything else (an old error, bad text) is ignored."""
    return (
        isinstance(hit, dict)
        and hit.get("status") == "ok"
        and _is_text(hit.get("text"))
        and isinstance(hit.get("usage", {}), dict)
    )


def _sent_params(merged: dict, sample: int) -> dict:
    sent = dict(merged)
    if isinstance(sent.get("seed"), int):
        sent["seed"] += sample
    return sent


def cached(spec: ModelSpec, messages: list[dict], params: dict | None, sample: int,
           cache: GenerationCache | None, fences: tuple[str, ...] = ()) -> GenerationResult | None:
    """The result `generate` would replay from the cache for this call, or None (no good entry)."""
    if cache is None:
        return None
    merged = {**DEFAULT_PARAMS, **(params or {})}
    hit = cache.get(cache_key(spec, merged, messages, sample))
    if not _good_entry(hit):
        return None
    text, finish = hit["text"], hit.get("finish_reason")
    if fences and hit.get("cut") != decoding.PROTOCOL:   # an entry from before the cut
        text, finish = _cut(text, finish, fences)
    return GenerationResult(
        text=text,
        status="ok",
        error="",
        cached=True,
        usage=hit.get("usage", {}),
        duration_s=hit.get("duration_s", 0.0),
        attempts=hit.get("attempts", 1),
        model=spec.litellm,
        params=hit.get("params", _sent_params(merged, sample)),
        finish_reason=finish,
        api_base=effective_api_base(spec),
        reasoning=hit.get("reasoning", ""),
        provider_finish_reason=hit.get("provider_finish_reason", hit.get("finish_reason")),
    )


def generate(
    spec: ModelSpec,
    messages: list[dict],
    params: dict | None = None,
    sample: int = 0,
    cache: GenerationCache | None = None,
    timeout: float = 180,
    retries: int = 3,
    fences: tuple[str, ...] = (),
) -> GenerationResult:
    """One completion. Never raises for provider trouble: returns status="error",
    reason="provider_error" and what happened in `error` instead.

    `timeout` (seconds) is one deadline for the whole call: every attempt and every backoff wait.
    Each attempt gets what is left as its litellm timeout; once it is spent the call is an error.
    `retries` is the number of extra attempts after the first, for transient errors (rate limits,
    5xx, connection errors, timeouts) and for malformed replies (no choices, null content, invalid
    text), which a server under stress also produces only now and then. Other errors (bad request,
    auth, unknown model) would fail the same way again: they are returned at once.
    Sample k is sent with seed + k, so that samples drawn at temperature > 0 differ from each
    other yet stay reproducible; the cache key covers (params, sample) and the endpoint.
    Only good replies are cached; a cache hit replays the stored result with cached=True.
    The embedded model ignores the per-attempt timeout (it runs to max_tokens).
    `fences` (the DSL's fence names) turns on the protocol's cut (decoding.cut_reply): the answer ends
    after its first block in the DSL's fence closes or where it degenerates into repetition; the
    embedded model stops generating there. Reasoning is split off first (decoding.split_reasoning).
    """
    hit = cached(spec, messages, params, sample, cache, fences)
    if hit is not None:
        return hit
    merged = {**DEFAULT_PARAMS, **(params or {})}
    api_base = effective_api_base(spec)
    key = cache_key(spec, merged, messages, sample)
    sent = _sent_params(merged, sample)

    t0 = time.monotonic()
    deadline = t0 + timeout

    def failed(error: str, attempts: int) -> GenerationResult:
        return GenerationResult(
            text="",
            status="error",
            error=error[:MAX_ERROR_CHARS],
            cached=False,
            usage={},
            duration_s=time.monotonic() - t0,
            attempts=attempts,
            model=spec.litellm,
            params=sent,
            reason="provider_error",
            api_base=api_base,
        )

    def out_of_time(attempts: int, last: str) -> GenerationResult:
        return failed(f"DeadlineExceeded: no good reply within the {timeout:g} s deadline after "
                      f"{attempts} attempt(s); last error: {last or 'none'}", attempts)

    # litellm gets a copy: providers may rewrite messages in place, and the caller's list and the
    # record stored in the cache must stay what the key was computed from.
    kwargs = {"model": spec.litellm, "messages": copy.deepcopy(messages), **sent}
    # Retries are ours (counted, backed off); stop litellm/the OpenAI client retrying underneath.
    kwargs["num_retries"] = 0
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
        # a named server gets only the key named for it: never the environment's OPENAI_API_KEY, which
        # is meant for another server (local servers accept any key, the OpenAI client insists on one)
        kwargs["api_key"] = "none"
    if spec.api_key_env:
        api_key = os.environ.get(spec.api_key_env)
        if not api_key:
            return failed(f"MissingAPIKey: environment variable {spec.api_key_env} is not set", 0)
        kwargs["api_key"] = api_key
    if spec.embedded or _is_embedded(spec.litellm):
        register_embedded_provider()

    attempts, last = 0, ""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return out_of_time(attempts, last)
        attempts += 1
        try:
            token = decoding.STREAM_FENCES.set(fences or None)   # the embedded model stops at the cut
            try:
                response = litellm_module().completion(**kwargs, timeout=left)
            finally:
                decoding.STREAM_FENCES.reset(token)
            text, provider_finish, usage, reasoning = _read_reply(response)
            answer, reasoning = decoding.split_reasoning(text, reasoning)
            text, finish_reason = _cut(answer, provider_finish, fences) if fences else (answer, provider_finish)
            break
        except (*transient_errors(), MalformedReply) as exc:
            last = _error_text(exc)
            if attempts > retries:
                return failed(last, attempts)
            wait = _backoff(attempts)
            if deadline - time.monotonic() <= wait:  # no time left for another attempt after the wait
                return out_of_time(attempts, last)
            time.sleep(wait)
        except Exception as exc:  # noqa: BLE001 - any provider failure is data, not a crash
            return failed(_error_text(exc), attempts)

    result = GenerationResult(
        text=text,
        status="ok",
        error="",
        cached=False,
        usage=usage,
        duration_s=time.monotonic() - t0,
        attempts=attempts,
        model=spec.litellm,
        params=sent,
        finish_reason=finish_reason,
        api_base=api_base,
        reasoning=reasoning,
        provider_finish_reason=provider_finish,
    )
    if cache is not None:  # only good replies reach this point
        # The key's inputs are stored too, so an entry can be audited or re-keyed later.
        cache.put(
            key,
            {
                "status": "ok",
                "text": text,
                "finish_reason": finish_reason,
                "provider_finish_reason": provider_finish,
                "reasoning": reasoning,
                "cut": decoding.PROTOCOL if fences else None,
                "usage": usage,
                "duration_s": result.duration_s,
                "attempts": attempts,
                "model": spec.litellm,
                "api_base": api_base,
                "params": sent,
                "messages": messages,
                "sample": sample,
            },
        )
    return result
