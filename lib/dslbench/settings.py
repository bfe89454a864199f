"""Every environment variable the compendium reads, declared once: name, default, what it changes.

Code reads them with `settings.get(NAME)` (an undeclared name is a KeyError, so a new variable cannot
slip in undocumented); the README's Settings table lists the same names (tests/test_settings.py).
Options of the commands are in `dslbench <command> --help`, not here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    default: str | None   # the value when unset; None: worked out where it is used (see `shown`)
    shown: str            # the default as a reader should read it
    what: str


_ALL = (
    # where things are
    Setting("DSLBENCH_ROOT", None, "the repository", "where the code, data and toolchains are found (a copy elsewhere)"),
    Setting("DSLBENCH_TASKS", None, "data/tasks", "the task tree every stage and the book read (e.g. an imported upstream pack)"),
    Setting("DSLBENCH_RUNS", None, "runs/", "where run folders are made by default"),
    Setting("DSLBENCH_CACHE", None, ".cache/generations", "the content-addressed cache of model replies"),
    Setting("DSLBENCH_RAG_CACHE", None, ".cache/rag", "built retrieval corpora and indexes"),
    Setting("DSLBENCH_ORACLE_CACHE", None, ".cache/oracle",
            "the gold programs' expected outputs, kept per task and toolchain version (filled by gold-only runs)"),
    # what a run does
    Setting("DSLBENCH_SAMPLE", None, "all tasks", "a difficulty-stratified sample of N tasks per DSL in every stage "
                                                  "(`pipeline --sample N`)"),
    Setting("DSLBENCH_SEED", "0", "0", "the seed of that sample (`pipeline --seed S`)"),
    Setting("DSLBENCH_EXECUTOR", "process", "process",
            "the default of `--executor` (`process`, `thread`, `dask-local`, `tcp://host:port`)"),
    Setting("DSLBENCH_LLAMA_THREADS", None, "all cores",
            "CPU threads of the embedded model (1 on a shared machine: llama.cpp spin-waits)"),
    Setting("DSLBENCH_SANDBOX", "on", "on",
            "`off` runs toolchains with limits and timeouts only, no bubblewrap (recorded in every verdict)"),
    Setting("DSLBENCH_PROGRESS", None, "unset",
            "set by `dslbench pipeline` so that stage kernels draw their bars on its terminal"),
    # installation (read by install.sh)
    Setting("DSLBENCH_VENV", ".venv", ".venv",
            "where `install.sh` puts the Python environment (`system`: the current interpreter)"),
    Setting("DSLBENCH_WHEELS", None, "~/.cache/dslbench/wheels",
            "`install.sh`'s cache of locally built wheels (falkordblite)"),
    # toolchains
    Setting("DSLBENCH_NEO4J_URI", None, "unset", "Cypher is judged on that Neo4j server instead of the FalkorDB stand-in"),
    Setting("DSLBENCH_NEO4J_USER", "neo4j", "neo4j", "the Neo4j user"),
    Setting("DSLBENCH_NEO4J_PASSWORD", None, "unset", "the Neo4j password"),
    Setting("DSLBENCH_NEO4J_DATABASE", None, "the server's default", "the Neo4j database"),
    Setting("DSLBENCH_CYPHER_GRAPHS", None, "unset",
            "a folder of `<graph>.cypher` CREATE scripts for imported CypherBench graphs"),
    Setting("DSLBENCH_TERRAFORM", None, "`terraform` on PATH, else /usr/local/bin/terraform",
            "the terraform binary (detected, never downloaded)"),
    Setting("DSLBENCH_TF_PLUGINS", None, "/opt/tf-plugins", "the folder holding the hashicorp/aws provider mirror"),
    Setting("DSLBENCH_TF_REATTACH", "1", "1", "`0` lets terraform start the AWS provider itself for every command (slower)"),
    Setting("DSLBENCH_LEAN_PROJECT", None, "unset", "a Lake project with Mathlib for Lean 4 tasks that import it"),
    Setting("DSLBENCH_DAFNY_VERIFY_GOLD", None, "off",
            "`1`: the MBPP-DFY importer verifies each upstream gold first"),
    Setting("DSLBENCH_DAFNY_GOLD_WALL_S", "300", "300 s", "the wall-clock limit of that gold check"),
    Setting("DSLBENCH_DAFNY_GOLD_JOBS", "2", "2", "how many golds that check verifies at once"),
)

SETTINGS: dict[str, Setting] = {s.name: s for s in _ALL}


def get(name: str) -> str | None:
    """The variable's value, or its declared default when unset or empty."""
    setting = SETTINGS[name]   # KeyError: declare it above (and in the README) first
    value = os.environ.get(name, "")
    return value if value != "" else setting.default
