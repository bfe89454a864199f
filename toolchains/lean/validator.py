"""Lean 4: syntax = `lean` elaborates the file; semantic = the task's theorem is proved with its exact
statement, without sorry/admit/new axioms (screening + `#print axioms` on the real toolchain).

Oracle:
  theorem: name of the theorem the candidate must prove (top level, not in a namespace)
  statement: its binders and type exactly as given to the model (whitespace-insensitive)
  imports: [module...]   optional; [] for core-only tasks (the benchmark's own tasks); upstream
                         tasks list Mathlib, which needs a Lake project (DSLBENCH_LEAN_PROJECT)
  reference_proof: true | false   optional (default true); false marks imported tasks whose gold is
                         the upstream statement with a `sorry` placeholder (not self-checkable)
"""
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain

HERE = Path(__file__).parent


def _load_leancheck():
    spec = importlib.util.spec_from_file_location("dslbench_lean_leancheck", HERE / "leancheck.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


lc = _load_leancheck()
NAME_RE = re.compile(r"[A-Za-z_][\w']*(\.[A-Za-z_][\w']*)*")


def _project() -> Path | None:
    """A Lake project (with Mathlib) to elaborate upstream tasks in, when one is configured."""
    p = os.environ.get("DSLBENCH_LEAN_PROJECT")
    return Path(p) if p and (Path(p) / "lakefile.lean").exists() or p and (Path(p) / "lakefile.toml").exists() else None


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # Lean elaborates
    SEMANTIC_FAIL = "verification_failed"  # proof checking

    def probe(self) -> Probe:
        lean = shutil.which("lean")
        if not lean:
            why = ("lean not on PATH" + (" (lake is, but lean is not)" if shutil.which("lake") else "") +
                   ": no Lean 4 toolchain is installable here from Debian, PyPI or npm (elan downloads "
                   "toolchains at install time); install one with elan to judge Lean tasks")
            return Probe(self.dsl, self.card["toolchain"], "", False, why)
        out = subprocess.run([lean, "--version"], capture_output=True, text=True, timeout=60)
        mo = re.search(r"version\s+(\d+\.\d+\.\d+[\w.+-]*)", out.stdout)
        if out.returncode != 0 or not mo:
            return Probe(self.dsl, self.card["toolchain"], "", False,
                         f"`lean --version` did not report a Lean 4 version: {(out.stdout + out.stderr).strip()[:200]}")
        if not mo.group(1).startswith("4."):
            return Probe(self.dsl, self.card["toolchain"], mo.group(1), False,
                         f"lean on PATH is version {mo.group(1)}, not Lean 4")
        # The sandbox has its own PATH and HOME (an elan proxy in ~/.elan would not resolve there):
        # run the toolchain's real binary, found through `lean --print-prefix`.
        pre = subprocess.run([lean, "--print-prefix"], capture_output=True, text=True, timeout=60).stdout.strip()
        real = Path(pre) / "bin" / "lean" if pre and not pre.startswith("Lean") else None
        self.lean_bin = str(real) if real and real.is_file() else os.path.realpath(lean)
        return Probe(self.dsl, self.card["toolchain"], f"Lean {mo.group(1)}", True, dialect=self.card["dialect"])

    def check_oracle(self, task):
        o, problems = task.oracle, []
        unknown = set(o) - {"theorem", "statement", "imports", "reference_proof"}
        if unknown:
            problems.append((sorted(unknown)[0], "unknown oracle key (allowed: theorem, statement, imports, reference_proof)"))
        name = o.get("theorem")
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            problems.append(("theorem", "the name of the theorem to prove is required"))
        stmt = o.get("statement")
        if not isinstance(stmt, str) or ":" not in stmt:
            problems.append(("statement", "the theorem's binders and type (`(n : Nat) : n + 0 = n`) are required"))
        imports = o.get("imports", [])
        if not isinstance(imports, list) or not all(isinstance(i, str) and NAME_RE.fullmatch(i) for i in imports):
            problems.append(("imports", "expected a list of module names"))
        if "reference_proof" in o and not isinstance(o["reference_proof"], bool):
            problems.append(("reference_proof", "expected true or false"))
        if not problems:
            if o.get("reference_proof", True):
                got = lc.theorem_statement(task.gold, name)
                if got is None:
                    problems.append(("theorem", f"the gold does not declare theorem {name}"))
                elif got != lc.normalize(stmt):
                    problems.append(("statement", f"differs from the gold's statement {got!r}"))
                bad = lc.screen(task.gold)
                if bad:
                    problems.append(("theorem", f"the gold proof is not acceptable: {bad[0]}"))
            if name not in task.instruction:
                problems.append(("theorem", "the instruction must name the theorem"))
        return problems

    # --- levels ------------------------------------------------------------------------------------
    def _lean(self, work: Path, file: str, task):
        project = _project() if task.oracle.get("imports") else None
        lean = getattr(self, "lean_bin", None) or shutil.which("lean") or "lean"
        cmd = ["lake", "-d", str(project), "env", "lean", file] if project else [lean, file]
        return self.run(cmd, work)

    def syntax(self, program, task, work):
        result = self._lean(work, self.file_name, task)
        if result.timed_out:
            return self.verdict("fail", f"lean timed out after {self.limits().timeout_s:.0f} s", result)
        if result.returncode != 0:
            err = lc.first_error(result.stdout + "\n" + result.stderr)
            return self.verdict("fail", err or f"lean exit {result.returncode}", result)
        return self.verdict("pass", "lean elaborates the file", result)

    def semantic(self, program, task, work):
        name, stmt = task.oracle["theorem"], task.oracle["statement"]
        bad = lc.screen(program)
        if bad:
            return self.verdict("fail", f"forbidden: {bad[0]}", duration_s=0.0)
        got = lc.theorem_statement(program, name)
        if got is None:
            return self.verdict("fail", f"theorem {name} is not declared at top level", duration_s=0.0)
        if got != lc.normalize(stmt):
            return self.verdict("fail", f"theorem {name} has the statement {got[:150]!r}, not the one the task states",
                                duration_s=0.0, expected=f"theorem {name} {lc.normalize(stmt)[:300]}")
        (work / "Check.lean").write_text(program.rstrip("\n") + f"\n\n#print axioms {name}\n", encoding="utf-8")
        result = self._lean(work, "Check.lean", task)
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

    # --- upstream: miniF2F-lean4 and PutnamBench .lean files -------------------------------------------
    def import_upstream(self, source: Path) -> list[dict]:
        """Tasks from upstream .lean files: miniF2F-lean4 (MiniF2F/Test.lean, Valid.lean: many
        theorems per file) or PutnamBench (lean4/src/putnam_*.lean: one theorem per file, informal
        statement in a doc comment). Every theorem whose proof is `sorry` becomes a task; the gold is
        the statement with its `sorry` (upstream has no proofs), flagged reference_proof: false."""
        source = Path(source)
        files = sorted(source.rglob("*.lean")) if source.is_dir() else [source]
        if not files:
            raise ValueError(f"{source}: no .lean files")
        tasks = []
        for f in files:
            rel = f.relative_to(source).as_posix() if source.is_dir() else f.name
            text = f.read_text(encoding="utf-8")
            bench = "PutnamBench" if "putnam" in rel.lower() else "miniF2F-lean4"
            head = lc.header(text)
            imports = re.findall(r"(?m)^\s*import\s+([\w.]+)", head)
            found = lc.upstream_theorems(text)
            if not found:
                raise ValueError(f"upstream record {rel}: no theorem declarations")
            for th in found:
                if "error" in th:
                    raise ValueError(f"upstream record {rel}:{th['name']}: {th['error']}")
                if not th["sorry"]:
                    continue  # a solved lemma, not a problem
                informal = th["doc"] or f"Prove the {bench} problem {th['name']}."
                split_hint = "dev" if re.search(r"valid", rel, re.I) else "test"
                statement = th["statement"]
                # one problem per file (PutnamBench): keep everything before it (imports, the
                # `_solution` abbrev the statement refers to); many per file (miniF2F): the header only
                preamble = (text[:th["start"]] if len(found) == 1 else head).strip()
                gold = (preamble + "\n\n" if preamble else "") + f"theorem {th['name']} {statement} := by\n  sorry\n"
                tasks.append({
                    "id": "lean-up-" + re.sub(r"[^a-z0-9]+", "-", th["name"].lower()).strip("-"),
                    "dsl": self.dsl, "domain": "Theorem Proving", "title": f"{bench} {th['name']}",
                    "difficulty": "hard" if bench == "PutnamBench" else "medium",
                    "constructs": ["theorem", "tactic proof"], "failure_modes": ["knowledge"],
                    "instruction": (f"{informal}\nProve it in Lean 4{' with ' + ', '.join(imports) if imports else ''}. "
                                    + (f"Start the file with\n\n{preamble}\n\n(replacing any `sorry` in a "
                                       f"definition by the answer) and state exactly" if preamble else "State exactly")
                                    + f"\n\ntheorem {th['name']} {statement}\n\nwith a complete proof (no sorry)."),
                    "context": {}, "gold": gold,
                    "oracle": {"theorem": th["name"], "statement": statement, "imports": imports,
                               "reference_proof": False},
                    "provenance": {"source": "upstream", "benchmark": bench, "upstream_id": f"{rel}:{th['name']}",
                                   "licence": "MIT" if bench == "PutnamBench" else "Apache-2.0"},
                    "split": split_hint, "mutants": []})
        return tasks
