"""Notebooks 04 and 05 execute with papermill on the synthetic fixture run (full statistics), on a
one-model / two-DSL slice of it (what cannot be estimated must be said, not crash) and on an empty run."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "analysis"))
from make_fixture import write_fixture  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"n_boot": 200, "n_perm": 200}


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return write_fixture(tmp_path_factory.mktemp("nb-fixture"))


def execute(name, out, **params):
    import papermill as pm
    pm.execute_notebook(str(ROOT / "notebooks" / name), str(out), parameters=params, cwd=str(ROOT),
                        kernel_name="python3", progress_bar=False)
    return json.loads(Path(out).read_text())


def text(nb) -> str:
    parts = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream":
                parts.append("".join(o["text"]))
            for k in ("text/plain", "text/markdown"):
                if k in o.get("data", {}):
                    parts.append("".join(o["data"][k]))
    return "\n".join(parts)


def images(nb) -> int:
    return sum("image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))


def test_notebook_04_full_statistics(fx, tmp_path):
    nb = execute("04_anova_mixed_model.ipynb", tmp_path / "04.ipynb", run_dir=str(fx["run"]), n_sim=20,
                 min_tasks=25, toolchains_dir=str(fx["toolchains"]), sim_n_boot=200, sim_n_sim=20,
                 sim_coverage_reps=3, **SMALL)
    out = text(nb)
    assert "complete grid: 8 DSLs x 4 models = 32 cells" in out
    assert "path = rpy2" in out or "path = pymer4" in out or "FALLBACK" in out
    assert "SIMULATION" in out and "planted inside CI" in out
    assert images(nb) >= 5
    tables = fx["run"] / "tables"
    for name in ("cells", "overall", "table_ii", "sensitivity", "mixed_model", "kendall_w",
                 "published_vs_reproduced_04", "simulation"):
        assert (tables / f"analysis_{name}.csv").exists(), name
    import pandas as pd
    sens = pd.read_csv(tables / "analysis_sensitivity.csv")
    ex = sens[sens["subset"].str.startswith("fully executable")]
    assert (ex["DSLs"] == 6).all()  # the fixture cards flag 6 of the 8 DSLs


def test_notebook_05_full_statistics(fx, tmp_path):
    nb = execute("05_factors_profiler.ipynb", tmp_path / "05.ipynb", run_dir=str(fx["run"]),
                 tasks_dir=str(fx["tasks"]), toolchains_dir=str(fx["toolchains"]),
                 release_years=str(fx["release_years"]), **SMALL)
    out = text(nb)
    assert "Knowledge Demand" in out and "Bonferroni" in out
    assert "DSL-Profiler: cypher (example)" in out and "(exit 0)" in out
    assert "profiler MAE" in out
    assert images(nb) >= 4


def test_notebooks_say_what_one_model_cannot_estimate(fx, tmp_path):
    nb4 = execute("04_anova_mixed_model.ipynb", tmp_path / "04.ipynb", run_dir=str(fx["run"]), models=["model-a"],
                  dsls=["fx-chem", "fx-hdl"], n_sim=0, simulate_check=False, **SMALL)
    out = text(nb4)
    assert "Not estimable on this run" in out and "Kendall's W is not estimable" in out
    assert "a variance ratio needs at least 2 DSLs and 2 models" in out
    nb5 = execute("05_factors_profiler.ipynb", tmp_path / "05.ipynb", run_dir=str(fx["run"]), models=["model-a"],
                  dsls=["fx-chem", "fx-hdl"], tasks_dir=str(fx["tasks"]), toolchains_dir=str(fx["toolchains"]),
                  release_years=str(fx["release_years"]), **SMALL)
    out = text(nb5)
    assert "need at least 3 DSLs" in out and "need at least 2 models" in out


def test_notebooks_run_on_an_empty_run(tmp_path):
    run = tmp_path / "empty"
    run.mkdir()
    nb4 = execute("04_anova_mixed_model.ipynb", tmp_path / "04.ipynb", run_dir=str(run), simulate_check=False, **SMALL)
    assert "No verdicts for method" in text(nb4)
    execute("05_factors_profiler.ipynb", tmp_path / "05.ipynb", run_dir=str(run), **SMALL)
