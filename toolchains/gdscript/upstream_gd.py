"""learn-gdscript 1.x (Godot 3) practices -> DSL-Bench task dicts.

Layout read: the clone root (the folder with project.godot and course/) or its course/ folder.
  course/<lesson>/lesson.tres  Godot text resource; [sub_resource] blocks with `practice_id` are practices:
                               title, goal (BBCode), starting_code, validator_script_path,
                               script_slice_path and slice_name. A path is relative to the lesson folder,
                               or `res://...`, relative to the project root.
  <script>.gd                  (script_slice_path, with slice_name) the solution script whose
                               `# EXPORT <slice_name>` ... `# /EXPORT <slice_name>` lines are the slice
                               (a .slice.tres with lines_before/lines_editable/lines_after is read too)
  <tester>.gd                  validator_script_path: `extends PracticeTester`, test_* functions
  project.godot                [autoload] names and _global_script_classes: what the course app provides

The PracticeTester checks need the course app's scenes, so they are not run. The oracle is built from
the solution: a scenario that adds the instance to the tree, sets the start values its scene gives
it, lets a frame pass (as the app shows the scene before Run: a _ready waiting for a frame completes)
and reads the script variables whose declaration the starting code gives, calls the practice's run
function (`_run` or `run`), ticks `_process` for a second of frames when the solution has one, and
compares the solution's script variables, the node's transform and visibility, the slice's
one-parameter functions that the run calls with a number called again with a small and a large
amount (PROBE_AMOUNTS; the variables read after each), what the script gave the scene nodes it
reaches (harness stand-ins of the scene's node types that record calls) and, when it prints, its
output. The runtime context the
course app gives a practice is given as task context: the stand-in course/Events.gd (the autoload's
signal names, written for DSL-Bench) and a project.godot that registers it. A practice that uses the
course's DrawingTurtle gets the turtle's script copied from the user's clone (registered as a global
class; never bundled here), an empty scene of the same root type for the label scene it preloads,
stand-ins for the nodes of the turtle's scene, and is judged through the oracle's probe of the drawing
(turtle_probe: what the practice's tester reads). A practice that walks its scene's nodes gets the
whole scene (scene_tree: the clone's .tscn files as node types and literal values; recording
stand-ins where the scene gives a node a script) and is judged also through the scene probe; a node
whose state or return values it uses runs the scene's own script of that node, copied from the clone
(own_script_file), with the course images it needs as stand-in textures (the oracle's `textures`).
A practice that needs more of the app (nodes whose script cannot be given, resources it loads by path
itself, another autoload, or another course class) is skipped with a reason, as is one whose tester
accepts many answers (OPEN_ENDED).
"""
from __future__ import annotations

import re
from pathlib import Path

from dslbench.upstream import Skip, one_mutant_per_kind

LICENCE = "MIT (code) / CC-BY-4.0 (text), GDQuest learn-gdscript"
# Node properties a tester may read that the harness can compare.
NODE_PROPS = ("position", "rotation", "rotation_degrees", "scale", "visible", "modulate", "global_position")
SECTION = re.compile(r"^\[(\w+)([^\]]*)\]\s*$")
ATTR = re.compile(r'(\w+)=("([^"]*)"|\d+)')


def _parse_value(text: str):
    """A Godot resource value: string, int/float, bool, array of strings, PoolStringArray, or raw text."""
    text = text.strip()
    if text.startswith('"'):
        return _unquote(text)
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", text):
        return float(text)
    m = re.fullmatch(r"(?:PoolStringArray\(|\[)\s*(.*?)\s*(?:\)|\])", text, re.S)
    if m:
        items = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
        return [_unescape(i) for i in items]
    return text


def _unescape(s: str) -> str:
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(m.group(1), m.group(1)), s)


def _unquote(text: str) -> str:
    if len(text) < 2 or not text.endswith('"'):
        raise ValueError("unterminated string")
    return _unescape(text[1:-1])


def parse_tres(text: str, where: str) -> list[dict]:
    """Sections of a Godot text resource: [{'kind', 'attrs', 'props'}] (multi-line strings supported)."""
    sections: list[dict] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = SECTION.match(line)
        if m:
            attrs = {k: (v[1:-1] if v.startswith('"') else int(v)) for k, v, _ in ATTR.findall(m.group(2))}
            sections.append({"kind": m.group(1), "attrs": attrs, "props": {}, "line": i + 1})
            i += 1
            continue
        if "=" in line and sections and not line.startswith(" "):
            key, _, value = line.partition("=")
            key, value = key.strip(), value.strip()
            start = i
            if value.startswith('"'):
                # A string may span lines: read until an unescaped closing quote ends a line.
                while not re.search(r'(?<!\\)(\\\\)*"$', value) or value == '"':
                    i += 1
                    if i >= len(lines):
                        raise ValueError(f"{where}:{start + 1}: unterminated string in '{key}'")
                    value += "\n" + lines[i]
            try:
                sections[-1]["props"][key] = _parse_value(value)
            except ValueError as e:
                raise ValueError(f"{where}:{start + 1}: bad value of '{key}': {e}") from None
        i += 1
    return sections


def bbcode_to_markdown(text: str) -> str:
    text = re.sub(r"\[code\](.*?)\[/code\]", r"`\1`", text, flags=re.S)
    text = re.sub(r"\[/?(i|b|u|center|color[^\]]*)\]", "", text)
    return text.strip()


def _slice_from_tres(path: Path, where: str) -> tuple[str, str, str]:
    """(solution script, editable text, starting script marker context) from a .slice.tres."""
    sections = parse_tres(path.read_text(encoding="utf-8"), str(path))
    res = next((s for s in sections if s["kind"] == "resource"), None)
    if res is None:
        raise ValueError(f"{where}: slice file {path.name} has no [resource] section")
    p = res["props"]
    for key in ("lines_before", "lines_editable", "lines_after"):
        if not isinstance(p.get(key), list):
            raise ValueError(f"{where}: slice file {path.name} lacks '{key}'")
    indent = "\t" * int(p.get("leading_spaces", 0) or 0)
    editable = "\n".join(indent + l if l else l for l in p["lines_editable"])
    return "\n".join(p["lines_before"]), editable, "\n".join(p["lines_after"])


def _slice_from_gd(path: Path, name: str, where: str) -> tuple[str, str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((i for i, l in enumerate(lines) if l.strip() == f"# EXPORT {name}"), None)
    end = next((i for i, l in enumerate(lines) if l.strip() == f"# /EXPORT {name}"), None)
    if start is None or end is None or end < start:
        raise ValueError(f"{where}: {path.name} has no '# EXPORT {name}' ... '# /EXPORT {name}' block")
    return "\n".join(lines[:start]), "\n".join(lines[start + 1:end]), "\n".join(lines[end + 1:])


def _indent_like(editable: str, code: str) -> str:
    first = next((l for l in editable.splitlines() if l.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    # Re-base the starting code on the slice's indentation, keeping its own nesting.
    lines = code.splitlines()
    own = min((len(l) - len(l.lstrip("\t")) for l in lines if l.strip()), default=0)
    return "\n".join(indent + l[own:] if l.strip() else l for l in lines)


def load_learn_gdscript(source: Path):
    """(root, records): the project root and one (practice id, record) pair per practice found.

    Raises NotThisBenchmark when `source` is not a learn-gdscript clone or its course folder."""
    from dslbench.upstream import NotThisBenchmark
    source = Path(source)
    course = source / "course" if (source / "project.godot").exists() else source
    lessons = sorted(course.glob("*/lesson.tres"))
    if not lessons:
        raise NotThisBenchmark(f"{source}: no course/<lesson>/lesson.tres found "
                               "(give the learn-gdscript clone root or its course/ folder)")
    # res:// paths are relative to the project root: the folder holding project.godot.
    root = next((d for d in (course, *course.parents) if (d / "project.godot").exists()), course.parent)
    project = Project(root)
    records = []
    for lesson_file in lessons:
        sections = parse_tres(lesson_file.read_text(encoding="utf-8"), str(lesson_file))
        practices = [s for s in sections if "practice_id" in s["props"]]
        for n, sec in enumerate(practices, 1):
            pid = sec["props"]["practice_id"]
            record_id = pid if isinstance(pid, str) and pid else f"{lesson_file}:{sec['line']}"
            records.append((record_id, (project, lesson_file, n, sec)))
    return records


# Course runtime we provide: autoload name -> stand-in file (ours, in STANDIN_DIR).
STANDIN_AUTOLOADS = {"Events": "Events.gd"}
STANDIN_DIR = Path(__file__).parent / "course"
# What a script reaches in its scene: the nodes of the practice's .tscn (and the app around it).
SCENE_USE = re.compile(r"\$[\"A-Za-z_]|\bget_node\(|\bfind_node\(|\bget_parent\(|\bget_child\(|\bget_children\(|"
                       r"\bowner\b|\bcurrent_scene\b|\bget_tree\(\)\.root\b|\bpreload\(|\bload\(")
# Of those, what reaches beyond the practice's own scene (the app around it, resource files): never given.
OUTSIDE_SCENE = {"get_parent(", "owner", "current_scene", "get_tree().root", "preload(", "load("}
# "Is the practice the running scene?" is false in the course app (it runs inside the app's viewport) and
# in the harness alike: not a use of the app.
RUN_AS_MAIN = re.compile(r"\bget_tree\(\)\.(?:current_scene|get_current_scene\(\))\s*==\s*self\b")
# Scene values the harness sets on the nodes it builds: what a practice script reads or changes.
SCENE_VALUES = ("visible", "text", "position", "rotation", "rotation_degrees", "scale", "modulate", "value",
                "min_value", "max_value", "columns", "format", "cell_size", "tile_data")
# A scene node named plainly: $Name, $"Name/Child", get_node("Name"), find_node("Name").
SIMPLE_REF = re.compile(r'(?<![.\w])find_node\(\s*"([A-Za-z_]\w*)"\s*\)|\$"([A-Za-z_][\w/]*)"|\$([A-Za-z_][\w/]*)'
                        r'|(?<![.\w])get_node\(\s*"([A-Za-z_][\w/]*)"\s*\)')
NODE_SECTION = re.compile(r'^\[node name="([^"]+)"([^\]]*)\]', re.M)
NEXT_SECTION = re.compile(r"^\[", re.M)
PROCESS_FRAMES = 60           # one second of frames at 60 fps (the course's force_fps)
NODE2D_LIKE = {"Node2D", "Sprite", "AnimatedSprite", "Position2D", "KinematicBody2D", "Area2D", "RigidBody2D",
               "StaticBody2D", "YSort", "Path2D", "PathFollow2D", "Polygon2D", "Line2D"}
CONTROL_LIKE = {"Control", "Label", "Panel", "ColorRect", "TextureRect", "Button", "ProgressBar", "RichTextLabel"}
SCENE_PROPS = {"visible", "position", "rotation", "rotation_degrees", "scale", "value", "text"}
SETTER_VALUE = 7              # a setter of a numeric variable is called with this, then the variable read
PROBE_AMOUNTS = (1, 1000)     # a function the run calls with a number is called again with these (a small
                              # and a large amount), then the script variables read


class Project:
    """What project.godot says the course app provides: autoload names and global class names."""

    def __init__(self, root: Path):
        self.root = root
        text = (root / "project.godot").read_text(encoding="utf-8") if (root / "project.godot").exists() else ""
        section = re.search(r"^\[autoload\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
        self.autoloads = set(re.findall(r"^(\w+)=", section.group(1), re.M)) if section else set(STANDIN_AUTOLOADS)
        # class name -> (res:// path of its script, native base) from _global_script_classes
        self.class_scripts = {c: (path, base) for base, c, path in re.findall(
            r'\{\s*"base":\s*"(\w+)",\s*"class":\s*"(\w+)",\s*"language":\s*"\w+",\s*"path":\s*"([^"]+)"\s*\}', text)}
        self.classes = set(re.findall(r'"class":\s*"(\w+)"', text))

    def resolve(self, path: str, lesson_folder: Path) -> Path:
        if path.startswith("res://"):
            return self.root / path[len("res://"):]
        return lesson_folder / path


def project_godot(autoloads: list[str], classes: dict[str, dict]) -> str:
    """A project.godot registering the autoload stand-ins and the course classes given (res:// is the
    task's work directory)."""
    lines = ["; The course app's runtime that the practice uses, as stand-ins (DSL-Bench).", "config_version=4", ""]
    if classes:
        entries = [f'{{\n"base": "{given["base"]}",\n"class": "{c}",\n"language": "GDScript",\n'
                   f'"path": "res://{given["file"]}"\n}}' for c, given in classes.items()]
        lines.append("_global_script_classes=[ " + ", ".join(entries) + " ]")
        lines.append("_global_script_class_icons={\n" + ",\n".join(f'"{c}": ""' for c in classes) + "\n}")
        lines.append("")
    lines += ["[logging]", "", "file_logging/enable_file_logging=false", ""]
    if autoloads:
        lines += ["[autoload]", ""] + [f'{a}="*res://{STANDIN_AUTOLOADS[a]}"' for a in autoloads] + [""]
    return "\n".join(lines)


def turtle_probe(tester: str) -> dict[str, str]:
    """The DrawingTurtle practices' probe: the drawing as the practice's tester reads it. Each non-empty
    polygon's vertices relative to its first (absolute values where the tester takes them, so a
    square drawn turning left is the same square), sorted; its position where the tester reads
    positions; whether consecutive shapes overlap where it checks that (the jump is free); the
    heading where it checks the turtle faces right."""
    abs_ = ".abs()" in tester
    lines = ["extends Reference", "", "", "func probe(turtle):", "\tvar shapes := []", "\tvar rects := []",
             "\tfor polygon in turtle.get_polygons():", "\t\tif polygon.is_empty():", "\t\t\tcontinue",
             "\t\tvar points := []", "\t\tfor point in polygon.get_points():",
             "\t\t\tpoints.append(point.abs())" if abs_ else "\t\t\tpoints.append(point)",
             "\t\tpoints.sort()",
             "\t\tshapes.append([points, polygon.position])" if re.search(r"\.position\b", tester)
             else "\t\tshapes.append(points)"]
    out = ['"shapes": shapes']
    if "get_positioned_rect" in tester:
        lines.append("\t\trects.append(polygon.get_positioned_rect())")
        out.append('"overlaps": overlaps(rects)')
    if "turn_degrees" in tester:
        out.append('"facing": wrapf(turtle.turn_degrees, 0.0, 360.0)')
    lines.append("\treturn {" + ", ".join(out) + "}")
    lines += ["", "", "func overlaps(rects: Array) -> Array:", "\tvar out := []",
              "\tfor i in range(1, rects.size()):", "\t\tout.append(rects[i - 1].intersects(rects[i]))",
              "\treturn out"]
    return {"drawing": "\n".join(lines) + "\n"}


# Practices whose tester accepts many different answers where the oracle, which compares with the
# gold's run, would accept one (read off each tester; by upstream practice id).
OPEN_ENDED = {
    "res://course/lesson-19-creating-arrays/practice-otxF5HUx.tres":
        "any path of adjacent cells from the turtle to the robot that misses the rocks passes its tester",
    "res://course/lesson-24-access-array-indices/practice-ErO9L4MW.tres":
        "its tester accepts the sword and the shield used in either order",
}


# Course classes a practice may use, with the probe that reads what the class recorded. The class's
# own code is copied from the user's clone into the task (course_class); it is never bundled here.
COURSE_CLASS_PROBES = {"DrawingTurtle": turtle_probe}
PRELOAD = re.compile(r"\b(?:pre)?load\(\s*\"([^\"]+)\"\s*\)")


def course_class(project: Project, name: str, tester: str) -> dict | str:
    """What a task needs to run a practice that uses the course class `name`, taken from the user's
    clone: the class script (as a context file), an empty scene of the same root type for each scene it
    preloads (the turtle's line labels: looks only), the nodes of the class's own scene (as harness
    stand-ins) and the oracle's probe. Returns the reason when it cannot be given."""
    if name not in COURSE_CLASS_PROBES:
        return "only the course's own code defines it, and the oracle has no probe of what it records"
    if name not in project.class_scripts:
        return "project.godot does not register its script"
    res, base = project.class_scripts[name]
    script = project.resolve(res, project.root)
    if not script.exists():
        return f"its script {res} is not in the clone"
    code = script.read_text(encoding="utf-8")
    file = script.name
    files = {file: code}
    for path in PRELOAD.findall(re.sub(r"#.*", "", code)):
        scene = script.parent / path
        if path.startswith("res://") or not path.endswith(".tscn") or not scene.exists():
            return f"its script loads {path}, which is not given"
        root = NODE_SECTION.search(scene.read_text(encoding="utf-8", errors="replace"))
        kind = re.search(r'type="(\w+)"', root.group(2)) if root else None
        if kind is None:
            return f"the scene {path} it loads has no typed root node"
        files[path] = (f"; An empty stand-in of the course's {path} (DSL-Bench): its root type only.\n"
                       f'[gd_scene format=2]\n\n[node name="{root.group(1)}" type="{kind.group(1)}"]\n')
    nodes = []
    for own in sorted(script.parent.glob("*.tscn")):
        text = own.read_text(encoding="utf-8", errors="replace")
        if res not in text:
            continue
        for node_name, attrs in NODE_SECTION.findall(text)[1:]:
            parent = re.search(r'parent="([^"]*)"', attrs)
            kind = re.search(r'type="(\w+)"', attrs)
            path = node_name if parent is None or parent.group(1) == "." else f"{parent.group(1)}/{node_name}"
            nodes.append({"path": path, "type": kind.group(1) if kind else "Node",
                          "methods": [], "props": [], "signals": []})
        break
    return {"file": file, "base": base, "files": files, "nodes": nodes, "probes": COURSE_CLASS_PROBES[name](tester)}


def _words(code: str) -> set[str]:
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', code)      # names inside strings are not uses
    code = re.sub(r"#.*", "", code)
    return set(re.findall(r"\b[A-Za-z_]\w*\b", code))


def convert_practice(record_id: str, record) -> dict | Skip:
    project, lesson_file, n, sec = record
    folder = lesson_file.parent
    p = sec["props"]
    where = f"{lesson_file.name}:{sec['line']} (practice {p.get('practice_id')!r})"
    for key in ("practice_id", "title", "goal", "starting_code", "validator_script_path", "script_slice_path"):
        if not isinstance(p.get(key), str) or (key != "starting_code" and not p[key].strip()):
            raise ValueError(f"{where}: missing or invalid field '{key}'")
    slice_path = project.resolve(p["script_slice_path"], folder)
    tester_path = project.resolve(p["validator_script_path"], folder)
    if not slice_path.exists():
        raise ValueError(f"{where}: script_slice_path '{p['script_slice_path']}' does not exist")
    if not tester_path.exists():
        raise ValueError(f"{where}: validator_script_path '{p['validator_script_path']}' does not exist")
    if slice_path.suffix == ".gd":
        if not isinstance(p.get("slice_name"), str) or not p["slice_name"]:
            raise ValueError(f"{where}: a .gd script_slice_path needs slice_name")
        before, editable, after = _slice_from_gd(slice_path, p["slice_name"], where)
    else:
        before, editable, after = _slice_from_tres(slice_path, where)
    gold = "\n".join(x for x in (before, editable, after) if x is not None).rstrip() + "\n"
    seen = {l.strip() for l in before.splitlines() if l.strip()}
    start_code = "\n".join(l for l in p["starting_code"].splitlines() if l.strip() not in seen)
    starting = "\n".join((before, _indent_like(editable, start_code), after)).rstrip() + "\n"
    tester = tester_path.read_text(encoding="utf-8")
    if "extends PracticeTester" not in tester:
        return Skip(record_id, "not_a_practice_tester", "the validator script does not extend PracticeTester")
    if p["practice_id"] in OPEN_ENDED:
        return Skip(record_id, "open_ended", OPEN_ENDED[p["practice_id"]])

    words = _words(gold)
    m = re.search(r"^extends\s+(\w+)", gold, re.M)
    extends = m.group(1) if m else "Reference"
    code = re.sub(r"#.*", "", gold)
    refs = scene_refs(code)
    scene = sorted(set(SCENE_USE.findall(SIMPLE_REF.sub("_node_", RUN_AS_MAIN.sub("false", code)))))
    outside = [use for use in scene if use in OUTSIDE_SCENE]
    if outside:
        return Skip(record_id, "needs_course_scene",
                    "the solution reaches the course app or resources outside its scene: " + ", ".join(outside))
    # A script that walks its scene's nodes (get_children(), a dynamic get_node()) gets the whole
    # scene, built from the clone's .tscn files.
    whole_scene = scene_tree(project, slice_path) if scene else []
    if isinstance(whole_scene, str):
        return Skip(record_id, "needs_course_scene", f"the solution walks its scene's nodes with {', '.join(scene)}; "
                                                     f"the scene cannot be given: {whole_scene}")
    other_autoloads = sorted((words & project.autoloads) - set(STANDIN_AUTOLOADS))
    if other_autoloads:
        return Skip(record_id, "needs_course_runtime",
                    "uses the course app's autoload(s) " + ", ".join(other_autoloads))
    classes = {}
    for name in sorted((words & project.classes) - {"PracticeTester"}):
        given = course_class(project, name, tester)
        if isinstance(given, str):
            return Skip(record_id, "needs_course_class", f"uses the course class {name}: {given}")
        classes[name] = given
    run = next((f for f in ("_run", "run") if re.search(rf"^func {f}\(\s*\)", gold, re.M)), None)
    script_vars = re.findall(r"^(?:export(?:\([^)]*\))?\s+|onready\s+)?var\s+(\w+)", gold, re.M)
    if run is None and not script_vars:
        return Skip(record_id, "no_run_function", "the solution has no argument-free _run()/run() to call "
                                                  "and no script variable to read")

    autoloads = sorted(words & set(STANDIN_AUTOLOADS))
    base = classes[extends]["base"] if extends in classes else extends
    node_base = base not in ("Reference", "Resource", "Object")
    tester_props = sorted({x for x in re.findall(r"\.(\w+)\b", tester) if x in NODE_PROPS})
    steps: list[dict] = [{"call": run, "ignore": True}] if run else []   # no run: the script's variables
    if node_base and re.search(r"^func _(physics_)?process\(", gold, re.M):
        # A process-driven practice moves its node: judged on the transform after a second of frames.
        steps.append({"tick": PROCESS_FRAMES})
        tester_props += ["position", "rotation", "scale"]
    if base in CONTROL_LIKE or base.endswith("Container"):
        tester_props += ["visible", "modulate"]
    elif base in NODE2D_LIKE:
        # The node's own state after the run (what the course shows: where it is, how it looks).
        tester_props += ["position", "rotation", "scale", "visible", "modulate"]
    own_vars = [v for v in dict.fromkeys(script_vars) if v not in refs]   # not the variables holding scene nodes
    # An array the tester only asks membership of (`cell in board.selected_units`) is compared in
    # sorted order (any order passes the course); the rest as they are.
    unordered = membership_only(tester, own_vars)
    compared = [{"get": v} for v in dict.fromkeys(own_vars + (tester_props if node_base else [])) if v not in unordered]
    compared += [{"probe": "unordered"}] if unordered else []
    # What a course class recorded (the turtle's drawing), read through the oracle's probe.
    compared += [{"probe": name} for given in classes.values() for name in given["probes"]]
    compared += probe_calls(gold, editable, tester)
    compared += probe_amounts(gold, editable, own_vars, {s["call"] for s in compared if "call" in s})
    types, values, own = scene_types(project, slice_path)
    nodes = standin_nodes(code, refs, types) if refs else []
    # A node whose state the script works with (a robot's recorded path) runs the scene's own script,
    # taken from the user's clone, on the whole scene.
    state_of = {n["path"]: n["state"] for n in nodes if n["state"]}
    own_scripts: dict[str, tuple[str, str, list[str]]] = {}
    not_given: dict[str, str] = {}                  # node path -> why its own script cannot be given
    if state_of:
        tree = whole_scene or scene_tree(project, slice_path)
        found = {} if isinstance(tree, str) else {n["path"]: n for n in tree}
        offered = {path: own_script_file(found[path], slice_path.stem, state, project) if path in found
                   else "it is not in the practice's scene" for path, state in state_of.items()}
        not_given = {path: o for path, o in offered.items() if isinstance(o, str)}
        if not not_given:
            whole_scene, own_scripts = tree, offered
    if whole_scene:
        # A scripted node whose return values the script uses (a crate's name) runs its own script too,
        # where it can be given (else scene_standins gives the reason).
        scripted = {n["path"]: n for n in whole_scene if n["scripted"] and n["path"] not in own_scripts}
        returning = {path: own_script_file(n, slice_path.stem, [], project) for path, n in scripted.items()
                     if used_values(code, n["functions"])}
        refused = {path: o for path, o in returning.items() if isinstance(o, str)}
        if refused:
            return Skip(record_id, "needs_course_scene", "the solution uses what the scene's own scripts return: "
                        + ", ".join(sorted({f"{f}()" for path in refused for f in used_values(code, scripted[path]["functions"])}))
                        + "".join(f" ({path}: {why})" for path, why in sorted(refused.items())))
        own_scripts.update(returning)
        nodes = scene_standins(whole_scene, nodes, code, {path: g[0] for path, g in own_scripts.items()})
        if isinstance(nodes, str):
            return Skip(record_id, "needs_course_scene", nodes)
        compared.append({"probe": "scene"})
    # The nodes of a course class's own scene (the turtle's Pivot, Canvas, Camera2D), added as plain
    # nodes of their types before the script reaches them.
    nodes += [n for given in classes.values() for n in given["nodes"] if n["path"] not in {m["path"] for m in nodes}]
    stateful = [f"{n['path']}.{prop}" for n in nodes for prop in n.pop("state", [])]
    if stateful:      # the script works with the node's own state: a recording stand-in is not enough
        return Skip(record_id, "needs_course_scene", "the solution uses the state of course scene nodes: "
                    + ", ".join(stateful) + "".join(f" ({path}: {why})" for path, why in sorted(not_given.items())))
    # The scene's own starting values (a hidden robot, a spin box's number) are set before the run.
    setup = [{"set": k, "value": v} for k, v in sorted(own.items())] if node_base else []
    for k, node in enumerate(nodes):
        start = values.get(node["path"].rsplit("/", 1)[-1], {}) if "values" not in node else {}
        if start:
            setup.append({"call": "get_node", "args": [node["path"]], "as": f"start{k}", "ignore": True})
            setup += [{"set": prop, "value": v, "on": f"start{k}"} for prop, v in sorted(start.items())]
        # What the script told the stand-in (e.g. the health bar's values) is compared too (the rest of
        # a whole scene through the scene probe).
        if (node["methods"] or node["props"]) and node["path"] in refs.values():
            compared.append({"call": "get_node", "args": [node["path"]], "as": f"node{k}", "ignore": True})
            compared += [{"get": prop, "on": f"node{k}"} for prop in node["props"]]
            if node["methods"]:
                compared.append({"get": "dslbench_calls", "on": f"node{k}"})
        if state_of.get(node["path"]) and node["path"] in own_scripts:    # a node running its own script:
            compared.append({"call": "get_node", "args": [node["path"]], "as": f"node{k}", "ignore": True})
            compared += [{"get": prop, "on": f"node{k}"} for prop in state_of[node["path"]]]
    # Before the run, as in the course app (the scene is shown before Run is pressed): a frame passes
    # (a _ready that waits for a frame completes) and the state the starting code gives is read.
    before_run = ([{"tick": 1}] if node_base else []) + [{"get": v} for v in given_vars(gold, starting, own_vars)]
    steps = setup + before_run + steps + compared
    if not compared:
        return Skip(record_id, "nothing_to_compare", "no script variable or tester-read property to compare")

    context = {name: source for name, source, _ in own_scripts.values()}
    # The course images the given scripts preload or the scene sets on their nodes: stand-in textures.
    textures = sorted({i for _, _, images in own_scripts.values() for i in images}
                      | {m.group(1) for n in nodes if n.get("script") for v in n["values"].values()
                         for m in [re.fullmatch(r'Resource\( "(res://[^"]+)" \)', v)] if m})
    for given in classes.values():
        context.update(given["files"])
    for a in autoloads:
        context[STANDIN_AUTOLOADS[a]] = (STANDIN_DIR / STANDIN_AUTOLOADS[a]).read_text(encoding="utf-8")
    if context:
        context["project.godot"] = project_godot(autoloads, classes)
    probes = {name: source for given in classes.values() for name, source in given["probes"].items()}
    if whole_scene:
        probes["scene"] = SCENE_PROBE
    if unordered:
        probes["unordered"] = unordered_probe(unordered)
    lesson_slug = re.sub(r"[^a-z0-9]+", "-", folder.name.lower()).strip("-")
    given = ""
    if context:
        given = ("\n\nThe course app's runtime is given as context files: "
                 + ", ".join(f"`{name}`" for name in context if name != "project.godot")
                 + " (registered in `project.godot`" + (f"; {', '.join(autoloads)} is an autoload" if autoloads else "")
                 + ").")
    instruction = (bbcode_to_markdown(p["goal"]) + given + "\n\nWrite the complete Godot 3 script. It starts as:\n\n"
                   + "```gdscript\n" + starting + "```\n")
    return {
        "id": f"gdscript-up-{lesson_slug}-{n}", "dsl": "gdscript", "domain": "Game Development",
        "title": p["title"].strip(), "difficulty": "easy",
        "constructs": ["learn-gdscript practice"], "failure_modes": ["knowledge"],
        "instruction": instruction, "context": context, "gold": gold,
        # A practice that prints (the first lessons) is judged on its printed lines too.
        "oracle": {"base": base, **({"nodes": nodes} if nodes else {}), **({"textures": textures} if textures else {}),
                   **({"probes": probes} if probes else {}),
                   **({"output": True} if re.search(r"\bprint\(", code) else {}),
                   "scenarios": [{"name": "run the practice", "tree": node_base, "steps": steps}]},
        "provenance": {"source": "upstream", "benchmark": "learn-gdscript 1.x",
                       "upstream_id": p["practice_id"], "licence": LICENCE,
                       "tester": p["validator_script_path"]},
        "split": "test", "mutants": semantic_mutants(before, editable, after),
    }


STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
OPERATOR_FLIPS = (("+=", "-="), ("-=", "+="), (" * ", " / "), (" + ", " - "), (" - ", " + "),
                  (" > ", " < "), (" < ", " > "), (" == ", " != "))


def _outside_strings(line: str, pattern: str) -> int:
    """Index of the first `pattern` in `line` that is not inside a string or a comment, else -1."""
    masked = STRING.sub(lambda m: "\0" * len(m.group(0)), line)
    masked = masked.split("#", 1)[0]
    return masked.find(pattern)


def semantic_mutants(before: str, editable: str, after: str) -> list[dict]:
    """Up to three mutants of the solution's editable slice: an operator flip, a changed constant and a
    dropped statement (the rest of the script is kept, so each is the practice with one slip)."""
    lines = editable.splitlines()
    body = [i for i, l in enumerate(lines) if l.strip() and not l.strip().startswith("#")
            and not l.lstrip().startswith("func ")]
    made: list[tuple[str, list[str]]] = []
    for i in body:                                          # operator flip
        hit = next(((a, b, _outside_strings(lines[i], a)) for a, b in OPERATOR_FLIPS
                    if _outside_strings(lines[i], a) >= 0), None)
        if hit:
            a, b, at = hit
            made.append((f"operator flip: {a.strip()} -> {b.strip()}", lines[:i] + [lines[i][:at] + b + lines[i][at + len(a):]] + lines[i + 1:]))
            break
    for i in body:                                          # constant change
        masked = STRING.sub(lambda m: "\0" * len(m.group(0)), lines[i]).split("#", 1)[0]
        m = re.search(r"(?<![\w.])(\d+)(\.\d+)?(?![\w.])", masked)
        if m:
            new = str(int(m.group(1)) + 1) + (m.group(2) or "")
            made.append((f"constant change: {m.group(0)} -> {new}", lines[:i] + [lines[i][:m.start()] + new + lines[i][m.end():]] + lines[i + 1:]))
            break
    depth, inside = 0, set()                                # lines of a bracket that spans lines
    for i, line in enumerate(lines):
        code = STRING.sub('""', line).split("#", 1)[0]
        start, depth = depth, max(0, depth + sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}"))
        if start > 0 or depth > 0:
            inside.add(i)
    for i in reversed(body):                                # dropped statement (inside a function)
        line = lines[i]
        if i not in inside and line.startswith("\t") and not line.rstrip().endswith(":") and line.strip() not in ("pass", "return"):
            indent = line[: len(line) - len(line.lstrip())]
            made.append((f"dropped statement: {line.strip()}", lines[:i] + [indent + "pass"] + lines[i + 1:]))
            break
    gold = "\n".join((before, editable, after)).rstrip() + "\n"
    return one_mutant_per_kind(gold, ([(note, "\n".join((before, "\n".join(mutated), after)).rstrip() + "\n")]
                                      for note, mutated in made))


def scene_refs(code: str) -> dict[str, str]:
    """Expression -> node path for every plain scene reference, and for the variables bound to one."""
    refs = {}
    for m in SIMPLE_REF.finditer(code):
        refs[m.group(0)] = next(g for g in m.groups() if g)
    for m in re.finditer(r"^(?:onready\s+)?var\s+(\w+)\s*:?=\s*(.+?)(?:\s+as\s+\w+)?\s*$", code, re.M):
        if m.group(2) in refs:
            refs[m.group(1)] = refs[m.group(2)]
    return refs


def practice_scenes(project: Project, script: Path) -> tuple[str, list[Path]]:
    """The script's res:// path and the .tscn files beside it that attach it (the practice's scene)."""
    try:
        res = "res://" + script.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        res = script.name
    return res, [s for s in sorted(script.parent.glob("*.tscn")) if res in s.read_text(encoding="utf-8", errors="replace")]


def ext_resources(text: str, kind: str) -> dict[str, str]:
    """id -> path of a scene file's [ext_resource] entries whose type matches the pattern `kind`."""
    return {i: path for path, i in re.findall(rf'\[ext_resource path="([^"]+)" type="(?:{kind})" id=(\d+)\]', text)}


def node_sections(text: str) -> list[tuple[str, str, str]]:
    """(name, header attributes, body up to the next section) of each [node] of a scene file, in order."""
    out = []
    for m in NODE_SECTION.finditer(text):
        end = NEXT_SECTION.search(text, m.end())
        out.append((m.group(1), m.group(2), text[m.end(): end.start() if end else len(text)]))
    return out


def scene_types(project: Project, script: Path) -> tuple[dict[str, str], dict[str, dict], dict]:
    """From the practice's scene(s) (the .tscn beside the script that attach it) and the scenes they
    instance, one level down: node name -> Godot type (an instanced node has its scene root's type),
    node name -> the simple property values the scene sets, and those of the node the script is on."""
    res, scenes = practice_scenes(project, script)
    types: dict[str, str] = {}
    values: dict[str, dict] = {}
    own: dict = {}

    def read(scene: Path, depth: int) -> str:
        nonlocal own
        text = scene.read_text(encoding="utf-8", errors="replace")
        ext = ext_resources(text, "PackedScene")
        script_ids = [i for i, path in ext_resources(text, "Script").items() if path == res]
        root_type = "Node"
        for n, (name, attrs, body) in enumerate(node_sections(text)):
            props = {k: _literal(v) for k, v in re.findall(r"^(\w+) = (.+)$", body, re.M)
                     if k in SCENE_PROPS and _literal(v) is not None}
            values.setdefault(name, props)
            if any(re.search(rf"^script = ExtResource\( {i} \)$", body, re.M) for i in script_ids):
                own = props
            t = re.search(r'type="(\w+)"', attrs)
            inst = re.search(r"instance=ExtResource\(\s*(\d+)\s*\)", attrs)
            kind = t.group(1) if t else "Node"
            if inst and inst.group(1) in ext and depth < 2:
                sub = project.resolve(ext[inst.group(1)], scene.parent)
                if sub.exists():
                    kind = read(sub, depth + 1)
            types.setdefault(name, kind)
            if n == 0:
                root_type = kind
        return root_type

    for scene in scenes:
        read(scene, 0)
    return types, values, own


# A scene property value the harness can set as it is written in the .tscn (str2var reads Godot's own
# literal syntax); values that name resources, objects or node paths are not given.
SCENE_LITERAL = re.compile(r'-?\d+(\.\d+)?(e-?\d+)?|true|false|"(?:[^"\\\n]|\\.)*"'
                           r'|(Vector2|Vector3|Color|Rect2|Pool(Int|Real|String)Array)\([^()\n]*\)')
NOT_GIVEN_PROPS = {"script", "__meta__", "theme"}
IMAGE = re.compile(r"res://(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_/.-]*\.(png|jpg|jpeg|webp|svg)")
PLAIN_NAME = re.compile(r"[A-Za-z_]\w*")


def scene_tree(project: Project, script: Path) -> list[dict] | str:
    """The nodes of the practice's scene below its root, parents first and in the scene's child order,
    with the sub-scenes it instances (and an inherited scene's base) expanded: path, Godot type, the
    literal property values the scenes set, whether the scene gives the node a script of its own
    (`scripted`), that script's source when the clone has it and the functions it defines. Returns the
    reason when the scene cannot be given this way."""
    scenes = practice_scenes(project, script)[1]
    if not scenes:
        return "no scene beside the script attaches it"
    children: dict[str, list[str]] = {"": []}          # path -> child paths in order ("" is the root)
    nodes: dict[str, dict] = {}

    def add(path: str, kind: str, values: dict, scripted: bool, index: int | None) -> None:
        if path in nodes:                               # an override of an instanced or inherited node
            nodes[path]["values"].update(values)
            return
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        siblings = children.setdefault(parent, [])
        siblings.insert(index if index is not None else len(siblings), path)
        children.setdefault(path, [])
        nodes[path] = {"path": path, "type": kind, "values": values, "scripted": scripted}

    def read(scene: Path, prefix: str, depth: int) -> tuple[str, dict, bool, set, tuple]:
        """Adds the scene's nodes below `prefix`; returns its root's (type, values, scripted, functions,
        (source, file name of a script that is a file))."""
        text = scene.read_text(encoding="utf-8", errors="replace")
        ext, scripts = ext_resources(text, "PackedScene"), ext_resources(text, "Script")
        built_in = _built_in_scripts(text, str(scene))
        images = {i: path for i, path in ext_resources(text, "Texture|StreamTexture").items() if IMAGE.fullmatch(path)}
        root = ("Node", {}, False, set(), (None, None))
        for n, (name, attrs, body) in enumerate(node_sections(text)):
            values = {k: v.strip() for k, v in re.findall(r"^([\w/]+) = (.+)$", body, re.M)
                      if k not in NOT_GIVEN_PROPS and "/" not in k and SCENE_LITERAL.fullmatch(v.strip())}
            for k, i in re.findall(r"^(\w+) = ExtResource\(\s*(\d+)\s*\)$", body, re.M):
                if i in images and k not in NOT_GIVEN_PROPS:     # an image: given as the stand-in texture
                    values[k] = f'Resource( "{images[i]}" )'
            own_script = re.search(r"^script = (Ext|Sub)Resource\(\s*(\d+)\s*\)", body, re.M)
            scripted = own_script is not None
            # The node's script as the scene gives it (a file of the clone, or built into the scene) and
            # the functions it defines (what a stand-in replaces).
            source, source_name = None, None
            if own_script and own_script.group(1) == "Sub":
                source = built_in.get(own_script.group(2))
            elif own_script and own_script.group(2) in scripts:
                script_file = project.resolve(scripts[own_script.group(2)], scene.parent)
                source = script_file.read_text(encoding="utf-8", errors="replace") if script_file.exists() else None
                if source is not None:
                    source_name = script_file.name
            functions = set(re.findall(r"^func (\w+)\(", source or "", re.M))
            kind = re.search(r'type="(\w+)"', attrs)
            kind = kind.group(1) if kind else "Node"
            inst = re.search(r"instance=ExtResource\(\s*(\d+)\s*\)", attrs)
            parent = re.search(r'parent="([^"]*)"', attrs)
            index = re.search(r'index="(\d+)"', attrs)
            if n > 0 and not PLAIN_NAME.fullmatch(name):
                raise ValueError(f"its node name {name!r} is not a plain name")
            rel = "" if n == 0 else (name if parent.group(1) == "." else f"{parent.group(1)}/{name}")
            path = "/".join(x for x in (prefix, rel) if x)
            if inst:
                if inst.group(1) not in ext or depth >= 3:
                    raise ValueError(f"it instances a scene that is not given ({ext.get(inst.group(1), '?')})")
                sub = project.resolve(ext[inst.group(1)], scene.parent)
                if not sub.exists():
                    raise ValueError(f"the scene {ext[inst.group(1)]} it instances is not in the clone")
                if n > 0:                               # the node goes in before the sub-scene's own nodes
                    add(path, "Node", {}, False, int(index.group(1)) if index else None)
                sub_kind, sub_values, sub_scripted, sub_functions, sub_source = read(sub, path, depth + 1)
                kind, values = sub_kind, {**sub_values, **values}
                if not scripted:                        # the instancing scene's script replaces the sub-scene's
                    scripted, functions, (source, source_name) = sub_scripted, sub_functions, sub_source
            own = {"scripted": scripted, "functions": functions, "source": source, "source_name": source_name}
            if n == 0:
                root = (kind, values, scripted, functions, (source, source_name))
            elif path in nodes and inst:
                nodes[path].update({"type": kind, "values": values, **own})
            else:
                add(path, kind, values, scripted, int(index.group(1)) if index else None)
                nodes[path].update(own)
        return root

    try:
        read(scenes[0], "", 0)
    except ValueError as e:
        return str(e)
    order: list[dict] = []

    def walk(path: str) -> None:
        for child in children.get(path, []):
            order.append(nodes[child])
            walk(child)

    walk("")
    return order


def _built_in_scripts(text: str, where: str) -> dict[str, str]:
    """id -> source of the GDScripts built into a scene file ([sub_resource type="GDScript"])."""
    try:
        sections = parse_tres(text, where)
    except ValueError:
        return {}
    return {str(sec["attrs"].get("id")): sec["props"]["script/source"] for sec in sections
            if sec["kind"] == "sub_resource" and sec["attrs"].get("type") == "GDScript"
            and isinstance(sec["props"].get("script/source"), str)}


def own_script_file(node: dict, scene_name: str, state: list[str], project: Project) -> tuple[str, str, list[str]] | str:
    """(context file name, source, images it preloads) of the scene's own script of a node whose state
    or return values the practice uses (a robot's path, a crate's name), so that the node runs it
    instead of a recording stand-in; else the reason. Images are given as stand-in textures."""
    source = node.get("source")
    if not source:
        return "the scene gives it no script this clone holds"
    missing = [v for v in state if not re.search(rf"^(?:onready\s+)?var\s+{re.escape(v)}\b", source, re.M)]
    if missing:
        return "its script does not declare " + ", ".join(missing)
    code = re.sub(r"#.*", "", source)
    images = sorted(set(m.group(1) for m in re.finditer(r'\bpreload\(\s*"([^"]+)"\s*\)', code) if IMAGE.fullmatch(m.group(1))))
    code = re.sub(r'\bpreload\(\s*"([^"]+)"\s*\)', lambda m: '""' if IMAGE.fullmatch(m.group(1)) else m.group(0), code)
    needs = sorted(set(SCENE_USE.findall(code)) & {"preload(", "load(", "owner", "current_scene"})
    needs += sorted(_words(source) & (project.autoloads | project.classes))     # the app's autoloads and classes
    if needs or re.search(r"^class_name\b", source, re.M):
        return "its script needs more of the course: " + (", ".join(needs) or "a global class name")
    name = node.get("source_name") or f"{scene_name}_{node['path'].replace('/', '_')}.gd"
    return name, source, images


def membership_only(tester: str, own_vars: list[str]) -> list[str]:
    """The script variables that the tester reads from the practice's scene root only to iterate or
    test membership (`for c in board.x`, `c in board.x`): their order is not checked."""
    boards = set(re.findall(r"\b(\w+)\s*=\s*_scene_root_viewport\.get_child\(0\)", tester))
    out = []
    for v in own_vars:
        uses = [m for b in boards for m in re.finditer(rf"(\bin\s+)?\b{b}\.{re.escape(v)}\b(?!\s*\.)", tester)]
        reads = len(re.findall(rf"\b(?:{'|'.join(boards) or '_'})\.{re.escape(v)}\b", tester))
        if uses and reads == len(uses) and all(m.group(1) for m in uses):
            out.append(v)
    return out


def unordered_probe(names: list[str]) -> str:
    """The oracle's probe of variables compared regardless of order: each array of values sorted (a
    copy). An array holding objects keeps its order: objects sort by their address, which differs
    between runs."""
    lines = ["extends Reference", "", "", "func probe(target):", "\tvar out := {}"]
    for name in names:
        lines += [f'\tout["{name}"] = sorted(target.get("{name}"))']
    lines += ["\treturn out", "", "", "func sorted(value):", "\tif typeof(value) != TYPE_ARRAY:", "\t\treturn value",
              "\tfor item in value:", "\t\tif typeof(item) == TYPE_OBJECT:", "\t\t\treturn value",
              "\tvar copy = value.duplicate()", "\tcopy.sort()", "\treturn copy"]
    return "\n".join(lines) + "\n"


def used_values(code: str, functions: set[str]) -> list[str]:
    """The functions of `functions` whose return value the code uses: called on a node anywhere but as
    a statement of its own (`var name = crate.get_label()`, `if crate.is_open():`)."""
    return sorted({m.group(1) for line in code.splitlines()
                   for m in re.finditer(r"\b(?!self\b)[a-z_]\w*\.(\w+)\s*\(", line)
                   if m.group(1) in functions and not re.fullmatch(r"\s*[a-z_]\w*\.\w+\(.*\)\s*", line)})


def scene_standins(tree: list[dict], named: list[dict], code: str, own_scripts: dict[str, str] | None = None) -> list[dict] | str:
    """The whole scene as harness stand-ins, in scene order: each node with its type and the scene's
    values (SCENE_VALUES). A node the script names ($Name) gets what the script uses on it
    (standin_nodes); a node the scene gives a script of its own (a crate, an inventory item) gets the
    methods, properties and signals the script uses on the nodes it reaches by walking the scene
    (`crate.use()`, `child.SWORD`), as recording stand-ins. Named nodes the scene lacks come last.
    A node in `own_scripts` (path -> context file) runs the scene's own script instead.
    Returns the reason when stand-ins cannot give what the script needs."""
    own_scripts = own_scripts or {}
    by_path = {n["path"]: n for n in named}
    signals = set(re.findall(r'\.connect\(\s*"(\w+)"', code)) | set(re.findall(r'yield\(\s*\w+\s*,\s*"(\w+)"', code))
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', code)          # names inside strings are not uses
    calls = set(re.findall(r"\b(?!self\b)[a-z_]\w*\.([A-Za-z_]\w*)\s*\(", code))
    walked = {"methods": calls - {"connect"},
              "props": set(re.findall(r"\b(?!self\b)[a-z_]\w*\.([A-Za-z_]\w*)\b(?!\s*\()", code)) - calls,
              "signals": signals}
    # A stand-in records calls and returns nothing: a script that uses what the scene's own scripts
    # return (an item's name) cannot be judged with it: any call of theirs that is not a statement of its own.
    returned = used_values(code, {f for node in tree if node["scripted"] and node["path"] not in own_scripts
                                  for f in node["functions"]})
    if returned:
        return "the solution uses what the scene's own scripts return: " + ", ".join(f"{f}()" for f in returned)
    out = []
    for node in tree:
        made = by_path.pop(node["path"], None) or {"path": node["path"], "type": node["type"], "methods": [],
                                                    "props": [], "signals": [], "state": []}
        made["type"] = node["type"]
        given = set(SCENE_VALUES)
        if node["path"] in own_scripts:
            made.update({"script": own_scripts[node["path"]], "methods": [], "props": [], "signals": [], "state": []})
            given |= set(re.findall(r"^export(?:\([^)]*\))?\s+var\s+(\w+)", node["source"], re.M))
        elif not node["scripted"]:
            made["state"] = []      # a node of the scene's own type: its properties are real, not recorded
        else:
            for key, used in walked.items():
                made[key] = sorted(set(made[key]) | used)
        made["values"] = {k: v for k, v in node["values"].items() if k in given}
        out.append(made)
    return out + list(by_path.values())


# The oracle's probe of a whole scene: each node below the instance, depth first in child order, with
# what a practice changes in its scene (shown, moved, relabelled, freed, a stand-in's recorded calls),
# and which of them the script's variables hold (by path: a picked track, the selected crates).
SCENE_PROBE = """extends Reference


func probe(target):
	var nodes := []
	walk(target, "", nodes)
	var held := {}
	for p in target.get_property_list():
		if p["usage"] & PROPERTY_USAGE_SCRIPT_VARIABLE:
			var value = target.get(p["name"])
			var items = value if typeof(value) == TYPE_ARRAY else [value]
			var paths := []
			for item in items:
				if typeof(item) == TYPE_OBJECT and is_instance_valid(item) and item is Node and target.is_a_parent_of(item):
					paths.append(path_of(target, item))
			if not paths.empty():
				held[p["name"]] = paths
	return {"nodes": nodes, "held": held}


# A node's path below the instance; a node the script made without a name is named by its class and
# its index (Godot's own generated names count every node made, so they differ between runs).
func path_of(target, node):
	var parts := []
	while node != target:
		parts.push_front(name_of(node))
		node = node.get_parent()
	return PoolStringArray(parts).join("/")


func name_of(node):
	var name = str(node.name)
	return "@%s%d" % [node.get_class(), node.get_index()] if name.begins_with("@") else name


func walk(node, path, out):
	for child in node.get_children():
		var name = name_of(child)
		var here = name if path == "" else path + "/" + name
		var entry := {"path": here, "class": child.get_class(), "freed": child.is_queued_for_deletion()}
		if child is CanvasItem:
			entry["visible"] = child.visible
		if child is Node2D:
			entry["position"] = child.position
			entry["rotation"] = child.rotation
			entry["scale"] = child.scale
		for prop in ["text", "value"]:
			if prop in child:
				entry[prop] = child.get(prop)
		if "dslbench_calls" in child:
			entry["calls"] = child.dslbench_calls
		out.append(entry)
		walk(child, here, out)
"""


def standin_nodes(code: str, refs: dict[str, str], types: dict[str, str]) -> list[dict]:
    """The stand-in nodes for the harness: per node path, its type and the methods, properties and
    signals the script uses on it."""
    by_path: dict[str, dict] = {}
    for expr, path in refs.items():
        node = by_path.setdefault(path, {"path": path, "type": types.get(path.rsplit("/", 1)[-1], "Node"),
                                         "methods": [], "props": [], "signals": [], "state": []})
        e = re.escape(expr) if not re.fullmatch(r"\w+", expr) else rf"\b{expr}\b"
        for m in re.finditer(e + r"\.(\w+)\s*(\()?", code):
            node["methods" if m.group(2) else "props"].append(m.group(1))
        # expr.prop.method() / expr.prop[i]: the node's property is a value the script works with
        node["state"] += re.findall(e + r"\.(\w+)\s*[.\[]", code)
        node["signals"] += re.findall(r"yield\(\s*" + e + r'\s*,\s*"(\w+)"', code)
        node["signals"] += re.findall(e + r'\.connect\(\s*"(\w+)"', code)
    for node in by_path.values():
        for key in ("methods", "props", "signals", "state"):
            node[key] = sorted(set(node[key]) - ({"connect"} if key == "methods" else set()))
    return [by_path[p] for p in sorted(by_path)]


def _literal(text: str):
    """A GDScript literal of a test value as a task value (numbers, Vector2), else None."""
    text = text.strip()
    m = re.fullmatch(r"Vector2\(\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\)", text)
    if m:
        return {"Vector2": [float(m.group(1)), float(m.group(2))]}
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*", text):
        return float(text)
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r'"[^"\\]*"', text):
        return text[1:-1]
    return None


def probe_calls(gold: str, editable: str, tester: str) -> list[dict]:
    """Calls that probe the slice's functions as the tester does: a setter of a numeric variable
    (`func set_speed(value)`) with a new value, and a one-argument function the tester calls with each
    value of the script's TEST_* constant list."""
    steps = []
    for name, var in re.findall(r"^func (set_(\w+))\(\s*\w+\s*\):", editable, re.M):
        if re.search(rf"^var {var}\s*:?=\s*-?[\d.]+\s*$", gold, re.M):
            steps += [{"call": name, "args": [SETTER_VALUE], "ignore": True}, {"get": var}]
    consts = re.findall(r"^const TEST_\w+\s*:?=\s*\[(.*?)\]\s*$", gold, re.M)
    values = [_literal(v) for c in consts for v in re.findall(r"Vector2\([^)]*\)|-?[\d.]+", c)]
    if values and None not in values:
        for name in re.findall(r"^func (\w+)\(\s*\w+\s*\):", editable, re.M):
            if re.search(rf"\.{name}\(", tester):
                steps += [{"call": name, "args": [v]} for v in values]
    return steps


VAR_DECL = r"^(?:export(?:\([^)]*\))?\s+|onready\s+)?var\s+{name}\b.*$"


def given_vars(gold: str, starting: str, own_vars: list[str]) -> list[str]:
    """The script variables whose declaration the starting code gives as the solution has it (so their
    value before the run is the practice's, not the student's choice): read before the run."""
    given = {l.split("#", 1)[0].strip() for l in starting.splitlines() if l.strip()}
    out = []
    for v in own_vars:
        m = re.search(VAR_DECL.format(name=re.escape(v)), gold, re.M)
        if m and "=" in m.group(0) and m.group(0).split("#", 1)[0].strip() in given:
            out.append(v)
    return out


def _function_body(code: str, name: str) -> str:
    """The lines of `func name(...)` in `code`, up to the next line that is not indented."""
    lines = code.splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(rf"func {re.escape(name)}\(", l)), None)
    if start is None:
        return ""
    body = []
    for l in lines[start + 1:]:
        if l.strip() and not l[0].isspace():
            break
        body.append(l)
    return "\n".join(body)


def probe_amounts(gold: str, editable: str, own_vars: list[str], probed: set[str]) -> list[dict]:
    """Calls of the slice's one-parameter functions that the run calls with a number (`heal(40)`,
    `take_damage(_damage)` with `var _damage = 50`): each again with PROBE_AMOUNTS, its return value
    compared when it returns one, then the script variables read (a limit or a branch the run's own
    amount does not reach is exercised too)."""
    numbers = set(re.findall(r"^(?:const|var)\s+(\w+)\s*:?=\s*-?\d+(?:\.\d+)?\s*$", gold, re.M))
    calls_in = re.sub(r"^func .*$", "", re.sub(r"#.*", "", gold), flags=re.M)
    steps = []
    for name in re.findall(r"^func ([A-Za-z]\w*)\(\s*\w+\s*(?::\s*(?:int|float)\s*)?\)\s*(?:->\s*\w+\s*)?:",
                           editable, re.M):
        if name in probed or name.startswith("set_"):
            continue
        args = re.findall(rf"(?<![\w.]){name}\(\s*([^(),]*?)\s*\)", calls_in)
        if not args or not all(re.fullmatch(r"-?\d+(?:\.\d+)?", a) or a in numbers for a in args):
            continue
        body = _function_body(editable, name)
        if re.search(r"\byield\b", body):
            continue                      # a coroutine: called again it would wait on what the run waits on
        returns = bool(re.search(r"^\s*return\s+\S", body, re.M))
        for amount in PROBE_AMOUNTS:
            steps.append({"call": name, "args": [amount], **({} if returns else {"ignore": True})})
            steps += [{"get": v} for v in own_vars]
    return steps
