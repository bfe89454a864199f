"""The embedded model's binding against the reference run: same replies, and how fast.

The reference run (reference/generations.jsonl.gz) was generated with llama-cpp-python 0.3.36. The
embedded model now runs on xllamacpp. This script replays a sample of the reference's generation
records with the embedded model as installed (same messages, params and fences, no cache, temperature
0) and prints:

- how many replies are identical to the reference's text, and how many extracted programs are;
- the first differing record, if any;
- seconds per call and completion tokens/s of both (min/median/max), the reference's as recorded.

    python benchmarks/embedded_binding.py [--records 50]

The sample takes records round-robin over the DSLs (the first, then the second record of each, ...).
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

from dslbench import toolchains
from dslbench.generation import default_model_name, generate, resolve_model
from dslbench.prompting import extract_program

REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "generations.jsonl.gz"


def sample(n: int) -> list[dict]:
    by_dsl = defaultdict(list)
    with gzip.open(REFERENCE, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["generation_status"] == "ok":
                by_dsl[record["dsl"]].append(record)
    order = [r for i in range(max(map(len, by_dsl.values()))) for d in sorted(by_dsl) for r in by_dsl[d][i:i + 1]]
    return order[:n]


def spread(xs) -> str:
    return f"min {min(xs):.1f} / median {statistics.median(xs):.1f} / max {max(xs):.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50)
    args = ap.parse_args()
    spec = resolve_model(default_model_name())
    generate(spec, [{"role": "user", "content": "hi"}], {"max_tokens": 4}, cache=None)   # load outside the timings
    same_text = same_program = 0
    first_diff = None
    now_s, ref_s, now_tps, ref_tps = [], [], [], []
    records = sample(args.records)
    for record in records:
        tc = toolchains.get(record["dsl"])
        t0 = time.perf_counter()
        res = generate(spec, record["messages"], record["params"], sample=record["sample"], cache=None,
                       fences=tc.fence_aliases)
        wall = time.perf_counter() - t0
        if res.status != "ok":
            raise SystemExit(f"{record['task_id']}: generation failed: {res.error}")
        text_ok = res.text == record["raw_output"]
        program_ok = extract_program(res.text, tc.fence_aliases)[0] == record["program"]
        same_text += text_ok
        same_program += program_ok
        if not text_ok and first_diff is None:
            common = next((i for i, (a, b) in enumerate(zip(res.text, record["raw_output"])) if a != b),
                          min(len(res.text), len(record["raw_output"])))
            first_diff = (record, res.text, common)
        tokens = res.usage.get("completion_tokens", 0)
        now_s.append(wall)
        ref_s.append(record["generation_duration_s"])
        now_tps.append(tokens / wall)
        ref_tps.append(record["usage"]["completion_tokens"] / record["generation_duration_s"])
        print(f"{record['task_id']:18} {record['method']:22} same_text={text_ok!s:5} same_program={program_ok!s:5} "
              f"finish={res.finish_reason:12} tokens={tokens:4} {wall:5.1f} s (reference {ref_s[-1]:5.1f} s)", flush=True)
    n = len(records)
    print(f"\nrecords: {n}")
    print(f"identical reply text:       {same_text}/{n}")
    print(f"identical extracted program: {same_program}/{n}")
    print(f"seconds per call, now:        {spread(now_s)} (total {sum(now_s):.0f} s)")
    print(f"seconds per call, reference:  {spread(ref_s)} (total {sum(ref_s):.0f} s, as recorded)")
    print(f"completion tokens/s, now:       {spread(now_tps)}")
    print(f"completion tokens/s, reference: {spread(ref_tps)}")
    if first_diff:
        record, text, at = first_diff
        print(f"\nfirst difference: {record['task_id']} ({record['method']}) at character {at}:\n"
              f"  now:       {text[max(0, at - 40):at + 60]!r}\n  reference: {record['raw_output'][max(0, at - 40):at + 60]!r}")


if __name__ == "__main__":
    main()
