"""Lean 4: syntax = `lean` elaborates the file; semantic = the task's theorem is proved with its exact
statement, without sorry/admit/new axioms (screening + `#print axioms` on the real toolchain).

Oracle:
  theorem: name of the theorem the candidate must prove (top level, not in a namespace)
  statement: its binders and type exactly as given to the model (whitespace- and comment-insensitive)
  imports: [module...]   optional; [] for core-only tasks (the benchmark's own tasks); upstream
                         tasks list Mathlib, which needs a Lake project (DSLBENCH_LEAN_PROJECT):
                         without one both levels are `unavailable`, never a fail
  preamble: text         optional; what the file must begin with (imports, opens, the definitions the
                         statement uses, a PutnamBench answer), unchanged (whitespace and comments aside)
  reference_proof: true | false   optional (default true); false marks imported tasks whose gold is
                         the upstream statement with a `sorry` placeholder (no proof to self-check)
"""
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from dslbench.toolchains import Toolchain, tool_version
from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each

from . import leancheck as lc

def _project() -> Path | None:
    """A Lake project (with Mathlib) to elaborate upstream tasks in, when one is configured."""
    p = os.environ.get("DSLBENCH_LEAN_PROJECT")
    return Path(p) if p and (Path(p) / "lakefile.lean").exists() or p and (Path(p) / "lakefile.toml").exists() else None


CORE_MODULES = ("Init", "Std", "Lean")


def _project_imports(task) -> list[str]:
    return [i for i in task.oracle.get("imports", []) if i.split(".")[0] not in CORE_MODULES]


@functools.lru_cache(maxsize=None)
def _lean_path(project: str, lean: str) -> str:
    """LEAN_PATH of a Lake project (`lake env printenv LEAN_PATH`), '' when lake cannot tell."""
    lake = Path(lean).parent / "lake"
    lake = str(lake) if lake.is_file() else shutil.which("lake")
    if not lake:
        return ""
    try:
        out = subprocess.run([lake, "-d", project, "env", "printenv", "LEAN_PATH"], capture_output=True,
                             text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _needs_project(task, lean: str | None = None) -> str:
    """Why the task cannot be elaborated here ('' when it can): it imports beyond the core library
    (Mathlib) and no Lake project is configured (or lake cannot give its module path)."""
    extra = _project_imports(task)
    if not extra:
        return ""
    project = _project()
    if project:
        if _lean_path(str(project), lean or shutil.which("lean") or "lean"):
            return ""
        why = f"`lake env printenv LEAN_PATH` failed in DSLBENCH_LEAN_PROJECT={project}"
    elif not os.environ.get("DSLBENCH_LEAN_PROJECT"):
        why = "DSLBENCH_LEAN_PROJECT is not set"
    else:
        why = f"DSLBENCH_LEAN_PROJECT={os.environ['DSLBENCH_LEAN_PROJECT']} has no lakefile"
    return (f"the task imports {', '.join(extra)}, which the core toolchain lacks: {why} (point it at a Lake "
            f"project that requires Mathlib, built with `lake exe cache get && lake build`)")


def _not_executed(tc, result):
    """Exit 126/127: the sandbox could not run lean at all (e.g. a toolchain under /tmp or /root, which
    the sandbox masks): the harness's failure, never a verdict on the program."""
    return tc.verdict("error", f"lean could not be executed in the sandbox (exit {result.returncode}; the toolchain "
                      f"and DSLBENCH_LEAN_PROJECT must live outside /root, /tmp, /home)", result, reason="sandbox_error")


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # Lean elaborates
    SEMANTIC_FAIL = "verification_failed"  # proof checking

    def probe(self):
        lean = shutil.which("lean")
        if not lean:
            why = ("lean not on PATH" + (" (lake is, but lean is not)" if shutil.which("lake") else "") +
                   ": no Lean 4 toolchain is installable here from Debian, PyPI or npm (elan downloads "
                   "toolchains at install time); install one with elan to judge Lean tasks")
            return self.unavailable(why)
        out = tool_version([lean, "--version"], r"(?s)(.+)").strip()    # all it prints, for the reason below
        mo = re.search(r"version\s+(\d+\.\d+\.\d+[\w.+-]*)", out)
        if not mo:
            return self.unavailable(f"`lean --version` did not report a Lean 4 version: {out[:200]}")
        if not mo.group(1).startswith("4."):
            return self.unavailable(f"lean on PATH is version {mo.group(1)}, not Lean 4", version=mo.group(1))
        # The sandbox has its own PATH and HOME (an elan proxy in ~/.elan would not resolve there):
        # run the toolchain's real binary, found through `lean --print-prefix`.
        pre = tool_version([lean, "--print-prefix"], r"(\S(?:.*\S)?)")
        real = Path(pre) / "bin" / "lean" if pre and not pre.startswith("Lean") else None
        self.lean_bin = str(real) if real and real.is_file() else os.path.realpath(lean)
        return self.available(f"Lean {mo.group(1)}")

    def gold_is_solution(self, task) -> bool:
        # imported miniF2F/PutnamBench tasks: the gold is the upstream statement with `sorry`
        return task.oracle.get("reference_proof", True)

    def oracle_rules(self, task):
        # the gold must agree with the oracle; without a reference proof the gold is still the statement
        # (with sorry): check what is checkable
        o, problems = task.oracle, []
        name = o["theorem"]
        got = lc.theorem_statement(task.gold, name)
        if got is None:
            problems.append(("theorem", f"the gold does not declare theorem {name}"))
        elif got != lc.normalize(o["statement"]):
            problems.append(("statement", f"differs from the gold's statement {got!r}"))
        if not lc.starts_with_preamble(task.gold, o.get("preamble", "")):
            problems.append(("preamble", "the gold does not begin with the preamble"))
        if o.get("reference_proof", True):
            bad = lc.screen(task.gold)
            if bad:
                problems.append(("theorem", f"the gold proof is not acceptable: {bad[0]}"))
        if name not in task.instruction:
            problems.append(("theorem", "the instruction must name the theorem"))
        return problems

    # --- levels ------------------------------------------------------------------------------------
    def _lean(self, work: Path, file: str, task):
        lean = getattr(self, "lean_bin", None) or shutil.which("lean") or "lean"
        if not _project_imports(task):
            return self.run([lean, file], work)
        # the project's module path, asked of lake once outside the sandbox (whose PATH has neither lake
        # nor an elan proxy); the toolchain's own lean then reads the built Mathlib through LEAN_PATH
        return self.run([lean, file], work, env={"LEAN_PATH": _lean_path(str(_project()), lean)})

    def syntax(self, program, task, work):
        missing = _needs_project(task, getattr(self, "lean_bin", None))
        if missing:
            return self.verdict("unavailable", missing, duration_s=0.0, reason="toolchain_unavailable")
        result = self._lean(work, self.file_name, task)
        if result.returncode in (126, 127) and not result.timed_out:
            return _not_executed(self, result)
        if result.timed_out:
            return self.verdict("fail", f"lean timed out after {self.limits().timeout_s:.0f} s", result)
        if result.returncode != 0:
            err = lc.first_error(result.stdout + "\n" + result.stderr)
            return self.verdict("fail", err or f"lean exit {result.returncode}", result)
        return self.verdict("pass", "lean elaborates the file", result)

    def semantic(self, program, task, work):
        name, stmt = task.oracle["theorem"], task.oracle["statement"]
        # the statement first: a changed statement is named as such even when its proof is a sorry
        # (the mutants of imported tasks, whose upstream has no proofs)
        got = lc.theorem_statement(program, name)
        if got is None:
            return self.verdict("fail", f"theorem {name} is not declared at top level", duration_s=0.0)
        if got != lc.normalize(stmt):
            return self.verdict("fail", f"theorem {name} has the statement {got[:150]!r}, not the one the task states",
                                duration_s=0.0, expected=f"theorem {name} {lc.normalize(stmt)[:300]}")
        preamble = task.oracle.get("preamble", "")
        if not lc.starts_with_preamble(program, preamble):
            return self.verdict("fail", "the file does not begin with the task's preamble unchanged (imports, "
                                "opens, the definitions and answer the statement uses)", duration_s=0.0,
                                expected=lc.normalize(preamble)[:300])
        bad = lc.screen(program)
        if bad:
            return self.verdict("fail", f"forbidden: {bad[0]}", duration_s=0.0)
        missing = _needs_project(task, getattr(self, "lean_bin", None))
        if missing:
            return self.verdict("unavailable", missing, duration_s=0.0, reason="toolchain_unavailable")
        (work / "Check.lean").write_text(program.rstrip("\n") + f"\n\n#print axioms {name}\n", encoding="utf-8")
        result = self._lean(work, "Check.lean", task)
        if result.returncode in (126, 127) and not result.timed_out:
            return _not_executed(self, result)
        out = result.stdout + "\n" + result.stderr
        if result.timed_out:
            return self.verdict("fail", "lean timed out", result)
        if result.returncode != 0:
            return self.verdict("fail", lc.first_error(out) or f"lean exit {result.returncode}", result)
        axioms = lc.parse_axioms(out, name)
        if axioms is None:
            return self.verdict("fail", f"`#print axioms {name}` printed nothing: the theorem is not checked", result)
        extra = [a for a in axioms if a not in lc.STANDARD_AXIOMS]
        if extra:
            why = "uses sorry" if "sorryAx" in extra else f"depends on non-standard axioms {extra}"
            return self.verdict("fail", f"theorem {name} {why}", result)
        return self.verdict("pass", f"theorem {name} proved; axioms: {', '.join(axioms) or 'none'}", result)

    # --- upstream: miniF2F-lean4 and PutnamBench, as published ---------------------------------------
    def import_upstream(self, source: Path) -> Imported:
        """Tasks from miniF2F-lean4 (a Lake package: MiniF2F.lean imports MiniF2F/Test.lean and
        Valid.lean, which only import one module per problem, MiniF2F/Test/<name>.lean) or PutnamBench
        (lean4/src/putnam_*.lean, one theorem per file, informal statement in informal/putnam.json and
        the doc comment, answers of `_solution` abbrevs in the comment below them). Every theorem whose
        proof is `sorry` becomes a task; its gold is the statement with that `sorry` (no upstream has
        proofs), flagged reference_proof: false."""
        source = Path(source)
        if (source / "lean4" / "src").is_dir() or (source / "src").is_dir() and any((source / "src").glob("putnam_*.lean")):
            return _import_putnambench(source)
        if (source / "MiniF2F.lean").is_file() or (source / "MiniF2F").is_dir():
            return _import_minif2f(source)
        raise NotThisBenchmark(f"{source}: neither miniF2F-lean4 (MiniF2F.lean, MiniF2F/Test.lean, MiniF2F/Valid.lean) "
                               f"nor PutnamBench (lean4/src/putnam_*.lean)")


def _licence(root: Path, default: str) -> str:
    try:
        text = (root / "LICENSE").read_text(encoding="utf-8", errors="replace")[:400]
    except OSError:
        return default
    return "MIT" if "MIT License" in text else "Apache-2.0" if "Apache License" in text else default


def _upstream_versions(root: Path) -> dict:
    """The Lean and Mathlib versions the upstream pins (lean-toolchain, the lakefile's `require mathlib`):
    the Lake project given in DSLBENCH_LEAN_PROJECT should match them."""
    out = {}
    if (root / "lean-toolchain").is_file():
        out["lean_toolchain"] = (root / "lean-toolchain").read_text(encoding="utf-8").strip()
    lakefile = root / "lakefile.lean"
    if lakefile.is_file():
        mo = re.search(r'require\s+"?mathlib"?\s+from\s+git\s+"[^"]+"\s*@\s*"([^"]+)"', lakefile.read_text(encoding="utf-8"))
        if mo:
            out["mathlib"] = mo.group(1)
    return out


def _slug(name: str) -> str:
    return "lean-up-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _minif2f_difficulty(name: str) -> str:
    # miniF2F has no difficulty field; its problem names carry the source competition
    if name.startswith("mathd_"):
        return "easy"
    return "hard" if name.startswith("imo") else "medium"


def _putnam_difficulty(name: str) -> str:
    # PutnamBench has no difficulty field; the competition orders each session's six problems by
    # increasing difficulty (A1/B1 the easiest, A6/B6 the hardest)
    mo = re.search(r"_[ab](\d)$", name)
    n = int(mo.group(1)) if mo else 6
    return "easy" if n <= 2 else "medium" if n <= 4 else "hard"


def _minif2f_area(name: str) -> str:
    for key, area in (("numbertheory", "number theory"), ("algebra", "algebra"), ("induction", "induction")):
        if key in name:
            return area
    return "competition"


def _task(dsl: str, th: dict, preamble: str, imports: list[str], bench: str, upstream_id: str, licence: str,
          split: str, difficulty: str, informal: str, constructs: list[str], extra_prov: dict) -> dict | Skip:
    """One imported task: instruction, gold (statement + sorry), oracle, and the statement mutants."""
    name, statement = th["name"], th["statement"]
    theorem = lambda stmt: f"theorem {name} {stmt} := by\n  sorry\n"
    head = preamble.strip() + "\n\n" if preamble.strip() else ""
    gold = head + theorem(statement)
    with_lib = f" with {', '.join(imports)}" if imports else ""
    instruction = (f"{informal}\n\nProve it in Lean 4{with_lib}. "
                   + (f"Start the file with\n\n{preamble.strip()}\n\nunchanged, then state exactly" if preamble.strip()
                      else "State exactly")
                   + f"\n\ntheorem {name} {statement}\n\nwith a complete proof (no sorry).")
    mutants = [{"level": "semantic", "program": head + theorem(stmt), "note": f"statement mutant: {note}"}
               for stmt, note in lc.statement_mutants(statement)]
    for a, b in _solution_spans(preamble):
        wrong = lc.change_constant(preamble[a:b]) or (lc.flip_first(preamble[a:b], lc.RELATION_FLIPS + lc.OPERATOR_FLIPS) or [None])[0]
        if wrong:
            mutants.append({"level": "semantic", "program": (preamble[:a] + wrong + preamble[b:]).strip() + "\n\n" + theorem(statement),
                            "note": "answer mutant: the _solution abbrev's answer changed"})
            break
    return {
        "id": _slug(name), "dsl": dsl, "domain": "Theorem Proving", "title": f"{bench} {name}",
        "difficulty": difficulty, "constructs": constructs, "failure_modes": ["knowledge"],
        "instruction": instruction, "context": {}, "gold": gold,
        "oracle": {"theorem": name, "statement": statement, "imports": imports, "preamble": preamble.strip(),
                   "reference_proof": False},
        "provenance": {"source": "upstream", "benchmark": bench, "upstream_id": upstream_id, "licence": licence,
                       **extra_prov},
        "split": split, "mutants": mutants}


def _solution_spans(preamble: str) -> list[tuple[int, int]]:
    """Spans of the bodies of `abbrev ..._solution ... := BODY` (one line) in a filled preamble."""
    return [(mo.start(1), mo.end(1)) for mo in
            re.finditer(r"(?m)^(?:noncomputable\s+)?abbrev\s+[\w.']*_solution\b[^\n]*?:=\s*([^\n]*\S)", preamble)]


def _theorem_tasks(dsl: str, text: str, rel: str, make) -> list:
    """Tasks (or Skips) for the theorems of one upstream file; `make(th, preamble)` builds one task."""
    found = lc.upstream_theorems(text)
    if not found:
        return [Skip(rel, "no_theorem", "the file declares no theorem (and is not an imports-only module)")]
    out = []
    for th in found:
        record = f"{rel}:{th['name']}"
        if "error" in th:
            out.append(Skip(record, "malformed_statement", th["error"]))
        elif not th["sorry"]:
            out.append(Skip(record, "not_a_problem", "the theorem has a proof (a solved lemma, not a problem)"))
        else:
            # one problem per file: everything before it (imports, opens, its definitions); many per
            # file (older layouts): the header lines only
            preamble = text[:th["start"]] if len(found) == 1 else lc.header(text)
            out.append(make(th, lc.strip_comments(preamble) if len(found) > 1 else preamble))
    return out


def _import_minif2f(source: Path) -> Imported:
    """Follow miniF2F-lean4's import graph from its root modules; split from the module path."""
    package = "MiniF2F"
    roots = [f"{package}"] if (source / f"{package}.lean").is_file() else \
        [f"{package}.{s}" for s in ("Test", "Valid") if (source / package / f"{s}.lean").is_file()]
    if not roots:
        raise NotThisBenchmark(f"{source}: miniF2F-lean4 layout expected (MiniF2F.lean or MiniF2F/Test.lean, "
                               f"MiniF2F/Valid.lean), found neither")
    licence, versions = _licence(source, "MIT"), _upstream_versions(source)
    split_of = lambda module, inherited: ("test" if "Test" in module.split(".") else
                                          "dev" if "Valid" in module.split(".") else inherited)
    records, seen, queue = [], set(), [(m, None) for m in roots]
    while queue:  # breadth first over the package's own modules
        module, split = queue.pop(0)
        if module in seen:
            continue
        seen.add(module)
        path = source / (module.replace(".", "/") + ".lean")
        split = split_of(module, split)
        records.append((path.relative_to(source).as_posix(), (path, split)))
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            queue += [(m, split) for m in lc.imports(text) if m.split(".")[0] == package]
    reached = {r for r, _ in records}
    for path in sorted((source / package).rglob("*.lean")):
        rel = path.relative_to(source).as_posix()
        if rel not in reached:
            records.append((rel, (path, None)))

    def convert(rel, record):
        path, split = record
        if rel not in reached:
            return Skip(rel, "not_in_import_graph", "no module of the package imports this file")
        if not path.is_file():
            return Skip(rel, "missing_module", "imported by the package, but the file is not in the source")
        text = path.read_text(encoding="utf-8")
        if lc.only_imports(text):
            return []  # an index module (Test.lean, Valid.lean): its problems are the modules it imports
        if split is None:
            return Skip(rel, "unknown_split", "the module is under neither MiniF2F.Test nor MiniF2F.Valid")
        imports = [m for m in lc.imports(text) if m.split(".")[0] != package]
        return _theorem_tasks("lean", text, rel, lambda th, pre: _task(
            "lean", th, pre, imports, "miniF2F-lean4", f"{rel}:{th['name']}", licence, split,
            _minif2f_difficulty(th["name"]),
            f"Prove the miniF2F problem {th['name']} ({_minif2f_area(th['name'])}), formally stated below.",
            ["theorem", "tactic proof", "Mathlib", _minif2f_area(th["name"])], versions))
    return convert_each(records, convert, progress=True, total=len(records))


def _import_putnambench(source: Path) -> Imported:
    """PutnamBench from the repository root (or its lean4/ folder): one record per lean4/src file,
    and one per informal problem that has no Lean file."""
    lean_root = source / "lean4" if (source / "lean4" / "src").is_dir() else source
    files = sorted((lean_root / "src").glob("putnam_*.lean"))
    if not files:
        raise NotThisBenchmark(f"{source}: PutnamBench layout expected (lean4/src/putnam_*.lean), found no such file")
    informal_path = next((p for p in (lean_root.parent / "informal" / "putnam.json", source / "informal" / "putnam.json")
                          if p.is_file()), None)
    informal = {}
    if informal_path:
        import json
        entries = json.loads(informal_path.read_text(encoding="utf-8"))
        informal = {e["problem_name"]: e for e in entries if isinstance(e, dict) and "problem_name" in e}
    licence, versions = _licence(lean_root, "Apache-2.0"), _upstream_versions(lean_root)
    stems = {f.stem for f in files}
    records = [(f"lean4/src/{f.name}", f) for f in files]
    records += [(f"informal/putnam.json:{name}", None) for name in sorted(set(informal) - stems)]

    def convert(rel, path):
        if path is None:
            return Skip(rel, "no_formal_statement", "an informal problem without a Lean file in lean4/src")
        text = path.read_text(encoding="utf-8")

        def make(th, preamble):
            filled, missing = lc.fill_solutions(preamble)
            if missing:
                return Skip(f"{rel}:{th['name']}", "no_solution_answer",
                            f"abbrev {missing[0]} := sorry has no `-- answer` comment below it")
            entry = informal.get(th["name"], {})
            text_informal = (entry.get("informal_statement") or th["doc"] or
                             f"Prove the PutnamBench problem {th['name']}.").strip()
            tags = [t.replace("_", " ") for t in entry.get("tags", []) if isinstance(t, str)]
            return _task("lean", th, filled, lc.imports(text), "PutnamBench", f"{rel}:{th['name']}", licence,
                         "test", _putnam_difficulty(th["name"]), text_informal, ["theorem", "tactic proof", "Mathlib", *tags], versions)
        return _theorem_tasks("lean", text, rel, make)
    return convert_each(records, convert, progress=True, total=len(records))
