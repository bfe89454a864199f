"""DSL-Profiler: triage for a DSL that has no benchmark of its own (the paper's Section V-B).

Given a DSL's standardized factor profile (KD, SF, HC, RY as z-scores against the benchmark DSLs of a
run), it returns

  neighbours     the k nearest benchmark DSLs (Euclidean distance over the factors both sides have,
                 rescaled to 4 dimensions: d * sqrt(4 / shared))
  risk ranges    for syntax and semantic pass rate: the neighbours' DSL mean rates as [min, max] and an
                 inverse-distance-weighted point, with a coarse band (very low < 5 %, low < 15 %,
                 moderate < 35 %, high >= 35 %)
  bottleneck     the largest adverse factor: knowledge (KD high), toolchain (HC high), version
                 (RY recent) or unfamiliar syntax (SF low), when it exceeds +0.5 SD ("none" otherwise); "structural semantics / syntactic deception"
                 when syntax is familiar (SF >= 0) but the neighbours' syntax-semantic gap is large
  intervention   the candidate intervention for that bottleneck (the paper's Sections V-VI)
  trust          nearest-neighbour distance, compared with the benchmark's own leave-one-out
                 nearest-neighbour distances: "inside" (<= their 75th percentile), "edge" (<= max),
                 "outside" (beyond every benchmark DSL: low trust)

`loo_mae` validates it: each benchmark DSL is held out, the rest are re-standardized and the held-out
DSL's rates predicted; the mean absolute error is reported next to the naive baseline (the mean of
the other DSLs). It is a coarse triage hint, not a calibrated predictor.

CLI: `main(argv)` profiles a folder of example programs against a run (see `main`).
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np
import pandas as pd

from .factors import FACTORS, factor_scores

BANDS = [(5, "very low"), (15, "low"), (35, "moderate"), (101, "high")]
INTERVENTIONS = {
    "knowledge": "retrieval of version-matched DSL documentation and examples before generation, with "
                 "evaluator-guided repair (RAG-Refinement)",
    "toolchain": "validator-in-the-loop repair with the real toolchain's diagnostics (Baseline-Refinement); "
                 "pin the toolchain version and ship the harness scaffolding in the prompt",
    "version": "explicit target-version constraints in the prompt plus retrieved examples of that version; "
               "reject legacy constructs with a version-aware checker",
    "syntax": "grammar or schema constraints and syntax-checker feedback, with few-shot examples of the notation",
    "none": "no factor stands out: start from the strongest general method (RAG-Refinement) and read the "
            "validator logs of a small pilot run to find the bottleneck",
    "structure": "topology-aware planning and structural checks (control flow, dataflow, composition) in the "
                 "repair loop: familiar surface syntax hides the semantics",
}


def band(x: float) -> str:
    if not np.isfinite(x):
        return "unknown"
    for hi, name in BANDS:
        if x < hi:
            return name
    return BANDS[-1][1]


def _distance(a: np.ndarray, B: np.ndarray) -> np.ndarray:
    ok = np.isfinite(a)[None, :] & np.isfinite(B)
    diff = np.where(ok, B - a[None, :], 0.0)
    shared = ok.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.sqrt((diff ** 2).sum(1) * len(FACTORS) / np.where(shared > 0, shared, 1))
    return np.where(shared > 0, d, np.inf)


def predict(target_z: pd.Series, bench: pd.DataFrame, k: int = 3) -> dict:
    """Nearest benchmark DSLs of a standardized profile and the inverse-distance-weighted rates.
    `bench` has dsl, KD..RY (z) and syntax_pct, semantic_pct."""
    B = bench[list(FACTORS)].to_numpy(float)
    d = _distance(target_z[list(FACTORS)].to_numpy(float), B)
    order = np.argsort(d, kind="stable")[:k]
    order = [i for i in order if np.isfinite(d[i])]
    nb = bench.iloc[order].assign(distance=d[order])
    w = 1.0 / np.maximum(nb["distance"].to_numpy(), 1e-6)
    out = {"neighbours": nb[["dsl", "distance", "syntax_pct", "semantic_pct"]].reset_index(drop=True)}
    for m in ("syntax_pct", "semantic_pct"):
        vals = nb[m].to_numpy(float)
        out[m] = float(np.sum(w * vals) / np.sum(w)) if len(vals) else np.nan
        out[m + "_range"] = (float(vals.min()), float(vals.max())) if len(vals) else (np.nan, np.nan)
    out["nn_distance"] = float(nb["distance"].iloc[0]) if len(nb) else np.nan
    return out


def benchmark_table(comp: pd.DataFrame, dsl_rates: pd.DataFrame) -> pd.DataFrame:
    """Benchmark DSLs with z-scored factors (against themselves) and their DSL mean rates."""
    z = factor_scores(comp)
    return z.merge(dsl_rates[["dsl", "syntax_pct", "semantic_pct"]], on="dsl")


def loo_nn_distances(comp: pd.DataFrame, dsl_rates: pd.DataFrame) -> pd.Series:
    d = {}
    for dsl in comp["dsl"]:
        rest = comp[comp["dsl"] != dsl]
        z_t = factor_scores(comp[comp["dsl"] == dsl], reference=rest).iloc[0]
        bench = factor_scores(rest).merge(dsl_rates[["dsl", "syntax_pct", "semantic_pct"]], on="dsl")
        if len(bench):
            d[dsl] = float(np.min(_distance(z_t[list(FACTORS)].to_numpy(float), bench[list(FACTORS)].to_numpy(float))))
    return pd.Series(d, dtype=float)


def loo_mae(comp: pd.DataFrame, dsl_rates: pd.DataFrame, k: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Leave-one-DSL-out predictions and the MAE table (profiler vs. mean-of-others baseline)."""
    comp = comp[comp["dsl"].isin(dsl_rates["dsl"])]
    rows = []
    for dsl in comp["dsl"]:
        rest = comp[comp["dsl"] != dsl]
        if len(rest) < 2:
            continue
        z_t = factor_scores(comp[comp["dsl"] == dsl], reference=rest).iloc[0]
        bench = factor_scores(rest).merge(dsl_rates[["dsl", "syntax_pct", "semantic_pct"]], on="dsl")
        p = predict(z_t, bench, k)
        true = dsl_rates.set_index("dsl").loc[dsl]
        rows.append({"dsl": dsl, "syntax_true": true["syntax_pct"], "syntax_pred": p["syntax_pct"],
                     "syntax_baseline": bench["syntax_pct"].mean(), "semantic_true": true["semantic_pct"],
                     "semantic_pred": p["semantic_pct"], "semantic_baseline": bench["semantic_pct"].mean(),
                     "nn_distance": p["nn_distance"],
                     "neighbours": ", ".join(p["neighbours"]["dsl"])})
    pred = pd.DataFrame(rows)
    if pred.empty:
        return pred, pd.DataFrame(columns=["metric", "DSLs", "profiler MAE (pp)", "mean-of-others MAE (pp)"])
    mae = pd.DataFrame([{"metric": m, "DSLs": len(pred),
                         "profiler MAE (pp)": float((pred[f"{m}_pred"] - pred[f"{m}_true"]).abs().mean()),
                         "mean-of-others MAE (pp)": float((pred[f"{m}_baseline"] - pred[f"{m}_true"]).abs().mean())}
                        for m in ("semantic", "syntax")])
    return pred, mae


def bottleneck(z: pd.Series, neighbour_gap: float | None = None) -> tuple[str, str]:
    """(bottleneck, reason) from a standardized profile."""
    cand = {"knowledge": z.get("KD", np.nan), "toolchain": z.get("HC", np.nan), "version": z.get("RY", np.nan),
            "syntax": -z.get("SF", np.nan)}
    cand = {k: v for k, v in cand.items() if np.isfinite(v)}
    sf = z.get("SF", np.nan)
    if neighbour_gap is not None and np.isfinite(sf) and sf >= 0 and neighbour_gap >= 20 and \
            (not cand or max(cand.values()) < 1.0):
        return "structure", (f"familiar syntax (SF z = {sf:+.2f}) but the nearest DSLs lose {neighbour_gap:.0f} pp "
                             "between syntax and semantics")
    if not cand:
        return "unknown", "no factor could be computed"
    k = max(cand, key=cand.get)
    if cand[k] < 0.5:
        return "none", f"no adverse factor above +0.5 SD (largest: {k}, z = {cand[k]:+.2f})"
    names = {"knowledge": "Knowledge Demand", "toolchain": "Harness Complexity", "version": "Release Year (recency)",
             "syntax": "low Syntax Familiarity"}
    return k, f"largest adverse factor: {names[k]} (z = {cand[k]:+.2f})"


def profile_dsl(target_comp: dict | pd.Series, comp: pd.DataFrame, dsl_rates: pd.DataFrame, k: int = 3) -> dict:
    """Full profiler output for one target DSL (raw components) against the run's benchmark DSLs."""
    comp = comp[comp["dsl"].isin(dsl_rates["dsl"])]
    target = pd.DataFrame([dict(target_comp)])
    for c in comp.columns:
        if c not in target:
            target[c] = np.nan
    z_t = factor_scores(target, reference=comp).iloc[0]
    bench = benchmark_table(comp, dsl_rates)
    p = predict(z_t, bench, k)
    nb = p["neighbours"]
    gap = float((nb["syntax_pct"] - nb["semantic_pct"]).mean()) if len(nb) else np.nan
    bn, why = bottleneck(z_t, gap)
    loo = loo_nn_distances(comp, dsl_rates)
    d1 = p["nn_distance"]
    if not len(loo) or not np.isfinite(d1):
        trust = "unknown"
    elif d1 <= np.percentile(loo, 75):
        trust = "inside the benchmark's range (trust: usable)"
    elif d1 <= loo.max():
        trust = "at the edge of the benchmark (trust: weak)"
    else:
        trust = "outside every benchmark DSL (trust: low)"
    return {"dsl": str(target_comp.get("dsl", "target")), "z": {f: float(z_t[f]) for f in FACTORS},
            "neighbours": nb.to_dict("records"),
            "syntax_pct": p["syntax_pct"], "syntax_range": p["syntax_pct_range"], "syntax_band": band(p["syntax_pct"]),
            "semantic_pct": p["semantic_pct"], "semantic_range": p["semantic_pct_range"],
            "semantic_band": band(p["semantic_pct"]), "bottleneck": bn, "bottleneck_reason": why,
            "intervention": INTERVENTIONS.get(bn, "inspect the validator logs first"),
            "nn_distance": d1, "benchmark_loo_nn_distance_p75": float(np.percentile(loo, 75)) if len(loo) else np.nan,
            "trust": trust}


def format_report(r: dict) -> str:
    lines = [f"DSL-Profiler: {r['dsl']}",
             "factor profile (z vs. benchmark DSLs): " + ", ".join(
                 f"{f} {v:+.2f}" if np.isfinite(v) else f"{f} n/a" for f, v in r["z"].items()),
             "nearest benchmark DSLs: " + ", ".join(
                 f"{n['dsl']} (d={n['distance']:.2f}; syntax {n['syntax_pct']:.1f}%, semantic {n['semantic_pct']:.1f}%)"
                 for n in r["neighbours"]),
             f"syntax pass rate risk:   {r['syntax_band']} (~{r['syntax_pct']:.1f}%, neighbours "
             f"{r['syntax_range'][0]:.1f}-{r['syntax_range'][1]:.1f}%)",
             f"semantic pass rate risk: {r['semantic_band']} (~{r['semantic_pct']:.1f}%, neighbours "
             f"{r['semantic_range'][0]:.1f}-{r['semantic_range'][1]:.1f}%)",
             f"bottleneck hypothesis:   {r['bottleneck']} — {r['bottleneck_reason']}",
             f"candidate intervention:  {r['intervention']}",
             f"trust: nearest-neighbour distance {r['nn_distance']:.2f} "
             f"(benchmark LOO 75th percentile {r['benchmark_loo_nn_distance_p75']:.2f}): {r['trust']}",
             "A triage hint, not a calibrated prediction (see the leave-one-DSL-out MAE in notebook 05)."]
    return "\n".join(lines)


def _clean(o):
    """JSON-ready: NaN/inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, (np.floating, float)):
        return float(o) if math.isfinite(o) else None
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.bool_):
        return bool(o)
    return o


def main(argv=None) -> int:
    """`dslbench profile FOLDER --run RUN`: profile a new DSL from a folder of example programs.

    FOLDER holds example programs (any file except .md/.txt/.yaml), optional .md/.txt task texts or
    docs, and an optional profile.yaml with name, release_year, runtime_dependencies,
    toolchain_steps, context_files, validation_seconds. The benchmark DSLs are the run's DSLs
    (baseline method by default) with factors computed from this checkout's tasks and toolchains.
    """
    from ..paths import runs_dir
    from . import cells as C
    from .factors import components, program_folder_components
    ap = argparse.ArgumentParser(prog="dslbench profile", description=main.__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--run", default=str(runs_dir() / "default"), help="run directory with the benchmark verdicts")
    ap.add_argument("--method", default="baseline")
    ap.add_argument("--k", type=int, default=3, help="nearest benchmark DSLs (default 3)")
    ap.add_argument("--release-year", type=float, default=None)
    ap.add_argument("--name", default=None)
    ap.add_argument("--tasks", default=None, help="task tree of the benchmark DSLs (default: data/tasks)")
    ap.add_argument("--toolchains", default=None, help="toolchain folders (default: toolchains/)")
    ap.add_argument("--release-years", default=None,
                    help="release-year table of the benchmark DSLs (default: data/factors/release_year.yaml)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    verdicts = C.load_verdicts(args.run)
    cells = C.cell_table(verdicts, args.method)
    rates = C.dsl_summary(cells)
    if len(rates) < 2:
        print(f"error: the run {args.run} has {len(rates)} DSL(s) with evaluated verdicts for method "
              f"{args.method!r}; the profiler needs at least 2 benchmark DSLs", file=sys.stderr)
        return 2
    comp = components(list(rates["dsl"]), verdicts, args.tasks, args.toolchains, args.release_years)
    meta = {"name": args.name} if args.name else {}
    try:
        target = program_folder_components(args.folder, args.release_year, meta)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    r = profile_dsl(target, comp, rates, args.k)
    if args.json:
        print(json.dumps(_clean(r), indent=2))
    else:
        print(format_report(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
