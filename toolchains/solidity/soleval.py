"""SolEval upstream loader: dataset.json plus the user's unpacked repositories -> our task dicts.

SolEval's layout: `data/dataset.json` maps a Solidity file path (as on the authors' machine,
`/root/<repository>/<path in repository>`) to a list of records, one per declaration of that file:
{identifier, body, full_signature, start, end (1-based lines of the body in the file), class,
human_labeled_comment or comment, testcase, ...}. The repositories themselves are distributed
separately and unpacked by the user into `repository/<repository>/` next to `data/` (the authors'
scripts map `/root/` to `repository/`).

Each function record becomes one function-completion task: the instruction is built from the comment
and the signature, the gold is the recorded body, and the context is the file with the function
replaced by a marker line. The behaviour oracle is the repository's own forge test suite, which the
user must supply: the oracle records the repository path and the test command and is marked
`kind: repository` (its semantic verdict is `unavailable`). Records that cannot be turned into such a
task are skipped with a reason: declarations that are not functions (errors, constants, events),
records without a comment, and records whose file is not found in the repository or whose recorded
lines do not hold the function (no resolvable contract context).
"""
from __future__ import annotations

import json
from pathlib import Path

BENCHMARK = "SolEval"
LICENCE = "MIT"
MARKER = "/* DSLBENCH: the function {name} goes here */"
REQUIRED = ("identifier", "body", "full_signature", "start", "end")


def _locate(source: Path) -> tuple[Path, Path]:
    """(dataset.json, folder holding the unpacked repositories) for a file or a SolEval checkout."""
    source = Path(source)
    if source.is_file():
        dataset = source
        base = source.parent.parent if source.parent.name == "data" else source.parent
    else:
        candidates = [source / "data" / "dataset.json", source / "dataset.json"]
        dataset = next((c for c in candidates if c.is_file()), None)
        if dataset is None:
            raise ValueError(f"{source}: no data/dataset.json or dataset.json (SolEval layout)")
        base = source
    return dataset, base / "repository"


def _split(path: str) -> tuple[str, str]:
    """'/root/<repo>/<rel>' (or '<repo>/<rel>') -> (repo, rel)."""
    p = path[len("/root/"):] if path.startswith("/root/") else path.lstrip("/")
    if p.startswith("repository/"):
        p = p[len("repository/"):]
    repo, _, rel = p.partition("/")
    return repo, rel


def _difficulty(body: str) -> str:
    n = len([l for l in body.splitlines() if l.strip()])
    return "easy" if n <= 8 else "medium" if n <= 25 else "hard"


def load(source: Path) -> tuple[list[dict], list[tuple[str, str]]]:
    """Tasks and skipped records [(upstream_id, reason)]; a malformed record raises ValueError naming it."""
    dataset, repositories = _locate(source)
    try:
        data = json.loads(dataset.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{dataset}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{dataset}: expected an object mapping file paths to lists of function records")
    tasks, skipped = [], []
    for path, records in data.items():
        if not isinstance(records, list):
            raise ValueError(f"{dataset}: record list of '{path}' is a {type(records).__name__}, expected a list")
        repo, rel = _split(path)
        file = repositories / repo / rel
        lines = file.read_text(encoding="utf-8").splitlines() if rel and file.is_file() else None
        for i, rec in enumerate(records):
            where = f"{path}[{i}]"
            if not isinstance(rec, dict):
                raise ValueError(f"{dataset}: record {where} is not an object")
            for key in REQUIRED:
                if key not in rec:
                    raise ValueError(f"{dataset}: record {where} lacks the field '{key}'")
            try:
                start, end = int(rec["start"]), int(rec["end"])
            except (TypeError, ValueError):
                raise ValueError(f"{dataset}: record {where}: start/end must be line numbers, got "
                                 f"{rec['start']!r}/{rec['end']!r}") from None
            name = str(rec["identifier"])
            upstream_id = f"{path}::{rec.get('class') or '?'}.{name}"
            # SolEval also lists errors, events and constants (sometimes with a "function ..." signature).
            if not str(rec["full_signature"]).strip().startswith("function") \
                    or not str(rec["body"]).lstrip().startswith("function"):
                skipped.append((upstream_id, "not a function (error, event or constant declaration)"))
                continue
            comment = (rec.get("human_labeled_comment") or rec.get("comment") or "").strip()
            if not comment:
                skipped.append((upstream_id, "no comment to build the instruction from"))
                continue
            if not str(rec["body"]).strip():
                skipped.append((upstream_id, "empty body (no gold)"))
                continue
            if lines is None:
                skipped.append((upstream_id, f"no resolvable contract context: {repo}/{rel} is not in "
                                             f"{repositories}"))
                continue
            if not (1 <= start <= end <= len(lines)) or f"function {name}" not in "\n".join(lines[start - 1:end]):
                skipped.append((upstream_id, f"no resolvable contract context: lines {start}-{end} of {rel} "
                                             f"do not hold function {name} (another repository version?)"))
                continue
            indent = lines[start - 1][: len(lines[start - 1]) - len(lines[start - 1].lstrip())]
            marker = MARKER.format(name=name)
            unit = Path(rel).name
            context = "\n".join(lines[: start - 1] + [indent + marker] + lines[end:]) + "\n"
            testcase = str(rec.get("testcase") or "").strip()
            tests = f"forge test --match-path {testcase}" if testcase else f"forge test (tests covering {rel})"
            contract = rec.get("class") or "the contract"
            instruction = (
                f"Complete the function `{name}` of `{contract}` in `{rel}` (repository `{repo}`).\n"
                f"Signature: `{str(rec['full_signature']).strip()}`\n\n"
                f"What it must do (the benchmark's description):\n{comment}\n\n"
                f"The file is given as context, with the line `{marker}` where the function belongs. "
                f"Write only the complete function definition (signature and body): it replaces that line "
                f"and the file is compiled inside the repository.")
            constructs = ["function completion", "repository context"]
            if rec.get("visibility"):
                constructs.append(f"{rec['visibility']} function")
            tasks.append({
                "id": f"solidity-soleval-{len(tasks) + 1:04d}",
                "dsl": "solidity",
                "domain": "Smart Contracts",
                "title": f"{contract}.{name} ({repo})",
                "difficulty": _difficulty(str(rec["body"])),
                "constructs": constructs,
                "failure_modes": [],
                "instruction": instruction,
                "context": {unit: context},
                "gold": str(rec["body"]).strip("\n") + "\n",
                "oracle": {"kind": "repository", "repository": str((repositories / repo).resolve()),
                           "file": rel, "unit": unit, "function": name, "marker": marker,
                           "lines": f"{start}-{end}", "tests": tests},
                "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": upstream_id,
                               "licence": LICENCE},
                "split": "test",
                "mutants": [],
            })
    return tasks, skipped
