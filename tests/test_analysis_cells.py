"""Cell table, exclusions, aggregates and the balanced grid (dslbench.analysis.cells)."""
import numpy as np
import pandas as pd
import pytest

from dslbench.analysis import cells as C
from dslbench.store import VERDICT_COLUMNS

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "analysis"))
from make_fixture import write_fixture  # noqa: E402


@pytest.fixture(scope="module")
def fixture_paths(tmp_path_factory):
    """The synthetic 8 DSLs x 4 models x 25 tasks run (tests/fixtures/analysis/make_fixture.py)."""
    return write_fixture(tmp_path_factory.mktemp("analysis-fixture"))


def rec(dsl, task, model, syn, sem, method="baseline", sample=0):
    r = {c: None for c in VERDICT_COLUMNS}
    r.update(dsl=dsl, task_id=task, model=model, method=method, sample=sample, syntax_status=syn, semantic_status=sem)
    return r


def small():
    rows = [
        rec("a", "a1", "m1", "pass", "pass"), rec("a", "a2", "m1", "pass", "fail"), rec("a", "a3", "m1", "fail", "fail"),
        rec("a", "a4", "m1", "unavailable", "unavailable"), rec("a", "a5", "m1", "pass", "error"),
        rec("a", "a1", "m2", "fail", "fail"), rec("a", "a2", "m2", "error", "error"),
        rec("b", "b1", "m1", "pass", "pass"), rec("b", "b2", "m1", "pass", "pass"),
        rec("b", "b1", "m2", "pass", "fail"), rec("b", "b2", "m2", "pass", "fail"), rec("b", "b3", "m2", "pass", "pass"),
        rec("b", "b1", "m1", "fail", "fail", method="other"),
    ]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def test_cell_counts_and_rates_by_hand():
    c = C.cell_table(small()).set_index(["dsl", "model"])
    a1 = c.loc[("a", "m1")]
    assert (a1.records, a1.evaluated, a1.unavailable, a1.errors) == (5, 3, 1, 1)
    assert a1.syntax_pct == pytest.approx(200 / 3) and a1.semantic_pct == pytest.approx(100 / 3)
    assert a1.gap_pp == pytest.approx(100 / 3)
    a2 = c.loc[("a", "m2")]
    assert (a2.evaluated, a2.errors, a2.syntax_pct) == (1, 1, 0)
    b2 = c.loc[("b", "m2")]
    assert b2.syntax_pct == 100 and b2.semantic_pct == pytest.approx(100 / 3)


def test_method_filter_and_selection():
    assert set(C.cell_table(small())["method"]) == {"baseline"}
    other = C.cell_table(small(), method="other")
    assert len(other) == 1 and other["syntax_pct"].iloc[0] == 0
    assert len(C.cell_table(small(), method=None)) == 5
    assert set(C.cell_table(small(), dsls=["b"])["dsl"]) == {"b"}
    assert set(C.cell_table(small(), models=["m1"])["model"]) == {"m1"}


def test_overall_macro_and_weighted():
    c = C.cell_table(small())
    t = dict(zip(*C.overall(c)[["statistic", "value"]].to_numpy().T))
    syn = np.mean([200 / 3, 0, 100, 100])
    sem = np.mean([100 / 3, 0, 100, 100 / 3])
    assert t["mean syntax pass rate (macro)"] == pytest.approx(syn)
    assert t["mean semantic pass rate (macro)"] == pytest.approx(sem)
    assert t["syntax-semantic gap (macro)"] == pytest.approx(syn - sem)
    # pooled: evaluated 3+1+2+3 = 9; syntax passes 2+0+2+3 = 7; semantic 1+0+2+1 = 4
    assert t["syntax pass rate (task-weighted)"] == pytest.approx(700 / 9)
    assert t["semantic pass rate (task-weighted)"] == pytest.approx(400 / 9)
    assert t["excluded: unavailable"] == 1 and t["excluded: error"] == 2


def test_balanced_drops_incomplete_lines():
    c = C.cell_table(small())
    extra = c.iloc[[0]].assign(dsl="c", model="m1")
    b, dropped = C.balanced(pd.concat([c, extra]))
    assert dropped == {"dsls": ["c"], "models": []}
    assert set(b["dsl"]) == {"a", "b"}


def test_a_semantic_error_leaves_both_rates():
    # (a, m1) a5 is pass/error: excluded from the syntax rate too (one denominator for both levels)
    c = C.cell_table(small()).set_index(["dsl", "model"])
    assert c.loc[("a", "m1"), "evaluated"] == 3 and c.loc[("a", "m1"), "errors"] == 1


def test_empty_and_fixture_table(fixture_paths):
    assert C.cell_table(pd.DataFrame(columns=VERDICT_COLUMNS)).empty
    v = C.load_verdicts(fixture_paths["run"])
    assert list(v.columns) == VERDICT_COLUMNS
    c = C.cell_table(v)
    assert c["dsl"].nunique() == 9 and c["model"].nunique() == 4
    offline = c[c["dsl"] == "fx-offline"]
    assert (offline["evaluated"] == 0).all() and (offline["unavailable"] == 25).all()
    b, dropped = C.balanced(c)
    assert b["dsl"].nunique() == 8 and len(b) == 32


def test_load_verdicts_prefers_jsonl(tmp_path):
    from dslbench.store import RunStore
    s = RunStore(tmp_path)
    s.append("verdicts", {"dsl": "x", "task_id": "t", "model": "m", "method": "baseline", "sample": 0,
                          "syntax": {"status": "pass"}, "semantic": {"status": "fail"}})
    v = C.load_verdicts(tmp_path)
    assert len(v) == 1 and v["syntax_status"].iloc[0] == "pass"
    assert C.load_verdicts(tmp_path / "nothing").empty


def test_committed_fixture_table_matches_the_generator():
    from make_fixture import fixture_verdicts
    committed = pd.read_parquet(Path(__file__).parent / "fixtures" / "analysis" / "verdicts.parquet")
    pd.testing.assert_frame_equal(committed, fixture_verdicts(7))
