"""Binomial mixed model over DSL-model pass counts with crossed random intercepts (the paper's
sensitivity model for Table II):

    pass_dm ~ Binomial(evaluated_dm, p_dm),   logit p_dm = mu + a_d + b_m,
    a_d ~ N(0, s2_dsl),  b_m ~ N(0, s2_model)

and the ratio s2_dsl / s2_model (the paper reports 15.03 for semantic pass counts).

Paths, tried in this order with `path="auto"` (each records why it was skipped):

  1. pymer4   `pymer4.models.Lmer` (lme4 through rpy2) where it imports and fits; pymer4 0.8.2
              needs pandas<3, so with this compendium's pandas 3 it normally does not.
  2. rpy2     `lme4::glmer(cbind(pass, fail) ~ 1 + (1|dsl) + (1|model), family = binomial)` through
              rpy2 (R from Debian: r-base-core, r-cran-lme4). Laplace approximation, bobyqa.
  3. statsmodels  `BinomialBayesMixedGLM` (variational Bayes) on task-level 0/1 rows. Used only when
              R/lme4 is missing, and labelled: mean-field VB understates posterior uncertainty, so its
              interval is too narrow.

Interval for the variance ratio: lme4 paths use a seeded parametric bootstrap (`lme4::bootMer`,
`use.u = FALSE`: new DSL and model effects are drawn from the fitted variances each time, the honest
choice when DSLs and models are samples), percentile 95% interval; when a refit puts the model
variance at 0 the ratio is infinite, which the percentile interval keeps (reported as inf).
The statsmodels path gives a normal interval on log(ratio) from the VB posterior.
"""
from __future__ import annotations

import contextlib
import os
import time

import numpy as np
import pandas as pd

PATHS = ("pymer4", "rpy2", "statsmodels")

_R_FIT = r"""
function(d, nsim, seed) {
  suppressPackageStartupMessages(library(lme4))
  d$dsl <- factor(d$dsl); d$model <- factor(d$model)
  ctrl <- glmerControl(optimizer = "bobyqa", calc.derivs = FALSE)
  msgs <- character(0)
  t0 <- proc.time()[["elapsed"]]
  fit <- withCallingHandlers(
    glmer(cbind(pass, fail) ~ 1 + (1 | dsl) + (1 | model), data = d, family = binomial, control = ctrl),
    warning = function(w) { msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleWarning") },
    message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") })
  fit_s <- proc.time()[["elapsed"]] - t0
  vc <- as.data.frame(VarCorr(fit))
  vfun <- function(f) { v <- as.data.frame(VarCorr(f)); c(v$vcov[v$grp == "dsl"], v$vcov[v$grp == "model"]) }
  t1 <- proc.time()[["elapsed"]]
  boot <- matrix(numeric(0), ncol = 2)
  if (nsim > 0) {
    b <- suppressWarnings(suppressMessages(bootMer(fit, vfun, nsim = nsim, seed = seed, use.u = FALSE,
                                                   type = "parametric")))
    boot <- b$t
  }
  boot_s <- proc.time()[["elapsed"]] - t1
  list(var_dsl = vc$vcov[vc$grp == "dsl"], var_model = vc$vcov[vc$grp == "model"],
       intercept = unname(fixef(fit)[1]), singular = isSingular(fit), loglik = as.numeric(logLik(fit)),
       messages = msgs, boot = boot, fit_s = fit_s, boot_s = boot_s,
       lme4 = as.character(packageVersion("lme4")), r = R.version.string)
}
"""


def _counts(cells: pd.DataFrame, level: str) -> pd.DataFrame:
    c = cells[cells["evaluated"] > 0]
    return pd.DataFrame({"dsl": c["dsl"].astype(str).to_numpy(), "model": c["model"].astype(str).to_numpy(),
                         "pass": c[f"{level}_pass"].astype(int).to_numpy(),
                         "fail": (c["evaluated"] - c[f"{level}_pass"]).astype(int).to_numpy()})


def _ratio_interval(boot: np.ndarray) -> tuple[float, float, int]:
    """Percentile 95% interval of var_dsl / var_model over bootstrap rows; order statistics, so an
    infinite ratio (model variance 0 in a refit) is kept rather than averaged away."""
    boot = np.asarray(boot, dtype=float).reshape(-1, 2)
    ok = np.isfinite(boot).all(axis=1)
    b = boot[ok]
    if len(b) < 10:
        return np.nan, np.nan, len(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(b[:, 1] > 0, b[:, 0] / np.where(b[:, 1] > 0, b[:, 1], 1), np.inf)
    r = np.where((b[:, 0] == 0) & (b[:, 1] == 0), np.nan, r)
    r = r[~np.isnan(r)]
    if len(r) < 10:
        return np.nan, np.nan, len(r)
    lo, hi = np.quantile(r, [0.025, 0.975], method="inverted_cdf")
    return float(lo), float(hi), len(r)


_R_ENV_KEYS = ("LD_LIBRARY_PATH", "R_HOME")


@contextlib.contextmanager
def _quiet_r():
    """Keep R's console chatter out of notebooks, and undo the environment rpy2 sets.

    rpy2 puts R's library folders first on LD_LIBRARY_PATH in os.environ; every subprocess started
    later from this process (toolchains, kernels, other Pythons) would then load Debian's system
    libraries in place of its own and can crash. R is already loaded in-process, so restore it.
    """
    saved_env = {k: os.environ.get(k) for k in _R_ENV_KEYS}
    try:
        with _quiet_r_console():
            yield
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _quiet_r_console():
    """Keep R's console chatter out of notebooks (messages are collected by the R code itself)."""
    try:
        from rpy2.rinterface_lib import callbacks
    except Exception:
        yield
        return
    saved = callbacks.consolewrite_warnerror, callbacks.consolewrite_print
    callbacks.consolewrite_warnerror = lambda s: None
    callbacks.consolewrite_print = lambda s: None
    try:
        yield
    finally:
        callbacks.consolewrite_warnerror, callbacks.consolewrite_print = saved


def _fit_rpy2(d: pd.DataFrame, n_sim: int, seed: int) -> dict:
    with _quiet_r():
        import rpy2.robjects as ro
        from rpy2.robjects import pandas2ri
        from rpy2.robjects.conversion import localconverter
        from rpy2.robjects.packages import importr
        importr("lme4")
        fn = ro.r(_R_FIT)
        with localconverter(ro.default_converter + pandas2ri.converter):
            rdf = ro.conversion.get_conversion().py2rpy(d)
        t0 = time.perf_counter()
        res = fn(rdf, int(n_sim), int(seed))
        wall = time.perf_counter() - t0
    get = lambda k: res.rx2(k)
    boot = np.array(get("boot"), dtype=float)  # rpy2 gives the nsim x 2 matrix in R's shape
    boot = boot.reshape(-1, 2) if boot.size else np.zeros((0, 2))
    return {"var_dsl": float(get("var_dsl")[0]), "var_model": float(get("var_model")[0]),
            "intercept": float(get("intercept")[0]), "singular": bool(get("singular")[0]),
            "loglik": float(get("loglik")[0]), "messages": [str(m) for m in get("messages")],
            "boot": boot, "fit_seconds": float(get("fit_s")[0]), "interval_seconds": float(get("boot_s")[0]),
            "wall_seconds": wall, "versions": f"{get('r')[0]}; lme4 {get('lme4')[0]}; rpy2 {_version('rpy2')}",
            "interval": f"parametric bootstrap (lme4::bootMer, use.u=FALSE, nsim={n_sim}, seed={seed})"}


def _version(mod: str) -> str:
    try:
        from importlib.metadata import version
        return version(mod)
    except Exception:
        return "?"


def _fit_pymer4(d: pd.DataFrame, n_sim: int, seed: int) -> dict:
    from pymer4.models import Lmer  # noqa: F401  (import is the test: 0.8.2 needs pandas<3)
    rows = d.loc[d.index.repeat(d["pass"] + d["fail"])].copy()
    rows["y"] = np.concatenate([np.r_[np.ones(p), np.zeros(f)] for p, f in zip(d["pass"], d["fail"])])
    t0 = time.perf_counter()
    model = Lmer("y ~ 1 + (1|dsl) + (1|model)", data=rows[["y", "dsl", "model"]], family="binomial")
    model.fit(summarize=False, verbose=False)
    fit_s = time.perf_counter() - t0
    rv = model.ranef_var
    var = rv["Var"] if "Var" in rv else rv.iloc[:, 1]
    out = {"var_dsl": float(var.loc["dsl"]), "var_model": float(var.loc["model"]),
           "intercept": float(model.coefs.iloc[0, 0]), "singular": None, "loglik": float(model.logLike),
           "messages": list(getattr(model, "warnings", []) or []), "fit_seconds": fit_s,
           "versions": f"pymer4 {_version('pymer4')}"}
    # Interval: the same parametric bootstrap as the rpy2 path (pymer4 itself runs on rpy2 + lme4).
    r = _fit_rpy2(d, n_sim, seed) if n_sim else {"boot": np.zeros((0, 2)), "interval_seconds": 0.0, "interval": ""}
    out.update(boot=r["boot"], interval_seconds=r["interval_seconds"], interval=r["interval"] + " via rpy2")
    return out


def _fit_statsmodels(d: pd.DataFrame, n_sim: int, seed: int) -> dict:
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM
    reps = (d["pass"] + d["fail"]).to_numpy()
    rows = d.loc[d.index.repeat(reps), ["dsl", "model"]].reset_index(drop=True)
    rows["y"] = np.concatenate([np.r_[np.ones(p), np.zeros(f)] for p, f in zip(d["pass"], d["fail"])])
    t0 = time.perf_counter()
    model = BinomialBayesMixedGLM.from_formula("y ~ 1", {"dsl": "0 + C(dsl)", "model": "0 + C(model)"}, rows)
    fit = model.fit_vb()
    fit_s = time.perf_counter() - t0
    names = list(model.vcp_names)
    ld, lm = fit.vcp_mean[names.index("dsl")], fit.vcp_mean[names.index("model")]  # log SDs
    sd_d, sd_m = fit.vcp_sd[names.index("dsl")], fit.vcp_sd[names.index("model")]
    log_ratio, se = 2 * (ld - lm), 2 * np.sqrt(sd_d ** 2 + sd_m ** 2)
    return {"var_dsl": float(np.exp(2 * ld)), "var_model": float(np.exp(2 * lm)), "intercept": float(fit.fe_mean[0]),
            "singular": None, "loglik": np.nan, "messages": [], "fit_seconds": fit_s, "interval_seconds": 0.0,
            "boot": None, "ci": (float(np.exp(log_ratio - 1.96 * se)), float(np.exp(log_ratio + 1.96 * se))),
            "versions": f"statsmodels {_version('statsmodels')}",
            "interval": "normal interval on log ratio from the VB posterior (understates uncertainty)"}


def r_available() -> tuple[bool, str]:
    try:
        with _quiet_r():
            from rpy2.robjects.packages import importr
            importr("lme4")
        return True, ""
    except Exception as e:
        return False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def fit(cells: pd.DataFrame, level: str = "semantic", path: str = "auto", n_sim: int = 200, seed: int = 0) -> dict:
    """Fit the crossed binomial GLMM on a cell table and return variances, ratio, interval and provenance.

    Keys: level, path (which ran), label, tried [(path, reason skipped)], var_dsl, var_model, ratio,
    ratio_ci_low/high, fit_seconds, interval_seconds, n_cells, dsls, models, singular, messages,
    interval (how it was computed), versions, estimable (False with a reason when < 2 DSLs or models).
    """
    d = _counts(cells, level)
    D, M = d["dsl"].nunique(), d["model"].nunique()
    out = {"level": level, "path": None, "label": "", "tried": [], "n_cells": len(d), "dsls": D, "models": M,
           "var_dsl": np.nan, "var_model": np.nan, "ratio": np.nan, "ratio_ci_low": np.nan, "ratio_ci_high": np.nan,
           "fit_seconds": np.nan, "interval_seconds": np.nan, "singular": None, "messages": [], "interval": "",
           "versions": "", "estimable": D >= 2 and M >= 2, "reason": ""}
    if not out["estimable"]:
        out["reason"] = (f"{D} DSL(s) x {M} model(s): a variance ratio needs at least 2 DSLs and 2 models "
                         "(one model has no model variance to compare with)")
        return out
    order = PATHS if path == "auto" else (path,)
    fitters = {"pymer4": _fit_pymer4, "rpy2": _fit_rpy2, "statsmodels": _fit_statsmodels}
    for p in order:
        if p == "statsmodels" and path == "auto":
            ok, why = r_available()
            if ok:  # R is there but both lme4 paths failed: do not silently downgrade to VB
                out["tried"].append((p, "not used: R/lme4 is available, the lme4 paths failed (see above)"))
                break
        try:
            r = fitters[p](d, n_sim, seed)
        except Exception as e:
            msg = str(e).strip().splitlines()
            out["tried"].append((p, f"{type(e).__name__}: {msg[0][:300] if msg else ''}"))
            continue
        out.update({k: v for k, v in r.items() if k not in ("boot", "ci")})
        out["path"] = p
        out["label"] = {"pymer4": "lme4::glmer via pymer4", "rpy2": "lme4::glmer via rpy2",
                        "statsmodels": "FALLBACK (no R): statsmodels BinomialBayesMixedGLM, variational Bayes — "
                                       "understates uncertainty"}[p]
        vd, vm = out["var_dsl"], out["var_model"]
        out["ratio"] = vd / vm if vm > 0 else (np.inf if vd > 0 else np.nan)
        if r.get("ci") is not None:
            out["ratio_ci_low"], out["ratio_ci_high"] = r["ci"]
        elif r.get("boot") is not None and len(r["boot"]):
            lo, hi, nvalid = _ratio_interval(r["boot"])
            out["ratio_ci_low"], out["ratio_ci_high"], out["valid_resamples"] = lo, hi, nvalid
        break
    if out["path"] is None:
        out["reason"] = "no mixed-model path could fit: " + "; ".join(f"{p}: {w}" for p, w in out["tried"])
    return out


def summary_table(fits: list[dict]) -> pd.DataFrame:
    rows = []
    for f in fits:
        rows.append({"level": f["level"], "path": f["path"] or "none", "DSLs": f["dsls"], "models": f["models"],
                     "var DSL (logit)": f["var_dsl"], "var model (logit)": f["var_model"],
                     "ratio DSL/model": f["ratio"], "ratio 95% low": f["ratio_ci_low"],
                     "ratio 95% high": f["ratio_ci_high"], "fit s": f["fit_seconds"],
                     "interval s": f["interval_seconds"], "singular fit": f["singular"],
                     "note": f["label"] if f["path"] else f["reason"]})
    return pd.DataFrame(rows)
