"""SysML v2: the SysMBench importer (dataset.json: [{nl, design, label}]). The reference design becomes
the gold and the oracle is derived from its parse (our runner's report).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from dslbench.upstream import Imported, Skip, convert_each

from .model import _seg

UPSTREAM_KINDS_KEPT = {"part", "port", "attribute", "item", "action", "state", "requirement", "interface",
                       "enum", "constraint", "subject", "end", "perform", "exhibit", "verification", "connection",
                       "flow", "calc", "use case", "occurrence"}


def _upstream_records(source: Path) -> list:
    path = source / "dataset.json" if source.is_dir() else source
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"SysMBench: cannot read {path.name}: {e}") from None
    if not isinstance(data, list):
        raise ValueError(f"SysMBench: {path.name} must hold a JSON list of records, got {type(data).__name__}")
    return data


def _check_record(i: int, rec) -> dict:
    where = f"SysMBench record {i}" + (f" (label {rec.get('label')!r})" if isinstance(rec, dict) else "")
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: expected an object with nl, design, label")
    for key in ("nl", "design"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            raise ValueError(f"{where}: field '{key}' must be a non-empty string")
    if not isinstance(rec.get("label"), (str, int)) or not str(rec["label"]).strip():
        raise ValueError(f"{where}: field 'label' must be a non-empty string or number")
    return rec


def oracle_from_report(report: dict, max_elements: int = 40) -> dict:
    """The best oracle a reference model gives: its named definitions and typed usages, and its
    satisfy/verify/connect/interface/flow/succession/transition relations."""
    elements = []
    for e in report["elements"]:
        if not e["name"] or "<anonymous>" in e["qname"] or e["kind"] not in UPSTREAM_KINDS_KEPT | {"package"}:
            continue
        spec = {"path": e["qname"], "kind": e["kind"] + (" def" if e["def"] else "")}
        if e["typed_by"]:
            spec["typed_by"] = e["typed_by"][0]["name"].split("::")[-1]
            if e["kind"] in ("port", "end"):
                spec["conjugated"] = e["typed_by"][0]["conjugated"]
        if e["multiplicity"]:
            spec["multiplicity"] = e["multiplicity"]
        if e["specializes"]:
            spec["specializes"] = [s.split("::")[-1] for s in e["specializes"]]
        if e["direction"]:
            spec["direction"] = e["direction"]
        elements.append(spec)
    relations = []
    for r in report["relations"]:
        k = r["kind"]
        spec = None
        if k in ("satisfy", "verify") and r.get("requirement"):
            spec = {"kind": k, "requirement": _seg(r["requirement"])}
            if r.get("by"):
                spec["by"] = _seg(r["by"])
        elif k in ("connect", "interface") and len(r["ends"]) == 2:
            spec = {"kind": k, "ends": [_seg(x) for x in r["ends"]]}
        elif k == "flow" and len(r["ends"]) == 2:
            spec = {"kind": "flow", "from": _seg(r["ends"][0]), "to": _seg(r["ends"][1])}
        elif k == "succession" and r.get("first") and r.get("then"):
            spec = {"kind": "succession", "first": _seg(r["first"]), "then": _seg(r["then"])}
        elif k == "transition" and r.get("source") and r.get("target"):
            spec = {"kind": "transition", "from": _seg(r["source"]), "to": _seg(r["target"])}
        if spec and spec not in relations:
            relations.append(spec)
    return {"elements": elements[:max_elements], "relations": relations}


def load(tc, source: Path) -> Imported:
    """SysMBench records as tasks, each reference design parsed by `tc` (the Validator) in the sandbox.
    A malformed record is skipped (`malformed_record`), and so is one whose design does not parse
    (`gold_does_not_parse`) or has no named element or relation to check (`nothing_to_check`)."""
    records = _upstream_records(Path(source))
    return convert_each(((str(i), rec) for i, rec in enumerate(records)),
                        lambda i, rec: _to_task(tc, int(i), _check_record(int(i), rec)),
                        progress=True, total=len(records))


def _to_task(tc, i: int, rec: dict):
    from dslbench.sandbox import new_workdir
    work = new_workdir()
    try:
        (work / tc.file_name).write_text(rec["design"], encoding="utf-8")
        result, report = tc._parse(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    uid = str(rec.get("id", i))
    if report is None or not report["ok"]:
        why = report["errors"][0] if report else f"runner exit {result.returncode}"
        return Skip(uid, "gold_does_not_parse", f"record {i} (label {rec['label']!r}): reference design does not "
                                                f"parse: {why}")
    oracle = oracle_from_report(report)
    if not oracle["elements"] and not oracle["relations"]:
        return Skip(uid, "nothing_to_check", f"record {i} (label {rec['label']!r}): no named elements to check")
    n = len(oracle["elements"]) + len(oracle["relations"])
    kinds = sorted({e["kind"] for e in oracle["elements"]} | {r["kind"] for r in oracle["relations"]})
    return {
        "id": f"sysml-sysmbench-{i:04d}", "dsl": "sysml", "domain": "Model-Driven Engineering",
        "title": f"SysMBench {rec['label']}", "difficulty": "easy" if n < 8 else "medium" if n < 20 else "hard",
        "constructs": kinds, "failure_modes": [],
        "instruction": rec["nl"].strip() + "\n\nWrite the model in SysML v2 textual notation. Use exactly the "
                       "package and element names of the reference design (they are checked).",
        "context": {}, "gold": rec["design"], "oracle": oracle,
        "provenance": {"source": "upstream", "benchmark": "SysMBench", "upstream_id": uid,
                       "label": str(rec["label"]), "licence": "see the SysMBench release"},
        "split": "test", "mutants": []}
