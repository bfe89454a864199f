"""The embedded model serving several requests at once: faster, and are the replies the same?

    .venv/bin/python benchmarks/parallel_slots.py [--prompts 32] [--slots 4 8] [--max-tokens 256] [--repeats 3]

llama.cpp can decode several sequences in one batch (`n_parallel` slots). The embedded model runs
with one slot (local_model.model_params), because a reply at temperature 0 must not depend on what
else was being decoded. This script measures what more slots would give: for each slot count N it
starts the embedded model's server with N slots, sends the same prompts (the reference run's, round-
robin over the DSLs, temperature 0, a fixed token cap, no stop rule) from N threads at once and prints
calls/s, completion tokens/s, the speed-up over one slot, and how many replies are identical to those
of the very first one-slot pass. Each repeat runs one slot first, then every N: a speed-up is paired
with its own repeat's one-slot pass, and the one-slot passes of the repeats show a sequential rerun's
own spread. The summary gives min / median / max over the repeats. Model loading is not timed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dslbench import local_model

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "generations.jsonl.gz"


def prompts(n: int) -> list[list[dict]]:
    by_dsl = defaultdict(list)
    with gzip.open(REFERENCE, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["generation_status"] == "ok":
                by_dsl[record["dsl"]].append(record["messages"])
    order = [m for i in range(max(map(len, by_dsl.values()))) for d in sorted(by_dsl) for m in by_dsl[d][i:i + 1]]
    return order[:n]


def serve(slots: int, requests: list[dict]) -> tuple[list[str], float, int]:
    """(replies, seconds, completion tokens) of all requests sent from `slots` threads to a server with
    that many slots, each slot with the context one slot has by default."""
    import xllamacpp
    params = local_model.model_params()
    params.n_parallel = slots
    params.n_ctx = local_model.N_CTX * slots
    server = xllamacpp.Server(params)
    server.handle_chat_completions({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    t0 = time.perf_counter()
    with ThreadPoolExecutor(slots) as pool:
        outs = list(pool.map(server.handle_chat_completions, requests))
    seconds = time.perf_counter() - t0
    for out in outs:
        local_model._raise_if_error(out)
    del server
    return ([o["choices"][0]["message"]["content"] for o in outs], seconds,
            sum(o["usage"]["completion_tokens"] for o in outs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--slots", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    requests = [{"messages": m, "max_tokens": args.max_tokens, "temperature": 0, "seed": 0,
                 **local_model.OPENAI_SAMPLING, "cache_prompt": False} for m in prompts(args.prompts)]
    print(f"{len(requests)} prompts, up to {args.max_tokens} tokens each, temperature 0, {args.repeats} repeat(s)")
    print(f"{'repeat':>6} {'slots':>5} {'seconds':>8} {'calls/s':>8} {'tokens/s':>9} {'vs 1 slot':>9} "
          f"{'same replies as the first 1-slot pass':>38}")
    first = None
    rows = defaultdict(list)      # slots -> (tokens/s, speed-up, same replies) per repeat
    order = [1] + [n for n in args.slots if n != 1]
    for repeat in range(1, args.repeats + 1):
        base = None
        for slots in order:       # one slot first: this repeat's baseline
            replies, seconds, tokens = serve(slots, requests)
            first = first or replies
            base = base or tokens / seconds
            same = sum(a == b for a, b in zip(first, replies))
            rows[slots].append((tokens / seconds, tokens / seconds / base, same))
            print(f"{repeat:>6} {slots:>5} {seconds:8.1f} {len(requests) / seconds:8.3f} {tokens / seconds:9.1f} "
                  f"{tokens / seconds / base:8.2f}x {same:>30} of {len(requests)}", flush=True)
    print("\nmin / median / max over the repeats")
    print(f"{'slots':>5} {'tokens/s':>20} {'vs 1 slot, paired':>20} {'same replies (fewest)':>22}")
    for slots in order:
        rates, ups, same = zip(*rows[slots])
        print(f"{slots:>5} {_spread(rates, '.1f'):>20} {_spread(ups, '.2f'):>20} {min(same):>13} of {len(requests)}")


def _spread(values, fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in (min(values), statistics.median(values), max(values)))


if __name__ == "__main__":
    main()
