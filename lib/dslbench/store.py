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
import fcntl
import functools
import hashlib
import inspect
import json
import os
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd

from .errors import UserError
from .verdicts import SCHEMA_VERSION, now  # noqa: F401 (now: re-exported)

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
        kept: dict[str, dict] = {}   # insertion order = order of first appearance
        for _, _, rec in self._read_lines(kind):
            key = record_key(rec)
            if key not in kept or retryable(kind, kept[key]):
                kept[key] = rec
        yield from kept.values()

    def _read_lines(self, kind: str, start: int = 0, lineno: int = 0) -> Iterator[tuple[int, int, dict]]:
        """(byte offset, offset after it, record) of each complete line from byte `start` (line `lineno`) on."""
        path = self.path(kind)
        if not path.exists():
            return
        with open(path, "rb") as f:
            f.seek(start)
            offset = start
            for line in f:
                if not line.endswith(b"\n"):
                    break  # torn line from a writer killed just now
                lineno += 1
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise UserError(f"{path}:{lineno}: corrupt record ({e.msg}); the store was edited by hand?") from None
                yield offset, offset + len(line), rec
                offset += len(line)

    def records(self, kind: str, keys: Iterable[str] | None = None) -> list[dict]:
        """Every record (first per key), or only those of `keys`, read by offset from the index."""
        if keys is None:
            return list(self.iter_records(kind))
        wanted = set(keys)
        index = self.table(kind, INDEX_COLUMNS)
        offsets = index.loc[index["_key"].isin(wanted), "_offset"]
        out = []
        if offsets.empty:
            return out
        with open(self.path(kind), "rb") as f:
            for offset in offsets:
                f.seek(int(offset))
                out.append(json.loads(f.readline()))
        return out

    def keys(self, kind: str, retry: bool = False) -> set[str]:
        """Keys present; with retry=True, keys whose record is retryable count as absent."""
        index = self.table(kind, INDEX_COLUMNS)
        return set(index.loc[~index["_retry"], "_key"] if retry else index["_key"])

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
    # tables/<kind>.parquet is the tidy table of one kind (first record per key, as iter_records) plus
    # INDEX_COLUMNS. It is brought up to date by reading only the lines appended since it was written,
    # so resume, pass rates and the book read a paper-scale run in seconds, not by parsing every line.

    def table(self, kind: str, columns: Iterable[str] | None = None) -> pd.DataFrame:
        """The tidy table of one kind with the index columns; `columns` (those present) to read fewer."""
        path, out = self.path(kind), self.dir / "tables" / f"{kind}.parquet"
        stamps = self._stamps()
        stamp = stamps.get(kind)
        size = path.stat().st_size if path.exists() else 0
        kept = bool(stamp) and out.exists() and self._prefix_unchanged(path, stamp)
        if kept and stamp["bytes"] == size:
            return _read_parquet(out, columns)
        start = stamp["bytes"] if kept else 0
        old = pd.read_parquet(out) if start else None
        new, end, lines = self._flatten_from(kind, start, stamp["lines"] if start else 0)
        df = _first_per_key(new if old is None else pd.concat([old, new], ignore_index=True))
        try:
            (self.dir / "tables").mkdir(exist_ok=True)
            tmp = out.with_suffix(".parquet.tmp")
            df.to_parquet(tmp, index=False)
            os.replace(tmp, out)  # readers never see a half-written table
            stamps[kind] = {"bytes": end, "lines": lines, "format": _table_format(), "tail": _tail_hash(path, end)}
            _write_atomic(self.dir / "tables" / "exported.json", json.dumps(stamps, sort_keys=True))
            return _read_parquet(out, columns)  # the same column types as every later read of the table
        except OSError:
            pass  # a read-only run folder (a published reference run): the table is just not kept
        return df if columns is None else df[[c for c in columns if c in df.columns]]

    def _stamps(self) -> dict:
        try:
            stamps = json.loads((self.dir / "tables" / "exported.json").read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(stamps, dict):
            return {}
        return {k: v for k, v in stamps.items() if k in KINDS and isinstance(v, dict)
                and v.get("format") == _table_format() and isinstance(v.get("bytes"), int)}

    @staticmethod
    def _prefix_unchanged(path: Path, stamp: dict) -> bool:
        """The lines the table was made from are still the file's first lines (append-only, not rewritten)."""
        size = path.stat().st_size if path.exists() else 0
        return size >= stamp["bytes"] and _tail_hash(path, stamp["bytes"]) == stamp.get("tail")

    def _flatten_from(self, kind: str, start: int, lineno: int) -> tuple[pd.DataFrame, int, int]:
        """Tidy rows of the complete lines from byte `start` on; returns them, the end offset and line count."""
        recs, offsets, end = [], [], start
        for offset, end, rec in self._read_lines(kind, start, lineno):
            recs.append(rec)
            offsets.append(offset)
        lineno += len(recs)
        df = flatten_verdicts(recs) if kind == "verdicts" else pd.DataFrame([_flat_generation(r) for r in recs])
        for k in KEY_FIELDS:   # an empty file still gives a table with the key columns
            if k not in df.columns:
                df[k] = pd.Series(dtype=object)
        df["_key"] = [record_key(r) for r in recs]
        df["_retry"] = pd.Series([retryable(kind, r) for r in recs], dtype=bool)
        df["_offset"] = pd.Series(offsets, dtype="int64")
        return df, end, lineno

    def verdict_table(self) -> pd.DataFrame:
        df = self.table("verdicts").drop(columns=list(INDEX_COLUMNS))
        if "round" in df.columns and df["round"].isna().all():
            df = df.drop(columns="round")  # baseline-only runs keep exactly VERDICT_COLUMNS
        return df

    def export(self, force: bool = False) -> dict[str, Path]:
        """Bring the Parquet tables for the analysis notebooks up to date; returns their paths. A table
        already made from the same records by the same code is not rewritten."""
        if force:
            (self.dir / "tables" / "exported.json").unlink(missing_ok=True)
        for kind in KINDS:
            self.table(kind, INDEX_COLUMNS)
        return {kind: self.dir / "tables" / f"{kind}.parquet" for kind in KINDS}


INDEX_COLUMNS = ("_key", "_retry", "_offset")  # record key, retryable, byte offset of its line


def _first_per_key(df: pd.DataFrame) -> pd.DataFrame:
    """The rows iter_records keeps: per key, the first non-retryable row, else the last; in the order of
    each key's first appearance. Applying it again to its result plus newer rows gives the same as once
    to all rows, which is what lets the table grow by the appended lines only."""
    if df.empty:
        return df.reset_index(drop=True)
    pos = pd.Series(range(len(df)), index=df.index)
    key, ok = df["_key"], ~df["_retry"].astype(bool)
    chosen = pos.groupby(key).last()
    chosen.update(pos[ok].groupby(key[ok]).first())
    first_seen = pos.groupby(key).first().sort_values()
    return df.iloc[chosen.loc[first_seen.index].to_numpy(dtype="int64")].reset_index(drop=True)


def _read_parquet(path: Path, columns) -> pd.DataFrame:
    if columns is None:
        return pd.read_parquet(path)
    import pyarrow.parquet as pq
    names = set(pq.read_schema(path).names)
    return pd.read_parquet(path, columns=[c for c in columns if c in names])


def _tail_hash(path: Path, end: int) -> str:
    """Hash of the 4 KiB before `end`: tells an appended file from a rewritten one cheaply."""
    if not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(max(0, end - 4096))
        return hashlib.sha256(f.read(min(end, 4096))).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@functools.cache
def _table_format() -> str:
    """Changes whenever the table code does, so a table written by other code is rebuilt, never reused."""
    src = "".join(inspect.getsource(f) for f in (flatten_verdicts, _flat_generation, _first_per_key, record_key, retryable))
    return hashlib.sha256((src + json.dumps(VERDICT_COLUMNS)).encode()).hexdigest()[:16]


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
