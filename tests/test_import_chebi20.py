"""ChEBI-20 import (toolchains/smiles/chebi20.py) on a fixture in the published layout
(tests/fixtures/smiles/chebi20/ChEBI-20_data/{train,validation,test}.txt: tab-separated with the
header CID, SMILES, description, read without quoting) with the upstream's quirks: a doubled backslash
in a SMILES, a literal quote in a description; plus records that must be skipped (a line with two
fields, an empty description, an unparseable SMILES) and a gold with no InChI (an R group `*`)."""
import importlib.util
import shutil

import pytest

from conftest import ROOT, run_cli, skip_without_toolchain
from dslbench import pipeline, toolchains
from dslbench.tasks import load_task_file
from dslbench.upstream import NotThisBenchmark, write_tasks

FIXTURE = ROOT / "tests" / "fixtures" / "smiles" / "chebi20"
DATA = FIXTURE / "ChEBI-20_data"

available = skip_without_toolchain("smiles")   # the importer itself reads the SMILES with RDKit


def importer():
    toolchains.get("smiles")
    return importlib.import_module("dslbench.plugins.smiles.chebi20")


@pytest.fixture(scope="module")
def made():
    return importer().load(FIXTURE, progress=False)


def test_the_published_layout_imports_and_bad_records_are_skipped_with_reasons(made):
    assert made.read == 9
    assert [t["id"] for t in made.tasks] == ["chebi20-887", "chebi20-5793", "chebi20-241", "chebi20-702",
                                             "chebi20-445639", "chebi20-999003"]
    assert {s.record: s.reason for s in made.skipped} == {"validation:3": "malformed_record",
                                                          "validation:CID 999004": "no_description",
                                                          "test:CID 999001": "rdkit_parse_error"}


def test_task_fields_keep_the_upstream_record(made):
    t = {t["id"]: t for t in made.tasks}
    ethanol = t["chebi20-702"]
    line = (DATA / "test.txt").read_text().splitlines()[1]
    assert ethanol["instruction"] == line.split("\t")[2] + "\n"      # the description, quotes and all
    assert '"drug of abuse"' in ethanol["instruction"]
    assert ethanol["gold"] == "CCO\n" and ethanol["oracle"] == {"match": "inchikey"}
    assert ethanol["provenance"] == {"source": "upstream", "benchmark": "ChEBI-20 (Text2Mol / MolT5)",
                                     "upstream_id": "702", "upstream_split": "test", "licence": "CC-BY-4.0"}
    assert ethanol["split"] == "test" and ethanol["difficulty"] == "easy"
    assert t["chebi20-241"]["split"] == "dev" and t["chebi20-241"]["provenance"]["upstream_split"] == "validation"
    assert t["chebi20-887"]["split"] == "dev" and t["chebi20-887"]["provenance"]["upstream_split"] == "train"
    assert "aromatic ring" in t["chebi20-241"]["constructs"]
    assert "tetrahedral stereo" in t["chebi20-5793"]["constructs"]
    # the escaping artefact `\\` becomes one backslash; RDKit reads both as the same molecule
    assert t["chebi20-445639"]["gold"] == "CCCCCCCC/C=C\\CCCCCCCC(=O)O\n"
    assert "double-bond stereo" in t["chebi20-445639"]["constructs"]
    # no InChI for an R group: an empty key would equal any other, so canonical SMILES decide
    assert t["chebi20-999003"]["oracle"] == {"match": "isomeric"}


def test_mutants_are_other_molecules_of_the_semantic_level(made):
    t = {t["id"]: t for t in made.tasks}
    notes = [m["note"] for m in t["chebi20-445639"]["mutants"]]
    assert notes[0] == "stereochemistry dropped" and len(notes) == 3
    assert all(m["level"] == "semantic" for task in made.tasks for m in task["mutants"])
    first = t["chebi20-702"]["mutants"][0]
    assert (first["note"], first["program"]) == ("terminal C (atom 0) dropped", "CO\n")
    assert "[C]" not in "".join(m["program"] for task in made.tasks for m in task["mutants"])  # no radicals


def test_the_data_folder_or_a_clone_without_train_imports_and_a_wrong_folder_does_not(tmp_path, capsys):
    module = importer()
    assert module.load(DATA, progress=False).read == 9
    partial = tmp_path / "MolT5" / "ChEBI-20_data"
    partial.mkdir(parents=True)
    for name in ("validation.txt", "test.txt"):
        shutil.copy(DATA / name, partial / name)
    assert len(module.load(partial.parent, progress=False).tasks) == 4
    assert "no train.txt" in capsys.readouterr().err
    assert [t["id"] for t in module.load(DATA / "train.txt", progress=False).tasks] == ["chebi20-887", "chebi20-5793"]
    with pytest.raises(NotThisBenchmark, match="no ChEBI-20_data/"):
        module.load(FIXTURE.parent, progress=False)
    (partial / "test.txt").write_text("cid,smiles,text\n702,CCO,ethanol\n")
    with pytest.raises(NotThisBenchmark, match="header"):
        module.load(partial, progress=False)


def test_cli_import_prints_the_summary_and_a_wrong_folder_is_a_clear_error(tmp_path):
    done = run_cli("import", "smiles", str(FIXTURE), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "read 9 record(s), imported 6, skipped 3" in done.stdout
    assert "rdkit_parse_error" in done.stdout and "no_description" in done.stdout
    wrong = run_cli("import", "smiles", str(FIXTURE.parent), "--out", str(tmp_path / "x"))
    assert wrong.returncode != 0 and "Traceback" not in wrong.stderr and "ChEBI-20_data" in wrong.stderr


def test_imported_gold_and_equivalents_pass_both_levels_and_mutants_fail_semantics(made, tmp_path):
    tc = toolchains.get("smiles")
    paths = write_tasks("smiles", made.tasks, tmp_path)
    tasks = [load_task_file(p, tc.check_oracle) for p in paths]
    # the gold with the doubled backslash and the glucose carry RDKit's canonical form as an equivalent
    assert sum(len(t.equivalents) for t in tasks) >= 2
    for task in tasks:
        for program in [task.gold] + [e.program for e in task.equivalents]:
            got = pipeline.evaluate("smiles", task, program)
            assert (got["syntax"]["status"], got["semantic"]["status"]) == ("pass", "pass"), (task.id, got)
        for m in task.mutants:
            got = pipeline.evaluate("smiles", task, m.program)
            assert got["syntax"]["status"] == "pass" and got["semantic"]["status"] == "fail", (task.id, m.note)
