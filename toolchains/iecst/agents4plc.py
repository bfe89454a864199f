"""Import Agents4PLC (github Luoji-zju/Agents4PLC_release) as its authors publish it.

Layout: benchmark_v1/{easy,medium}.jsonl and benchmark_v2/{medium,hard,high-fidelity}.jsonl. Quirk:
despite the suffix, all but high-fidelity.jsonl hold pretty-printed JSON objects one after another
(one object over many lines), so a file is read as a stream of JSON values, not line by line. Fields:
id, instruction, properties_to_be_validated (PLCverif patterns, or null); only the 21 high-fidelity
records add ground_truth (the reference ST), test_cases and (mostly) difficulty. A record without
reference code has no executable oracle here and is skipped (no_reference_code); so is one whose
reference POU cannot be driven through elementary ports (validator.reference_interface gives the code).
Earlier invented fixtures name the reference `code` or `reference_code`: read as well.

A task's oracle runs the reference and the candidate on seeded input sequences (expected_from: gold);
the upstream test_cases are not used: their traces leave inputs out (their notes say so). Most
references are written for Siemens TIA: a `{ S7_Optimized_Access := 'TRUE' }` block attribute (no
behaviour) is taken out of the gold; other vendor syntax stays, and with `check` (dslbench import
--verify) a gold that fails either level here is skipped (gold_fails_syntax, gold_fails_semantic,
gold_unsupported when our evaluator lacks a construct it uses).
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each, dump_task

FOLDERS = ("benchmark_v1", "benchmark_v2")
S7_ATTRIBUTE = re.compile(r"^[ \t]*\{\s*S7_\w+\s*:=\s*'[^']*'\s*\}[ \t]*\n", re.M)


def find_files(source: Path) -> tuple[Path, list[Path]]:
    """(the folder record names are relative to, the *.jsonl files): a clone, a benchmark folder or a file."""
    if source.is_file():
        return source.parent, [source]
    folders = [source / f for f in FOLDERS if (source / f).is_dir()] or [source]
    files = sorted(p for f in folders for p in f.glob("*.jsonl"))
    if not files:
        raise NotThisBenchmark(f"{source}: no {'/ or '.join(FOLDERS)}/ with *.jsonl files "
                               "(give the Agents4PLC_release clone, one of its benchmark folders or a .jsonl file)")
    return source, files


def read_records(path: Path, label: str) -> list[tuple[str, object]]:
    """(record id, record) for each JSON value in the file, one a line or pretty-printed over many. A
    value that does not parse ends the file (nothing after it can be told apart): it is returned as the
    JSONDecodeError in place of a record."""
    text, decoder, i, out = path.read_text(encoding="utf-8"), json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if i >= len(text):
            return out
        line = text.count("\n", 0, i) + 1
        try:
            rec, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            return out + [(f"{label}:{line}", e)]
        rid = rec.get("id") if isinstance(rec, dict) else None
        out.append((f"{label}:{rid if isinstance(rid, (str, int)) and str(rid).strip() else line}", rec))


def load(source: Path, tc, check: bool = False) -> Imported:
    validator = sys.modules[type(tc).__module__]     # agents4plc_task and the interface reader
    root, files = find_files(Path(source))
    records = [r for p in files for r in read_records(p, p.relative_to(root).as_posix())]
    labels = {}                                       # task id -> record id, to name a gold skipped later

    def convert(record_id: str, rec):
        if isinstance(rec, json.JSONDecodeError):
            raise ValueError(f"not JSON at line {rec.lineno}: {rec.msg} (the rest of the file is not read)")
        if isinstance(rec, dict) and isinstance(rec.get("ground_truth"), str):
            rec = {**rec, "ground_truth": S7_ATTRIBUTE.sub("", rec["ground_truth"])}
        split = record_id.split(":")[0].rsplit("/", 1)[-1].removesuffix(".jsonl")
        task, reason, detail = validator.agents4plc_task(rec, record_id, split)
        if task is None:
            return Skip(record_id, reason, detail)
        labels[task["id"]] = record_id
        return task

    made = convert_each(records, convert, progress=True, total=len(records))
    return check_golds(made, tc, labels) if check else made


def check_golds(made: Imported, tc, labels: dict) -> Imported:
    """The tasks whose gold passes both levels here; the others skipped with the level that failed."""
    from dslbench import pipeline
    from dslbench.tasks import TaskError, load_task_file
    out = Imported(skipped=list(made.skipped))
    with tempfile.TemporaryDirectory(prefix="a4plc-gold-") as d:
        folder = Path(d) / "iecst"                     # the loader wants the folder named after the DSL
        folder.mkdir()
        for task in made.tasks:
            path = folder / f"{task['id']}.yaml"
            path.write_text(dump_task(task), encoding="utf-8")
            try:
                loaded = load_task_file(path, tc.check_oracle)
            except TaskError:
                out.tasks.append(task)                 # write_tasks skips it as invalid_task, with the reason
                continue
            got = pipeline.evaluate("iecst", loaded, task["gold"])
            record = labels.get(task["id"], task["id"])
            for level in ("syntax", "semantic"):
                status = got[level]["status"]
                if status != "pass":                   # unavailable: our evaluator lacks a construct it uses
                    reason = "gold_unsupported" if status == "unavailable" else f"gold_fails_{level}"
                    out.skipped.append(Skip(record, reason, got[level]["diagnostics"][:300]))
                    break
            else:
                out.tasks.append(task)
    return out
