"""DSL-level factors computed from our own corpora and metadata, and their association with pass
rates (the paper's Section V-A and Table III).

Corpus of a DSL = its task files (data/tasks/<dsl>/*.yaml: instruction texts, gold programs, context
files) + its toolchain folder (toolchains/<dsl>/) + the run's verdicts. Raw components (each stored
with its provenance by `components()`):

Knowledge Demand (KD) — how much domain vocabulary and local API a correct program needs
  kd_domain_term_density  share of word tokens (letters only, >= 3 chars, lower-cased; identifiers
                          split at '_' and camelCase) in instructions + gold programs that are *domain
                          terms*: not in the general vocabulary G. G = words of the Python standard
                          library's docstrings (a fixed list of modules; general technical English,
                          PSF licence) + words of the reference notation samples (data/factors/reference).
  kd_symbol_surface       Guiraud's index of the gold programs' identifiers: distinct / sqrt(total)
                          (the local API/symbol surface, made comparable across corpus sizes).
  kd_term_breadth         share of tasks whose instruction + gold needs >= 3 distinct domain terms.
  KD = mean of the z-scored components.

Syntax Familiarity (SF) — surface similarity of the DSL's gold programs to common notations
  sf_char3_cosine         max over references (Python, JSON, SQL, XML, C-like) of the cosine between
                          character 3-gram count vectors (whitespace runs collapsed to one space).
  sf_token_cosine         max over references of the cosine between lexical token distributions
                          (identifiers/keywords lower-cased, numbers -> <num>, strings -> <str>,
                          punctuation and operators kept).
  SF = mean of the z-scored components. The per-reference similarities are stored too.

Harness Complexity (HC) — executable scaffolding and environment burden
  hc_runtime_dependencies log1p(pip requirements + Debian packages + npm dependencies of the DSL's
                          toolchain folder, + 1 for a per-DSL install.sh hook)
  hc_toolchain_steps      log1p(sandboxed toolchain invocations written in validator.py: `self.run(`)
  hc_context_files        log1p(mean auxiliary/context files per task)
  hc_validation_seconds   log10(median syntax + semantic wall time of the run's evaluated records)
  HC = mean of the z-scored components available for the DSL (a DSL missing from the run has no
  measured time; the mean then uses the other three and `components` says so).

Release Year (RY) — the release year of the evaluated language version, from
  data/factors/release_year.yaml (a source per entry).

z-scores use the mean and SD over the benchmark DSLs of the analysis (`factor_scores(..., reference=)`
standardizes a new DSL against them); a component constant over the DSLs gets z = 0.

Toolchain documentation shipped in installed packages is uneven (iverilog ships man pages, PyPI jq
none), so it is deliberately *not* in any formula: it would measure packaging, not the language.
"""
from __future__ import annotations

import functools
import inspect
import importlib
import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from ..paths import toolchains_dir as _toolchains_dir
from .meta import factors_dir, load_task_meta, read_dsl_table

FACTORS = ("KD", "SF", "HC", "RY")
FACTOR_NAMES = {"KD": "Knowledge Demand", "SF": "Syntax Familiarity", "HC": "Harness Complexity",
                "RY": "Release Year"}
COMPONENTS = {
    "KD": ["kd_domain_term_density", "kd_symbol_surface", "kd_term_breadth"],
    "SF": ["sf_char3_cosine", "sf_token_cosine"],
    "HC": ["hc_runtime_dependencies", "hc_toolchain_steps", "hc_context_files", "hc_validation_seconds"],
    "RY": ["ry_release_year"],
}
GENERAL_MODULES = ["builtins", "collections", "itertools", "functools", "os", "os.path", "re", "json", "string",
                   "textwrap", "datetime", "math", "statistics", "random", "pathlib", "subprocess", "argparse",
                   "logging", "csv", "sqlite3", "xml.etree.ElementTree", "http.client", "urllib.parse", "unittest",
                   "typing", "dataclasses", "enum", "shutil", "tempfile", "io", "email.message", "calendar",
                   "decimal", "fractions", "heapq", "bisect", "threading", "socket", "zipfile", "html.parser"]

_WORD = re.compile(r"[A-Za-z][A-Za-z]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*'
                    r'|<=|>=|==|!=|:=|=>|->|<-|\|\||&&|</|/>|::|\+\+|--|\S')


# --- text helpers -------------------------------------------------------------------------------------

def split_words(text: str) -> list[str]:
    """Letters-only word tokens (>= 3 chars), lower-cased; identifiers split at '_' and camelCase."""
    out = []
    for w in _WORD.findall(text.replace("_", " ")):
        for part in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", w):
            if len(part) >= 3:
                out.append(part.lower())
    return out


def lex_tokens(code: str) -> list[str]:
    out = []
    for t in _TOKEN.findall(code):
        if t[0] in "\"'":
            out.append("<str>")
        elif t[0].isdigit():
            out.append("<num>")
        elif t[0].isalpha() or t[0] == "_":
            out.append(t.lower())
        else:
            out.append(t)
    return out


def char_ngrams(text: str, n: int = 3) -> Counter:
    s = re.sub(r"\s+", " ", text)
    return Counter(s[i:i + n] for i in range(max(len(s) - n + 1, 0)))


def cosine(a: Counter, b: Counter) -> float:
    if not a or not b:
        return float("nan")
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else float("nan")


@functools.lru_cache(maxsize=1)
def reference_samples() -> dict[str, str]:
    ref = factors_dir() / "reference"
    names = {"python": "python.py", "json": "json.json", "sql": "sql.sql", "xml": "xml.xml", "c": "c.c"}
    return {k: (ref / f).read_text(encoding="utf-8") for k, f in names.items() if (ref / f).exists()}


@functools.lru_cache(maxsize=1)
def general_vocabulary() -> frozenset:
    """G: words of stdlib docstrings (fixed module list) + words of the reference samples."""
    import warnings
    words: set[str] = set()
    with warnings.catch_warnings():  # typing.io / typing.re deprecation notes while reading docstrings
        warnings.simplefilter("ignore")
        _stdlib_words(words)
    for text in reference_samples().values():
        words.update(split_words(text))
    return frozenset(words)


def _stdlib_words(words: set) -> None:
    for name in GENERAL_MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception:
            continue
        docs = [inspect.getdoc(mod) or ""]
        for attr in dir(mod):
            if attr.startswith("_"):
                continue
            try:
                docs.append(inspect.getdoc(getattr(mod, attr)) or "")
            except Exception:
                pass
        for d in docs:
            words.update(split_words(d))


# --- raw components ----------------------------------------------------------------------------------

def knowledge_components(texts: list[str], programs: list[str]) -> dict:
    G = general_vocabulary()
    tokens = [w for t in texts + programs for w in split_words(t)]
    domain = [w for w in tokens if w not in G]
    idents = [i for p in programs for i in _IDENT.findall(p)]
    per_task = [len({w for w in split_words(t + "\n" + p) if w not in G}) for t, p in zip(texts, programs)] \
        if len(texts) == len(programs) else [len({w for w in split_words(p) if w not in G}) for p in programs]
    top = Counter(domain).most_common(8)
    return {"kd_domain_term_density": len(domain) / len(tokens) if tokens else np.nan,
            "kd_symbol_surface": len(set(idents)) / math.sqrt(len(idents)) if idents else np.nan,
            "kd_term_breadth": float(np.mean([n >= 3 for n in per_task])) if per_task else np.nan,
            "kd_word_tokens": len(tokens), "kd_identifiers": len(idents),
            "kd_top_domain_terms": ", ".join(w for w, _ in top)}


def familiarity_components(programs: list[str]) -> dict:
    code = "\n".join(programs)
    out = {}
    if not code.strip():
        return {"sf_char3_cosine": np.nan, "sf_token_cosine": np.nan, "sf_closest": ""}
    c3, tk = char_ngrams(code), Counter(lex_tokens(code))
    best_c, best_t, closest = -1.0, -1.0, ""
    for name, ref in reference_samples().items():
        sc, st = cosine(c3, char_ngrams(ref)), cosine(tk, Counter(lex_tokens(ref)))
        out[f"sf_char3_{name}"], out[f"sf_token_{name}"] = sc, st
        if sc > best_c:
            best_c, closest = sc, name
        best_t = max(best_t, st)
    out.update({"sf_char3_cosine": best_c, "sf_token_cosine": best_t, "sf_closest": closest})
    return out


def harness_components(dsl: str, tasks: pd.DataFrame, verdicts: pd.DataFrame | None, toolchains_root=None) -> dict:
    folder = Path(toolchains_root or _toolchains_dir()) / dsl
    out = {"hc_folder": str(folder) if folder.exists() else ""}
    deps = 0
    found_any = folder.exists()
    for fname in ("requirements.txt", "apt.txt"):
        p = folder / fname
        if p.exists():
            deps += sum(1 for line in p.read_text(encoding="utf-8").splitlines()
                        if line.split("#")[0].strip())
    pkg = folder / "package.json"
    if pkg.exists():
        try:
            deps += len(json.loads(pkg.read_text(encoding="utf-8")).get("dependencies", {}))
        except Exception:
            pass
    if (folder / "install.sh").exists():
        deps += 1
    out["hc_runtime_dependencies_raw"] = deps if found_any else np.nan
    out["hc_runtime_dependencies"] = math.log1p(deps) if found_any else np.nan
    v = folder / "validator.py"
    steps = len(re.findall(r"\bself\.run\(", v.read_text(encoding="utf-8"))) if v.exists() else np.nan
    out["hc_toolchain_steps_raw"] = steps
    out["hc_toolchain_steps"] = math.log1p(steps) if v.exists() else np.nan
    if len(tasks):
        ctx = float(np.mean([len(c) if isinstance(c, dict) else 0 for c in tasks["context"]]))
        out["hc_context_files_raw"], out["hc_context_files"] = ctx, math.log1p(ctx)
    else:
        out["hc_context_files_raw"] = out["hc_context_files"] = np.nan
    secs = np.nan
    if verdicts is not None and len(verdicts):
        from .cells import classify
        v_d = verdicts[verdicts["dsl"] == dsl]
        v_d = v_d[classify(v_d) == "evaluated"] if len(v_d) else v_d
        if len(v_d):
            t = (pd.to_numeric(v_d["syntax_duration_s"], errors="coerce").fillna(0)
                 + pd.to_numeric(v_d["semantic_duration_s"], errors="coerce").fillna(0))
            med = float(t.median())
            secs = med if med > 0 else np.nan
    out["hc_validation_seconds_raw"] = secs
    out["hc_validation_seconds"] = math.log10(secs) if secs == secs and secs > 0 else np.nan
    return out


def release_years(path=None, toolchains_root=None) -> dict[str, dict]:
    """{dsl or alias: entry} from the release-year table, which must have an entry for every DSL folder
    (of `toolchains_root`, default this checkout's) and no other keys; a gap would be a silent NaN."""
    p = Path(path) if path else factors_dir() / "release_year.yaml"
    if not path and not p.exists():
        return {}
    return read_dsl_table(p, toolchains_root, cover_all=True)


def components(dsls, verdicts: pd.DataFrame | None = None, tasks_root=None, toolchains_root=None,
               release_years_path=None) -> pd.DataFrame:
    """Raw factor components of each DSL with provenance columns (one row per DSL)."""
    meta = load_task_meta(list(dsls), tasks_root)
    # a table given with the run's toolchain folders describes those; the default one, this checkout's
    years = release_years(release_years_path, toolchains_root if release_years_path else None)
    rows = []
    for dsl in dsls:
        t = meta[meta["dsl"] == dsl]
        texts = list(t["instruction"])
        programs = list(t["gold"])
        row = {"dsl": dsl, "tasks_in_corpus": len(t)}
        row.update(knowledge_components(texts, programs) if len(t) else
                   {c: np.nan for c in COMPONENTS["KD"]})
        row.update(familiarity_components(programs))
        row.update(harness_components(dsl, t, verdicts, toolchains_root))
        y = years.get(dsl)
        row["ry_release_year"] = float(y["year"]) if y else np.nan
        row["ry_version"] = y.get("version", "") if y else ""
        row["ry_source"] = y.get("source", "") if y else "missing from release_year.yaml"
        row["provenance"] = (f"tasks: {tasks_root or 'data/tasks'}/{dsl} ({len(t)} files); toolchain folder: "
                             f"{row['hc_folder'] or 'missing'}; validation time: "
                             f"{'run verdicts' if row.get('hc_validation_seconds') == row.get('hc_validation_seconds') else 'not in run'}")
        rows.append(row)
    return pd.DataFrame(rows)


def program_folder_components(folder, release_year: float | None = None, meta: dict | None = None) -> dict:
    """Raw components of a new DSL from a folder of example programs (for the profiler CLI).

    Programs: every file that is not *.md, *.txt, *.yaml/*.yml (those are documentation/metadata).
    Texts: *.md and *.txt files (task descriptions, docs) for the domain-term density.
    `meta` (e.g. from the folder's profile.yaml) may give runtime_dependencies, toolchain_steps,
    context_files, validation_seconds, release_year; what it does not give stays NaN.
    """
    folder = Path(folder)
    meta = dict(meta or {})
    py = folder / "profile.yaml"
    if py.exists():
        meta = {**(yaml.safe_load(py.read_text(encoding="utf-8")) or {}), **meta}
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    programs = [p.read_text(encoding="utf-8", errors="replace") for p in files
                if p.suffix.lower() not in (".md", ".txt", ".yaml", ".yml")]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files if p.suffix.lower() in (".md", ".txt")]
    if not programs:
        raise ValueError(f"{folder}: no example programs (files other than .md/.txt/.yaml)")
    row = {"dsl": meta.get("name", folder.name), "tasks_in_corpus": len(programs)}
    kd = knowledge_components(texts, programs) if texts else knowledge_components([""] * len(programs), programs)
    row.update(kd)
    row.update(familiarity_components(programs))
    f = lambda k, fn: fn(float(meta[k])) if meta.get(k) is not None else np.nan
    row["hc_runtime_dependencies"] = f("runtime_dependencies", math.log1p)
    row["hc_toolchain_steps"] = f("toolchain_steps", math.log1p)
    row["hc_context_files"] = f("context_files", math.log1p)
    row["hc_validation_seconds"] = f("validation_seconds", lambda s: math.log10(s) if s > 0 else np.nan)
    ry = release_year if release_year is not None else meta.get("release_year")
    row["ry_release_year"] = float(ry) if ry is not None else np.nan
    row["provenance"] = f"example programs in {folder} ({len(programs)} files, {len(texts)} text files)"
    return row


# --- standardization -------------------------------------------------------------------------------

def _z(col: pd.Series, ref: pd.Series) -> pd.Series:
    if ref.notna().sum() < 2:  # no benchmark spread to standardize against: unknown, not average
        return pd.Series(np.nan, index=col.index)
    mu, sd = ref.mean(), ref.std(ddof=1)
    if not np.isfinite(sd) or sd == 0:
        return pd.Series(np.where(col.notna(), 0.0, np.nan), index=col.index)
    return (col - mu) / sd


def factor_scores(comp: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Factor scores (z over the reference DSLs) from raw components: z each component against the
    reference, average within a factor (available components), z the factor against the reference."""
    ref = comp if reference is None else reference
    out = pd.DataFrame({"dsl": comp["dsl"].to_numpy()})
    for f, cols in COMPONENTS.items():
        zc = pd.concat([_z(comp[c].astype(float), ref[c].astype(float)) for c in cols], axis=1)
        zr = pd.concat([_z(ref[c].astype(float), ref[c].astype(float)) for c in cols], axis=1)
        raw, raw_ref = zc.mean(axis=1, skipna=True), zr.mean(axis=1, skipna=True)
        out[f] = _z(raw, raw_ref).to_numpy()
    return out


# --- association with pass rates (Table III) ---------------------------------------------------------

def _partial_r(y: np.ndarray, x: np.ndarray, Z: np.ndarray) -> float:
    if Z.shape[1] == 0:
        return float(np.corrcoef(x, y)[0, 1])
    A = np.column_stack([np.ones(len(y)), Z])
    if len(y) - A.shape[1] < 2:
        return float("nan")
    rx = x - A @ np.linalg.lstsq(A, x, rcond=None)[0]
    ry = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def associations(scores: pd.DataFrame, dsl_rates: pd.DataFrame, n_boot: int = 2000, n_perm: int = 2000,
                 seed: int = 0, metrics=("semantic_pct", "syntax_pct")) -> pd.DataFrame:
    """Per factor x metric: slope (pp per SD), Pearson r and p, Spearman rho and p, bootstrap 95% CI of r
    (resampling DSLs), permutation p of r (two-sided, shuffling the factor), leave-one-DSL-out range of r,
    partial r controlling for the other factors, and Bonferroni-adjusted p (factors x metrics tests)."""
    df = scores.merge(dsl_rates[["dsl", *metrics]], on="dsl")
    factors = [f for f in FACTORS if f in df and df[f].notna().sum() >= 3 and df[f].std() > 0]
    rows = []
    n_tests = max(len(factors) * len(metrics), 1)
    rng = np.random.default_rng(seed)
    for metric in metrics:
        for f in FACTORS:
            d = df[["dsl", f, metric]].dropna()
            n = len(d)
            row = {"factor": FACTOR_NAMES[f], "key": f, "metric": metric.replace("_pct", ""), "n_dsls": n}
            if f not in factors or n < 3 or d[metric].std() == 0:
                row["note"] = "not estimable (fewer than 3 DSLs with this factor, or no variation)"
                rows.append(row)
                continue
            x, y = d[f].to_numpy(float), d[metric].to_numpy(float)
            lr = stats.linregress(x, y)
            pr = stats.pearsonr(x, y)
            sr = stats.spearmanr(x, y)
            idx = rng.integers(0, n, size=(n_boot, n))
            xb, yb = x[idx], y[idx]
            xm, ym = xb - xb.mean(1, keepdims=True), yb - yb.mean(1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                rb = (xm * ym).sum(1) / np.sqrt((xm ** 2).sum(1) * (ym ** 2).sum(1))
            rb = rb[np.isfinite(rb)]
            perm = np.argsort(rng.random((n_perm, n)), axis=1)
            xp = x[perm]
            xpm = xp - xp.mean(1, keepdims=True)
            rp = (xpm * (y - y.mean())).sum(1) / np.sqrt((xpm ** 2).sum(1) * ((y - y.mean()) ** 2).sum())
            loo = [stats.pearsonr(np.delete(x, i), np.delete(y, i))[0] for i in range(n)] if n >= 4 else []
            others = [g for g in factors if g != f]
            dd = df[["dsl", f, metric, *others]].dropna()
            part = _partial_r(dd[metric].to_numpy(float), dd[f].to_numpy(float), dd[others].to_numpy(float)) \
                if len(dd) >= 3 else np.nan
            p_perm = float((1 + np.sum(np.abs(rp) >= abs(pr.statistic) - 1e-12)) / (1 + n_perm))
            row.update({"slope_pp_per_sd": lr.slope, "intercept": lr.intercept, "pearson_r": pr.statistic,
                        "pearson_p": pr.pvalue, "spearman_rho": sr.statistic, "spearman_p": sr.pvalue,
                        "r_ci_low": np.percentile(rb, 2.5) if len(rb) >= 10 else np.nan,
                        "r_ci_high": np.percentile(rb, 97.5) if len(rb) >= 10 else np.nan,
                        "perm_p": p_perm, "loo_r_min": min(loo) if loo else np.nan,
                        "loo_r_max": max(loo) if loo else np.nan,
                        "loo_sign_stable": (all(np.sign(r) == np.sign(pr.statistic) for r in loo) if loo else None),
                        "partial_r": part, "partial_controls": ", ".join(others),
                        "bonferroni_p": min(1.0, p_perm * n_tests), "bonferroni_tests": n_tests,
                        "note": ""})
            rows.append(row)
    return pd.DataFrame(rows)


def table_iii(assoc: pd.DataFrame, metric: str = "semantic") -> pd.DataFrame:
    """Table III as the paper prints it: factor, slope, Pearson r, p (permutation), interpretation."""
    a = assoc[assoc["metric"] == metric]
    rows = []
    for r in a.itertuples():
        if not np.isfinite(getattr(r, "pearson_r", np.nan)):
            rows.append({"Factor": r.factor, "Slope": np.nan, "r": np.nan, "p": np.nan,
                         "Interpretation": "not estimable on this run"})
            continue
        strength = abs(r.pearson_r)
        word = "strong" if strength >= 0.5 else "moderate" if strength >= 0.3 else "weak"
        sign = "negative" if r.pearson_r < 0 else "positive"
        sig = ("significant after Bonferroni" if r.bonferroni_p < 0.05 else
               "p < .05 uncorrected only" if r.perm_p < 0.05 else "not significant")
        rows.append({"Factor": r.factor, "Slope": round(r.slope_pp_per_sd, 2), "r": round(r.pearson_r, 3),
                     "p": round(r.perm_p, 3),
                     "Interpretation": f"{word} {sign} association; {sig}; "
                                       f"LOO r in [{r.loo_r_min:.2f}, {r.loo_r_max:.2f}]"})
    return pd.DataFrame(rows)
