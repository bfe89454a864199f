"""Throughput of the embedded model through litellm (dslbench.generation.generate) versus
llama.cpp's server (xllamacpp) called directly on the same in-process server with the same settings.

The difference is litellm's per-call overhead. Both paths evaluate the prompt from scratch (no prompt
cache) and decode greedily, so they must produce the same text; the script checks that too.

    python benchmarks/generation_throughput.py [--prompts 4] [--max-tokens 128] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from dslbench import local_model
from dslbench.generation import generate, resolve_model

PROMPTS = [
    "Write a SQL query that returns the ten most recent orders with their customer names.",
    "Write a regular expression that matches ISO 8601 dates such as 2024-03-15.",
    "Write a jq filter that selects the names of all users older than 30 from a JSON array.",
    "Write a Makefile with targets build, test and clean for a small C project.",
    "Write a GraphQL query that fetches a repository's last five issues and their authors.",
    "Write a Dockerfile for a Python 3.11 web app that installs requirements.txt.",
]


def run_litellm(spec, messages, max_tokens):
    t0 = time.perf_counter()
    result = generate(spec, messages, {"temperature": 0.0, "max_tokens": max_tokens}, cache=None)
    elapsed = time.perf_counter() - t0
    if result.status != "ok":
        raise SystemExit(f"litellm path failed: {result.error}")
    return result.text, result.usage["completion_tokens"], elapsed


def run_direct(server, messages, max_tokens):
    t0 = time.perf_counter()
    # Same request local_model.chat sends, inlined so that no dslbench code is on this path.
    out = server.handle_chat_completions({
        "messages": messages, "temperature": 0.0, "top_p": 1.0, "max_tokens": max_tokens, "seed": 0,
        "top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0, "cache_prompt": False,
    })
    elapsed = time.perf_counter() - t0
    return out["choices"][0]["message"]["content"] or "", out["usage"]["completion_tokens"], elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=4, help=f"number of fixed prompts (max {len(PROMPTS)})")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds over all prompts per path")
    args = parser.parse_args()

    prompts = PROMPTS[: max(1, min(args.prompts, len(PROMPTS)))]
    spec = resolve_model("smollm2-135m")
    llm = local_model.get_server()  # load once, outside the timings
    print(f"model      {spec.litellm}  ({local_model.gguf_path().name}, n_ctx={local_model.N_CTX})")
    print(f"prompts    {len(prompts)}   max_tokens {args.max_tokens}   repeats {args.repeats}   temperature 0")

    # Warm-up: first calls pay for litellm's lazy imports and llama.cpp's buffer allocation.
    for messages in ([{"role": "user", "content": prompts[0]}],):
        run_litellm(spec, messages, 8)
        run_direct(llm, messages, 8)

    # times[path][prompt] = seconds of each repeat; tokens[path][prompt] = completion tokens.
    times = {"litellm": [[] for _ in prompts], "direct": [[] for _ in prompts]}
    tokens = {"litellm": [0] * len(prompts), "direct": [0] * len(prompts)}
    mismatches = 0
    for _ in range(args.repeats):
        # Alternate the paths call by call so that drift in machine load hits both alike.
        for i, prompt in enumerate(prompts):
            messages = [{"role": "user", "content": prompt}]
            text_l, tokens["litellm"][i], s_l = run_litellm(spec, messages, args.max_tokens)
            text_d, tokens["direct"][i], s_d = run_direct(llm, messages, args.max_tokens)
            times["litellm"][i].append(s_l)
            times["direct"][i].append(s_d)
            mismatches += text_l != text_d

    # "best" uses each prompt's fastest repeat: on a shared machine other processes only ever
    # slow a call down, so the minimum is the least disturbed measurement.
    def rate(path, pick):
        return sum(tokens[path]) / sum(pick(t) for t in times[path])

    print()
    print(f"{'path':<10} {'tokens/s best':>14} {'tokens/s median':>16} {'tokens/call':>12}")
    for path in times:
        per_call = sum(tokens[path]) / len(prompts)
        print(f"{path:<10} {rate(path, min):>14.1f} {rate(path, statistics.median):>16.1f} {per_call:>12.1f}")
    ratio_best = rate("litellm", min) / rate("direct", min)
    ratio_median = rate("litellm", statistics.median) / rate("direct", statistics.median)
    overhead_ms = 1000 * statistics.median(
        min(tl) - min(td) for tl, td in zip(times["litellm"], times["direct"])
    )
    print(f"\nratio litellm/direct: {ratio_best:.3f} (best)   {ratio_median:.3f} (median)")
    print(f"litellm overhead per call (best times, median over prompts): {overhead_ms:.1f} ms")
    print(f"identical text on both paths: {'yes' if mismatches == 0 else f'NO ({mismatches} calls differ)'}")


if __name__ == "__main__":
    main()
