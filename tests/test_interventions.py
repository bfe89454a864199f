"""Interventions (issue #7): PE files for every DSL, the overlap screen, the refinement loop's stopping
rule (scripted fake model + real validator), the paired statistics against reference values, retrieval
quality, and notebook 06 end to end on a reduced parameter set with the embedded model."""
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dslbench import interventions as I
from dslbench import pipeline, retrieval as R, toolchains
from dslbench.store import RunStore
from dslbench.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]


# --- prompt engineering ------------------------------------------------------------------------

def test_every_discovered_dsl_has_a_versioned_pe_file():
    dsls = sorted(set(toolchains.discover()) | {p.name for p in (ROOT / "data" / "tasks").iterdir() if p.is_dir()})
    missing = [d for d in dsls if not (I.prompts_dir() / f"{d}.yaml").exists()]
    assert not missing, f"no PE file for {missing}"
    for dsl in dsls:
        pe = I.load_pe(dsl)
        assert pe["version"].startswith("pe-v"), dsl
        assert len(pe["examples"]) >= 2, dsl


def test_pe_prompt_keeps_the_baseline_prompt_and_adds_demonstrations():
    task = load_tasks(["jq"], limit=1)["jq"][0]
    tc = toolchains.get("jq")
    pe = I.load_pe("jq")
    msgs = I.pe_messages(task, tc, pe)
    base = pipeline.build_messages(task, tc)
    assert msgs[0]["content"].startswith(base[0]["content"])
    assert msgs[-1]["content"].startswith(base[1]["content"])
    assert [m["role"] for m in msgs[1:-1]] == ["user", "assistant"] * len(pe["examples"])


def test_pe_examples_are_not_benchmark_tasks():
    """The overlap screen run over every PE demonstration against every task's instruction and gold."""
    tasks = load_tasks()
    leaks = []
    for dsl in tasks:
        pe = I.load_pe(dsl)
        chunks = [R.Chunk(f"pe:{dsl}:{i}:{f}", "pe", "CC-BY-4.0", ex[f])
                  for i, ex in enumerate(pe["examples"]) for f in ("instruction", "program")]
        _, found = R.overlap_screen(chunks, R.task_texts({dsl: tasks[dsl]}))
        leaks += found
    assert not leaks, leaks


# --- overlap screen ------------------------------------------------------------------------------

def test_overlap_screen_catches_a_planted_leak():
    tasks = load_tasks(["ufl"])
    victim = tasks["ufl"][4]
    planted = [R.Chunk("planted:gold", "planted", "test", "Some intro text.\n\n" + victim.gold + "\nMore text."),
               R.Chunk("planted:instruction", "planted", "test", victim.instruction),
               R.Chunk("harmless", "planted", "test", "ufl.grad computes the gradient of an expression.")]
    kept, leaks = R.overlap_screen(planted, R.task_texts(tasks))
    assert [c.id for c in kept] == ["harmless"]
    assert {(x["chunk"], x["task_id"]) for x in leaks} == {("planted:gold", victim.id), ("planted:instruction", victim.id)}
    assert all(x["containment"] >= R.LEAK_THRESHOLD for x in leaks)
    # Through the corpus builder: the offending chunk is dropped, reported, and warned about loudly.
    with pytest.warns(UserWarning, match="overlap screen dropped"):
        corpus = R.build_corpus("ufl", tasks, extra=planted[:1])
    assert [x["chunk"] for x in corpus.leaks] == ["planted:gold"]
    assert "planted:gold" not in {c.id for c in corpus.chunks}
    assert corpus.chunks  # the real ufl docstrings remain


def test_corpora_are_deterministic_and_licensed():
    a, b = R.build_corpus("behaviortree"), R.build_corpus("behaviortree")
    assert a.digest == b.digest and not a.leaks
    assert all(c.licence and c.licence != "unknown" for c in a.chunks)
    assert {"behaviortreepy", "notes"} <= {c.source for c in a.chunks}



# Each deep-study corpus must hold documentation shipped with a pinned package, not only our notes:
# a source that silently disappears (its package missing from the install) would leave a notes-only corpus.
SHIPPED_SOURCES = {"sysml": "sysml-library", "veriloga": "accellera-vams", "ufl": "fenics-ufl",
                   "behaviortree": "behaviortreepy", "terraform": "aws-provider-schema"}


@pytest.mark.parametrize("dsl", sorted(SHIPPED_SOURCES))
def test_each_deep_corpus_holds_shipped_documentation(dsl):
    if dsl not in toolchains.discover():
        pytest.skip(f"{dsl}: no toolchain here")
    sources = R.build_corpus(dsl).sources()
    assert SHIPPED_SOURCES[dsl] in set(sources["source"]), sources.to_string()

# --- refinement loop (scripted fake model: THIS test only) ----------------------------------------

def test_refinement_stops_at_first_full_pass_or_after_k_rounds(tmp_path, monkeypatch):
    """FAKE MODEL, labelled: a scripted replacement of the model call returns fixed programs in order,
    so the loop's stopping rule is tested deterministically; every program is judged by the real UFL
    validator through pipeline.evaluate."""
    if not toolchains.probe("ufl").available:
        pytest.skip("UFL toolchain unavailable")
    tasks = load_tasks(["ufl"], limit=2)["ufl"]
    fixer, hopeless = tasks
    bad = lambda t: t.mutants[0].program  # noqa: E731  a syntax mutant: fails validation
    script = {fixer.id: [bad(fixer), bad(fixer), fixer.gold, fixer.gold],      # baseline, r1 fail, r2 pass
              hopeless.id: [bad(hopeless)] * 10}                                # never passes
    calls = []

    def scripted_model(model_name, messages, params, sample, cache_dir, timeout=None, fences=(), endpoint=None):
        tid = next(t.id for t in tasks if t.instruction.strip() in messages[1]["content"])
        calls.append((tid, len(messages)))
        text = script[tid].pop(0)
        return {"text": f"```python\n{text}\n```", "status": "ok", "error": "", "cached": False, "usage": {},
                "duration_s": 0.0, "attempts": 1, "model": "fake/scripted", "params": params}
    monkeypatch.setattr(pipeline, "_generate_job", scripted_model)
    run = tmp_path / "run"
    calls_made = I.Calls(executor="thread", workers=1, progress=False)
    common = dict(models=["smollm2-135m"], limit=2, calls=calls_made)
    pipeline.run_generation(run, ["ufl"], method="baseline", models=["smollm2-135m"], limit=2, **calls_made.generation())
    pipeline.run_validation(run, ["ufl"], progress=False)
    I.run_refinement(run, "baseline-refinement", ["ufl"], rounds=3, **common)
    v = I.with_rounds(RunStore(run).verdict_table())
    chain = lambda tid: v[(v.task_id == tid) & (v.method == "baseline-refinement")].sort_values("round")  # noqa: E731
    a, b = chain(fixer.id), chain(hopeless.id)
    assert list(a["round"]) == [0, 1, 2] and list(a["semantic_status"]) == ["fail", "fail", "pass"]
    assert list(b["round"]) == [0, 1, 2, 3] and (b["semantic_status"] == "fail").all()
    assert len(calls) == 2 + 2 + 3          # 2 baselines, then 2 and 3 repair calls
    # each repair prompt carries the previous answer and the validator's diagnostics
    gens = [g for g in RunStore(run).records("generations") if g["method"] == "baseline-refinement" and g.get("round")]
    assert all(g["messages"][-2]["role"] == "assistant" and "validator rejected" in g["messages"][-1]["content"] for g in gens)
    assert {(g["feedback_mode"], g["prompt_version"]) for g in gens} == {("diagnostics", "refine-v2-diagnostics")}
    # resumable: a rerun makes no call and writes nothing new
    n = len(calls)
    I.run_refinement(run, "baseline-refinement", ["ufl"], rounds=3, **common)
    assert len(calls) == n and len(RunStore(run).records("verdicts")) == len(v)
    finals = I.final_verdicts(v)
    assert set(finals[finals.method == "baseline-refinement"]["round"]) == {2, 3}


# --- statistics on fixtures -------------------------------------------------------------------------

def test_mcnemar_exact_matches_hand_computed_value():
    # 5 both pass, 2 baseline only, 9 method only, 4 neither
    base = [1] * 5 + [1] * 2 + [0] * 9 + [0] * 4
    trt = [1] * 5 + [0] * 2 + [1] * 9 + [0] * 4
    res = I.mcnemar_exact(base, trt)
    assert (res["b"], res["c"]) == (2, 9)
    # exact two-sided binomial test on 11 discordant pairs: 2 * P(X <= 2), X ~ Bin(11, 1/2) = 134/2048
    assert res["p"] == pytest.approx(134 / 2048, abs=1e-12)
    from scipy.stats import binomtest
    assert res["p"] == pytest.approx(binomtest(2, 11, 0.5).pvalue)
    assert I.mcnemar_exact([1, 0], [1, 0])["p"] == 1.0            # no discordant pair
    assert np.isnan(I.mcnemar_exact([], [])["p"])                 # no pair at all


def test_paired_bootstrap_matches_reference_values():
    base = np.array([1] * 5 + [1] * 2 + [0] * 9 + [0] * 4)
    trt = np.array([1] * 5 + [0] * 2 + [1] * 9 + [0] * 4)
    res = I.paired_bootstrap(base, trt, n_boot=20000, seed=1)
    assert res["diff_pp"] == pytest.approx(35.0)                   # (9 - 2) / 20
    # reference: scipy's percentile bootstrap of the mean paired difference
    from scipy.stats import bootstrap
    ref = bootstrap(((trt - base) * 100.0,), np.mean, n_resamples=20000, method="percentile", random_state=2,
                    confidence_level=0.95).confidence_interval
    assert res["ci_low"] == pytest.approx(ref.low, abs=2.5) and res["ci_high"] == pytest.approx(ref.high, abs=2.5)
    # normal-theory check of the width: sd of the mean of d
    d = (trt - base) * 100.0
    se = d.std(ddof=0) / np.sqrt(len(d))
    assert res["ci_high"] - res["ci_low"] == pytest.approx(2 * 1.96 * se, rel=0.15)
    same = I.paired_bootstrap(np.zeros(8), np.ones(8))
    assert (same["ci_low"], same["diff_pp"], same["ci_high"]) == (100.0, 100.0, 100.0)
    assert np.isnan(I.paired_bootstrap([], [])["diff_pp"])


def _verdicts(rows):
    from dslbench.store import VERDICT_COLUMNS
    out = []
    for dsl, task, model, method, syn, sem, rnd in rows:
        r = {c: None for c in VERDICT_COLUMNS}
        r.update(dsl=dsl, task_id=task, model=model, method=method, sample=0, syntax_status=syn,
                 semantic_status=sem, round=rnd)
        out.append(r)
    return pd.DataFrame(out, columns=[*VERDICT_COLUMNS, "round"])


def test_statistics_handle_one_model_and_all_zero_data():
    rows = []
    for dsl in ("ufl", "behaviortree"):
        for t in range(3):
            for method in ("baseline", "pe", "rag"):
                rows.append((dsl, f"{dsl}-{t}", "m1", method, "fail", "fail", 0))
            for r in range(3):
                rows.append((dsl, f"{dsl}-{t}", "m1", "rag-refinement", "fail", "fail", r))
    finals = I.final_verdicts(_verdicts(rows))
    assert len(finals[finals.method == "rag-refinement"]) == 6 and set(finals["round"]) == {0, 2}
    g = I.gains(finals)
    assert (g["semantic_gain_pp"] == 0).all()
    s = I.pe_summary(g)
    assert (s["rows_up"], s["rows_same"], s["rows_down"], s["dsls_gain"]) == (0, 2, 0, 0)
    tests = I.paired_tests(finals, n_boot=100)
    assert (tests["p"] == 1.0).all() and (tests["diff_pp"] == 0).all()
    rank = I.method_ranking(g)
    assert rank["tie"].all()
    from dslbench.generation import load_model_registry
    corr = I.size_correlation(g, load_model_registry())
    assert corr["r"].isna().all() and corr["note"].str.contains(">= 3 models").all()


def test_gains_are_method_minus_matched_baseline():
    rows = [("ufl", f"u{t}", "m1", "baseline", "pass" if t < 1 else "fail", "fail", 0) for t in range(4)]
    rows += [("ufl", f"u{t}", "m1", "pe", "pass" if t < 3 else "fail", "pass" if t < 2 else "fail", 0) for t in range(4)]
    g = I.gains(I.final_verdicts(_verdicts(rows)))
    row = g.iloc[0]
    assert (row["syntax_gain_pp"], row["semantic_gain_pp"]) == (50.0, 50.0)
    p = I.pairs(I.final_verdicts(_verdicts(rows)), "pe")
    assert int(p["treated"].sum()) == 2 and int(p["baseline"].sum()) == 0


def test_task_times_sum_a_chain_and_skip_copied_round0():
    # Two refinement chains: t1 stopped after round 1, t2 ran two rounds; round 0 is the copied baseline
    # (its model time belongs to the baseline, not to the method).
    key = {"dsl": "ufl", "model": "m1", "method": "baseline-refinement", "sample": 0}
    def v(task, rnd, syn, sem):
        return {**key, "task_id": task, "round": rnd, "syntax_duration_s": syn, "semantic_duration_s": sem}
    def g(task, rnd, model_s, copied=None):
        return {**key, "task_id": task, "round": rnd, "generation_duration_s": model_s, "copied_from": copied}
    verdicts = pd.DataFrame([v("t1", 0, 1.0, 1.0), v("t1", 1, 1.0, 2.0), v("t2", 0, 1.0, 1.0),
                             v("t2", 1, 0.5, 0.5), v("t2", 2, 0.5, 0.5)])
    gens = pd.DataFrame([g("t1", 0, 50.0, "baseline"), g("t1", 1, 10.0), g("t2", 0, 50.0, "baseline"),
                         g("t2", 1, 20.0), g("t2", 2, 100.0)])
    t = I.task_times(verdicts, gens).set_index("method").loc["baseline-refinement"]
    # t1: 10 + 3 = 13 s over 1 round; t2: 120 + 2 = 122 s over 2 rounds
    assert t["chains"] == 2 and t["rounds_mean"] == 1.5
    assert (t["model_s"], t["validation_s"], t["total_s"]) == (65.0, 2.5, 67.5)
    assert t["total_s_median"] == 67.5
    verdicts3 = pd.concat([verdicts, pd.DataFrame([v("t3", 1, 0.0, 0.0)])])
    gens3 = pd.concat([gens, pd.DataFrame([g("t3", 1, 1000.0)])])
    t3 = I.task_times(verdicts3, gens3).set_index("method").loc["baseline-refinement"]
    assert t3["total_s_median"] == 122.0 and t3["total_s"] > 370   # one slow chain moves the mean only


# --- retrieval quality -----------------------------------------------------------------------------

def test_retrieval_quality_on_labelled_queries():
    found = toolchains.discover()
    for dsl in R.DEEP_DSLS:
        if dsl in found:
            assert len(R.load_queries(dsl)) >= 8, dsl
    t0 = time.perf_counter()
    q = R.quality(["behaviortree", "ufl"], modes=("bm25", "hybrid"))
    print(q.to_string(index=False), f"\n({time.perf_counter() - t0:.1f} s)")
    for col in ("recall@1", "recall@3", "recall@5", "recall@10"):
        assert q[col].between(0, 1).all()
    assert (q["recall@10"] >= q["recall@1"]).all()
    assert (q["recall@5"] >= 0.5).all()  # a floor well below the measured values (see report)


# --- notebook 06 on a reduced parameter set -----------------------------------------------------

def test_notebook_06_runs_end_to_end_reduced(tmp_path, monkeypatch):
    import papermill as pm
    monkeypatch.setenv("DSLBENCH_LLAMA_THREADS", os.environ.get("DSLBENCH_LLAMA_THREADS", "1"))
    run = tmp_path / "run"
    t0 = time.perf_counter()
    pm.execute_notebook(str(ROOT / "notebooks" / "06_interventions.ipynb"), str(tmp_path / "06.ipynb"),
                        parameters={"run_dir": str(run), "pe_dsls": ["behaviortree", "jq"],
                                    "deep_dsls": ["behaviortree"], "limit": 1, "rounds": 1, "max_tokens": 48,
                                    "top_k": 2, "n_boot": 200, "quality_modes": ["bm25"], "retrieval_mode": "bm25",
                                    "executor": "thread"},  # the embedded model loads once, in the kernel
                        cwd=str(ROOT), kernel_name="python3", progress_bar=False)
    print(f"notebook 06: {time.perf_counter() - t0:.0f} s")
    nb = json.loads((tmp_path / "06.ipynb").read_text())
    text = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                     + "".join(o.get("data", {}).get("text/markdown", ""))
                     for c in nb["cells"] for o in c.get("outputs", []))
    assert "cannot be estimated" in text                     # one model: said, not crashed
    methods = {v["method"] for v in RunStore(run).records("verdicts")}
    assert methods == set(I.METHODS)
    for name in ("gains", "pe_summary", "paired_tests", "method_ranking", "size_correlation", "task_times",
                 "retrieval_quality", "corpus_sources", "overlap_screen"):
        assert (run / "tables" / f"interventions_{name}.csv").exists(), name
    gens = [g for g in RunStore(run).records("generations") if g["method"] == "pe"]
    assert gens and all(g["prompt_version"] == "pe-v1" for g in gens)
    rag = [g for g in RunStore(run).records("generations") if g["method"] == "rag"]
    assert rag and all(g["retrieved"] and g["retrieved"][0]["source"] for g in rag)


def test_refinement_stops_where_the_model_has_nothing_to_repair():
    def v(syn, sem, rnd=1):
        return {"syntax": {"status": syn}, "semantic": {"status": sem}, "round": rnd}
    assert I.is_final(v("pass", "pass"), 3)
    assert not I.is_final(v("pass", "fail"), 3) and not I.is_final(v("fail", "fail"), 3)
    # a semantic level that errored (gold_broken, harness) or has no judge: its diagnostics are ours
    assert I.is_final(v("pass", "error"), 3) and I.is_final(v("pass", "unavailable"), 3)
    assert I.is_final(v("error", "error"), 3) and I.is_final(v("unavailable", "unavailable"), 3)
    assert I.is_final(v("pass", "fail", rnd=3), 3)


def test_the_two_feedback_modes_record_distinct_repair_prompts(tmp_path, monkeypatch):
    """tests-refinement shows the oracle's expected values, baseline-refinement does not (real jq judge)."""
    task = load_tasks(["jq"], limit=1)["jq"][0]
    wrong = next(m.program for m in task.mutants if m.level == "semantic")

    def scripted_model(model_name, messages, params, sample, cache_dir, timeout=None, fences=(), endpoint=None):
        text = wrong if len(messages) == 2 else task.gold      # the baseline is wrong, every repair right
        return {"text": f"```jq\n{text}\n```", "status": "ok", "error": "", "cached": False, "usage": {},
                "duration_s": 0.0, "attempts": 1, "model": "fake/scripted", "params": params}
    monkeypatch.setattr(pipeline, "_generate_job", scripted_model)
    run = tmp_path / "run"
    calls = I.Calls(executor="thread", workers=1, progress=False)
    common = dict(models=["smollm2-135m"], limit=1, calls=calls)
    pipeline.run_generation(run, ["jq"], method="baseline", models=["smollm2-135m"], limit=1, **calls.generation())
    pipeline.run_validation(run, ["jq"], progress=False)
    for method in ("baseline-refinement", "tests-refinement"):
        I.run_refinement(run, method, ["jq"], rounds=2, **common)
    base = next(v for v in RunStore(run).records("verdicts") if v["method"] == "baseline")
    expected = base["semantic"]["expected"]
    assert base["semantic"]["status"] == "fail" and expected
    repairs = {g["method"]: g for g in RunStore(run).records("generations") if g.get("round") == 1}
    plain, tests = (repairs[m]["messages"][-1]["content"] for m in ("baseline-refinement", "tests-refinement"))
    assert expected not in plain and expected in tests and plain != tests
    assert repairs["tests-refinement"]["prompt_version"] == "refine-v2-tests"
    finals = I.final_verdicts(I.with_rounds(RunStore(run).verdict_table()))
    assert set(finals[finals.method.str.endswith("refinement")]["semantic_status"]) == {"pass"}
