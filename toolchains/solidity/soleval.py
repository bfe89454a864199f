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
replaced by a marker line. The behaviour oracle is SolEval's: the project's own forge tests of that
file (`<Name>.t.sol`, or the record's `testcase`); the oracle (`kind: repository`) records the
repository, the forge project inside it and the test path, and, for an internal pure library function
of fuzzable types, how to call it beside the gold on fuzzed inputs (`same_as_gold`), which closes the
gaps of the projects' tests. Records that cannot be turned into such a
task are skipped with a reason: declarations that are not functions (errors, constants, events),
records without a comment, records whose file is not found in the repository or whose recorded
lines do not hold the function (no resolvable contract context), files without a test (`no_test`) or
whose tests never name the function (`not_tested`: SolEval counts only the functions its tests call),
projects whose tests run with ffi (`needs_ffi`: the judge turns it off, as a candidate could use it),
and files or tests whose `pragma solidity` excludes the one compiler that judges every task
(`compiler_version`; SolEval's forge picks a compiler per file, e.g. 0.6.12 for some ethernaut levels).
"""
from __future__ import annotations

import fnmatch
import functools
import json
import random
import re
import tomllib
from pathlib import Path

from dslbench.upstream import Imported, Skip, convert_each, one_mutant_per_kind

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


NOT_CODE = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
# One slip of each kind, in Solidity and in inline assembly (Yul), where solady writes most of its code.
SLIPS = {
    "comparison": (r"(?<![<>=!])(?:<=|>=|<|>)(?![<>=])", {"<": ">", ">": "<", "<=": ">=", ">=": "<="}),
    "equality": (r"==|!=", {"==": "!=", "!=": "=="}),
    "arithmetic": (r"(?<=[\w)\]] )[+-](?= )", {"+": "-", "-": "+"}),
    "logic": (r"&&|\|\|", {"&&": "||", "||": "&&"}),
    "assembly": (r"\b(?:lt|gt|add|sub|and|or|shl|shr)(?=\()",
                 {"lt": "gt", "gt": "lt", "add": "sub", "sub": "add", "and": "or", "or": "and", "shl": "shr", "shr": "shl"}),
    "constant": (r"(?<![\w.])\d+(?![\w.])", None),   # n -> n + 1
}


def _code_only(source: str) -> str:
    """`source` with comments and strings blanked out (line breaks kept): offsets stay the same."""
    return NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)


def semantic_mutants(gold: str, index: int) -> list[dict]:
    """Up to 3 single slips in the function's body, each of another kind (SLIPS): a comparison turned
    round, == and != swapped, + and - swapped, && and || swapped, a Yul lt/gt, add/sub, and/or or
    shl/shr swapped, a decimal constant n made n + 1. Comments and strings are never touched.
    Deterministic: `index` seeds which kinds come first and which site of each."""
    masked = _code_only(gold)
    body = masked.find("{")
    if body < 0:
        return []
    rng = random.Random(index)
    kinds = list(SLIPS)
    rng.shuffle(kinds)

    def alternatives(kind):
        pattern, swap = SLIPS[kind]
        sites = [m for m in re.finditer(pattern, masked) if m.start() > body]
        for m in rng.sample(sites, len(sites)):
            new = str(int(m.group()) + 1) if swap is None else swap[m.group()]
            line = gold.count("\n", 0, m.start()) + 1
            yield f"{kind}: {m.group()} -> {new} (line {line})", gold[:m.start()] + new + gold[m.end():]

    return one_mutant_per_kind(gold, (alternatives(kind) for kind in kinds))


# The Solidity types forge's fuzzer draws (value types, bytes, string, arrays of them): what a check
# against the gold can pass to a function. Anything else (structs, function types, storage) is left to
# the project's tests alone. The card's oracle_schema (`fuzzed`) checks the same shape when tasks load.
FUZZABLE = re.compile(r"(?:u?int\d*|bytes\d*|bool|address|string)(?:\[\d*\])*(?: (?:memory|calldata))?")
# A pure function can still see its call frame (calldata, selector, gas): two calls differ there.
FRAME = re.compile(r"\bmsg\.(?:data|sig)\b|\bcalldata(?:load|size|copy)\b|\bgas(?:left)?\s*\(")
MAX_SLOTS = 8      # arguments and results a generated wrapper holds without running out of stack


def same_as_gold(gold: str, file_text: str, contract: str) -> dict | None:
    """How to check a candidate against the gold on fuzzed inputs, or None where that cannot be done
    plainly: the function must be an internal pure function of a library, whose parameters and results
    are all types forge fuzzes, that reads nothing of its call frame, and that returns something or
    takes memory it may change. The validator calls candidate and gold alike on the same inputs and
    compares whether they revert, their results and the memory arguments after the call."""
    masked = _code_only(gold)
    head, brace, body = masked.partition("{")
    m = re.fullmatch(r"\s*function\s+\w+\s*\(([^()]*)\)([^()]*?)(?:\breturns\s*\(([^()]*)\))?\s*", head)
    if not (brace and m and contract) or not re.search(rf"\blibrary\s+{re.escape(contract)}\b", file_text):
        return None
    modifiers = m.group(2).split()
    if "internal" not in modifiers or "pure" not in modifiers or FRAME.search(body):
        return None

    def types(listed):
        found = []
        for item in filter(None, (" ".join(part.split()) for part in (listed or "").split(","))):
            words = item.split()
            if "payable" in words:      # `address payable`: the fuzzed address would need a conversion
                return None
            typ = " ".join(words[:2] if len(words) > 1 and words[1] in ("memory", "calldata") else words[:1])
            if not FUZZABLE.fullmatch(typ):
                return None
            found.append(typ)
        return found

    parameters, results = types(m.group(1)), types(m.group(3))
    if parameters is None or results is None or not (results or any(t.endswith(" memory") for t in parameters)):
        return None
    slots = len(results) + sum(2 if t.endswith(" calldata") and ("[" in t or t.split()[0] in ("bytes", "string"))
                               else 1 for t in parameters)
    if slots > MAX_SLOTS:
        return None
    return {"library": contract, "parameters": parameters, "results": results}


def project_tests(repo_dir: Path, rel: str, testcase: str = "") -> tuple[str, list[str], list[str]]:
    """(the forge project holding file `rel` of a repository, the tests SolEval runs for it, the test
    files found before the project's own skip list), tests as paths in that project. SolEval runs
    `forge test --match-path <Name>.t.sol` in the project of Name.sol (its rules map a test file to the
    source file of the same name); a record may name its own test file. The project's dependencies
    (lib/, node_modules/) are not searched."""
    from .validator import project_files, projects
    project = projects(repo_dir, rel)[0]
    root = repo_dir / project
    if testcase:
        tests = [testcase] if (root / testcase).is_file() else []
        return project, tests, tests
    wanted = Path(rel).stem + ".t.sol"
    found = [f for f in project_files(root, ".t.sol") if Path(f).name == wanted]
    # forge leaves out what the project's default profile skips (solady: "/*Transient*"): no test runs there
    skip = _default_profile(root).get("skip", [])
    kept = [f for f in found if not any(fnmatch.fnmatchcase(f"/{f}", glob) for glob in skip)]
    return project, sorted(kept), sorted(found)


def _default_profile(root: Path) -> dict:
    try:
        return tomllib.loads((root / "foundry.toml").read_text(encoding="utf-8"))["profile"]["default"]
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return {}


@functools.lru_cache(maxsize=None)
def runs_tests_with_ffi(root: Path) -> str:
    """Where a forge project's own test command passes --ffi (its tests start programs on the host
    through vm.ffi, as openzeppelin-foundry-upgrades' do), or ''. The judge turns ffi off, since a
    candidate could call it too, so such tests cannot run there. (`ffi = true` in foundry.toml alone
    only allows it.)"""
    try:
        package = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        package = {}
    scripts = package.get("scripts") if isinstance(package, dict) else None
    for name, command in (scripts.items() if isinstance(scripts, dict) else ()):
        if isinstance(command, str) and re.search(r"\bforge test\b[^&;|]*\s--ffi\b", command):
            return f"its package.json script '{name}' runs `{command.strip()[:80]}`"
    return ""


def _difficulty(body: str) -> str:
    n = len([l for l in body.splitlines() if l.strip()])
    return "easy" if n <= 8 else "medium" if n <= 25 else "hard"


def load(source: Path) -> Imported:
    """Tasks and skipped records; a malformed record is skipped (`malformed_record`), naming it."""
    from .validator import pragma_allows, solc_version
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

    @functools.lru_cache(maxsize=None)      # a file's records share its tests
    def tests_of(repo: str, rel: str, testcase: str):
        return project_tests(repositories / repo, rel, testcase)

    @functools.lru_cache(maxsize=None)
    def text_of(path: Path) -> str:
        return path.read_text(encoding="utf-8", errors="replace")

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
        testcase = str(rec.get("testcase") or "").strip()
        project, tests, found = tests_of(repo, rel, testcase)
        match = testcase or Path(rel).stem + ".t.sol"
        where = f"{repo}/{project}" if project else repo
        if not tests:
            why = f"{', '.join(found)} is left out by the project's foundry.toml (skip)" if found else \
                f"no forge test {match}"
            return Skip(upstream_id, "no_test", f"{why} in {where}: SolEval's oracle has nothing to run")
        texts = {t: text_of(repositories / repo / project / t) for t in tests}
        if not any(re.search(rf"\b{re.escape(name)}\b", text) for text in texts.values()):
            return Skip(upstream_id, "not_tested", f"{', '.join(tests)} in {where} never name {name}: SolEval counts "
                                                   f"only the functions its tests call")
        ffi = runs_tests_with_ffi(repositories / repo / project)
        if ffi:
            return Skip(upstream_id, "needs_ffi", f"the tests of {where} need ffi ({ffi}), which the judge turns "
                                                  f"off: a candidate could start programs through it")
        for test, text in texts.items():
            allowed, wanted = pragma_allows(text, compiler) if compiler else (True, "")
            if not allowed:
                return Skip(upstream_id, "compiler_version", f"its test {test} asks for solc {wanted}; every task is "
                                                             f"judged by solc {compiler}")
        indent = lines[start - 1][: len(lines[start - 1]) - len(lines[start - 1].lstrip())]
        marker = MARKER.format(name=name)
        unit = Path(rel).name
        context = "\n".join(lines[: start - 1] + [indent + marker] + lines[end:]) + "\n"
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
        gold = str(rec["body"]).strip("\n") + "\n"
        check = same_as_gold(gold, context, str(rec.get("class") or ""))
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
            "gold": gold,
            "oracle": {"kind": "repository", "repository": str((repositories / repo).resolve()),
                       "file": rel, "unit": unit, "function": name, "marker": marker,
                       "lines": f"{start}-{end}", "project": project, "match_path": match,
                       "tests": f"forge test --match-path {match} in {where} ({', '.join(tests)})",
                       **({"same_as_gold": check} if check else {})},
            "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": upstream_id,
                           "licence": LICENCE},
            "split": "test",
            "mutants": semantic_mutants(gold, made),
        }

    return convert_each(records, convert, progress=True, total=len(records))
