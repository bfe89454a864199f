"""Capability profiles: relative model strengths along bottleneck axes (the paper's Section IV-G).

Within-DSL normalization: a model's score in a DSL is its pass rate minus the mean over models in
that DSL (percentage points; "center") or that difference divided by the SD over models ("z").
This removes the DSL main effect, which dominates raw rates, so the profile shows *relative*
strengths. Axes:

  knowledge, structure, version   semantic pass rate on the DSL's tasks tagged with that failure mode
                                  (the `failure_modes` field of data/tasks/<dsl>/*.yaml, joined by
                                  task_id); a DSL enters an axis when it has >= `min_tasks` tagged tasks
  toolchain                       *syntax* pass rate (toolchain acceptance) on all tasks of the DSLs
                                  whose Harness Complexity is at or above the median over the DSLs
                                  (HC from dslbench.analysis.factors); all DSLs when HC is unknown
  overall                         semantic pass rate on all tasks of all DSLs

An axis score is the mean over its DSLs of the normalized scores. Bootstrap: tasks are resampled
with replacement within each DSL, the same draw for every model (paired), seeded; 95% percentile
intervals. Ties: the axis leader is the model with the highest score; another model is *tied with
the leader* when the 95% interval of (leader - model) over the paired replicates includes 0.
Profiles are diagnostic summaries, not calibrated rankings; with one model there is nothing to profile.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .cells import classify, select

AXES = ("knowledge", "structure", "version", "toolchain", "overall")


def _dsl_arrays(verdicts: pd.DataFrame, task_meta: pd.DataFrame, models: list[str]):
    """Per DSL: (task ids, syntax matrix, semantic matrix (tasks x models, NaN = not evaluated), tag masks)."""
    ev = verdicts[classify(verdicts) == "evaluated"]
    tags = {(r.dsl, r.task_id): set(r.failure_modes) for r in task_meta.itertuples()} if len(task_meta) else {}
    out = {}
    for dsl, g in ev.groupby("dsl"):
        syn = g.assign(y=(g["syntax_status"] == "pass").astype(float)).pivot_table(
            index="task_id", columns="model", values="y", aggfunc="mean").reindex(columns=models)
        sem = g.assign(y=(g["semantic_status"] == "pass").astype(float)).pivot_table(
            index="task_id", columns="model", values="y", aggfunc="mean").reindex(index=syn.index, columns=models)
        mask = np.array([[ax in tags.get((dsl, t), set()) for ax in AXES[:3]] for t in syn.index], dtype=float)
        out[dsl] = (list(syn.index), syn.to_numpy(float), sem.to_numpy(float), mask.reshape(len(syn.index), 3))
    return out


def _axis_rates(Y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Rates per model: Y (..., n, M) with NaN, weights w (..., n) -> (..., M)."""
    ok = ~np.isnan(Y)
    num = np.nansum(np.where(ok, Y, 0) * w[..., None], axis=-2)
    den = np.sum(ok * w[..., None], axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _normalize(R: np.ndarray, norm: str) -> np.ndarray:
    with warnings.catch_warnings():  # an axis with no evaluated task in a replicate is NaN, on purpose
        warnings.simplefilter("ignore", RuntimeWarning)
        c = R - np.nanmean(R, axis=-1, keepdims=True)
        sd = np.nanstd(R, axis=-1, ddof=1, keepdims=True) if norm == "z" else None
    if norm == "z":
        c = np.where(sd > 0, c / np.where(sd > 0, sd, 1), 0.0)
    return c


def profile(verdicts: pd.DataFrame, task_meta: pd.DataFrame, hc: pd.Series | None = None, method="baseline",
            models=None, n_boot: int = 2000, seed: int = 0, min_tasks: int = 3, norm: str = "center") -> pd.DataFrame:
    """Long table: axis, model, score, ci_low, ci_high, dsls, leader, tied_with_leader, rank."""
    v = select(verdicts, method, models=models)
    models = sorted(v["model"].unique()) if models is None or not len(models) else list(models)
    cols = ["axis", "model", "score", "ci_low", "ci_high", "dsls", "leader", "tied_with_leader", "rank"]
    if len(models) < 2:
        return pd.DataFrame(columns=cols)
    arrays = _dsl_arrays(v, task_meta, models)
    toolchain_dsls = set(arrays)
    if hc is not None and hc.notna().sum() >= 2:
        h = hc.dropna()
        toolchain_dsls = set(h[h >= h.median()].index) & set(arrays)
    rng = np.random.default_rng(seed)
    point = {ax: [] for ax in AXES}
    boots = {ax: [] for ax in AXES}
    for dsl, (tids, syn, sem, mask) in arrays.items():
        n = len(tids)
        idx = rng.integers(0, n, size=(n_boot, n))
        ones = np.ones(n)
        specs = [(ax, sem, mask[:, j]) for j, ax in enumerate(AXES[:3]) if mask[:, j].sum() >= min_tasks]
        if dsl in toolchain_dsls:
            specs.append(("toolchain", syn, ones))
        specs.append(("overall", sem, ones))
        for ax, Y, w in specs:
            p = _normalize(_axis_rates(Y, w), norm)
            b = _normalize(_axis_rates(Y[idx], w[idx]), norm)
            point[ax].append(p)
            boots[ax].append(b)
    rows = []
    scale = 100.0 if norm == "center" else 1.0
    for ax in AXES:
        if not point[ax]:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            P = scale * np.nanmean(np.vstack(point[ax]), axis=0)               # (M,)
            B = scale * np.nanmean(np.stack(boots[ax], axis=0), axis=0)         # (n_boot, M)
        lead = int(np.nanargmax(P)) if np.isfinite(P).any() else 0
        ranks = pd.Series(-P).rank(method="min").to_numpy()
        for j, m in enumerate(models):
            diff = B[:, lead] - B[:, j]
            diff = diff[np.isfinite(diff)]
            tied = j != lead and len(diff) > 0 and np.percentile(diff, 2.5) <= 0 <= np.percentile(diff, 97.5)
            col = B[:, j][np.isfinite(B[:, j])]
            rows.append({"axis": ax, "model": m, "score": P[j],
                         "ci_low": np.percentile(col, 2.5) if len(col) else np.nan,
                         "ci_high": np.percentile(col, 97.5) if len(col) else np.nan,
                         "dsls": len(point[ax]), "leader": j == lead, "tied_with_leader": bool(tied),
                         "rank": int(ranks[j])})
    return pd.DataFrame(rows, columns=cols)


def scorecard(prof: pd.DataFrame) -> pd.DataFrame:
    """Models x axes, 'score [lo, hi]' with * for the leader and = for models tied with it."""
    if prof.empty:
        return pd.DataFrame()
    def cell(r):
        mark = " *" if r.leader else (" =" if r.tied_with_leader else "")
        return f"{r.score:+.1f} [{r.ci_low:+.1f}, {r.ci_high:+.1f}]{mark}"
    t = prof.assign(text=[cell(r) for r in prof.itertuples()])
    return t.pivot(index="model", columns="axis", values="text").reindex(columns=[a for a in AXES if a in set(prof["axis"])])
