"""Behavior Tree XML (BehaviorTree.CPP v4): syntax = BT.CPP loads the tree with the task's node palette;
semantic = port wiring against the palette, then tick traces under scripted scenarios equal the gold's.

The oracle of a task:
  palette: nodes.xml            context file holding a <TreeNodesModel> (the node palette shown to
                                the model): <Action|Condition ID=...> with <input_port|output_port|
                                inout_port name=... type=... [default=...]>; a port without a
                                default is mandatory
  scenarios:                    at least one
    - name: battery low         unique
      nodes: {IsBatteryLow: [SUCCESS], Recharge: [RUNNING, SUCCESS]}
                                status of the k-th tick of any node of that type (the last one
                                repeats; unlisted nodes return SUCCESS; conditions never RUNNING)
      outputs: {DetectObject: {pose: [cup_pose]}}
                                value an output port writes on the k-th SUCCESS of that type
                                (default "<ID>.<port>#<k>")
      blackboard: {goal: dock}  string entries of the root blackboard before the first tick
      max_ticks: 20             ticks of the root before the run is cut (and halted)
      leaf_budget: 400          leaf ticks before an endless loop inside one tick is cut
  check_keys: [result]          root blackboard entries compared after every scenario (optional)
  require:                      structure the traces cannot see (optional)
    - {node: Timeout, attributes: {msec: "30000"}}
"""
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from dslbench import sandbox
from dslbench.toolchains import Probe, Toolchain, installed_versions

RUNNER = Path(__file__).with_name("run_bt.py")
PORT_TAGS = {"input_port": "input", "output_port": "output", "inout_port": "inout"}
TYPES = {"std::string": "string", "string": "string", "int": "int", "unsigned": "uint", "unsigned int": "uint",
         "double": "double", "bool": "bool"}


def parse_palette(text: str) -> dict:
    """{ID: {kind, ports: {name: {direction, type, default}}}} from a <TreeNodesModel> document."""
    root = ET.fromstring(text)
    model = root if root.tag == "TreeNodesModel" else root.find("TreeNodesModel")
    if model is None:
        raise ValueError("no <TreeNodesModel> element")
    palette = {}
    for node in model:
        if node.tag not in ("Action", "Condition"):
            raise ValueError(f"<{node.tag}>: only <Action> and <Condition> palette nodes are supported")
        node_id = node.get("ID")
        if not node_id or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", node_id):
            raise ValueError(f"<{node.tag}> needs an ID made of letters, digits and _")
        if node_id in palette:
            raise ValueError(f"node {node_id} is declared twice")
        ports = {}
        for port in node:
            if port.tag == "description":
                continue
            if port.tag not in PORT_TAGS:
                raise ValueError(f"{node_id}: <{port.tag}> is not a port declaration")
            name = port.get("name", "")
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or name in ("name", "ID"):
                raise ValueError(f"{node_id}: invalid port name {name!r}")
            if name in ports:
                raise ValueError(f"{node_id}: port {name} declared twice")
            raw_type = port.get("type", "std::string")
            if raw_type not in TYPES:
                raise ValueError(f"{node_id}.{name}: type {raw_type!r} is not one of {', '.join(TYPES)}")
            ports[name] = {"direction": PORT_TAGS[port.tag], "type": TYPES[raw_type], "default": port.get("default")}
        palette[node_id] = {"kind": node.tag, "ports": ports}
    if not palette:
        raise ValueError("the palette declares no node")
    return palette


def _btgenbot():
    """The BTGenBot importer (btgenbot.py beside this file)."""
    from . import btgenbot
    return btgenbot


def _btcpp_version() -> str:
    """The BehaviorTree.CPP release compiled into the binding (its version string in the extension)."""
    # Found through the wheel's file list, not find_spec: finding a submodule imports the package, and
    # loading its C++ extension into a process that holds RDKit's aborts it.
    try:
        files = importlib.metadata.files("behaviortreepy") or []
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
    ext = [f for f in files if f.name.startswith("_behaviortreepy") and f.name.endswith(".so")]
    if not ext:
        return "unknown"
    found = re.findall(rb"\x00(4\.\d+\.\d+)\x00", Path(ext[0].locate()).read_bytes())
    return found[0].decode() if len(set(found)) == 1 else "unknown"


def _first_line(text: str, limit: int = 300) -> str:
    """The first line of a message; for BT.CPP script errors also the caret's complaint."""
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    if not lines:
        return "no message"
    first = lines[0]
    carets = [ln.split("^")[-1].strip() for ln in lines[1:] if "|" in ln and "^" in ln]
    if carets and carets[0]:
        first = f"{first}: {carets[0]}"
    return first[:limit]


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # BT.CPP loads the XML
    SEMANTIC_FAIL = "oracle_mismatch"  # tree-structure and dataflow checks

    def probe(self) -> Probe:
        versions, problem = installed_versions({"behaviortreepy": None, "lxml": None})
        if problem:
            return Probe(self.dsl, self.card["toolchain"], "", False, problem)
        check = subprocess.run([sys.executable, "-c", "import behaviortreepy, lxml.etree"], capture_output=True,
                               text=True, timeout=60)
        if check.returncode != 0:
            return Probe(self.dsl, self.card["toolchain"], "", False,
                         f"behaviortreepy does not import: {_first_line(check.stderr.splitlines()[-1] if check.stderr else '')}")
        version = versions["behaviortreepy"]
        return Probe(self.dsl, self.card["toolchain"],
                     f"BehaviorTree.CPP {_btcpp_version()} (PyPI behaviortreepy {version})", True,
                     dialect=self.card["dialect"])

    # --- oracle spec ---------------------------------------------------------------------------
    def oracle_rules(self, task):
        o = task.oracle
        if o["palette"] not in task.context:
            return [("palette", "must name a context file of the task holding the <TreeNodesModel>")]
        try:
            palette = parse_palette(task.context[o["palette"]])
        except (ET.ParseError, ValueError) as e:
            return [("palette", f"context file '{o['palette']}': {e}")]
        problems, names = [], set()
        for i, s in enumerate(o["scenarios"]):
            where = f"scenarios[{i}]"
            if s["name"] in names:
                problems.append((f"{where}.name", f"duplicate scenario name '{s['name']}'"))
            names.add(s["name"])
            for node_id, seq in s.get("nodes", {}).items():
                if node_id not in palette:
                    problems.append((f"{where}.nodes.{node_id}", "not a node of the palette"))
                elif palette[node_id]["kind"] == "Condition" and "RUNNING" in seq:
                    problems.append((f"{where}.nodes.{node_id}", "a condition cannot return RUNNING"))
            for node_id, ports in s.get("outputs", {}).items():
                if node_id not in palette:
                    problems.append((f"{where}.outputs.{node_id}", "not a node of the palette"))
                    continue
                for port in ports:
                    if palette[node_id]["ports"].get(port, {}).get("direction") not in ("output", "inout"):
                        problems.append((f"{where}.outputs.{node_id}.{port}", "not an output port of the node"))
        return problems

    # --- upstream ----------------------------------------------------------------------------------
    def import_upstream(self, source: Path):
        """Tasks from BTGenBot's dataset/bt_dataset.json (see btgenbot.py). Records that cannot be migrated,
        or whose migrated tree BehaviorTree.CPP 4 rejects, cannot run or fails its own oracle, are skipped
        with a reason code."""
        from dslbench.upstream import Skip, convert_each
        bg = _btgenbot()
        records = bg.read_records(bg.find_dataset(Path(source)))

        def convert(record_id, record):
            try:
                task = bg.to_task(int(record_id), bg.check_record(record))
                parse_palette(task["context"]["nodes.xml"])   # a palette our loader refuses is a malformed record
                return task
            except bg.Unconvertible as e:
                return Skip(record_id, e.reason, str(e))
        made = convert_each(((str(i), r) for i, r in enumerate(records)), convert, progress=True, total=len(records))
        if made.tasks and self.probe().available:
            rejected = {}
            chunk = 40   # batches of trees, so that a long import shows its progress
            from tqdm.auto import tqdm
            for start in tqdm(range(0, len(made.tasks), chunk), desc="BT.CPP check", unit="batch",
                              disable=len(made.tasks) <= chunk):
                rejected.update(self._check_batch(made.tasks[start:start + chunk]))
            made.skipped += [Skip(t["provenance"]["upstream_id"], *rejected[t["id"]]) for t in made.tasks
                             if t["id"] in rejected]
            made.tasks = [t for t in made.tasks if t["id"] not in rejected]
        elif made.tasks:
            made.skipped += [Skip(t["provenance"]["upstream_id"], "toolchain_unavailable",
                                  "BehaviorTree.CPP unavailable: the migrated tree was not loaded (" +
                                  self.probe().reason + ")") for t in made.tasks]
            made.tasks = []
        return made

    def _check_batch(self, tasks: list[dict]) -> dict[str, tuple[str, str]]:
        """{task id: (reason code, why)} for migrated golds that BT.CPP does not load, that fail at run
        time or that miss their own inferred ports."""
        work = sandbox.new_workdir("dslbench-import-")
        try:
            batch = []
            for t in tasks:
                name = f"{t['id']}.xml"
                (work / name).write_text(t["gold"], encoding="utf-8")
                batch.append({"file": name, "palette": parse_palette(t["context"]["nodes.xml"]),
                              "scenarios": t["oracle"]["scenarios"]})
            (work / "bt_batch.json").write_text(json.dumps(batch), encoding="utf-8")
            result, report = self.run_runner([RUNNER], ["check", "report.json"], work, timeout_s=max(60, 5 * len(tasks)))
            if report is None:
                raise RuntimeError(f"BT runner failed while checking the imported trees (exit {result.returncode})")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        rejected = {}
        for t in tasks:
            entry = report[f"{t['id']}.xml"]
            if "crash" in entry or "runner_error" in entry or not entry.get("loaded"):
                why = entry.get("error") or entry.get("crash") or entry.get("runner_error")
                rejected[t["id"]] = ("btcpp_rejects", f"BehaviorTree.CPP 4 rejects the migrated tree: {_first_line(why)}")
                continue
            problem = self._ports(entry["instances"], parse_palette(t["context"]["nodes.xml"]))
            if problem:
                rejected[t["id"]] = ("gold_fails_own_oracle", f"the migrated gold fails its inferred ports: {problem}")
                continue
            for s in entry["scenarios"]:
                problem = s.get("crash") or s.get("runner_error") or next(
                    (e for e in s.get("trace", []) if e.startswith("runtime error")), None)
                if problem:
                    rejected[t["id"]] = ("runtime_error", f"the migrated tree fails at run time: {_first_line(problem)}")
                    break
        return rejected

    # --- running -----------------------------------------------------------------------------------
    def _run(self, mode: str, work: Path, task, files: list[str]):
        palette = parse_palette(task.context[task.oracle["palette"]])
        oracle = {"palette": palette, "scenarios": task.oracle["scenarios"],
                  "check_keys": task.oracle.get("check_keys", []),
                  "child_timeout_s": self.limits().timeout_s}   # the card's limit for each load and scenario
        (work / "bt_oracle.json").write_text(json.dumps(oracle), encoding="utf-8")
        result, report = self.run_runner([RUNNER], [mode, "report.json", *files], work)
        return result, report, palette

    def syntax(self, program, task, work):
        result, report, _ = self._run("load", work, task, [self.file_name])
        if report is None:
            status = "fail" if result.timed_out else "error"
            return self.verdict(status, f"BT runner failed (exit {result.returncode}{', timed out' if result.timed_out else ''})", result)
        entry = report[self.file_name]
        if "crash" in entry:
            return self.verdict("fail", entry["crash"], result, reason=entry.get("fault", ""))
        if "runner_error" in entry:
            return self.verdict("error", f"runner: {_first_line(entry['runner_error'])}", result)
        if not entry["loaded"]:
            return self.verdict("fail", _first_line(entry["error"]), result, reason=entry.get("fault", ""))
        return self.verdict("pass", f"BehaviorTree.CPP loads the tree ({len(entry['instances'])} palette node(s))", result)

    def semantic(self, program, task, work):
        (work / "gold.xml").write_text(task.gold, encoding="utf-8")
        result, report, palette = self._run("run", work, task, [self.file_name, "gold.xml"])
        if report is None:
            status = "fail" if result.timed_out else "error"
            return self.verdict(status, f"BT runner failed (exit {result.returncode}{', timed out' if result.timed_out else ''})", result)
        gold, cand = report["gold.xml"], report[self.file_name]
        if not gold.get("loaded") or any("crash" in s or "runner_error" in s for s in gold["scenarios"]):
            return self.verdict("error", "the gold tree does not load or run", result, reason="gold_broken")
        if "crash" in cand or "runner_error" in cand or not cand.get("loaded"):
            return self.verdict("error", "the candidate passed the syntax level but does not load now", result)
        problem = self._ports(cand["instances"], palette)
        if problem:
            return self.verdict("fail", problem, result)
        for scenario, got, want in zip(task.oracle["scenarios"], cand["scenarios"], gold["scenarios"]):
            name = scenario["name"]
            if "crash" in got:
                return self.verdict("fail", f"scenario '{name}': {got['crash']}", result, reason=got.get("fault", ""))
            if "runner_error" in got:
                return self.verdict("error", f"scenario '{name}': runner: {_first_line(got['runner_error'])}", result)
            diff, expected = _trace_diff(got["trace"], want["trace"], got["final"], want["final"])
            if diff:
                return self.verdict("fail", f"scenario '{name}': {diff}", result,
                                    expected=f"scenario '{name}': {expected}")
            for key, value in want["blackboard"].items():
                if got["blackboard"].get(key) != value:
                    return self.verdict("fail", f"scenario '{name}': blackboard [{key}] = {got['blackboard'].get(key)!r}",
                                        result, expected=f"scenario '{name}': expected blackboard [{key}] = {value!r}")
        missing, expected = self._required(cand["elements"], task)
        if missing:
            return self.verdict("fail", missing, result, expected=expected)
        n = len(task.oracle["scenarios"])
        return self.verdict("pass", f"ports match the palette; traces equal the gold's in {n} scenario(s)", result)

    @staticmethod
    def _ports(instances: list, palette: dict) -> str:
        """Mandatory ports wired, output ports bound to blackboard entries."""
        for inst in instances:
            spec = palette[inst["id"]]
            for port, p in spec["ports"].items():
                value = inst["given"].get(port)
                if value is None:
                    if p["default"] is None:
                        return f"line {inst['line']}: <{inst['id']}> lacks its mandatory {p['direction']} port [{port}]"
                elif p["direction"] != "input" and not (value.startswith("{") and value.endswith("}")):
                    return (f"line {inst['line']}: {p['direction']} port [{port}] of <{inst['id']}> must be a blackboard "
                            f"entry like {{key}}, got '{value}'")
        return ""

    @staticmethod
    def _required(elements: list, task) -> tuple[str, str]:
        """Structural requirements (decorator parameters the scenarios cannot observe): (the first one
        the tree misses, the requirement itself), the required attribute values kept out of the first."""
        for req in task.oracle.get("require") or []:
            want = {k: str(v) for k, v in (req.get("attributes") or {}).items()}
            if not any(el["id"] == req["node"] and all(el["attributes"].get(k, "").strip() == v for k, v in want.items())
                       for el in elements):
                attrs = " ".join(f'{k}="{v}"' for k, v in want.items())
                if not attrs:
                    return f"the tree has no <{req['node']}> (required by the task)", ""
                return (f"the tree has no <{req['node']}> with the attribute values the task requires",
                        f"the task requires <{req['node']} {attrs}>")
        return "", ""


CUT = ("RUNNING", "LIMIT")   # finals of runs stopped by the tick limit or the leaf-tick budget


def _events(trace: list) -> list[tuple[int, str]]:
    """(tick, event) pairs of the leaf executions and halts, without the tick markers; a run cut by
    a limit ends at the cut (the halts that follow it are the harness's, not the tree's)."""
    out, tick = [], 0
    for entry in trace:
        if entry.startswith("tick limit reached") or entry.startswith("stopped: more than"):
            break
        if entry.startswith("tick "):
            tick = int(entry.split()[1])
        else:
            out.append((tick, entry))
    return out


def _trace_diff(got_trace: list, want_trace: list, got_final: str, want_final: str) -> tuple[str, str]:
    """(the first difference between two runs in terms of the candidate's run, what the gold's run did
    there), or ('', ''). Tick boundaries are not compared (a SequenceWithMemory yields after each
    asynchronous child, a Sequence does not), only the order of leaf executions, their inputs and
    results, halts and the final status. Two runs that both never end are compared on their common prefix."""
    got, want = _events(got_trace), _events(want_trace)
    for i, ((gt, g), (_, w)) in enumerate(zip(got, want)):
        if g != w:
            return f"tick {gt}: got '{g}' (event {i + 1})", f"event {i + 1}: expected '{w}'"
    if got_final in CUT and want_final in CUT:
        return "", ""
    if len(got) > len(want):
        return (f"tick {got[len(want)][0]}: got '{got[len(want)][1]}' (event {len(want) + 1}), after which the "
                f"tree should have ended", f"the tree ends with {_final(want_final)} after {len(want)} events")
    if len(got) < len(want):
        return (f"the tree ended with {_final(got_final)} after {len(got)} events, too early",
                f"event {len(got) + 1}: expected '{want[len(got)][1]}' next")
    if got_final != want_final:
        return f"the tree ended with {_final(got_final)}", f"the tree ends with {_final(want_final)}"
    return "", ""


def _final(final: str) -> str:
    return {"RUNNING": "RUNNING at the tick limit", "LIMIT": "an endless loop (leaf-tick budget)"}.get(final, final)
