"""Import BTGenBot's bt_dataset.json (BehaviorTree.CPP 3 trees) into DSL-Bench tasks.

The published file is a JSON list of {instruction, input, output}: `instruction` is a fixed request,
`input` a natural-language summary of the tree and `output` the tree as BehaviorTree.CPP 3 XML. It
has no node palette and no behaviour to compare against, so each record is turned into a task by:

  1. migrating the tree to BehaviorTree.CPP 4 (every change is listed in provenance.migration), among
     others: an ID on a built-in control node (ignored by version 3, rejected by 4) becomes its name, and
     the explicit `<Action ID="X">` children of a reactive node are written `<X>` (see _compact_children);
  2. inferring the palette from the leaves that are not built-in nodes (kinds from <Condition ID>
     tags, the tree's own <TreeNodesModel>, or an Is/Has/Can/Check name prefix; ports from the
     attributes: `{key}` values give inout ports, literals input ports; a port that some use of the
     node leaves out gets an empty default);
  3. generating trivial scenarios: every leaf succeeds; every leaf fails; every condition fails (the
     actions succeed); then one scenario per leaf type that fails (conditions first), then one per
     migrated blackboard check that mismatches, up to MAX_SCENARIOS. Every blackboard entry the tree
     refers to starts with a placeholder value, and the instruction names these entries. The scenarios
     test the control flow and dataflow the upstream tree encodes, not the behaviour its summary asks
     for: real scenarios must be supplied by the user;
  4. deriving up to 3 semantic mutants from the migrated gold (semantic_mutants): single slips
     that BT.CPP 4 still loads with the same palette (Sequence<->Fallback, two children swapped, a leaf
     dropped, an Inverter removed or added around a condition, a numeric port literal changed).

The published layout is the repository's dataset/bt_dataset.json (the clone, its dataset folder or
the file itself are accepted). Records that cannot become a BT.CPP 4 task are skipped with a reason
code (Unconvertible.reason): `nav2_plugin_node` / `custom_control_node` (control or decorator nodes
outside BT.CPP 4's core: behaviortreepy registers only leaves and simple decorators from Python, so
no stand-in with the plugin's semantics can be registered), `malformed_xml` (not even tinyxml2,
BT.CPP 3's parser, would read it), `invalid_node_id` / `invalid_port_name`, `no_v4_equivalent`,
`no_leaves`, `timing_dependent` (a timer under a second, see check_timing); the caller also loads every
migrated tree with BehaviorTree.CPP and skips the ones it rejects.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from dslbench.upstream import NotThisBenchmark, one_mutant_per_kind

BENCHMARK = "BTGenBot bt_dataset.json"
LICENCE = "MIT (BTGenBot repository)"
MAX_SCENARIOS = 8
CONTROLS = {"Sequence", "SequenceWithMemory", "ReactiveSequence", "Fallback", "ReactiveFallback", "Parallel",
            "ParallelAll", "IfThenElse", "WhileDoElse", "Switch2", "Switch3", "Switch4", "Switch5", "Switch6",
            "AsyncSequence", "AsyncFallback"}
DECORATORS = {"Inverter", "RetryUntilSuccessful", "KeepRunningUntilFailure", "Repeat", "Timeout", "Delay",
              "ForceSuccess", "ForceFailure", "RunOnce", "Precondition", "LoopInt", "LoopDouble", "LoopString",
              "LoopBool", "SkipUnlessUpdated", "WaitValueUpdate"}
BUILTIN_LEAVES = {"AlwaysSuccess", "AlwaysFailure", "Script", "ScriptCondition", "SetBlackboard",
                  "UnsetBlackboard", "Sleep", "WasEntryUpdated", "SubTree"}
BUILTIN = CONTROLS | DECORATORS | BUILTIN_LEAVES
# FallbackStar is BT.CPP 2's FallbackNodeWithMemory: it resumes at the running child and does not
# re-tick children that failed; BT.CPP 3 and 4's plain Fallback behave exactly so.
RENAMED = {"SequenceStar": "SequenceWithMemory", "RetryUntilSuccesful": "RetryUntilSuccessful",
           "SubTreePlus": "SubTree", "FallbackStar": "Fallback", "ParallelNode": "Parallel"}
# Nav2 (nav2_behavior_tree) plugin nodes: no BT.CPP 4 core equivalent
NAV2 = {"PipelineSequence", "RecoveryNode", "RoundRobin", "RateController", "DistanceController", "SpeedController",
        "GoalUpdater", "PathLongerOnApproach", "SingleTrigger", "GoalUpdatedController"}
DATASET = Path("dataset") / "bt_dataset.json"
IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
PARALLEL_V3 = {"success_threshold": "success_count", "failure_threshold": "failure_count"}
CHECKS_V3 = {"BlackboardCheckString": "string", "BlackboardCheckInt": "number", "BlackboardCheckDouble": "number"}
CONDITION_NAME = re.compile(r"^(Is|is|Has|has|Can|can|Check|check|Are|are)[A-Z_]")


class Unconvertible(ValueError):
    """This record cannot become a BehaviorTree.CPP 4 task: a reason code and the message saying why."""

    def __init__(self, message: str, reason: str = "unsupported_node"):
        super().__init__(message)
        self.reason = reason


def find_dataset(source: Path) -> Path:
    """bt_dataset.json in the published layout: the clone (dataset/bt_dataset.json), its dataset folder, or the file."""
    if source.is_file():
        return source
    for path in (source / DATASET, source / "bt_dataset.json"):
        if path.is_file():
            return path
    raise NotThisBenchmark(f"{source}: no {DATASET} here (give the BTGenBot clone, its dataset folder or the file)")


def read_records(path: Path) -> list:
    """The records of bt_dataset.json as published (a JSON list); each is checked by check_record."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise NotThisBenchmark(f"{path}: not a readable JSON file: {e}") from None
    if not isinstance(data, list) or (data and not any(isinstance(r, dict) and "output" in r for r in data)):
        raise NotThisBenchmark(f"{path}: not BTGenBot's dataset (expected a JSON list of "
                               "{instruction, input, output} records)")
    return data


def check_record(rec) -> dict:
    """The record if it has the three fields as non-empty strings (a ValueError otherwise)."""
    if not isinstance(rec, dict):
        raise ValueError("expected an object with instruction, input, output")
    for key in ("instruction", "input", "output"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            raise ValueError(f"field '{key}' is missing or not a non-empty string")
    return rec


def _tinyxml_lenient(text: str) -> tuple[str, list[str]]:
    """What tinyxml2 (BT.CPP 3's parser) reads but an XML parser refuses, made well-formed: '--' inside
    comments (a comment ends at the first '-->') and a raw '<' inside an attribute value."""
    changes = []

    def comment(m):
        body = re.sub(r"-{2,}", "-", m.group(1)).rstrip("-")
        if body != m.group(1):
            changes.append("repaired a comment holding '--' (tinyxml2 accepts it)")
        return f"<!--{body}-->"
    text = re.sub(r"<!--(.*?)-->", comment, text, flags=re.S)

    def attribute(m):
        if "<" in m.group(2):
            changes.append("escaped a raw '<' in an attribute value (tinyxml2 accepts it)")
        return m.group(1) + m.group(2).replace("<", "&lt;") + '"'
    text = re.sub(r'(\s[\w.:-]+\s*=\s*")([^"]*)"', attribute, text)
    return text, sorted(set(changes))


def _node_id(el: ET.Element) -> str:
    return el.get("ID", "") if el.tag in ("Action", "Condition", "Decorator", "Control") else el.tag


def _script_literal(value: str, kind: str) -> str:
    if kind == "number" and re.fullmatch(r"-?\d+(\.\d+)?", value.strip()):
        return value.strip()
    return "'" + value.replace("'", "") + "'"


def migrate(xml_text: str) -> tuple[str, list[str], ET.Element, list[tuple[str, str]]]:
    """A BehaviorTree.CPP 3 document as BehaviorTree.CPP 4 XML, the list of changes, the tree's own
    <TreeNodesModel> (possibly empty) and the (key, value) pairs of migrated blackboard checks."""
    changes: list[str] = []
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as e:
        repaired, changes = _tinyxml_lenient(xml_text)
        try:
            root = ET.fromstring(repaired)
        except ET.ParseError:
            raise Unconvertible(f"the upstream XML does not parse: {e}", "malformed_xml") from None
    if root.tag != "root":
        raise Unconvertible(f"the document element is <{root.tag}>, not <root>", "malformed_xml")
    checks: list[tuple[str, str]] = []
    # the tree's own <TreeNodesModel> goes into the palette file; compacted leaves add their kinds to it
    model = root.find("TreeNodesModel")
    had_model = model is not None
    if model is not None:
        root.remove(model)
    else:
        model = ET.Element("TreeNodesModel")
    if root.get("BTCPP_format") != "4":
        root.set("BTCPP_format", "4")
        changes.append('set BTCPP_format="4" on <root>')
    include = root.find("include")
    if include is not None:
        raise Unconvertible(f"the tree includes {include.get('path')!r}, a file the dataset does not ship",
                            "needs_include_file")
    trees = root.findall("BehaviorTree")
    if not trees:
        raise Unconvertible("no <BehaviorTree> element", "malformed_xml")
    for tree in trees:
        for el in list(tree.iter()):
            if el is tree:
                continue
            if el.tag in RENAMED:
                changes.append(f"<{el.tag}> -> <{RENAMED[el.tag]}>")
                el.tag = RENAMED[el.tag]
            if el.tag == "SubTree":
                if el.attrib.pop("__autoremap", None) is not None:
                    el.set("_autoremap", "true")
                    changes.append('SubTree __autoremap -> _autoremap="true"')
                if el.attrib.pop("__shared_blackboard", "false").lower() == "true":
                    el.set("_autoremap", "true")
                    changes.append('SubTree __shared_blackboard="true" -> _autoremap="true" (remaps same-name '
                                   'entries only)')
            if el.tag == "Parallel" and "threshold" in el.attrib:
                # BT.CPP 2 / early 3 `threshold`: SUCCESS at that many successes, FAILURE once it is out of reach
                n = el.attrib.pop("threshold")
                if not n.strip().isdigit():
                    raise Unconvertible(f"<Parallel threshold={n!r}>: not a literal count", "no_v4_equivalent")
                el.set("success_count", n.strip())
                el.set("failure_count", str(max(1, len(el) - int(n) + 1)))
                changes.append("Parallel threshold=N -> success_count=N failure_count=children-N+1")
            if el.tag == "Parallel":
                for old, new in PARALLEL_V3.items():
                    if old in el.attrib:
                        el.set(new, el.attrib.pop(old))
                        changes.append(f"Parallel {old} -> {new}")
            if el.tag in CHECKS_V3:
                a, b = el.get("value_A", ""), el.get("value_B", "")
                pointer = [v for v in (a, b) if v.startswith("{") and v.endswith("}")]
                if len(pointer) != 1 or len(el) != 1:
                    raise Unconvertible(f"<{el.tag}> compares {a!r} with {b!r}: no version 4 equivalent derived",
                                        "no_v4_equivalent")
                literal = b if pointer[0] == a else a
                checks.append((pointer[0][1:-1].lstrip("@"), literal))
                condition = f"{pointer[0][1:-1]} == {_script_literal(literal, CHECKS_V3[el.tag])}"
                mismatch = el.get("return_on_mismatch", "FAILURE")
                changes.append(f"<{el.tag}> -> <Precondition if=\"{condition}\" else=\"{mismatch}\">")
                el.attrib.clear()
                el.tag = "Precondition"
                el.set("if", condition)
                el.set("else", mismatch)
            if el.tag in CONTROLS | DECORATORS and "ID" in el.attrib:
                # BT.CPP 3 ignored an ID on a built-in node; 4 rejects it. It names the node: keep it as name
                label = el.attrib.pop("ID")
                el.set("name", el.get("name", label))
                changes.append(f'<{el.tag} ID="{label}"> -> <{el.tag} name="{el.get("name")}">')
            if el.tag in ("ReactiveSequence", "ReactiveFallback"):
                _compact_children(el, model, changes)
            node_id = _node_id(el)
            if node_id in NAV2:
                raise Unconvertible(f"<{node_id}> is a Nav2 plugin node with no BehaviorTree.CPP 4 core equivalent "
                                    "(behaviortreepy cannot register control nodes from Python)", "nav2_plugin_node")
            if el.tag in ("Decorator", "Control") or (len(el) and node_id not in CONTROLS | DECORATORS):
                raise Unconvertible(f"<{node_id}> has children but is not a core BehaviorTree.CPP 4 control or "
                                    "decorator node (behaviortreepy cannot register one from Python)",
                                    "custom_control_node")
    if had_model:         # (entries the compaction added are logged with the compaction)
        changes.append("moved the tree's <TreeNodesModel> into the palette file")
    return _serialize(root), changes, model, checks


def _compact_children(parent: ET.Element, model: ET.Element, changes: list[str]) -> None:
    """`<Action ID="X"/>` children of a reactive node written `<X/>`: BT.CPP 4's XML check looks each
    child of a ReactiveSequence or ReactiveFallback up by its element name, so it rejects the explicit
    form there ("Unknown node type: Action"). The kind the tag gave goes into the model."""
    for child in parent:
        node_id = child.get("ID", "")
        if child.tag not in ("Action", "Condition") or not IDENT.fullmatch(node_id) or node_id in BUILTIN:
            continue
        if not any(d.get("ID") == node_id for d in model):
            ET.SubElement(model, child.tag, {"ID": node_id})
        changes.append(f'<{child.tag} ID="{node_id}"> under <{parent.tag}> -> <{node_id}>')
        child.tag = node_id
        del child.attrib["ID"]


def _serialize(root: ET.Element) -> str:
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode") + "\n"


def infer_palette(gold: str, model: ET.Element) -> tuple[str, dict[str, str], list[str]]:
    """(palette XML, {node ID: kind}, leaf IDs in order of appearance) for the leaves of a migrated tree."""
    root = ET.fromstring(gold)
    declared = {el.get("ID"): el for el in model if el.get("ID")}
    kinds: dict[str, str] = {}
    ports: dict[str, dict[str, dict]] = {}
    uses: dict[str, list[set]] = {}
    for tree in root.findall("BehaviorTree"):
        for el in tree.iter():
            node_id = _node_id(el)
            if el is tree or len(el) or node_id in BUILTIN or not node_id:
                continue
            if not IDENT.fullmatch(node_id):
                raise Unconvertible(f"node ID {node_id!r} is not made of letters, digits and _", "invalid_node_id")
            if node_id not in kinds:
                decl = declared.get(node_id)
                if el.tag == "Condition" or (decl is not None and decl.tag == "Condition"):
                    kinds[node_id] = "Condition"
                elif el.tag == "Action" or decl is not None:
                    kinds[node_id] = "Action"
                else:
                    kinds[node_id] = "Condition" if CONDITION_NAME.match(node_id) else "Action"
                ports[node_id] = {}
                uses[node_id] = []
            given = set()
            for attr, value in el.attrib.items():
                if attr in ("ID", "name") or attr.startswith("_"):
                    continue
                if not IDENT.fullmatch(attr):
                    raise Unconvertible(f"<{node_id}> port {attr!r} is not made of letters, digits and _",
                                        "invalid_port_name")
                given.add(attr)
                pointer = value.startswith("{") and value.endswith("}")
                # inout only when every use binds an entry: a literal in some use makes it an input port
                port = ports[node_id].setdefault(attr, {"direction": "inout" if pointer else "input"})
                if not pointer:
                    port["direction"] = "input"
            uses[node_id].append(given)
    lines = ['<root BTCPP_format="4">',
             "  <!-- Node palette inferred from the upstream tree. Ports without a default value are mandatory. -->",
             "  <TreeNodesModel>"]
    for node_id, kind in kinds.items():
        if not ports[node_id]:
            lines.append(f'    <{kind} ID="{node_id}"/>')
            continue
        lines.append(f'    <{kind} ID="{node_id}">')
        for port, info in ports[node_id].items():
            optional = any(port not in given for given in uses[node_id])
            default = ' default=""' if optional else ""
            lines.append(f'      <{info["direction"]}_port name="{port}" type="std::string"{default}/>')
        lines.append(f"    </{kind}>")
    lines += ["  </TreeNodesModel>", "</root>", ""]
    return "\n".join(lines), kinds, list(kinds)


def blackboard_keys(gold: str) -> list[str]:
    """Blackboard entries the tree refers to as {key} (SubTree remappings included), in order."""
    keys = []
    for el in ET.fromstring(gold).iter():
        for value in el.attrib.values():
            if value.startswith("{") and value.endswith("}") and value not in ("{=}",):
                key = value[1:-1].lstrip("@")
                if key and key not in keys:
                    keys.append(key)
    return keys


NUMERIC_PORTS = {"num_cycles", "num_attempts", "msec", "delay_msec", "success_count", "failure_count"}


def numeric_keys(gold: str) -> set[str]:
    """Entries read by the integer ports of built-in nodes (Repeat num_cycles="{n}"...): a placeholder
    string there would make BT.CPP report a missing parameter, so these start as 1."""
    out = set()
    for el in ET.fromstring(gold).iter():
        if el.tag in BUILTIN:
            for attr, value in el.attrib.items():
                if attr in NUMERIC_PORTS and value.startswith("{") and value.endswith("}"):
                    out.add(value[1:-1].lstrip("@"))
    return out


def switch_cases(gold: str) -> dict[str, str]:
    """{entry: its first case} for the entries a SwitchN node reads (variable="{key}"): a placeholder value
    there matches no case, so every run would take the default branch."""
    out = {}
    for el in ET.fromstring(gold).iter():
        value = el.get("variable", "")
        if el.tag.startswith("Switch") and value.startswith("{") and value.endswith("}") and el.get("case_1"):
            out.setdefault(value[1:-1].lstrip("@"), el.get("case_1"))
    return out


def scenarios_for(kinds: dict[str, str], keys: list[str], checks: list[tuple[str, str]],
                  numeric: set[str] = frozenset(), cases: dict[str, str] | None = None) -> list[dict]:
    """Trivial scenarios: all leaves succeed, all fail, all conditions fail, then each leaf type fails in
    turn (conditions first), then each migrated blackboard check mismatches. Every entry the tree refers
    to starts as '<key>_0' (the value a migrated check compares with, for those; the first case, for the
    variable of a SwitchN), so no leaf fails for want of an input."""
    board = {key: "1" if key in numeric else f"{key}_0" for key in keys}
    board.update(cases or {})
    board.update(dict(checks))
    out = [{"name": "every leaf succeeds", "blackboard": dict(board)}]
    conditions = [n for n, k in kinds.items() if k == "Condition"]
    order = conditions + [n for n, k in kinds.items() if k == "Action"]
    # the other extreme: every Fallback tries all its children (the branches after the first one, the
    # retries and the recoveries run only here or when the leaves before them fail)
    out.append({"name": "every leaf fails", "blackboard": dict(board), "nodes": {n: ["FAILURE"] for n in order}})
    if conditions and len(conditions) < len(order):
        out.append({"name": "every condition fails", "blackboard": dict(board),
                    "nodes": {n: ["FAILURE"] for n in conditions}})
    for node_id in order:
        out.append({"name": f"{node_id} fails", "blackboard": dict(board), "nodes": {node_id: ["FAILURE"]}})
    for key, literal in checks:
        out.append({"name": f"{key} differs from {literal}", "blackboard": {**board, key: f"not_{literal}"}})
    return out[:MAX_SCENARIOS]


# --- semantic mutants ------------------------------------------------------------------------------
# Plausible single slips on the migrated gold, each still loaded by BT.CPP 4 with the same palette.
FLOW_SWAPS = {"Sequence": "Fallback", "Fallback": "Sequence", "ReactiveSequence": "ReactiveFallback",
              "ReactiveFallback": "ReactiveSequence", "SequenceWithMemory": "Fallback"}
# children may be reordered or dropped freely only under these (IfThenElse, Switch... have fixed arity,
# Parallel thresholds count children)
ORDERED = {"Sequence", "SequenceWithMemory", "ReactiveSequence", "Fallback", "ReactiveFallback"}
# literal ports of built-in nodes whose change the scenarios can observe (loop counts, not durations:
# the scripted leaves take no time)
COUNT_PORTS = {"num_cycles", "num_attempts"}
NUMBER = re.compile(r"-?\d+(\.\d+)?")
TIMERS = {"Delay": "delay_msec", "Sleep": "msec", "Timeout": "msec"}     # wall-clock timers: port in ms
TIMING_FLOOR_MS = 1000


def _reachable(root: ET.Element) -> list[ET.Element]:
    """The <BehaviorTree> elements the main tree runs (itself, then the subtrees it calls, transitively)."""
    trees = {t.get("ID"): t for t in root.findall("BehaviorTree")}
    if not trees:
        return []
    main = root.get("main_tree_to_execute")
    order = [trees.get(main) if main in trees else root.findall("BehaviorTree")[0]]
    for tree in order:
        for el in tree.iter("SubTree"):
            sub = trees.get(el.get("ID"))
            if sub is not None and sub not in order:
                order.append(sub)
    return order


def _elements(root: ET.Element) -> list[tuple[ET.Element, ET.Element]]:
    """(parent, element) pairs below the reachable trees, in document order; nothing under a Delay,
    whose child never runs in a scenario (timing_dependent keeps only delays of a second or more)."""
    out = []

    def walk(parent):
        for child in parent:
            out.append((parent, child))
            if _node_id(child) != "Delay":
                walk(child)
    for tree in _reachable(root):
        walk(tree)
    return out


def _is_leaf(el: ET.Element, kinds: dict[str, str]) -> bool:
    return not len(el) and _node_id(el) in kinds


def _mutate_flow(root, kinds):
    for _, el in _elements(root):
        if el.tag in FLOW_SWAPS and len(el) >= 2:
            new = FLOW_SWAPS[el.tag]
            note = f"control flow: <{el.tag}> -> <{new}>" + (f' (name="{el.get("name")}")' if el.get("name") else "")
            el.tag = new
            return note
    return None


def _runs_leaf(el: ET.Element, kinds: dict[str, str]) -> bool:
    """Whether the subtree holds a palette leaf or calls a subtree (so its place in the order shows in a trace;
    two SetBlackboard writes of different entries, swapped, are the same program)."""
    return any(_is_leaf(x, kinds) or x.tag == "SubTree" for x in el.iter())


def _mutate_order(root, kinds):
    for _, el in _elements(root):
        if el.tag not in ORDERED:
            continue
        children = list(el)
        for i in range(len(children) - 1):
            a, b = children[i], children[i + 1]
            if ET.tostring(a) != ET.tostring(b) and _runs_leaf(a, kinds) and _runs_leaf(b, kinds):
                el.remove(a)
                el.insert(i + 1, a)
                return f"children {i + 1} and {i + 2} of <{el.tag}> swapped (<{_node_id(a)}> after <{_node_id(b)}>)"
    return None


def _mutate_drop(root, kinds):
    for _, el in _elements(root):
        if el.tag in ORDERED and len(el) >= 2:
            leaf = next((c for c in el if _is_leaf(c, kinds)), None)
            if leaf is not None:
                el.remove(leaf)
                return f"leaf <{_node_id(leaf)}> dropped from <{el.tag}>"
    return None


def _mutate_inverter(root, kinds):
    pairs = _elements(root)
    for parent, el in pairs:            # an Inverter around a condition removed...
        if el.tag == "Inverter" and len(el) == 1 and _is_leaf(el[0], kinds) and kinds[_node_id(el[0])] == "Condition":
            i = list(parent).index(el)
            parent.remove(el)
            parent.insert(i, el[0])
            return f"Inverter around condition <{_node_id(el[0])}> removed"
    for parent, el in pairs:            # ... or one added
        if parent.tag != "Inverter" and _is_leaf(el, kinds) and kinds[_node_id(el)] == "Condition":
            i = list(parent).index(el)
            parent.remove(el)
            wrapper = ET.Element("Inverter")
            wrapper.append(el)
            parent.insert(i, wrapper)
            return f"Inverter added around condition <{_node_id(el)}>"
    return None


def _mutate_number(root, kinds):
    for _, el in _elements(root):
        leaf = _is_leaf(el, kinds)
        if not leaf and el.tag not in BUILTIN:
            continue
        for attr, value in el.attrib.items():
            if attr in ("ID", "name") or attr.startswith("_") or not NUMBER.fullmatch(value.strip()):
                continue
            if not leaf and attr not in COUNT_PORTS:
                continue
            whole, _, frac = value.strip().partition(".")
            new = str(int(whole) + 1) + ("." + frac if frac else "")
            if not leaf and int(whole) < 0:           # -1 means "forever": make it a finite count
                new = "2"
            el.set(attr, new)
            return f"numeric port literal: <{_node_id(el)} {attr}> {value} -> {new}"
    return None


MUTATIONS = (_mutate_flow, _mutate_order, _mutate_drop, _mutate_inverter, _mutate_number)


def semantic_mutants(gold: str, kinds: dict[str, str], index: int = 0) -> list[dict]:
    """Up to 3 single slips on the gold, one of each kind: a Sequence<->Fallback swap, two children
    of a control node swapped, a leaf dropped from a control node of two or more children, an Inverter
    removed or added around a condition, a numeric port literal changed. Deterministic: the kinds are
    tried in a rotation that starts at the record index, so the dataset sees all kinds."""
    base = _serialize(ET.fromstring(gold))

    def slip(mutate):
        root = ET.fromstring(gold)
        note = mutate(root, kinds)
        program = _serialize(root) if note is not None else base
        return [] if program == base else [(note, program)]   # the gold re-serialized is no slip

    rotation = (MUTATIONS[(index + k) % len(MUTATIONS)] for k in range(len(MUTATIONS)))
    return one_mutant_per_kind(gold, (slip(mutate) for mutate in rotation))


def _difficulty(gold: str) -> str:
    count = sum(1 for _ in ET.fromstring(gold).iter()) - 1
    return "easy" if count <= 6 else "medium" if count <= 14 else "hard"


def _constructs(gold: str) -> list[str]:
    seen = []
    for el in ET.fromstring(gold).iter():
        if el.tag in BUILTIN and el.tag not in seen:
            seen.append(el.tag)
    return seen or ["leaf actions"]


def _title(summary: str, index: int) -> str:
    first = re.split(r"(?<=[.!?])\s", summary.strip(), maxsplit=1)[0]
    return (first[:77] + "...") if len(first) > 80 else first or f"BTGenBot record {index}"


def check_timing(gold: str) -> None:
    """Unconvertible (timing_dependent) when a Delay, Sleep or Timeout the tree runs lasts under
    TIMING_FLOOR_MS or is not a literal: a scenario ticks back to back on the wall clock, so whether
    such a timer fires within its ticks depends on the machine's load (the gold would pass or fail by
    chance). Longer timers never fire there: their children are not run, and not mutated either."""
    for tree in _reachable(ET.fromstring(gold)):
        for el in tree.iter():
            port = TIMERS.get(_node_id(el))
            if port is None or port not in el.attrib:
                continue
            value = el.get(port).strip()
            if not value.isdigit() or int(value) < TIMING_FLOOR_MS:
                raise Unconvertible(f'<{_node_id(el)} {port}="{value}">: whether it fires within a scenario\'s ticks '
                                    "depends on the machine's load", "timing_dependent")


def to_task(index: int, record: dict) -> dict:
    """One task dict in the DSL-Bench schema (raises Unconvertible with the reason)."""
    gold, changes, model, checks = migrate(record["output"])
    check_timing(gold)
    palette, kinds, _ = infer_palette(gold, model)
    if not kinds:
        raise Unconvertible("the tree has no action or condition leaves to register", "no_leaves")
    keys = blackboard_keys(gold)
    version = any(not c.startswith("set BTCPP_format") and not c.startswith("moved") for c in changes)
    names = keys + [key for key, _ in checks if key not in keys]
    entries = f" The tree's blackboard entries are: {', '.join(names)}." if names else ""
    instruction = (f"{record['instruction'].strip()}\n\n{record['input'].strip()}\n\n"
                   "Write it for BehaviorTree.CPP 4 using the node palette in `nodes.xml` (the nodes, their kinds "
                   f"and port names).{entries}\n")
    return {
        "id": f"behaviortree-btgenbot-{index:04d}", "dsl": "behaviortree", "domain": "Robotics",
        "title": _title(record["input"], index), "difficulty": _difficulty(gold),
        "constructs": _constructs(gold), "failure_modes": ["structure"] + (["version"] if version else []),
        "instruction": instruction, "context": {"nodes.xml": palette}, "gold": gold,
        "oracle": {"palette": "nodes.xml", "scenarios": scenarios_for(kinds, keys, checks, numeric_keys(gold),
                                                                  switch_cases(gold))},
        "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": str(index), "licence": LICENCE,
                       "migration": changes or ["none"],
                       "note": "palette inferred from the tree; scenarios generated trivially (all leaves "
                               "succeed, all fail, all conditions fail, then one leaf type fails); mutants "
                               "generated: supply real scenarios for a full oracle"},
        "split": "test", "mutants": semantic_mutants(gold, kinds, index),
    }
