"""Interventions (issue #7): prompt engineering (PE) on every DSL; RAG and three refinement loops on the
deep-study DSLs; their statistics against the matched baseline.

Methods (the `method` of every record): baseline, pe, rag, baseline-refinement, retrieval-refinement,
rag-refinement, tests-refinement. A refinement method starts from the final output of `baseline` (or `rag` for
rag-refinement), copied as its round 0, and repairs it over up to k rounds with the validator's
diagnostics (plus retrieved context for retrieval-/rag-refinement); tests-refinement is baseline-refinement
whose feedback also shows the oracle's expected values (`feedback`'s `tests` mode). A loop stops at the first round
whose program passes both levels (or whose verdict is unavailable / an error: nothing to repair),
or after round k. Every round is one generation record and one verdict record (key + `round`), so
the viewer shows the whole chain. Generation goes through pipeline.run_generation, validation
through pipeline.run_validation (pipeline.evaluate in the sandbox).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .paths import repo_root
from . import metrics
from .metrics import final_verdicts, with_rounds  # noqa: F401 (final_verdicts: for the notebook)
from .pipeline import run_generation, run_validation
from .prompting import build_messages
from .store import KEY_FIELDS, RunStore, record_key

METHODS = ("baseline", "pe", "rag", "baseline-refinement", "retrieval-refinement", "rag-refinement", "tests-refinement")
REFINEMENT_START = {"baseline-refinement": "baseline", "retrieval-refinement": "baseline", "rag-refinement": "rag",
                    "tests-refinement": "baseline"}
# tests-refinement is baseline-refinement shown the oracle's expected values (test-driven repair); every
# other loop sees diagnostics only, so its scores are not helped by the hidden answers
FEEDBACK_MODE = {"tests-refinement": "tests"}
RAG_VERSION = "rag-v1"
REFINE_VERSION = "refine-v2"     # v2: expected values only in the `tests` feedback mode
FEEDBACK_MODES = ("diagnostics", "tests")
MAX_CHUNK_CHARS = 1200
MAX_DIAGNOSTIC_CHARS = 1500
PE_FIELDS = ("version", "instructions", "version_notes", "output_constraints", "examples")


# --- prompt engineering --------------------------------------------------------------------------

def prompts_dir() -> Path:
    return repo_root() / "data" / "prompts"


def load_pe(dsl: str) -> dict:
    """The DSL's versioned PE prompt file (data/prompts/<dsl>.yaml), checked."""
    path = prompts_dir() / f"{dsl}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"{path}: no prompt-engineering file for DSL {dsl!r}")
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    missing = [f for f in PE_FIELDS if not doc.get(f)]
    if missing:
        raise ValueError(f"{path}: missing or empty {missing}")
    for i, ex in enumerate(doc["examples"]):
        if not isinstance(ex, dict) or not str(ex.get("instruction", "")).strip() or not str(ex.get("program", "")).strip():
            raise ValueError(f"{path}: examples[{i}] needs a non-empty instruction and program")
    return doc


def pe_messages(task, toolchain, pe: dict) -> list[dict]:
    """The baseline prompt plus DSL instructions (system), few-shot demonstrations, version notes and
    output constraints (user)."""
    system, user = build_messages(task, toolchain)
    shots = []
    for ex in pe["examples"]:
        shots += [{"role": "user", "content": f"Task:\n{ex['instruction'].strip()}"},
                  {"role": "assistant", "content": f"```{toolchain.fence}\n{ex['program'].strip()}\n```"}]
    return [{"role": "system", "content": system["content"] + "\n\n" + pe["instructions"].strip()}, *shots,
            {"role": "user", "content": user["content"] + "\n\nTarget version:\n" + pe["version_notes"].strip()
             + "\n\nOutput constraints:\n" + pe["output_constraints"].strip()}]


# --- retrieval-augmented prompts ----------------------------------------------------------------

def context_block(chunks) -> str:
    parts = [f"[{i}] ({c.id})\n{c.text[:MAX_CHUNK_CHARS].strip()}" for i, c in enumerate(chunks, 1)]
    return "Reference material retrieved from local documentation (may be partly irrelevant):\n\n" + "\n\n".join(parts)


def retrieved_fields(chunks, retriever, top_k: int) -> dict:
    return {"retrieved": [{"rank": i, "id": c.id, "source": c.source, "licence": c.licence} for i, c in enumerate(chunks, 1)],
            "retrieval": {"mode": retriever.mode, "top_k": top_k, "corpus": retriever.corpus.digest}}


def rag_messages(task, toolchain, chunks) -> list[dict]:
    system, user = build_messages(task, toolchain)
    if not chunks:
        return [system, user]
    return [system, {"role": "user", "content": context_block(chunks) + "\n\n" + user["content"]}]


# --- refinement ----------------------------------------------------------------------------------

def is_final(verdict: dict, rounds: int) -> bool:
    """Stop repairing: full pass, nothing the model can repair (unavailable / error), or k rounds done."""
    # an errored or unjudged semantic level (e.g. gold_broken) is not the model's to repair, and its
    # diagnostics may carry the gold's own outputs
    return (verdict["semantic"]["status"] == "pass"
            or "unavailable" in (verdict["syntax"]["status"], verdict["semantic"]["status"])
            or "error" in (verdict["syntax"]["status"], verdict["semantic"]["status"])
            or int(verdict.get("round") or 0) >= rounds)


def feedback(verdict: dict, mode: str = "diagnostics") -> str:
    """What the model is told about its rejected program.

    `diagnostics` (the default): the toolchain's and the oracle's messages, which never carry the
    oracle's expected values; `tests`: the expected values as well, as in test-driven repair.
    """
    if mode not in FEEDBACK_MODES:
        raise ValueError(f"feedback mode {mode!r}: expected one of {', '.join(FEEDBACK_MODES)}")
    lines = ["The validator rejected your program."]
    for level in ("syntax", "semantic"):
        v = verdict[level]
        lines.append(f"{level} check: {v['status']}: {str(v.get('diagnostics') or '')[:MAX_DIAGNOSTIC_CHARS]}")
        if mode == "tests" and v.get("expected"):
            lines.append(f"{level} check expected: {str(v['expected'])[:MAX_DIAGNOSTIC_CHARS]}")
    return "\n".join(lines)


def repair_messages(start_messages: list[dict], previous_output: str, verdict: dict, fence: str, chunks=(),
                    mode: str = "diagnostics") -> list[dict]:
    """The start prompt, the previous answer, and the validator's feedback (+ retrieved context)."""
    parts = [feedback(verdict, mode)]
    if chunks:
        parts.append(context_block(chunks))
    parts.append(f"Fix the program. Answer with the complete corrected program in one ```{fence} code block only.")
    return [*start_messages, {"role": "assistant", "content": previous_output or "(empty answer)"},
            {"role": "user", "content": "\n\n".join(parts)}]


def _seed_round0(store: RunStore, method: str, start: str, dsls, models) -> int:
    """Copy the start method's generation and verdict as round 0 of the refinement method."""
    gens = {record_key(g): g for g in store.iter_records("generations") if g["method"] == start and not g.get("round")}
    have_g, have_v = store.keys("generations"), store.keys("verdicts")
    n = 0
    for v in store.iter_records("verdicts"):
        if v["method"] != start or v.get("round") or (dsls and v["dsl"] not in dsls) or (models and v["model"] not in models):
            continue
        g = gens.get(record_key(v))
        if g is None:
            continue
        copy = {"method": method, "round": 0, "copied_from": start}
        if record_key({**g, **copy}) not in have_g:
            store.append("generations", {**g, **copy})
        if record_key({**v, **copy}) not in have_v:
            store.append("verdicts", {**v, **copy})
            n += 1
    return n


@dataclass
class Calls:
    """How a method's model calls and judging jobs are made: the same for every method of a run."""
    params: dict | None = None         # decoding parameters (None: the protocol's per-DSL budget)
    executor: str | None = None        # process (default), thread, dask-local or tcp://scheduler:8786
    workers: int | None = None
    cache_dir: str | Path | None = None
    progress: bool = True
    api_base: str | None = None        # the server of a raw model string (as `dslbench generate --api-base`)
    api_key_env: str | None = None     # the variable holding its API key

    def generation(self) -> dict:
        return dict(params=self.params, executor=self.executor, workers=self.workers, cache_dir=self.cache_dir,
                    progress=self.progress, api_base=self.api_base, api_key_env=self.api_key_env)

    def validation(self) -> dict:
        return dict(executor=self.executor, workers=self.workers, progress=self.progress)


def run_refinement(run_dir, method: str, dsls, models, limit=None, samples: int = 1, rounds: int = 3,
                   retrievers: dict | None = None, top_k: int = 4, calls: Calls | None = None) -> pd.DataFrame:
    """Repair loop over up to `rounds` rounds; resumable (finished rounds are skipped)."""
    calls = calls or Calls()
    start = REFINEMENT_START[method]
    use_context = method in ("retrieval-refinement", "rag-refinement")
    mode = FEEDBACK_MODE.get(method, "diagnostics")
    store = RunStore(run_dir)
    _seed_round0(store, method, start, dsls, models)
    for r in range(1, rounds + 1):
        prev = {(v["task_id"], v["model"], v["sample"]): v for v in store.iter_records("verdicts")
                if v["method"] == method and int(v.get("round") or 0) == r - 1}
        first = {(g["task_id"], g["model"], g["sample"]): g["messages"] for g in store.iter_records("generations")
                 if g["method"] == method and not g.get("round")}
        if not any(not is_final(v, rounds) for v in prev.values()):
            break

        def prompt_fn(task, tc, model, sample, r=r, prev=prev, first=first):
            v = prev.get((task.id, model, sample))
            if v is None or is_final(v, rounds) or (task.id, model, sample) not in first:
                return None
            chunks, extra = [], {}
            if use_context and retrievers and task.dsl in retrievers:
                rt = retrievers[task.dsl]
                diag = " ".join(str(v[lv].get("diagnostics") or "")[:300] for lv in ("syntax", "semantic"))
                chunks = rt.search(task.instruction + "\n" + diag, top_k)
                extra = retrieved_fields(chunks, rt, top_k)
            return {"messages": repair_messages(first[(task.id, model, sample)], v.get("raw_output", ""), v,
                                                tc.fence, chunks, mode),
                    "prompt_version": f"{REFINE_VERSION}-{mode}", "feedback_mode": mode, "round": r, "refines": start,
                    **extra}
        run_generation(run_dir, dsls, models, limit, samples, method=method, prompt_fn=prompt_fn, **calls.generation())
        run_validation(run_dir, dsls, **calls.validation())
    return store.verdict_table()


def run_method(run_dir, method: str, dsls, models, limit=None, samples: int = 1, rounds: int = 3,
               retrievers: dict | None = None, top_k: int = 4, calls: Calls | None = None) -> dict:
    """Run one method (generation + validation) on the DSLs; returns wall time and item counts."""
    t0 = time.perf_counter()
    calls = calls or Calls()
    if method in ("baseline", "pe", "rag"):
        fn = None
        if method == "pe":
            pes = {d: load_pe(d) for d in dsls}
            fn = lambda task, tc, model, sample: {"messages": pe_messages(task, tc, pes[task.dsl]),  # noqa: E731
                                                  "prompt_version": pes[task.dsl]["version"]}
        elif method == "rag":
            def fn(task, tc, model, sample):
                rt = retrievers[task.dsl]
                chunks = rt.search(task.instruction, top_k)
                return {"messages": rag_messages(task, tc, chunks), "prompt_version": RAG_VERSION,
                        **retrieved_fields(chunks, rt, top_k)}
        run_generation(run_dir, dsls, models, limit, samples, method=method, prompt_fn=fn, **calls.generation())
        run_validation(run_dir, dsls, **calls.validation())
    else:
        run_refinement(run_dir, method, dsls, models, limit, samples, rounds, retrievers, top_k, calls)
    return {"method": method, "dsls": len(dsls), "wall_s": time.perf_counter() - t0}


# --- results -------------------------------------------------------------------------------------

# with_rounds / final_verdicts live in the pipeline (pass rates and the book use them too).


def gains(finals: pd.DataFrame) -> pd.DataFrame:
    """Per DSL x model x method: rates on the records paired with the matched baseline and the gain (pp)."""
    return metrics.gains(finals)


def pairs(finals: pd.DataFrame, method: str, level: str = "semantic") -> pd.DataFrame:
    """Task-level pairs (baseline pass, method pass) evaluated under both: the same pairs as `gains`."""
    return metrics.pairs(finals, method, level)


def mcnemar_exact(baseline, treated) -> dict:
    """Exact McNemar test (statsmodels) on paired binary outcomes; b = baseline-only, c = method-only passes."""
    from statsmodels.stats.contingency_tables import mcnemar
    b_ = np.asarray(baseline, int)
    t_ = np.asarray(treated, int)
    b, c = int(((b_ == 1) & (t_ == 0)).sum()), int(((b_ == 0) & (t_ == 1)).sum())
    if b + c == 0:
        return {"b": b, "c": c, "statistic": float("nan"), "p": 1.0 if len(b_) else float("nan")}
    table = [[int(((b_ == 1) & (t_ == 1)).sum()), b], [c, int(((b_ == 0) & (t_ == 0)).sum())]]
    res = mcnemar(table, exact=True)
    return {"b": b, "c": c, "statistic": float(res.statistic), "p": float(res.pvalue)}


def paired_bootstrap(baseline, treated, n_boot: int = 2000, seed: int = 0, alpha: float = 0.05) -> dict:
    """Mean paired difference (pp) with a percentile bootstrap CI, resampling task pairs."""
    d = (np.asarray(treated, float) - np.asarray(baseline, float)) * 100
    if len(d) == 0:
        return {"n": 0, "diff_pp": float("nan"), "ci_low": float("nan"), "ci_high": float("nan")}
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return {"n": len(d), "diff_pp": float(d.mean()), "ci_low": float(lo), "ci_high": float(hi)}


def paired_tests(finals: pd.DataFrame, n_boot: int = 2000, seed: int = 0, by_dsl: bool = True) -> pd.DataFrame:
    """Per method (pooled, and per DSL when by_dsl) and level: paired bootstrap CI and exact McNemar."""
    rows = []
    methods = [m for m in METHODS[1:] if m in set(finals.get("method", pd.Series(dtype=str)))]
    for method in methods:
        for level in ("syntax", "semantic"):
            p = pairs(finals, method, level)
            groups = [("(all)", p)] + (list(p.groupby("dsl")) if by_dsl else [])
            for dsl, g in groups:
                rows.append({"method": method, "level": level, "dsl": dsl,
                             **paired_bootstrap(g["baseline"], g["treated"], n_boot, seed),
                             **mcnemar_exact(g["baseline"], g["treated"])})
    return pd.DataFrame(rows, columns=["method", "level", "dsl", "n", "diff_pp", "ci_low", "ci_high", "b", "c",
                                       "statistic", "p"])


def pe_summary(g: pd.DataFrame, level: str = "semantic") -> dict:
    """PE rows improved / unchanged / regressed and DSLs gaining / regressing (mean over models)."""
    pe = g[g["method"] == "pe"]
    col = f"{level}_gain_pp"
    per_dsl = pe.groupby("dsl")[col].mean()
    return {"rows": len(pe), "rows_up": int((pe[col] > 0).sum()), "rows_same": int((pe[col] == 0).sum()),
            "rows_down": int((pe[col] < 0).sum()), "rows_unjudged": int(pe[col].isna().sum()),
            "dsls": int(per_dsl.notna().sum()), "dsls_gain": int((per_dsl > 0).sum()),
            "dsls_same": int((per_dsl == 0).sum()), "dsls_regress": int((per_dsl < 0).sum()),
            "mean_syntax_gain_pp": float(pe["syntax_gain_pp"].mean()) if len(pe) else float("nan"),
            "mean_semantic_gain_pp": float(pe["semantic_gain_pp"].mean()) if len(pe) else float("nan")}


def method_ranking(g: pd.DataFrame, methods=("rag", "baseline-refinement", "retrieval-refinement", "rag-refinement"),
                   level: str = "semantic") -> pd.DataFrame:
    """Mean gain per method over all deep DSLs and leaving each DSL out; `top` is the best method (ties: all)."""
    g = g[g["method"].isin(methods)]
    col = f"{level}_gain_pp"
    rows = []
    dsls = sorted(g["dsl"].unique())
    for left_out in [None, *dsls]:
        sub = g if left_out is None else g[g["dsl"] != left_out]
        if sub.empty:
            continue
        means = sub.groupby("method")[col].mean()
        top = sorted(means[means == means.max()].index)
        rows.append({"left_out": left_out or "(none)", **{m: means.get(m, np.nan) for m in methods},
                     "top": ", ".join(top), "tie": len(top) > 1})
    return pd.DataFrame(rows)


def size_correlation(g: pd.DataFrame, registry: dict, level: str = "semantic") -> pd.DataFrame:
    """Pearson r of mean gain per model vs log10(parameters), per method; NaN with a reason below 3 sized models."""
    from scipy.stats import pearsonr
    rows = []
    for method, sub in g.groupby("method"):
        per = sub.groupby("model")[f"{level}_gain_pp"].mean()
        sizes = {m: registry[m].params_b for m in per.index if m in registry and registry[m].params_b}
        x = np.log10([sizes[m] * 1e9 for m in sizes])
        y = per[list(sizes)].to_numpy()
        reason = ""
        if len(sizes) < 3:
            reason = f"needs >= 3 models with params_b, have {len(sizes)}"
        elif np.ptp(y) == 0 or np.ptp(x) == 0:
            reason = "constant gains or sizes"
        r, p = (pearsonr(x, y) if not reason else (np.nan, np.nan))
        rows.append({"method": method, "models_with_size": len(sizes), "r": float(r), "p": float(p), "note": reason})
    return pd.DataFrame(rows, columns=["method", "models_with_size", "r", "p", "note"])


def task_times(verdicts: pd.DataFrame, generations: pd.DataFrame) -> pd.DataFrame:
    """Measured seconds per task chain and method: model time (uncached calls) + validation time, all rounds.

    Means, plus the median total: one chain slowed by a paused or shared machine moves the mean, not the median.
    """
    if verdicts.empty or generations.empty:
        return pd.DataFrame(columns=["method", "chains", "rounds_mean", "model_s", "validation_s", "total_s",
                                     "total_s_median"])
    v = with_rounds(verdicts)
    gen = with_rounds(generations)
    if "copied_from" in gen:
        gen = gen[gen["copied_from"].isna()]
        v = v.merge(gen[[*KEY_FIELDS, "round"]], on=[*KEY_FIELDS, "round"], how="inner")
    gen = gen.assign(model_s=gen["generation_duration_s"].fillna(0.0))
    v = v.assign(validation_s=v["syntax_duration_s"].fillna(0.0) + v["semantic_duration_s"].fillna(0.0))
    m = v.merge(gen[[*KEY_FIELDS, "round", "model_s"]], on=[*KEY_FIELDS, "round"], how="left")
    chains = m.groupby(list(KEY_FIELDS)).agg(rounds=("round", "size"), model_s=("model_s", "sum"),
                                             validation_s=("validation_s", "sum")).reset_index()
    chains["total_s"] = chains["model_s"] + chains["validation_s"]
    return (chains.groupby("method").agg(chains=("task_id", "size"), rounds_mean=("rounds", "mean"),
                                         model_s=("model_s", "mean"), validation_s=("validation_s", "mean"),
                                         total_s=("total_s", "mean"), total_s_median=("total_s", "median"))
              .reset_index())
