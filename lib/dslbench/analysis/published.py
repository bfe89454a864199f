"""The paper's figures (data/published/) beside the figures a run produces."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .meta import check_dsl_key, dsl_folders, published_dir


def load_headline(path=None) -> pd.DataFrame:
    return pd.read_csv(path or published_dir() / "headline.csv")


def load_per_dsl(path=None) -> pd.DataFrame:
    """The paper's per-DSL semantic rates; the `dsl` column must name this checkout's DSL folders
    (another spelling would match no run row and show the DSL as not run)."""
    p = Path(path) if path else published_dir() / "per_dsl_semantic.csv"
    df = pd.read_csv(p)
    folders = dsl_folders()
    for i, dsl in enumerate(df["dsl"]):
        check_dsl_key(p, i + 2, "dsl", dsl, folders)  # line 1 is the header
    return df


def compare(ours: dict, keys=None, context: str = "") -> pd.DataFrame:
    """Published vs. reproduced for the given keys: value, CI, ours, ours CI, difference, and a note
    saying whether our value lies in the paper's CI and whether the paper's lies in ours."""
    pub = load_headline()
    if keys is not None:
        pub = pub[pub["key"].isin(list(keys))]
    rows = []
    for r in pub.itertuples():
        o = ours.get(r.key)
        val, lo, hi = (o if isinstance(o, (tuple, list)) else (o, np.nan, np.nan)) if o is not None else (np.nan,) * 3
        val = float(val) if val is not None else np.nan
        diff = val - r.value if np.isfinite(val) else np.nan
        notes = []
        if not np.isfinite(val):
            notes.append("not computed on this run")
        else:
            if np.isfinite(r.ci_low) and np.isfinite(r.ci_high):
                notes.append("ours inside the paper's CI" if r.ci_low <= val <= r.ci_high else "ours outside the paper's CI")
            if np.isfinite(lo) and np.isfinite(hi):
                notes.append("paper's value inside our CI" if lo <= r.value <= hi else "paper's value outside our CI")
        rows.append({"figure": r.figure, "unit": r.unit, "paper": r.value,
                     "paper CI": f"[{r.ci_low:g}, {r.ci_high:g}]" if np.isfinite(r.ci_low) else "",
                     "ours": val, "our CI": f"[{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) and np.isfinite(hi) else "",
                     "difference (ours - paper)": diff, "note": "; ".join(notes), "source": r.source, "key": r.key})
    out = pd.DataFrame(rows)
    if context:
        out.attrs["context"] = context
    return out
