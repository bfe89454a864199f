"""GDScript (Godot 3): syntax = Godot's own `--check-only` parse/analysis of the candidate script;
semantic = a runtime harness (harness.gd) run in headless Godot, first on the gold (in its own work
directory) and then on the candidate: it guards can_instance(), checks the base class, and drives a
fresh instance through the task's scenarios; the step values must match.

Oracle spec (task.oracle):
  base: Node2D                 class the script must extend (instance.is_class(base))
  new_args: [..]               optional arguments of new()
  output: true                 optional: the lines the script prints must equal the gold's
  probes: {NAME: SOURCE}       optional GDScript sources (extends Reference) of probes, each with a
                               `func probe(target)` whose return value a `probe` step compares (what
                               a course class recorded, reduced as the course's tester reads it)
  nodes:                       optional stand-ins for scene nodes the script reaches ($Name, find_node):
    - {path: Name, type: Node2D, methods: [..], props: [..], signals: [..], values: {..}}   added as
                               children (owned, in the order listed) before the instance enters the
                               tree; methods the type lacks only record their calls in the node's
                               `dslbench_calls`; values maps a property to a Godot literal (the scene
                               file's own text, e.g. "Vector2( 0.8, 0.8 )") set when the node is made;
                               script names a context file that the node runs instead of a stand-in
                               script (the scene's own script of that node); a value may be
                               Resource( "res://x.png" ) for an image listed in textures
  textures: [res://x.png, ..]  optional course images (preloaded by a script or set by the scene): each
                               loads as one stand-in texture under its own path
  scenarios:                   each starts from a fresh instance
    - name: "text"             optional
      tree: true               optional: add the instance (a Node) to the SceneTree first (_ready runs)
      steps:                   exactly one action key per step:
        - call: NAME           args: [..], on: SLOT, as: SLOT, ignore: bool, expect: VALUE
        - get: NAME            on, as, ignore, expect           (a property; setget getters run)
        - set: NAME            value: VALUE (required), on       (setget setters run)
        - connect: SIGNAL      on                                 (start recording emissions)
        - emitted: SIGNAL      on, ignore, expect                 (emissions since the last check)
        - new: INNER_CLASS     args, as, ignore, expect           (an inner class / const script)
        - const: NAME          ignore, expect                     (a script constant or enum)
        - probe: NAME          on, as, ignore, expect             (the oracle's probe NAME: its
                                                                  `func probe(target)` reduces the object to
                                                                  the value compared)
        - tick: FRAMES         delta (default 1/60)                (FRAMES simulated frames: each emits the
                                                                  tree's idle_frame/physics_frame signals, so
                                                                  a yield on them resumes, and calls
                                                                  _process/_physics_process of a processing
                                                                  instance)
Every step's result is compared with the gold's result on the same step (and with `expect` when
given; the gold must agree with it). A runtime error of the candidate (SCRIPT ERROR) fails.
Values: YAML scalars, lists and mappings (-> Dictionary); {Vector2: [x, y]}, {Vector3: [x, y, z]},
{Rect2: [x, y, w, h]} and {Color: [r, g, b, a]} give those Godot types.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
from pathlib import Path

from dslbench import sandbox
from dslbench.toolchains import Toolchain, tool_version

HERE = Path(__file__).parent
HARNESS = HERE / "harness.gd"
# Binaries tried, in order; the newest Godot 3.x that runs headless in the sandbox judges.
CANDIDATES = ("godot3-server", "godot3", "godot-headless", "godot", "godot3-headless", "godot4")
ENV = {"LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8"}   # Godot rejects the C locale with error lines
OPS = {                                         # step actions and the keys each takes besides its own
    "call": {"args", "on", "as", "ignore", "expect"},
    "get": {"on", "as", "ignore", "expect"},
    "set": {"value", "on"},
    "connect": {"on"},
    "emitted": {"on", "ignore", "expect"},
    "new": {"args", "as", "ignore", "expect"},
    "const": {"ignore", "expect"},
    "probe": {"on", "as", "ignore", "expect"},
    "tick": {"on", "delta"},
}
GODOT_TYPES = {"Vector2": 2, "Vector3": 3, "Rect2": 4, "Color": 4}
RESULT_FREE = {"set", "connect", "tick"}          # steps with no value to compare


# --- values: YAML -> Godot Variant text (str2var) and tagged JSON (as the harness prints) -----------

def _num(x) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"expected a number, got {x!r}")
    if isinstance(x, int):
        return str(x)
    if not math.isfinite(x):
        raise ValueError("non-finite floats are not supported")
    text = format(x, ".17g")
    if "e" in text and "." not in text.split("e")[0]:
        mant, exp = text.split("e")
        text = f"{mant}.0e{exp}"
    elif "e" not in text and "." not in text:
        text += ".0"
    return text


def _godot_type(value):
    """(type name, components) when a mapping spells a Godot math type, else None."""
    if isinstance(value, dict) and len(value) == 1:
        (key, comps), = value.items()
        if key in GODOT_TYPES:
            if not isinstance(comps, list) or len(comps) != GODOT_TYPES[key] and not (key == "Color" and len(comps) == 3):
                raise ValueError(f"{key} needs {GODOT_TYPES[key]} numbers")
            return key, comps
    return None


def var_text(value) -> str:
    """Godot's Variant text (what var2str writes and str2var reads) for a YAML value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _num(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if isinstance(value, list):
        return "[ " + ", ".join(var_text(v) for v in value) + " ]" if value else "[  ]"
    if isinstance(value, dict):
        gt = _godot_type(value)
        if gt:
            return f"{gt[0]}( " + ", ".join(_num(float(c) if isinstance(c, int) else c) for c in gt[1]) + " )"
        if not value:
            return "{\n}"
        for k in value:
            if not isinstance(k, (str, int, bool)):
                raise ValueError(f"dictionary key {k!r} must be a string, integer or boolean")
        return "{ " + ", ".join(f"{var_text(k)}: {var_text(v)}" for k, v in value.items()) + " }"
    raise ValueError(f"unsupported value {value!r}")


def tagged(value):
    """A YAML value in the harness's tagged JSON form (for comparing with `expect`)."""
    if isinstance(value, list):
        return [tagged(v) for v in value]
    if isinstance(value, dict):
        gt = _godot_type(value)
        if gt:
            comps = list(gt[1]) + ([1.0] if gt[0] == "Color" and len(gt[1]) == 3 else [])
            return {gt[0]: comps}
        return {"Dictionary": [[tagged(k), tagged(v)] for k, v in value.items()]}
    return value


def _canon(v):
    """Hashable canonical text of a tagged value (numbers to 9 significant digits)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return format(float(v), ".9g")
    if isinstance(v, list):
        return "[" + ",".join(_canon(x) for x in v) + "]"
    if isinstance(v, dict) and "Dictionary" in v:
        return "{" + ",".join(sorted(f"{_canon(k)}:{_canon(x)}" for k, x in v["Dictionary"])) + "}"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={_canon(v[k])}" for k in sorted(v)) + "}"
    return repr(v)


def same(a, b) -> bool:
    """Equality of two tagged values: numbers within 1e-6 (1 == 1.0), dictionaries regardless of order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if "Dictionary" in a and "Dictionary" in b:
            pa, pb = a["Dictionary"], b["Dictionary"]
            if len(pa) != len(pb):
                return False
            ka = {_canon(k): v for k, v in pa}
            kb = {_canon(k): v for k, v in pb}
            return ka.keys() == kb.keys() and all(same(ka[k], kb[k]) for k in ka)
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def show(v, limit: int = 160) -> str:
    """A GDScript-like rendering of a tagged value for diagnostics."""
    def r(x):
        if x is None:
            return "null"
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, float):
            return format(x, ".6g")
        if isinstance(x, (int, str)):
            return json.dumps(x) if isinstance(x, str) else str(x)
        if isinstance(x, list):
            return "[" + ", ".join(r(y) for y in x) + "]"
        if isinstance(x, dict):
            if "__error__" in x:
                return f"<{x['__error__']}>"
            if "Dictionary" in x:
                return "{" + ", ".join(f"{r(k)}: {r(y)}" for k, y in x["Dictionary"]) + "}"
            if "Object" in x:
                props = x.get("props")
                return f"{x['Object']}" + ("(" + ", ".join(f"{k}={r(y)}" for k, y in props.items()) + ")" if props else "")
            (k, y), = x.items() if len(x) == 1 else ((None, None),)
            if k in GODOT_TYPES:
                return f"{k}(" + ", ".join(r(c) for c in y) + ")"
            if k == "float":
                return str(y)
        return json.dumps(x)
    text = r(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the harness's plan -----------------------------------------------------------------------------

def plan_for(oracle: dict, tag: str, scripts: list[str]) -> dict:
    scenarios = []
    for sc in oracle["scenarios"]:
        steps = []
        for step in sc["steps"]:
            op = next(k for k in step if k in OPS)
            args = [float(step.get("delta", 1 / 60))] if op == "tick" else step.get("args", [])
            steps.append({"op": op, "name": str(step[op]), "args": var_text(args),
                          "value": var_text(step.get("value")), "on": step.get("on", "self"),
                          "as": step.get("as", "")})
        scenarios.append({"tree": bool(sc.get("tree", False)), "steps": steps})
    nodes = [{"path": n["path"], "type": n["type"], "values": dict(n.get("values", {})), "script": n.get("script", ""),
              **{k: list(n.get(k, [])) for k in ("methods", "props", "signals")}}
             for n in oracle.get("nodes", [])]
    return {"tag": tag, "scripts": scripts, "base": oracle["base"], "nodes": nodes,
            "probes": dict(oracle.get("probes", {})),
            "new_args": var_text(oracle.get("new_args", [])), "scenarios": scenarios}


# The one stand-in image: an imported course image (a .png the course preloads or its scene sets)
# loads as this texture, under its own path, so `texture.resource_path` names it as in the course.
STANDIN_TEXTURE = '[gd_resource type="GradientTexture" format=2]\n\n[resource]\nwidth = 4\n'


def give_textures(oracle: dict, work: Path) -> None:
    """Writes the oracle's course images into `work` as Godot's import remaps to the stand-in texture
    (`<path>.import` beside an empty file at the image's own path)."""
    if not oracle.get("textures"):
        return
    (work / "dslbench_texture.tres").write_text(STANDIN_TEXTURE, encoding="utf-8")
    for res in oracle["textures"]:
        image = work / res[len("res://"):]
        if not image.resolve().is_relative_to(work.resolve()):    # the schema refuses such paths too
            raise ValueError(f"texture {res} is outside the work directory")
        image.parent.mkdir(parents=True, exist_ok=True)
        image.touch()
        image.with_name(image.name + ".import").write_text(
            '[remap]\n\nimporter="texture"\ntype="StreamTexture"\npath="res://dslbench_texture.tres"\n', encoding="utf-8")


def step_label(oracle: dict, s: int, i: int) -> str:
    sc = oracle["scenarios"][s]
    name = f" '{sc['name']}'" if sc.get("name") else ""
    if i < 0:
        return f"scenario {s + 1}{name}, new()"
    step = sc["steps"][i]
    op = next(k for k in step if k in OPS)
    what = f"{op} {step[op]}"
    if op in ("call", "new"):
        what += "(" + ", ".join(show(tagged(a), 40) for a in step.get("args", [])) + ")"
    if op == "set":
        what += " = " + show(tagged(step["value"]), 40)
    if step.get("on", "self") != "self":
        what += f" on {step['on']}"
    return f"scenario {s + 1}{name}, step {i + 1} ({what})"


# --- harness output -------------------------------------------------------------------------------

ERROR_LINE = re.compile(r"^(SCRIPT ERROR|ERROR): (.*)$")
SCRIPT_ERROR_LINE = re.compile(r"^(SCRIPT ERROR): (.*)$")
AT_LINE = re.compile(r"^\s+At: (.*?)\.?$")
WRONG_BASE = re.compile(r"^the script extends (\S+), not (\S+)$")   # harness.gd's FATAL for a wrong base class


def parse_output(text: str, tag: str) -> dict:
    """Per script: results {(s, i): value}, errors [(s, i, message)], fatal, done, last step reached."""
    out: dict[str, dict] = {}
    current = None
    lines = text.splitlines()
    done = False
    for n, line in enumerate(lines):
        if line.startswith(tag + " "):
            parts = line[len(tag) + 1:].split(" ", 4)
            kind = parts[0]
            if kind == "DONE":
                done = True
                continue
            path = parts[1]
            entry = out.setdefault(path, {"results": {}, "errors": [], "fatal": None, "last": None})
            if kind == "STEP":
                current = (path, int(parts[2]), int(parts[3]))
                entry["last"] = current[1:]
            elif kind == "RES":
                entry["results"][(int(parts[2]), int(parts[3]))] = json.loads(parts[4])
            elif kind == "FATAL":
                entry["fatal"] = line.split(" ", 3)[3] if len(line.split(" ", 3)) > 3 else "fatal"
            continue
        m = SCRIPT_ERROR_LINE.match(line)   # engine ERROR: lines (e.g. JSON.parse of bad text) are not script faults
        if m and current is not None:
            message = m.group(2).strip()
            at = AT_LINE.match(lines[n + 1]) if n + 1 < len(lines) else None
            if at:
                message += f" (at {at.group(1).replace('res://', '')})"
            out[current[0]]["errors"].append((current[1], current[2], message))
    # What the script printed: every other line once the harness has started (engine errors and
    # their "At:" lines are not output).
    started = next((n for n, l in enumerate(lines) if l.startswith(tag + " ")), len(lines))
    printed = [l for n, l in enumerate(lines) if n > started and not l.startswith(tag + " ")
               and not ERROR_LINE.match(l) and not AT_LINE.match(l)]
    return {"scripts": out, "done": done, "printed": printed}


def _first_error(text: str) -> str:
    lines = text.splitlines()
    for n, line in enumerate(lines):
        m = ERROR_LINE.match(line)
        if m:
            message = m.group(2).strip()
            message = re.sub(r"^GDScript::reload: Parse Error: ", "", message)
            at = AT_LINE.match(lines[n + 1]) if n + 1 < len(lines) else None
            if at:
                loc = at.group(1).replace("res://", "")
                message = f"{loc}: {message}"
            return message[:300]
    return ""


# The syntax check of a task whose context is a project with autoloads (see syntax()).
LOAD_CHECK = """extends SceneTree

func _init():
	var script = load("res://PROGRAM")
	quit(0 if script is Script and script.can_instance() else 1)
"""


def _has_autoloads(work: Path) -> bool:
    project = work / "project.godot"
    return project.exists() and "[autoload]" in project.read_text(encoding="utf-8", errors="replace")


def _key(version: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # Godot parses the script
    SEMANTIC_FAIL = "wrong_output"  # the runtime harness

    def _find_judge(self) -> tuple[str | None, str, str]:
        """(binary, version, note): the newest Godot 3.x on PATH that checks a script in the sandbox."""
        found, notes = [], []
        for name in CANDIDATES:
            path = shutil.which(name)
            if not path or any(Path(path).resolve() == Path(p).resolve() for p, _ in found):
                continue
            version = tool_version([path, "--version"], r"(?m)^\s*(\d+\.\d+.*?)\s*$", 20)   # 3.2.3.stable.custom_build
            if not version:
                notes.append(f"{name}: no version")
                continue
            if not version.startswith("3."):
                notes.append(f"{name} {version} present but not used (it judges the Godot 4 dialect)")
                continue
            found.append((path, version))
        found.sort(key=lambda pv: _key(pv[1]), reverse=True)
        for path, version in found:
            work = sandbox.new_workdir("dslbench-gdprobe-")
            try:
                (work / "probe.gd").write_text("extends Reference\nexport var hp := 3\n")
                r = self.run([path, "--no-window", "--check-only", "-s", "probe.gd"], work, env=ENV)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            if r.returncode == 0 and not r.timed_out:
                return path, version, "; ".join(notes)
            notes.append(f"{Path(path).name} {version} fails to run headless here (exit {r.returncode})")
        return None, "", "; ".join(notes)

    @property
    def _judge(self) -> tuple[str | None, str, str]:
        """Found once per process (by probe()) and per PATH, so hiding Godot from PATH is noticed."""
        key = os.environ.get("PATH", "")
        if getattr(self, "_judge_cache", (None,))[0] != key:
            self._judge_cache = (key, self._find_judge())
        return self._judge_cache[1]

    def probe(self):
        self.__dict__.pop("_judge_cache", None)      # toolchains.probe caches; a direct call re-checks
        path, version, note = self._judge
        if path is None:
            why = "no Godot 3 binary on PATH (Debian package godot3-server)"
            return self.unavailable(why + (f"; {note}" if note else ""))
        return self.available(f"Godot {version} ({Path(path).name})" + (f"; {note}" if note else ""))

    @property
    def binary(self) -> str:
        return self._judge[0]

    def oracle_rules(self, task):
        o, problems = task.oracle, []

        def value(where, v):
            try:
                var_text(v)
            except ValueError as e:
                problems.append((where, str(e)))

        value("new_args", o.get("new_args", []))
        for i, node in enumerate(o.get("nodes", [])):
            for prop, text in node.get("values", {}).items():
                image = re.fullmatch(r'Resource\( "(res://[^"]+)" \)', text)
                if image and image.group(1) not in o.get("textures", []):
                    problems.append((f"nodes[{i}].values.{prop}", f"{image.group(1)} is not one of the oracle's textures"))
        compared = 0
        for i, sc in enumerate(o["scenarios"]):
            slots = {"self"}
            for j, step in enumerate(sc["steps"]):
                sw = f"scenarios[{i}].steps[{j}]"
                op = next(k for k in step if k in OPS)
                for key in step:
                    if key != op and key not in OPS[op]:
                        problems.append((f"{sw}.{key}", f"not allowed in a '{op}' step (allowed: {', '.join(sorted(OPS[op]))})"))
                if op == "set" and "value" not in step:
                    problems.append((f"{sw}.value", "a 'set' step needs a value"))
                for key in ("args", "value", "expect"):
                    if key in step:
                        value(f"{sw}.{key}", step[key])
                if step.get("ignore") and "expect" in step:
                    problems.append((f"{sw}.expect", "an ignored step cannot have an expected value"))
                if op == "probe" and step["probe"] not in o.get("probes", {}):
                    problems.append((f"{sw}.probe", f"'{step['probe']}' is not one of the oracle's probes"))
                if step.get("on", "self") not in slots:
                    problems.append((f"{sw}.on", f"'{step['on']}' is not 'self' or a slot stored by an earlier step's 'as'"))
                slots.add(step.get("as", "self"))
                if op not in RESULT_FREE and not step.get("ignore"):
                    compared += 1
        if not problems and compared == 0:
            problems.append(("scenarios", "no step compares a value: the oracle would accept anything"))
        return problems

    # --- levels ---------------------------------------------------------------------------------
    def syntax(self, program, task, work):
        give_textures(task.oracle, work)          # a preload of a course image resolves at parse time
        if _has_autoloads(work):
            # --check-only parses before the project's autoloads are registered (every autoload name
            # would be "not declared"): load the script from a SceneTree script instead, the same parser.
            (work / "dslbench_check.gd").write_text(LOAD_CHECK.replace("PROGRAM", self.file_name), encoding="utf-8")
            cmd = ["sh", "-c", 'exec "$0" --no-window -s dslbench_check.gd 2>&1', self.binary]
        else:
            cmd = [self.binary, "--no-window", "--check-only", "-s", self.file_name]
        result = self.run(cmd, work, env=ENV)
        if result.timed_out:
            return self.verdict("fail", "Godot --check-only timed out", result)
        text = result.stdout + "\n" + result.stderr
        first = _first_error(text)
        if result.returncode != 0 or "SCRIPT ERROR" in text:
            return self.verdict("fail", first or f"Godot --check-only exit {result.returncode}", result)
        how = "loads with the project's autoloads" if _has_autoloads(work) else "Godot --check-only"
        return self.verdict("pass", f"parses and analyses ({how})", result)

    def semantic(self, program, task, work):
        o = task.oracle
        tag = "@@" + hashlib.sha256((task.id + task.gold).encode()).hexdigest()[:12]
        name = self.file_name
        # The gold runs first in its own sandbox and work directory, so the candidate's run never
        # sees the gold script (it could otherwise load it and delegate to it).
        gold_work = sandbox.new_workdir("dslbench-gdgold-")
        try:
            for ctx_name, content in task.context.items():
                (gold_work / ctx_name).write_text(content, encoding="utf-8")
            (gold_work / name).write_text(task.gold, encoding="utf-8")
            gold_run, gold_out = self._harness(o, tag, gold_work)
        finally:
            shutil.rmtree(gold_work, ignore_errors=True)
        gold = gold_out["scripts"].get(name)
        n_steps = sum(len(sc["steps"]) for sc in o["scenarios"])
        # The gold must run cleanly through every step (and agree with every `expect`).
        if gold is None or gold["fatal"] or gold["errors"] or len(gold["results"]) != n_steps:
            why = (gold or {}).get("fatal") or ((gold or {}).get("errors") or [[None, None, ""]])[0][2]
            return self.verdict("error", f"the gold script does not run through the harness: {why or 'incomplete'}"[:300],
                                gold_run, reason="gold_broken")
        for s, sc in enumerate(o["scenarios"]):
            for i, step in enumerate(sc["steps"]):
                if "expect" in step and not same(gold["results"][(s, i)], tagged(step["expect"])):
                    return self.verdict("error", f"the gold disagrees with the oracle's expect at {step_label(o, s, i)}: "
                                                 f"{show(gold['results'][(s, i)])}", gold_run, reason="gold_broken")
        result, parsed = self._harness(o, tag, work)
        result.duration_s += gold_run.duration_s
        cand = parsed["scripts"].get(name, {"results": {}, "errors": [], "fatal": None, "last": None})
        if cand["fatal"]:
            wrong_base = WRONG_BASE.match(cand["fatal"])
            if wrong_base:   # the harness names the required base: that is the oracle's
                return self.verdict("fail", f"the script extends {wrong_base.group(1)}, not the required base class",
                                    result, expected=f"the script extends {o['base']}")
            return self.verdict("fail", cand["fatal"][:300], result)
        errors = {}
        for s, i, message in cand["errors"]:
            errors.setdefault((s, i), message)
        compared = 0
        for s, sc in enumerate(o["scenarios"]):
            if (s, -1) in errors:
                return self.verdict("fail", f"runtime error in {step_label(o, s, -1)}: {errors[(s, -1)]}"[:400], result)
            for i, step in enumerate(sc["steps"]):
                label = step_label(o, s, i)
                if (s, i) in errors:
                    return self.verdict("fail", f"runtime error in {label}: {errors[(s, i)]}"[:400], result)
                if (s, i) not in cand["results"]:
                    if result.timed_out:
                        why = f"timed out after {self.limits().timeout_s:.0f} s in {label} (endless loop?)"
                    elif cand["last"] is not None or parsed["done"]:
                        why = f"Godot stopped (exit {result.returncode}) in {label}"
                    else:
                        why = f"Godot stopped (exit {result.returncode}) before the candidate ran"
                    return self.verdict("fail", why[:400], result)
                op = next(k for k in step if k in OPS)
                if op in RESULT_FREE and not isinstance(cand["results"][(s, i)], dict):
                    continue
                got = cand["results"][(s, i)]
                if isinstance(got, dict) and "__error__" in got:
                    return self.verdict("fail", f"{label}: {got['__error__']}"[:400], result)
                if step.get("ignore") or op in RESULT_FREE:
                    continue
                want = tagged(step["expect"]) if "expect" in step else gold["results"][(s, i)]
                if not same(got, want):
                    return self.verdict("fail", f"{label}: got {show(got)}"[:400], result,
                                        expected=f"{label}: expected {show(want)}"[:400])
                compared += 1
        if o.get("output") and parsed["printed"] != gold_out["printed"]:
            got, want = parsed["printed"], gold_out["printed"]
            k = next((k for k in range(max(len(got), len(want))) if got[k:k + 1] != want[k:k + 1]), 0)
            return self.verdict("fail", f"printed output differs at line {k + 1}: got "
                                        f"{json.dumps(got[k] if k < len(got) else '<nothing>')}"[:400], result,
                                expected=f"printed line {k + 1}: {json.dumps(want[k] if k < len(want) else '<nothing>')}"[:400])
        if not parsed["done"]:
            return self.verdict("fail", f"Godot did not finish the harness (exit {result.returncode})", result)
        return self.verdict("pass", f"{compared} values equal the gold's over {len(o['scenarios'])} scenario(s)", result)

    def _harness(self, oracle: dict, tag: str, work: Path):
        """One headless Godot run of harness.gd over the program in `work`; (RunResult, parsed output)."""
        give_textures(oracle, work)
        shutil.copy(HARNESS, work / "dslbench_harness.gd")
        (work / "plan.json").write_text(json.dumps(plan_for(oracle, tag, [self.file_name])), encoding="utf-8")
        result = self.run(["sh", "-c", 'exec "$0" --no-window -s dslbench_harness.gd 2>&1', self.binary],
                          work, env=ENV)
        return result, parse_output(result.stdout, tag)

    # --- upstream -------------------------------------------------------------------------------
    def import_upstream(self, source: Path):
        from dslbench.upstream import convert_each
        from . import upstream_gd as mod
        records = mod.load_learn_gdscript(Path(source))
        return convert_each(records, mod.convert_practice, progress=True, total=len(records))
