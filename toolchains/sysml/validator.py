"""SysML v2: syntax = the OMG textual grammar (sysmlpy's generated ANTLR parser) accepts the model;
semantic = our own dependency and semantic diagnostics over the parse tree (name resolution, typing of
usages by definitions, redefinition, port/connection consistency) plus the task's required elements
and relations. A SysML v2 pilot implementation or the syside CLI is preferred when it is on PATH."""
from __future__ import annotations

import fcntl
import functools
import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "run_sysml.py"
CACHE_DIR = HERE / ".dfa-cache"

# usage kind -> definition kinds it may be typed by (SysML v2 spec, 8.3: PartUsage by PartDefinition, ...)
TYPING = {"part": {"part"}, "item": {"item", "part"}, "port": {"port"}, "attribute": {"attribute", "enum"},
          "enum": {"enum"}, "action": {"action"}, "state": {"state"}, "requirement": {"requirement"},
          "constraint": {"constraint"}, "interface": {"interface"}, "connection": {"connection", "interface"},
          "flow": {"flow"}, "calc": {"calc"}, "verification": {"verification"}, "use case": {"use case"},
          "exhibit": {"state"}, "perform": {"action"}, "allocation": {"allocation"}, "occurrence": {"occurrence", "part", "item"}}
BUILTIN_FEATURES = {"start", "done", "entry", "terminate", "self", "this", "that"}
RELATION_KINDS = {"satisfy": ("requirement", "by"), "verify": ("requirement",), "connect": ("ends",),
                  "interface": ("ends",), "flow": ("from", "to"), "succession": ("first", "then"),
                  "transition": ("from", "to")}
ELEMENT_FIELDS = {"path", "kind", "typed_by", "conjugated", "multiplicity", "specializes", "redefines", "direction",
                  "value", "note"}
RELATION_FIELDS = {"kind", "requirement", "by", "ends", "typed_by", "item", "from", "to", "first", "then",
                   "trigger", "in", "note"}
ELEMENT_KINDS = {"package", "part", "item", "port", "attribute", "enum", "action", "state", "requirement",
                 "constraint", "interface", "connection", "flow", "calc", "verification", "use case", "subject",
                 "end", "ref", "occurrence", "exhibit", "perform", "transition", "objective", "allocation"}

V1_PATTERNS = [
    (re.compile(r"<<\s*\w+\s*>>|\u00ab\s*\w+\s*\u00bb"), "UML/SysML v1 stereotype ('<<block>>'): SysML v2 has no stereotypes; use `part def`, `port def`, ..."),
    (re.compile(r"^\s*(?:abstract\s+)?block\s+\w+", re.M), "SysML v1 'block': SysML v2 writes `part def Name { ... }`"),
    (re.compile(r"<\?xml|xmi:|<uml:|<packagedElement", re.I), "XMI/XML is not SysML v2 textual notation"),
    (re.compile(r"^\s*(?:value|valueType|flowPort|proxy\s+port|full\s+port|reference)\s+\w+", re.M),
     "SysML v1 property kind: SysML v2 uses `attribute`, `port`, `ref`, `part`"),
    (re.compile(r"^\s*(?:requirement|req)\s+\w+\s*\{\s*(?:id|text)\s*=", re.M),
     "SysML v1 requirement with id/text properties: SysML v2 uses `requirement def`/`requirement` with a doc comment and constraints"),
    (re.compile(r"^\s*(?:class|interface\s+block|constraint\s+block|activity|stateMachine|statemachine)\s+\w+", re.M),
     "UML/SysML v1 element kind: SysML v2 uses `part def`, `interface def`, `constraint def`, `action def`, `state def`"),
    (re.compile(r"\b(?:satisfy|verify|refine|deriveReqt)\s*\(", re.I), "SysML v1 dependency call style: SysML v2 writes `satisfy Req by part;`"),
]


def v1_hints(text: str) -> list[str]:
    hints = []
    for pattern, hint in V1_PATTERNS:
        m = pattern.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            hints.append(f"line {line}: version interference: {hint}")
    return hints


@functools.lru_cache(maxsize=1)
def library_index() -> dict:
    """Names declared by each package of the SysML v2 standard library shipped with sysmlpy, with the
    packages each one re-exports (`public import X::*`)."""
    spec = importlib.util.find_spec("sysmlpy")
    root = Path(spec.origin).parent / "library"
    packages: dict[str, dict] = {}
    decl = re.compile(r"\b(?:def|attribute|part|item|port|calc|constraint|action|state|enum|alias|feature|"
                      r"datatype|class|struct|assoc|function|predicate|behavior|requirement|occurrence|metaclass|"
                      r"abstract|ref|readonly|connection|interface|flow|view|viewpoint|rendering)\s+(?:def\s+)?"
                      r"(?:<'?([\w\u00b0\u00b5\u03a9\u2103]+)'?>\s*)?'?([A-Za-z_][\w]*)'?")
    for f in sorted(root.rglob("*.sysml")) + sorted(root.rglob("*.kerml")):
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", f.read_text(encoding="utf-8", errors="replace"), flags=re.S)
        m = re.search(r"package\s+'?([\w ]+?)'?\s*\{", text)
        if not m:
            continue
        names = set()
        for short, name in decl.findall(text):
            names.add(name)
            if short:
                names.add(short)
        packages[m.group(1)] = {"names": sorted(names),
                                "reexports": sorted(set(re.findall(r"public\s+import\s+([\w:]+?)::\*", text)))}
    return packages


def library_names(imported: list[str]) -> set[str]:
    idx = library_index()
    seen, names, todo = set(), set(), list(imported)
    while todo:
        pkg = todo.pop()
        if pkg in seen or pkg not in idx:
            continue
        seen.add(pkg)
        names |= set(idx[pkg]["names"])
        todo += idx[pkg]["reexports"]
    return names


@functools.lru_cache(maxsize=1)
def _sysmlpy_version() -> str:
    return importlib.metadata.version("sysmlpy")


def _seg(ref: str) -> str:
    """Drop qualification in each dotted segment: 'P::a.b' -> 'a.b'."""
    return ".".join(s.split("::")[-1].strip("'") for s in ref.replace(" ", "").split("."))


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


class Model:
    """The candidate's declarations (from the runner's report) with SysML v2 name resolution."""

    def __init__(self, report: dict):
        self.els = report["elements"]
        self.rels = report["relations"]
        self.imports = report["imports"]
        self.children: dict = {}
        for e in self.els:
            self.children.setdefault(e["parent"], []).append(e)
        self.by_qname = {}
        for e in self.els:
            self.by_qname.setdefault(e["qname"], e)
        self.by_id = {e["id"]: e for e in self.els}
        imported = [i["namespace"].split("::*")[0] for i in self.imports]
        self.lib_imported = library_names([p for p in imported])
        self.lib_all = library_names(list(library_index()))
        self.lib_packages = set(library_index())
        # Name resolution recurses through enclosing scopes and generalizations; without these caches
        # nested specializations cost 2^depth (a 26-deep model ran for minutes on the host).
        self._resolved: dict = {}
        self._generals: dict = {}

    def parent(self, e):
        return self.by_id.get(e["parent"])

    def members(self, e):
        return self.children.get(e["id"] if e else None, [])

    def named(self, items, name):
        return [x for x in items if x["name"] == name or x["short_name"] == name]

    def generals(self, e, seen=None):
        """Definitions e specializes or is typed by (resolved in the model), transitively."""
        if seen is None:
            key = e["id"]
            if key not in self._generals:
                self._generals[key] = []          # a cycle back to e while computing it sees no generals
                self._generals[key] = self.generals(e, set())
            return self._generals[key]
        out = []
        refs = [t["name"] for t in e["typed_by"]] + e["specializes"] + e["subsets"] + e["redefines"]
        for ref in refs:
            target = self.resolve_qualified(ref, self.parent(e))
            if isinstance(target, dict) and target["id"] not in seen:
                seen.add(target["id"])
                out.append(target)
                out += self.generals(target, seen)
        return out

    def features(self, e):
        feats = list(self.members(e))
        for g in self.generals(e):
            feats += self.members(g)
        return feats

    def imported_members(self, scope):
        out = []
        for imp in self.imports:
            if imp["scope"] != (scope["qname"] if scope else ""):
                continue
            ns = imp["namespace"]
            if ns.endswith("::*"):
                target = self.by_qname.get(ns[:-3]) or self._find_anywhere(ns[:-3])
                if isinstance(target, dict):
                    out += self.members(target)
            else:
                target = self.by_qname.get(ns) or self._find_anywhere(ns)
                if isinstance(target, dict):
                    out.append(target)
        return out

    def _find_anywhere(self, qn):
        for e in self.els:
            if e["qname"] == qn or e["qname"].endswith("::" + qn):
                return e
        return None

    def resolve_name(self, name, scope):
        """A simple name seen from scope: own and inherited members, then enclosing namespaces, imports, root."""
        key = (name, scope["id"] if scope else None)
        if key not in self._resolved:
            self._resolved[key] = None            # a resolution that needs itself does not resolve
            self._resolved[key] = self._resolve_name(name, scope)
        return self._resolved[key]

    def _resolve_name(self, name, scope):
        s = scope
        while True:
            found = self.named(self.features(s) if s else self.members(None), name)
            if found:
                return found[0]
            found = self.named(self.imported_members(s), name)
            if found:
                return found[0]
            if s is None:
                break
            s = self.parent(s)
        if name in self.lib_imported or name in BUILTIN_FEATURES:
            return "library"
        if name in self.lib_packages:
            return "library"
        return None

    def resolve_qualified(self, ref, scope):
        parts = [p.strip("'") for p in ref.replace(" ", "").lstrip("~").split("::")]
        if parts[0] in self.lib_packages:
            return "library"
        target = self.resolve_name(parts[0], scope)
        for p in parts[1:]:
            if not isinstance(target, dict):
                return target
            found = self.named(self.features(target), p)
            target = found[0] if found else None
        return target

    def resolve_chain(self, ref, scope):
        """'a.b.c' (each part possibly qualified): returns (element|'library'|None, the failing prefix)."""
        segs = ref.replace(" ", "").split(".")
        target = self.resolve_qualified(segs[0], scope)
        done = segs[0]
        for s in segs[1:]:
            if target is None or target == "library":
                return target, done
            found = self.named(self.features(target), s.split("::")[-1])
            if not found:
                return None, f"{done}.{s}"
            target = found[0]
            done = f"{done}.{s}"
        return target, done

    def scope_of_rel(self, rel):
        return self.by_qname.get(rel["scope"]) if rel["scope"] else None


def _label(e) -> str:
    return f"{e['kind']}{' def' if e['def'] else ''} '{e['name'] or '<anonymous>'}'"


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
            elif isinstance(target, dict) and (not target["def"] or target["kind"] != e["kind"]) \
                    and e["kind"] not in ("item", "occurrence"):
                out.append(f"line {e['line']}: {_label(e)} specializes {_label(target)}; a {e['kind']} def "
                           f"must specialize a {e['kind']} def")
        for ref in e["subsets"]:
            target, at = m.resolve_chain(ref, scope)
            if target is None:
                out.append(f"line {e['line']}: {_label(e)} subsets undefined feature '{at}'")
        owner = m.parent(e)
        for ref in e["redefines"]:
            if owner is None:
                continue
            inherited = [f for g in m.generals(owner) for f in m.members(g)]
            unknown_general = any(m.resolve_qualified(r, m.parent(owner)) in (None, "library")
                                  for r in [t["name"] for t in owner["typed_by"]] + owner["specializes"])
            base = ref.split("::")[-1].split(".")[-1]
            if not m.named(inherited, base) and not unknown_general:
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
                if at != ref.replace(" ", "").split(".")[0]:
                    prev = at.rsplit(".", 1)[0]
                    out.append(f"line {r['line']}: {r['kind']} {role} '{ref}': '{prev}' has no feature "
                               f"'{at.rsplit('.', 1)[1]}'")
                else:
                    out.append(f"line {r['line']}: {r['kind']} {role} '{ref}' does not resolve to any element "
                               f"visible here")
            elif isinstance(target, dict) and r["kind"] in ("satisfy", "verify") and role == "requirement" \
                    and target["kind"] != "requirement":
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


def _rel_matches(r, spec) -> bool:
    k = spec["kind"]
    scope = r["scope"]
    while scope.endswith("::<anonymous>"):      # e.g. a verify inside an objective
        scope = scope[:-len("::<anonymous>")]
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


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # the SysML v2 parser
    SEMANTIC_FAIL = "oracle_mismatch"  # dependency and semantic checks

    def _preferred(self):
        """A real SysML v2 implementation on PATH wins: syside CLI, then the OMG pilot's launcher."""
        for exe in ("syside", "sysml-pilot", "sysmlv2"):
            path = shutil.which(exe)
            if path:
                return exe, path
        return None

    def probe(self) -> Probe:
        pref = self._preferred()
        if pref:
            exe, path = pref
            try:
                v = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
                version = (v.stdout or v.stderr).strip().splitlines()[0] if (v.stdout or v.stderr).strip() else exe
            except (OSError, subprocess.SubprocessError) as e:
                return Probe(self.dsl, exe, "", False, f"{exe} on PATH but not runnable: {e}")
            return Probe(self.dsl, exe, version, True, dialect=self.card["dialect"])
        try:
            version = importlib.metadata.version("sysmlpy")
            importlib.metadata.version("antlr4-python3-runtime")
        except importlib.metadata.PackageNotFoundError as e:
            return Probe(self.dsl, self.card["toolchain"], "", False, f"PyPI package '{e.name}' is not installed")
        self._ensure_cache()
        return Probe(self.dsl, self.card["toolchain"],
                     f"sysmlpy {version} (ANTLR grammar of the OMG SysML v2 textual notation, "
                     f"antlr4 runtime {importlib.metadata.version('antlr4-python3-runtime')})", True,
                     dialect=self.card["dialect"])

    def _ensure_cache(self) -> None:
        """Prepared read-only DFA cache: built once per install from our gold programs (never model output)."""
        if list(CACHE_DIR.glob("dfa-*.pkl")):
            return
        try:
            CACHE_DIR.mkdir(exist_ok=True)
            with open(CACHE_DIR / ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not list(CACHE_DIR.glob("dfa-*.pkl")):
                    subprocess.run([sys.executable, str(HERE / "warm_cache.py")], capture_output=True, timeout=600)
        except (OSError, subprocess.SubprocessError):
            pass  # only speed depends on it

    def check_oracle(self, task):
        problems = []
        o = task.oracle
        known = {"elements", "relations", "imports"}
        for k in o:
            if k not in known:
                problems.append((k, f"unknown oracle field (allowed: {', '.join(sorted(known))})"))
        if not o.get("elements") and not o.get("relations"):
            problems.append(("elements", "give at least one required element or relation"))
        for i, e in enumerate(o.get("elements", []) or []):
            if not isinstance(e, dict):
                problems.append((f"elements[{i}]", "expected a mapping"))
                continue
            for k in e:
                if k not in ELEMENT_FIELDS:
                    problems.append((f"elements[{i}].{k}", f"unknown field (allowed: {', '.join(sorted(ELEMENT_FIELDS))})"))
            if not isinstance(e.get("path"), str) or not e.get("path"):
                problems.append((f"elements[{i}].path", "required: qualified name like 'Pkg::Vehicle::engine'"))
            kind = e.get("kind")
            base = kind[:-4] if isinstance(kind, str) and kind.endswith(" def") else kind
            if base not in ELEMENT_KINDS:
                problems.append((f"elements[{i}].kind", f"'{kind}' is not a SysML v2 element kind "
                                                        f"({', '.join(sorted(ELEMENT_KINDS))}, optionally + ' def')"))
            for k in ("typed_by", "redefines", "direction", "value", "multiplicity"):
                if k in e and not isinstance(e[k], (str, int)):
                    problems.append((f"elements[{i}].{k}", "expected a string"))
            if "direction" in e and e["direction"] not in ("in", "out", "inout"):
                problems.append((f"elements[{i}].direction", "must be in, out or inout"))
            if "conjugated" in e and not isinstance(e["conjugated"], bool):
                problems.append((f"elements[{i}].conjugated", "expected true or false"))
            if "specializes" in e and not (isinstance(e["specializes"], list) and all(isinstance(x, str) for x in e["specializes"])):
                problems.append((f"elements[{i}].specializes", "expected a list of names"))
        for i, r in enumerate(o.get("relations", []) or []):
            if not isinstance(r, dict):
                problems.append((f"relations[{i}]", "expected a mapping"))
                continue
            for k in r:
                if k not in RELATION_FIELDS:
                    problems.append((f"relations[{i}].{k}", f"unknown field (allowed: {', '.join(sorted(RELATION_FIELDS))})"))
            kind = r.get("kind")
            if kind not in RELATION_KINDS:
                problems.append((f"relations[{i}].kind", f"'{kind}' is not one of {', '.join(RELATION_KINDS)}"))
                continue
            for k in RELATION_KINDS[kind]:
                if k not in r:
                    problems.append((f"relations[{i}].{k}", f"required for a {kind} relation"))
            if "ends" in r and not (isinstance(r["ends"], list) and len(r["ends"]) == 2
                                    and all(isinstance(x, str) for x in r["ends"])):
                problems.append((f"relations[{i}].ends", "expected two feature paths like 'tank.outlet'"))
        for i, ns in enumerate(o.get("imports", []) or []):
            if not isinstance(ns, str) or "::" not in ns and not ns.isidentifier():
                problems.append((f"imports[{i}]", "expected a namespace like 'ISQ::*'"))
        return problems

    # --- the two levels ---------------------------------------------------------------------
    def _parse(self, work: Path):
        caches = sorted(CACHE_DIR.glob("dfa-*.pkl"))
        args = [self.file_name, "report.json"]
        if caches:
            args += [str(caches[-1]), _sysmlpy_version()]
        return self.run_runner([RUNNER], args, work)

    def _external(self, work: Path):
        exe, _ = self._preferred()
        cmd = [exe, "check", self.file_name] if exe == "syside" else [exe, self.file_name]
        return self.run(cmd, work, memory_mb=None)

    def syntax(self, program, task, work):
        pref = self._preferred()
        if pref:
            result = self._external(work)
            if result.returncode != 0:
                first = (result.stdout + result.stderr).strip().splitlines()
                return self.verdict("fail", (first[0] if first else f"{pref[0]} exit {result.returncode}")[:300], result)
        result, report = self._parse(work)
        if result.timed_out:
            return self.verdict("fail", "the parser timed out", result)
        if report is None:
            return self.verdict("error", f"SysML runner failed (exit {result.returncode})", result)
        if not report["ok"]:
            hints = v1_hints(program)
            msg = report["errors"][0][:240]
            more = f" (+{len(report['errors']) - 1} more)" if len(report["errors"]) > 1 else ""
            return self.verdict("fail", msg + more + ("; " + hints[0] if hints else ""), result)
        return self.verdict("pass", f"parsed: {len(report['elements'])} elements, {len(report['relations'])} relations",
                            result)

    def semantic(self, program, task, work):
        path = work / "report.json"
        result = None
        if not path.exists():
            result, report = self._parse(work)
            if report is None or not report["ok"]:
                return self.verdict("error", "the SysML runner did not produce a model", result)
        report = json.loads(path.read_text())
        m = Model(report)
        problems = [(d, "") for d in dependency_diagnostics(m)] + oracle_diagnostics(m, task.oracle)
        if problems:
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            log = "\n".join(d + (f" [{e}]" if e else "") for d, e in problems)
            expected = "; ".join(e for _, e in problems[:3] if e)
            from dslbench.toolchains import LevelVerdict
            return LevelVerdict("fail", "; ".join(d for d, _ in problems[:3]) + more, "semantic checks over the parse tree",
                                log, expected=expected)
        from dslbench.toolchains import LevelVerdict
        n_el = len(task.oracle.get("elements", []))
        n_rel = len(task.oracle.get("relations", []))
        return LevelVerdict("pass", f"names resolve; {n_el} required elements and {n_rel} relations present",
                            "semantic checks over the parse tree", "")


# --- SysMBench import --------------------------------------------------------------------------

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
    for i, rec in enumerate(data):
        where = f"SysMBench record {i}" + (f" (label {rec.get('label')!r})" if isinstance(rec, dict) else "")
        if not isinstance(rec, dict):
            raise ValueError(f"{where}: expected an object with nl, design, label")
        for key in ("nl", "design"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise ValueError(f"{where}: field '{key}' must be a non-empty string")
        if not isinstance(rec.get("label"), (str, int)) or not str(rec["label"]).strip():
            raise ValueError(f"{where}: field 'label' must be a non-empty string or number")
    return data


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


def _import_upstream(tc: "Validator", source: Path) -> list[dict]:
    from dslbench.sandbox import new_workdir
    records = _upstream_records(Path(source))
    tasks, skipped = [], []
    for i, rec in enumerate(records):
        work = new_workdir()
        try:
            (work / tc.file_name).write_text(rec["design"], encoding="utf-8")
            result, report = tc._parse(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        uid = str(rec.get("id", i))
        if report is None or not report["ok"]:
            why = report["errors"][0] if report else f"runner exit {result.returncode}"
            skipped.append(f"record {i} (label {rec['label']!r}): reference design does not parse: {why}")
            continue
        oracle = oracle_from_report(report)
        if not oracle["elements"] and not oracle["relations"]:
            skipped.append(f"record {i} (label {rec['label']!r}): no named elements to check")
            continue
        n = len(oracle["elements"]) + len(oracle["relations"])
        kinds = sorted({e["kind"] for e in oracle["elements"]} | {r["kind"] for r in oracle["relations"]})
        tasks.append({
            "id": f"sysml-sysmbench-{i:04d}", "dsl": "sysml", "domain": "Model-Driven Engineering",
            "title": f"SysMBench {rec['label']}", "difficulty": "easy" if n < 8 else "medium" if n < 20 else "hard",
            "constructs": kinds, "failure_modes": [],
            "instruction": rec["nl"].strip() + "\n\nWrite the model in SysML v2 textual notation. Use exactly the "
                           "package and element names of the reference design (they are checked).",
            "context": {}, "gold": rec["design"], "oracle": oracle,
            "provenance": {"source": "upstream", "benchmark": "SysMBench", "upstream_id": uid,
                           "label": str(rec["label"]), "licence": "see the SysMBench release"},
            "split": "test", "mutants": []})
    tc.last_import_skipped = skipped
    return tasks


def _validator_import_upstream(self, source: Path) -> list[dict]:
    """SysMBench (dataset.json: [{nl, design, label}]) -> our tasks. The reference design becomes the
    gold and the oracle is derived from it; records whose design does not parse are skipped (reasons in
    `self.last_import_skipped`)."""
    return _import_upstream(self, source)


Validator.import_upstream = _validator_import_upstream
