"""The decoding protocol (lib/dslbench/decoding.py) against the previous one, on real task prompts.

Previous: max_tokens 512 for every DSL, the reply kept whole. Now: each DSL's budget from its golds,
the embedded model stops once its first block in the DSL's fence closes or the reply degenerates
into repetition. Per task both are generated with the embedded model at temperature 0 (no cache),
and the script prints:

- for replies whose block closed under the previous protocol: is the extracted program identical?
  (it must be: the claim behind the cut);
- for the rest: why the new protocol ended them (repetition, length, fence);
- calls/s and completion tokens/s of both, and the wall time per call (min/median/max).

    python benchmarks/decoding_protocol.py [--tasks 50] [--seed 0]

The sample takes tasks round-robin over the DSLs (the first, then the second task of each, ...).
"""
from __future__ import annotations

import argparse
import statistics
import time

from dslbench import decoding, toolchains
from dslbench.generation import generate, resolve_model, default_model_name
from dslbench.prompting import build_messages, extract_program
from dslbench.tasks import load_tasks

OLD_MAX_TOKENS = 512


def sample(n: int):
    tasks = load_tasks()
    order = [t for i in range(max(len(v) for v in tasks.values())) for d in sorted(tasks)
             for t in tasks[d][i:i + 1]]
    return tasks, order[:n]


def one(spec, messages, params, fences=()):
    t0 = time.perf_counter()
    res = generate(spec, messages, params, cache=None, fences=fences)
    if res.status != "ok":
        raise SystemExit(f"generation failed: {res.error}")
    return res, time.perf_counter() - t0


def spread(xs):
    return f"min {min(xs):.1f} / median {statistics.median(xs):.1f} / max {max(xs):.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=50)
    args = ap.parse_args()
    spec = resolve_model(default_model_name())
    tasks, chosen = sample(args.tasks)
    budgets = {d: decoding.token_budget(toolchains.get(d).card, [t.gold for t in ts])[0] for d, ts in tasks.items()}
    rows = []
    for task in chosen:
        tc = toolchains.get(task.dsl)
        messages = build_messages(task, tc)
        old, old_s = one(spec, messages, {"max_tokens": OLD_MAX_TOKENS})
        new, new_s = one(spec, messages, {"max_tokens": budgets[task.dsl]}, tc.fence_aliases)
        closed = decoding.fence_cut(old.text, tc.fence_aliases) is not None
        same = extract_program(old.text, tc.fence_aliases) == extract_program(new.text, tc.fence_aliases)
        rows.append(dict(task=task.id, closed=closed, same=same, old_s=old_s, new_s=new_s,
                         old_tokens=old.usage["completion_tokens"], new_tokens=new.usage["completion_tokens"],
                         finish=new.finish_reason, budget=budgets[task.dsl]))
        print(f"{task.id:18} closed={closed!s:5} same_program={same!s:5} finish={new.finish_reason:12} "
              f"tokens {rows[-1]['old_tokens']:4} -> {rows[-1]['new_tokens']:4} (budget {budgets[task.dsl]}) "
              f"{old_s:5.1f} s -> {new_s:5.1f} s", flush=True)

    closed = [r for r in rows if r["closed"]]
    print(f"\n{len(rows)} tasks over {len({r['task'].rsplit('-', 1)[0] for r in rows})} DSLs")
    print(f"replies that closed their block (previous protocol): {len(closed)}; "
          f"extracted program identical: {sum(r['same'] for r in closed)}/{len(closed)}")
    finishes = {}
    for r in rows:
        finishes[r["finish"]] = finishes.get(r["finish"], 0) + 1
    print("how the new protocol ended each reply:", ", ".join(f"{k} {v}" for k, v in sorted(finishes.items())))
    for name in ("old", "new"):
        secs = [r[f"{name}_s"] for r in rows]
        toks = sum(r[f"{name}_tokens"] for r in rows)
        print(f"{name}: {len(rows) / sum(secs):.3f} calls/s, {toks / sum(secs):.1f} completion tokens/s, "
              f"{toks} tokens; s per call {spread(secs)}")
    print(f"wall time new/old: {sum(r['new_s'] for r in rows) / sum(r['old_s'] for r in rows):.2f}")
    if any(not r["same"] for r in closed):
        raise SystemExit("a reply that closed its block extracted to a different program")


if __name__ == "__main__":
    main()
