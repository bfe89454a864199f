"""Agreement of model rankings across DSLs: Kendall's coefficient of concordance W.

Each DSL is a "judge" ranking the n models by their pass rate in that DSL (higher rate = better rank;
ties get average ranks). With m judges, R_i the rank sum of model i and T_j = sum over tie groups
of judge j of (t^3 - t):

    S = sum_i (R_i - m (n + 1) / 2)^2
    W = 12 S / (m^2 (n^3 - n) - m sum_j T_j)          (ties corrected)

W = 1: every DSL ranks the models identically; W = 0: no agreement. The Friedman statistic is
chi2 = m (n - 1) W (scipy.stats.friedmanchisquare computes the same tie-corrected value).

The permutation p-value shuffles the models' scores independently within each DSL (the null of
no shared ranking), seeded: p = (1 + #{W* >= W}) / (1 + n_perm). A DSL where all models tie carries
no ranking information; it stays in (as the formula handles it) and is counted in `all_tied_dsls`.
Needs at least 2 DSLs and 2 models; with one model there is no ranking.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def kendalls_w(scores: np.ndarray) -> float:
    """W for an (m judges x n objects) score matrix (higher score = higher rank), ties corrected."""
    X = np.asarray(scores, dtype=float)
    m, n = X.shape
    if m < 2 or n < 2:
        return float("nan")
    ranks = np.apply_along_axis(stats.rankdata, 1, X)
    R = ranks.sum(axis=0)
    S = float(((R - m * (n + 1) / 2) ** 2).sum())
    T = 0.0
    for row in X:
        _, counts = np.unique(row, return_counts=True)
        T += float((counts ** 3 - counts).sum())
    denom = m ** 2 * (n ** 3 - n) - m * T
    return 12 * S / denom if denom > 0 else float("nan")


def _w_batch(X: np.ndarray, T: float) -> np.ndarray:
    """W of a stack (B, m, n); ties are unchanged by permutation so T is shared."""
    B, m, n = X.shape
    ranks = stats.rankdata(X, axis=2)
    R = ranks.sum(axis=1)
    S = ((R - m * (n + 1) / 2) ** 2).sum(axis=1)
    denom = m ** 2 * (n ** 3 - n) - m * T
    return 12 * S / denom if denom > 0 else np.full(B, np.nan)


def concordance(cells: pd.DataFrame, value: str = "semantic_pct", n_perm: int = 2000, seed: int = 0) -> dict:
    """Kendall's W over per-DSL model rankings of `value` on a complete grid, with permutation p."""
    G = (cells.pivot_table(index="dsl", columns="model", values=value, aggfunc="first").dropna()
         if len(cells) else pd.DataFrame())
    m, n = G.shape
    out = {"metric": value.replace("_pct", ""), "dsls": m, "models": n, "W": np.nan, "friedman_chi2": np.nan,
           "friedman_p": np.nan, "perm_p": np.nan, "n_perm": n_perm, "all_tied_dsls": 0, "estimable": m >= 2 and n >= 2}
    if not out["estimable"]:
        return out
    X = G.to_numpy(float)
    out["all_tied_dsls"] = int(sum(len(np.unique(r)) == 1 for r in X))
    W = kendalls_w(X)
    out["W"] = W
    if np.isfinite(W):
        out["friedman_chi2"] = m * (n - 1) * W
        out["friedman_p"] = float(stats.chi2.sf(out["friedman_chi2"], n - 1))
        T = sum(float((c ** 3 - c).sum()) for c in (np.unique(r, return_counts=True)[1] for r in X))
        rng = np.random.default_rng(seed)
        perms = np.argsort(rng.random((n_perm, m, n)), axis=2)
        Xp = np.take_along_axis(np.broadcast_to(X, (n_perm, m, n)), perms, axis=2)
        Wp = _w_batch(Xp, T)
        out["perm_p"] = float((1 + np.sum(Wp >= W - 1e-12)) / (1 + n_perm))
    return out


def rank_table(cells: pd.DataFrame, value: str = "semantic_pct") -> pd.DataFrame:
    """Per-DSL rank of each model (1 = best, average ranks for ties), and the mean rank."""
    if cells.empty:
        return pd.DataFrame()
    G = cells.pivot_table(index="dsl", columns="model", values=value, aggfunc="first")
    ranks = G.rank(axis=1, ascending=False, method="average")
    ranks.loc["mean rank"] = ranks.mean()
    return ranks
