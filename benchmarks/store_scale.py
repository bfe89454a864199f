"""Reading the run store at paper scale: 422k verdicts (60,313 tasks x 7 models), synthetic.

    .venv/bin/python benchmarks/store_scale.py [--records 400000] [--repeats 3] [--dir D]

Writes N verdict records of realistic size (prompt, reply, program, capped logs) into a scratch run
folder, then times whole `python` processes, each a fresh interpreter as a user's command would be:

- cold table: the first read, which parses every line and writes tables/verdicts.parquet
- warm table: the verdict table when nothing was appended (what the book and `report` read)
- after 1,000 appended verdicts: the table grows by the new lines only
- resume keys: `keys("verdicts", retry=True)`, what `validate` reads before it starts
- pass rates: the verdict table plus metrics.pass_rates, one number per DSL
- the old full parse (json.loads of every line plus flattening), the cost every read paid before

Prints min/median/max seconds over the repeats (the cold read and the old parse once each).
"""
import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DSLS = ["jq", "verilog", "smiles", "dafny", "lean", "sql", "cypher", "vegalite", "latex",
        "gdscript", "iecst", "openqasm", "behaviortree", "solidity", "terraform", "nextflow", "sysml", "ufl"]
MODELS = [f"model-{i}" for i in range(7)]


def synthetic_verdict(i: int, rng: random.Random) -> dict:
    dsl = DSLS[i % len(DSLS)]
    words = " ".join(rng.choice(["select", "node", "wire", "assert", "let", "module", "output", "where"])
                     for _ in range(60))
    status = rng.choice(["pass", "pass", "fail", "error"])
    reason = {"pass": "ok", "fail": rng.choice(["parse_error", "timeout"]), "error": "toolchain_crash"}[status]
    level = {"status": status, "reason": reason,
             "diagnostics": words[:200], "expected": None, "command": f"{dsl}-tool --check program",
             "log": (words + "\n") * 6, "duration_s": rng.random()}
    return {"schema": 2, "run": "scale", "dsl": dsl, "task_id": f"{dsl}-{i // 7:06d}", "model": MODELS[i % 7],
            "method": "baseline", "sample": 0, "domain": "d", "difficulty": rng.choice(["easy", "medium", "hard"]),
            "split": "test", "toolchain": f"{dsl}-tool", "toolchain_version": "1.0", "validator": f"toolchains/{dsl}",
            "messages": [{"role": "system", "content": words * 2}, {"role": "user", "content": words * 3}],
            "raw_output": words * 4, "program": words * 2, "extraction_rule": "fenced", "prompt_version": "v3",
            "generation_status": "ok", "finish_reason": "stop", "temperature": 0.0, "revision": "abc",
            "started": "2026-12-02T00:00:00", "finished": "2026-12-02T00:00:01",
            "syntax": level, "semantic": {**level, **({"status": "fail", "reason": "syntax_failed"} if status == "fail" else {})}}


def write_run(run: Path, start: int, n: int) -> None:
    rng = random.Random(start)
    with open(run / "verdicts.jsonl", "a", encoding="utf-8") as f:
        for i in range(start, start + n):
            f.write(json.dumps(synthetic_verdict(i, rng), sort_keys=True) + "\n")


def timed(code: str) -> float:
    """Wall time of one fresh interpreter running `code` (start-up and imports included)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def show(label: str, times: list[float]) -> None:
    print(f"{label:<44} {min(times):8.2f} {statistics.median(times):8.2f} {max(times):8.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=400_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="scratch folder (default: a new temporary one)")
    args = ap.parse_args()
    run = Path(args.dir or tempfile.mkdtemp(prefix="dslbench-store-scale-")) / "run"
    run.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    write_run(run, 0, args.records)
    size = (run / "verdicts.jsonl").stat().st_size
    print(f"{args.records} synthetic verdicts, {size / 1e9:.2f} GB of JSONL, written in {time.perf_counter() - t0:.1f} s "
          f"into {run}")
    table = f"from dslbench.store import RunStore; t = RunStore({str(run)!r}).verdict_table()"
    print(f"{'whole process':<44} {'min s':>8} {'median s':>8} {'max s':>8}")
    show("old full parse + flatten (every read before)",
         [timed("from dslbench.store import RunStore, flatten_verdicts; "
                f"flatten_verdicts(RunStore({str(run)!r}).iter_records('verdicts'))")])
    show("cold table (first read, writes the table)", [timed(table)])
    show("warm table (nothing appended)", [timed(table) for _ in range(args.repeats)])
    grown = []
    for r in range(args.repeats):
        write_run(run, args.records + 1000 * r, 1000)
        grown.append(timed(table))
    show("table after 1,000 appended verdicts", grown)
    show("resume keys (validate's start)",
         [timed(f"from dslbench.store import RunStore; RunStore({str(run)!r}).keys('verdicts', retry=True)")
          for _ in range(args.repeats)])
    show("pass rates per DSL (table + metrics)",
         [timed(f"{table}; from dslbench import metrics; metrics.rates(t)") for _ in range(args.repeats)])


if __name__ == "__main__":
    main()
