"""ESTIMATOR CHECK ON SIMULATED DATA (not benchmark results).

Draws DSL x model x task outcomes from known variance components on the logit scale,

    logit p_dm = mu + a_d + b_m (+ g_dm),  a_d ~ N(0, s2_dsl), b_m ~ N(0, s2_model), g_dm ~ N(0, s2_inter)
    y_dmt ~ Bernoulli(p_dm)  for t = 1..n_tasks,

and checks that the estimators of notebooks 04/05 recover what was planted:

  * the binomial mixed model (mixed.fit) recovers s2_dsl / s2_model — the planted ratio should lie in
    its parametric-bootstrap interval;
  * the ANOVA (anova.decompose) recovers the planted eta-squared. On the pass-rate scale the planted
    value is not a single parameter of the logit model, so it is computed from the plant itself:
      - `eta2_planted_population`: by Monte Carlo over a large grid (2000 x 2000) of the same generative
        model, including the binomial noise of n_tasks per cell: V_x / (V_dsl + V_model + V_rest) where
        V_dsl = Var_d(E_m p), V_model = Var_m(E_d p), V_rest = the remaining variance of p + E[p(1-p)]/n;
      - `eta2_planted_grid`: the eta-squared of the drawn grid's true probabilities p_dm (no task noise),
        i.e. what an infinitely large task set would give for *these* DSLs and models; for the
        variances, the sample variances of the drawn effects a_d and b_m.
    The population value should lie in the dsl_model (pigeonhole) bootstrap interval.

`coverage()` repeats the ANOVA part many times (cheap) to estimate how often the intervals cover
the planted population value.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import anova
from .cells import CELL_COLUMNS


def expit(x):
    return 1 / (1 + np.exp(-x))


def draw(n_dsls=18, n_models=7, n_tasks=100, var_dsl=3.0, var_model=0.2, var_inter=0.0, mu=-1.5, seed=0):
    """A simulated cell table (cells.CELL_COLUMNS) and the true probability grid."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, np.sqrt(var_dsl), n_dsls)
    b = rng.normal(0, np.sqrt(var_model), n_models)
    g = rng.normal(0, np.sqrt(var_inter), (n_dsls, n_models)) if var_inter > 0 else 0.0
    P = expit(mu + a[:, None] + b[None, :] + g)
    passes = rng.binomial(n_tasks, P)
    rows = []
    for i in range(n_dsls):
        for j in range(n_models):
            k = int(passes[i, j])
            rows.append({"dsl": f"sim-dsl-{i:02d}", "model": f"sim-model-{j}", "method": "simulated",
                         "records": n_tasks, "evaluated": n_tasks, "tasks_evaluated": n_tasks, "unavailable": 0,
                         "errors": 0, "unjudged": 0, "syntax_pass": k, "semantic_pass": k,
                         "syntax_pct": 100 * k / n_tasks, "semantic_pct": 100 * k / n_tasks, "gap_pp": 0.0})
    out = pd.DataFrame(rows, columns=CELL_COLUMNS)
    out.attrs["drawn_var_dsl"] = float(np.var(a, ddof=1))
    out.attrs["drawn_var_model"] = float(np.var(b, ddof=1)) if n_models > 1 else float("nan")
    return out, P


def planted_eta2_population(var_dsl, var_model, var_inter=0.0, mu=-1.5, n_tasks=100, size=2000, seed=12345):
    """Population eta-squared shares (dsl, model, rest) on the pass-rate scale, by Monte Carlo."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, np.sqrt(var_dsl), size)
    b = rng.normal(0, np.sqrt(var_model), size)
    eta = mu + a[:, None] + b[None, :]
    if var_inter > 0:
        eta = eta + rng.normal(0, np.sqrt(var_inter), (size, size))
    P = expit(eta)
    v_d = P.mean(axis=1).var()
    v_m = P.mean(axis=0).var()
    v_total = P.var() + (P * (1 - P)).mean() / n_tasks
    v_rest = v_total - v_d - v_m
    return {"dsl": v_d / v_total, "model": v_m / v_total, "resid": v_rest / v_total}


def planted_eta2_grid(P: np.ndarray) -> dict:
    ss = anova.balanced_ss(P)
    return {k: float(ss[k] / ss["total"]) for k in ("dsl", "model", "resid")}


def run(n_dsls=18, n_models=7, n_tasks=100, var_dsl=3.0, var_model=0.2, var_inter=0.0, mu=-1.5, seed=0,
        n_boot=2000, n_sim=100, mixed_path="auto") -> dict:
    """One labelled simulation: planted vs. recovered, with intervals. DSL variance 15x the model's by default."""
    from . import mixed
    cells, P = draw(n_dsls, n_models, n_tasks, var_dsl, var_model, var_inter, mu, seed)
    pop = planted_eta2_population(var_dsl, var_model, var_inter, mu, n_tasks)
    grid = planted_eta2_grid(P)
    est = anova.decompose(cells, "semantic_pct", n_boot, seed, "dsl_model").set_index("component")
    rows = []
    for k in ("dsl", "model", "resid"):
        e = est.loc[k]
        rows.append({"quantity": f"eta2 {k} (%)", "planted (population)": 100 * pop[k],
                     "planted (this grid, no task noise)": 100 * grid[k], "recovered": e["eta2_pct"],
                     "ci_low": e["ci_low"], "ci_high": e["ci_high"],
                     "planted inside CI": bool(e["ci_low"] <= 100 * pop[k] <= e["ci_high"])
                     if np.isfinite(e["ci_low"]) else None})
    fit = mixed.fit(cells, "semantic", path=mixed_path, n_sim=n_sim, seed=seed)
    ratio = var_dsl / var_model if var_model > 0 else np.inf
    lo, hi = fit["ratio_ci_low"], fit["ratio_ci_high"]
    dv, mv = cells.attrs["drawn_var_dsl"], cells.attrs["drawn_var_model"]
    rows.append({"quantity": "variance ratio DSL/model (logit)", "planted (population)": ratio,
                 "planted (this grid, no task noise)": dv / mv, "recovered": fit["ratio"], "ci_low": lo, "ci_high": hi,
                 "planted inside CI": bool(lo <= ratio <= hi) if np.isfinite(lo) else None})
    rows.append({"quantity": "var DSL (logit)", "planted (population)": var_dsl,
                 "planted (this grid, no task noise)": dv, "recovered": fit["var_dsl"],
                 "ci_low": np.nan, "ci_high": np.nan, "planted inside CI": None})
    rows.append({"quantity": "var model (logit)", "planted (population)": var_model,
                 "planted (this grid, no task noise)": mv, "recovered": fit["var_model"],
                 "ci_low": np.nan, "ci_high": np.nan, "planted inside CI": None})
    return {"table": pd.DataFrame(rows), "fit": fit, "cells": cells,
            "design": {"n_dsls": n_dsls, "n_models": n_models, "n_tasks": n_tasks, "var_dsl": var_dsl,
                       "var_model": var_model, "var_inter": var_inter, "mu": mu, "seed": seed, "n_boot": n_boot,
                       "n_sim": n_sim}}


def coverage(reps=200, n_boot=200, n_dsls=18, n_models=7, n_tasks=100, var_dsl=3.0, var_model=0.2, mu=-1.5,
             seed=0, schemes=("dsl_model", "cells", "residual")) -> pd.DataFrame:
    """Share of replicates whose 95% interval covers the planted population eta-squared, per scheme."""
    pop = planted_eta2_population(var_dsl, var_model, 0.0, mu, n_tasks)
    hits = {(s, k): 0 for s in schemes for k in ("dsl", "model")}
    for r in range(reps):
        cells, _ = draw(n_dsls, n_models, n_tasks, var_dsl, var_model, 0.0, mu, seed + 1000 + r)
        for s in schemes:
            n_b = n_boot if s != "cells" else max(n_boot // 2, 50)
            e = anova.decompose(cells, "semantic_pct", n_b, seed + r, s).set_index("component")
            for k in ("dsl", "model"):
                hits[(s, k)] += int(e.loc[k, "ci_low"] <= 100 * pop[k] <= e.loc[k, "ci_high"])
    return pd.DataFrame([{"scheme": s, "component": k, "planted eta2 (%)": 100 * pop[k],
                          "coverage of 95% CI": hits[(s, k)] / reps, "replicates": reps}
                         for s in schemes for k in ("dsl", "model")])
