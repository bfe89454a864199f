"""Runs inside the sandbox: parse SysML v2 text with sysmlpy's ANTLR parser (generated from the OMG
SysML v2 textual grammar) and write what the oracle needs as JSON. No model code is executed: a
SysML model is only parsed and its declarations are extracted.

usage: python run_sysml.py PROGRAM.sysml OUT.json [DFA_CACHE.pkl [SYSMLPY_VERSION]]

Report: {"ok": true, "elements": [...], "relations": [...], "imports": [...]} or
        {"ok": false, "errors": ["line L:C: message", ...]}
"""
import json
import os
import re
import sys
import threading
import types



def _bare_sysmlpy(version: str = ""):
    """Import only sysmlpy's generated parser (the package __init__ pulls in pint, arrow, ... ~2 s)."""
    import importlib.util
    spec = importlib.util.find_spec("sysmlpy")
    pkg = types.ModuleType("sysmlpy")
    pkg.__path__ = list(spec.submodule_search_locations)
    if not version:   # importlib.metadata costs ~0.3 s: the validator passes the version it probed
        import importlib.metadata
        version = importlib.metadata.version("sysmlpy")
    pkg.__version__ = version   # part of the DFA cache key
    sys.modules["sysmlpy"] = pkg
    from sysmlpy import dfa_cache
    from sysmlpy.antlr_parser import _parse_tree, SysMLSyntaxError
    return dfa_cache, _parse_tree, SysMLSyntaxError


ELEMENT_SUFFIXES = ("Definition", "Usage")
NOT_ELEMENTS = {"Definition", "Usage", "EmptyUsage_", "StateActionUsage", "EffectBehaviorUsage",
                "PrefixMetadataUsage", "MetadataBodyUsage", "ExtendedUsage",
                "EmptyActionUsage_", "ConjugatedPortDefinition", "RequirementVerificationUsage"}
RELATIONS = {"SatisfyRequirementUsage", "RequirementVerificationUsage", "SuccessionAsUsage", "ConnectionUsage",
             "InterfaceUsage", "FlowUsage", "SuccessionFlowUsage", "BindingConnectorAsUsage", "TransitionUsage",
             "AllocationUsage", "TargetTransitionUsage"}
KIND_NAMES = {"Enumeration": "enum", "Calculation": "calc", "Requirement": "requirement",
              "RequirementConstraint": "constraint", "AssertConstraint": "constraint",
              "VerificationCase": "verification", "UseCase": "use case", "AnalysisCase": "analysis",
              "ObjectiveRequirement": "objective", "EventOccurrence": "event", "PerformAction": "perform",
              "ExhibitState": "exhibit", "EnumeratedValue": "enum", "Subject": "subject",
              "DefaultInterfaceEnd": "end", "EndFeature": "end", "Reference": "ref", "DefaultReference": "ref", "Attribute": "attribute"}
# named elements whose grammar rules are not called ...Usage
CONTROL_NODES = {"MergeNode": "merge", "DecisionNode": "decide", "ForkNode": "fork", "JoinNode": "join",
                 "Message": "message", "AcceptNode": "accept", "SendNode": "send", "AssignmentNode": "assign"}
# the parse-tree classes a shorthand succession (`then`) can step to in an action or state body
SUCCESSION_STEPS = {"ActionUsage", "StateUsage", "PerformActionUsage", "ExhibitStateUsage", "CalculationUsage",
                    *CONTROL_NODES} - {"Message"}
# usages that take their name from the feature they reference when they declare none (SysML v2:
# PerformActionUsage, ExhibitStateUsage, IncludeUseCaseUsage and EventOccurrenceUsage namingFeature)
NAMED_BY_REFERENCE = {"perform", "exhibit", "include use case", "event"}
REF_CONTEXTS = ("TypedBy", "Subsets", "Redefines", "References", "SubclassificationPart", "FeatureValue",
                "MultiplicityPart", "Crosses", "ValuePart")


def _cls(ctx) -> str:
    return type(ctx).__name__[:-7] if type(ctx).__name__.endswith("Context") else type(ctx).__name__


def _is_rule(x) -> bool:
    return hasattr(x, "getRuleIndex")


def _is_element(ctx) -> bool:
    c = _cls(ctx)
    if c in NOT_ELEMENTS or c.endswith("_"):
        return False
    return c.endswith(ELEMENT_SUFFIXES) or c in ("Package", "LibraryPackage", "EnumeratedValue", "DefaultInterfaceEnd") \
        or c in CONTROL_NODES


def _kind(ctx) -> tuple[str, bool]:
    c = _cls(ctx)
    if c in ("Package", "LibraryPackage"):
        return "package", False
    if c == "EnumeratedValue":
        return "enum", False
    if c == "DefaultInterfaceEnd":
        return "end", False
    if c in CONTROL_NODES:
        return CONTROL_NODES[c], False
    is_def = c.endswith("Definition")
    base = c[:-len("Definition")] if is_def else c[:-len("Usage")]
    if base in KIND_NAMES:
        return KIND_NAMES[base], is_def
    words, cur = [], ""
    for ch in base:
        if ch.isupper() and cur:
            words.append(cur)
            cur = ""
        cur += ch.lower()
    if cur:
        words.append(cur)
    return " ".join(words), is_def


def _decl(ctx):
    """Rule nodes of ctx's declaration: not inside a body and not inside a nested element."""
    for child in ctx.getChildren():
        if not _is_rule(child):
            continue
        c = _cls(child)
        if c.endswith("Body") or c.endswith("Body_") or _is_element(child):
            continue
        yield child
        yield from _decl(child)


def _find(nodes, name):
    return [n for n in nodes if _cls(n) == name]


def _text(ctx) -> str:
    return ctx.getText() if ctx is not None else ""


class Extractor:
    def __init__(self, source: str):
        self.source = source
        self.elements, self.relations, self.imports = [], [], []

    def src(self, ctx) -> str:
        return " ".join(self.source[ctx.start.start:ctx.stop.stop + 1].split()) if ctx.stop else ""

    def _name_of(self, decl):
        ident = _find(decl, "Identification")
        if not ident:
            return "", ""
        names = [c for c in ident[0].getChildren() if _is_rule(c) and _cls(c) == "Name"]
        toks = [c.getText() for c in ident[0].getChildren() if not _is_rule(c)]
        if "<" in toks:
            short = names[0].getText().strip("'")
            return (names[1].getText().strip("'") if len(names) > 1 else ""), short
        return names[0].getText().strip("'"), ""

    def walk(self, ctx, parent: str, parent_id):
        if not _is_rule(ctx):
            return
        c = _cls(ctx)
        if c == "ImportRule":
            decl = _find(list(_decl(ctx)), "ImportDeclaration")
            self.imports.append({"namespace": _text(decl[0]) if decl else _text(ctx), "line": ctx.start.line,
                                 "public": ctx.start.text not in ("private", "protected"),   # KerML default: public
                                 "scope": parent})
            return
        if c == "AliasMember":
            self.alias(ctx, parent, parent_id)
            return
        if c in RELATIONS:
            self.relation(ctx, parent, parent_id)
            if c in ("SuccessionAsUsage", "BindingConnectorAsUsage", "SatisfyRequirementUsage"):
                return
        if c in ("ActionBody", "StateDefBody", "StateUsageBody") or c.endswith("ActionBody"):
            self.behaviour_body(ctx, parent, parent_id)
        if _is_element(ctx) and c not in ("SatisfyRequirementUsage", "SuccessionAsUsage"):
            el = self.element(ctx, parent, parent_id)
            for child in ctx.getChildren():
                self.walk(child, el["qname"], el["id"])
            return
        for child in ctx.getChildren():
            self.walk(child, parent, parent_id)

    def element(self, ctx, parent, parent_id):
        kind, is_def = _kind(ctx)
        # a flow's payload (`flow of fuel : Fuel from a to b`) is not the flow's own declaration
        payload = {id(n) for m in _decl(ctx) if _cls(m) in ("FlowPayloadFeatureMember", "PayloadFeatureMember")
                   for n in [m, *_all(m)]}
        decl = [n for n in _decl(ctx) if id(n) not in payload]
        name, short = self._name_of(decl)
        typed, specializes, subsets, redefines = [], [], [], []
        for t in _find(decl, "TypedBy"):
            conj = bool(_find(list(_all(t)), "ConjugatedPortTyping"))
            ref = _text(t).lstrip(":").lstrip("~")
            for kw in ("typedby", "definedby"):
                if ref.startswith(kw):
                    ref = ref[len(kw):].lstrip("~")
            typed.append({"name": ref, "conjugated": conj})
        for s in _find(decl, "OwnedSubclassification"):
            specializes.append(_text(s))
        for s in _find(decl, "Subsets"):
            t = _text(s)
            subsets.append(t[len("subsets"):] if t.startswith("subsets") else t[2:])
        for s in _find(decl, "Redefines"):
            t = _text(s)
            redefines.append(t[len("redefines"):] if t.startswith("redefines") else t[3:])
        referenced = [_text(r).lstrip(":").removeprefix("references") for r in _find(decl, "OwnedReferenceSubsetting")]
        subsets += referenced     # a reference subsetting is a subsetting (`perform a.b`, `exhibit s`)
        mult = _find(decl, "MultiplicityBounds")
        value = _find(decl, "FeatureValue")
        direction = _find(decl, "FeatureDirection")
        # RefPrefix / OccurrenceUsagePrefix hold direction outside the declaration walk in some rules
        if not direction:
            for child in ctx.getChildren():
                if _is_rule(child) and _cls(child).endswith("Prefix"):
                    direction = _find([child, *list(_all(child))], "FeatureDirection")
                    if direction:
                        break
        if not name and redefines:
            name = redefines[0].split("::")[-1].split(".")[-1]
        if not name and kind == "subject":
            name = "subject"
        if not name and referenced and kind in NAMED_BY_REFERENCE:
            name = referenced[0].split("::")[-1].split(".")[-1].strip("'")
        return self.add_element(
            ctx, parent, parent_id, kind, name, short, is_def=is_def, typed_by=typed, specializes=specializes,
            subsets=subsets, redefines=redefines, multiplicity=_text(mult[0])[1:-1] if mult else "",
            value=self.src(value[0]).lstrip("=").strip() if value else "",
            direction=_text(direction[0]) if direction else "", abstract=ctx.start.text == "abstract",
            # a snapshot or time slice is a portion of its owner, a variant one of its variation's
            # choices: both have the owner's features (SysML v2 8.3.6 and 8.3.7)
            portion=bool(_find(decl, "PortionKind")),
            variant=_cls(ctx.parentCtx) == "VariantUsageElement" if ctx.parentCtx else False)

    def add_element(self, ctx, parent, parent_id, kind, name, short, **fields):
        """The report's record of one element: every field, defaults for those not given."""
        el = {"id": len(self.elements), "parent": parent_id, "kind": kind, "def": False, "name": name,
              "short_name": short, "line": ctx.start.line, "typed_by": [], "specializes": [], "subsets": [],
              "redefines": [], "multiplicity": "", "value": "", "direction": "", "abstract": False,
              "portion": False, "variant": False, "text": self.src(ctx)[:160],
              "qname": f"{parent}::{name}" if parent and name else (name or parent + "::<anonymous>")}
        el.update({"def" if k == "is_def" else k: v for k, v in fields.items()})
        self.elements.append(el)
        return el

    def alias(self, ctx, parent, parent_id):
        """`alias Torque for ISQ::TorqueValue;`: a name for another element, resolved where it is used."""
        kids = [k for k in ctx.getChildren() if _is_rule(k)]
        names = [k.getText().strip("'") for k in kids if _cls(k) == "Name"]
        target = [_text(k) for k in kids if _cls(k) == "QualifiedName"]
        if not names or not target:
            return
        self.add_element(ctx, parent, parent_id, "alias", names[-1], names[0] if len(names) > 1 else "",
                         alias_for=target[0])

    def relation(self, ctx, parent, parent_id):
        c = _cls(ctx)
        nodes = list(_all(ctx))
        rel = {"line": ctx.start.line, "scope": parent, "scope_id": parent_id}
        if c == "SatisfyRequirementUsage":
            decl = list(_decl(ctx))
            req = _find(decl, "OwnedReferenceSubsetting")
            by = _find(decl, "SatisfactionSubjectMember")
            rel.update(kind="satisfy", requirement=_text(req[0]) if req else "", by=_text(by[0]) if by else "",
                       negated=any(not _is_rule(t) and t.getText() == "not" for t in ctx.getChildren()))
        elif c == "RequirementVerificationUsage":
            decl = list(_decl(ctx))
            req = _find(decl, "OwnedReferenceSubsetting")
            rel.update(kind="verify", requirement=_text(req[0]) if req else "")
        elif c in ("SuccessionAsUsage", "BindingConnectorAsUsage"):
            ends = [_text(e) for e in _find(list(_decl(ctx)), "ConnectorEnd")]
            rel.update(kind="succession" if c == "SuccessionAsUsage" else "bind", ends=ends)
            if c == "SuccessionAsUsage" and len(ends) == 2:
                rel.update(first=ends[0], then=ends[1])
        elif c in ("ConnectionUsage", "InterfaceUsage", "AllocationUsage"):
            decl = list(_decl(ctx))
            ends = [_text(e) for e in _find(decl, "OwnedReferenceSubsetting")
                    if _cls(e.parentCtx) in ("ConnectorEnd", "InterfaceEnd")]
            typed = [_text(t).lstrip(":") for t in _find(decl, "TypedBy")]
            rel.update(kind={"ConnectionUsage": "connect", "InterfaceUsage": "interface",
                             "AllocationUsage": "allocate"}[c], ends=ends, typed_by=typed)
        elif c in ("FlowUsage", "SuccessionFlowUsage"):
            decl = list(_decl(ctx))
            ends = [_text(e) for e in _find(decl, "FlowEnd")]
            payload = _find(decl, "FlowPayloadFeatureMember") + _find(decl, "PayloadFeatureMember")
            item = ""
            if payload:
                tb = _find(list(_all(payload[0])), "TypedBy")
                item = _text(tb[0]).lstrip(":") if tb else _text(payload[0])
            rel.update(kind="flow", item=item, ends=ends)
        elif c in ("TransitionUsage", "TargetTransitionUsage"):
            # the source is the transition's own member, not a feature chain inside its guard
            src = [n for n in ctx.getChildren() if _is_rule(n) and _cls(n) == "FeatureChainMember"]
            trig = _find(nodes, "TriggerActionMember")
            tgt = _find(nodes, "TransitionSuccession")
            trig_names = _find(list(_all(trig[0])), "QualifiedName") if trig else []
            words = self.src(trig[0]).replace("(", " ").split() if trig else []
            if len(words) > 1 and words[1] in ("after", "at", "when"):
                trig_names = []     # a time or change trigger, not a signal name
            source = _text(src[0]) if src else ""
            if not source and c == "TargetTransitionUsage":
                source = self._previous_state(ctx)
            rel.update(kind="transition", source=source,
                       trigger=_text(trig_names[0]) if trig_names else "",
                       target=_text(tgt[0]) if tgt else "")
        else:
            return
        self.relations.append(rel)

    def _previous_state(self, ctx) -> str:
        """The implicit source of a target transition (`accept S then t;` in a state body): the
        lexically previous state usage in the same body (SysML v2 TargetTransitionUsage)."""
        item = ctx
        while item is not None and not _cls(item).endswith("BodyItem"):
            item = item.parentCtx
        if item is None or item.parentCtx is None:
            return ""
        name = ""
        at = ctx.start.tokenIndex
        for sib in item.parentCtx.getChildren():
            if not _is_rule(sib):
                continue
            for part in [p for p in sib.getChildren() if _is_rule(p)] or [sib]:
                if part.start.tokenIndex <= at <= part.stop.tokenIndex:
                    return name
                els = [n for n in _all(part) if _is_rule(n) and _is_element(n)]
                if els and _cls(els[0]) in ("StateUsage", "ExhibitStateUsage"):
                    name = self._name_of(list(_decl(els[0])))[0] or _first_name(els[0]) or name
        return ""

    def behaviour_body(self, ctx, parent, parent_id):
        """Shorthand successions in action/state bodies: `first a; then b;`, `action a; then action b;`,
        `entry; then s;`."""
        parts = []
        for item in ctx.getChildren():
            if not _is_rule(item):
                continue
            if _cls(item) in ("ActionBodyItem", "StateBodyItem"):
                parts += [p for p in item.getChildren() if _is_rule(p)]
            else:
                parts.append(item)
        prev, pending = None, False

        def add(first, then, line):
            self.relations.append({"kind": "succession", "first": first, "then": then, "ends": [first, then],
                                   "line": line, "scope": parent, "scope_id": parent_id, "shorthand": True})
        for part in parts:
            c = _cls(part)
            names = _find(list(_all(part)), "QualifiedName")
            if c == "InitialNodeMember":
                prev, pending = (_text(names[0]) if names else None), False
            elif c == "EntryActionMember":
                prev, pending = "entry", False
            elif c == "SourceSuccessionMember":
                pending = True
            elif c == "EntryTransitionMember":
                if names:
                    add("entry", _text(names[-1]), part.start.line)
                    prev = _text(names[-1])
            elif c in ("ActionTargetSuccessionMember", "TargetSuccessionMember"):
                els = [n for n in _all(part) if _is_rule(n) and _is_element(n)]
                target = ((_as_ref(self._name_of(list(_decl(els[0])))[0]) or _first_name(els[0])) if els
                          else (_text(names[-1]) if names else ""))
                if prev and target:
                    add(prev, target, part.start.line)
                prev, pending = target or prev, False
            elif c.endswith("Member"):
                els = [n for n in _all(part) if _is_rule(n) and _is_element(n)]
                if els and _cls(els[0]) in SUCCESSION_STEPS:
                    name = _as_ref(self._name_of(list(_decl(els[0])))[0]) or _first_name(els[0])
                    if pending and prev and name:
                        add(prev, name, part.start.line)
                    prev, pending = name or prev, False


def _as_ref(name: str) -> str:
    """A declared name as a reference to it: quoted unless it is a basic name ('connect trailer')."""
    return name if not name or re.fullmatch(r"[A-Za-z_]\w*", name) else f"'{name}'"


def _first_name(ctx) -> str:
    for n in _all(ctx):
        if _is_rule(n) and _cls(n) == "Name":
            return n.getText()
    return ""


def _all(ctx):
    for child in ctx.getChildren():
        if _is_rule(child):
            yield child
            yield from _all(child)


def main():
    program, out = sys.argv[1], sys.argv[2]
    cache = sys.argv[3] if len(sys.argv) > 3 else ""
    source = open(program, encoding="utf-8").read()
    dfa_cache, parse_tree, SysMLSyntaxError = _bare_sysmlpy(sys.argv[4] if len(sys.argv) > 4 else "")
    if cache and os.path.isfile(cache):
        dfa_cache.load_dfa_cache(cache)   # the prepared read-only cache (toolchains/sysml/warm_cache.py)
    dfa_cache.set_dfa_cache(enabled=False)  # never write a cache from inside the sandbox
    try:
        tree = parse_tree(source)     # strict: no constraint-body rescue, no error recovery
    except SysMLSyntaxError as e:
        errors = [line.replace("Syntax error at ", "line ", 1) for line in str(e).splitlines()]
        report = {"ok": False, "errors": errors}
    else:
        ex = Extractor(source)
        ex.walk(tree, "", None)
        report = {"ok": True, "elements": ex.elements, "relations": ex.relations, "imports": ex.imports}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.setrecursionlimit(20000)
    threading.stack_size(256 * 1024 * 1024)
    t = threading.Thread(target=main)
    t.start()
    t.join()
