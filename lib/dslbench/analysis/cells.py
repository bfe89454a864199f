"""From a run's verdict table to DSL x model cells (the unit of every cross-DSL statistic).

A *record* is one verdict row (dsl, task, model, method, sample). Each record is classified as

  evaluated    both levels were judged (`pass`/`fail`): it enters both pass rates
  unavailable  either level is `unavailable` (the toolchain is missing here): excluded, counted
  error        either level is `error` (a generation failure or a validator crash): excluded, counted
  unjudged     anything else (a missing status): excluded, counted

Syntax and semantic rates of a cell share one denominator (its evaluated records), so the
syntax-semantic gap compares the same programs. Note that `dslbench.pipeline.pass_rates` keeps a
record whose *semantic* level errored in the syntax denominator and counts it as a semantic failure;
here such a record is excluded from both rates and counted under `errors` (see `compare_with_pipeline`).

With several samples per task, each (task, sample) record is one trial; `tasks_evaluated` counts the
distinct tasks. Aggregates:

  macro           mean over DSL-model cells (the paper's primary aggregate: every cell weighs the same)
  task-weighted   pooled passes / pooled evaluated records (the paper's sensitivity check)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

JUDGED = ("pass", "fail")
DEFAULT_METHOD = "baseline"


def load_verdicts(run_dir) -> pd.DataFrame:
    """The verdict table of any run directory.

    verdicts.jsonl is the source of truth when present (read through RunStore, first record per key);
    a run that only has tables/verdicts.parquet (an exported or synthetic run) is read from Parquet.
    A run with neither gives an empty table with the store's columns.
    """
    from ..store import VERDICT_COLUMNS, RunStore
    run = Path(run_dir)
    jsonl, parquet = run / "verdicts.jsonl", run / "tables" / "verdicts.parquet"
    if jsonl.exists() and jsonl.stat().st_size > 0:
        return RunStore(run).verdict_table()
    if parquet.exists():
        df = pd.read_parquet(parquet)
        missing = [c for c in VERDICT_COLUMNS if c not in df.columns]
        for c in missing:
            df[c] = None
        return df
    return pd.DataFrame(columns=VERDICT_COLUMNS)


def classify(verdicts: pd.DataFrame) -> pd.Series:
    """evaluated / unavailable / error / unjudged for each record (see module docstring)."""
    syn = verdicts["syntax_status"].astype("object")
    sem = verdicts["semantic_status"].astype("object")
    out = pd.Series("unjudged", index=verdicts.index, dtype="object")
    out[syn.isin(JUDGED) & sem.isin(JUDGED)] = "evaluated"
    out[(syn == "error") | (sem == "error")] = "error"
    out[(syn == "unavailable") | (sem == "unavailable")] = "unavailable"
    return out


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
                "unjudged", "syntax_pass", "semantic_pass", "syntax_pct", "semantic_pct", "gap_pp"]


def cell_table(verdicts: pd.DataFrame, method: str | None = DEFAULT_METHOD, dsls=None, models=None) -> pd.DataFrame:
    """One row per DSL x model (x method): counts, macro pass rates (%) and the syntax-semantic gap."""
    df = select(verdicts, method, dsls, models)
    if df.empty:
        return pd.DataFrame(columns=CELL_COLUMNS)
    df = df.assign(_class=classify(df))
    ev = df["_class"] == "evaluated"
    df = df.assign(_ev=ev.astype(int),
                   _syn=(ev & (df["syntax_status"] == "pass")).astype(int),
                   _sem=(ev & (df["semantic_status"] == "pass")).astype(int),
                   _una=(df["_class"] == "unavailable").astype(int),
                   _err=(df["_class"] == "error").astype(int),
                   _unj=(df["_class"] == "unjudged").astype(int),
                   _task=df["task_id"].where(ev))
    g = df.groupby(["dsl", "model", "method"], sort=True)
    cells = pd.DataFrame({"records": g.size(), "evaluated": g["_ev"].sum(), "tasks_evaluated": g["_task"].nunique(),
                          "unavailable": g["_una"].sum(), "errors": g["_err"].sum(), "unjudged": g["_unj"].sum(),
                          "syntax_pass": g["_syn"].sum(), "semantic_pass": g["_sem"].sum()}).reset_index()
    n = cells["evaluated"].where(cells["evaluated"] > 0)
    cells["syntax_pct"] = 100 * cells["syntax_pass"] / n
    cells["semantic_pct"] = 100 * cells["semantic_pass"] / n
    cells["gap_pp"] = cells["syntax_pct"] - cells["semantic_pct"]
    for c in ("records", "evaluated", "tasks_evaluated", "unavailable", "errors", "unjudged", "syntax_pass",
              "semantic_pass"):
        cells[c] = cells[c].astype(int)
    return cells[CELL_COLUMNS]


def overall(cells: pd.DataFrame) -> pd.DataFrame:
    """Macro means over cells with evaluated records, the gap, and the task-weighted aggregate."""
    c = cells[cells["evaluated"] > 0]
    n = int(c["evaluated"].sum())
    rows = [
        ("cells (with evaluated records)", len(c), "count"),
        ("DSLs", c["dsl"].nunique(), "count"),
        ("models", c["model"].nunique(), "count"),
        ("evaluated records", n, "count"),
        ("excluded: unavailable", int(cells["unavailable"].sum()), "count"),
        ("excluded: error", int(cells["errors"].sum()), "count"),
        ("excluded: unjudged", int(cells["unjudged"].sum()), "count"),
        ("mean syntax pass rate (macro)", c["syntax_pct"].mean() if len(c) else np.nan, "%"),
        ("mean semantic pass rate (macro)", c["semantic_pct"].mean() if len(c) else np.nan, "%"),
        ("syntax-semantic gap (macro)", c["gap_pp"].mean() if len(c) else np.nan, "pp"),
        ("syntax pass rate (task-weighted)", 100 * c["syntax_pass"].sum() / n if n else np.nan, "%"),
        ("semantic pass rate (task-weighted)", 100 * c["semantic_pass"].sum() / n if n else np.nan, "%"),
        ("syntax-semantic gap (task-weighted)",
         100 * (c["syntax_pass"].sum() - c["semantic_pass"].sum()) / n if n else np.nan, "pp"),
    ]
    return pd.DataFrame(rows, columns=["statistic", "value", "unit"])


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


def compare_with_pipeline(verdicts: pd.DataFrame, cells: pd.DataFrame, method: str | None = DEFAULT_METHOD) -> pd.DataFrame:
    """Cells beside `dslbench.pipeline.pass_rates` (stage 03's table), with the difference in the rates.

    The two agree whenever no record has a semantic-level error; otherwise stage 03 counts such a record
    as a semantic failure in its denominator and this module excludes it (see the module docstring).
    """
    from ..pipeline import pass_rates
    df = select(verdicts, method)
    if df.empty or cells.empty:
        return pd.DataFrame()
    p = pass_rates(df)
    m = cells.merge(p, on=["dsl", "model", "method"], how="outer", suffixes=("", "_stage03"))
    m["syntax_diff_pp"] = m["syntax_pct"] - m["syntax_pass_pct"]
    m["semantic_diff_pp"] = m["semantic_pct"] - m["semantic_pass_pct"]
    return m[["dsl", "model", "evaluated", "evaluated_stage03", "syntax_pct", "syntax_pass_pct", "syntax_diff_pp",
              "semantic_pct", "semantic_pass_pct", "semantic_diff_pp"]]


def task_matrix(verdicts: pd.DataFrame, dsl: str, level: str = "semantic", method: str | None = DEFAULT_METHOD,
                models=None) -> pd.DataFrame:
    """tasks x models matrix of 0/1 outcomes (mean over samples) for one DSL, evaluated records only."""
    df = select(verdicts, method, [dsl], models)
    df = df[classify(df) == "evaluated"]
    if df.empty:
        return pd.DataFrame()
    df = df.assign(_y=(df[f"{level}_status"] == "pass").astype(float))
    return df.pivot_table(index="task_id", columns="model", values="_y", aggfunc="mean").sort_index()
