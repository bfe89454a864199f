"""End to end with the embedded model: generate, validate, resume, cache, determinism, notebooks."""
import json
import re

import pandas as pd
import pytest

from conftest import run_cli
from dslbench import book, pipeline
from dslbench.metrics import RunCannotJudge
from dslbench.store import RunStore, comparable
from dslbench.tasks import load_tasks

DSLS = ["jq", "smiles", "verilog"]
PARAMS = {"max_tokens": 96}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("e2e")
    pipeline.run_generation(base / "run1", DSLS, limit=2, params=PARAMS, cache_dir=base / "cache1", progress=False)
    table = pipeline.run_validation(base / "run1", progress=False)
    return base, table


def test_every_task_gets_two_verdicts_with_provenance(first_run):
    _, table = first_run
    assert len(table) == 2 * len(DSLS)
    assert set(table["dsl"]) == set(DSLS)
    assert table["syntax_status"].isin(["pass", "fail"]).all()
    assert table["semantic_status"].isin(["pass", "fail"]).all()
    assert (table["model"] == "smollm2-135m").all()
    assert table["toolchain_version"].str.len().gt(0).all()
    for prompt in table["prompt"]:
        assert json.loads(prompt)[0]["role"] == "system"
    # a syntax failure never counts as a semantic pass
    assert not ((table["syntax_status"] == "fail") & (table["semantic_status"] == "pass")).any()


def test_rerun_resumes_without_duplicates_or_model_calls(first_run, monkeypatch):
    base, table = first_run
    import litellm

    def no_calls(*a, **k):
        raise AssertionError("a model call was made although every output is stored or cached")
    monkeypatch.setattr(litellm, "completion", no_calls)
    pipeline.run_generation(base / "run1", DSLS, limit=2, params=PARAMS, cache_dir=base / "cache1",
                            executor="thread", progress=False)
    again = pipeline.run_validation(base / "run1", progress=False)
    assert len(again) == len(table)
    # a fresh run with the same cache is served from the cache entirely, without starting a worker
    def no_workers(*a, **k):
        raise AssertionError("a worker pool was started although every reply is cached")
    monkeypatch.setattr(pipeline, "make_executor", no_workers)
    pipeline.run_generation(base / "run3", DSLS, limit=2, params=PARAMS, cache_dir=base / "cache1",
                            executor="thread", progress=False)
    gens = RunStore(base / "run3").records("generations")
    assert len(gens) == len(table) and all(g["cached"] for g in gens)


def test_two_runs_from_scratch_give_identical_verdict_tables(first_run):
    base, table = first_run
    # new run directory and an empty cache: the model really runs again
    pipeline.run_generation(base / "run2", DSLS, limit=2, params=PARAMS, cache_dir=base / "cache2", progress=False)
    second = pipeline.run_validation(base / "run2", progress=False)
    assert not any(g["cached"] for g in RunStore(base / "run2").records("generations"))
    pd.testing.assert_frame_equal(comparable(table), comparable(second))


def test_parquet_tables_are_exported(first_run):
    base, table = first_run
    verdicts = pd.read_parquet(base / "run1" / "tables" / "verdicts.parquet")
    gens = pd.read_parquet(base / "run1" / "tables" / "generations.parquet")
    assert len(verdicts) == len(gens) == len(table)


def test_generation_errors_are_errors_not_failures(tmp_path):
    pipeline.run_generation(tmp_path / "run", ["jq"], models=["openai/unreachable"], limit=1, executor="thread",
                            cache_dir=tmp_path / "cache", progress=False)
    gens = RunStore(tmp_path / "run").records("generations")
    assert gens[0]["generation_status"] == "error"
    # nothing could be judged (the model server is unreachable): validation stops loudly, verdicts kept
    with pytest.raises(RunCannotJudge, match=r"jq: 0/1 judged, top reason provider_error"):
        pipeline.run_validation(tmp_path / "run", progress=False)
    table = RunStore(tmp_path / "run").verdict_table()
    assert table.loc[0, "syntax_status"] == "error" and table.loc[0, "semantic_status"] == "error"
    assert table.loc[0, "syntax_reason"] == "provider_error"
    assert pipeline.pass_rates(table).loc[0, "evaluated"] == 0


def test_dask_executor_gives_the_same_verdicts_as_the_process_pool():
    local = pipeline.selfcheck(["jq"], limit=3, executor="process", workers=2, progress=False)
    dask = pipeline.selfcheck(["jq"], limit=3, executor="dask-local", workers=2, progress=False)
    cols = ["dsl", "task_id", "program", "index", "syntax", "semantic", "ok"]
    pd.testing.assert_frame_equal(local[cols], dask[cols])


def test_selfcheck_shards_split_the_tasks_and_write_their_rows(tmp_path):
    """--shard K/N checks every N-th task in id order from the K-th; --csv keeps one row per program."""
    ids = sorted(t.id for t in load_tasks(["jq"])["jq"])
    r = run_cli("selfcheck", "--dsl", "jq", "--shard", "5/8", "--csv", str(tmp_path / "rows.csv"), "--no-progress")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert sorted(set(rows["task_id"])) == ids[5::8]
    assert set(rows["program"]) >= {"gold", "syntax", "semantic"} and rows["ok"].all()
    bad = run_cli("selfcheck", "--dsl", "jq", "--shard", "8/8")
    assert bad.returncode == 2 and "'8/8': give K/N with 0 <= K < N" in bad.stderr


def test_pipeline_command_executes_the_stage_notebooks(tmp_path, monkeypatch):
    """Every stage on one sampled jq task (--sample reaches every stage kernel), then the book of the run."""
    run = tmp_path / "nbrun"
    r = run_cli("pipeline", "--run", str(run), "--dsl", "jq", "--sample", "1", "--seed", "3", "--limit", "1", "--param", "max_tokens=48", "--param", "simulate_check=false", "--param", "lora_steps=2", "--param", "selfcheck=false",
                env={"DSLBENCH_CACHE": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("02_generation.ipynb", "03_validation.ipynb"):
        nb = json.loads((run / "notebooks" / name).read_text())
        errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors
    assert (run / "tables" / "verdicts.parquet").exists()
    assert "semantic_pct" in r.stdout and "syntax_pct" in r.stdout
    # progress: papermill's cell bar and each stage's own bar (done/total, rate) reach the terminal;
    # the saved notebook keeps one summary line, not a bar frozen mid-way
    live = r.stderr.replace("\r", "\n")
    assert "02_generation cells" in live and "03_validation cells" in live
    assert re.search(r"generate: 100%.*1/1 \[", live) and re.search(r"validate: 100%.*1/1 \[", live), live[-2000:]
    outputs = "".join("".join(o.get("text", "")) for name in ("02_generation.ipynb", "03_validation.ipynb")
                      for c in json.loads((run / "notebooks" / name).read_text())["cells"] for o in c.get("outputs", []))
    assert re.search(r"^generate: 1/1 in \d+ s", outputs, re.M) and re.search(r"^validate: 1/1 in \d+ s", outputs, re.M)
    assert "\r" not in outputs and "it/s]" not in outputs
    # the stratified sample drawn in the parent is the one every stage used, and run.json says so
    monkeypatch.setenv("DSLBENCH_SAMPLE", "1")
    monkeypatch.setenv("DSLBENCH_SEED", "3")
    picked = {t.id for t in load_tasks(["jq"])["jq"]}
    table = RunStore(run).verdict_table()
    assert set(table["task_id"]) == picked
    calls = [json.loads(x) for x in (run / "run.json").read_text().splitlines()]
    assert [c["params"]["task_sample"] for c in calls if c["stage"] == "pipeline"] == [1]
    # the book of a fresh run: no broken link, missing image or raw traceback
    assert "book built in" in r.stdout
    problems = book.check_built(book.book_dir() / "_build" / "html")
    assert not problems, "\n".join(problems[:40])


def test_the_token_budget_comes_from_every_gold_whatever_the_sample(tmp_path, monkeypatch):
    """A sampled run decodes like a full one: max_tokens from all the DSL's golds, not the sampled ones."""
    from dslbench import decoding, toolchains
    monkeypatch.setenv("DSLBENCH_SAMPLE", "1")

    def fake_model(model_name, messages, params, sample, cache_dir, timeout=None, fences=(), endpoint=None):
        return {"text": "```latex\nx\n```", "status": "ok", "error": "", "cached": False, "usage": {},
                "duration_s": 0.0, "attempts": 1, "model": "fake/model", "params": params}
    monkeypatch.setattr(pipeline, "_generate_job", fake_model)
    pipeline.run_generation(tmp_path / "run", ["latex"], executor="thread", cache_dir=tmp_path / "cache",
                            progress=False)
    every = load_tasks(["latex"], sampled=False)["latex"]
    full = decoding.token_budget(toolchains.get("latex").card, [t.gold for t in every])[0]
    sampled = load_tasks(["latex"])["latex"]
    assert len(sampled) == 1 and decoding.token_budget({}, [sampled[0].gold])[0] != full   # the case that matters
    (record,) = RunStore(tmp_path / "run").records("generations")
    assert record["params"]["max_tokens"] == full and record["max_tokens_from"] == "gold"


def test_pipeline_refuses_a_param_no_stage_declares(tmp_path):
    r = run_cli("pipeline", "--run", str(tmp_path / "typo"), "--dsl", "jq", "--limit", "1", "--param", "max_tokes=48")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--param max_tokes: no stage notebook to run declares such a parameter" in r.stderr
    assert not (tmp_path / "typo" / "notebooks" / "01_domain_selection.ipynb").exists()    # refused before any stage


def test_every_stage_notebook_cell_has_an_id():
    # nbformat 4.5 notebooks need cell ids: without them every papermill run warns (MissingIDFieldWarning)
    from dslbench.notebooks import stage_notebooks
    for path in stage_notebooks():
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        missing = [i for i, cell in enumerate(cells) if not cell.get("id")]
        assert not missing, f"{path.name}: cells {missing} have no id"
