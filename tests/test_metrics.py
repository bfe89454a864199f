"""One pass-rate definition: every entry point gives the same rates and counts on the same records.

The records are made by hand through the one record writer (verdicts.verdict_record), so the
expected figures can be worked out on paper:

  baseline  t1 pass/pass   t2 pass/fail   t3 fail/syntax_failed   t4 pass/error (harness)   t5 unavailable
  pe        t1 pass/pass   t2 pass/pass   t3 pass/fail            t4 fail/syntax_failed     t5 unavailable

baseline: 3 evaluated, syntax 2/3, semantic 1/3, 1 error, 1 unavailable (one record each, not per level).
pe: 4 evaluated, syntax 3/4, semantic 2/4. Paired with baseline on t1-t3 (t4's baseline errored):
syntax 2/3 -> 3/3 (+33.33 pp), semantic 1/3 -> 2/3 (+33.33 pp).
"""
import math

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli
from dslbench import book, interventions, metrics, pipeline, verdicts
from dslbench.analysis import cells
from dslbench.store import RunStore

PROBE = {"toolchain": "jq (libjq)", "version": "1.7", "dialect": "jq 1.7", "exact": True}
LEVELS = {"pass": ("pass", "ok"), "fail": ("fail", "wrong_output"), "syntax_fail": ("fail", "parse_error"),
          "syntax_failed": ("fail", "syntax_failed"), "error": ("error", "harness_error"),
          "unavailable": ("unavailable", "unsupported_by_judge")}
PLAN = {"baseline": [("pass", "pass"), ("pass", "fail"), ("syntax_fail", "syntax_failed"), ("pass", "error"),
                     ("unavailable", "unavailable")],
        "pe": [("pass", "pass"), ("pass", "pass"), ("pass", "fail"), ("syntax_fail", "syntax_failed"),
               ("unavailable", "unavailable")]}


def level(kind: str) -> dict:
    status, reason = LEVELS[kind]
    return verdicts.LevelVerdict(status, f"{kind} by hand", reason=reason).to_dict()


def write_run(run_dir) -> RunStore:
    store = RunStore(run_dir)
    for method, plan in PLAN.items():
        for i, (syn, sem) in enumerate(plan, 1):
            gen = {"dsl": "jq", "task_id": f"t{i}", "model": "m", "method": method, "sample": 0, "domain": "d",
                   "difficulty": "easy", "split": "test", "messages": [], "raw_output": "x", "program": "x",
                   "extraction_rule": "fenced", "prompt_version": "p1", "generation_status": "ok"}
            out = {"probe": PROBE, "validator": "toolchains/jq/validator.py:Validator", "syntax": level(syn),
                   "semantic": level(sem), "started": "t0", "finished": "t1"}
            store.append("verdicts", verdicts.verdict_record(gen, out, "hand", "rev"))
    return store


@pytest.fixture
def table(tmp_path):
    return write_run(tmp_path / "run").verdict_table()


def test_rates_on_paper(table):
    r = metrics.rates(table).set_index("method")
    b, p = r.loc["baseline"], r.loc["pe"]
    assert (b["records"], b["evaluated"], b["errors"], b["unavailable"]) == (5, 3, 1, 1)
    assert b["syntax_pct"] == pytest.approx(200 / 3) and b["semantic_pct"] == pytest.approx(100 / 3)
    assert (p["evaluated"], p["syntax_pct"], p["semantic_pct"]) == (4, 75.0, 50.0)
    assert b["excluded_reasons"] == "harness_error 1, unsupported_by_judge 1"
    assert b["judge"] == "jq (libjq) 1.7" and bool(b["judge_exact"])


def test_every_entry_point_agrees(table, tmp_path):
    ref = metrics.rates(table)
    cols = ["dsl", "model", "method", "records", "evaluated", "errors", "unavailable", "syntax_pct", "semantic_pct"]
    pd.testing.assert_frame_equal(pipeline.pass_rates(table)[cols], ref[cols])
    for method in ("baseline", "pe"):
        c = cells.cell_table(table, method).iloc[0]
        want = ref[ref["method"] == method].iloc[0]
        assert [c[k] for k in cols] == [want[k] for k in cols]
    # Table II reads the run folder the same way
    loaded = cells.cell_table(cells.load_verdicts(tmp_path / "run"), "baseline").iloc[0]
    assert loaded["semantic_pct"] == pytest.approx(100 / 3)
    # the book's results page prints the same figures
    page = book.results_md(table, "hand")
    assert "66.7" in page and "33.3" in page and "75.0" in page and "50.0" in page
    assert "error / harness_error: 1" in page and "unavailable / unsupported_by_judge: 2" in page


def test_report_cli_prints_the_same_rates(tmp_path):
    write_run(tmp_path / "run")
    r = run_cli("report", "--run", str(tmp_path / "run"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert "66.67" in r.stdout and "33.33" in r.stdout and "75.00" in r.stdout
    assert "harness_error" in r.stdout and "unsupported_by_judge" in r.stdout


def test_gains_and_paired_tests_use_the_same_pairs(table):
    g = interventions.gains(table).iloc[0]
    assert g["method"] == "pe" and g["evaluated"] == 3
    assert g["syntax_gain_pp"] == pytest.approx(100 / 3) and g["semantic_gain_pp"] == pytest.approx(100 / 3)
    pairs = interventions.pairs(table, "pe", "semantic")
    assert sorted(pairs["task_id"]) == ["t1", "t2", "t3"]
    tests = interventions.paired_tests(table, n_boot=200).set_index(["level", "dsl"])
    assert tests.loc[("semantic", "(all)"), "n"] == 3
    assert tests.loc[("semantic", "(all)"), "diff_pp"] == pytest.approx(g["semantic_gain_pp"])
    assert (tests.loc[("semantic", "(all)"), "b"], tests.loc[("semantic", "(all)"), "c"]) == (0, 1)


def test_exclusions_and_health(table):
    ex = metrics.exclusions(table, by=("method",))
    assert set(zip(ex["method"], ex["status"], ex["reason"], ex["records"])) == {
        ("baseline", "error", "harness_error", 1), ("baseline", "unavailable", "unsupported_by_judge", 1),
        ("pe", "unavailable", "unsupported_by_judge", 1)}
    h = metrics.judging_health(table).iloc[0]
    assert (h["records"], h["evaluated"], h["expected"]) == (10, 7, 10)
    metrics.require_judged(table, 0.5)          # 70 % judged: fine
    with pytest.raises(metrics.RunCannotJudge, match=r"jq: 7/10 judged, top reason unsupported_by_judge \(2\)"):
        metrics.require_judged(table, 0.8)


def test_missing_toolchain_is_reported_not_counted_against_the_run(tmp_path):
    store = RunStore(tmp_path / "run")
    for i in range(3):
        gen = {"dsl": "lean", "task_id": f"t{i}", "model": "m", "method": "baseline", "sample": 0,
               "generation_status": "ok"}
        v = verdicts.level("unavailable", "toolchain_unavailable", "lean not installed").to_dict()
        store.append("verdicts", verdicts.verdict_record(gen, {"probe": PROBE, "syntax": v, "semantic": v,
                                                               "started": "", "finished": ""}, "r", "rev"))
    t = store.verdict_table()
    assert math.isnan(metrics.judging_health(t).iloc[0]["judged_fraction"])
    metrics.require_judged(t)                   # doctor and the book already say lean is unavailable


def test_reason_taxonomy_is_closed_and_consistent():
    with pytest.raises(ValueError, match="unknown verdict reason"):
        verdicts.LevelVerdict("fail", reason="it_broke")
    with pytest.raises(ValueError, match="means 'fail'"):
        verdicts.LevelVerdict("error", reason="timeout")
    assert set(verdicts.SYNTAX_REASONS) <= set(verdicts.PROGRAM_FAULTS)
    assert {verdicts.status_of(r) for r in verdicts.ORACLE_REASONS} == {"fail"}


@pytest.mark.parametrize("signal_exit, timed_out, reason", [
    (137, False, "resource_limit"),   # SIGKILL under bubblewrap (128 + 9)
    (152, False, "resource_limit"),   # SIGXCPU
    (139, False, "runtime_error"),    # SIGSEGV: the program crashed its interpreter
    (134, False, "runtime_error"),    # SIGABRT
    (-11, False, "runtime_error"),    # SIGSEGV without bubblewrap
    (0, True, "timeout"),
])
def test_settle_makes_crashes_and_limits_the_programs_fault(signal_exit, timed_out, reason):
    from dslbench.sandbox import RunResult
    from dslbench.toolchains import Toolchain
    result = RunResult("runner", signal_exit, "", "", timed_out, 1.0, "bwrap-uid")
    v = verdicts.settle("semantic", Toolchain.verdict("error", "runner failed", result))
    assert (v.status, v.reason) == ("fail", reason)


def test_settle_defaults_and_sandbox_errors():
    from dslbench.sandbox import RunResult
    from dslbench.toolchains import Toolchain
    ok = RunResult("c", 1, "", "syntax error", False, 0.1, "bwrap")
    assert verdicts.settle("syntax", Toolchain.verdict("fail", "bad", ok), "compile_error").reason == "compile_error"
    assert verdicts.settle("semantic", Toolchain.verdict("fail", "bad", ok), "x", "oracle_mismatch").reason == "oracle_mismatch"
    gone = RunResult("c", 127, "", "setpriv: failed to execute python", False, 0.0, "bwrap-uid")
    v = verdicts.settle("syntax", Toolchain.verdict("error", "runner failed", gone))
    assert (v.status, v.reason) == ("error", "sandbox_error")
    mem = RunResult("c", 1, "", "Traceback...\nMemoryError", False, 0.3, "bwrap")
    assert verdicts.settle("semantic", Toolchain.verdict("error", "runner failed", mem)).reason == "resource_limit"


def test_a_run_whose_sandbox_cannot_start_the_runner_stops_naming_the_dsl(project_copy, tmp_path):
    """The measured failure: every jq verdict `error` because the runner could not be executed inside
    the sandbox (exit 127 from setpriv). `validate` must stop loudly, after keeping every verdict."""
    (project_copy / "toolchains" / "jq" / "run_jq.py").write_text(
        "import sys\nprint('setpriv: failed to execute python: No such file or directory', file=sys.stderr)\n"
        "sys.exit(127)\n")
    from dslbench.tasks import load_tasks
    store = RunStore(tmp_path / "run")
    for t in load_tasks(["jq"], limit=3)["jq"]:
        store.append("generations", {"dsl": "jq", "task_id": t.id, "model": "gold-replay", "method": "baseline",
                                     "sample": 0, "domain": t.domain, "difficulty": t.difficulty, "split": t.split,
                                     "messages": [], "raw_output": t.gold, "program": t.gold,
                                     "extraction_rule": "whole-output", "prompt_version": "p", "generation_status": "ok"})
    r = run_cli("validate", "--run", str(tmp_path / "run"), "--executor", "thread", "--no-progress", timeout=600)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "jq: 0/3 judged, top reason sandbox_error (3)" in r.stderr and "Traceback" not in r.stderr
    kept = RunStore(tmp_path / "run").records("verdicts")
    assert len(kept) == 3 and {v["syntax"]["reason"] for v in kept} == {"sandbox_error"}
    # with the check lowered to 0 the same run reports instead of stopping
    assert run_cli("validate", "--run", str(tmp_path / "run"), "--min-judged", "0", timeout=600).returncode == 0


def test_pass_at_k_matches_the_closed_form_on_a_hand_made_table():
    # task A: 5 samples, 2 pass; task B: 5 samples, 0 pass; task C: 2 samples (one errored), 1 pass
    rows = []
    for task, outcomes in {"A": "ppfff", "B": "fffff", "C": "pfe"}.items():
        for sample, o in enumerate(outcomes):
            sem = {"p": "pass", "f": "fail", "e": "error"}[o]
            rows.append({"dsl": "jq", "task_id": task, "model": "m", "method": "baseline", "sample": sample,
                         "syntax_status": "pass", "semantic_status": sem})
    got = metrics.pass_at_k(pd.DataFrame(rows), ks=(1, 2, 5)).iloc[0]
    # closed forms: pass@k = 1 - C(n-c, k) / C(n, k)
    a1, a2, a5 = 2 / 5, 1 - math.comb(3, 2) / math.comb(5, 2), 1.0
    c1, c2 = 1 / 2, 1.0
    assert got["tasks"] == 3
    assert got["pass@1_pct"] == pytest.approx(100 * (a1 + 0 + c1) / 3)
    assert got["pass@2_pct"] == pytest.approx(100 * (a2 + 0 + c2) / 3)
    assert got["pass@5_pct"] == pytest.approx(100 * (a5 + 0) / 2) and got["tasks_below_5"] == 1
    # pass@1 over one sample per task is the semantic pass rate of metrics.rates
    one = pd.DataFrame([r for r in rows if r["sample"] == 0])
    assert metrics.pass_at_k(one).iloc[0]["pass@1_pct"] == pytest.approx(metrics.rates(one).iloc[0]["semantic_pct"])
    with pytest.raises(ValueError):
        metrics.pass_at_k_estimate(3, 1, 4)


def test_report_prints_pass_at_k_when_there_are_several_samples(capsys):
    from dslbench import cli
    rows = [{"dsl": "jq", "task_id": t, "model": "m", "method": "baseline", "sample": s, "syntax_status": "pass",
             "semantic_status": "pass" if (t, s) in {("A", 0), ("B", 1)} else "fail", "syntax_reason": "ok",
             "semantic_reason": "ok"} for t in "AB" for s in range(3)]
    cli._print_rates(pd.DataFrame(rows))
    out = capsys.readouterr().out
    assert "pass@k" in out and "pass@3_pct" in out
    assert f"{100 * 1 / 3:.2f}" in out      # pass@1 = mean(1/3, 1/3)


def _sampled_table():
    """Two tasks x 4 samples drawn at temperature 0.8: A passes 1 of 4, B 3 of 4."""
    from dslbench.store import VERDICT_COLUMNS
    wins = {("A", 2), ("B", 0), ("B", 1), ("B", 3)}
    rows = [{**{c: None for c in VERDICT_COLUMNS}, "dsl": "jq", "task_id": t, "model": "m", "method": "baseline",
             "sample": s, "syntax_status": "pass", "semantic_status": "pass" if (t, s) in wins else "fail",
             "syntax_reason": "ok", "semantic_reason": "ok" if (t, s) in wins else "wrong_output",
             "judge_exact": True, "temperature": 0.8} for t in "AB" for s in range(4)]
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def test_the_cell_table_and_the_results_page_carry_pass_at_k_when_there_are_several_samples():
    from dslbench import book
    from dslbench.analysis import cells as C
    table = _sampled_table()
    cell = C.cell_table(table).iloc[0]
    a2, b2 = 1 - math.comb(3, 2) / math.comb(4, 2), 1.0           # closed form per task
    assert cell["samples"] == 4 and cell["pass@1_pct"] == pytest.approx(100 * (1 / 4 + 3 / 4) / 2)
    assert cell["pass@2_pct"] == pytest.approx(100 * (a2 + b2) / 2) and cell["pass@4_pct"] == pytest.approx(100)
    assert cell["pass@1_pct"] == pytest.approx(cell["semantic_pct"])
    page = book.results_md(table, "r")
    assert "## pass@k" in page and "4 samples per task at temperature 0.8" in page and "pass@2 %" in page
    one = table[table["sample"] == 0]
    assert "samples" not in C.cell_table(one) and "pass@k" not in book.results_md(one, "r")


def test_repeated_sampling_at_temperature_zero_is_refused_before_any_call(tmp_path):
    from dslbench.errors import UserError
    from dslbench.pipeline import run_generation
    with pytest.raises(UserError, match="repeated sampling needs a temperature above 0"):
        run_generation(tmp_path / "run", ["jq"], None, limit=1, samples=3)
    assert not (tmp_path / "run" / "generations.jsonl").exists()


def test_missingness_by_model_flags_a_judge_that_fails_one_models_programs():
    rows = []
    for m, missing in (("a", 2), ("b", 18)):          # the stand-in cannot judge most of b's programs
        for i in range(40):
            st = "unavailable" if i < missing else "pass"
            rows.append({"dsl": "cypher", "task_id": f"t{i}", "model": m, "method": "baseline", "sample": 0,
                         "syntax_status": st, "semantic_status": st})
    for m in ("a", "b"):                               # a DSL where nothing is missing
        rows += [{"dsl": "jq", "task_id": f"t{i}", "model": m, "method": "baseline", "sample": 0,
                  "syntax_status": "pass", "semantic_status": "fail"} for i in range(10)]
    t = metrics.missingness_by_model(pd.DataFrame(rows)).set_index("dsl")
    from scipy.stats import chi2_contingency
    chi2, p, _, _ = chi2_contingency([[2, 18], [38, 22]])
    assert t.loc["cypher", "unavailable"] == 20 and t.loc["cypher", "unavailable_by_model"] == "a: 2/40, b: 18/40"
    assert t.loc["cypher", "p_value"] == pytest.approx(p) and t.loc["cypher", "chi2"] == pytest.approx(chi2)
    assert bool(t.loc["cypher", "differs"]) and p < 0.001
    assert not bool(t.loc["jq", "differs"]) and np.isnan(t.loc["jq", "p_value"])


def test_generation_throughput_per_model_and_method():
    """Calls/s and tokens/s over model time, good replies only; the results page shows the same table."""
    rows = [  # model, method, status, seconds, completion tokens, cached, finish_reason
        ("m", "baseline", "ok", 4.0, 100, False, "stop"),
        ("m", "baseline", "ok", 6.0, 300, True, "repetition"),
        ("m", "baseline", "error", 9.0, 0, False, None),      # a failed call: not a reply
        ("m", "pe", "ok", 2.0, 50, False, "fence_closed"),
    ]
    gens = pd.DataFrame(rows, columns=["model", "method", "generation_status", "generation_duration_s",
                                       "usage_completion_tokens", "cached", "finish_reason"])
    tp = metrics.generation_throughput(gens).set_index("method")
    assert tp.loc["baseline", "replies"] == 2 and tp.loc["baseline", "cached"] == 1
    assert tp.loc["baseline", "model_s"] == 10.0 and tp.loc["baseline", "calls_per_s"] == 0.2
    assert tp.loc["baseline", "tokens_per_s"] == 40.0 and tp.loc["baseline", "tokens_per_reply"] == 200.0
    assert tp.loc["baseline", "ended_by"] in ("stop 1, repetition 1", "repetition 1, stop 1")
    assert tp.loc["pe", "tokens_per_s"] == 25.0 and tp.loc["pe", "ended_by"] == "fence_closed 1"
    page = "\n".join(book.throughput_md(gens))
    assert "## Model calls" in page and "| m | pe | 1 | 0 | 2.0 | 0.5 | 25.0 | 50.0 | fence_closed 1 |" in page
    assert book.throughput_md(gens.iloc[0:0]) == []
