"""The decoding protocol (lib/dslbench/decoding.py) against the previous one, on real task prompts.

Previous: max_tokens 512 for every DSL, the reply kept whole. Now: each DSL's budget from its golds,
the embedded model stops once its first block in the DSL's fence closes or the reply degenerates
into repetition. Per task both are generated with the embedded model at temperature 0 (no cache),
and the script prints:

- for replies whose block closed under the previous protocol: is the extracted program identical?
  (it must be: the claim behind the cut);
- for every reply: is one protocol's text a prefix of the other's (the protocol only ends a greedy
  reply at another place, never changes its text), and does the previous reply, cut offline by the
  protocol's rule (decoding.cut_reply), give the new reply's program (the cut the model stopped at
  is the cut the rule makes);
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
        # closed: the block's closing line is there, also as the reply's very last line (fence_cut finds
        # only a closing line followed by more text, as it tells the streaming model where to stop)
        closed = decoding.fence_cut(old.text + "\n", tc.fence_aliases) is not None
        same = extract_program(old.text, tc.fence_aliases) == extract_program(new.text, tc.fence_aliases)
        prefix = old.text.startswith(new.text) or new.text.startswith(old.text)
        offline = decoding.cut_reply(old.text, tc.fence_aliases)[0]
        # the offline cut can only be compared where the previous reply reached the new one's end
        same_cut = (extract_program(offline, tc.fence_aliases) == extract_program(new.text, tc.fence_aliases)
                    if len(old.text) >= len(new.text) and new.finish_reason != "length" else None)
        rows.append(dict(task=task.id, closed=closed, same=same, prefix=prefix, same_cut=same_cut, old_s=old_s, new_s=new_s,
                         old_tokens=old.usage["completion_tokens"], new_tokens=new.usage["completion_tokens"],
                         finish=new.finish_reason, budget=budgets[task.dsl]))
        print(f"{task.id:18} closed={closed!s:5} same_program={same!s:5} prefix={prefix!s:5} offline_cut_same={same_cut!s:5} "
              f"finish={new.finish_reason:12} "
              f"tokens {rows[-1]['old_tokens']:4} -> {rows[-1]['new_tokens']:4} (budget {budgets[task.dsl]}) "
              f"{old_s:5.1f} s -> {new_s:5.1f} s", flush=True)

    closed = [r for r in rows if r["closed"]]
    print(f"\n{len(rows)} tasks over {len({r['task'].rsplit('-', 1)[0] for r in rows})} DSLs")
    print(f"replies that closed their block (previous protocol): {len(closed)}; "
          f"extracted program identical: {sum(r['same'] for r in closed)}/{len(closed)}")
    print(f"one reply's text a prefix of the other's: {sum(r['prefix'] for r in rows)}/{len(rows)}")
    cut = [r for r in rows if r["same_cut"] is not None]
    print(f"previous reply cut offline by the rule gives the new program: {sum(r['same_cut'] for r in cut)}/{len(cut)} "
          f"(the others: the new reply ran to its budget, or past the previous one's 512 tokens)")
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
    if any(not r["same"] for r in closed) or not all(r["prefix"] for r in rows) or not all(r["same_cut"] for r in cut):
        raise SystemExit("the protocol changed a reply's text or program beyond ending it")


if __name__ == "__main__":
    main()
