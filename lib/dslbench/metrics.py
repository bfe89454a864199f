"""Pass rates: the one definition every page, table and test uses.

A *record* is one verdict row (dsl, task, model, method, sample; a refinement chain counts once, by
its last round). Each record is classified as

  evaluated    both levels judged (`pass` / `fail`): it enters both rates
  unavailable  a level is `unavailable` (no judge here): excluded, counted by reason
  error        a level is `error` (our fault: provider, harness, gold, sandbox): excluded, counted by reason
  unjudged     a status is missing (a record of an unknown shape): excluded, counted

The denominator rule: syntax and semantic rates of a group share one denominator, its evaluated
records, so the syntax-semantic gap compares the same programs. A record whose semantic level
errored is excluded from both rates. Paired comparisons (interventions vs. their matched baseline)
use the records evaluated under both methods, and their gain is the difference on that paired set,
so the gain table, the paired bootstrap and McNemar see the same pairs.

Aggregates: *macro* = mean over cells (every DSL-model cell weighs the same, the paper's primary);
*task-weighted* = pooled passes / pooled evaluated records.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

JUDGED = ("pass", "fail")
KEY_FIELDS = ("dsl", "task_id", "model", "method", "sample")
PAIR_KEYS = ["dsl", "task_id", "model", "sample"]
GROUP = ("dsl", "model", "method")
RATE_COLUMNS = ["records", "evaluated", "tasks_evaluated", "unavailable", "errors", "unjudged", "syntax_pass",
                "semantic_pass", "syntax_pct", "semantic_pct", "gap_pp", "judge", "judge_exact", "stand_in_for",
                "excluded_reasons"]


def with_rounds(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdict table with an integer `round` column (0 where a record has none)."""
    df = verdicts.copy()
    rounds = df["round"] if "round" in df else pd.Series(0, index=df.index)
    df["round"] = pd.to_numeric(rounds, errors="coerce").fillna(0).astype(int)
    return df


def final_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One record per (dsl, task, model, method, sample): the last round of each refinement chain."""
    df = with_rounds(verdicts)
    if df.empty or not (df["round"] > 0).any():  # no refinement rounds: one record per key already
        return df
    return (df.sort_values([*KEY_FIELDS, "round"]).groupby(list(KEY_FIELDS), as_index=False).tail(1)
              .reset_index(drop=True))


def classify(verdicts: pd.DataFrame) -> pd.Series:
    """evaluated / unavailable / error / unjudged for each record (see the module docstring)."""
    syn = verdicts["syntax_status"].astype("object")
    sem = verdicts["semantic_status"].astype("object")
    out = pd.Series("unjudged", index=verdicts.index, dtype="object")
    out[syn.isin(JUDGED) & sem.isin(JUDGED)] = "evaluated"
    out[(syn == "error") | (sem == "error")] = "error"
    out[(syn == "unavailable") | (sem == "unavailable")] = "unavailable"
    return out


def exclusion_reason(verdicts: pd.DataFrame) -> pd.Series:
    """For records that are not evaluated: the reason of the first level that was not judged ('' otherwise)."""
    syn_ok = verdicts["syntax_status"].isin(JUDGED)
    syn_r = _reasons(verdicts, "syntax")
    sem_r = _reasons(verdicts, "semantic")
    out = syn_r.where(~syn_ok, sem_r)
    return out.where(classify(verdicts) != "evaluated", "")


def _reasons(df: pd.DataFrame, level: str) -> pd.Series:
    col = f"{level}_reason"
    status = df[f"{level}_status"].astype("object").fillna("missing")
    if col not in df:
        return status.map(lambda s: f"({s}, no reason recorded)")
    return df[col].astype("object").where(df[col].notna() & (df[col] != ""),
                                          status.map(lambda s: f"({s}, no reason recorded)"))


def rates(verdicts: pd.DataFrame, by=GROUP, final: bool = True) -> pd.DataFrame:
    """Per group (default DSL x model x method): counts, pass rates (%), the gap, the judge and exclusions.

    final=False keeps every refinement round (for per-round tables grouped by `round`).
    """
    by = list(by)
    if verdicts.empty:
        return pd.DataFrame(columns=by + RATE_COLUMNS)
    df = final_verdicts(verdicts) if final else with_rounds(verdicts)
    cls = classify(df)
    ev = cls == "evaluated"
    exact = df["judge_exact"] if "judge_exact" in df else pd.Series(True, index=df.index)
    stand_in = df["judge_stand_in_for"].fillna("").astype(str) if "judge_stand_in_for" in df else pd.Series("", index=df.index)
    judge = (df["toolchain"].fillna("").astype(str) + " " + df["toolchain_version"].fillna("").astype(str)).str.strip() \
        if "toolchain" in df else pd.Series("", index=df.index)
    df = df.assign(_ev=ev.astype(int), _syn=(ev & (df["syntax_status"] == "pass")).astype(int),
                   _sem=(ev & (df["semantic_status"] == "pass")).astype(int),
                   _una=(cls == "unavailable").astype(int), _err=(cls == "error").astype(int),
                   _unj=(cls == "unjudged").astype(int), _task=df["task_id"].where(ev),
                   _exact=exact.astype("object").fillna(True).astype(bool), _judge=judge.where(ev, ""),
                   _stand_in=stand_in.where(ev, ""), _why=exclusion_reason(df))
    g = df.groupby(by, sort=True)
    out = pd.DataFrame({"records": g.size(), "evaluated": g["_ev"].sum(), "tasks_evaluated": g["_task"].nunique(),
                        "unavailable": g["_una"].sum(), "errors": g["_err"].sum(), "unjudged": g["_unj"].sum(),
                        "syntax_pass": g["_syn"].sum(), "semantic_pass": g["_sem"].sum(),
                        "judge": g["_judge"].agg(lambda s: ", ".join(sorted(set(s) - {""}))),
                        "judge_exact": g["_exact"].all(),
                        "stand_in_for": g["_stand_in"].agg(lambda s: ", ".join(sorted(set(s) - {""}))),
                        "excluded_reasons": g["_why"].agg(_count_reasons)}).reset_index()
    n = out["evaluated"].where(out["evaluated"] > 0)
    out["syntax_pct"] = 100 * out["syntax_pass"] / n
    out["semantic_pct"] = 100 * out["semantic_pass"] / n
    out["gap_pp"] = out["syntax_pct"] - out["semantic_pct"]
    return out[by + RATE_COLUMNS]


def pass_at_k_estimate(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task from n samples with c passes: 1 - C(n-c, k) / C(n, k) (Chen et al., 2021)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))   # the product form, stable for large n


def samples_per_task(verdicts: pd.DataFrame) -> int:
    """The largest number of samples any (dsl, task, model, method) has: 1 for the paper's protocol."""
    if verdicts.empty or "sample" not in verdicts:
        return 1
    return int(verdicts.groupby(["dsl", "task_id", "model", "method"])["sample"].nunique().max())


def default_ks(samples: int) -> list[int]:
    """The k reported for N samples per task: 1, the usual 2/5/10/20/50/100 up to N, and N itself."""
    return sorted({1, *[k for k in (2, 5, 10, 20, 50, 100) if k <= samples], samples})


def pass_at_k(verdicts: pd.DataFrame, ks=(1,), level: str = "semantic", by=GROUP) -> pd.DataFrame:
    """Per group: mean over tasks of the unbiased pass@k (%), from each task's evaluated samples.

    Samples are the records of one (dsl, task, model, method) that differ in `sample`; excluded records
    (error, unavailable) are not samples. A task with fewer than k evaluated samples does not enter
    pass@k; `tasks_below_k` counts them.
    """
    by = list(by)
    df = final_verdicts(verdicts)
    df = df[classify(df) == "evaluated"].assign(_pass=lambda d: (d[f"{level}_status"] == "pass").astype(int))
    per_task = df.groupby([*by, "task_id"])["_pass"].agg(n="size", c="sum").reset_index()
    rows = []
    for key, g in per_task.groupby(by, sort=True):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)), tasks=len(g))
        for k in ks:
            ok = g[g["n"] >= k]
            row[f"pass@{k}_pct"] = 100 * float(np.mean([pass_at_k_estimate(n, c, k) for n, c in zip(ok["n"], ok["c"])])) \
                if len(ok) else np.nan
            row[f"tasks_below_{k}"] = int((g["n"] < k).sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=[*by, "tasks", *[c for k in ks for c in (f"pass@{k}_pct", f"tasks_below_{k}")]])


def with_pass_at_k(cells: pd.DataFrame, verdicts: pd.DataFrame, by=GROUP) -> pd.DataFrame:
    """The cells with `samples` and semantic `pass@k_pct` columns when the run drew several samples per task.

    With one sample per task (the paper's protocol) the cells are returned unchanged: pass@1 is then
    the semantic rate itself.
    """
    samples = samples_per_task(verdicts)
    if samples <= 1 or cells.empty:
        return cells
    ks = default_ks(samples)
    pk = pass_at_k(verdicts, ks, by=by)[[*by, *[f"pass@{k}_pct" for k in ks]]]
    return cells.merge(pk, on=list(by), how="left").assign(samples=samples)


def _count_reasons(reasons: pd.Series) -> str:
    counts = reasons[reasons != ""].value_counts()
    return ", ".join(f"{r} {n}" for r, n in counts.items())


def exclusions(verdicts: pd.DataFrame, by=("dsl",)) -> pd.DataFrame:
    """Excluded records per group, status and reason (long form), most frequent first."""
    by = list(by)
    cols = by + ["status", "reason", "records"]
    if verdicts.empty:
        return pd.DataFrame(columns=cols)
    df = final_verdicts(verdicts)
    df = df.assign(status=classify(df), reason=exclusion_reason(df))
    df = df[df["status"] != "evaluated"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = df.groupby(by + ["status", "reason"]).size().rename("records").reset_index()
    return out.sort_values(by + ["records"], ascending=[True] * len(by) + [False]).reset_index(drop=True)[cols]


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


# --- paired comparisons (interventions) -----------------------------------------------------------

def pairs(verdicts: pd.DataFrame, method: str, level: str = "semantic", baseline: str = "baseline") -> pd.DataFrame:
    """Task-level pairs (baseline pass, method pass) over records evaluated under both methods."""
    df = final_verdicts(verdicts)
    df = df[classify(df) == "evaluated"]
    b = df[df["method"] == baseline][PAIR_KEYS + [f"{level}_status"]]
    m = df[df["method"] == method][PAIR_KEYS + [f"{level}_status"]]
    p = b.merge(m, on=PAIR_KEYS, suffixes=("_baseline", "_method"))
    p["baseline"] = (p[f"{level}_status_baseline"] == "pass").astype(int)
    p["treated"] = (p[f"{level}_status_method"] == "pass").astype(int)
    return p[PAIR_KEYS + ["baseline", "treated"]]


GAIN_COLUMNS = ["dsl", "model", "method", "evaluated", "syntax_pct", "semantic_pct", "syntax_pct_baseline",
                "semantic_pct_baseline", "syntax_gain_pp", "semantic_gain_pp"]


def gains(verdicts: pd.DataFrame, baseline: str = "baseline") -> pd.DataFrame:
    """Per DSL x model x method: both rates on the paired set and the gain (pp) over the matched baseline."""
    methods = sorted(set(verdicts.get("method", pd.Series(dtype=str)).dropna()) - {baseline})
    rows = []
    for method in methods:
        syn, sem = pairs(verdicts, method, "syntax", baseline), pairs(verdicts, method, "semantic", baseline)
        for (dsl, model), s in syn.groupby(["dsl", "model"]):
            t = sem[(sem["dsl"] == dsl) & (sem["model"] == model)]
            r = {"dsl": dsl, "model": model, "method": method, "evaluated": len(s),
                 "syntax_pct": 100 * s["treated"].mean(), "semantic_pct": 100 * t["treated"].mean(),
                 "syntax_pct_baseline": 100 * s["baseline"].mean(), "semantic_pct_baseline": 100 * t["baseline"].mean()}
            r["syntax_gain_pp"] = r["syntax_pct"] - r["syntax_pct_baseline"]
            r["semantic_gain_pp"] = r["semantic_pct"] - r["semantic_pct_baseline"]
            rows.append(r)
    return pd.DataFrame(rows, columns=GAIN_COLUMNS)


# --- loud failure ---------------------------------------------------------------------------------

DEFAULT_MIN_JUDGED = 0.5


def judging_health(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per DSL: records, judged (evaluated) and the share judged among records a judge was expected for.

    A DSL whose toolchain is missing here (`toolchain_unavailable`) is reported, not counted against
    the run: `dslbench doctor` and the book already say it cannot be judged.
    """
    cols = ["dsl", "records", "evaluated", "expected", "judged_fraction", "top_reason", "top_reason_records"]
    if verdicts.empty:
        return pd.DataFrame(columns=cols)
    df = final_verdicts(verdicts)
    df = df.assign(_cls=classify(df), _why=exclusion_reason(df))
    rows = []
    for dsl, g in df.groupby("dsl"):
        expected = g[g["_why"] != "toolchain_unavailable"]
        ev = int((g["_cls"] == "evaluated").sum())
        why = expected.loc[expected["_cls"] != "evaluated", "_why"].value_counts()
        rows.append({"dsl": dsl, "records": len(g), "evaluated": ev, "expected": len(expected),
                     "judged_fraction": ev / len(expected) if len(expected) else float("nan"),
                     "top_reason": why.index[0] if len(why) else "", "top_reason_records": int(why.iloc[0]) if len(why) else 0})
    return pd.DataFrame(rows, columns=cols)


def underjudged(verdicts: pd.DataFrame, min_judged: float = DEFAULT_MIN_JUDGED) -> pd.DataFrame:
    """The DSLs of `judging_health` whose judged fraction is below `min_judged`."""
    h = judging_health(verdicts)
    return h[h["judged_fraction"] < min_judged].reset_index(drop=True)


class RunCannotJudge(RuntimeError):
    """Too few records of a DSL were judged: the run's numbers would describe almost nothing."""


def require_judged(verdicts: pd.DataFrame, min_judged: float = DEFAULT_MIN_JUDGED) -> None:
    bad = underjudged(verdicts, min_judged)
    if len(bad):
        parts = [f"{r.dsl}: {r.evaluated}/{r.expected} judged, top reason {r.top_reason} ({r.top_reason_records})"
                 for r in bad.itertuples()]
        raise RunCannotJudge(f"fewer than {100 * min_judged:.0f} % of the records were judged for "
                             f"{len(bad)} DSL(s): " + "; ".join(parts) +
                             ". The verdicts are kept; fix the cause (see `dslbench doctor` and the verdict logs) "
                             "and validate again, or lower the threshold with --min-judged.")


# --- the reviewer's audit of the judges ---------------------------------------------------------

def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of a proportion (NaN, NaN for n = 0)."""
    if n == 0:
        return float("nan"), float("nan")
    from statsmodels.stats.proportion import proportion_confint
    lo, hi = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(lo), float(hi)


def judge_agreement(marks: pd.DataFrame, level: str | None = "semantic", by=("dsl",)) -> pd.DataFrame:
    """Per group: audited verdicts, how many the reviewers agreed with, agreement % and its 95 % Wilson
    interval; one row `all` over every mark. `marks` is audit.marks(run) (one per record, level and
    reviewer); `level=None` pools both levels."""
    cols = [*by, "audited", "agreed", "agreement_pct", "ci_low_pct", "ci_high_pct", "disagreements"]
    df = marks if level is None else marks[marks["level"] == level]
    if df.empty:
        return pd.DataFrame(columns=cols)
    groups = [(keys if isinstance(keys, tuple) else (keys,), g) for keys, g in df.groupby(list(by), sort=True)]
    groups.append((("all",) * len(by), df))
    rows = []
    for keys, g in groups:
        n, k = len(g), int(g["agree"].sum())
        lo, hi = wilson_interval(k, n)
        rows.append({**dict(zip(by, keys)), "audited": n, "agreed": k, "agreement_pct": 100 * k / n,
                     "ci_low_pct": 100 * lo, "ci_high_pct": 100 * hi, "disagreements": n - k})
    return pd.DataFrame(rows, columns=cols)


def missingness_by_model(verdicts: pd.DataFrame, by=("dsl",)) -> pd.DataFrame:
    """Per group: each model's share of records no judge could judge (`unavailable`), and whether that
    share differs between models (chi-square test of independence, model x unavailable; NaN with one
    model or nothing missing). A stand-in judge that lacks constructs only some models use makes the
    missingness informative: the rates of those models are then over a different subset of tasks."""
    cols = [*by, "models", "records", "unavailable", "unavailable_by_model", "chi2", "p_value", "differs"]
    if verdicts.empty:
        return pd.DataFrame(columns=cols)
    from scipy.stats import chi2_contingency
    df = final_verdicts(verdicts)
    df = df.assign(_una=(classify(df) == "unavailable").astype(int))
    rows = []
    for keys, g in df.groupby(list(by), sort=True):
        keys = keys if isinstance(keys, tuple) else (keys,)
        per = g.groupby("model")["_una"].agg(["sum", "size"])
        table = np.array([per["sum"], per["size"] - per["sum"]])
        chi2 = p = float("nan")
        if len(per) > 1 and 0 < per["sum"].sum() < per["size"].sum():
            chi2, p, _, _ = chi2_contingency(table)
        rows.append({**dict(zip(by, keys)), "models": len(per), "records": int(per["size"].sum()),
                     "unavailable": int(per["sum"].sum()),
                     "unavailable_by_model": ", ".join(f"{m}: {int(r['sum'])}/{int(r['size'])}" for m, r in per.iterrows()),
                     "chi2": float(chi2), "p_value": float(p), "differs": bool(p < 0.05) if p == p else False})
    return pd.DataFrame(rows, columns=cols)


def generation_throughput(gens: pd.DataFrame, by=("model", "method")) -> pd.DataFrame:
    """Model calls per group (a method is a stage's way of prompting): replies, seconds of model time,
    calls/s and completion tokens/s over that time, tokens per reply, and how the replies ended.

    Over the good replies (generation_status ok); a reply served from the cache keeps the time and
    tokens of the call that made it, so the figures describe the model and protocol, not the rerun.
    With one worker (the embedded model) model time is wall time; with several it is their sum.
    """
    cols = [*by, "replies", "cached", "model_s", "calls_per_s", "tokens_per_s", "tokens_per_reply", "ended_by"]
    if gens.empty or "generation_status" not in gens:
        return pd.DataFrame(columns=cols)
    ok = gens[gens["generation_status"] == "ok"]
    rows = []
    for key, g in ok.groupby(list(by), sort=True):
        seconds = float(g["generation_duration_s"].fillna(0).sum())
        tokens = float(g["usage_completion_tokens"].fillna(0).sum()) if "usage_completion_tokens" in g else np.nan
        ends = g["finish_reason"].fillna("unknown").value_counts()
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "replies": len(g),
                     "cached": int(g["cached"].fillna(False).astype(bool).sum()) if "cached" in g else 0,
                     "model_s": round(seconds, 1),
                     "calls_per_s": round(len(g) / seconds, 3) if seconds else np.nan,
                     "tokens_per_s": round(tokens / seconds, 1) if seconds else np.nan,
                     "tokens_per_reply": round(tokens / len(g), 1),
                     "ended_by": ", ".join(f"{k} {v}" for k, v in ends.items())})
    return pd.DataFrame(rows, columns=cols)
