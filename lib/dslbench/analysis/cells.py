"""From a run's verdict table to DSL x model cells (the unit of every cross-DSL statistic).

The rates, the classification of records and the denominator rule live in `dslbench.metrics`
(one definition for stage 03, the report, the book, Table II, the ANOVA and the interventions);
this module selects the records of one method and shapes cells for the analyses.

With several samples per task, each (task, sample) record is one trial; `tasks_evaluated` counts the
distinct tasks. Aggregates: macro = mean over DSL-model cells; task-weighted = pooled passes / pooled
evaluated records (the paper's sensitivity check).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..metrics import JUDGED, classify, overall, rates, with_pass_at_k  # noqa: F401 (the one definition, re-exported)

DEFAULT_METHOD = "baseline"


def load_verdicts(run_dir) -> pd.DataFrame:
    """The verdict table of any run directory.

    verdicts.jsonl is the source of truth when present (read through RunStore, first record per key);
    a run that only has tables/verdicts.parquet (an exported or synthetic run) is read from Parquet.
    A run with neither gives an empty table with the store's columns.
    """
    from ..store import INDEX_COLUMNS, VERDICT_COLUMNS, RunStore
    run = Path(run_dir)
    jsonl, parquet = run / "verdicts.jsonl", run / "tables" / "verdicts.parquet"
    if jsonl.exists() and jsonl.stat().st_size > 0:
        return RunStore(run).verdict_table()
    if parquet.exists():
        df = pd.read_parquet(parquet)
        df = df.drop(columns=[c for c in INDEX_COLUMNS if c in df.columns])  # the store's own bookkeeping
        for c in VERDICT_COLUMNS:
            if c not in df.columns:
                df[c] = None  # an older or synthetic table: columns it lacks are unknown, not guessed
        return df[VERDICT_COLUMNS + [c for c in df.columns if c not in VERDICT_COLUMNS]]
    return pd.DataFrame(columns=VERDICT_COLUMNS)


def select(verdicts: pd.DataFrame, method: str | None = DEFAULT_METHOD, dsls=None, models=None) -> pd.DataFrame:
    """Rows of one method (None = all methods) and, when given, of these DSLs and models."""
    df = verdicts
    if method is not None and "method" in df:
        df = df[df["method"] == method]
    if dsls:
        df = df[df["dsl"].isin(list(dsls))]
    if models:
        df = df[df["model"].isin(list(models))]
    return df


CELL_COLUMNS = ["dsl", "model", "method", "records", "evaluated", "tasks_evaluated", "unavailable", "errors",
                "unjudged", "syntax_pass", "semantic_pass", "syntax_pct", "semantic_pct", "gap_pp", "judge",
                "judge_exact", "stand_in_for", "excluded_reasons"]


def cell_table(verdicts: pd.DataFrame, method: str | None = DEFAULT_METHOD, dsls=None, models=None) -> pd.DataFrame:
    """One row per DSL x model (x method): counts, pass rates (%), the gap, the judge and what was excluded.

    A run with several samples per task (`--samples N` at temperature > 0) also gets `samples` and the
    unbiased semantic `pass@k_pct` columns (metrics.pass_at_k) after these.
    """
    df = select(verdicts, method, dsls, models)
    if df.empty:
        return pd.DataFrame(columns=CELL_COLUMNS)
    return with_pass_at_k(rates(df)[CELL_COLUMNS], df)


def overall_value(cells: pd.DataFrame, statistic: str) -> float:
    t = overall(cells)
    return float(t.loc[t["statistic"] == statistic, "value"].iloc[0])


def grid(cells: pd.DataFrame, value: str = "semantic_pct") -> pd.DataFrame:
    """DSL x model matrix of one cell column (NaN where a cell has no evaluated record)."""
    c = cells[cells["evaluated"] > 0]
    if c.empty:
        return pd.DataFrame()
    return c.pivot_table(index="dsl", columns="model", values=value, aggfunc="first").sort_index().sort_index(axis=1)


def balanced(cells: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The largest complete DSL x model sub-grid found greedily, and what was dropped.

    The additive ANOVA and the ranking statistics need a full grid. Rows (DSLs) or columns (models)
    with missing cells are dropped one at a time, always the line with the largest share missing.
    Returns (cells restricted to the complete grid, {"dsls": [...], "models": [...]} dropped).
    """
    c = cells[cells["evaluated"] > 0]
    dropped = {"dsls": [], "models": []}
    if c.empty:
        return c, dropped
    present = c.pivot_table(index="dsl", columns="model", values="evaluated", aggfunc="first").notna()
    while present.size and not present.values.all():
        row_miss = 1 - present.mean(axis=1)
        col_miss = 1 - present.mean(axis=0)
        if row_miss.max() >= col_miss.max():
            d = row_miss.idxmax()
            dropped["dsls"].append(d)
            present = present.drop(index=d)
        else:
            m = col_miss.idxmax()
            dropped["models"].append(m)
            present = present.drop(columns=m)
    keep = c[c["dsl"].isin(present.index) & c["model"].isin(present.columns)]
    return keep.reset_index(drop=True), dropped


def dsl_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per DSL: macro mean over models of both rates and the gap, and evaluated tasks.

    `evaluated_tasks` is the median over the DSL's models of the distinct evaluated tasks of a cell
    (the DSL's task set as the validators judged it); it drives the under-50-tasks sensitivity rerun.
    """
    c = cells[cells["evaluated"] > 0]
    if c.empty:
        return pd.DataFrame(columns=["dsl", "models", "evaluated_tasks", "evaluated_records", "syntax_pct",
                                     "semantic_pct", "gap_pp"])
    g = c.groupby("dsl")
    out = pd.DataFrame({"models": g.size(), "evaluated_tasks": g["tasks_evaluated"].median(),
                        "evaluated_records": g["evaluated"].sum(), "syntax_pct": g["syntax_pct"].mean(),
                        "semantic_pct": g["semantic_pct"].mean(), "gap_pp": g["gap_pp"].mean()}).reset_index()
    return out.sort_values("semantic_pct", ascending=False).reset_index(drop=True)


def model_summary(cells: pd.DataFrame) -> pd.DataFrame:
    c = cells[cells["evaluated"] > 0]
    if c.empty:
        return pd.DataFrame(columns=["model", "dsls", "syntax_pct", "semantic_pct", "gap_pp"])
    g = c.groupby("model")
    out = pd.DataFrame({"dsls": g.size(), "syntax_pct": g["syntax_pct"].mean(), "semantic_pct": g["semantic_pct"].mean(),
                        "gap_pp": g["gap_pp"].mean()}).reset_index()
    return out.sort_values("semantic_pct", ascending=False).reset_index(drop=True)


def task_matrix(verdicts: pd.DataFrame, dsl: str, level: str = "semantic", method: str | None = DEFAULT_METHOD,
                models=None) -> pd.DataFrame:
    """tasks x models matrix of 0/1 outcomes (mean over samples) for one DSL, evaluated records only."""
    df = select(verdicts, method, [dsl], models)
    df = df[classify(df) == "evaluated"]
    if df.empty:
        return pd.DataFrame()
    df = df.assign(_y=(df[f"{level}_status"] == "pass").astype(float))
    return df.pivot_table(index="task_id", columns="model", values="_y", aggfunc="mean").sort_index()
