"""Interactive per-task viewer for Jupyter and Binder (ipywidgets).

    from dslbench.viewer import TaskViewer
    TaskViewer("runs/default")

Filter by DSL, model, method, verdict and reason, search words of the instruction, output, program and
diagnostics, sort, see a summary of the current slice, step through the matching records, and read for
each the prompt, raw output, extracted program with a diff against the gold, commands, logs and verdicts
(the same filters as the book's static log browser, tasks/search.html).
Records of later rounds of the same task (refinement) are listed together.
"""
from __future__ import annotations

import difflib
import html
import json

import ipywidgets as w
import pandas as pd

from . import audit
from .store import RunStore
from .tasks import load_tasks

ANY = "(any)"
SORTS = {"task": ["dsl", "task_id", "model", "method", "sample", "round"],
         "semantic status": ["semantic_status", "dsl", "task_id", "model", "method", "sample", "round"],
         "syntax status": ["syntax_status", "dsl", "task_id", "model", "method", "sample", "round"],
         "difficulty": ["difficulty", "dsl", "task_id", "model", "method", "sample", "round"]}
SEARCHED = ("task_id", "raw_output", "program", "syntax_diagnostics", "semantic_diagnostics")


def slice_summary(df: pd.DataFrame) -> str:
    """One line on a slice of records: how many, the verdicts at each level, the top reasons."""
    if df.empty:
        return "no records"
    parts = [f"{len(df)} record(s)"]
    for level in ("syntax", "semantic"):
        counts = df[f"{level}_status"].value_counts()
        parts.append(f"{level}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    reasons = pd.concat([df["syntax_reason"], df["semantic_reason"]]).value_counts().drop("ok", errors="ignore")
    if len(reasons):
        parts.append("top reasons: " + ", ".join(f"{k} {v}" for k, v in reasons.head(3).items()))
    return " · ".join(parts)


def record_html(row: dict, task, rounds: pd.DataFrame | None = None) -> str:
    def pre(text):
        return f"<pre style='white-space:pre-wrap;max-height:20em;overflow:auto'>{html.escape(str(text or ''))}</pre>"
    messages = json.loads(row["prompt"]) if row.get("prompt") else []
    gold = task.gold if task else ""
    diff = difflib.HtmlDiff(wrapcolumn=70).make_table(
        str(row.get("program") or "").splitlines(), gold.splitlines(), "candidate", "gold", context=False)
    parts = [f"<h3>{html.escape(row['dsl'])} / {html.escape(row['task_id'])} — {html.escape(str(row['model']))}"
             f" — {html.escape(str(row['method']))} — sample {row['sample']}"
             + (f" — round {row['round']}" if row.get("round") else "") + "</h3>",
             f"<p><b>syntax</b>: {html.escape(str(row['syntax_status']))} — {html.escape(str(row['syntax_diagnostics'] or ''))}<br>"
             f"<b>semantic</b>: {html.escape(str(row['semantic_status']))} — {html.escape(str(row['semantic_diagnostics'] or ''))}<br>"
             + (f"<b>oracle expected</b> (in feedback only in tests mode): {html.escape(str(row['semantic_expected']))}<br>"
                if row.get("semantic_expected") else "") +
             f"<b>toolchain</b>: {html.escape(str(row['toolchain']))} {html.escape(str(row['toolchain_version']))}</p>"]
    if rounds is not None and len(rounds) > 1:
        parts.append("<b>All records of this task and model</b>" + rounds.to_html(index=False))
    parts += ["<h4>Instruction</h4>", pre(task.instruction if task else ""),
              "<h4>Prompt as sent</h4>", pre("\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)),
              *(["<h4>Reasoning (kept apart, not judged)</h4>", pre(row.get("reasoning"))] if row.get("reasoning") else []),
              "<h4>Raw output</h4>", pre(row.get("raw_output")),
              "<h4>Candidate vs gold</h4>", diff,
              "<h4>Syntax log</h4>", pre(row.get("syntax_log")), "<h4>Semantic log</h4>", pre(row.get("semantic_log"))]
    return "\n".join(parts)


class TaskViewer:
    def __init__(self, run_dir, reviewer: str = ""):
        self.run_dir, self.reviewer = run_dir, reviewer
        self.table = RunStore(run_dir).verdict_table()
        rounds = self.table["round"] if "round" in self.table else pd.Series(0, index=self.table.index)
        self.table["round"] = pd.to_numeric(rounds, errors="coerce").fillna(0).astype(int)  # refinement rounds
        self.tasks = {t.id: t for ts in load_tasks().values() for t in ts}
        opts = lambda col: [ANY] + sorted(map(str, self.table[col].dropna().unique()))  # noqa: E731
        self.filters = {col: w.Dropdown(options=opts(col), description=col.split("_")[0])
                        for col in ("dsl", "model", "method", "syntax_status", "semantic_status")}
        reasons = pd.concat([self.table["syntax_reason"], self.table["semantic_reason"]]).dropna().unique()
        self.reason = w.Dropdown(options=[ANY] + sorted(map(str, reasons)), description="reason")
        self.search = w.Text(placeholder="words of the output, diagnostics, instruction", description="search")
        self.sort = w.Dropdown(options=list(SORTS), description="sort by")
        self.summary = w.HTML()
        self._text = (self.table["task_id"].map(lambda t: self.tasks[t].instruction if t in self.tasks else "")
                      + " " + self.table[list(SEARCHED)].fillna("").astype(str).agg(" ".join, axis=1)).str.lower()
        self.position = w.BoundedIntText(value=0, min=0, max=0, description="record")
        self.prev, self.next = w.Button(description="◀ previous"), w.Button(description="next ▶")
        self.count = w.Label()
        self.body = w.HTML()
        for f in [*self.filters.values(), self.reason, self.search, self.sort]:
            f.observe(lambda _: self._refilter(), names="value")
        self.position.observe(lambda _: self._show(), names="value")
        self.prev.on_click(lambda _: self._step(-1))
        self.next.on_click(lambda _: self._step(1))
        # the reviewer's audit: one mark per click, appended to <run>/audit.jsonl (dslbench.audit)
        self.audit_level = w.Dropdown(options=["semantic", "syntax"], description="audit")
        self.comment = w.Text(placeholder="comment (why you disagree)")
        self.agree, self.disagree = w.Button(description="agree"), w.Button(description="disagree")
        self.audit_status = w.Label()
        self.agree.on_click(lambda _: self.mark(True))
        self.disagree.on_click(lambda _: self.mark(False))
        self.widget = w.VBox([w.HBox(list(self.filters.values())[:3]),
                              w.HBox([*list(self.filters.values())[3:], self.reason]),
                              w.HBox([self.search, self.sort]), self.summary,
                              w.HBox([self.prev, self.position, self.next, self.count]),
                              w.HBox([self.audit_level, self.agree, self.disagree, self.comment, self.audit_status]),
                              self.body])
        self._refilter()

    def matching(self) -> pd.DataFrame:
        df = self.table
        for col, f in self.filters.items():
            if f.value != ANY:
                df = df[df[col].astype(str) == f.value]
        if self.reason.value != ANY:
            df = df[(df["syntax_reason"] == self.reason.value) | (df["semantic_reason"] == self.reason.value)]
        for word in self.search.value.lower().split():      # every word must occur
            df = df[self._text.loc[df.index].str.contains(word, regex=False)]
        return df.sort_values(SORTS[self.sort.value]).reset_index(drop=True)

    def _refilter(self):
        self.current = self.matching()
        self.summary.value = f"<p><b>This slice</b>: {html.escape(slice_summary(self.current))}</p>"
        self.position.max = max(len(self.current) - 1, 0)
        self.position.value = 0
        self._show()

    def _step(self, delta: int):
        self.position.value = min(max(self.position.value + delta, 0), self.position.max)

    def _show(self):
        n = len(self.current)
        self.count.value = f"{n} matching record(s)"
        if not n:
            self.body.value = "<p>No record matches these filters.</p>"
            return
        row = self.current.iloc[self.position.value].to_dict()
        same = self.table[(self.table["dsl"] == row["dsl"]) & (self.table["task_id"] == row["task_id"])
                          & (self.table["model"] == row["model"])]
        rounds = same[["method", "round", "sample", "syntax_status", "semantic_status"]].sort_values(["method", "sample", "round"])
        self.body.value = record_html(row, self.tasks.get(row["task_id"]), rounds)

    def mark(self, agree: bool) -> dict | None:
        """Record the reviewer's agreement with the shown verdict's level."""
        if not len(self.current):
            return None
        row = self.current.iloc[self.position.value].to_dict()
        entry = audit.mark(self.run_dir, row, self.audit_level.value, agree, self.comment.value, self.reviewer)
        self.audit_status.value = f"marked: {'agree' if agree else 'disagree'} ({entry['level']} {entry['verdict']})"
        self.comment.value = ""
        return entry

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
