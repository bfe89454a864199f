"""The reviewer's audit: a reproducible sample, append-only marks, agreement with Wilson intervals."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from conftest import run_cli
from dslbench import audit, book, metrics
from dslbench.errors import UserError
from dslbench.store import RunStore

DSLS = ("jq", "smiles", "verilog")


def verdicts(n_per_dsl: int = 30) -> list[dict]:
    out = []
    for d in DSLS:
        for i in range(n_per_dsl):
            sem = "pass" if i % 3 == 0 else "fail"
            status = "unavailable" if i % 10 == 9 else "pass"        # some records no judge could judge
            out.append({"dsl": d, "task_id": f"{d}-{i:03d}", "model": "m", "method": "baseline", "sample": 0,
                        "syntax": {"status": status}, "semantic": {"status": sem if status == "pass" else status}})
    return out


def make_run(path, records) -> None:
    store = RunStore(path)
    for r in records:
        store.append("verdicts", r)


def test_the_sample_is_reproducible_stratified_and_judged_only(tmp_path):
    make_run(tmp_path / "a", verdicts())
    make_run(tmp_path / "b", list(reversed(verdicts())))      # same records, another order
    a = audit.sample(tmp_path / "a", per_dsl=20)
    assert a.groupby("dsl").size().to_dict() == {d: 20 for d in DSLS}
    assert (metrics.classify(a) == "evaluated").all()
    b = audit.sample(tmp_path / "b", per_dsl=20)
    assert sorted(a["task_id"]) == sorted(b["task_id"])
    other = audit.sample(tmp_path / "a", per_dsl=20, seed=1)
    assert sorted(a["task_id"]) != sorted(other["task_id"])
    assert len(audit.sample(tmp_path / "a", per_dsl=100)) == 3 * 27    # all evaluated ones when fewer


def test_marks_are_appended_and_the_last_mark_of_a_reviewer_counts(tmp_path):
    make_run(tmp_path, verdicts(3))
    rows = metrics.with_rounds(RunStore(tmp_path).verdict_table()).to_dict("records")
    audit.mark(tmp_path, rows[0], "semantic", True, reviewer="ann")
    audit.mark(tmp_path, rows[0], "semantic", False, "the oracle rejects an equivalent order", reviewer="ann")
    audit.mark(tmp_path, rows[0], "semantic", True, reviewer="bob")
    audit.mark(tmp_path, rows[1], "syntax", True, reviewer="ann")
    lines = audit.audit_path(tmp_path).read_text().splitlines()
    assert len(lines) == 4                                         # nothing rewritten
    m = audit.marks(tmp_path)
    assert len(m) == 3
    ann = m[(m.reviewer == "ann") & (m.level == "semantic")].iloc[0]
    assert not ann["agree"] and "equivalent order" in ann["comment"] and ann["verdict"] == rows[0]["semantic_status"]
    # a torn last line (a killed writer) is ignored; a bad line names file, line and field
    with open(audit.audit_path(tmp_path), "a") as f:
        f.write('{"dsl": "jq", "task_')
    assert len(audit.marks(tmp_path)) == 3
    audit.audit_path(tmp_path).write_text(lines[0] + "\n" + json.dumps({**json.loads(lines[1]), "agree": "yes"}) + "\n")
    with pytest.raises(UserError, match=r"audit.jsonl:2: field 'agree'"):
        audit.marks(tmp_path)
    with pytest.raises(UserError, match="audit level"):
        audit.mark(tmp_path, rows[0], "both", True)


def wilson_closed_form(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_agreement_per_dsl_matches_the_closed_form():
    marks = pd.DataFrame([{"dsl": "jq", "level": "semantic", "agree": i < 18} for i in range(20)]
                         + [{"dsl": "smiles", "level": "semantic", "agree": True} for _ in range(5)]
                         + [{"dsl": "smiles", "level": "syntax", "agree": False}])
    t = metrics.judge_agreement(marks).set_index("dsl")
    assert t.loc["jq", "audited"] == 20 and t.loc["jq", "agreed"] == 18 and t.loc["jq", "agreement_pct"] == 90
    lo, hi = wilson_closed_form(18, 20)
    assert t.loc["jq", "ci_low_pct"] == pytest.approx(100 * lo) and t.loc["jq", "ci_high_pct"] == pytest.approx(100 * hi)
    lo, hi = wilson_closed_form(5, 5)
    assert t.loc["smiles", "agreement_pct"] == 100 and t.loc["smiles", "ci_low_pct"] == pytest.approx(100 * lo)
    assert hi == pytest.approx(1.0)
    assert t.loc["all", "audited"] == 25 and t.loc["all", "disagreements"] == 2
    assert metrics.judge_agreement(marks, level=None).set_index("dsl").loc["all", "audited"] == 26
    assert metrics.judge_agreement(marks.iloc[:0]).empty


def test_cli_and_book_page(tmp_path):
    run = tmp_path / "run"
    make_run(run, verdicts(6))
    r = run_cli("audit", "sample", "--run", str(run), "--per-dsl", "2")
    assert r.returncode == 0, r.stderr
    picked = pd.read_csv(run / "audit_sample.csv")
    assert len(picked) == 6 and picked["page"].str.startswith("tasks/").all()
    first = picked.iloc[0]
    r = run_cli("audit", "mark", "--run", str(run), "--task", first["task_id"], "--model", "m", "--disagree",
                "--comment", "a correct rewrite was rejected", "--reviewer", "ann")
    assert r.returncode == 0, r.stderr
    r = run_cli("audit", "mark", "--run", str(run), "--task", "nope", "--model", "m", "--agree")
    assert r.returncode == 2 and "no verdict for task nope" in r.stderr
    r = run_cli("audit", "report", "--run", str(run))
    assert r.returncode == 0 and first["dsl"] in r.stdout and "agreement_pct" in r.stdout

    page = book.audit_md(run)
    assert "| " + first["dsl"] + " | 1 | 0 | 0.0 |" in page
    assert "a correct rewrite was rejected" in page and f"../{first['page']}" in page
    assert "not measured here" in book.audit_md(tmp_path / "empty")
