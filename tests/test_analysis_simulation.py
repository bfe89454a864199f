"""The estimator check: planted variance components are recovered (labelled simulation)."""
import numpy as np
import pytest

from dslbench.analysis import mixed, simulate


def test_planted_population_eta2_adds_up():
    p = simulate.planted_eta2_population(3.0, 0.2, n_tasks=100, size=400)
    assert sum(p.values()) == pytest.approx(1.0)
    assert p["dsl"] > 10 * p["model"] > 0


def test_anova_and_mixed_model_recover_planted_components():
    r = simulate.run(n_boot=400, n_sim=40 if mixed.r_available()[0] else 0, seed=0)
    t = r["table"].set_index("quantity")
    for k in ("eta2 dsl (%)", "eta2 model (%)"):
        assert t.loc[k, "planted inside CI"], t.loc[k].to_dict()
    ratio = t.loc["variance ratio DSL/model (logit)"]
    assert ratio["planted (population)"] == pytest.approx(15.0)
    if r["fit"]["path"] in ("rpy2", "pymer4"):
        assert ratio["planted inside CI"], ratio.to_dict()
    assert np.isfinite(ratio["recovered"])


def test_pigeonhole_coverage_is_near_nominal_cells_is_not():
    cov = simulate.coverage(reps=12, n_boot=150, seed=1, schemes=("dsl_model",))
    assert (cov["coverage of 95% CI"] >= 0.75).all()
