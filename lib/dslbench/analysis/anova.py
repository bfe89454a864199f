"""Variance decomposition of DSL x model cells: y_dm = mu + alpha_d + beta_m + e_dm (Table II).

One value per cell (a macro pass rate), no interaction term: with one observation per cell the
interaction is the residual. For the balanced grid the sums of squares are computed by hand:

  SS_dsl   = M * sum_d (ybar_d. - ybar..)^2          df D-1
  SS_model = D * sum_m (ybar_.m - ybar..)^2          df M-1
  SS_resid = sum_dm (y_dm - ybar_d. - ybar_.m + ybar..)^2   df (D-1)(M-1)
  eta2_x   = SS_x / SS_total,  and the three shares add up to 1.

`anova_ols` fits the same model with statsmodels OLS + anova_lm(typ=2) (a cross-check, and the
weighted/unbalanced cases). For unbalanced or weighted fits, `typ2` computes Type II sums of squares
by least squares: SS_dsl = RSS(model only) - RSS(dsl + model), likewise for the model; eta-squared
is still SS / SS_total, and the shares no longer add up to exactly 1 (the remainder is reported).

Bootstrap (percentile 95% CIs, seeded). The paper says it resamples "DSL-model cells". In a
crossed two-way design with one value per cell there are three ways to do that, all offered:

  "dsl_model" (default)  resample DSLs and models independently with replacement and take the full
                         grid of their cells (the pigeonhole bootstrap for crossed designs, McCullagh
                         2000; Owen 2007). The grid stays balanced (a DSL drawn twice counts as two
                         levels), and both sources of sampling variation — which DSLs and which models
                         were benchmarked — enter the interval. Conservative (intervals are wide,
                         especially for the model share with few models).
  "cells"                resample the D*M cells with replacement (the literal reading of the paper) and
                         fit the unbalanced additive model with Type II sums of squares. Treats cells
                         as exchangeable, ignoring that cells share DSLs and models: intervals are
                         typically too narrow.
  "residual"             fixed DSLs and models: fitted values plus resampled residuals (rescaled by
                         sqrt(n / df_resid)); the interval answers "how noisy is the decomposition of
                         these very DSLs and models".
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

SCHEMES = ("dsl_model", "cells", "residual")
COMPONENTS = ("dsl", "model", "resid")


# --- balanced, by hand ----------------------------------------------------------------------------

def balanced_ss(Y: np.ndarray) -> dict[str, np.ndarray]:
    """Sums of squares of the additive model for a D x M grid, or a stack of grids (..., D, M)."""
    Y = np.asarray(Y, dtype=float)
    D, M = Y.shape[-2], Y.shape[-1]
    grand = Y.mean(axis=(-2, -1), keepdims=True)
    row = Y.mean(axis=-1, keepdims=True)
    col = Y.mean(axis=-2, keepdims=True)
    ss_dsl = M * ((row - grand) ** 2).sum(axis=(-2, -1))
    ss_model = D * ((col - grand) ** 2).sum(axis=(-2, -1))
    ss_resid = ((Y - row - col + grand) ** 2).sum(axis=(-2, -1))
    ss_total = ((Y - grand) ** 2).sum(axis=(-2, -1))
    return {"dsl": ss_dsl, "model": ss_model, "resid": ss_resid, "total": ss_total}


def _shares(ss: dict) -> dict[str, np.ndarray]:
    tot = np.asarray(ss["total"], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {k: np.where(tot > 0, np.asarray(ss[k]) / np.where(tot > 0, tot, 1), np.nan) for k in COMPONENTS}


def balanced_anova(Y) -> pd.DataFrame:
    """ANOVA table (SS, df, MS, F, p, eta2 in %) of the additive model on a full D x M grid."""
    Y = np.asarray(Y, dtype=float)
    if Y.ndim != 2 or np.isnan(Y).any():
        raise ValueError("balanced_anova needs a complete 2-D grid without NaN")
    D, M = Y.shape
    ss = balanced_ss(Y)
    eta = _shares(ss)
    df = {"dsl": D - 1, "model": M - 1, "resid": (D - 1) * (M - 1)}
    rows = []
    ms_resid = ss["resid"] / df["resid"] if df["resid"] > 0 else np.nan
    for k in COMPONENTS:
        ms = ss[k] / df[k] if df[k] > 0 else np.nan
        F = ms / ms_resid if k != "resid" and ms_resid and ms_resid > 0 else np.nan
        p = stats.f.sf(F, df[k], df["resid"]) if np.isfinite(F) else np.nan
        rows.append({"source": k, "SS": float(ss[k]), "df": df[k], "MS": float(ms), "F": float(F), "p": float(p),
                     "eta2_pct": 100 * float(eta[k])})
    return pd.DataFrame(rows)


# --- least squares (unbalanced / weighted) ---------------------------------------------------------

def _dummies(codes: np.ndarray, k: int) -> np.ndarray:
    X = np.zeros((len(codes), max(k - 1, 0)))
    for j in range(1, k):
        X[:, j - 1] = codes == j
    return X


def _rss(X: np.ndarray, y: np.ndarray, sw: np.ndarray) -> float:
    Xw, yw = X * sw[:, None], y * sw
    beta, *_ = np.linalg.lstsq(Xw, yw, rcond=None)
    r = yw - Xw @ beta
    return float(r @ r)


def typ2(y, dsl, model, weights=None) -> dict[str, float]:
    """Type II sums of squares of y ~ dsl + model (weighted least squares when weights are given)."""
    y = np.asarray(y, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    sw = np.sqrt(w)
    d_codes, d_levels = pd.factorize(np.asarray(dsl), sort=True)
    m_codes, m_levels = pd.factorize(np.asarray(model), sort=True)
    one = np.ones((len(y), 1))
    Xd, Xm = _dummies(d_codes, len(d_levels)), _dummies(m_codes, len(m_levels))
    rss_full = _rss(np.hstack([one, Xd, Xm]), y, sw)
    rss_m = _rss(np.hstack([one, Xm]), y, sw)
    rss_d = _rss(np.hstack([one, Xd]), y, sw)
    ybar = np.sum(w * y) / np.sum(w)
    total = float(np.sum(w * (y - ybar) ** 2))
    return {"dsl": max(rss_m - rss_full, 0.0), "model": max(rss_d - rss_full, 0.0), "resid": rss_full,
            "total": total, "df_dsl": len(d_levels) - 1, "df_model": len(m_levels) - 1,
            "df_resid": len(y) - len(d_levels) - len(m_levels) + 1}


def anova_ols(cells: pd.DataFrame, value: str = "semantic_pct", weights: str | None = None) -> pd.DataFrame:
    """statsmodels OLS (or WLS) `value ~ C(dsl) + C(model)` with anova_lm(typ=2); eta2 = SS / SS_total."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    data = cells[["dsl", "model", value] + ([weights] if weights else [])].dropna().rename(columns={value: "y"})
    if weights:
        fit = smf.wls("y ~ C(dsl) + C(model)", data=data, weights=data[weights]).fit()
        w = data[weights].to_numpy(float)
    else:
        fit = smf.ols("y ~ C(dsl) + C(model)", data=data).fit()
        w = np.ones(len(data))
    table = sm.stats.anova_lm(fit, typ=2)
    y = data["y"].to_numpy(float)
    total = float(np.sum(w * (y - np.sum(w * y) / np.sum(w)) ** 2))
    table = table.rename(index={"C(dsl)": "dsl", "C(model)": "model", "Residual": "resid"})
    table["eta2_pct"] = 100 * table["sum_sq"] / total if total > 0 else np.nan
    return table


# --- the decomposition with intervals ---------------------------------------------------------------

def _grid(cells: pd.DataFrame, value: str) -> pd.DataFrame:
    g = cells.pivot_table(index="dsl", columns="model", values=value, aggfunc="first")
    return g.sort_index().sort_index(axis=1)


def estimable(D: int, M: int) -> dict[str, bool]:
    """What a D x M additive decomposition can estimate."""
    return {"dsl": D >= 2 and M >= 2, "model": M >= 2 and D >= 2, "resid": D >= 2 and M >= 2}


def bootstrap_eta2(cells: pd.DataFrame, value: str = "semantic_pct", n_boot: int = 2000, seed: int = 0,
                   scheme: str = "dsl_model") -> np.ndarray:
    """(n_boot, 3) array of eta-squared shares (dsl, model, resid) under a resampling scheme."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}")
    rng = np.random.default_rng(seed)
    G = _grid(cells, value)
    Y = G.to_numpy(float)
    D, M = Y.shape
    if scheme == "dsl_model":
        if np.isnan(Y).any():
            raise ValueError("the dsl_model bootstrap needs a complete grid (use cells.balanced first)")
        rows = rng.integers(0, D, size=(n_boot, D))
        cols = rng.integers(0, M, size=(n_boot, M))
        stack = Y[rows[:, :, None], cols[:, None, :]]
        sh = _shares(balanced_ss(stack))
        return np.column_stack([sh[k] for k in COMPONENTS])
    if scheme == "residual":
        if np.isnan(Y).any():
            raise ValueError("the residual bootstrap needs a complete grid (use cells.balanced first)")
        row = Y.mean(1, keepdims=True)
        col = Y.mean(0, keepdims=True)
        grand = Y.mean()
        fitted = row + col - grand
        resid = (Y - fitted).ravel()
        dfr = (D - 1) * (M - 1)
        resid = resid * np.sqrt(D * M / dfr) if dfr > 0 else resid
        idx = rng.integers(0, D * M, size=(n_boot, D * M))
        stack = fitted[None] + resid[idx].reshape(n_boot, D, M)
        sh = _shares(balanced_ss(stack))
        return np.column_stack([sh[k] for k in COMPONENTS])
    # "cells": resample the observed cells, unbalanced Type II fit. Dummy matrices are built once; a
    # level that is absent from a resample leaves an all-zero column, which least squares ignores.
    c = cells[["dsl", "model", value]].dropna()
    y = c[value].to_numpy(float)
    d_codes, d_lv = pd.factorize(c["dsl"].to_numpy(), sort=True)
    m_codes, m_lv = pd.factorize(c["model"].to_numpy(), sort=True)
    one = np.ones((len(y), 1))
    Xd, Xm = _dummies(d_codes, len(d_lv)), _dummies(m_codes, len(m_lv))
    X_full, X_m, X_d = np.hstack([one, Xd, Xm]), np.hstack([one, Xm]), np.hstack([one, Xd])
    out = np.full((n_boot, 3), np.nan)
    n = len(y)
    for b in range(n_boot):
        i = rng.integers(0, n, size=n)
        yi = y[i]
        total = float(((yi - yi.mean()) ** 2).sum())
        if total <= 0:
            continue
        rf = _rss_plain(X_full[i], yi)
        out[b] = [max(_rss_plain(X_m[i], yi) - rf, 0) / total, max(_rss_plain(X_d[i], yi) - rf, 0) / total,
                  rf / total]
    return out


def _rss_plain(X: np.ndarray, y: np.ndarray) -> float:
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    r = y - X @ beta
    return float(r @ r)


def decompose(cells: pd.DataFrame, value: str = "semantic_pct", n_boot: int = 2000, seed: int = 0,
              scheme: str = "dsl_model", weights: str | None = None) -> pd.DataFrame:
    """eta-squared (%) for DSL, model and residual with bootstrap percentile 95% CIs.

    `cells` must be a complete grid for the unweighted estimate (use `cells.balanced`). With
    `weights` (e.g. "evaluated") the point estimate is the weighted Type II decomposition (the paper's
    task-weighted sensitivity check) and the bootstrap resamples with the same weights attached.
    Rows report `estimable=False` (and NaN) when the grid has fewer than 2 DSLs or 2 models.
    """
    c = cells[["dsl", "model", value] + ([weights] if weights else [])].dropna()
    D, M = c["dsl"].nunique(), c["model"].nunique()
    est = estimable(D, M)
    label = scheme if not weights else f"{'cells' if scheme == 'cells' else 'dsl_model'} (weighted)"
    base = {"metric": value.replace("_pct", ""), "scheme": label,
            "n_boot": n_boot, "dsls": D, "models": M, "cells": len(c)}
    if not all(est.values()):
        return pd.DataFrame([{**base, "component": k, "eta2_pct": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                              "estimable": False} for k in COMPONENTS])
    if weights:
        ss = typ2(c[value], c["dsl"], c["model"], c[weights])
        point = [ss[k] / ss["total"] if ss["total"] > 0 else np.nan for k in COMPONENTS]
        boots = _weighted_boot(c, value, weights, n_boot, seed, scheme)
    else:
        G = _grid(c, value).to_numpy(float)
        sh = _shares(balanced_ss(G))
        point = [float(sh[k]) for k in COMPONENTS]
        boots = bootstrap_eta2(c, value, n_boot, seed, scheme) if n_boot else np.full((0, 3), np.nan)
    rows = []
    for j, k in enumerate(COMPONENTS):
        col = boots[:, j] if len(boots) else np.array([np.nan])
        ok = np.isfinite(col)
        lo, hi = (np.percentile(col[ok], [2.5, 97.5]) if ok.sum() >= 10 else (np.nan, np.nan))
        rows.append({**base, "component": k, "eta2_pct": 100 * point[j], "ci_low": 100 * lo, "ci_high": 100 * hi,
                     "estimable": True, "valid_resamples": int(ok.sum())})
    return pd.DataFrame(rows)


def _weighted_boot(c, value, weights, n_boot, seed, scheme) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.full((n_boot, 3), np.nan)
    dsls, models = np.array(sorted(c["dsl"].unique())), np.array(sorted(c["model"].unique()))
    by = {(r.dsl, r.model): (getattr(r, value), getattr(r, weights)) for r in c.itertuples()}
    for b in range(n_boot):
        if scheme == "cells":
            i = rng.integers(0, len(c), size=len(c))
            s = c.iloc[i]
            y, d, m, w = s[value], s["dsl"], s["model"], s[weights]
        else:  # dsl_model (the residual scheme is not defined for weights: use dsl_model)
            ds = dsls[rng.integers(0, len(dsls), len(dsls))]
            ms = models[rng.integers(0, len(models), len(models))]
            y, d, m, w = [], [], [], []
            for i, dd in enumerate(ds):
                for j, mm in enumerate(ms):
                    if (dd, mm) in by:
                        yy, ww = by[(dd, mm)]
                        y.append(yy), d.append(i), m.append(j), w.append(ww)
        ss = typ2(np.asarray(y, float), np.asarray(d), np.asarray(m), np.asarray(w, float))
        if ss["total"] > 0:
            out[b] = [ss["dsl"] / ss["total"], ss["model"] / ss["total"], ss["resid"] / ss["total"]]
    return out


def table_ii(cells: pd.DataFrame, n_boot: int = 2000, seed: int = 0, scheme: str = "dsl_model",
             weights: str | None = None) -> pd.DataFrame:
    """Both metrics in the paper's Table II layout: DSL eta2 [CI], model eta2 [CI], residual."""
    parts = [decompose(cells, v, n_boot, seed, scheme, weights) for v in ("semantic_pct", "syntax_pct")]
    out = pd.concat(parts, ignore_index=True)
    out["inexact_judges"] = inexact_judges(cells)
    out["stand_in_judges"] = stand_in_judges(cells)
    return out


def stand_in_judges(cells: pd.DataFrame) -> str:
    """The DSLs judged by a stand-in for the paper's judge ('FalkorDB for Neo4j 5'), or 'none'."""
    if "stand_in_for" not in cells or cells.empty:
        return "unknown (no judge recorded)"
    named = cells[cells["stand_in_for"].fillna("").astype(str) != ""]
    return "; ".join(sorted({f"{r.dsl} ({r.judge} for {r.stand_in_for})" for r in named.itertuples()})) or "none"


def reference_judged(cells: pd.DataFrame) -> pd.Series:
    """Cells judged by the paper's own kind of judge: exact and not a stand-in."""
    ok = pd.Series(True, index=cells.index)
    if "judge_exact" in cells:
        ok &= cells["judge_exact"].fillna(True).astype(bool)
    if "stand_in_for" in cells:
        ok &= cells["stand_in_for"].fillna("").astype(str) == ""
    return ok


def inexact_judges(cells: pd.DataFrame) -> str:
    """The DSLs whose cells were judged (in part) by an inexact stand-in judge, or 'none'."""
    if "judge_exact" not in cells or cells.empty:
        return "unknown (no judge recorded)"
    bad = cells.loc[~cells["judge_exact"].fillna(True).astype(bool), "dsl"]
    return ", ".join(sorted(set(bad))) or "none"


def table_ii_wide(long: pd.DataFrame) -> pd.DataFrame:
    """Table II as the paper prints it (one row per metric, 'value [lo, hi]' strings)."""
    rows = []
    for (metric, scheme), g in long.groupby(["metric", "scheme"], sort=False):
        g = g.set_index("component")
        fmt = lambda k: ("n/a" if not g.loc[k, "estimable"] else
                         f"{g.loc[k, 'eta2_pct']:.2f} [{g.loc[k, 'ci_low']:.2f}, {g.loc[k, 'ci_high']:.2f}]")
        rows.append({"metric": metric, "bootstrap": scheme, "DSLs": int(g["dsls"].iloc[0]),
                     "models": int(g["models"].iloc[0]), "DSL eta2 % [95% CI]": fmt("dsl"),
                     "model eta2 % [95% CI]": fmt("model"),
                     "residual %": "n/a" if not g.loc["resid", "estimable"] else f"{g.loc['resid', 'eta2_pct']:.2f}",
                     "inexact judges": g["inexact_judges"].iloc[0] if "inexact_judges" in g else "unknown"})
    return pd.DataFrame(rows)


def sensitivity(cells: pd.DataFrame, dsl_info: pd.DataFrame, n_boot: int = 2000, seed: int = 0,
                scheme: str = "dsl_model", min_tasks: int = 50) -> pd.DataFrame:
    """The paper's reruns of Table II: all cells, task-weighted, without DSLs under `min_tasks`
    evaluated tasks, on the DSLs whose semantic oracle is fully executable, and (ours) without the
    DSLs judged by a stand-in for the paper's judge or an inexact fallback.

    `dsl_info` has columns dsl, evaluated_tasks, executable_oracle (True/False/None).
    Each subset is re-balanced (cells.balanced) before fitting.
    """
    from .cells import balanced
    info = dsl_info.set_index("dsl")
    subsets = {
        "all cells (macro)": (cells, None),
        "task-weighted (WLS, weights = evaluated records)": (cells, "evaluated"),
        f"without DSLs under {min_tasks} evaluated tasks":
            (cells[cells["dsl"].map(info["evaluated_tasks"]).fillna(0) >= min_tasks], None),
        "fully executable-oracle DSLs":
            (cells[cells["dsl"].map(info["executable_oracle"]).fillna(False).astype(bool)], None),
        "without stand-in or inexact judges": (cells[reference_judged(cells)], None),
    }
    rows = []
    for name, (sub, w) in subsets.items():
        sub, _ = balanced(sub)
        for v in ("semantic_pct", "syntax_pct"):
            d = decompose(sub, v, n_boot, seed, scheme, w) if len(sub) else decompose(
                pd.DataFrame(columns=["dsl", "model", v, "evaluated"]), v, 0, seed, scheme, w)
            d = d.set_index("component")
            rows.append({"subset": name, "metric": v.replace("_pct", ""), "DSLs": int(d["dsls"].iloc[0]),
                         "models": int(d["models"].iloc[0]),
                         "DSL eta2 %": d.loc["dsl", "eta2_pct"], "DSL CI low": d.loc["dsl", "ci_low"],
                         "DSL CI high": d.loc["dsl", "ci_high"], "model eta2 %": d.loc["model", "eta2_pct"],
                         "model CI low": d.loc["model", "ci_low"], "model CI high": d.loc["model", "ci_high"],
                         "residual %": d.loc["resid", "eta2_pct"],
                         "unattributed %": 100 - d[["eta2_pct"]].sum().iloc[0] if d["estimable"].all() else np.nan})
    return pd.DataFrame(rows)
