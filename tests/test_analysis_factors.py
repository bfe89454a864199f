"""Factors, correlations, profiles and the profiler (dslbench.analysis.factors/profiles/profiler)."""
import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dslbench.analysis import cells as C, factors, meta, profiler, profiles

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "analysis"))
from make_fixture import write_fixture  # noqa: E402


@pytest.fixture(scope="module")
def fixture_paths(tmp_path_factory):
    """The synthetic 8 DSLs x 4 models x 25 tasks run (tests/fixtures/analysis/make_fixture.py)."""
    return write_fixture(tmp_path_factory.mktemp("analysis-fixture"))


def test_text_helpers_by_hand():
    assert factors.split_words("parseHTTPResponse my_var x1 ab") == ["parse", "http", "response", "var"]
    assert factors.lex_tokens('x := "hi" + 42') == ["x", ":=", "<str>", "+", "<num>"]
    a, b = Counter({"ab": 1, "bc": 1}), Counter({"ab": 1})
    assert factors.cosine(a, b) == pytest.approx(1 / np.sqrt(2))
    assert factors.char_ngrams("abcd") == Counter({"abc": 1, "bcd": 1})


def test_familiarity_recognizes_its_own_notation():
    sql = factors.familiarity_components(["SELECT name FROM users WHERE id = 1 ORDER BY name;"])
    assert sql["sf_closest"] == "sql"
    js = factors.familiarity_components(['{"a": 1, "b": [true, false], "c": {"d": "x"}}'])
    assert js["sf_closest"] == "json"


def test_knowledge_components_by_hand():
    k = factors.knowledge_components(["the zorblax frobnicates"], ["zorblax(quuxify)"])
    # word tokens: the, zorblax, frobnicates, zorblax, quuxify -> domain (not in G): 4 of 5
    assert k["kd_word_tokens"] == 5
    assert k["kd_domain_term_density"] == pytest.approx(4 / 5)
    assert k["kd_symbol_surface"] == pytest.approx(2 / np.sqrt(2))
    assert k["kd_term_breadth"] == 1.0


def test_factor_scores_are_z_scores_and_reference_standardization():
    comp = pd.DataFrame({"dsl": list("abcd"), **{c: [1.0, 2, 3, 4] for cs in factors.COMPONENTS.values() for c in cs}})
    z = factors.factor_scores(comp)
    for f in factors.FACTORS:
        assert z[f].mean() == pytest.approx(0) and z[f].std(ddof=1) == pytest.approx(1)
    new = comp.iloc[[0]].assign(dsl="new")
    zn = factors.factor_scores(new, reference=comp)
    assert zn["KD"].iloc[0] == pytest.approx(z["KD"].iloc[0])


def test_associations_match_scipy_and_are_seeded():
    rng = np.random.default_rng(0)
    n = 10
    scores = pd.DataFrame({"dsl": [f"d{i}" for i in range(n)], **{f: rng.normal(size=n) for f in factors.FACTORS}})
    rates = pd.DataFrame({"dsl": scores["dsl"], "semantic_pct": 20 - 5 * scores["KD"] + rng.normal(size=n),
                          "syntax_pct": 40 + rng.normal(size=n) * 10})
    a = factors.associations(scores, rates, 300, 300, seed=1)
    kd = a[(a["key"] == "KD") & (a["metric"] == "semantic")].iloc[0]
    pr = stats.pearsonr(scores["KD"], rates["semantic_pct"])
    sr = stats.spearmanr(scores["KD"], rates["semantic_pct"])
    assert kd["pearson_r"] == pytest.approx(pr.statistic) and kd["pearson_p"] == pytest.approx(pr.pvalue)
    assert kd["spearman_rho"] == pytest.approx(sr.statistic)
    assert kd["slope_pp_per_sd"] == pytest.approx(stats.linregress(scores["KD"], rates["semantic_pct"]).slope)
    assert kd["r_ci_low"] < kd["pearson_r"] < kd["r_ci_high"] and kd["perm_p"] < 0.01
    assert kd["bonferroni_p"] == pytest.approx(min(1, kd["perm_p"] * 8))
    assert kd["loo_sign_stable"]
    b = factors.associations(scores, rates, 300, 300, seed=1)
    pd.testing.assert_frame_equal(a, b)


def test_partial_correlation_by_hand():
    rng = np.random.default_rng(2)
    z = rng.normal(size=50)
    x = z + rng.normal(size=50) * 0.1
    y = z + rng.normal(size=50) * 0.1
    # x and y correlate only through z: the partial correlation is near 0, the plain one near 1
    assert abs(factors._partial_r(y, x, z[:, None])) < 0.4
    assert factors._partial_r(y, x, np.zeros((50, 0))) > 0.9


def test_components_on_fixture(fixture_paths):
    v = C.load_verdicts(fixture_paths["run"])
    comp = factors.components(["fx-query", "fx-proof", "fx-offline"], v, fixture_paths["tasks"],
                              fixture_paths["toolchains"], fixture_paths["release_years"])
    c = comp.set_index("dsl")
    assert c.loc["fx-query", "sf_closest"] == "sql"
    assert c.loc["fx-proof", "hc_toolchain_steps_raw"] == 3 and c.loc["fx-proof", "hc_runtime_dependencies_raw"] == 4
    assert c.loc["fx-query", "ry_release_year"] == 1986
    assert np.isnan(c.loc["fx-offline", "hc_validation_seconds"])  # no evaluated verdicts: no measured time
    assert c.loc["fx-proof", "hc_validation_seconds_raw"] > 0


def test_release_years_have_sources():
    ry = factors.release_years()
    for key in ("jq", "smiles", "verilog", "solidity"):
        assert 1980 < ry[key]["year"] <= 2026 and ry[key]["source"]
    flags = meta.executable_oracle_table()
    primary = {k for k in ("smiles", "jq", "cypher", "gdscript", "verilog", "verilog-a", "dafny", "openqasm3", "ufl",
                           "solidity", "lean", "nextflow", "vega-lite", "terraform", "latex", "iec-st", "sysml-v2",
                           "bt-xml")}
    assert sum(flags[k]["executable"] for k in primary) == 11  # the paper's 11 fully executable DSLs


def test_profiles_on_fixture(fixture_paths):
    v = C.load_verdicts(fixture_paths["run"])
    tm = meta.load_task_meta(None, fixture_paths["tasks"])
    p = profiles.profile(v, tm, None, n_boot=100, seed=0)
    assert set(p["axis"]) == set(profiles.AXES)
    for ax, g in p.groupby("axis"):
        assert g["leader"].sum() == 1
        assert g["score"].sum() == pytest.approx(0, abs=1e-9)  # centred within DSLs
        assert (g["ci_low"] <= g["ci_high"]).all()
        assert not g.loc[g["leader"], "tied_with_leader"].any()
    q = profiles.profile(v, tm, None, n_boot=100, seed=0)
    pd.testing.assert_frame_equal(p, q)
    assert profiles.profile(v, tm, None, models=["model-a"], n_boot=50).empty  # one model: nothing to profile


def test_profile_axis_rates_by_hand():
    Y = np.array([[1, 0], [1, 1], [0, np.nan]], dtype=float)
    w = np.array([1, 1, 0], dtype=float)
    assert np.allclose(profiles._axis_rates(Y, w), [1.0, 0.5])


def test_profiler_loo_and_cli(fixture_paths, tmp_path, capsys):
    v = C.load_verdicts(fixture_paths["run"])
    rates = C.dsl_summary(C.cell_table(v))
    comp = factors.components(list(rates["dsl"]), v, fixture_paths["tasks"], fixture_paths["toolchains"],
                              fixture_paths["release_years"])
    pred, mae = profiler.loo_mae(comp, rates, 3)
    assert len(pred) == 8 and set(mae["metric"]) == {"semantic", "syntax"}
    m = mae.set_index("metric")
    assert m.loc["semantic", "profiler MAE (pp)"] == pytest.approx((pred["semantic_pred"] - pred["semantic_true"]).abs().mean())
    folder = tmp_path / "newdsl"
    folder.mkdir()
    for i in range(3):
        (folder / f"q{i}.sql").write_text(f"SELECT a, b FROM t{i} WHERE c = {i} ORDER BY a;\n")
    (folder / "profile.yaml").write_text("release_year: 1990\nruntime_dependencies: 1\ntoolchain_steps: 1\n")
    argv = [str(folder), "--run", str(fixture_paths["run"]), "--tasks", str(fixture_paths["tasks"]),
            "--toolchains", str(fixture_paths["toolchains"]), "--release-years", str(fixture_paths["release_years"]),
            "--json"]
    assert profiler.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["neighbours"]) == 3 and out["z"]["RY"] < 0  # 1990 is older than most fixture DSLs
    assert all(out["z"][f] is not None for f in ("KD", "SF", "HC", "RY"))
    assert out["bottleneck"] in profiler.INTERVENTIONS and out["intervention"]
    assert out["semantic_band"] in {"very low", "low", "moderate", "high"}
    assert profiler.main([str(folder), "--run", str(tmp_path / "empty-run")]) == 2


def test_bottleneck_rules():
    assert profiler.bottleneck(pd.Series({"KD": 2.0, "HC": 0.1, "RY": 0.0, "SF": 0.0}))[0] == "knowledge"
    assert profiler.bottleneck(pd.Series({"KD": 0.0, "HC": 0.1, "RY": 0.0, "SF": -2.0}))[0] == "syntax"
    assert profiler.bottleneck(pd.Series({"KD": 0.2, "HC": 0.1, "RY": 0.0, "SF": 1.0}), neighbour_gap=30)[0] == "structure"
    assert profiler.bottleneck(pd.Series({"KD": 0.1, "HC": 0.2, "RY": -1.0, "SF": 0.3}))[0] == "none"
    assert profiler.band(3) == "very low" and profiler.band(40) == "high"
