"""SysML v2: the SysMBench importer. The reference design becomes the gold and the oracle is derived
from its parse (our runner's report).

Layout, as the SysMBench (DesignBench) repository publishes it: dataset/sysml/dataset.json, a JSON list
of {nl, design, domain, grammar, diagram}: the requirement text, the reference model, the application
domain ("Vehicle Traffic"), the SysML v2 language area it exercises ("Attribute", "Expression") and the
path of the rendered diagram, dataset/sysml/samples/<NN>/design.png, whose folder NN numbers the record.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from dslbench.upstream import Imported, Skip, convert_each

from .diagnostics import dependency_diagnostics, named_scope
from .model import Model, _seg, _split

UPSTREAM_KINDS_KEPT = {"part", "port", "attribute", "item", "action", "state", "requirement", "interface",
                       "enum", "constraint", "subject", "end", "perform", "exhibit", "verification", "connection",
                       "flow", "calc", "use case", "occurrence"}


def _upstream_records(source: Path) -> list:
    path = source
    if source.is_dir():   # the repository root, dataset/sysml/ or the folder holding dataset.json
        found = [f for f in (source / "dataset" / "sysml" / "dataset.json", source / "sysml" / "dataset.json",
                             source / "dataset.json") if f.is_file()]
        path = found[0] if found else source / "dataset" / "sysml" / "dataset.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"SysMBench: cannot read {path.name}: {e}") from None
    if not isinstance(data, list):
        raise ValueError(f"SysMBench: {path.name} must hold a JSON list of records, got {type(data).__name__}")
    return data


def _where(i: int, rec) -> str:
    return f"SysMBench record {i}" + (f" ({_sample(i, rec)})" if isinstance(rec, dict) else "")


def _sample(i: int, rec: dict) -> str:
    """The record's own number: its samples/<NN>/ folder (from `diagram`), else its 1-based position."""
    parts = Path(str(rec.get("diagram") or "")).parts
    return parts[-2] if len(parts) >= 2 and parts[-3:-2] == ("samples",) else f"{i + 1:02d}"


def _check_record(i: int, rec) -> dict:
    if not isinstance(rec, dict):
        raise ValueError(f"{_where(i, rec)}: expected an object with nl, design, domain, grammar")
    for key in ("nl", "design"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            raise ValueError(f"{_where(i, rec)}: field '{key}' must be a non-empty string")
    for key in ("domain", "grammar"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            raise ValueError(f"{_where(i, rec)}: field '{key}' must be a string")
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
        spec = relation_spec(r)
        if spec and spec not in relations:
            relations.append(spec)
    return {"elements": elements[:max_elements], "relations": relations}


def relation_spec(r: dict) -> dict | None:
    """The oracle's entry for one relation of the report (None: a relation the oracle does not check)."""
    k = r["kind"]
    if k == "satisfy" and not r.get("by"):
        return None   # `satisfy R;` with no `by`: the oracle can only check a satisfy by what satisfies it
    if k in ("satisfy", "verify") and r.get("requirement"):
        return {"kind": k, "requirement": _seg(r["requirement"]), **({"by": _seg(r["by"])} if r.get("by") else {})}
    if k in ("connect", "interface") and len(r["ends"]) == 2:
        return {"kind": k, "ends": [_seg(x) for x in r["ends"]]}
    if k == "flow" and len(r["ends"]) == 2:
        return {"kind": "flow", "from": _seg(r["ends"][0]), "to": _seg(r["ends"][1])}
    if k == "succession" and r.get("first") and r.get("then"):
        return {"kind": "succession", "first": _seg(r["first"]), "then": _seg(r["then"]), **owner(r)}
    if k == "transition" and r.get("source") and r.get("target"):
        return {"kind": "transition", "from": _seg(r["source"]), "to": _seg(r["target"]), **owner(r)}
    return None


def owner(r: dict) -> dict:
    """`in`: the action or state that owns a succession or transition (its meaning is its owner's: two
    state machines may both go `initial then off`), by its own name; nothing for an anonymous owner."""
    scope = named_scope(r.get("scope") or "")
    name = _split(scope, "::")[-1] if scope else ""      # as the report spells it (quotes kept)
    return {"in": name} if name and name != "<anonymous>" else {}


def load(tc, source: Path) -> Imported:
    """SysMBench records as tasks, each reference design parsed by `tc` (the Validator) in the sandbox.
    A malformed record is skipped (`malformed_record`), and so is one whose design does not parse
    (`gold_does_not_parse`), does not resolve its names (`gold_does_not_resolve`: the semantic level's
    own checks) or has no named element or relation to check (`nothing_to_check`)."""
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
    uid = _sample(i, rec)
    if report is None or not report["ok"]:
        why = report["errors"][0] if report else f"runner exit {result.returncode}"
        return Skip(uid, "gold_does_not_parse", f"{_where(i, rec)}: reference design does not parse: {why}")
    # The semantic level first resolves every name (library imports, redefinitions, typing): a reference
    # design that fails that is an upstream error the task could never be passed on.
    problems = dependency_diagnostics(Model(report))
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return Skip(uid, "gold_does_not_resolve", f"{_where(i, rec)}: {problems[0][:200]}{more}")
    oracle = oracle_from_report(report)
    if not oracle["elements"] and not oracle["relations"]:
        return Skip(uid, "nothing_to_check", f"{_where(i, rec)}: no named elements to check")
    n = len(oracle["elements"]) + len(oracle["relations"])
    kinds = sorted({e["kind"] for e in oracle["elements"]} | {r["kind"] for r in oracle["relations"]})
    grammar, domain = (rec.get("grammar") or "").strip(), (rec.get("domain") or "").strip()
    return {
        "id": f"sysml-sysmbench-{uid}", "dsl": "sysml", "domain": "Model-Driven Engineering",
        "title": f"SysMBench {uid}: {grammar or 'model'}" + (f" ({domain})" if domain else ""),
        "difficulty": "easy" if n < 8 else "medium" if n < 20 else "hard",
        "constructs": ([grammar] if grammar else []) + kinds, "failure_modes": [],
        "instruction": rec["nl"].strip() + "\n\nWrite the model in SysML v2 textual notation. Use exactly the "
                       "package and element names of the reference design (they are checked).",
        "context": {}, "gold": rec["design"], "oracle": oracle,
        "provenance": {"source": "upstream", "benchmark": "SysMBench", "upstream_id": uid,
                       **({"domain": domain} if domain else {}), **({"grammar": grammar} if grammar else {}),
                       "licence": "see the SysMBench release"},
        "split": "test", "mutants": mutants(rec["design"], oracle, report)}


def mutants(gold: str, oracle: dict, report: dict) -> list[dict]:
    """Semantic slips of what the reference design states (its derived oracle's elements and relations,
    found in the design by the parser's line numbers): a definition renamed throughout (the model stays
    consistent), a usage typed by another definition, a multiplicity changed, a relation statement
    dropped."""
    from dslbench.upstream import one_mutant_per_kind
    elements = oracle["elements"]
    defs = [e["path"].split("::")[-1] for e in elements if e["kind"].endswith(" def")]
    lines = gold.splitlines(keepends=True)
    line_of = {e["qname"]: e["line"] for e in report["elements"]}

    def own_line(n: int) -> str:
        """Line n of the design ("" when the parser's number is outside it)."""
        return lines[n - 1] if 0 < n <= len(lines) else ""

    def replaced(n: int, m: re.Match, new: str) -> str:
        """The design with the span m of line n replaced by new."""
        text = lines[n - 1]
        return "".join(lines[:n - 1] + [text[:m.start()] + new + text[m.end():]] + lines[n:])

    def word(name: str) -> str:
        return (r"(?<![\w'])" + re.escape(name) + r"(?![\w'])") if re.fullmatch(r"\w+", name) else re.escape(f"'{name}'")

    def renamed():
        for name in reversed(defs):
            new = re.sub(word(name), f"{name}Alt" if re.fullmatch(r"\w+", name) else f"'{name} Alt'", gold)
            yield f"definition {name} renamed throughout", new

    def retyped():
        for e in elements:
            t, usage = e.get("typed_by"), e["path"].split("::")[-1]
            others = [d for d in defs if d != t]
            n = line_of.get(e["path"], 0)
            m = re.search(word(usage) + r"\s*:\s*" + word(t), own_line(n)) \
                if t and others and re.fullmatch(r"\w+", usage) else None
            if m:
                other = others[0] if re.fullmatch(r"\w+", others[0]) else f"'{others[0]}'"
                yield f"{usage} typed by {others[0]} instead of {t}", replaced(n, m, f"{usage} : {other}")

    def multiplicity():
        for e in elements:
            n = line_of.get(e["path"], 0)
            m = re.search(r"\[(\d+)(\.\.(\d+|\*))?\]", own_line(n)) if "multiplicity" in e else None
            if m:
                upper = m.group(3)
                changed = f"[{m.group(1)}..{int(upper) + 1}]" if upper and upper.isdigit() else f"[{int(m.group(1)) + 1}]" \
                    if not m.group(2) else f"[{int(m.group(1)) + 1}..{upper}]"
                yield f"multiplicity {m.group(0)} -> {changed}", replaced(n, m, changed)

    def dropped():
        for r in report["relations"]:
            n = r["line"]
            if relation_spec(r) in oracle["relations"] and own_line(n) and whole_statement(n):
                yield f"relation dropped: {lines[n - 1].strip()[:60]}", "".join(lines[:n - 1] + lines[n:])
                return

    def whole_statement(n: int) -> bool:
        """Line n holds one whole statement: it ends one, and the code before it ended one too."""
        before = [re.sub(r"//.*", "", x).strip() for x in lines[:n - 1]]
        before = [x for x in before if x]
        return lines[n - 1].rstrip().endswith(";") and (not before or before[-1][-1] in ";{}")

    return one_mutant_per_kind(gold, [renamed(), retyped(), multiplicity(), dropped()])
