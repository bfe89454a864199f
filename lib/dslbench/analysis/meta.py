"""Task and DSL metadata for the analysis, read loosely.

The pipeline's strict loader (dslbench.tasks) stops on any malformed file and needs each DSL's
validator; the analysis only needs a few fields (failure_modes, instruction, gold, context, oracle)
and must work on any run, including runs whose tasks or toolchains are not in this checkout. So
this module reads the YAML files directly and skips what it cannot read, saying so.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import yaml

from ..errors import UserError
from ..paths import repo_root, tasks_dir as _tasks_dir, toolchains_dir as _toolchains_dir
from ..tasks import read_yaml_with_lines

AXES = ("knowledge", "structure", "version")


def published_dir() -> Path:
    return repo_root() / "data" / "published"


def factors_dir() -> Path:
    return repo_root() / "data" / "factors"


def dsl_folders(toolchains_root=None) -> list[str]:
    """Names of the DSL folders (toolchains/<dsl>/toolchain.yaml), without importing any validator."""
    root = Path(toolchains_root) if toolchains_root else _toolchains_dir()
    return sorted(p.parent.name for p in root.glob("*/toolchain.yaml"))


def check_dsl_key(path, line, field_name: str, key, folders: list[str]) -> None:
    """A data file's DSL key must be a DSL folder name: any other spelling silently matches nothing."""
    if key not in folders:
        raise UserError(f"{path}:{line}: field '{field_name}': unknown DSL '{key}'; "
                        f"DSL folders: {', '.join(folders) or '(none)'}")


def read_dsl_table(path, toolchains_root=None, cover_all: bool = False) -> dict[str, dict]:
    """Read a YAML table {dsls: {<dsl folder>: {..., aliases: [other spellings]}}}, checked at load:
    every key is a DSL folder, no alias is one (it would shadow that folder's entry), and with
    `cover_all` every DSL folder has an entry. Returns {key or alias: entry}."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    data, line_of = read_yaml_with_lines(path)
    entries = data.get("dsls") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise UserError(f"{path}:{line_of('dsls')}: field 'dsls': expected a mapping of DSL folder names to entries")
    folders = dsl_folders(toolchains_root)
    table = {}
    for key, entry in entries.items():
        field_name = f"dsls.{key}"
        check_dsl_key(path, line_of(field_name), field_name, key, folders)
        if not isinstance(entry, dict):
            raise UserError(f"{path}:{line_of(field_name)}: field '{field_name}': expected a mapping")
        table[key] = entry
        for alias in entry.get("aliases") or []:
            if alias in folders:
                raise UserError(f"{path}:{line_of(field_name + '.aliases')}: field '{field_name}.aliases': "
                                f"'{alias}' is a DSL folder with its own entry, not an alias")
            table[alias] = entry
    missing = [d for d in folders if d not in entries]
    if cover_all and missing:
        raise UserError(f"{path}:{line_of('dsls')}: field 'dsls': no entry for DSL folder(s) {', '.join(missing)}; "
                        f"DSL folders: {', '.join(folders)}")
    return table


def load_task_meta(dsls=None, tasks_root=None) -> pd.DataFrame:
    """One row per task file: dsl, task_id, failure_modes (tuple), instruction, gold, context, oracle."""
    root = Path(tasks_root) if tasks_root else _tasks_dir()
    rows = []
    if not root.exists():
        return pd.DataFrame(columns=["dsl", "task_id", "failure_modes", "instruction", "gold", "context", "oracle",
                                     "difficulty"])
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if dsls and folder.name not in dsls:
            continue
        for f in sorted(folder.glob("*.yaml")):
            try:
                d = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            except Exception as e:  # a broken file is the task owner's business: skip it here, loudly
                warnings.warn(f"analysis: skipped unreadable task file {f}: {e}")
                continue
            if not isinstance(d, dict):
                continue
            rows.append({"dsl": d.get("dsl", folder.name), "task_id": d.get("id", f.stem),
                         "failure_modes": tuple(d.get("failure_modes") or ()),
                         "instruction": str(d.get("instruction") or ""), "gold": str(d.get("gold") or ""),
                         "context": d.get("context") or {}, "oracle": d.get("oracle") or {},
                         "difficulty": d.get("difficulty")})
    return pd.DataFrame(rows, columns=["dsl", "task_id", "failure_modes", "instruction", "gold", "context", "oracle",
                                       "difficulty"])


def load_card(dsl: str, toolchains_root=None) -> dict:
    root = Path(toolchains_root) if toolchains_root else _toolchains_dir()
    p = root / dsl / "toolchain.yaml"
    if not p.exists():
        return {}
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except Exception:
        return {}


def executable_oracle_table(path=None, toolchains_root=None) -> dict:
    """data/published/executable_oracle.yaml, keys checked against this checkout's DSL folders (a DSL
    missing from it is allowed: its card may carry the flag, else it is unknown)."""
    p = Path(path) if path else published_dir() / "executable_oracle.yaml"
    return read_dsl_table(p, toolchains_root) if path or p.exists() else {}


def executable_oracle(dsl: str, toolchains_root=None, table=None) -> tuple[bool | None, str]:
    """(flag, where it came from): the DSL card's `executable_oracle` key wins; then
    data/published/executable_oracle.yaml (our reading of the paper's Table I); else unknown (None)."""
    card = load_card(dsl, toolchains_root)
    if "executable_oracle" in card:
        return bool(card["executable_oracle"]), "toolchain card"
    table = executable_oracle_table() if table is None else table
    if dsl in table:
        return bool(table[dsl]["executable"]), "data/published/executable_oracle.yaml"
    return None, "unknown (not in the card nor in data/published/executable_oracle.yaml)"


def dsl_info(dsl_summary: pd.DataFrame, toolchains_root=None) -> pd.DataFrame:
    """dsl_summary plus executable_oracle and its source."""
    table = executable_oracle_table()  # this checkout's table and folders; cards may come from elsewhere
    out = dsl_summary.copy()
    flags = [executable_oracle(d, toolchains_root, table) for d in out["dsl"]]
    out["executable_oracle"] = [f for f, _ in flags]
    out["executable_oracle_source"] = [s for _, s in flags]
    return out
