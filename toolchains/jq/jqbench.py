"""Import jqBench (jqStack, jqStackEasy, jqSpider) as its authors publish it.

Layout (read as the upstream's own loader reads it, jqbench/loading.py in github PidgeyUsedGust/jqBench;
the data is published on Hugging Face as PidgeyUsedGust/jqBench): one folder holding `<name>.jsonl` for
name in jqStack, jqStackEasy and jqSpider, one JSON object per line, with
- identifier (string or number), utterance (the natural-language request),
- expressions: reference jq filters, the first the canonical one,
- either inputs (a list of JSON inputs) or inputfile (a relative path, under the folder, to a JSON file
  whose member "data" is the one input: jqSpider's Spider databases as JSON),
- tasks (category names), jsonschema (jqSpider: the schema of the input), settings ({keys, order}).
A member whose name ends in `_json` holds its value as a JSON string (a Hub column has one type); it
stands for the member without the suffix.

The upstream oracle (jqbench/metrics.py) runs every reference filter on every input; a candidate counts
when its outputs match one reference in the same way on every input: equal, or wrapped in one array,
or unwrapped from one. The jq validator applies that rule to these tasks (oracle.references,
wrapping: lenient, keys), and the importer runs the gold and references first: a record whose reference
does not compile or run on its inputs is one the upstream itself cannot score, and is skipped.
Semantic mutants (a comparison flipped, a constant changed, a builtin swapped for its opposite, a
select negated, the last pipeline stage dropped) are kept only when they compile and fail that rule.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each, one_mutant_per_kind

from .validator import RUNNER, value_match

BENCHMARK = "jqBench"
LICENCE = "see the jqBench dataset card (PidgeyUsedGust/jqBench)"
DATASETS = ("jqStack", "jqStackEasy", "jqSpider")
MAX_INPUT_BYTES = 1_000_000      # a task file carries its inputs; a larger database is skipped
SHOWN_INPUT_BYTES = 4_000        # inputs up to this size are written into the instruction, as the upstream's prompt does
SCREEN_TIMEOUT_S = 60            # the gold, references and candidate mutants of one record, in one process

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NUMBER = re.compile(r"(?<![\w.$])\d+(?:\.\d+)?(?![\w.])")
_COMPARISONS = [("==", "!="), ("!=", "=="), ("<=", ">"), (">=", "<"), ("<", ">="), (">", "<=")]
_OPPOSITES = [("min_by", "max_by"), ("max_by", "min_by"), ("min", "max"), ("max", "min"), ("first", "last"),
              ("last", "first"), ("ascii_downcase", "ascii_upcase"), ("ascii_upcase", "ascii_downcase"),
              ("any", "all"), ("all", "any"), ("startswith", "endswith"), ("endswith", "startswith"),
              ("and", "or"), ("or", "and"), ("keys", "keys_unsorted"), ("floor", "ceil"), ("ceil", "floor")]
CONSTRUCTS = ["select", "map", "map_values", "to_entries", "from_entries", "with_entries", "group_by", "sort_by",
              "unique_by", "min_by", "max_by", "reduce", "foreach", "def", "if", "try", "recurse", "paths",
              "getpath", "setpath", "del", "split", "join", "test", "capture", "sub", "gsub", "tostring",
              "tonumber", "length", "keys", "has", "add", "flatten", "limit", "first", "last", "range",
              "@csv", "@tsv", "@base64", "@uri", "|=", "//", "as $"]


def find_files(source: Path) -> tuple[Path, list[Path]]:
    """(the data folder, its dataset files): source is a dataset file, the data folder, or a checkout
    with the data under data/ (the upstream's config.yaml points there)."""
    source = Path(source)
    if source.is_file():
        if source.suffix != ".jsonl" or source.stem not in DATASETS:
            raise NotThisBenchmark(f"{source}: not one of jqBench's files ({', '.join(d + '.jsonl' for d in DATASETS)})")
        return source.parent, [source]
    for folder in (source, source / "data"):
        files = [folder / f"{d}.jsonl" for d in DATASETS if (folder / f"{d}.jsonl").is_file()]
        if files:
            return folder, files
    raise NotThisBenchmark(f"{source}: no {', '.join(d + '.jsonl' for d in DATASETS)} here or under data/ "
                           "(give jqBench's data folder, downloaded from the Hugging Face dataset PidgeyUsedGust/jqBench)")


def decode(row: dict) -> dict:
    """A record with its `<name>_json` members decoded as `<name>` (the upstream's own rule)."""
    out = {}
    for key, value in row.items():
        name = key[:-5] if key.endswith("_json") else key
        if name in out:
            raise ValueError(f"both {name} and {name}_json")
        out[name] = json.loads(value) if key.endswith("_json") and isinstance(value, str) else value
    return out


def read_records(path: Path) -> list[tuple[str, object]]:
    """(record id `<dataset>:<line>`, the parsed line or the text that did not parse) per non-empty line."""
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                records.append((f"{path.stem}:{n}", json.loads(line)))
            except json.JSONDecodeError as e:
                records.append((f"{path.stem}:{n}", f"not JSON: {e}"))
    return records


def _outside_strings(text: str) -> list[tuple[int, int]]:
    """Spans of the filter that are not string literals (a mutant never edits inside a string)."""
    spans, at = [], 0
    for m in _STRING.finditer(text):
        spans.append((at, m.start()))
        at = m.end()
    return spans + [(at, len(text))]


def _replace_first(text: str, pattern: str, new: str, word: bool = False) -> str | None:
    regex = re.compile((r"(?<![\w@$])" + re.escape(pattern) + r"(?![\w])") if word else
                       (r"(?<![<>=!|/])" + re.escape(pattern) + r"(?![=])"))
    for start, end in _outside_strings(text):
        m = regex.search(text, start, end)
        if m:
            return text[:m.start()] + new + text[m.end():]
    return None


def _last_stage_dropped(text: str) -> str | None:
    """The filter without its last top-level `| stage` (outside brackets and strings)."""
    depth, cut = 0, None
    for start, end in _outside_strings(text):
        for i in range(start, end):
            c = text[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == "|" and depth == 0 and text[i + 1:i + 2] != "=" and text[i - 1:i] != "/":
                cut = i
    return text[:cut].rstrip() if cut else None


def mutant_kinds(gold: str):
    """Kinds of semantic slips of a gold filter, each a lazy list of (note, program) alternatives."""
    g = gold.strip()

    def comparisons():
        for old, new in _COMPARISONS:
            made = _replace_first(g, old, new)
            if made:
                yield f"comparison {old} -> {new}", made

    def constants():
        for start, end in _outside_strings(g):
            m = _NUMBER.search(g, start, end)
            if m:
                value = m.group(0)
                bumped = str(int(value) + 1) if value.isdigit() else str(float(value) + 1)
                yield f"constant {value} -> {bumped}", g[:m.start()] + bumped + g[m.end():]
                return
        m = _STRING.search(g)
        if m and "\\(" not in m.group(0):
            yield f"string {m.group(0)[:30]} changed", g[:m.end() - 1] + "_x" + g[m.end() - 1:]

    def opposites():
        for old, new in _OPPOSITES:
            made = _replace_first(g, old, new, word=True)
            if made:
                yield f"builtin {old} -> {new}", made

    def negated_select():
        m = re.search(r"\bselect\(", g)
        if m:
            depth = 0
            for i in range(m.end() - 1, len(g)):
                depth += {"(": 1, ")": -1}.get(g[i], 0)
                if depth == 0:
                    yield "select condition negated", g[:m.end()] + "(" + g[m.end():i] + ") | not" + g[i:]
                    return

    def renamed_field():
        for start, end in _outside_strings(g):
            m = re.compile(r"(?<![\w$])\.([A-Za-z_]\w*)").search(g, start, end)
            if m:
                yield f"field .{m.group(1)} -> .{m.group(1)}_x", g[:m.end()] + "_x" + g[m.end():]
                return

    def dropped():
        made = _last_stage_dropped(g)
        if made:
            yield "last pipeline stage dropped", made

    return [comparisons(), opposites(), negated_select(), constants(), renamed_field(), dropped()]


def difficulty(gold: str) -> str:
    """The upstream gives none: from the gold's size (pipes, definitions, folds)."""
    pipes = len(_pipes(gold))
    heavy = re.search(r"\b(def|reduce|foreach|recurse|label|limit|until|while)\b", gold)
    if pipes >= 4 or heavy or len(gold) > 160:
        return "hard"
    return "easy" if pipes <= 1 and len(gold) <= 50 else "medium"


def _pipes(text: str) -> list[int]:
    return [i for start, end in _outside_strings(text) for i in range(start, end)
            if text[i] == "|" and text[i + 1:i + 2] != "=" and text[i - 1:i] != "/"]


def constructs(gold: str, categories: list) -> list[str]:
    found = [c for c in CONSTRUCTS if (c in gold if not c[0].isalpha() else re.search(rf"\b{re.escape(c)}\b", gold))]
    return [str(c) for c in categories if c] + found or ["path"]


def screen(gold: str, references: list[str], mutants: list[dict], oracle: dict) -> tuple[str | None, list[dict]]:
    """Run the gold, the references and candidate mutants on the inputs, outside any sandbox (they are the
    upstream's filters and our edits of them, not model output) in one process with a time limit.
    Returns (why the record cannot be scored, or None; the mutants that compile and fail the oracle)."""
    inputs, keys, order = oracle["inputs"], oracle["keys"] != "ignored", oracle["order"] != "unordered"
    with tempfile.TemporaryDirectory(prefix="jqbench-") as tmp:
        work = Path(tmp)
        names = [f"ref{i}.jq" for i in range(1 + len(references))] + [f"mut{i}.jq" for i in range(len(mutants))]
        for name, text in zip(names, [gold, *references, *(m["program"] for m in mutants)]):
            (work / name).write_text(text, encoding="utf-8")
        (work / "inputs.json").write_text(json.dumps(inputs), encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, str(RUNNER), "run", "report.json", *names], cwd=work,
                                  capture_output=True, text=True, timeout=SCREEN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            if mutants:   # a mutant that loops (a flipped loop condition) costs the mutants, not the task
                return screen(gold, references, [], oracle)
            return f"the gold and its references did not finish in {SCREEN_TIMEOUT_S} s", []
        if done.returncode != 0:
            return f"jq runner failed: {done.stderr.strip()[-200:]}", []
        report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    refs = []
    for i, name in enumerate(names[:1 + len(references)]):
        r = report[name]
        if not r["compiled"]:
            return f"reference {i} does not compile: {r['error'].strip()[:160]}", []
        if not all(x["ok"] for x in r["results"]):
            return f"reference {i} fails on an input: {next(x['error'] for x in r['results'] if not x['ok'])[:160]}", []
        refs.append(r["results"])
    kept = []
    for m, name in zip(mutants, names[1 + len(references):]):
        r = report[name]
        if not r["compiled"]:
            continue
        if any(not x["ok"] for x in r["results"]):
            kept.append(m)     # fails with a runtime error where every reference runs
            continue
        if value_match(r["results"], refs, keys, order, wrapping=True) is None:
            kept.append(m)
    return None, kept


def _record_name(task: dict) -> str:
    """`<dataset>:<identifier>`, as skips name records (provenance.benchmark is "jqBench (<dataset>)")."""
    dataset = task["provenance"]["benchmark"].removeprefix(f"{BENCHMARK} (").removesuffix(")")
    return f"{dataset}:{task['provenance']['upstream_id']}"


def _identifier(value) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(value)).strip("-.") or "x"


def load(source: Path, progress: bool = True, workers: int = 2) -> Imported:
    folder, files = find_files(Path(source))
    records = [r for path in files for r in read_records(path)]
    seen_stack: dict[str, str] = {}

    def prepare(record_id: str, raw):
        """The task without its screened mutants, or a Skip (cheap: no filter runs here)."""
        dataset = record_id.split(":")[0]
        if isinstance(raw, str):
            return Skip(record_id, "malformed_record", raw)
        if not isinstance(raw, dict):
            return Skip(record_id, "malformed_record", f"a line is a JSON object, not {type(raw).__name__}")
        row = decode(raw)
        for name in ("identifier", "utterance", "expressions"):
            if row.get(name) in (None, "", []):
                return Skip(record_id, "malformed_record", f"missing field '{name}'")
        where = f"{dataset}:{row['identifier']}"
        expressions = row["expressions"]
        if not isinstance(expressions, list) or not all(isinstance(e, str) and e.strip() for e in expressions):
            return Skip(where, "malformed_record", "expressions must be a list of jq filters")
        if (row.get("inputs") is None) == (row.get("inputfile") is None):
            return Skip(where, "malformed_record", "a record has either inputs or inputfile")
        context = {}
        if row.get("inputfile") is not None:
            relative = Path(str(row["inputfile"]))
            path = (folder / relative).resolve()
            if relative.is_absolute() or ".." in relative.parts or not path.is_relative_to(folder.resolve()):
                return Skip(where, "malformed_record", f"inputfile {row['inputfile']!r} is not a path under the data folder")
            if not path.is_file():
                return Skip(where, "missing_input_file", f"{relative} is not in the data folder")
            if path.stat().st_size > MAX_INPUT_BYTES:
                return Skip(where, "input_too_large", f"{relative} is {path.stat().st_size // 1000} kB (limit {MAX_INPUT_BYTES // 1000} kB)")
            document = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(document, dict) or "data" not in document:
                return Skip(where, "malformed_record", f"{relative} has no member 'data'")
            inputs = [document["data"]]
        else:
            inputs = row["inputs"]
            if not isinstance(inputs, list) or not inputs:
                return Skip(where, "no_inputs", "inputs is empty")
        if len(json.dumps(inputs)) > MAX_INPUT_BYTES:
            return Skip(where, "input_too_large", f"inputs take over {MAX_INPUT_BYTES // 1000} kB")
        settings = row.get("settings") or {}
        if not isinstance(settings, dict) or set(settings) - {"keys", "order"}:
            return Skip(where, "malformed_record", f"settings {settings!r}: only keys and order are known")
        signature = json.dumps([expressions, inputs], sort_keys=True)
        if dataset == "jqStack":
            seen_stack[signature] = where
        elif dataset == "jqStackEasy" and signature in seen_stack:
            return Skip(where, "duplicate_record", f"same filters and inputs as {seen_stack[signature]}")

        instruction = row["utterance"].strip() + "\n\n"
        if row.get("jsonschema") is not None:
            context["schema.json"] = json.dumps(row["jsonschema"], indent=2) + "\n"
            instruction += ("The input is one JSON document that follows the JSON Schema in `schema.json` (the whole "
                            "document is `.`). Output a single value, or a list of records.\n")
        elif len(json.dumps(inputs)) <= SHOWN_INPUT_BYTES:
            instruction += "The filter must work on each of these JSON inputs (the whole input is `.`):\n"
            instruction += "".join(f"- `{json.dumps(v)}`\n" for v in inputs)
        else:
            for i, value in enumerate(inputs, start=1):
                context[f"input{i}.json"] = json.dumps(value, indent=2) + "\n"
            instruction += f"The filter must work on each of the JSON inputs {', '.join(f'`{n}`' for n in context)}.\n"
        keys = settings.get("keys", True)
        oracle = {"inputs": inputs, "wrapping": "lenient", "keys": "compared" if keys else "ignored",
                  "order": "ordered" if keys or settings.get("order", False) else "unordered"}
        if len(expressions) > 1:
            oracle["references"] = [e.strip() + "\n" for e in expressions[1:]]
        gold = expressions[0].strip() + "\n"
        categories = row.get("tasks") or []
        task = {
            "id": f"jqbench-{dataset.lower()}-{_identifier(row['identifier'])}", "dsl": "jq",
            "domain": "Data Engineering", "title": " ".join(row["utterance"].split())[:80],
            "difficulty": difficulty(gold), "constructs": constructs(gold, categories if isinstance(categories, list) else []),
            "failure_modes": ["structure"] if dataset == "jqSpider" else ["knowledge"],
            "instruction": instruction, "context": context, "gold": gold, "oracle": oracle,
            "provenance": {"source": "upstream", "benchmark": f"{BENCHMARK} ({dataset})",
                           "upstream_id": str(row["identifier"]), "licence": LICENCE},
            "split": "test", "mutants": [],
        }
        if not context:
            del task["context"]
        return task

    prepared = convert_each(records, prepare, progress=False)
    # The screening runs filters (one process per record): in parallel, with progress.
    skipped = list(prepared.skipped)

    def finish(task: dict):
        where = _record_name(task)
        try:
            candidates = one_mutant_per_kind(task["gold"].strip(), mutant_kinds(task["gold"]), limit=6)
            references = [r.strip() for r in task["oracle"].get("references", [])]
            why, kept = screen(task["gold"].strip(), references, candidates, task["oracle"])
        except (OSError, ValueError, KeyError) as e:   # one record's trouble never aborts the import
            return Skip(where, "malformed_record", f"{type(e).__name__}: {e}")
        if why:
            return Skip(where, "gold_fails", why)
        task["mutants"] = [{**m, "program": m["program"] + "\n"} for m in kept[:3]]
        return task

    from tqdm import tqdm
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(tqdm(pool.map(finish, prepared.tasks), total=len(prepared.tasks), desc="jqBench: gold and mutants", disable=not progress))
    tasks = [d for d in done if not isinstance(d, Skip)]
    skipped += [d for d in done if isinstance(d, Skip)]
    return Imported(tasks=tasks, skipped=skipped)

