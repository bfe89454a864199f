"""Build the published supplement (Jupyter Book 1) from a run directory.

Sources that depend on the run are generated into book/generated/ (not tracked): the executed
stage notebooks, one card per DSL, the results page and the batch-run index. After Sphinx has
built the book, the per-task log pages are written as plain static HTML under tasks/ in the build
folder: one small page per (DSL, task, model, method, sample) and one filterable index per
(DSL, model, method) slice, paginated, so a large run never becomes one giant page or a slow
Sphinx build. JavaScript the pages need (require.js, the widget manager, MathJax) is copied from
book/vendor/node_modules, never loaded from a CDN.
"""
from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from . import metrics, toolchains, verdicts
from .metrics import final_verdicts, with_rounds
from .paths import repo_root, tasks_dir
from .pipeline import doctor
from .store import RunStore
from .tasks import load_tasks
from .upstream import read_report_files

PAGE_ROWS = 500  # rows per task-index page


def book_dir() -> Path:
    return repo_root() / "book"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "x"


def task_page_path(dsl, task_id, model, method, sample, round_=0) -> str:
    """Path of a per-task log page relative to the build root (refinement rounds get a page each)."""
    suffix = f"__r{int(round_)}" if round_ else ""
    return f"tasks/{slug(dsl)}/{slug(model)}/{slug(method)}/{slug(task_id)}__s{sample}{suffix}.html"


def slice_index_path(dsl, model, method, page: int = 1) -> str:
    name = "index.html" if page == 1 else f"index-{page}.html"
    return f"tasks/{slug(dsl)}/{slug(model)}/{slug(method)}/{name}"


# --- generated Sphinx sources ------------------------------------------------------------------

def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def dsl_card_md(dsl: str, tasks: list, matrix_row: dict) -> str:
    card = toolchains.get(dsl).card
    by_diff = pd.Series([t.difficulty for t in tasks]).value_counts().reindex(["easy", "medium", "hard"]).fillna(0)
    sources = pd.Series([t.provenance.get("benchmark", "authored") if t.provenance["source"] == "upstream"
                         else "authored here (CC-BY-4.0)" for t in tasks]).value_counts()
    modes = pd.Series([m for t in tasks for m in t.failure_modes]).value_counts()
    avail = ("available" if matrix_row.get("available") else f"**unavailable**: {matrix_row.get('reason', '')}")
    return "\n".join([
        f"# {card.get('language', dsl)}", "",
        "| | |\n|---|---|",
        f"| Domain | {card.get('domain', '')} |",
        f"| Toolchain | {card.get('toolchain', '')} |",
        f"| Version on the build machine | {matrix_row.get('version') or '—'} |",
        f"| Dialect | {matrix_row.get('dialect') or card.get('dialect', '')} |",
        f"| Availability on the build machine | {avail} |",
        f"| Tasks | {len(tasks)} ({int(by_diff['easy'])} easy, {int(by_diff['medium'])} medium, {int(by_diff['hard'])} hard) |",
        f"| Provenance | {'; '.join(f'{k}: {v}' for k, v in sources.items())} |",
        f"| Failure modes tagged | {', '.join(f'{k} ({v})' for k, v in modes.items())} |",
        f"| Upstream benchmark | {card.get('upstream', '—')} |", "",
        "## Syntax validator", "", str(card.get("syntax_validator", "")).strip(), "",
        "## Semantic oracle", "", str(card.get("semantic_oracle", "")).strip(), "",
        "## Validation boundary", "", str(card.get("validation_boundary", "")).strip(), "",
        "## Prompt rules", "", "```text", str((card.get("prompt") or {}).get("rules", "")).strip(), "```", "",
        *oracle_spec_md(card.get("oracle_schema"))])


def oracle_spec_md(schema: dict | None) -> list[str]:
    """The task oracle's fields as the card's oracle_schema declares them (one row per top-level key; one
    table per form when the schema has two, as `if`/`then`/`else`)."""
    schema = schema or {}
    forms = [("", schema)]
    if isinstance(schema.get("then"), dict) and isinstance(schema.get("else"), dict):
        forms = [(f"When {_condition(schema.get('if'))}:", schema["then"]), ("Otherwise:", schema["else"])]
    tables = []
    for label, form in forms:
        shared = schema.get("properties") or {}
        props = {**shared, **{k: v for k, v in (form.get("properties") or {}).items() if not (v is True and k in shared)}}
        if not props:
            continue
        required = set(schema.get("required", [])) | set(form.get("required", []))
        tables += ([label, ""] if label else []) + ["| field | required | kind | meaning |", "|---|---|---|---|"]
        for key, node in props.items():
            if node is True:
                tables.append(f"| `{key}` | {'yes' if key in required else 'no'} | any |  |")
                continue
            node = node if isinstance(node, dict) else {}
            ref = str(node.get("$ref", ""))
            if ref.startswith("#/$defs/"):       # a shared definition: its kind, the node's own words first
                node = {**(schema.get("$defs") or {}).get(ref.rsplit("/", 1)[1], {}), **node}
            kind = ("one of " + ", ".join(f"`{v}`" for v in node["enum"]) if "enum" in node
                    else f"`{node['const']}`" if "const" in node
                    else node.get("type", "see schema") if isinstance(node.get("type", ""), str) else " or ".join(node["type"]))
            meaning = " ".join(str(node.get("description", "")).split()).replace("|", "\\|")
            tables.append(f"| `{key}` | {'yes' if key in required else 'no'} | {kind} | {meaning} |")
        tables.append("")
    if not tables:
        return []
    return ["## Oracle spec", "", "What a task's `oracle` holds (declared in the card's `oracle_schema`, checked "
            "when tasks load):", "", *tables]


def _condition(cond) -> str:
    """`if: {required: [kind], properties: {kind: {const: repository}}}` -> "`kind` is `repository`"."""
    cond = cond if isinstance(cond, dict) else {}
    consts = [f"`{k}` is `{v['const']}`" for k, v in (cond.get("properties") or {}).items() if isinstance(v, dict) and "const" in v]
    if consts:
        return " and ".join(consts)
    keys = [k for alt in cond.get("anyOf", []) for k in alt.get("required", [])] or cond.get("required", [])
    return " or ".join(f"`{k}`" for k in keys) + " is given" if keys else "the first form applies"


def caveat_md(table: pd.DataFrame) -> list[str]:
    """The one caveat box of the results pages: what a run on the embedded model can and cannot show."""
    from .generation import EMBEDDED_MODEL
    models = sorted(set(table["model"])) if len(table) else []
    embedded = [m for m in models if "smollm2" in str(m).lower() or str(m) == EMBEDDED_MODEL]
    if models and not embedded:
        return []
    return ["```{admonition} What these numbers can show", ":class: caution",
            "This run uses the embedded SmolLM2-135M (a 135-million-parameter model that fits in a PyPI wheel) so that "
            "it reproduces anywhere without a GPU, network or API key. Its pass rates are a **floor**, near zero for "
            "most DSLs: they show that every stage, validator and statistic runs end to end and how to read them, "
            "not the paper's model differences or DSL ranking. Point the pipeline at the paper's models "
            "(`--model`, `data/models.yaml`) for those.", "```", ""]


def stage_notebook_for_book(src: Path, dst: Path) -> None:
    """Copy an executed stage notebook with its code collapsed: code cells get `hide-input` (the reader
    sees the results and can expand the code). Where papermill injected the run's parameters, the
    defaults cell is dropped: one parameters cell, with the values this run used."""
    nb = json.loads(src.read_text(encoding="utf-8"))
    tags_of = lambda c: list((c.get("metadata") or {}).get("tags") or [])
    injected = any("injected-parameters" in tags_of(c) for c in nb.get("cells", []))
    cells = []
    for cell in nb.get("cells", []):
        tags = tags_of(cell)
        if injected and "parameters" in tags:
            continue
        if cell.get("cell_type") == "code" and "hide-input" not in tags:
            cell.setdefault("metadata", {})["tags"] = tags + ["hide-input"]
        cells.append(cell)
    nb["cells"] = cells
    dst.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")


def run_scope_md(run_dir: Path) -> list[str]:
    """What the run is: a stratified task sample (and of what size), the committed reference run (its code
    revision, stage timings and toolchain versions), so no page passes a sample off as the whole benchmark."""
    lines = []
    calls = []
    if (run_dir / "run.json").exists():
        calls = [json.loads(x) for x in (run_dir / "run.json").read_text().splitlines() if x.strip()]
    pipeline = [c for c in calls if c.get("stage") == "pipeline"]
    sample = pipeline[-1]["params"].get("task_sample") if pipeline else None
    stamp = run_dir / ".reference-manifest.json"
    if stamp.exists():
        m = json.loads(stamp.read_text())
        timings = ", ".join(f"{k.split('_', 1)[1].replace('_', ' ')} {v / 60:.1f} min" for k, v in m["stage_seconds"].items())
        lines += ["```{admonition} The committed reference run", ":class: note",
                  f"These pages are built from the reference run committed in `reference/` (made at code revision "
                  f"`{m['code_revision'][:12]}`; wall time of each stage notebook's last execution on 2 cores: {timings}; "
                  "a stage that resumed the run only did what was left, so these are not the cost of a run from scratch). "
                  "Rebuild it with `dslbench reference build`; CI fails when a task or a DSL's judging code changed "
                  "since it was made (`dslbench reference check`). The toolchain versions that judged it are on each "
                  "DSL's card and in `reference/manifest.json`.", "```", ""]
    base = {"run_dir", "dsls", "models", "limit", "executor", "stages", "task_sample", "task_seed"}
    # a stage's results come from the last invocation that ran it (a resumed run keeps older entries in run.json)
    changed, covered = [], set()
    for c in reversed(pipeline):
        stages = c["params"].get("stages") or None
        fresh = [st for st in stages if st not in covered] if stages else None
        if stages and not fresh:
            continue
        extra = {k: v for k, v in c["params"].items() if k not in base or (k == "limit" and v is not None)}
        if extra:
            changed.insert(0, (fresh or ["all other stages" if covered else "all stages"], extra))
        if not stages:
            break
        covered.update(stages)
    if changed:
        lines += ["```{admonition} Parameters that differ from the notebooks' defaults", ":class: warning",
                  " ".join(f"{', '.join(stages)}: " + ", ".join(f"`{k}={v}`" for k, v in extra.items()) + "."
                           for stages, extra in changed)
                  + " Results of these stages differ from a run with the defaults (`feedback_modes=[]`: no "
                  "refinement loop ran; `limit`, `max_tokens`, `lora_steps`: fewer held-out tasks, shorter replies, "
                  "fewer training steps). The invocations are in `run.json`.", "```", ""]
    if sample:
        lines += ["```{admonition} A stratified sample, not the whole task set", ":class: warning",
                  f"This run covers {sample} task(s) per DSL, drawn reproducibly and stratified by difficulty "
                  f"(seed {pipeline[-1]['params'].get('task_seed')}), not every bundled task: one task moves a DSL's "
                  "rate by a large step, and the per-DSL intervals are wide. Run `dslbench pipeline` without "
                  "`--sample` for all tasks.", "```", ""]
    return lines


def results_md(table: pd.DataFrame, run_name: str, scope: list[str] = (), gens: pd.DataFrame | None = None) -> str:
    lines = ["# Results", "", *scope, f"Run `{run_name}`. Every level of every verdict has a status and a reason code "
             "(one taxonomy for all DSLs, listed below). Pass rates are over *evaluated* records, those judged "
             "`pass` or `fail` at both levels; records marked `unavailable` (no judge on the machine that "
             "validated) or `error` (a failed model call, a validator or sandbox failure) are excluded from both "
             "rates and counted by reason. A `fail` is always the program's fault, including a timeout, an "
             "exhausted resource limit or a crash. Click a cell to list its tasks; click a task to see its "
             "prompt, output, program, commands, logs and both verdicts.", "", *caveat_md(table)]
    if table.empty:
        return "\n".join(lines + ["No verdicts in this run yet."])
    rates = metrics.rates(table)
    head = "<table class='dsl-results'><thead><tr><th>DSL</th><th>model</th><th>method</th><th>records</th>" \
           "<th>evaluated</th><th>unavailable</th><th>errors</th><th>syntax %</th><th>semantic %</th>" \
           "<th>judge</th></tr></thead><tbody>"
    rows = []
    for _, r in rates.iterrows():
        link = "../" + slice_index_path(r["dsl"], r["model"], r["method"])
        fmt = (lambda v: "—" if pd.isna(v) else f"{v:.1f}")
        judge = (html.escape(str(r["judge"] or "—")) + ("" if r["judge_exact"] else " <b>(inexact fallback)</b>")
                 + (f" <i>(stand-in for {html.escape(str(r['stand_in_for']))})</i>" if r.get("stand_in_for") else ""))
        rows.append(f"<tr><td><a href='{link}'>{html.escape(r['dsl'])}</a></td><td>{html.escape(str(r['model']))}</td>"
                    f"<td>{html.escape(str(r['method']))}</td><td>{r['records']}</td><td>{r['evaluated']}</td>"
                    f"<td>{r['unavailable']}</td><td>{r['errors']}</td>"
                    f"<td><a href='{link}'>{fmt(r['syntax_pct'])}</a></td>"
                    f"<td><a href='{link}'>{fmt(r['semantic_pct'])}</a></td><td>{judge}</td></tr>")
    lines += ["```{raw} html", head + "".join(rows) + "</tbody></table>", "```", "",
              # raw HTML: a Markdown link to a non-document path becomes a dead `#../tasks/...` anchor
              "```{raw} html", "<p><a href='../tasks/index.html'>All task logs</a> · "
              "<a href='../tasks/search.html'>Search the task logs</a> (filters, words of any output)</p>", "```", "",
              "Outcomes per DSL (syntax against semantic verdicts, reason codes): "
              + ", ".join(f"[{d}](outcomes/{d}.md)" for d in sorted(set(rates["dsl"]))) + ".", ""]
    samples = metrics.samples_per_task(table)
    if samples > 1:
        ks = metrics.default_ks(samples)
        pk = metrics.with_pass_at_k(rates[list(metrics.GROUP)], table)
        lines += ["## pass@k", "", f"This run drew {samples} samples per task at temperature "
                  f"{_temperatures(table)}. pass@k is the chance that at least one of k samples passes the semantic "
                  "level, estimated without bias from each task's n samples with c passes as "
                  "$1 - \\binom{n-c}{k} / \\binom{n}{k}$ (Chen et al., 2021) and averaged over tasks; "
                  "pass@1 equals the semantic rate above when every task has all its samples evaluated.", "",
                  _md_table(pk.rename(columns={f"pass@{k}_pct": f"pass@{k} %" for k in ks}).round(1)), ""]
    macro = rates[rates["evaluated"] > 0]
    if not macro.empty:
        lines += ["The headline aggregate is the macro mean over DSL-model cells $c$ with at least one evaluated task,",
                  "", "$$\\bar p = \\frac{1}{|C|} \\sum_{c \\in C} \\frac{\\text{passes}_c}{\\text{evaluated}_c},$$", "",
                  "so that DSLs with many tasks do not dominate.", "",
                  f"Macro mean over {len(macro)} DSL-model cells: syntax {macro['syntax_pct'].mean():.2f} %, "
                  f"semantic {macro['semantic_pct'].mean():.2f} %, gap {macro['gap_pp'].mean():.2f} pp "
                  "(the paper: 31.37 %, 11.64 %, 19.74 pp over 126 cells of 18 DSLs x 7 models).", ""]
    missing = metrics.missingness_by_model(table)
    differs = missing[missing["differs"]]
    if len(differs):
        lines += ["```{warning}", "Missing judgements differ by model (chi-square, p < 0.05) for "
                  + ", ".join(differs["dsl"]) + ": a judge that cannot handle some models' programs leaves "
                  "those out of their rates, so these DSLs compare models over different task subsets. "
                  "Unavailable per model: " + "; ".join(f"{r.dsl}: {r.unavailable_by_model}" for r in differs.itertuples())
                  + ".", "```", ""]
    lines += judged_md(table)
    lines += throughput_md(gens if gens is not None else pd.DataFrame())
    return "\n".join(lines)


def throughput_md(gens: pd.DataFrame) -> list[str]:
    """Model calls per model and method (metrics.generation_throughput), under the results."""
    tp = metrics.generation_throughput(gens)
    if tp.empty:
        return []
    return ["", "## Model calls", "", "Per model and method: good replies (of which served from the generation cache), "
            "seconds of model time, calls and completion tokens per second of that time, tokens per reply, and "
            "what ended each reply (`stop`: the model; `length`: the token budget; `fence_closed` and `repetition`: "
            "the decoding protocol's cut, see [the method](../method.md)). A cached reply keeps the time of the call that "
            "made it. The figures depend on the machine and on what else ran beside the model.", "",
            _md_table(tp.rename(columns={"model_s": "model s", "calls_per_s": "calls/s", "tokens_per_s": "tokens/s",
                                         "tokens_per_reply": "tokens/reply", "ended_by": "ended by"})), ""]


def _temperatures(table: pd.DataFrame) -> str:
    """The temperature(s) the run's generations were drawn at, as recorded."""
    if "temperature" not in table:
        return "(not recorded)"
    temps = sorted({float(t) for t in table["temperature"].dropna()})
    return ", ".join(f"{t:g}" for t in temps) or "(not recorded)"


def judged_md(table: pd.DataFrame) -> list[str]:
    """Per DSL: how many records were judged, what was excluded and why; then the reason taxonomy."""
    health = metrics.judging_health(table)
    ex = metrics.exclusions(table, by=("dsl",))
    lines = ["## Judged and excluded records per DSL", "",
             f"A run stops when fewer than {100 * metrics.DEFAULT_MIN_JUDGED:.0f} % of a DSL's records can be judged "
             "(a DSL whose toolchain is missing on the machine is reported here, not counted against the run).", "",
             "| DSL | records | evaluated | excluded, by reason |", "|---|---|---|---|"]
    for r in health.itertuples():
        why = ex[ex["dsl"] == r.dsl]
        text = ", ".join(f"{w.status} / {w.reason}: {w.records}" for w in why.itertuples()) or "none"
        lines.append(f"| {r.dsl} | {r.records} | {r.evaluated} | {text} |")
    lines += ["", "## Reason codes", "", "| reason | status | meaning |", "|---|---|---|"]
    lines += [f"| `{code}` | {status} | {meaning} |" for code, (status, meaning) in verdicts.REASONS.items()]
    return lines + [""]


STATUSES = ["pass", "fail", "error", "unavailable"]


def dsl_outcomes_md(dsl: str, table: pd.DataFrame) -> str:
    """One DSL's outcomes: per model and method, syntax status against semantic status (final records:
    a refinement chain counts once), and the reasons of each level with their counts."""
    lines = [f"# {dsl}: outcomes", "", "Syntax verdict (rows) against semantic verdict (columns) of each final "
             "record, then the reason codes of each level. A semantic `fail` with reason `syntax_failed` is a "
             "program that never reached the oracle. The task logs are linked from the Results page.", "",
             *caveat_md(table)]
    df = final_verdicts(table[table["dsl"] == dsl]) if len(table) else table
    if df.empty:
        return "\n".join(lines + ["No verdicts for this DSL in this run."])
    for (model, method), g in df.groupby(["model", "method"], sort=True):
        grid = pd.crosstab(g["syntax_status"], g["semantic_status"]).reindex(
            index=STATUSES, columns=STATUSES, fill_value=0)
        grid = grid.loc[grid.sum(axis=1) > 0, grid.sum(axis=0) > 0]
        grid.index = [f"syntax {i}" for i in grid.index]
        reasons = pd.concat([g["syntax_reason"].rename("reason").to_frame().assign(level="syntax"),
                             g["semantic_reason"].rename("reason").to_frame().assign(level="semantic")])
        counts = reasons.value_counts(["level", "reason"]).rename("records").reset_index()
        lines += [f"## {model} · {method}", "", f"{len(g)} final record(s).", "",
                  _md_table(grid.rename_axis(None).reset_index().rename(columns={"index": ""})), "",
                  _md_table(counts.sort_values(["level", "records"], ascending=[False, False])), ""]
    return "\n".join(lines)


def audit_md(run_dir: Path) -> str:
    """The reviewers' agreement with the judges, per DSL, from <run>/audit.jsonl."""
    from . import audit
    lines = ["# Judge audit", "",
             "How often a reviewer who read the task, the program and the logs agreed with the verdict (the "
             "paper's manual check of 20 outputs per DSL). `dslbench audit sample --per-dsl 20` draws the "
             "sample reproducibly, `dslbench audit mark` (or the viewer's agree / disagree buttons) appends "
             "one mark to `audit.jsonl` beside the run; the last mark of a reviewer on a verdict counts. "
             "Intervals are 95 % Wilson score intervals.", ""]
    marks = audit.marks(run_dir) if run_dir.exists() else pd.DataFrame()
    if marks.empty:
        return "\n".join(lines + ["No verdict of this run has been audited yet, so **the judges' accuracy is "
                                   "not measured here**."])
    for level in audit.LEVELS:
        table = metrics.judge_agreement(marks, level=level)
        if len(table):
            lines += [f"## {level.capitalize()} verdicts", "",
                      _md_table(table.round({"agreement_pct": 1, "ci_low_pct": 1, "ci_high_pct": 1})), ""]
    bad = marks[~marks["agree"]]
    if len(bad):
        # raw HTML: a Markdown link to a page outside the book's sources is turned into a dead anchor
        rows = "".join(
            f"<tr><td><a href='../{task_page_path(r.dsl, r.task_id, r.model, r.method, r.sample, r.round)}'>"
            f"{html.escape(r.task_id)}</a></td><td>{html.escape(str(r.model))}</td><td>{r.level}</td>"
            f"<td>{html.escape(str(r.verdict))}</td><td>{html.escape(str(r.reviewer))}</td>"
            f"<td>{html.escape(str(r.comment))}</td></tr>" for r in bad.itertuples())
        lines += ["## Disagreements", "", "```{raw} html",
                  "<table><thead><tr><th>task</th><th>model</th><th>level</th><th>verdict</th><th>reviewer</th>"
                  f"<th>comment</th></tr></thead><tbody>{rows}</tbody></table>", "```"]
    return "\n".join(lines) + "\n"


def batch_md(batch_dirs: list[Path]) -> str:
    lines = ["# Batch runs", "", "Every notebook executed by `dslbench batch`, with its parameters.", ""]
    entries = []
    for d in batch_dirs:
        manifest = d / "batch.json"
        if manifest.exists():
            entries += json.loads(manifest.read_text())
    if not entries:
        return "\n".join(lines + ["No batch runs were made for this build."])
    lines += ["| notebook | parameters | status |", "|---|---|---|"]
    for e in entries:
        lines.append(f"| `{e['output']}` | `{json.dumps(e['parameters'], sort_keys=True)}` | {e['status']} |")
    return "\n".join(lines)


def _first_clause(text: str) -> str:
    """Text up to its first ':', ';' or '. ' outside parentheses (a card's benchmark and its size)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and (ch in ":;" or (ch == "." and text[i + 1:i + 2] in (" ", ""))):
            text = text[:i]
            break
    text = text.strip()
    return text if len(text) <= 140 else text[:139].rstrip() + "…"


def task_sources_md(tasks: dict, tree: Path, reports: list[dict]) -> str:
    """Where this build's tasks come from: per DSL, the count by source, and the import reports
    (`dslbench import` writes one beside each imported DSL folder) of an imported task tree."""
    rows = []
    for dsl, ts in sorted(tasks.items()):
        by = pd.Series([t.provenance.get("benchmark", "upstream") if t.provenance["source"] == "upstream" else "authored"
                        for t in ts]).value_counts()
        upstream = _first_clause(toolchains.get(dsl).card.get("upstream") or "—")
        rows.append({"DSL": dsl, "tasks": len(ts), "by source": ", ".join(f"{k}: {v}" for k, v in by.items()),
                     "the paper's upstream benchmark": upstream})
    lines = ["# Task sources", "", f"The tasks of this build are read from `{tree}`"
             + (" (the bundled tasks)." if tree == repo_root() / "data" / "tasks" else " (`DSLBENCH_TASKS`)."),
             "Bundled tasks are authored for this compendium; upstream benchmarks are imported from the user's own "
             "download with `dslbench import DSL SOURCE --out TREE` (see the README) and never committed. The figures "
             "measured on the published upstream repositories are on the reproduction page.", "",
             _md_table(pd.DataFrame(rows)), ""]
    if reports:
        imp = []
        for r in reports:
            v = r.get("verify") or {}
            gold, sem = v.get("gold") or v.get("placeholder_gold") or {}, v.get("semantic") or {}
            top = ", ".join(f"{k} {n}" for k, n in list((r.get("skipped_by_reason") or {}).items())[:3])
            imp.append({"DSL": r["dsl"], "benchmark": r.get("benchmark", ""),
                        "revision": (r.get("source_revision") or "—")[:10], "read": r["read"], "imported": r["imported"],
                        "skipped (top reasons)": f"{r['skipped']} ({top})" if r["skipped"] else "0",
                        "gold as expected": f"{gold['as_expected']}/{gold['judged']}" if gold.get("judged") else "not verified",
                        "semantic mutants killed": (f"{sem['as_expected']}/{sem['judged']}" + (
                            f" ({sem['stillborn']} fail syntax already)" if sem.get("stillborn") else "")
                            if sem.get("judged") else "—")})
        lines += ["## Imports in this task tree", "", "From each folder's `import_report.json`; *gold as expected* and "
                  "*semantic mutants killed* come from `dslbench import --verify`.", "", _md_table(pd.DataFrame(imp)), ""]
    return "\n".join(lines)


def generate_sources(run_dir: Path, batch_dirs: list[Path] = ()) -> Path:
    gen = book_dir() / "generated"
    shutil.rmtree(gen, ignore_errors=True)
    (gen / "stages").mkdir(parents=True)
    (gen / "dsls").mkdir()
    for nb in sorted((run_dir / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        stage_notebook_for_book(nb, gen / "stages" / nb.name)
    tasks = load_tasks(sampled=False)
    matrix = {r["dsl"]: r for r in doctor().to_dict("records")}
    for dsl, ts in tasks.items():
        (gen / "dsls" / f"{dsl}.md").write_text(dsl_card_md(dsl, ts, matrix.get(dsl, {})))
    table = RunStore(run_dir).verdict_table() if run_dir.exists() else pd.DataFrame()
    gens = RunStore(run_dir).table("generations") if run_dir.exists() else pd.DataFrame()
    (gen / "results.md").write_text(results_md(table, run_dir.name, run_scope_md(run_dir), gens))
    (gen / "outcomes").mkdir()
    for dsl in sorted(set(table["dsl"])) if len(table) else []:
        (gen / "outcomes" / f"{dsl}.md").write_text(dsl_outcomes_md(dsl, table))
    if not len(table):   # the toc's glob needs a page
        (gen / "outcomes" / "none.md").write_text("# Outcomes per DSL\n\nNo verdicts in this run yet.\n")
    (gen / "batch.md").write_text(batch_md(list(batch_dirs)))
    (gen / "audit.md").write_text(audit_md(run_dir))
    (gen / "sources.md").write_text(task_sources_md(tasks, tasks_dir(), read_report_files(tasks_dir())))
    return gen


# --- static per-task pages ---------------------------------------------------------------------

CSS = """body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:70rem;padding:0 1rem;color:#222}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:28rem;white-space:pre-wrap;word-break:break-word}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.25rem .45rem;text-align:left;vertical-align:top}
.pass{color:#116b24;font-weight:600}.fail{color:#b00020;font-weight:600}.unavailable,.error{color:#8a6d00;font-weight:600}
nav a{margin-right:1rem}input,select{margin:.2rem .5rem .6rem 0}"""

FILTER_JS = """function applyFilter(){const q=document.getElementById('q').value.toLowerCase();
const s=document.getElementById('syn').value,m=document.getElementById('sem').value;let n=0;
for(const tr of document.querySelectorAll('tbody tr')){const ok=tr.dataset.key.includes(q)&&(!s||tr.dataset.syntax===s)&&(!m||tr.dataset.semantic===m);
tr.style.display=ok?'':'none';if(ok)n++;}document.getElementById('count').textContent=n+' shown';}"""


def _page(title: str, body: str, root: str) -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><nav><a href='{root}index.html'>Book</a>"
            f"<a href='{root}generated/results.html'>Results</a><a href='{root}tasks/index.html'>All task logs</a>"
            f"<a href='{root}tasks/search.html'>Search</a></nav>"
            f"{body}</body></html>")


def _verdict_cell(status) -> str:
    status = str(status)
    return f"<span class='{html.escape(status)}'>{html.escape(status)}</span>"


def _pre(text) -> str:
    return f"<pre>{html.escape('' if text is None or (isinstance(text, float) and math.isnan(text)) else str(text))}</pre>"


def task_page(r: dict, task, root: str) -> str:
    messages = json.loads(r["prompt"]) if r.get("prompt") else []
    prompt = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in [
        ("DSL / task", f"{html.escape(r['dsl'])} / {html.escape(r['task_id'])}"),
        ("model / method / sample / round", f"{html.escape(str(r['model']))} / {html.escape(str(r['method']))} / "
                                            f"{r['sample']} / {r.get('round', 0)}"),
        ("toolchain", f"{html.escape(str(r['toolchain']))} — {html.escape(str(r['toolchain_version']))}"),
        ("dialect", html.escape(str(r.get("dialect") or ""))),
        ("syntax", f"{_verdict_cell(r['syntax_status'])} <code>{html.escape(str(r.get('syntax_reason') or ''))}</code> "
                   f"{html.escape(str(r['syntax_diagnostics'] or ''))}"),
        ("semantic", f"{_verdict_cell(r['semantic_status'])} <code>{html.escape(str(r.get('semantic_reason') or ''))}</code> "
                     f"{html.escape(str(r['semantic_diagnostics'] or ''))}"),
        ("oracle expected (shown to the model only in tests-mode feedback)",
         html.escape(str(r.get("semantic_expected") or r.get("syntax_expected") or ""))),
        ("judge", f"{html.escape(str(r.get('validator') or ''))}"
                  f"{'' if r.get('judge_exact') in (None, True) else ' (inexact stand-in judge)'}"),
        ("sandbox", html.escape(str(r.get("sandbox") or ""))),
        ("extraction rule / prompt version", f"{html.escape(str(r['extraction_rule']))} / {html.escape(str(r['prompt_version']))}"),
        ("reply ended by", html.escape(str(r.get("finish_reason") or ""))),
        ("code revision", html.escape(str(r.get("revision") or ""))),
    ])
    body = [f"<h1>{html.escape(r['task_id'])}: {html.escape(task.title if task else '')}</h1>",
            f"<table>{rows}</table>",
            "<h2>Instruction</h2>", _pre(task.instruction if task else "(task no longer in the task set)"),
            "<h2>Prompt as sent</h2>", _pre(prompt),
            *(["<h2>Model reasoning (kept apart from the answer, not judged)</h2>", _pre(r["reasoning"])]
              if r.get("reasoning") else []),
            "<h2>Raw model output</h2>", _pre(r["raw_output"]),
            "<h2>Extracted program</h2>", _pre(r["program"]),
            "<h2>Syntax check: command and log</h2>", _pre(r["syntax_command"]), _pre(r["syntax_log"]),
            "<h2>Semantic check: command and log</h2>", _pre(r["semantic_command"]), _pre(r["semantic_log"]),
            "<h2>Gold solution</h2>", _pre(task.gold if task else "")]
    return _page(f"{r['dsl']} {r['task_id']}", "\n".join(body), root)


def write_task_pages(table: pd.DataFrame, out: Path) -> int:
    """Per-task pages and paginated, filterable slice indexes under out/tasks/. Returns pages written."""
    tasks = {t.id: t for ts in load_tasks(sampled=False).values() for t in ts}
    shutil.rmtree(out / "tasks", ignore_errors=True)
    (out / "tasks").mkdir(parents=True)
    written = 0
    slices = []
    table = with_rounds(table)
    for (dsl, model, method), g in table.groupby(["dsl", "model", "method"], sort=True):
        g = g.sort_values(["task_id", "sample", "round"])
        for _, r in g.iterrows():
            rel = task_page_path(dsl, r["task_id"], model, method, r["sample"], r["round"])
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            root = "../" * (rel.count("/"))
            path.write_text(task_page(r.to_dict(), tasks.get(r["task_id"]), root))
            written += 1
        pages = max(1, math.ceil(len(g) / PAGE_ROWS))
        for p in range(1, pages + 1):
            chunk = g.iloc[(p - 1) * PAGE_ROWS: p * PAGE_ROWS]
            rel = slice_index_path(dsl, model, method, p)
            root = "../" * rel.count("/")
            rows = "".join(
                f"<tr data-key='{html.escape(str(r['task_id']).lower())}' data-syntax='{html.escape(str(r['syntax_status']))}' "
                f"data-semantic='{html.escape(str(r['semantic_status']))}'>"
                f"<td><a href='{html.escape(Path(task_page_path(dsl, r['task_id'], model, method, r['sample'], r['round'])).name)}'>"
                f"{html.escape(str(r['task_id']))}</a></td><td>{r['sample']}</td><td>{r['round']}</td>"
                f"<td>{html.escape(str(r.get('difficulty') or ''))}</td>"
                f"<td>{_verdict_cell(r['syntax_status'])}</td><td>{_verdict_cell(r['semantic_status'])}</td>"
                f"<td>{html.escape(str(r['semantic_diagnostics'] or r['syntax_diagnostics'] or '')[:160])}</td></tr>"
                for _, r in chunk.iterrows())
            options = "".join(f"<option>{s}</option>" for s in ("pass", "fail", "unavailable", "error"))
            pager = " ".join(f"<a href='{Path(slice_index_path(dsl, model, method, i)).name}'>{i}</a>" if i != p else f"<b>{i}</b>"
                             for i in range(1, pages + 1)) if pages > 1 else ""
            body = (f"<h1>{html.escape(dsl)} — {html.escape(str(model))} — {html.escape(str(method))}</h1>"
                    f"<p>{len(g)} task records; page {p} of {pages}. {pager}</p>"
                    "<input id='q' placeholder='search task id' oninput='applyFilter()'>"
                    f"syntax <select id='syn' onchange='applyFilter()'><option value=''>any</option>{options}</select>"
                    f"semantic <select id='sem' onchange='applyFilter()'><option value=''>any</option>{options}</select>"
                    "<span id='count'></span>"
                    "<table><thead><tr><th>task</th><th>sample</th><th>round</th><th>difficulty</th><th>syntax</th><th>semantic</th>"
                    f"<th>diagnostics</th></tr></thead><tbody>{rows}</tbody></table><script>{FILTER_JS}</script>")
            (out / rel).write_text(_page(f"{dsl} {model} {method}", body, root))
        finals = final_verdicts(g)  # a refinement chain counts once, by its last round
        slices.append((dsl, model, method, len(finals), int((finals["semantic_status"] == "pass").sum())))
    items = "".join(f"<tr data-key='{html.escape((d + ' ' + str(m) + ' ' + str(me)).lower())}' data-syntax='' data-semantic=''>"
                    f"<td><a href='{html.escape(slice_index_path(d, m, me)[len('tasks/'):])}'>{html.escape(d)}</a></td>"
                    f"<td>{html.escape(str(m))}</td><td>{html.escape(str(me))}</td><td>{n}</td><td>{k}</td></tr>"
                    for d, m, me, n, k in slices)
    body = ("<h1>Task logs</h1><p>One page per (DSL, task, model, method, sample, refinement round). Pick a slice:</p>"
            "<input id='q' placeholder='filter DSL / model / method' oninput='applyFilter()'>"
            "<select id='syn' hidden><option value=''></option></select><select id='sem' hidden><option value=''></option></select>"
            "<span id='count'></span><table><thead><tr><th>DSL</th><th>model</th><th>method</th><th>records</th>"
            f"<th>semantic passes</th></tr></thead><tbody>{items}</tbody></table><script>{FILTER_JS}</script>")
    (out / "tasks" / "index.html").write_text(_page("Task logs", body, "../"))
    write_log_browser(table, tasks, out)
    return written


SEARCH_CHARS = 1500   # per searchable field of a record: keeps the browser's data file small at scale
BROWSER_FIELDS = ["dsl", "task_id", "model", "method", "sample", "round", "difficulty", "syntax_status", "syntax_reason",
                  "semantic_status", "semantic_reason"]

BROWSER_JS = """const F=['dsl','model','method','syntax_status','semantic_status','reason'];let sortKey='dsl',sortDir=1;
function state(){const s={q:document.getElementById('q').value};for(const f of F)s[f]=document.getElementById(f).value;return s;}
function setState(s){document.getElementById('q').value=s.q||'';for(const f of F)document.getElementById(f).value=s[f]||'';}
function fromHash(){const s={};new URLSearchParams(location.hash.slice(1)).forEach((v,k)=>s[k]=v);return s;}
function matches(r,s){if(s.q){const words=s.q.toLowerCase().split(/\\s+/).filter(Boolean);
 const hay=(r.task_id+' '+r.text).toLowerCase();if(!words.every(w=>hay.includes(w)))return false;}
 for(const f of ['dsl','model','method','syntax_status','semantic_status'])if(s[f]&&String(r[f])!==s[f])return false;
 if(s.reason&&r.syntax_reason!==s.reason&&r.semantic_reason!==s.reason)return false;return true;}
function render(){const s=state();const h=new URLSearchParams(Object.entries(s).filter(e=>e[1])).toString();
 history.replaceState(null,'',h?'#'+h:location.pathname);
 const hits=RECORDS.filter(r=>matches(r,s)).sort((a,b)=>(a[sortKey]>b[sortKey]?1:a[sortKey]<b[sortKey]?-1:0)*sortDir);
 const shown=hits.slice(0,500);document.getElementById('count').textContent=hits.length+' of '+RECORDS.length+' records'+(hits.length>500?' (first 500 shown)':'');
 document.getElementById('rows').innerHTML=shown.map(r=>'<tr><td><a href="'+r.href+'">'+esc(r.task_id)+'</a></td><td>'+esc(r.dsl)+'</td><td>'+esc(r.model)+'</td><td>'+esc(r.method)+
 '</td><td>'+r.sample+'</td><td>'+r.round+'</td><td>'+esc(r.difficulty)+'</td><td class="'+r.syntax_status+'">'+r.syntax_status+' <small>'+esc(r.syntax_reason)+'</small></td><td class="'+r.semantic_status+'">'+r.semantic_status+' <small>'+esc(r.semantic_reason)+'</small></td></tr>').join('');}
function esc(t){return String(t??'').replace(/[&<>"']/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));}
function sortBy(k){sortDir=(sortKey===k)?-sortDir:1;sortKey=k;render();}
function fill(id,vals){const el=document.getElementById(id);for(const v of vals){const o=document.createElement('option');o.textContent=v;el.appendChild(o);}}
window.addEventListener('load',()=>{for(const f of ['dsl','model','method','syntax_status','semantic_status'])fill(f,[...new Set(RECORDS.map(r=>String(r[f])))].sort());
 fill('reason',[...new Set(RECORDS.flatMap(r=>[r.syntax_reason,r.semantic_reason]))].filter(Boolean).sort());setState(fromHash());render();});"""


def write_log_browser(table: pd.DataFrame, tasks: dict, out: Path) -> Path:
    """tasks/search.html: every record of the run, filtered by DSL, model, method, status and reason,
    searched by words of the instruction, output, program and diagnostics, sortable, with the filter
    state in the URL (a permalink). Offline: the records come as a script file, not a fetch."""
    records = []
    for _, r in table.iterrows():
        task = tasks.get(r["task_id"])
        text = " ".join(str(x or "")[:SEARCH_CHARS] for x in (
            task.instruction if task else "", r.get("raw_output"), r.get("program"), r.get("syntax_diagnostics"),
            r.get("semantic_diagnostics")))
        rec = {k: (None if pd.isna(r.get(k)) else r.get(k)) if not isinstance(r.get(k), (list, dict)) else r.get(k)
               for k in BROWSER_FIELDS}
        rec["href"] = task_page_path(r["dsl"], r["task_id"], r["model"], r["method"], r["sample"], r["round"])[len("tasks/"):]
        records.append({**rec, "sample": int(rec["sample"] or 0), "round": int(rec["round"] or 0), "text": text})
    (out / "tasks" / "records.js").write_text("const RECORDS=" + json.dumps(records, ensure_ascii=False, default=str) + ";\n")
    selects = "".join(f"{label} <select id='{f}' onchange='render()'><option value=''>any</option></select>"
                      for f, label in (("dsl", "DSL"), ("model", "model"), ("method", "method"),
                                       ("syntax_status", "syntax"), ("semantic_status", "semantic"), ("reason", "reason")))
    heads = "".join(f"<th onclick=\"sortBy('{k}')\" style='cursor:pointer'>{label} ↕</th>" for k, label in (
        ("task_id", "task"), ("dsl", "DSL"), ("model", "model"), ("method", "method"), ("sample", "sample"),
        ("round", "round"), ("difficulty", "difficulty"), ("syntax_status", "syntax"), ("semantic_status", "semantic")))
    body = ("<h1>Search the task logs</h1><p>Words match the task id, instruction, model output, extracted program and "
            "diagnostics (all words must occur). The address bar keeps the filters: copy it to share this view.</p>"
            "<input id='q' size='40' placeholder='words of the output, diagnostics, instruction…' oninput='render()'> "
            f"{selects} <span id='count'></span><table><thead><tr>{heads}</tr></thead><tbody id='rows'></tbody></table>"
            f"<script src='records.js'></script><script>{BROWSER_JS}</script>")
    path = out / "tasks" / "search.html"
    path.write_text(_page("Search the task logs", body, "../"))
    return path


# --- vendored JavaScript and the build -----------------------------------------------------------

VENDOR_FILES = {  # source under book/vendor/node_modules -> destination under the build's vendor/
    "requirejs/require.js": "require.js",
    "@jupyter-widgets/html-manager/dist": "html-manager",
    "mathjax/es5": "mathjax",
}


def copy_vendor(extra_dir: Path) -> None:
    modules = book_dir() / "vendor" / "node_modules"
    if not modules.exists():
        raise FileNotFoundError(f"{modules} is missing: run ./install.sh (it runs npm ci in book/vendor)")
    for src, dst in VENDOR_FILES.items():
        s, d = modules / src, extra_dir / "vendor" / dst
        d.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(s, d, dirs_exist_ok=True) if s.is_dir() else shutil.copy(s, d)
    # The widget manager's stylesheet asks for its icon fonts relative to the page that embeds it,
    # and only stage notebooks embed it: serve the fonts there too.
    dist = modules / "@jupyter-widgets/html-manager/dist"
    for target in ("generated/stages/@jupyter-widgets/html-manager/dist", "generated/stages/@jupyter-widgets"):
        (extra_dir / target).mkdir(parents=True, exist_ok=True)
        for font in dist.iterdir():
            if font.suffix in (".woff2", ".woff", ".ttf", ".eot", ".svg"):
                shutil.copy(font, extra_dir / target / font.name)


_LINK = re.compile(r"""(?:href|src)\s*=\s*["']([^"'#?][^"']*)["']""")
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)   # http:, https:, mailto:, data:, javascript:, //host


def check_built(html_root: Path) -> list[str]:
    """Problems a reader would hit in the built book: internal links and images that point at no file,
    and raw tracebacks on a book page (task log pages are excluded there: a candidate program's own
    traceback in a toolchain log is data, not a broken page). One line per problem; [] when none."""
    problems = []
    for page in sorted(html_root.rglob("*.html")):
        rel = page.relative_to(html_root)
        text = page.read_text(encoding="utf-8", errors="replace")
        for target in set(_LINK.findall(text)):
            if _EXTERNAL.match(target) or "{" in target or "+" in target:   # skip URLs and script templates
                continue
            path = target.split("#", 1)[0].split("?", 1)[0]
            if not path:
                continue
            resolved = (html_root / path.lstrip("/")) if path.startswith("/") else (page.parent / path)
            if not resolved.exists():
                kind = "image" if re.search(r"\.(png|svg|jpe?g|gif)$", path, re.I) else "link"
                problems.append(f"{rel}: broken {kind} {target}")
        if rel.parts[0] not in ("tasks", "_sources", "_static", "vendor") and "Traceback (most recent call last)" in text:
            problems.append(f"{rel}: a raw traceback on the page")
    return problems


def build(run_dir: Path | str, batch_dirs: list[Path] = (), output: Path | None = None, quiet: bool = True) -> Path:
    """Generate sources, build the Jupyter Book (offline), then write the per-task pages.

    The HTML lands in <output>/_build/html (output defaults to book/); returns that folder.
    """
    run_dir = Path(run_dir).resolve()
    output = Path(output).resolve() if output else book_dir()
    generate_sources(run_dir, batch_dirs)
    copy_vendor(book_dir() / "generated" / "extra")
    out = output / "_build"
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(book_dir()), "--path-output", str(output)]
    if quiet:
        cmd.append("--quiet")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"jupyter-book build failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}")
    html_root = out / "html"
    table = RunStore(run_dir).verdict_table() if run_dir.exists() else pd.DataFrame()
    if not table.empty:
        write_task_pages(table, html_root)
    return html_root
