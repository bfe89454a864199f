"""Figures of notebooks 04 and 05 (matplotlib/seaborn). Each returns the Figure; none calls show()."""
from __future__ import annotations

import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
import seaborn as sns

from .factors import FACTOR_NAMES, FACTORS


def _empty(msg: str):
    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, msg, ha="center", va="center", wrap=True)
    return fig


def heatmap(cells: pd.DataFrame, value: str = "semantic_pct", title: str | None = None):
    """The paper's Fig. 2: pass rate by DSL (rows, sorted by mean) and model (columns, sorted by mean)."""
    c = cells[cells["evaluated"] > 0]
    if c.empty:
        return _empty("no evaluated cells")
    G = c.pivot_table(index="dsl", columns="model", values=value, aggfunc="first")
    G = G.loc[G.mean(axis=1).sort_values(ascending=False).index, G.mean(axis=0).sort_values(ascending=False).index]
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * G.shape[1], 0.8 + 0.45 * G.shape[0]))
    sns.heatmap(G, annot=True, fmt=".1f", cmap="viridis", vmin=0, vmax=100, ax=ax,
                cbar_kws={"label": f"{value.replace('_pct', '')} pass rate (%)"})
    ax.set_title(title or f"{value.replace('_pct', '').capitalize()} pass rate by DSL and model (%)")
    ax.set_xlabel("model"), ax.set_ylabel("DSL")
    fig.tight_layout()
    return fig


def gap_plot(dsl_rates: pd.DataFrame):
    """Syntax vs. semantic pass rate per DSL (dumbbell), sorted by semantic rate."""
    if dsl_rates.empty:
        return _empty("no evaluated cells")
    d = dsl_rates.sort_values("semantic_pct")
    fig, ax = plt.subplots(figsize=(7, 0.8 + 0.4 * len(d)))
    y = np.arange(len(d))
    ax.hlines(y, d["semantic_pct"], d["syntax_pct"], color="0.7", lw=3)
    ax.scatter(d["syntax_pct"], y, label="syntax", color="tab:blue", zorder=3)
    ax.scatter(d["semantic_pct"], y, label="semantic", color="tab:orange", zorder=3)
    for yi, r in zip(y, d.itertuples()):
        ax.text(max(r.syntax_pct, r.semantic_pct) + 1.5, yi, f"gap {r.gap_pp:.1f} pp", va="center", fontsize=8)
    ax.set_yticks(y, d["dsl"])
    ax.set_xlim(0, 115)
    ax.set_xlabel("pass rate (%), mean over models")
    ax.set_title("Syntax vs. semantic pass rate per DSL")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def eta2_plot(table: pd.DataFrame):
    """eta-squared with bootstrap CIs per metric and component (long table from anova.table_ii)."""
    t = table[table["estimable"].astype(bool)]
    if t.empty:
        return _empty("eta-squared not estimable (needs >= 2 DSLs and >= 2 models)")
    fig, ax = plt.subplots(figsize=(7, 3))
    labels = [f"{m} / {c}" for m, c in zip(t["metric"], t["component"])]
    y = np.arange(len(t))
    ax.errorbar(t["eta2_pct"], y, xerr=[t["eta2_pct"] - t["ci_low"].fillna(t["eta2_pct"]),
                                        t["ci_high"].fillna(t["eta2_pct"]) - t["eta2_pct"]],
                fmt="o", capsize=3)
    ax.set_yticks(y, labels)
    ax.set_xlim(0, 100)
    ax.set_xlabel("eta-squared (%) with 95% bootstrap CI")
    ax.set_title("Additive DSL/model decomposition")
    fig.tight_layout()
    return fig


def factor_scatter(scores: pd.DataFrame, dsl_rates: pd.DataFrame, assoc: pd.DataFrame | None = None,
                   metric: str = "semantic_pct"):
    """One panel per factor: DSL mean pass rate against the z-scored factor, OLS fit, r in the title."""
    df = scores.merge(dsl_rates[["dsl", metric]], on="dsl")
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.6), sharey=True)
    for ax, f in zip(axes, FACTORS):
        d = df[["dsl", f, metric]].dropna()
        ax.set_title(FACTOR_NAMES[f])
        ax.set_xlabel(f"{f} (z)")
        if len(d) < 2:
            ax.text(0.5, 0.5, "not enough DSLs", transform=ax.transAxes, ha="center")
            continue
        ax.scatter(d[f], d[metric])
        for r in d.itertuples():
            ax.annotate(r.dsl, (getattr(r, f), getattr(r, metric)), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        if len(d) >= 3 and d[f].std() > 0:
            b1, b0 = np.polyfit(d[f], d[metric], 1)
            xs = np.linspace(d[f].min(), d[f].max(), 20)
            ax.plot(xs, b0 + b1 * xs, color="tab:red")
            if assoc is not None:
                a = assoc[(assoc["key"] == f) & (assoc["metric"] == metric.replace("_pct", ""))]
                if len(a) and np.isfinite(a["pearson_r"].iloc[0]):
                    ax.set_title(f"{FACTOR_NAMES[f]}\nr = {a['pearson_r'].iloc[0]:+.2f}, "
                                 f"perm p = {a['perm_p'].iloc[0]:.3f}")
    axes[0].set_ylabel(f"DSL mean {metric.replace('_pct', '')} pass rate (%)")
    fig.tight_layout()
    return fig


def scorecard_plot(prof: pd.DataFrame):
    """Capability scorecard: models x axes, colour = within-DSL normalized score, text = score and CI,
    * = axis leader, = tied with the leader within the bootstrap CI."""
    if prof.empty:
        return _empty("no capability profile (needs >= 2 models)")
    S = prof.pivot(index="model", columns="axis", values="score")
    order = [a for a in ("knowledge", "structure", "version", "toolchain", "overall") if a in S.columns]
    S = S[order]
    text = prof.assign(t=[f"{r.score:+.1f}{' *' if r.leader else (' =' if r.tied_with_leader else '')}\n"
                          f"[{r.ci_low:+.1f}, {r.ci_high:+.1f}]" for r in prof.itertuples()]
                       ).pivot(index="model", columns="axis", values="t")[order]
    lim = np.nanmax(np.abs(S.to_numpy())) or 1
    fig, ax = plt.subplots(figsize=(1.8 + 1.7 * len(order), 1 + 0.7 * len(S)))
    sns.heatmap(S, annot=text, fmt="", cmap="RdBu", center=0, vmin=-lim, vmax=lim, ax=ax,
                cbar_kws={"label": "pp vs. DSL mean"}, annot_kws={"fontsize": 8})
    ax.set_title("Capability scorecard (* leader, = tied with leader within 95% CI)")
    fig.tight_layout()
    return fig


def profiler_plot(pred: pd.DataFrame):
    """Leave-one-DSL-out: predicted vs. observed DSL mean rates, syntax and semantic."""
    if pred.empty:
        return _empty("profiler not validated (needs >= 3 DSLs with factors)")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, m in zip(axes, ("semantic", "syntax")):
        ax.scatter(pred[f"{m}_true"], pred[f"{m}_pred"])
        for r in pred.itertuples():
            ax.annotate(r.dsl, (getattr(r, f"{m}_true"), getattr(r, f"{m}_pred")), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        ax.plot([0, 100], [0, 100], ls="--", color="0.5")
        mae = (pred[f"{m}_pred"] - pred[f"{m}_true"]).abs().mean()
        ax.set_title(f"{m}: leave-one-DSL-out MAE {mae:.1f} pp")
        ax.set_xlabel("observed DSL mean (%)"), ax.set_ylabel("profiler prediction (%)")
        ax.set_xlim(-2, 102), ax.set_ylim(-2, 102)
    fig.tight_layout()
    return fig


def simulation_plot(table: pd.DataFrame):
    t = table[table["ci_low"].notna()]
    fig, ax = plt.subplots(figsize=(7, 2.6))
    y = np.arange(len(t))
    ax.errorbar(t["recovered"], y, xerr=[t["recovered"] - t["ci_low"], t["ci_high"] - t["recovered"]], fmt="o",
                capsize=3, label="recovered (95% CI)")
    ax.scatter(t["planted (population)"], y, marker="x", color="red", zorder=3, label="planted")
    ax.set_yticks(y, t["quantity"])
    ax.set_xscale("symlog", linthresh=1)
    ax.set_title("SIMULATION — planted vs. recovered")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig
