"""Append-only, resumable run store.

A run is a directory runs/<name>/ with
  run.json            parameters and code revision of each invocation (appended)
  generations.jsonl   one record per (dsl, task, model, method, sample): prompt, raw output, program
  verdicts.jsonl      one record per key: the generation fields plus both verdicts and provenance
  tables/*.parquet    tidy exports for the analysis notebooks

Each record is one JSON line, flushed and fsync'ed before the next task starts, so a kill at any
moment loses at most the record being written. A torn last line (killed mid-write) is cut off when
the store is next opened. Records are keyed by a stable key; a rerun skips keys already present,
and reading keeps the first record of a key, so no key is ever counted twice. The one exception is a
*retryable* record (a failed model call, or the verdict on one): a later record of the same key
replaces it, so a rerun can retry provider errors without editing the file.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd

from .errors import UserError
from .verdicts import SCHEMA_VERSION

KEY_FIELDS = ("dsl", "task_id", "model", "method", "sample")
KINDS = ("generations", "verdicts")


def record_key(rec: dict) -> str:
    """The key fields joined; a refinement round above 0 is appended (baseline records: no round)."""
    key = "|".join(str(rec[k]) for k in KEY_FIELDS)
    return f"{key}|r{rec['round']}" if rec.get("round") else key


def retryable(kind: str, rec: dict) -> bool:
    """A record that a later one of the same key may replace: a provider error, not a judgement."""
    if kind == "generations":
        return rec.get("generation_status") == "error"
    return (rec.get("syntax") or {}).get("reason") == "provider_error"


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


class RunStore:
    def __init__(self, run_dir: Path | str):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        for kind in KINDS:
            self._repair(self.path(kind))
            self._check_schema(kind)

    def path(self, kind: str) -> Path:
        if kind not in KINDS:
            raise ValueError(f"unknown record kind {kind!r}")
        return self.dir / f"{kind}.jsonl"

    @staticmethod
    def _repair(path: Path) -> None:
        """Cut a torn final line left by a kill during a write; complete lines are never touched."""
        if not path.exists() or path.stat().st_size == 0:
            return
        with open(path, "rb+") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b"\n":
                return
            data = f.seek(0) or f.read()
            keep = data.rfind(b"\n") + 1
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())

    def _check_schema(self, kind: str) -> None:
        """Refuse, before anything is appended, a file written by another record schema.

        Generations of schema 1 differ only by fields added since, so they are read as they are;
        verdicts of schema 1 have no reason codes, which cannot be recovered without re-judging.
        """
        path = self.path(kind)
        if not path.exists() or path.stat().st_size == 0:
            return
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline()
        try:
            version = json.loads(first).get("schema", 1)
        except (json.JSONDecodeError, AttributeError):
            raise UserError(f"{path}:1: not a record of a DSL-Bench run store") from None
        if version == SCHEMA_VERSION or (kind == "generations" and version == 1):
            return
        if kind == "verdicts" and version == 1:
            raise UserError(f"{path}:1: field 'schema': verdicts of schema 1 (no reason codes); this version writes "
                            f"schema {SCHEMA_VERSION}. Run `dslbench migrate --run {self.dir}` (it sets the old file "
                            "aside as verdicts.schema1.jsonl) and validate again: the generations are kept.")
        raise UserError(f"{path}:1: field 'schema': records of schema {version}, written by another version of "
                        f"DSL-Bench (this one reads schema {SCHEMA_VERSION}); use that version or a new run folder")

    def append(self, kind: str, record: dict) -> None:
        missing = [k for k in KEY_FIELDS if k not in record]
        if missing:
            raise ValueError(f"record lacks key fields {missing}")
        record = {"schema": SCHEMA_VERSION, **record}
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with open(self.path(kind), "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def iter_records(self, kind: str) -> Iterator[dict]:
        path = self.path(kind)
        if not path.exists():
            return
        kept: dict[str, dict] = {}   # insertion order = order of first appearance
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.endswith("\n"):
                    break  # torn line from a writer killed just now
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise UserError(f"{path}:{lineno}: corrupt record ({e.msg}); the store was edited by hand?") from None
                key = record_key(rec)
                if key not in kept or retryable(kind, kept[key]):
                    kept[key] = rec
        yield from kept.values()

    def records(self, kind: str) -> list[dict]:
        return list(self.iter_records(kind))

    def keys(self, kind: str, retry: bool = False) -> set[str]:
        """Keys present; with retry=True, keys whose record is retryable count as absent."""
        return {record_key(r) for r in self.iter_records(kind) if not (retry and retryable(kind, r))}

    @contextlib.contextmanager
    def writer(self, stage: str):
        """Hold the run's writer lock: one generate / validate at a time per run folder.

        A second writer would redo every item the first is doing, and its torn-line repair could cut
        a record the first is still writing; it is refused with a clear message instead. The lock is
        an flock: it goes away with its process, so a killed run never leaves it stuck.
        """
        path = self.dir / ".lock"
        f = open(path, "a+", encoding="utf-8")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise UserError(f"{self.dir}: run folder is busy ({holder}); wait for it to finish or use another "
                            "--run folder") from None
        try:
            f.seek(0)
            f.truncate()
            f.write(f"dslbench {stage}, pid {os.getpid()}")
            f.flush()
            yield self
        finally:
            f.close()

    def log_invocation(self, stage: str, params: dict) -> None:
        from .revision import code_revision
        entry = {"stage": stage, "params": params, "revision": code_revision(), "started": now()}
        with open(self.dir / "run.json", "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())

    # --- tidy tables -----------------------------------------------------------------------
    def verdict_table(self) -> pd.DataFrame:
        return flatten_verdicts(self.iter_records("verdicts"))

    def _export_stamp(self) -> dict:
        """What the tables are made from: the record files' sizes and times, the columns, the code."""
        from .revision import code_revision
        files = {k: [p.stat().st_size, p.stat().st_mtime_ns] for k in KINDS if (p := self.path(k)).exists()}
        return {"files": files, "columns": VERDICT_COLUMNS, "schema": SCHEMA_VERSION, "revision": code_revision()}

    def export(self, force: bool = False) -> dict[str, Path]:
        """Write Parquet tables for the analysis notebooks; returns their paths. Tables already made
        from the same records by the same code are kept (a `validate` with nothing new rewrites nothing)."""
        out = self.dir / "tables"
        out.mkdir(exist_ok=True)
        paths = {name: out / f"{name}.parquet" for name in KINDS}
        stamp_path, stamp = out / "exported.json", self._export_stamp()
        try:
            unchanged = json.loads(stamp_path.read_text()) == stamp and all(p.exists() for p in paths.values())
        except (OSError, ValueError):
            unchanged = False
        if unchanged and not force:
            return paths
        tables = {"verdicts": self.verdict_table(),
                  "generations": pd.DataFrame([_flat_generation(r) for r in self.iter_records("generations")])}
        for name, df in tables.items():
            path = out / f"{name}.parquet"
            tmp = path.with_suffix(".parquet.tmp")
            df.to_parquet(tmp, index=False)
            os.replace(tmp, path)  # readers never see a half-written table
        stamp_path.write_text(json.dumps(stamp))
        return paths


def migrate_run(run_dir: Path | str) -> list[str]:
    """Set aside files of an older schema that cannot be read as they are; returns what was done."""
    done = []
    path = Path(run_dir) / "verdicts.jsonl"
    if path.exists() and path.stat().st_size:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = json.loads(f.readline() or "{}")
        if first.get("schema", 1) == 1:
            target = path.with_name("verdicts.schema1.jsonl")
            os.replace(path, target)
            done.append(f"{path.name} -> {target.name}: validate again to judge the generations with reasons")
    return done


def _flat_generation(r: dict) -> dict:
    d = {k: v for k, v in r.items() if k not in ("messages", "usage", "params")}
    d["messages"] = json.dumps(r.get("messages", []), ensure_ascii=False)
    for k in ("retrieved", "retrieval"):  # intervention records: nested values as JSON text
        if k in r:
            d[k] = json.dumps(r[k], ensure_ascii=False, sort_keys=True)
    d["params"] = json.dumps(r.get("params", {}), sort_keys=True)
    for k, v in (r.get("usage") or {}).items():
        d[f"usage_{k}"] = v
    return d


VERDICT_COLUMNS = ["schema", "run", *KEY_FIELDS, "domain", "difficulty", "split", "toolchain", "toolchain_version",
                   "dialect", "judge_exact", "judge_stand_in_for", "validator", "syntax_status", "semantic_status", "syntax_reason",
                   "semantic_reason", "syntax_diagnostics", "semantic_diagnostics", "syntax_expected", "semantic_expected",
                   "syntax_command", "semantic_command", "syntax_log", "semantic_log",
                   "syntax_duration_s", "semantic_duration_s", "sandbox", "generation_status",
                   "prompt", "raw_output", "reasoning", "finish_reason", "program", "extraction_rule", "prompt_version",
                   "temperature", "revision", "started", "finished"]


def flatten_verdicts(records: Iterable[dict]) -> pd.DataFrame:
    rows = []
    for r in records:
        row = {k: r.get(k) for k in VERDICT_COLUMNS if not k.startswith(("syntax_", "semantic_"))}
        row["prompt"] = json.dumps(r.get("messages", []), ensure_ascii=False)
        for level in ("syntax", "semantic"):
            v = r.get(level) or {}
            for f in ("status", "reason", "diagnostics", "expected", "command", "log", "duration_s"):
                row[f"{level}_{f}"] = v.get(f)
        if "round" in r:  # refinement rounds (interventions); baseline-only runs keep exactly VERDICT_COLUMNS
            row["round"] = r["round"]
        rows.append(row)
    extra = ["round"] if any("round" in row for row in rows) else []
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS + extra)


# Columns that legitimately differ between two identical runs.
VOLATILE_COLUMNS = ("run", "started", "finished", "syntax_duration_s", "semantic_duration_s", "revision")


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    """The verdict table without timing/identity columns, sorted by key: equal for reproducible runs."""
    return df.drop(columns=[c for c in VOLATILE_COLUMNS if c in df.columns]).sort_values(list(KEY_FIELDS)).reset_index(drop=True)
