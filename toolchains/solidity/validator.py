"""Solidity: syntax = solc (solc-js 0.8, or forge when it is on PATH and works offline) compiles the file;
semantic = the task's scenarios (deploy, calls, transactions, expected returns/reverts/events/balances)
played on a fresh py-evm chain, identically for the gold (to confirm the expected values) and the candidate.

Oracle of an authored task (its shape is the card's oracle_schema, its steps are checked by oracle_rules):

  contract: Token                    # the contract under test (deployed by `deploy` steps by default)
  declares:                          # optional structure checks on the compiler's AST
    Token: {kind: contract, abstract: false, inherits: [Ownable]}
  support: [Attacker.sol]            # optional context files compiled alone and deployable by name
  scenarios:                         # each one on a new chain, steps in order
    - name: transfer moves tokens
      steps:
        - deploy: [1000]             # constructor args; also: contract, as (label), from, value, reverts, events
        - call: balanceOf            # eth_call; name or full signature; args, from, value, to (label), returns | reverts
          args: [$0]
          returns: [1000]
        - transact: transfer         # a mined transaction; args, from, value, to, returns, events | reverts
          from: 0
          args: [$1, 250]
          events: [[Transfer, $0, $1, 250]]
        - transact: transfer
          from: 1
          args: [$2, 999]
          reverts: {error: InsufficientBalance, args: [250, 999]}   # or true | {reason: s} | {panic: 0x11}
        - send: 1 ether              # plain value transfer or raw call; data, from, to, returns (raw 0x data), events | reverts
          reverts: true
        - balance: $contract         # balance in wei; balance_change: net change since the scenario began,
          equals: 0                  #   gas fees excluded (for the funded test accounts)
        - mine: 3                    # mine empty blocks (12 s apart)
        - wait: 3600                 # the next block comes this many seconds later

Values: `$0`..`$9` test accounts (each funded with 1,000,000 ether), `$contract` / `$<label>` deployed
contracts, `$zero` the zero address; bytes as 0x-hex; amounts as integers or '<n> wei|gwei|ether'.

Upstream (SolEval) tasks have `kind: repository`: the candidate is one function, spliced into the recorded
file of the user's repository for compilation; their behaviour oracle is the repository's own test suite,
and, for an internal pure library function (`same_as_gold`), a comparison with the gold on fuzzed inputs.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from dslbench import sandbox
from dslbench.toolchains import Toolchain
from dslbench.upstream import Imported

HERE = Path(__file__).resolve().parent
COMPILER = HERE / "solc_compile.js"
RUNNER = HERE / "run_sol.py"
EVM_VERSION = "prague"                 # the newest fork eth-tester 0.14 / py-evm 0.12 run (their default)
NODE_FLAGS = ["--liftoff-only", "--disable-wasm-trap-handler"]   # faster solc-js start; fits a 2 GB address space
N_ACCOUNTS = 10
ACTIONS = ("deploy", "call", "transact", "send", "balance", "balance_change", "mine", "wait")
MODIFIERS = {
    "deploy": {"contract", "as", "from", "value", "reverts", "events", "note"},
    "call": {"args", "from", "value", "to", "returns", "reverts", "note"},
    "transact": {"args", "from", "value", "to", "returns", "reverts", "events", "note"},
    "send": {"from", "data", "to", "returns", "reverts", "events", "note"},
    "balance": {"equals", "note"},
    "balance_change": {"equals", "note"},
    "mine": {"note"},
    "wait": {"note"},
}
SAME_AS_GOLD = "DslbenchSameAsGold"     # the generated test comparing an imported task's function with the gold
# what the generated comparison says when the candidate and the gold part ways (both of its tests)
RETURNS_WHERE_GOLD_REVERTS = "returns where the gold reverts"
REVERTS_WHERE_GOLD_RETURNS = "reverts where the gold returns"
OTHER_RESULTS = "other results than the gold (values returned or memory arguments)"
IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
AMOUNT = re.compile(r"^\s*-?\d+\s*(wei|gwei|ether)\s*$")


def _node_modules() -> Path | None:
    """solc-js as installed by `npm ci` in this folder (or in the real checkout, for copied projects)."""
    import dslbench
    for base in (HERE, Path(dslbench.__file__).resolve().parents[2] / "toolchains" / HERE.name):
        if (base / "node_modules" / "solc" / "package.json").exists():
            return base / "node_modules"
    return None


@functools.lru_cache(maxsize=1)
def _node_flags() -> tuple[list[str], bool]:
    """(node flags, whether solc-js fits the card's address-space limit). --disable-wasm-trap-handler
    (node >= 20.15) replaces WebAssembly's ~10 GB guard reservation by bounds checks; older node
    versions run solc-js without an address-space limit instead."""
    try:
        ok = subprocess.run(["node", *NODE_FLAGS, "-e", "0"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return (list(NODE_FLAGS), True) if ok else (["--liftoff-only"], False)


def _is_amount(v) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, str) and bool(AMOUNT.match(v)))


def _first_line(text: str, n: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line[:n]


IMPORT = re.compile(r"""^\s*import\s+(?:[^"';]*?\bfrom\s+)?["']([^"']+)["']""", re.M)


def solc_version() -> str | None:
    """The solc-js release that judges syntax (None when it is not installed)."""
    modules = _node_modules()
    return json.loads((modules / "solc" / "package.json").read_text())["version"] if modules else None


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
        if not any(all(_allows(c, full) for c in COMPARATOR.finditer(a)) for a in pragma.split("||")):
            return False, "; ".join(pragmas)
    return True, "; ".join(pragmas)


@functools.lru_cache(maxsize=64)
def _other_compilers(project: str, version: str) -> tuple[str, ...]:
    """The project's own sources (not its lib/ or node_modules/) whose pragma excludes solc `version`.
    With one of them in the build, forge builds no test at all (it finds no compiler for it), so they are
    left out (`--skip`); a test that needs one of them then fails to compile, naming it."""
    root = Path(project)
    return tuple(sorted(f for f in project_files(root, ".sol")
                        if not pragma_allows((root / f).read_text(encoding="utf-8", errors="replace"), version)[0]))


def project_files(root: Path, suffix: str) -> list[str]:
    """A forge project's own files ending in `suffix`, as paths in it: not its dependencies (lib/,
    node_modules/), git data or forge's build output."""
    found = []
    for folder, subfolders, files in os.walk(root):
        if Path(folder) == root:
            subfolders[:] = [d for d in subfolders if d not in ("lib", "node_modules", ".git", "out", "cache")]
        found += [(Path(folder) / f).relative_to(root).as_posix() for f in files if f.endswith(suffix)]
    return found


def forge_binary() -> Path | None:
    """forge from npm (the platform's package of @foundry-rs/forge in node_modules), or None."""
    modules = _node_modules()
    found = sorted((modules / "@foundry-rs").glob("forge-*/bin/forge")) if modules else []
    return next((f for f in found if os.access(f, os.X_OK)), None)


def forge_version() -> str | None:
    binary = forge_binary()
    return json.loads((binary.parent.parent / "package.json").read_text())["version"] if binary else None


def projects(repo: Path, unit: str) -> list[str]:
    """The Foundry projects that hold `unit` (a path in `repo`), innermost first, as folders relative to
    `repo` ('' is the repository itself): the repository and every folder on the unit's path with a
    foundry.toml or remappings.txt. SolEval unpacks each upstream project as lib/<project>/ of a wrapper
    project, so the project's own remappings are one or more levels down."""
    parts = Path(unit).parent.parts
    nested = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return [p for p in reversed(nested)
            if (repo / p / "foundry.toml").is_file() or (repo / p / "remappings.txt").is_file()] + [""]


def project_remappings(repo: Path, folders: list[str]) -> list[str]:
    """The remappings.txt lines of `folders` (innermost first), their targets made relative to `repo`
    as forge does for nested projects; a prefix mapped by several projects keeps the innermost one's."""
    chosen = {}
    for folder in reversed(folders):          # outermost first, so inner projects overwrite
        file = repo / folder / "remappings.txt"
        if not file.is_file():
            continue
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if "=" not in line or line.startswith("#"):
                continue
            key, target = line.split("=", 1)
            if folder:
                target = f"{folder}/{target}"
                if ":" in key:              # a context is a path in that project too
                    key = f"{folder}/{key}"
            chosen[key] = target
    return [f"{k}={v}" for k, v in chosen.items()]


def _find_unit(name: str, repo: Path, folders: list[str]) -> Path | None:
    """The file behind source unit `name`: the path itself in the repository, else, in each project
    (innermost first), under its lib/ or node_modules/, or under lib/<dependency>/src/ (forge's
    automatic remapping `<dependency>/=lib/<dependency>/src/`). Never a file outside the repository."""
    head, _, tail = name.partition("/")
    candidates = [name]
    for folder in folders:
        base = f"{folder}/" if folder else ""
        candidates += [f"{base}lib/{name}", f"{base}node_modules/{name}", f"{base}lib/{head}/src/{tail}"]
    root = repo.resolve()
    for candidate in candidates:
        found = (root / candidate).resolve()
        if found.is_file() and root in found.parents:
            return found
    return None


def _stage_imports(source: str, unit: str, repo: Path, remappings: list[str], dest: Path, limit: int = 5000):
    """Copy the repository files that `source` (unit name `unit`) imports, transitively, to dest/<source
    unit name>, where the compiler's import callback reads them.

    Mirrors solc's resolution closely enough to stage files (relative imports against the importing
    unit, then remappings by longest prefix) and forge's search for a unit (_find_unit); solc itself
    resolves the imports inside the sandbox, so an unstaged file is reported by solc.
    """
    pairs = sorted((r.split("=", 1) for r in remappings), key=lambda kv: -len(kv[0]))
    pairs = [(k.split(":", 1)[-1], v) for k, v in pairs]
    folders = projects(repo, unit)
    todo, seen = [(unit, source)], {unit}
    while todo and len(seen) < limit:
        name, text = todo.pop()
        for wanted in IMPORT.findall(text):
            if wanted.startswith("."):
                resolved = str(Path(name).parent / wanted)
                parts = []
                for part in resolved.split("/"):
                    if part == "..":
                        if parts:
                            parts.pop()
                    elif part not in (".", ""):
                        parts.append(part)
                resolved = "/".join(parts)
            else:
                resolved = wanted
            for prefix, target in pairs:
                if resolved.startswith(prefix):
                    resolved = target + resolved[len(prefix):]
                    break
            if resolved in seen:
                continue
            seen.add(resolved)
            found = _find_unit(resolved, repo, folders)
            target_path = (dest / resolved).resolve()
            if found and dest.resolve() in target_path.parents:   # an import line is candidate text: never write outside
                content = found.read_text(encoding="utf-8", errors="replace")
                target_path.parent.mkdir(parents=True, exist_ok=True)
                target_path.write_text(content, encoding="utf-8")
                todo.append((resolved, content))


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # solc compiles
    SEMANTIC_FAIL = "wrong_output"  # scenario tests

    # --- toolchain ------------------------------------------------------------------------------
    PACKAGES = {"eth-tester": None, "py-evm": None, "eth-abi": None}
    BINARIES = {"node": (["node", "--version"], r"(v\d\S*)")}
    INSTALL_HINT = "install.sh installs them: Debian package nodejs, toolchains/solidity/requirements.txt"

    def probe(self):
        if _node_modules() is None:
            return self.unavailable("solc-js is not installed: run `npm ci` in toolchains/solidity (install.sh does)")
        return super().probe()

    def describe(self, versions):
        judge = f"solc-js {solc_version()} (node {versions['node']}{'' if _node_flags()[1] else ', without an address-space limit'})"
        forge, note = self._forge()
        if forge:
            judge = (f"forge {forge['forge_version']} with solc {forge['solc_version']} (syntax); {judge} compiles "
                     f"for the scenarios")
        upstream = f"; SolEval tasks: forge {forge_version()} (npm) runs the projects' tests" if forge_binary() else ""
        return (f"{judge}; semantics: eth-tester {versions['eth-tester']} + py-evm {versions['py-evm']}{upstream}"
                + (f"; {note}" if note else ""))

    def _forge(self) -> tuple[dict | None, str]:
        """(forge setup or None, note). forge judges syntax when it and a native solc 0.8 run in the sandbox.

        forge downloads compilers itself, which cannot happen offline: it is used only with a native
        `solc` on PATH, passed to it explicitly. Both must run inside the sandbox (a home directory
        hidden from it, such as root's ~/.foundry/bin, rules them out).
        """
        if hasattr(self, "_forge_cached"):
            return self._forge_cached
        forge, solc = shutil.which("forge"), shutil.which("solc")
        setup, note = None, ""
        if forge and not solc:
            note = "forge is on PATH but no native solc is (forge would download one, impossible offline): solc-js judges"
        elif forge:
            forge, solc = str(Path(forge).resolve()), str(Path(solc).resolve())
            work = sandbox.new_workdir()
            try:
                f = self.run([forge, "--version"], work, memory_mb=None)
                v = self.run([solc, "--version"], work, memory_mb=None)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            m = re.search(r"Version:\s*(0\.8\.\d+)", v.stdout)
            fv = re.search(r"(\d+\.\d+\.\d+)", f.stdout)
            if f.returncode != 0 or v.returncode != 0:
                note = "forge and solc are on PATH but do not run in the sandbox (hidden home directory?): solc-js judges"
            elif not m:
                note = f"forge is on PATH but solc is not 0.8 ({_first_line(v.stdout, 80)}): solc-js judges"
            else:
                setup = {"forge": forge, "solc": solc, "forge_version": fv.group(1) if fv else "?",
                         "solc_version": m.group(1)}
        self._forge_cached = (setup, note)
        return self._forge_cached

    def _syntax_forge(self, forge: dict, work: Path):
        """`forge build --json` of a scratch project holding only the candidate (optimizer off, prague)."""
        proj = work / "forge_project"
        (proj / "src").mkdir(parents=True)
        shutil.copy(work / self.file_name, proj / "src" / self.file_name)
        (proj / "foundry.toml").write_text(
            f'[profile.default]\nsrc = "src"\nout = "out"\nlibs = []\nsolc = "{forge["solc"]}"\n'
            f'offline = true\nevm_version = "{EVM_VERSION}"\noptimizer = false\ncache = false\n', encoding="utf-8")
        result = self.run(["forge", "build", "--json", "--root", "forge_project"], work, memory_mb=None,
                          env={"PATH": f"{Path(forge['forge']).parent}:/usr/local/bin:/usr/bin:/bin"})
        if result.timed_out:
            return self.verdict("fail", "forge build timed out", result)
        try:
            output = json.loads(result.stdout)
        except json.JSONDecodeError:
            first = _first_line(result.stderr, 240)
            if f"src/{self.file_name}" in first:   # forge refuses the file itself, e.g. a pragma for another solc
                return self.verdict("fail", "forge: " + first.removeprefix("Error: "), result)
            return self.verdict("error", f"forge build gave no JSON (exit {result.returncode}): {first}", result)
        errors = []
        for e in output.get("errors", []):
            m = re.search(r"-->\s*(?:src/)?([^\s:]+):(\d+):(\d+):", e.get("formattedMessage", ""))
            errors.append({"severity": e.get("severity", "error"), "type": e.get("type", "Error"),
                           "message": e.get("message", ""), "location": ":".join(m.groups()) if m else ""})
        report = {"compiler": f"{forge['solc_version']} via forge {forge['forge_version']}",
                  "files": {self.file_name: {"errors": errors}}}
        return self._syntax_verdict(result, report, self.file_name)

    def _compile(self, work: Path, files: list[dict]) -> tuple:
        """Compile files with solc-js in the sandbox; returns (RunResult, report or None)."""
        shutil.copy(COMPILER, work / "solc_compile.js")
        job = {"output": "compiled.json", "evm_version": EVM_VERSION, "files": files}
        (work / "compile_job.json").write_text(json.dumps(job, indent=1), encoding="utf-8")
        modules = _node_modules()
        flags, limited = _node_flags()
        extra = {} if limited else {"memory_mb": None}   # WebAssembly reserves ~10 GB of address space
        result = self.run(["node", *flags, "solc_compile.js", "compile_job.json"], work,
                          env={"NODE_PATH": str(modules)} if modules else None, **extra)
        return result, self.read_report(work / "compiled.json", result) if result.returncode == 0 else None

    @staticmethod
    def _errors(entry: dict, severity: str) -> list[dict]:
        return [e for e in entry.get("errors", []) if e["severity"] == severity]

    @staticmethod
    def _describe(e: dict) -> str:
        msg = f"{e['type']}: {_first_line(e['message'], 240)}"
        return f"{msg} ({e['location']})" if e.get("location") else msg

    def task_probe(self, task, probe):
        if task.oracle.get("kind") == "repository" and forge_binary():
            return {**probe, "stand_in_for": ""}    # judged by the project's own forge tests, as in the paper
        return probe

    # --- syntax -------------------------------------------------------------------------------------
    def syntax(self, program, task, work):
        if task.oracle.get("kind") == "repository":
            return self._syntax_repository(program, task, work)
        forge, _ = self._forge()
        if forge:
            return self._syntax_forge(forge, work)   # the semantic level then compiles with solc-js
        files = [{"path": self.file_name}]
        if task.gold.strip():
            # The gold and support contracts serve the semantic level; compiling them in the same node
            # process saves a second compiler start. They are compiled only if the candidate compiles.
            (work / "gold.sol").write_text(task.gold, encoding="utf-8")
            files.append({"path": "gold.sol"})
            files += [{"path": name} for name in task.oracle.get("support", [])]
        result, report = self._compile(work, files)
        return self._syntax_verdict(result, report, self.file_name)

    def _syntax_verdict(self, result, report, unit: str, prefix: str = ""):
        if result.timed_out:
            return self.verdict("fail", "solc timed out", result)
        if report is None or unit not in report["files"]:
            return self.verdict("error", f"solc-js runner failed (exit {result.returncode}): "
                                         f"{_first_line(result.stderr, 200)}", result)
        entry = report["files"][unit]
        errors, warnings = self._errors(entry, "error"), self._errors(entry, "warning")
        if errors:
            more = f" (+{len(errors) - 1} more errors)" if len(errors) > 1 else ""
            return self.verdict("fail", prefix + self._describe(errors[0]) + more, result)
        note = f"; {len(warnings)} warning(s), first: {self._describe(warnings[0])}" if warnings else ""
        return self.verdict("pass", f"{prefix}compiles with solc {report['compiler'].split('+')[0]}{note}", result)

    # --- semantic -----------------------------------------------------------------------------------
    def semantic(self, program, task, work):
        if task.oracle.get("kind") == "repository":
            return self._semantic_repository(program, task, work)
        gold_unit = "gold.sol"
        support = list(task.oracle.get("support", []))
        wanted = [self.file_name, gold_unit, *support]
        report = self.read_report(work / "compiled.json")
        compile_result = None
        if report is None or any(u not in report["files"] for u in wanted):
            (work / gold_unit).write_text(task.gold, encoding="utf-8")
            # Gold and support first: a candidate error must not stop their compilation.
            compile_result, report = self._compile(work, [{"path": u} for u in [gold_unit, *support, self.file_name]])
            if report is None:
                return self.verdict("error", "solc-js runner failed while compiling for the semantic level",
                                    compile_result)
        for unit in [gold_unit, *support]:
            if unit not in report["files"] or self._errors(report["files"][unit], "error"):
                return self.verdict("error", f"{unit} does not compile: the task is broken", compile_result,
                                    reason="gold_broken")
        if self._errors(report["files"].get(self.file_name, {"errors": []}), "error"):
            return self.verdict("fail", "the program does not compile", compile_result)

        def artifact(unit):
            entry = report["files"][unit]
            return {"contracts": entry["contracts"], "declared": entry["declared"]}

        support_contracts = {}
        for unit in support:
            support_contracts.update(report["files"][unit]["contracts"])
        o = task.oracle
        spec = {"contract": o["contract"], "scenarios": o["scenarios"], "declares": o.get("declares") or {},
                "reference": artifact(gold_unit), "support": {"contracts": support_contracts},
                "programs": {"gold": artifact(gold_unit), "candidate": artifact(self.file_name)},
                "order": ["gold", "candidate"]}
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        result, rep = self.run_runner([RUNNER], ["spec.json", "report.json"], work)
        duration = result.duration_s + (compile_result.duration_s if compile_result else 0.0)
        if result.timed_out:
            return self.verdict("fail", f"scenarios timed out after {self.limits().timeout_s:.0f} s "
                                        f"(non-terminating or very expensive code?)", result, duration)
        if rep is None:
            return self.verdict("error", f"scenario runner failed (exit {result.returncode}): "
                                         f"{_first_line(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else '')}",
                                result, duration)
        gold = rep["gold"]
        if gold["declares"]:
            return self.verdict("error", f"the gold does not meet the oracle: {gold['declares']}", result, duration,
                                reason="gold_broken", expected=gold.get("declares_expected", ""))
        for s in gold["scenarios"]:
            if not s["ok"]:
                why = s.get("oracle_error") or s.get("mismatch")
                return self.verdict("error", f"the gold does not meet the oracle: scenario '{s['name']}': {why}",
                                    result, duration, reason="gold_broken", expected=s.get("expected", ""))
        cand = rep["candidate"]
        if cand["declares"]:
            return self.verdict("fail", f"structure: {cand['declares']}", result, duration,
                                expected=f"structure: {cand.get('declares_expected', '')}")
        failed = [s for s in cand["scenarios"] if not s["ok"]]
        if failed:
            s = failed[0]
            why = s.get("mismatch") or f"oracle error: {s.get('oracle_error')}"
            more = f" [{len(failed)}/{len(cand['scenarios'])} scenarios fail]"
            expected = f"scenario '{s['name']}': {s['expected']}" if s.get("expected") else ""
            return self.verdict("fail", f"scenario '{s['name']}': {why}{more}", result, duration, expected=expected)
        steps = sum(s["steps"] for s in cand["scenarios"])
        return self.verdict("pass", f"{len(cand['scenarios'])} scenarios ({steps} steps) behave as specified",
                            result, duration)

    # --- oracle spec --------------------------------------------------------------------------------
    def oracle_rules(self, task):
        o = task.oracle
        if o.get("kind") == "repository":
            if o["unit"] not in task.context:
                return [("unit", f"'{o['unit']}' is not a context file of the task")]
            if task.context[o["unit"]].count(o["marker"]) != 1:
                return [("marker", "must occur exactly once in the context file")]
            return []
        problems: list[tuple[str, str]] = []
        for i, name in enumerate(o.get("support", [])):
            if name not in task.context or not str(name).endswith(".sol"):
                problems.append((f"support[{i}]", f"'{name}' is not a .sol context file of the task"))
        names = set()
        for i, sc in enumerate(o["scenarios"]):
            f = f"scenarios[{i}]"
            if sc["name"] in names:
                problems.append((f"{f}.name", f"duplicate scenario name '{sc['name']}'"))
            names.add(sc["name"])
            labels: set[str] = set()
            for j, step in enumerate(sc["steps"]):
                problems += self._check_step(step, f"{f}.steps[{j}]", labels, first=(j == 0))
        return problems

    def _check_refs(self, value, field: str, labels: set) -> list:
        if isinstance(value, list):
            return [p for k, v in enumerate(value) for p in self._check_refs(v, f"{field}[{k}]", labels)]
        if isinstance(value, str) and value.startswith("$"):
            ok = value[1:] in labels or value == "$zero" or (value[1:].isdigit() and int(value[1:]) < N_ACCOUNTS)
            if not ok:
                return [(field, f"unknown reference '{value}' (use $0..${N_ACCOUNTS - 1}, $zero or a deployed label)")]
        if isinstance(value, dict):
            return [(field, "values are scalars or lists (write a struct as a list of its fields)")]
        return []

    def _check_step(self, step, f: str, labels: set, first: bool) -> list:
        if not isinstance(step, dict):
            return [(f, "a step is a mapping")]
        actions = [a for a in ACTIONS if a in step]
        if len(actions) != 1:
            return [(f, f"a step has exactly one action of {', '.join(ACTIONS)}")]
        action = actions[0]
        problems = []
        extra = set(step) - {action} - MODIFIERS[action]
        if extra:
            problems.append((f"{f}.{sorted(extra)[0]}", f"not allowed in a {action} step "
                                                         f"(allowed: {', '.join(sorted(MODIFIERS[action]))})"))
        if first and action != "deploy":
            problems.append((f, "the first step of a scenario must be a deploy"))
        value = step[action]
        if action == "deploy":
            if not isinstance(value, list):
                problems.append((f"{f}.deploy", "the constructor arguments, as a list ([] for none)"))
            else:
                problems += self._check_refs(value, f"{f}.deploy", labels)
            if "contract" in step and (not isinstance(step["contract"], str) or not IDENT.match(step["contract"])):
                problems.append((f"{f}.contract", "a contract name"))
            label = step.get("as", "contract")
            if not isinstance(label, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", label) or label == "zero":
                problems.append((f"{f}.as", "a label: letters, digits and _, not starting with a digit"))
            elif "reverts" not in step:
                labels.add(label)
        elif action in ("call", "transact"):
            if not isinstance(value, str) or not re.match(r"^[A-Za-z_$][A-Za-z0-9_$]*(\(.*\))?$", value):
                problems.append((f"{f}.{action}", "a function name or full signature such as f(uint256)"))
        elif action == "send":
            if not _is_amount(value) or (isinstance(value, int) and value < 0):
                problems.append((f"{f}.send", "the amount: an integer (wei) or '<n> wei|gwei|ether'"))
            data = step.get("data", "0x")
            if not isinstance(data, str) or not re.fullmatch(r"0x([0-9a-fA-F]{2})*", data):
                problems.append((f"{f}.data", "call data as 0x-prefixed hex"))
        elif action in ("balance", "balance_change"):
            if not isinstance(value, str) or not value.startswith("$"):
                problems.append((f"{f}.{action}", "an account or contract reference such as $1 or $contract"))
            else:
                problems += self._check_refs(value, f"{f}.{action}", labels)
            if "equals" not in step or not _is_amount(step["equals"]):
                problems.append((f"{f}.equals", "the expected amount: an integer (wei) or '<n> wei|gwei|ether'"))
        elif action in ("mine", "wait"):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append((f"{f}.{action}", "a positive integer"))
        if "from" in step and (not isinstance(step["from"], int) or isinstance(step["from"], bool)
                               or not 0 <= step["from"] < N_ACCOUNTS):
            problems.append((f"{f}.from", f"an account index 0..{N_ACCOUNTS - 1}"))
        if "value" in step and (not _is_amount(step["value"]) or (isinstance(step["value"], int) and step["value"] < 0)):
            problems.append((f"{f}.value", "an amount: an integer (wei) or '<n> wei|gwei|ether'"))
        if "to" in step and step["to"] not in labels:
            problems.append((f"{f}.to", f"'{step['to']}' is not deployed earlier in the scenario"))
        if action in ("call", "transact", "send") and "to" not in step and "contract" not in labels:
            problems.append((f, "no contract deployed (as 'contract') before this step"))
        if "args" in step:
            if not isinstance(step["args"], list):
                problems.append((f"{f}.args", "must be a list"))
            else:
                problems += self._check_refs(step["args"], f"{f}.args", labels)
        if "returns" in step and action == "send":
            if not isinstance(step["returns"], str) or not re.fullmatch(r"0x([0-9a-fA-F]{2})*", step["returns"]):
                problems.append((f"{f}.returns", "the raw return data of a send, as 0x-prefixed hex"))
        elif "returns" in step:
            if not isinstance(step["returns"], list):
                problems.append((f"{f}.returns", "must be the list of return values"))
            else:
                problems += self._check_refs(step["returns"], f"{f}.returns", labels)
        if "events" in step:
            events = step["events"]
            if not isinstance(events, list) or not all(isinstance(e, list) and e and isinstance(e[0], str)
                                                       and IDENT.match(e[0]) for e in events):
                problems.append((f"{f}.events", "a list of [EventName, arg, ...] lists ([] for none)"))
            else:
                for k, e in enumerate(events):
                    problems += self._check_refs(e[1:], f"{f}.events[{k}]", labels | ({"contract"} if action == "deploy" else set()))
        if "reverts" in step:
            r = step["reverts"]
            if "returns" in step or "events" in step:
                problems.append((f"{f}.reverts", "a reverting step cannot also expect returns or events"))
            if r is True:
                pass
            elif isinstance(r, dict) and len(r) == 1 and isinstance(r.get("reason"), str):
                pass
            elif isinstance(r, dict) and len(r) == 1 and isinstance(r.get("panic"), int) and not isinstance(r.get("panic"), bool):
                pass
            elif isinstance(r, dict) and isinstance(r.get("error"), str) and IDENT.match(r["error"]) \
                    and set(r) <= {"error", "args"} and isinstance(r.get("args", []), list):
                problems += self._check_refs(r.get("args", []), f"{f}.reverts.args", labels)
            else:
                problems.append((f"{f}.reverts", "true, {reason: text}, {panic: code} or {error: Name, args: [...]}"))
        return problems

    # --- upstream: SolEval -----------------------------------------------------------------------------

    @staticmethod
    def _spliced(program, task) -> str:
        """The task's file with the candidate function in place of the marker line."""
        return task.context[task.oracle["unit"]].replace(task.oracle["marker"], program.strip("\n"), 1)

    def _syntax_repository(self, program, task, work):
        o = task.oracle
        repo = Path(o["repository"])
        if not repo.is_dir():
            return self.verdict("unavailable", f"the user's repository {o['repository']} is not on this machine "
                                               f"(needed for imports and tests)")
        spliced = self._spliced(program, task)
        (work / "spliced.sol").write_text(spliced, encoding="utf-8")
        remappings = project_remappings(repo, projects(repo, o["file"]))
        # The sandbox cannot see every host path (private /tmp, hidden /root): stage the files the unit
        # imports, transitively, into the work directory; solc resolves them there.
        _stage_imports(spliced, o["file"], repo, remappings, work / "repo")
        files = [{"path": "spliced.sol", "name": o["file"], "import_root": "repo", "remappings": remappings}]
        result, report = self._compile(work, files)
        return self._syntax_verdict(result, report, o["file"], prefix=f"{o['function']} spliced into {o['file']}: ")

    def _semantic_repository(self, program, task, work):
        """SolEval's own oracle: the project's forge tests for the file, run on a copy of the project with
        the candidate spliced in; the candidate passes when every test passes (and at least one ran)."""
        o = task.oracle
        forge = forge_binary()
        if forge is None:
            return self.verdict("unavailable", "forge is not installed (npm @foundry-rs/forge in toolchains/solidity, "
                                               "which install.sh installs): the project's tests cannot run")
        source = Path(o["repository"]) / o["project"]
        project = work / "project"
        # A copy: the tests build into it, and the sandbox cannot see every host path.
        shutil.copytree(source, project, symlinks=True, ignore=shutil.ignore_patterns(".git", "out", "cache", "broadcast"))
        candidate_file = project / Path(o["file"]).relative_to(o["project"])
        candidate_file.write_text(self._spliced(program, task), encoding="utf-8")
        check = o.get("same_as_gold")
        if check:
            self._write_same_as_gold(task, candidate_file, check)
        # forge runs the `solc` it is given (an absolute path); solc_cli.js is solc-js behind solc's CLI.
        wrapper = work / "solc"
        wrapper.write_text(f'#!/bin/sh\nexec node {" ".join(_node_flags()[0])} {HERE / "solc_cli.js"} "$@"\n',
                           encoding="utf-8")
        wrapper.chmod(0o755)
        cmd = [str(forge), "test", "--root", "project", "--offline", "--use", f"{sandbox.path_inside(work)}/solc",
               "--match-path", f"**/{{{o['match_path']},{SAME_AS_GOLD}.t.sol}}" if check else o["match_path"],
               "--fuzz-seed", "0", "--json"]   # fixed seed: the same fuzz inputs
        cmd += [arg for path in _other_compilers(str(source), solc_version()) for arg in ("--skip", path)]
        # A profile of our own inherits the project's default one and changes two settings (forge ignores
        # FOUNDRY_FFI when foundry.toml sets ffi): no test may start a program (vm.ffi), as the candidate is
        # untrusted; and the tests were written for forge before 1.0, where vm.expectRevert also caught the
        # revert of an internal (library) call, which forge 1.x does only with this setting.
        with open(project / "foundry.toml", "a", encoding="utf-8") as config:
            config.write("\n[profile.dslbench]\nffi = false\nallow_internal_expect_revert = true\n")
        env = {"NODE_PATH": str(_node_modules()), "FOUNDRY_PROFILE": "dslbench"}
        result = self.run(cmd, work, env=env, **self.card["forge_test_limits"])
        if result.timed_out:
            return self.verdict("fail", f"the project's tests ({o['match_path']}) timed out", result)
        try:
            suites = json.loads(result.stdout)
        except json.JSONDecodeError:
            said = "\n".join(l for l in (result.stderr + "\n" + result.stdout).splitlines()
                             if l.strip() and not l.startswith("Warning:"))
            errors = [l.strip() for l in said.splitlines() if re.match(r"\s*(\w+Error|Error \(\d+\)):", l)]
            if errors:
                return self.verdict("fail", f"the project's tests do not compile with this function: {errors[0][:240]}",
                                    result)
            return self.verdict("error", f"forge test gave no results (exit {result.returncode}): "
                                         f"{_first_line(said, 240)}", result)
        tests = {f"{suite.split(':')[-1]}.{name}": r for suite, body in suites.items()
                 for name, r in (body.get("test_results") or {}).items() if SAME_AS_GOLD not in suite}
        compared = {name.split("(")[0]: r for suite, body in suites.items() if SAME_AS_GOLD in suite
                    for name, r in (body.get("test_results") or {}).items()}
        failed = [(name, r.get("reason") or "") for name, r in tests.items() if r.get("status") == "Failure"]
        differs = ""
        fuzzed, bounds = compared.get("testSameAsGold"), compared.get("testSameAsGoldAtBounds")
        if check and fuzzed is None:
            differs = f"the comparison of {o['function']} with the gold did not run"
        elif check and fuzzed.get("status") != "Success":
            inputs = (fuzzed.get("counterexample") or {}).get("Single", {}).get("args") or "?"
            differs = (f"{o['function']} differs from the gold on fuzzed inputs ({inputs[:160]}): "
                       f"{fuzzed.get('reason') or 'no reason given'}")
        elif bounds and bounds.get("status") != "Success":
            differs = f"{o['function']} differs from the gold {_boundary_input(bounds.get('reason') or '', check)}"
        if failed:
            shown = "; ".join(f"{n}{f' ({why[:120]})' if why else ''}" for n, why in failed[:3])
            return self.verdict("fail", f"{len(failed)} of {len(tests)} test(s) of {o['match_path']} fail: {shown}"
                                + (" ..." if len(failed) > 3 else "") + (f"; and {differs}" if differs else ""), result)
        passed = sum(r.get("status") == "Success" for r in tests.values())
        if not passed:
            return self.verdict("error", f"no test of {o['match_path']} ran in {o['project'] or 'the repository'}",
                                result, reason="gold_broken")
        if differs:
            return self.verdict("fail", f"{passed} test(s) of {o['match_path']} pass, but {differs}", result)
        same = (f"; it behaves as the gold on {self.card['same_as_gold_runs']} fuzzed inputs"
                + (" and at the integer parameters' powers of two" if bounds else "")) if check else ""
        return self.verdict("pass", f"{passed} test(s) of {o['match_path']} pass{same}", result)

    def _write_same_as_gold(self, task, candidate_file: Path, check: dict):
        """Beside the candidate's file: a copy of the file with the gold in it, and a fuzz test that calls
        the function of both on the same inputs (soleval.same_as_gold says which functions qualify). The
        project's own tests leave gaps (a bound, a constant, a branch no test reaches); this closes them
        for the inputs drawn, as a check against a reference implementation does. A second test sweeps
        the integer parameters over powers of two (_boundary_sweep), where bounds sit."""
        gold_file = candidate_file.with_name(candidate_file.stem + ".dslbench_gold.sol")
        gold_file.write_text(self._spliced(task.gold, task), encoding="utf-8")
        library, function = check["library"], task.oracle["function"]
        params = ", ".join(f"{t} a{i}" for i, t in enumerate(check["parameters"]))
        args = ", ".join(f"a{i}" for i in range(len(check["parameters"])))
        results = ", ".join(f"{t} r{i}" for i, t in enumerate(check["results"]))
        # memory arguments are compared after the call too: a function may change them in place
        seen = [f"r{i}" for i in range(len(check["results"]))] + \
            [f"a{i}" for i, t in enumerate(check["parameters"]) if t.endswith(" memory")]

        def wrapper(name, lib):
            call = f"({results}) = {lib}.{function}({args});" if results else f"{lib}.{function}({args});"
            return (f"    function {name}({params}) external pure returns (bytes memory) {{\n"
                    f"        {call}\n        return abi.encode({', '.join(seen)});\n    }}\n")

        fuzzed = ", ".join(f"{t.replace(' calldata', ' memory')} a{i}" for i, t in enumerate(check["parameters"]))
        comma = ", " if args else ""
        (candidate_file.parent / f"{SAME_AS_GOLD}.t.sol").write_text(
            "// SPDX-License-Identifier: UNLICENSED\n// Written by DSL-Bench: the candidate's function against the gold's.\n"
            "pragma solidity >=0.8.4;\n\n"
            f'import {{{library}}} from "./{candidate_file.name}";\n'
            f'import {{{library} as DslbenchGold}} from "./{gold_file.name}";\n\n'
            f"contract {SAME_AS_GOLD} {{\n" + wrapper("candidate", library) + wrapper("gold", "DslbenchGold") +
            f"\n    /// forge-config: dslbench.fuzz.runs = {self.card['same_as_gold_runs']}\n"
            f"    function testSameAsGold({fuzzed}) external view {{\n"
            # the same gas for both calls: code that reads far out of bounds runs out of it in both or neither
            f"        uint256 budget = gasleft() / 3;\n"
            f"        (bool candidateOk, bytes memory candidateOut) = address(this).staticcall{{gas: budget}}(\n"
            f"            abi.encodeWithSelector(this.candidate.selector{comma}{args}));\n"
            f"        (bool goldOk, bytes memory goldOut) = address(this).staticcall{{gas: budget}}(\n"
            f"            abi.encodeWithSelector(this.gold.selector{comma}{args}));\n"
            f'        require(candidateOk == goldOk, candidateOk ? "{RETURNS_WHERE_GOLD_REVERTS}" : "{REVERTS_WHERE_GOLD_RETURNS}");\n'
            f'        require(!goldOk || keccak256(candidateOut) == keccak256(goldOut), "{OTHER_RESULTS}");\n'
            "    }\n" + _boundary_sweep(check) + "}\n", encoding="utf-8")

    def import_upstream(self, source: Path) -> Imported:
        from . import soleval
        return soleval.load(Path(source))


# Random inputs rarely hit an exact bound (`x < 1 << 39` made `x <= 1 << 39` differs at one input of
# 2^256), so each integer parameter is also swept over 2^k - 1, 2^k, 2^k + 1 (and their negatives where
# signed) for every k up to its width, the other parameters zero. One call may use SWEEP_GAS; the sweep
# ends early, for gold and candidate alike, when the test's own gas runs low.
SWEEP_GAS = 1_000_000
MAX_SWEPT_PARAMETERS = 4    # locals of the sweep beside its loop counters, clear of "stack too deep"


def _integer_type(solidity_type: str) -> tuple[bool, int] | None:
    """(signed, width in bits) of an integer type such as int40 or uint, else None."""
    m = re.fullmatch(r"(u?)int(\d*)", solidity_type)
    return (m.group(1) == "", int(m.group(2) or 256)) if m else None


def _boundary_sweep(check: dict) -> str:
    """The Solidity of testSameAsGoldAtBounds, or "" when no parameter is an integer."""
    types = [t.replace(" calldata", " memory") for t in check["parameters"]]
    swept = [(i, *integer) for i, t in enumerate(types) if (integer := _integer_type(t))]
    if not swept or len(types) > MAX_SWEPT_PARAMETERS:
        return ""
    args = ", ".join(f"a{i}" for i in range(len(types)))
    body = [f"        {t} a{i};" for i, t in enumerate(types)]
    for i, signed, bits in swept:
        value = f"int{bits}(_signedBound(k, j))" if signed else f"uint{bits}(_unsignedBound(k, j))"
        body += [f"        for (uint256 k; k <= {bits}; ++k) {{",
                 f"            for (uint256 j; j < {6 if signed else 3}; ++j) {{",
                 f"                a{i} = {value};",
                 f"                if (!_sameAtBound(abi.encode({args}), {i}, k, j)) return;",
                 "            }", "        }", f"        a{i} = 0;"]
    return f"""
    error DiffersAtBound(string how, uint256 parameter, uint256 power, uint256 variant);

    function testSameAsGoldAtBounds() external view {{
{chr(10).join(body)}
    }}

    function _unsignedBound(uint256 k, uint256 j) internal pure returns (uint256) {{
        unchecked {{ return (uint256(1) << k) + j - 1; }}       // 2^k - 1, 2^k, 2^k + 1
    }}

    function _signedBound(uint256 k, uint256 j) internal pure returns (int256 v) {{
        unchecked {{ v = (int256(1) << k) + int256(j % 3) - 1; if (j >= 3) v = -v; }}
    }}

    function _sameAtBound(bytes memory args, uint256 parameter, uint256 k, uint256 j) internal view returns (bool) {{
        if (gasleft() < 3 * {SWEEP_GAS}) return false;
        (bool candidateOk, bytes memory candidateOut) = address(this).staticcall{{gas: {SWEEP_GAS}}}(
            bytes.concat(this.candidate.selector, args));
        (bool goldOk, bytes memory goldOut) = address(this).staticcall{{gas: {SWEEP_GAS}}}(
            bytes.concat(this.gold.selector, args));
        if (candidateOk != goldOk)
            revert DiffersAtBound(candidateOk ? "{RETURNS_WHERE_GOLD_REVERTS}" : "{REVERTS_WHERE_GOLD_RETURNS}", parameter, k, j);
        if (goldOk && keccak256(candidateOut) != keccak256(goldOut))
            revert DiffersAtBound("{OTHER_RESULTS}", parameter, k, j);
        return true;
    }}
"""


def _boundary_input(reason: str, check: dict) -> str:
    """'at a boundary input (a0 = -549755813888): how', from forge's rendering of DiffersAtBound."""
    m = re.search(r'DiffersAtBound\("([^"]*)", (\d+), (\d+), (\d+)\)', reason)
    if not m:
        return f"at a boundary input: {reason or 'no reason given'}"
    how, i, k, j = m.group(1), *map(int, m.groups()[1:])
    signed, bits = _integer_type(check["parameters"][i])
    value = ((1 << k) + j % 3 - 1) * (-1 if j >= 3 else 1) % (1 << bits)
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return f"at a boundary input (a{i} = {value}): {how}"
