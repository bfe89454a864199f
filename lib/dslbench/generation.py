"""Model calls: one code path (litellm) for every provider, plus a content-addressed disk cache.

The embedded default model (see local_model.py) is reached through the same litellm call as
remote ones, so the pipeline never special-cases it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import yaml

from .paths import cache_dir, repo_root

# litellm downloads its model cost map (and a few other catalogs) at import time unless told to
# use the copies bundled in the wheel. This must run before the first `import litellm` in the
# process, so every dslbench module gets litellm from here.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

import litellm  # noqa: E402

# No "Give Feedback / Get Help" banners or debug hints on every provider error; we record errors.
litellm.suppress_debug_info = True
litellm.disable_hf_tokenizer_download = True
# Drop sampling params a provider does not accept (e.g. `seed`) instead of failing the call.
litellm.drop_params = True
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
    logging.getLogger(_name).setLevel(logging.WARNING)
# litellm's first completion builds pydantic schemas for its own TypedDicts and pydantic warns
# about their ReadOnly items: a dozen lines of noise that concern litellm, not us.
warnings.filterwarnings("ignore", message=r".*is using the `ReadOnly` qualifier", category=UserWarning)
warnings.filterwarnings("ignore", message=r".*are using the `ReadOnly` qualifier", category=UserWarning)

EMBEDDED_PROVIDER = "dslbench"
EMBEDDED_MODEL = f"{EMBEDDED_PROVIDER}/smollm2-135m-instruct"

DEFAULT_PARAMS = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 512, "seed": 0}

# Errors worth retrying: the request may succeed later. Anything else (bad request, auth, unknown
# model, ...) will fail the same way again, so it is recorded at once.
TRANSIENT_ERRORS = (
    litellm.RateLimitError,
    litellm.APIConnectionError,
    litellm.Timeout,
    litellm.ServiceUnavailableError,
    litellm.InternalServerError,
)
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


_SPEC_FIELDS = {"litellm", "api_base", "api_key_env", "params_b", "embedded", "notes"}


def load_model_registry(path: Path | None = None) -> dict[str, ModelSpec]:
    path = Path(path) if path is not None else repo_root() / "data" / "models.yaml"
    doc = _read_registry(path)
    registry = {}
    for name, entry in (doc.get("models") or {}).items():
        entry = entry or {}
        unknown = set(entry) - _SPEC_FIELDS
        if unknown:  # a typo like `api-base` would otherwise silently call the wrong server
            raise ValueError(f"{path}: model {name!r} has unknown keys {sorted(unknown)}")
        if not entry.get("litellm"):
            raise ValueError(f"{path}: model {name!r} has no `litellm` string")
        litellm_str = str(entry["litellm"])
        registry[str(name)] = ModelSpec(
            name=str(name),
            litellm=litellm_str,
            api_base=entry.get("api_base"),
            api_key_env=entry.get("api_key_env"),
            params_b=float(entry["params_b"]) if entry.get("params_b") is not None else None,
            embedded=bool(entry.get("embedded", _is_embedded(litellm_str))),
            notes=str(entry.get("notes") or ""),
        )
    default = doc.get("default")
    if default is not None and default not in registry:
        raise ValueError(f"{path}: default model {default!r} is not among the models")
    return registry


def default_model_name(path: Path | None = None) -> str:
    path = Path(path) if path is not None else repo_root() / "data" / "models.yaml"
    default = _read_registry(path).get("default")
    if not default:
        raise ValueError(f"{path}: no `default:` model")
    return str(default)


def _read_registry(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def _is_embedded(litellm_str: str) -> bool:
    return litellm_str.startswith(EMBEDDED_PROVIDER + "/")


def resolve_model(name_or_litellm_string: str, registry: dict[str, ModelSpec] | None = None) -> ModelSpec:
    """A registry name, else a raw litellm "provider/model" string."""
    if registry is None:
        registry = load_model_registry()
    if name_or_litellm_string in registry:
        return registry[name_or_litellm_string]
    if "/" in name_or_litellm_string:
        return ModelSpec(
            name=name_or_litellm_string,
            litellm=name_or_litellm_string,
            embedded=_is_embedded(name_or_litellm_string),
        )
    # Without a provider prefix it is most likely a misspelt registry name: say so, don't guess.
    raise ValueError(
        f"unknown model {name_or_litellm_string!r}: not in the registry ({', '.join(sorted(registry))}) "
        "and not a litellm 'provider/model' string"
    )


# ---------------------------------------------------------------------------------------------
# Cache


def cache_key(model: ModelSpec, params: dict, messages: list[dict], sample: int) -> str:
    """sha256 over everything that determines a generation. `params` are the merged params."""
    payload = {
        "model": model.litellm,
        "api_base": model.api_base,
        "params": params,
        "messages": messages,
        "sample": sample,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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


_register_lock = threading.Lock()


def register_embedded_provider() -> None:
    """Make `dslbench/...` model strings reach local_model. Idempotent; does not load the model."""
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


def generate(
    spec: ModelSpec,
    messages: list[dict],
    params: dict | None = None,
    sample: int = 0,
    cache: GenerationCache | None = None,
    timeout: float = 600,
    retries: int = 3,
) -> GenerationResult:
    """One completion. Never raises for provider trouble: returns status="error" instead.

    `retries` is the number of extra attempts after the first for transient errors.
    Sample k is sent with seed + k, so that samples drawn at temperature > 0 differ from each
    other yet stay reproducible; the cache key covers (params, sample).
    A cache hit replays the stored result (text, usage, duration, attempts) with cached=True.
    `timeout` applies to remote calls; the embedded model runs to max_tokens.
    """
    merged = {**DEFAULT_PARAMS, **(params or {})}
    key = cache_key(spec, merged, messages, sample)
    sent = dict(merged)
    if isinstance(sent.get("seed"), int):
        sent["seed"] += sample

    if cache is not None:
        hit = cache.get(key)
        if hit is not None and hit.get("status") == "ok":
            return GenerationResult(
                text=hit["text"],
                status="ok",
                error="",
                cached=True,
                usage=hit.get("usage", {}),
                duration_s=hit.get("duration_s", 0.0),
                attempts=hit.get("attempts", 1),
                model=spec.litellm,
                params=hit.get("params", sent),
            )

    def failed(error: str, attempts: int, t0: float) -> GenerationResult:
        return GenerationResult(
            text="",
            status="error",
            error=error,
            cached=False,
            usage={},
            duration_s=time.monotonic() - t0,
            attempts=attempts,
            model=spec.litellm,
            params=sent,
        )

    t0 = time.monotonic()
    # litellm gets a copy: providers may rewrite messages in place, and the caller's list and the
    # record stored in the cache must stay what the key was computed from.
    kwargs = {"model": spec.litellm, "messages": copy.deepcopy(messages), "timeout": timeout, **sent}
    # Retries are ours (counted, backed off); stop litellm/the OpenAI client retrying underneath.
    kwargs["num_retries"] = 0
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    if spec.api_key_env:
        api_key = os.environ.get(spec.api_key_env)
        if not api_key:
            return failed(f"MissingAPIKey: environment variable {spec.api_key_env} is not set", 0, t0)
        kwargs["api_key"] = api_key
    if spec.embedded or _is_embedded(spec.litellm):
        register_embedded_provider()

    attempts = 0
    while True:
        attempts += 1
        try:
            response = litellm.completion(**kwargs)
            break
        except TRANSIENT_ERRORS as exc:
            if attempts > retries:
                return failed(_error_text(exc), attempts, t0)
            time.sleep(_backoff(attempts))
        except Exception as exc:  # noqa: BLE001 - any provider failure is data, not a crash
            return failed(_error_text(exc), attempts, t0)

    choice = response.choices[0]
    text = choice.message.content or ""
    usage_obj = getattr(response, "usage", None)
    usage = {
        "prompt_tokens": int(getattr(usage_obj, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(usage_obj, "completion_tokens", 0) or 0),
    }
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
    )
    if cache is not None:
        # The key's inputs are stored too, so an entry can be audited or re-keyed later.
        cache.put(
            key,
            {
                "status": "ok",
                "text": text,
                "finish_reason": getattr(choice, "finish_reason", None),
                "usage": usage,
                "duration_s": result.duration_s,
                "attempts": attempts,
                "model": spec.litellm,
                "api_base": spec.api_base,
                "params": sent,
                "messages": messages,
                "sample": sample,
            },
        )
    return result
