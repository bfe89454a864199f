"""Throughput of the embedded model through litellm (dslbench.generation.generate) versus
llama-cpp-python called directly on the same Llama object with the same settings.

The difference is litellm's per-call overhead. Both paths reset the Llama before each call and
decode greedily, so they must produce the same text; the script checks that too.

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


def run_direct(llm, messages, max_tokens):
    t0 = time.perf_counter()
    # Same call local_model.chat makes, inlined so that no dslbench code is on this path.
    llm.reset()
    out = llm.create_chat_completion(
        messages=messages,
        temperature=0.0,
        top_p=1.0,
        max_tokens=max_tokens,
        seed=0,
        top_k=0,
        min_p=0.0,
        repeat_penalty=1.0,
    )
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
    llm = local_model.get_llama()  # load once, outside the timings
    print(f"model      {spec.litellm}  ({local_model.gguf_path().name}, n_ctx={llm.n_ctx()})")
    print(f"prompts    {len(prompts)}   max_tokens {args.max_tokens}   repeats {args.repeats}   temperature 0")

    # Warm-up: first calls pay for litellm's lazy imports and llama.cpp's buffer allocation.
    for messages in ([{"role": "user", "content": prompts[0]}],):
        run_litellm(spec, messages, 8)
        run_direct(llm, messages, 8)

    rates = {"litellm": [], "direct": []}
    mismatches = 0
    for _ in range(args.repeats):
        # Alternate the paths prompt by prompt so that drift in machine load hits both alike.
        tokens = {"litellm": 0, "direct": 0}
        seconds = {"litellm": 0.0, "direct": 0.0}
        for prompt in prompts:
            messages = [{"role": "user", "content": prompt}]
            text_l, n_l, s_l = run_litellm(spec, messages, args.max_tokens)
            text_d, n_d, s_d = run_direct(llm, messages, args.max_tokens)
            mismatches += text_l != text_d
            tokens["litellm"] += n_l
            tokens["direct"] += n_d
            seconds["litellm"] += s_l
            seconds["direct"] += s_d
        for path in rates:
            rates[path].append(tokens[path] / seconds[path])

    print()
    print(f"{'path':<10} {'tokens/s (median)':>18} {'min':>8} {'max':>8}")
    for path, values in rates.items():
        print(f"{path:<10} {statistics.median(values):>18.1f} {min(values):>8.1f} {max(values):>8.1f}")
    ratio = statistics.median(rates["litellm"]) / statistics.median(rates["direct"])
    print(f"\nratio litellm/direct: {ratio:.3f}  (litellm overhead {100 * (1 - ratio):.1f}%)")
    print(f"identical text on both paths: {'yes' if mismatches == 0 else f'NO ({mismatches} differ)'}")


if __name__ == "__main__":
    main()
