"""SolEval upstream loader: dataset.json plus the user's unpacked repositories -> our task dicts.

SolEval's layout: `data/dataset.json` maps a Solidity file path (as on the authors' machine,
`/root/<repository>/<path in repository>`) to a list of records, one per declaration of that file:
{identifier, body, full_signature, start, end (1-based lines of the body in the file), class,
human_labeled_comment or comment, testcase, ...}. The repositories themselves are distributed
separately and unpacked by the user into `repository/<repository>/` next to `data/` (the authors'
scripts map `/root/` to `repository/`). Each of those is a wrapper project holding the upstream project
as `lib/<project>/` (`/root/solady/lib/solady/src/utils/LibBit.sol`); the validator resolves imports
through the nested project's own remappings.

Each function record becomes one function-completion task: the instruction is built from the comment
and the signature, the gold is the recorded body, and the context is the file with the function
replaced by a marker line. The behaviour oracle is the repository's own forge test suite, which the
user must supply: the oracle records the repository path and the test command and is marked
`kind: repository` (its semantic verdict is `unavailable`). Records that cannot be turned into such a
task are skipped with a reason: declarations that are not functions (errors, constants, events),
records without a comment, records whose file is not found in the repository or whose recorded
lines do not hold the function (no resolvable contract context), and records whose file's `pragma
solidity` excludes the one compiler that judges every task (SolEval's forge picks a compiler per file,
e.g. 0.6.12 for some ethernaut levels).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from dslbench.upstream import Imported, Skip, convert_each

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


PRAGMA = re.compile(r"^\s*pragma\s+solidity\s+([^;]+);", re.M)
COMPARATOR = re.compile(r"(\^|~|>=|<=|>|<|=)?\s*v?(\d+)(?:\.(\d+|[x*]))?(?:\.(\d+|[x*]))?")


def _allows(comparator: re.Match, version: tuple) -> bool:
    """One semver comparator of a pragma (`^0.8.4`, `>=0.6.0`, `~0.8`, `0.8`) against a version (a, b, c)."""
    op = comparator.group(1) or "="
    given = [int(g) for g in comparator.groups()[1:] if g is not None and g not in "x*"]
    low = tuple(given + [0] * (3 - len(given)))
    if op == "^":                              # up to the next change of the first non-zero part
        i = next((k for k, v in enumerate(given) if v), len(given) - 1)
    elif op == "~":                            # patch releases only (~1: minor releases too)
        i = 1 if len(given) > 1 else 0
    elif op == "=" and len(given) < 3:         # a partial version is a range: 0.8 means 0.8.x
        i = len(given) - 1
    else:
        return {"=": version == low, ">=": version >= low, "<=": version <= low,
                ">": version > low, "<": version < low}[op]
    high = tuple(given[:i]) + (given[i] + 1,) + (0,) * (2 - i)
    return low <= version < high


def pragma_allows(source: str, version: str) -> tuple[bool, str]:
    """(whether every `pragma solidity` of `source` accepts compiler `version`, the pragmas' text)."""
    full = tuple(int(x) for x in re.findall(r"\d+", version)[:3])
    pragmas = [p.strip() for p in PRAGMA.findall(source)]
    for pragma in pragmas:
        alternatives = [a for a in pragma.split("||")]
        if not any(all(_allows(c, full) for c in COMPARATOR.finditer(a)) for a in alternatives):
            return False, "; ".join(pragmas)
    return True, "; ".join(pragmas)


def _difficulty(body: str) -> str:
    n = len([l for l in body.splitlines() if l.strip()])
    return "easy" if n <= 8 else "medium" if n <= 25 else "hard"


def load(source: Path) -> Imported:
    """Tasks and skipped records; a malformed record is skipped (`malformed_record`), naming it."""
    from .validator import solc_version
    dataset, repositories = _locate(source)
    compiler = solc_version()
    try:
        data = json.loads(dataset.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{dataset}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{dataset}: expected an object mapping file paths to lists of function records")
    records = []
    for path, recs in data.items():
        if not isinstance(recs, list):
            records.append((path, Skip(path, "malformed_record", f"the record list is a {type(recs).__name__}, "
                                                                 f"expected a list")))
            continue
        repo, rel = _split(path)
        file = repositories / repo / rel
        lines = file.read_text(encoding="utf-8").splitlines() if rel and file.is_file() else None
        pragma = pragma_allows("\n".join(lines), compiler) if lines is not None and compiler else (True, "")
        records += [(f"{path}[{i}]", (path, repo, rel, lines, pragma, rec)) for i, rec in enumerate(recs)]
    made = 0   # tasks made so far: they are numbered in order

    def convert(where, record):
        nonlocal made
        if isinstance(record, Skip):
            return record
        path, repo, rel, lines, (compiles, pragma), rec = record
        if not isinstance(rec, dict):
            raise TypeError("the record is not an object")
        for key in REQUIRED:
            if key not in rec:
                raise ValueError(f"the record lacks the field '{key}'")
        try:
            start, end = int(rec["start"]), int(rec["end"])
        except (TypeError, ValueError):
            raise ValueError(f"start/end must be line numbers, got {rec['start']!r}/{rec['end']!r}") from None
        name = str(rec["identifier"])
        upstream_id = f"{path}::{rec.get('class') or '?'}.{name}"
        # SolEval also lists errors, events and constants (sometimes with a "function ..." signature).
        if not str(rec["full_signature"]).strip().startswith("function") \
                or not str(rec["body"]).lstrip().startswith("function"):
            return Skip(upstream_id, "not_a_function", "not a function (error, event or constant declaration)")
        comment = (rec.get("human_labeled_comment") or rec.get("comment") or "").strip()
        if not comment:
            return Skip(upstream_id, "no_comment", "no comment to build the instruction from")
        if not str(rec["body"]).strip():
            return Skip(upstream_id, "no_gold", "empty body (no gold)")
        if lines is None:
            return Skip(upstream_id, "no_context", f"no resolvable contract context: {repo}/{rel} is not in "
                                                   f"{repositories}")
        if not (1 <= start <= end <= len(lines)) or f"function {name}" not in "\n".join(lines[start - 1:end]):
            return Skip(upstream_id, "no_context", f"no resolvable contract context: lines {start}-{end} of {rel} "
                                                   f"do not hold function {name} (another repository version?)")
        if not compiles:
            return Skip(upstream_id, "compiler_version", f"{rel} asks for solc {pragma}; every task is judged "
                                                         f"by solc {compiler}")
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
        made += 1
        return {
            "id": f"solidity-soleval-{made:04d}",
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
        }

    return convert_each(records, convert, progress=True, total=len(records))
