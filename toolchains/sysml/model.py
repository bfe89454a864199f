"""SysML v2: the candidate's model (the runner's report of its declarations) with SysML v2 name
resolution: own and inherited members, enclosing namespaces, imports, and the standard library names
shipped with sysmlpy.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

BUILTIN_FEATURES = {"start", "done", "entry", "terminate", "self", "this", "that"}


def _library_root() -> Path:
    return Path(importlib.util.find_spec("sysmlpy").origin).parent / "library"


def _library_text(f: Path) -> str:
    """A library file without its comments."""
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", f.read_text(encoding="utf-8", errors="replace"), flags=re.S)


@functools.lru_cache(maxsize=1)
def library_index() -> dict:
    """Names declared by each package of the SysML v2 standard library shipped with sysmlpy, with the
    packages each one re-exports (`public import X::*`)."""
    root = _library_root()
    packages: dict[str, dict] = {}
    decl = re.compile(r"\b(?:def|attribute|part|item|port|calc|constraint|action|state|enum|alias|feature|"
                      r"datatype|class|struct|assoc|function|predicate|behavior|requirement|occurrence|metaclass|"
                      r"abstract|ref|readonly|connection|interface|flow|view|viewpoint|rendering)\s+(?:def\s+)?"
                      r"(?:<'?([\w\u00b0\u00b5\u03a9\u2103]+)'?>\s*)?'?([A-Za-z_][\w]*)'?")
    for f in sorted(root.rglob("*.sysml")) + sorted(root.rglob("*.kerml")):
        text = _library_text(f)
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


@functools.lru_cache(maxsize=1)
def implicit_feature_names() -> frozenset:
    """Features every usage and definition inherits implicitly from the library's semantic base types
    (Occurrence::localClock, Flow::payload, Metaobject::annotatedElement, UseCase::start, ...): the
    feature names declared in the kernel and systems packages that model semantics, not in the
    function, value and quantity packages a model must import."""
    root = _library_root()
    files = [f for f in sorted((root / "kernel").glob("*.kerml"))
             if not f.stem.endswith(("Functions", "Values")) and f.stem not in ("Collections", "KerML")]
    files += [f for f in sorted((root / "systems").glob("*.sysml")) if f.stem != "SysML"]
    feature = re.compile(r"\b(?:feature|ref|part|item|port|action|state|attribute|occurrence|subject|actor|"
                         r"stakeholder|end|event|message|connection|flow|calc|constraint|requirement|objective|"
                         r"in|out|inout|return)\s+(?:all\s+|def\s+)?(?:feature\s+)?'?([A-Za-z_]\w*)'?")
    keywords = {"redefines", "subsets", "references", "all", "def", "feature", "ordered", "nonunique"}
    names = set()
    for f in files:
        names |= set(feature.findall(_library_text(f))) - keywords
    return frozenset(names)


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



def _compact(ref: str) -> str:
    """The reference without whitespace, except inside a quoted name ('Systems Engineer')."""
    parts = re.split(r"('[^']*')", ref)
    return "".join(p if i % 2 else re.sub(r"\s+", "", p) for i, p in enumerate(parts))


def _split(ref: str, sep: str) -> list[str]:
    """ref split at `sep` ('.' or '::') outside quoted names."""
    out, cur, i = [], "", 0
    while i < len(ref):
        if ref[i] == "'":
            j = ref.find("'", i + 1)
            j = len(ref) if j < 0 else j + 1
            cur, i = cur + ref[i:j], j
        elif ref.startswith(sep, i):
            out.append(cur)
            cur, i = "", i + len(sep)
        else:
            cur, i = cur + ref[i], i + 1
    return out + [cur]


def _seg(ref: str) -> str:
    """Drop qualification in each dotted segment: 'P::a.b' -> 'a.b'."""
    return ".".join(_split(s, "::")[-1].strip("'") for s in _split(_compact(ref), "."))



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
        # membership imports of library elements (`private import ScalarValues::Natural;`)
        self.lib_imported |= {_split(p, "::")[-1].strip("'") for p in imported
                              if "::" in p and _split(p, "::")[0].strip("'") in library_index()}
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
        targets = [self.resolve_chain(ref, self.parent(e), exclude=e)[0] for ref in refs]
        if (e.get("portion") or e.get("variant")) and self.parent(e):
            targets.append(self.parent(e))
        for target in targets:
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

    def imported_members(self, scope, public_only=False, seen=None):
        """Members that scope's imports make visible, with what the imported namespaces re-export
        (`public import`), transitively."""
        seen = set() if seen is None else seen
        key = scope["qname"] if scope else ""
        if key in seen:
            return []
        seen.add(key)
        out = []
        for imp in self.imports:
            if imp["scope"] != key or (public_only and not imp.get("public")):
                continue
            # qualified names are kept unquoted: `import 'Part Definitions'::*` names Part Definitions
            ns = "::".join(p.strip("'") for p in _split(_compact(imp["namespace"]), "::"))
            wildcard = ns.endswith("::*") or ns.endswith("::**")
            base = ns.rsplit("::", 1)[0] if wildcard else ns
            target = self.by_qname.get(base) or self._find_anywhere(base)
            if not isinstance(target, dict):
                continue
            if not wildcard:
                out.append(target)
            elif ns.endswith("::**"):       # recursive import: every member, at any depth
                todo = list(self.members(target))
                while todo:
                    out.append(todo.pop())
                    todo += self.members(out[-1])
            else:
                out += self.members(target) + self.imported_members(target, True, seen)
        return out

    def _find_anywhere(self, qn):
        for e in self.els:
            if e["qname"] == qn or e["qname"].endswith("::" + qn):
                return e
        return None

    def resolve_name(self, name, scope, exclude=None):
        """A simple name seen from scope: own and inherited members, then enclosing namespaces, imports, root.
        `exclude` is the element whose own reference is being resolved: `perform x;` and `part :>> x;` are
        named x themselves but refer to another x."""
        key = (name, scope["id"] if scope else None, exclude["id"] if exclude else None)
        if key not in self._resolved:
            self._resolved[key] = None            # a resolution that needs itself does not resolve
            self._resolved[key] = self._resolve_name(name, scope, exclude)
        return self._resolved[key]

    def _resolve_name(self, name, scope, exclude):
        s = scope
        while True:
            found = [x for x in self.named(self.features(s) if s else self.members(None), name) if x is not exclude]
            found = found or self.named(self.imported_members(s), name)
            if found and found[0].get("alias_for"):
                return self.resolve_qualified(found[0]["alias_for"], self.parent(found[0]), exclude=found[0])
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

    def resolve_qualified(self, ref, scope, exclude=None):
        parts = [p.strip("'") for p in _split(_compact(ref).lstrip("~"), "::")]
        if parts[0] in self.lib_packages:
            return "library"
        target = self.resolve_name(parts[0], scope, exclude)
        for p in parts[1:]:
            if not isinstance(target, dict):
                return target
            found = self.named(self.features(target), p)
            target = found[0] if found else None
        return target

    def resolve_chain(self, ref, scope, exclude=None):
        """'a.b.c' (each part possibly qualified): returns (element|'library'|None, the failing prefix)."""
        segs = _split(_compact(ref), ".")
        target = self.resolve_qualified(segs[0], scope, exclude)
        done = segs[0]
        for s in segs[1:]:
            if target is None or target == "library":
                return target, done
            name = _split(s, "::")[-1].strip("'")
            found = self.named(self.features(target), name)
            if not found and name in implicit_feature_names():
                return "library", f"{done}.{s}"   # a feature of its library base type (a message's sourceEvent)
            if not found:
                return None, f"{done}.{s}"
            target = found[0]
            done = f"{done}.{s}"
        return target, done

    def scope_of_rel(self, rel):
        if "scope_id" in rel:     # anonymous scopes share a qualified name
            return self.by_id.get(rel["scope_id"])
        return self.by_qname.get(rel["scope"]) if rel["scope"] else None

