"""learn-gdscript 1.x (Godot 3) practices -> DSL-Bench task dicts.

Layout read (one folder per lesson, anywhere under `source`):
  <lesson>/lesson.tres       Godot text resource; [sub_resource] blocks with `practice_id` are practices:
                             title, goal (BBCode), starting_code, validator_script_path,
                             script_slice_path and optionally slice_name (paths relative to the lesson)
  <slice>.slice.tres         (script_slice_path ending in .tres) name, lines_before, lines_editable,
                             lines_after, leading_spaces: the solution script around the editable slice
  <script>.gd                (script_slice_path ending in .gd, with slice_name) the solution script whose
                             `# EXPORT <slice_name>` ... `# /EXPORT <slice_name>` lines are the editable slice
  <tester>.gd                validator_script_path: `extends PracticeTester`, test_* functions

The PracticeTester checks need the course app's scenes, so they are not run. The oracle is built from
the solution: a scenario that adds the instance to the tree, calls the practice's run function
(`_run` or `run`) and compares the solution's script variables and the Node properties that the
tester reads (`.rotation`, `.position` ...). Records that cannot be converted are skipped with a reason;
malformed records raise ValueError naming the lesson file and the practice.
"""
from __future__ import annotations

import re
from pathlib import Path

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
    return "\n".join(indent + l.lstrip("\t") if l.strip() else l for l in code.splitlines())


def load_learn_gdscript(source: Path) -> tuple[list[dict], list[tuple[str, str]]]:
    tasks, skipped = [], []
    lessons = sorted(Path(source).rglob("lesson.tres"))
    if not lessons:
        raise ValueError(f"{source}: no lesson.tres found (expected learn-gdscript lesson folders)")
    for lesson_file in lessons:
        folder = lesson_file.parent
        sections = parse_tres(lesson_file.read_text(encoding="utf-8"), str(lesson_file))
        practices = [s for s in sections if "practice_id" in s["props"]]
        for n, sec in enumerate(practices, 1):
            p = sec["props"]
            where = f"{lesson_file}:{sec['line']} (practice {p.get('practice_id')!r})"
            for key in ("practice_id", "title", "goal", "starting_code", "validator_script_path", "script_slice_path"):
                if not isinstance(p.get(key), str) or (key != "starting_code" and not p[key].strip()):
                    raise ValueError(f"{where}: missing or invalid field '{key}'")
            slice_path = folder / p["script_slice_path"]
            tester_path = folder / p["validator_script_path"]
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
            upstream_id = p["practice_id"]
            if "extends PracticeTester" not in tester:
                skipped.append((upstream_id, "the validator script does not extend PracticeTester"))
                continue
            m = re.search(r"^extends\s+(\w+)", gold, re.M)
            base = m.group(1) if m else "Reference"
            run = next((f for f in ("_run", "run") if re.search(rf"^func {f}\(\s*\)", gold, re.M)), None)
            if run is None:
                skipped.append((upstream_id, "the solution has no argument-free _run()/run() to call"))
                continue
            script_vars = re.findall(r"^(?:export(?:\([^)]*\))?\s+|onready\s+)?var\s+(\w+)", gold, re.M)
            tester_props = sorted({x for x in re.findall(r"\.(\w+)\b", tester) if x in NODE_PROPS})
            node_base = base not in ("Reference", "Resource", "Object")
            props = script_vars + (tester_props if node_base else [])
            if not props:
                skipped.append((upstream_id, "no script variable or tester-read property to compare"))
                continue
            steps = [{"call": run, "ignore": True}] + [{"get": v} for v in dict.fromkeys(props)]
            lesson_slug = re.sub(r"[^a-z0-9]+", "-", folder.name.lower()).strip("-")
            instruction = (bbcode_to_markdown(p["goal"]) + "\n\nWrite the complete Godot 3 script. It starts as:\n\n"
                           + "```gdscript\n" + starting + "```\n")
            tasks.append({
                "id": f"gdscript-up-{lesson_slug}-{n}", "dsl": "gdscript", "domain": "Game Development",
                "title": p["title"].strip(), "difficulty": "easy",
                "constructs": ["learn-gdscript practice"], "failure_modes": ["knowledge"],
                "instruction": instruction, "context": {}, "gold": gold,
                "oracle": {"base": base, "scenarios": [{"name": "run the practice", "tree": node_base,
                                                          "steps": steps}]},
                "provenance": {"source": "upstream", "benchmark": "learn-gdscript 1.x",
                               "upstream_id": upstream_id, "licence": LICENCE,
                               "tester": p["validator_script_path"]},
                "split": "test", "mutants": [],
            })
    return tasks, skipped
