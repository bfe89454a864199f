"""The reviewer's audit of the judges (the paper's manual check of 20 outputs per DSL).

A reviewer reads a verdict (task page, viewer) and marks whether they agree with it; each mark is one
line of `<run>/audit.jsonl`, appended and fsync'ed, never rewritten. A later mark by the same reviewer
on the same record and level replaces the earlier one when counting. `sample` draws the audit sample
reproducibly; metrics.judge_agreement turns the marks into per-DSL agreement with Wilson intervals.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd

from . import metrics
from .errors import UserError
from .store import KEY_FIELDS, RunStore, now

AUDIT_FILE = "audit.jsonl"
LEVELS = ("syntax", "semantic")
MARK_FIELDS = (*KEY_FIELDS, "round", "level", "verdict", "agree", "comment", "reviewer", "marked")


def audit_path(run_dir) -> Path:
    return Path(run_dir) / AUDIT_FILE


def sample(run_dir, per_dsl: int = 20, seed: int = 0, method: str = "baseline") -> pd.DataFrame:
    """`per_dsl` evaluated final verdicts of `method` per DSL, the same ones for the same run and seed
    whatever the order of the records (ranked by a hash of seed and record key)."""
    table = metrics.final_verdicts(metrics.with_rounds(RunStore(run_dir).verdict_table()))
    table = table[(table["method"] == method) & (metrics.classify(table) == "evaluated")].copy()
    if table.empty:
        return table
    table["rank"] = [hashlib.sha256(f"{seed}|{k}".encode()).hexdigest()
                     for k in table[list(KEY_FIELDS)].astype(str).agg("|".join, axis=1)]
    picked = table.sort_values(["dsl", "rank"]).groupby("dsl", sort=True).head(per_dsl)
    return picked.drop(columns="rank").reset_index(drop=True)


def mark(run_dir, record: dict, level: str, agree: bool, comment: str = "", reviewer: str = "") -> dict:
    """Append one reviewer mark on one level of one verdict record (a row of the verdict table)."""
    if level not in LEVELS:
        raise UserError(f"audit level {level!r}: expected one of {', '.join(LEVELS)}")
    entry = {**{k: record[k] for k in KEY_FIELDS}, "round": int(record.get("round") or 0), "level": level,
             "verdict": record.get(f"{level}_status"), "agree": bool(agree), "comment": comment,
             "reviewer": reviewer or os.environ.get("USER", ""), "marked": now()}
    path = audit_path(run_dir)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return entry


def marks(run_dir) -> pd.DataFrame:
    """Every mark that counts: the last one per (record, round, level, reviewer). A torn last line (a
    writer killed mid-line) is ignored; any other bad line names the file, line and field."""
    path, rows = audit_path(run_dir), []
    if path.exists():
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.endswith("\n"):
                    break
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError as e:
                    raise UserError(f"{path}:{lineno}: not a JSON line ({e.msg})") from None
                missing = [k for k in MARK_FIELDS if k not in entry]
                if missing:
                    raise UserError(f"{path}:{lineno}: field '{missing[0]}': missing")
                if not isinstance(entry["agree"], bool) or entry["level"] not in LEVELS:
                    bad = "agree" if not isinstance(entry["agree"], bool) else "level"
                    raise UserError(f"{path}:{lineno}: field '{bad}': {entry[bad]!r} is not valid")
                rows.append(entry)
    df = pd.DataFrame(rows, columns=list(MARK_FIELDS))
    return df.drop_duplicates([*KEY_FIELDS, "round", "level", "reviewer"], keep="last").reset_index(drop=True)
