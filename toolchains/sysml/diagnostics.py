"""SysML v2: the semantic level's checks over the model. Dependency diagnostics (unresolved names,
wrong kinds of typing, dangling relations, port consistency) and the differences from the task's oracle
(required elements and relations).
"""
from __future__ import annotations

from .model import Model, _compact, _seg, _split, implicit_feature_names

# usage kind -> definition kinds it may be typed by (SysML v2 spec, 8.3: PartUsage by PartDefinition, ...)
TYPING = {"part": {"part"}, "item": {"item", "part"}, "port": {"port"}, "attribute": {"attribute", "enum"},
          "enum": {"enum"}, "action": {"action"}, "state": {"state"}, "requirement": {"requirement"},
          "constraint": {"constraint"}, "interface": {"interface"}, "connection": {"connection", "interface"},
          "flow": {"flow"}, "calc": {"calc"}, "verification": {"verification"}, "use case": {"use case"},
          "exhibit": {"state"}, "perform": {"action"}, "allocation": {"allocation"}, "occurrence": {"occurrence", "part", "item"}}


# what satisfy and verify may name (SysML v2: concerns, viewpoints and objectives are requirement usages)
REQUIREMENT_KINDS = {"requirement", "concern", "viewpoint", "objective"}


def _mult(text: str) -> str:
    """A multiplicity's canonical text: a range whose bounds are equal is that single bound ([2..2] is
    [2]) and [0..*] is [*] (KerML: a single bound n means n..n, and * alone means 0..*)."""
    m = text.replace(" ", "").strip("[]")
    lo, sep, hi = m.partition("..")
    if sep and lo == hi:
        return lo
    if sep and lo == "0" and hi == "*":
        return "*"
    return m



def _label(e) -> str:
    return f"{e['kind']}{' def' if e['def'] else ''} '{e['name'] or '<anonymous>'}'"


# A definition may specialize one of its own kind or of a kind it is a kind of (SysML v2: every part is
# an item, every item an occurrence); item, occurrence and individual definitions are not checked (the
# SysML v2 release's own examples write `individual def TestSystem :> MassVerificationSystem`, a part def);
# an enumeration is an attribute definition (the release's `enum def DiameterChoice :> ISQ::LengthValue`).
SPECIALIZABLE = {"part": {"part", "item", "occurrence"}, "enum": {"enum", "attribute"}}


def dependency_diagnostics(m: Model) -> list[str]:
    """Language-level problems: unresolved names, wrong kinds of typing, dangling relations."""
    out = []
    for e in m.els:
        scope = m.parent(e)
        for t in e["typed_by"]:
            target = m.resolve_qualified(t["name"], scope)
            if target is None:
                hint = ""
                base = t["name"].split("::")[-1]
                if base in m.lib_all:
                    hint = " (a standard library name: import its package, e.g. `private import ScalarValues::*;` or `ISQ::*`)"
                out.append(f"line {e['line']}: {_label(e)} typed by undefined definition '{t['name']}'{hint}")
            elif isinstance(target, dict):
                allowed = TYPING.get(e["kind"])
                if not target["def"]:
                    out.append(f"line {e['line']}: {_label(e)} typed by '{t['name']}', which is a {target['kind']} "
                               f"usage (line {target['line']}), not a definition")
                elif allowed and target["kind"] not in allowed:
                    out.append(f"line {e['line']}: {_label(e)} typed by {_label(target)} (line {target['line']}); "
                               f"a {e['kind']} must be typed by a {' or '.join(sorted(allowed))} def")
                if t["conjugated"] and target["kind"] != "port":
                    out.append(f"line {e['line']}: conjugation '~{t['name']}' applies to port definitions only")
        for ref in e["specializes"]:
            target = m.resolve_qualified(ref, scope)
            if target is None:
                out.append(f"line {e['line']}: {_label(e)} specializes undefined '{ref}'")
            elif isinstance(target, dict) and (not target["def"] or target["kind"] not in SPECIALIZABLE.get(e["kind"], {e["kind"]})) \
                    and e["kind"] not in ("item", "occurrence", "individual"):
                kinds = " or ".join(sorted(SPECIALIZABLE.get(e["kind"], {e["kind"]}), key=lambda k: (k != e["kind"], k)))
                out.append(f"line {e['line']}: {_label(e)} specializes {_label(target)}; a {e['kind']} def "
                           f"must specialize a {kinds} def")
        for ref in e["subsets"]:
            target, at = m.resolve_chain(ref, scope, exclude=e)
            if target is None and at not in implicit_feature_names():   # `ref :> annotatedElement` in a metadata def
                out.append(f"line {e['line']}: {_label(e)} subsets undefined feature '{at}'")
        owner = m.parent(e)
        for ref in e["redefines"]:
            if owner is None:
                continue
            inherited = [f for g in m.generals(owner) for f in m.members(g)]
            unknown_general = any(m.resolve_qualified(r, m.parent(owner)) in (None, "library")
                                  for r in [t["name"] for t in owner["typed_by"]] + owner["specializes"])
            base = ref.split("::")[-1].split(".")[-1]
            # SysML v2 resolves a redefined name like any other (inherited, then enclosing namespaces and
            # imports: `ref part :>> driver;` in the release's own sequence example) and every element
            # inherits its library base type's features; a name found nowhere is the error.
            if not m.named(inherited, base) and not unknown_general \
                    and m.resolve_chain(ref, owner, exclude=e)[0] is None and base not in implicit_feature_names():
                gens = [g["name"] for g in m.generals(owner)]
                where = f"its generalizations ({', '.join(gens)})" if gens else "no generalization (add `:>` or a typing)"
                out.append(f"line {e['line']}: {_label(e)} redefines '{ref}', but {_label(owner)} inherits no feature "
                           f"'{base}' from {where}")
        if owner is not None and owner["kind"] == "requirement" and e["kind"] in ("ref", "attribute") and e["name"] in ("id", "text") and e["value"]:
            out.append(f"line {e['line']}: version interference: SysML v1 requirement property '{e['name']} = ...'; "
                       f"in SysML v2 the requirement text is a doc comment and the id a short name `<'R1'>`")
    for r in m.rels:
        scope = m.scope_of_rel(r)
        refs = []
        if r["kind"] in ("satisfy", "verify"):
            refs = [("requirement", r["requirement"])] + ([("subject", r["by"])] if r.get("by") else [])
        elif r["kind"] in ("connect", "interface", "flow", "bind", "allocate"):
            refs = [("end", x) for x in r["ends"]]
        elif r["kind"] == "succession":
            refs = [("first", r["first"]), ("then", r["then"])]
        elif r["kind"] == "transition":
            refs = [("source", r["source"]), ("target", r["target"])] + (
                [("trigger", r["trigger"])] if r.get("trigger") else [])
        for role, ref in refs:
            if not ref:
                continue
            target, at = m.resolve_chain(ref, scope)
            if target is None:
                if at != _split(_compact(ref), ".")[0]:
                    prev = at.rsplit(".", 1)[0]
                    out.append(f"line {r['line']}: {r['kind']} {role} '{ref}': '{prev}' has no feature "
                               f"'{at.rsplit('.', 1)[1]}'")
                else:
                    out.append(f"line {r['line']}: {r['kind']} {role} '{ref}' does not resolve to any element "
                               f"visible here")
            elif isinstance(target, dict) and r["kind"] in ("satisfy", "verify") and role == "requirement" \
                    and target["kind"] not in REQUIREMENT_KINDS:
                out.append(f"line {r['line']}: {r['kind']} names {_label(target)}, which is not a requirement")
        for t in r.get("typed_by", []):
            target = m.resolve_qualified(t, scope)
            if target is None:
                out.append(f"line {r['line']}: {r['kind']} typed by undefined definition '{t}'")
        if r["kind"] in ("connect", "interface") and len(r["ends"]) == 2:
            out += port_consistency(m, r, scope)
    return out


def _directed(m: Model, port_def) -> list[str]:
    return [f"{f['direction']} {f['name']}" for f in m.features(port_def) if f["direction"]]


def port_consistency(m: Model, r, scope) -> list[str]:
    """Two sibling parts' ports typed by the same port def with directed features must be conjugate."""
    ends = []
    for ref in r["ends"]:
        target, _ = m.resolve_chain(ref, scope)
        if not isinstance(target, dict) or target["kind"] != "port" or not target["typed_by"]:
            return []
        t = target["typed_by"][0]
        pdef = m.resolve_qualified(t["name"], m.parent(target))
        if not isinstance(pdef, dict):
            return []
        ends.append((ref, pdef, t["conjugated"]))
    (a, pa, ca), (b, pb, cb) = ends
    if pa["id"] != pb["id"] or "." not in a or "." not in b:
        return []
    directed = _directed(m, pa)
    if directed and ca == cb:
        return [f"line {r['line']}: {r['kind']} {a} to {b}: both ends are {'~' if ca else ''}{pa['name']} ports "
                f"with the same directions ({', '.join(directed)}); one end must be conjugated (~{pa['name']})"]
    return []


def oracle_diagnostics(m: Model, oracle: dict) -> list[tuple[str, str]]:
    """Differences from the task's oracle as (what the model does, what the oracle expects). The first
    part is fed back to the model: it names the model's own elements, never the oracle's targets."""
    out = []
    for spec in oracle.get("elements", []):
        path = spec["path"]
        e = m.by_qname.get(path)
        want_def = spec["kind"].endswith(" def")
        kind = spec["kind"][:-4] if want_def else spec["kind"]
        if e is None:
            name = path.split("::")[-1]
            elsewhere = [x for x in m.els if x["name"] == name]
            hint = f" (line {elsewhere[0]['line']}: '{elsewhere[0]['qname']}' is not where it is needed)" \
                if elsewhere else ""
            out.append((f"a required {spec['kind']} is missing{hint}", f"expected {spec['kind']} '{path}'"))
            continue
        at = f"line {e['line']}: "
        if e["kind"] != kind or e["def"] != want_def:
            out.append((f"{at}'{path}' is a {e['kind']}{' def' if e['def'] else ''} (wrong kind)",
                        f"expected '{path}' to be a {spec['kind']}"))
            continue
        if "typed_by" in spec:
            got = [t["name"].split("::")[-1] for t in e["typed_by"]]
            if spec["typed_by"] not in got:
                out.append((f"{at}{_label(e)} is typed by {' & '.join(got) or 'nothing'} (wrong type)",
                            f"expected {_label(e)} typed by {spec['typed_by']}"))
        if "conjugated" in spec:
            got = any(t["conjugated"] for t in e["typed_by"])
            if got != spec["conjugated"]:
                typ = e["typed_by"][0]["name"] if e["typed_by"] else "its type"
                out.append((f"{at}{_label(e)} is {'' if got else 'not '}conjugated (wrong)",
                            f"expected {_label(e)} {'typed by ~' + typ if spec['conjugated'] else 'with no ~ on ' + typ}"))
        if "multiplicity" in spec and _mult(e["multiplicity"]) != _mult(str(spec["multiplicity"])):
            out.append((f"{at}{_label(e)} has multiplicity [{e['multiplicity'] or 'none'}] (wrong multiplicity)",
                        f"expected {_label(e)} with multiplicity [{_mult(str(spec['multiplicity']))}]"))
        if "specializes" in spec:
            got = [s.split("::")[-1] for s in e["specializes"] + e["subsets"]]
            for want in spec["specializes"]:
                if want not in got:
                    out.append((f"{at}{_label(e)} does not specialize a required definition (specializes: "
                                f"{', '.join(got) or 'nothing'})", f"expected {_label(e)} to specialize {want}"))
        if "redefines" in spec:
            got = [s.split("::")[-1].split(".")[-1] for s in e["redefines"]]
            if spec["redefines"] not in got:
                out.append((f"{at}{_label(e)} does not redefine the required feature (redefines: "
                            f"{', '.join(got) or 'nothing'})", f"expected {_label(e)} to redefine {spec['redefines']}"))
        if "direction" in spec and e["direction"] != spec["direction"]:
            out.append((f"{at}{_label(e)} has direction '{e['direction'] or 'none'}' (wrong direction)",
                        f"expected {_label(e)} with direction '{spec['direction']}'"))
        if "value" in spec and e["value"].replace(" ", "") != str(spec["value"]).replace(" ", ""):
            out.append((f"{at}{_label(e)} has value '{e['value'] or 'none'}' (wrong value)",
                        f"expected {_label(e)} with value '{spec['value']}'"))
    for spec in oracle.get("relations", []):
        if not any(_rel_matches(r, spec) for r in m.rels):
            out.append((f"a required {spec['kind']} is missing{_near(m, spec)}", f"expected {_describe(spec)}"))
    for ns in oracle.get("imports", []):
        if not any(i["namespace"].replace(" ", "") == ns for i in m.imports):
            out.append(("a required import is missing", f"expected `import {ns};`"))
    return out


def named_scope(scope: str) -> str:
    """The nearest named owner of a relation's scope (a verify inside an objective is its requirement's)."""
    while scope.endswith("::<anonymous>"):
        scope = scope[:-len("::<anonymous>")]
    return scope


def _rel_matches(r, spec) -> bool:
    k = spec["kind"]
    scope = named_scope(r["scope"])
    if "in" in spec and not (scope == spec["in"] or scope.endswith("::" + spec["in"])):
        return False
    if k in ("satisfy", "verify"):
        return r["kind"] == k and _seg(r["requirement"]) == spec["requirement"] and \
            ("by" not in spec or _seg(r.get("by", "")) == spec["by"]) and not r.get("negated")
    if k in ("connect", "interface"):
        if r["kind"] not in (("connect", "interface") if k == "connect" else ("interface",)):
            return False
        if "typed_by" in spec and spec["typed_by"] not in [t.split("::")[-1] for t in r.get("typed_by", [])]:
            return False
        return [_seg(x) for x in r["ends"]] == spec["ends"] or (
            not spec.get("ordered") and sorted(_seg(x) for x in r["ends"]) == sorted(spec["ends"]))
    if k == "flow":
        if r["kind"] != "flow" or [_seg(x) for x in r["ends"]] != [spec["from"], spec["to"]]:
            return False
        return "item" not in spec or r["item"].split("::")[-1] == spec["item"]
    if k == "succession":
        return r["kind"] == "succession" and _seg(r["first"]) == spec["first"] and _seg(r["then"]) == spec["then"]
    if k == "transition":
        return r["kind"] == "transition" and _seg(r["source"]) == spec["from"] and _seg(r["target"]) == spec["to"] \
            and ("trigger" not in spec or _seg(r.get("trigger", "")) == spec["trigger"])
    return False


def _describe(spec) -> str:
    k = spec["kind"]
    where = f" in {spec['in']}" if "in" in spec else ""
    if k == "satisfy":
        return f"`satisfy {spec['requirement']}{' by ' + spec['by'] if 'by' in spec else ''};`{where}"
    if k == "verify":
        return f"`verify {spec['requirement']};`{where}"
    if k in ("connect", "interface"):
        via = f" : {spec['typed_by']}" if "typed_by" in spec else ""
        return f"{k}{via} between {spec['ends'][0]} and {spec['ends'][1]}{where}"
    if k == "flow":
        return f"flow{' of ' + spec['item'] if 'item' in spec else ''} from {spec['from']} to {spec['to']}{where}"
    if k == "succession":
        return f"succession first {spec['first']} then {spec['then']}{where}"
    return (f"transition from {spec['from']} to {spec['to']}"
            f"{' accepting ' + spec['trigger'] if 'trigger' in spec else ''}{where}")


def _near(m: Model, spec) -> str:
    same = [r for r in m.rels if r["kind"] == spec["kind"] or (spec["kind"] == "connect" and r["kind"] == "interface")]
    if not same:
        return f" (the model has no {spec['kind']})"
    r = same[0]
    if r["kind"] in ("satisfy", "verify"):
        got = f"{r['kind']} {r['requirement']}{' by ' + r['by'] if r.get('by') else ''}"
    elif r["kind"] == "succession":
        got = f"first {r['first']} then {r['then']}"
    elif r["kind"] == "transition":
        got = f"{r['source']} -> {r['target']}{' accept ' + r['trigger'] if r.get('trigger') else ''}"
    else:
        got = " to ".join(r.get("ends", []))
    return f" (line {r['line']} has {got} in {r['scope'] or 'the root'})"

