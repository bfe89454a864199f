"""Speed of the analysis statistics on a paper-sized grid (18 DSLs x 7 models x 100 tasks, simulated).

    .venv/bin/python benchmarks/analysis_speed.py

Prints wall times (not asserted): the ANOVA bootstrap under each scheme, Kendall's W with its
permutation test, and the mixed model on every path that runs here (fit and parametric bootstrap).
"""
import time

from dslbench.analysis import anova, mixed, ranking, simulate


def clock(label, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"{label:<58} {time.perf_counter() - t0:8.2f} s")
    return out


def main():
    cells, _ = simulate.draw(18, 7, 100, 3.0, 0.2, seed=0)
    for scheme in anova.SCHEMES:
        clock(f"ANOVA decomposition + 2000 bootstrap resamples ({scheme})",
              lambda: anova.decompose(cells, "semantic_pct", 2000, 0, scheme))
    clock("Kendall's W + 2000 permutations", lambda: ranking.concordance(cells, "semantic_pct", 2000, 0))
    for path in mixed.PATHS:
        f = clock(f"mixed model, path {path}, fit only", lambda: mixed.fit(cells, "semantic", path, n_sim=0))
        if f["path"]:
            print(f"    ratio {f['ratio']:.2f}; fit {f['fit_seconds']:.2f} s inside the path; {f['versions']}")
            if path != "statsmodels":
                g = clock(f"mixed model, path {path}, fit + 200 parametric bootstrap refits",
                          lambda: mixed.fit(cells, "semantic", path, n_sim=200))
                print(f"    ratio 95% interval [{g['ratio_ci_low']:.2f}, {g['ratio_ci_high']:.2f}]; "
                      f"bootstrap {g['interval_seconds']:.1f} s")
        else:
            print(f"    not available here: {f['tried']}")
    clock("simulation (estimator check, 2000 boot, 100 refits)", lambda: simulate.run(n_boot=2000, n_sim=100))


if __name__ == "__main__":
    main()
