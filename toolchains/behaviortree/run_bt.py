"""Runs inside the sandbox: load Behavior Tree XML with BehaviorTree.CPP v4 (PyPI behaviortreepy) and
tick it under scripted scenarios. Writes a JSON report.

usage: python run_bt.py MODE REPORT.json PROGRAM_FILE ...     (MODE: load | run | check)

The palette (node IDs, kinds, ports) and the scenarios come from bt_oracle.json in the work directory.
Python cannot declare ports for the nodes it registers in behaviortreepy, so port attributes of
palette nodes are checked here against the palette and removed before BehaviorTree.CPP loads the
tree; every palette node gets a unique `name` so its callback knows its ports. Attributes that are
not ports of the palette node stay in the XML, and BehaviorTree.CPP itself rejects them. Inputs and
outputs then go through BehaviorTree.CPP's own blackboards (SubTree remapping, `@` root keys); a
scenario entry bound to a std::string palette port is seeded typed std::string, as that port would
make it (typed_string_entries).

Every load and every scenario runs in a forked child: a crash, a hang or an endless loop inside one
tick costs that child only.
"""
import json
import os
import re
import select
import signal
import sys
import time

from lxml import etree
import behaviortreepy as bt

STATUS = {"SUCCESS": bt.NodeStatus.SUCCESS, "FAILURE": bt.NodeStatus.FAILURE, "RUNNING": bt.NodeStatus.RUNNING}
CHILD_TIMEOUT_S = 8.0      # default; the validator passes the card's timeout (child_timeout_s)
LIMIT_SIGNALS = (signal.SIGKILL, signal.SIGXCPU, signal.SIGXFSZ)
MARK = "__bt"


class Rejected(Exception):
    """The program is not a loadable BehaviorTree.CPP v4 tree (message is the diagnostic)."""


# --- preparing the XML ---------------------------------------------------------------------------

def is_pointer(value):
    return len(value) >= 2 and value.startswith("{") and value.endswith("}")


TYPE_NAMES = {"uint": "unsigned int"}
INT_RANGES = {"int": (-2**31, 2**31 - 1), "uint": (0, 2**32 - 1)}
DOUBLE = re.compile(r"\s*([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.I)


def convert(value, kind):
    """BehaviorTree.CPP 4's conversion of a port's string value (std::from_chars for integers, a
    prefix; std::stod for doubles, a prefix after blanks; exact spellings for bool), shown as a
    canonical string; None when BT.CPP would refuse it."""
    if kind in INT_RANGES:
        m = re.match(r"-?\d+" if kind == "int" else r"\d+", value)
        if not m:
            return None
        lo, hi = INT_RANGES[kind]
        number = int(m.group())
        return str(number) if lo <= number <= hi else None
    if kind == "double":
        m = DOUBLE.match(value)
        return repr(float(m.group(1))) if m else None
    if kind == "bool":
        return {"0": "false", "1": "true", "true": "true", "TRUE": "true", "True": "true",
                "false": "false", "FALSE": "false", "False": "false"}.get(value)
    return value


def prepare(text, palette):
    """Check the document against the palette and return (xml for BT.CPP, instances, line map)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.fromstring(text.encode("utf-8"), parser)
    except etree.XMLSyntaxError as e:
        raise Rejected("malformed XML: " + re.sub(r" \(<string>, line \d+\)$", "", str(e))) from None
    if root.tag == "root":
        fmt = root.get("BTCPP_format")
        if fmt is None:
            raise Rejected('<root> lacks BTCPP_format="4": BehaviorTree.CPP 4 warns "Please check if your XML '
                           'is compatible with version 4.x of BT.CPP" (a version 3 document)')
        if fmt.strip() != "4":
            raise Rejected(f'<root BTCPP_format="{fmt}">: this judge accepts only BTCPP_format="4"')
    elements = [{"id": el.get("ID") if el.tag in ("Action", "Condition") and el.get("ID") else el.tag,
                 "attributes": dict(el.attrib)}
                for tree in root.iter("BehaviorTree") for el in tree.iter() if isinstance(el.tag, str)]
    instances = []
    for tree in root.iter("BehaviorTree"):
        for el in tree.iter():
            if not isinstance(el.tag, str):
                continue
            node_id = el.get("ID") if el.tag in ("Action", "Condition") and el.get("ID") else el.tag
            spec = palette.get(node_id)
            if spec is None:
                continue
            ports, given = spec["ports"], {}
            for attr in list(el.attrib):
                if attr in ports:
                    value = el.attrib.pop(attr)
                    kind = ports[attr]["type"]
                    if not is_pointer(value) and ports[attr]["direction"] == "input" and convert(value, kind) is None:
                        raise Rejected(f'The port with name "{attr}" and value "{value}" can not be converted to '
                                       f'{TYPE_NAMES.get(kind, kind)} (<{el.tag}>, line {el.sourceline})')
                    given[attr] = value
            instances.append({"id": node_id, "given": given, "line": el.sourceline,
                              "name": el.get("name", node_id)})
            el.set("name", f"{MARK}{len(instances) - 1}")
    old_lines = [el.sourceline for el in root.iter() if isinstance(el.tag, str)]
    out = etree.tostring(root.getroottree(), encoding="unicode")
    new_root = etree.fromstring(out.encode("utf-8"), parser)
    origin = dict(zip((e for e in new_root.iter() if isinstance(e.tag, str)), old_lines))
    text_lines, printed_lines = {}, {}
    for el, old in origin.items():
        text_lines.setdefault(el.sourceline, old)
    # BT.CPP reports "Error at line N" on the document as tinyxml2 prints it: one line per node
    # (comments too) and one per closing tag of a node with children.
    counter = 1

    def walk(node):
        nonlocal counter
        if isinstance(node.tag, str) and node in origin:
            printed_lines.setdefault(counter, origin[node])
        counter += 1
        if isinstance(node.tag, str) and len(node) and not (node.text or "").strip():
            for child in node:
                walk(child)
            counter += 1
    for node in [*reversed(list(new_root.itersiblings(preceding=True))), new_root, *new_root.itersiblings()]:
        walk(node)
    return out, instances, (text_lines, printed_lines), elements


def fix_message(msg, line_map, instances):
    """BT.CPP's message in terms of the candidate's own text: original line numbers and node names."""
    text_lines, printed_lines = line_map

    def line(m):
        n = int(m.group(2))
        table = printed_lines if m.group(1) == "Error at line " else text_lines
        return f"{m.group(1)}{table.get(n, n)}"
    msg = re.sub(r"(Error at line |line |Line number=|line number )(\d+)", line, msg)
    return re.sub(MARK + r"(\d+)", lambda m: instances[int(m.group(1))]["name"], msg)


def typed_string_entries(text, palette):
    """Root blackboard entries that a std::string port of a palette node is bound to ({key}, {=} or a
    {key} default), through SubTree remapping (explicit, `_autoremap`, `@` root keys).

    Real BT.CPP creates the entry of such a port, typed std::string, when it builds the tree. The
    palette nodes are registered here without ports, so BT.CPP does not; and an entry the runner seeds
    with Blackboard::set<std::string> is only "AnyTypeAllowed" (untyped). BT.CPP 4's SetBlackboard
    parses a literal through the existing entry's converter when the entry is not typed std::string,
    and an untyped entry has none: SetBlackboard output_key="k" then leaves k empty, and the next
    leaf reads it as unset. scenario_run gives these entries the std::string type the port would."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    root = etree.fromstring(text.encode("utf-8"), parser)
    trees = {t.get("ID"): t for t in root.iter("BehaviorTree")}
    main = trees.get(root.get("main_tree_to_execute"))
    if main is None and trees:
        main = next(iter(trees.values()))
    found, visits = set(), [0]

    def resolve(key, chain):
        """The root key an entry of the innermost tree of chain refers to (None: a local entry)."""
        for explicit, autoremap in reversed(chain):
            if key.startswith("@"):
                return key[1:]
            if key in explicit:
                value = explicit[key]
                if not is_pointer(value):
                    return None
                key = key if value == "{=}" else value[1:-1]
            elif not autoremap:
                return None
        return key[1:] if key.startswith("@") else key

    def walk(tree, chain, depth):
        visits[0] += 1
        if tree is None or depth > 16 or visits[0] > 10000:    # BT.CPP itself refuses deeper trees
            return
        for el in tree.iter():
            if not isinstance(el.tag, str):
                continue
            if el.tag == "SubTree":
                explicit = {k: v for k, v in el.attrib.items() if k not in ("ID", "name") and not k.startswith("_")}
                walk(trees.get(el.get("ID")), chain + [(explicit, el.get("_autoremap", "").strip() == "true")],
                     depth + 1)
                continue
            node_id = el.get("ID") if el.tag in ("Action", "Condition") and el.get("ID") else el.tag
            spec = palette.get(node_id)
            if spec is None:
                continue
            for port, p in spec["ports"].items():
                value = el.get(port, p.get("default"))
                if p["type"] != "string" or value is None or not is_pointer(value):
                    continue
                key = resolve(port if value == "{=}" else value[1:-1], chain)
                if key:
                    found.add(key)
    walk(main, [], 0)
    return found


# --- the palette as Python callbacks ----------------------------------------------------------------

class Script:
    """Scripted node behaviour of one scenario and the trace it produces."""

    def __init__(self, palette, scenario, instances, budget):
        self.palette, self.instances = palette, instances
        self.statuses = scenario.get("nodes", {})
        self.outputs = scenario.get("outputs", {})
        self.calls, self.successes = {}, {}
        self.trace, self.budget, self.leaf_ticks = [], budget, 0

    def status_for(self, node_id):
        seq = self.statuses.get(node_id) or ["SUCCESS"]
        i = self.calls.get(node_id, 0)
        self.calls[node_id] = i + 1
        return seq[min(i, len(seq) - 1)]

    def read(self, bb, key):
        for getter in (bb.get_string, bb.get_int, bb.get_double, bb.get_bool):
            try:
                value = getter(key)
            except Exception:  # noqa: BLE001 - missing entry or another type: try the next getter
                continue
            return value if isinstance(value, str) else json.dumps(value)
        return None

    def port_value(self, spec, port, inst):
        value = inst["given"].get(port, spec["ports"][port].get("default"))
        if value is None:
            return None, None
        if value == "{=}":
            return port, None
        if is_pointer(value):
            return value[1:-1], None
        return None, value

    def tick(self, node):
        name = node.name()
        if not name.startswith(MARK):
            self.trace.append(f"unidentified node {name}")
            return bt.NodeStatus.FAILURE
        inst = self.instances[int(name[len(MARK):])]
        node_id = inst["id"]
        spec = self.palette[node_id]
        self.leaf_ticks += 1
        if self.leaf_ticks > self.budget:
            self.trace.append(f"stopped: more than {self.budget} leaf ticks")
            raise_limit(self)
        bb = node.config().blackboard
        shown, problem = [], ""
        for port, p in spec["ports"].items():
            if p["direction"] == "output":
                continue
            key, literal = self.port_value(spec, port, inst)
            value = literal if key is None else self.read(bb, key)
            if value is None:
                problem = problem or "missing input"
                value = "<unset>"
            elif convert(value, p["type"]) is None:
                problem = problem or f"input not convertible to {p['type']}"
            else:
                value = convert(value, p["type"])
            shown.append(f"{port}={value}")
        label = node_id + (" " + " ".join(shown) if shown else "")
        if problem:
            # a real node's getInput() fails: it returns FAILURE
            self.trace.append(f"{label} -> FAILURE ({problem})")
            return bt.NodeStatus.FAILURE
        status = self.status_for(node_id)
        if status == "SUCCESS":
            n = self.successes[node_id] = self.successes.get(node_id, 0) + 1
            for port, p in spec["ports"].items():
                if p["direction"] == "input":
                    continue
                key, _ = self.port_value(spec, port, inst)
                if key is None:
                    continue
                values = (self.outputs.get(node_id) or {}).get(port)
                value = values[min(n, len(values)) - 1] if values else f"{node_id}.{port}#{n}"
                bb.set_string(key, value)
        self.trace.append(f"{label} -> {status}")
        return STATUS[status]

    def halted(self, node):
        name = node.name()
        node_id = self.instances[int(name[len(MARK):])]["id"] if name.startswith(MARK) else name
        self.trace.append(f"{node_id} halted")


def raise_limit(script):
    """An endless loop inside one tick (Repeat num_cycles=-1 over instant children...): report and stop."""
    _send({"trace": script.trace, "final": "LIMIT", "blackboard": {}})
    os._exit(0)


def factory_for(palette, script):
    factory = bt.BehaviorTreeFactory()
    for node_id, spec in palette.items():
        if spec["kind"] == "Condition":
            factory.register_simple_condition(node_id, script.tick)
        else:
            factory.register_simple_stateful_action(node_id, script.tick, script.tick, script.halted)
    return factory


# --- one child per load / scenario -----------------------------------------------------------------

_PIPE = None


def _send(obj):
    data = json.dumps(obj).encode()
    os.write(_PIPE, data)
    os.close(_PIPE)


def in_child(fn, *args, timeout_s=CHILD_TIMEOUT_S):
    """Run fn(*args) -> JSON-able dict in a forked child; crashes and hangs become reports."""
    global _PIPE
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _PIPE = w
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 - reported, never raised past the child
            result = {"runner_error": f"{type(e).__name__}: {e}"}
        _send(result)
        os._exit(0)
    os.close(w)
    chunks, deadline = [], time.monotonic() + timeout_s
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([r], [], [], left)
        if not ready:
            continue
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"crash": f"no answer within {timeout_s:.0f} s (endless loop inside a tick?)", "fault": "timeout"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return {"crash": f"BehaviorTree.CPP crashed (signal {signal.Signals(sig).name})",
                "fault": "resource_limit" if sig in LIMIT_SIGNALS else "runtime_error"}
    try:
        return json.loads(b"".join(chunks).decode())
    except ValueError:
        return {"crash": f"no report from the child (exit status {status})"}


def load(text, palette):
    try:
        xml, instances, line_map, elements = prepare(text, palette)
    except Rejected as e:
        return {"loaded": False, "error": str(e)}
    script = Script(palette, {}, instances, 0)
    factory = factory_for(palette, script)
    try:
        factory.create_tree_from_text(xml)
    except MemoryError:       # BT.CPP's std::bad_alloc, e.g. a tree that includes itself as a SubTree
        return {"loaded": False, "error": "out of memory while building the tree (a recursive SubTree?)",
                "fault": "resource_limit"}
    except Exception as e:  # noqa: BLE001 - BT.CPP's RuntimeError / LogicError
        return {"loaded": False, "error": fix_message(str(e), line_map, instances)}
    return {"loaded": True, "instances": [{k: i[k] for k in ("id", "given", "line")} for i in instances],
            "elements": elements}


def scenario_run(text, palette, scenario, check_keys):
    xml, instances, line_map, _ = prepare(text, palette)
    script = Script(palette, scenario, instances, int(scenario.get("leaf_budget", 400)))
    factory = factory_for(palette, script)
    board = bt.Blackboard.create()
    typed = typed_string_entries(text, palette)
    for key, value in (scenario.get("blackboard") or {}).items():
        board.set_string(key, str(value))
        if key in typed:
            # the second set<std::string> of an untyped entry types it std::string (Blackboard::set),
            # as the palette port's own entry would be (see typed_string_entries)
            board.set_string(key, str(value))
    tree = factory.create_tree_from_text(xml, board)
    final = "RUNNING"
    for tick in range(1, int(scenario.get("max_ticks", 20)) + 1):
        script.trace.append(f"tick {tick}")
        try:
            status = tree.tick_exactly_once()
        except Exception as e:  # noqa: BLE001 - a runtime error of BT.CPP (script, missing parameter)
            first = fix_message(str(e), line_map, instances).strip().splitlines()
            script.trace.append(f"runtime error: {' / '.join(first[:2]) if first else type(e).__name__}")
            final = "ERROR"
            break
        final = status.name
        if status != bt.NodeStatus.RUNNING:
            break
    else:
        script.trace.append("tick limit reached: halt")
        tree.halt_tree()
    values = {key: script.read(board, key) for key in check_keys}
    return {"trace": script.trace, "final": final, "blackboard": values}


def judge(path, oracle, run):
    text = open(path, encoding="utf-8", errors="replace").read()
    limit = float(oracle.get("child_timeout_s", CHILD_TIMEOUT_S))
    entry = in_child(load, text, oracle["palette"], timeout_s=limit)
    if run and entry.get("loaded"):
        entry["scenarios"] = [in_child(scenario_run, text, oracle["palette"], s, oracle.get("check_keys", []),
                                       timeout_s=limit) for s in oracle["scenarios"]]
    return entry


def main():
    mode, out_path, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
    if mode == "check":  # a batch of trees, each with its own palette and scenarios (upstream import)
        batch = json.load(open("bt_batch.json", encoding="utf-8"))
        report = {item["file"]: judge(item["file"], item, True) for item in batch}
    else:
        oracle = json.load(open("bt_oracle.json", encoding="utf-8"))
        report = {path: judge(path, oracle, mode == "run") for path in programs}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
