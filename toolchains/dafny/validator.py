"""Dafny: syntax = the program parses and resolves (type-checks) without verification;
semantic = the candidate verifies against the task's fixed specification, together with the task's
test method (concrete calls + assertions), with cheating constructs forbidden.

The oracle of a task:
  signatures: [text, ...]   declarations (header + requires/ensures/modifies/reads clauses) that
                            the candidate must contain unchanged (compared token by token, so
                            layout and comments do not matter), each directly followed by its body
                            (only extra `decreases` clauses may come in between); an entry ending
                            in `}` is a whole fixed definition (a specification function given by
                            the task) that must appear verbatim
  test: text                one or more methods calling the candidate with concrete inputs and
                            asserting the results; verified in the same run as the candidate
  resource_limit: 5000000   optional z3 resource limit per procedure (Dafny 2.3 /rlimit): verdicts do
                            not depend on machine load
  time_limit_s: 120         optional per-procedure time limit (Dafny /timeLimit), a safety net
  spec_only: true           optional: the test only calls the members (an upstream test that prints its
                            results for a human): it need not assert; the specification is the oracle
  run_main: true            optional: once verified, the program and test are also compiled and run
                            (the test's Main); a line starting with the test's failure marker
                            (DSLBENCH_EXPECT_FAILED, what an imported `expect` becomes) fails it

Judges: Dafny 4 (`dafny resolve` / `dafny verify`) when a Dafny 4 binary is on PATH, otherwise
Debian's Dafny 2.3 (mono + z3 4.8.12; legacy CLI `/noVerify`, `/compile:0`). The tasks are written in
the Dafny 2.3 dialect (`function method`, no `for` loops, no `expect`); Dafny 4 runs with
`--function-syntax:3 --quantifier-syntax:3` so those golds keep their meaning, and it is recorded as
an inexact judge (it accepts the Dafny 4 syntax the tasks' version mutants use).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from dslbench import settings
from dslbench.toolchains import Probe, Toolchain, tool_version

TEST_FILE = "dslbench_test.dfy"
DEFAULT_TIME_LIMIT = 120          # seconds per procedure: a safety net only
DEFAULT_RLIMIT = 5_000_000        # z3 resource limit per procedure (deterministic, unlike time)
EXPECT_MARKER = "DSLBENCH_EXPECT_FAILED"   # printed by a run-time check of the task's test (run_main)
DECL_KEYWORDS = ("method", "lemma", "function", "predicate", "constructor", "datatype")

# Tokens: comments and string/char literals are removed first; identifiers may contain ' ? _.
_TOKEN = re.compile(r"""
    (?P<id>[A-Za-z_][A-Za-z0-9_'?]*)
  | (?P<num>0x[0-9A-Fa-f_]+|\d[\d_]*(?:\.\d+)?)
  | (?P<op><==>|==>|<==|:=|:\||::|==|!=|<=|>=|&&|\|\||\.\.|!!|[^\sA-Za-z0-9_])
""", re.VERBOSE)
_STRIP = re.compile(r"""//[^\n]*|/\*.*?\*/|@"(?:[^"]|"")*"|"(?:\\.|[^"\\\n])*"|(?<![A-Za-z0-9_'?])'(?:\\.|[^'\\\n])'""",
                    re.DOTALL)
# Constructs that let a program "verify" without a proof (checked on the candidate's tokens).
FORBIDDEN_WORDS = {"assume": "`assume` statements are not allowed",
                   "expect": "`expect` statements (assumed by the verifier) are not allowed",
                   "include": "`include` directives are not allowed"}
FORBIDDEN_ATTRIBUTES = ("axiom", "verify", "extern", "imported", "termination", "assume")
ERROR_LINE = re.compile(r"^\S+\(\d+,\d+\): Error\b.*$|^.*\berror\b.*$|^.*timed out.*$", re.MULTILINE | re.IGNORECASE)
BODY_REQUIRED = re.compile(r"must have a body")  # /noCheating:1 on bodyless declarations: a semantic failure
NOISE = re.compile(r"^(Prover error:|Legal parameters are:|  \S+ \(.*\)( \(default: .*\))?$)")


def strip_comments(text: str) -> str:
    """Text with comments and string/char literals blanked (nested /* */ is rare: handled greedily)."""
    return _STRIP.sub(" ", text)


def tokens(text: str) -> list[str]:
    return [m.group(0) for m in _TOKEN.finditer(strip_comments(text))]


def find_sequence(hay: list[str], needle: list[str]) -> int:
    """Index in `hay` where the token sequence `needle` starts, or -1."""
    n = len(needle)
    for i in range(len(hay) - n + 1):
        if hay[i] == needle[0] and hay[i:i + n] == needle:
            return i
    return -1


def cheats(program: str) -> list[str]:
    """Reasons the program could verify without proving its specification (empty when none)."""
    toks = tokens(program)
    found = []
    for i, t in enumerate(toks):
        if t in FORBIDDEN_WORDS and (i == 0 or toks[i - 1] != "."):
            found.append(FORBIDDEN_WORDS[t])
        elif t == "{" and i + 2 < len(toks) and toks[i + 1] == ":" and toks[i + 2] in FORBIDDEN_ATTRIBUTES:
            found.append(f"attribute {{:{toks[i + 2]}}} is not allowed")
        elif t == "decreases" and i + 1 < len(toks) and toks[i + 1] == "*":
            found.append("`decreases *` (possibly non-terminating code proves anything) is not allowed")
    return list(dict.fromkeys(found))


CLAUSE_KEYWORDS = ("requires", "ensures", "modifies", "reads", "decreases")


def _clauses(need: list[str]) -> tuple[list[str], list[list[str]]]:
    """A signature's header tokens and its specification clauses (each from its keyword on)."""
    starts = [k for k, t in enumerate(need) if t in CLAUSE_KEYWORDS and (k == 0 or need[k - 1] != ".")]
    if not starts:
        return need, []
    bounds = starts + [len(need)]
    return need[:starts[0]], [need[a:b] for a, b in zip(bounds, bounds[1:])]


def find_declaration(toks: list[str], need: list[str]) -> tuple[int, int]:
    """(start, end) in `toks` of the signature `need` with its clauses in any order, or (-1, -1).

    The specification is the conjunction of its clauses, so their order does not change it; every
    clause must still be there exactly once and unchanged (a clause that merely starts like one of
    the signature's, e.g. `ensures y >= 0 && y < 5` for `ensures y >= 0`, does not match)."""
    i = find_sequence(toks, need)
    if i >= 0:
        return i, i + len(need)
    header, clauses = _clauses(need)
    if len(clauses) < 2:
        return -1, -1
    stops = set(CLAUSE_KEYWORDS) | {"{"}
    start = 0
    while True:
        i = find_sequence(toks[start:], header)
        if i < 0:
            return -1, -1
        i += start
        j, left = i + len(header), list(clauses)
        while left:
            hit = next((c for c in left if toks[j:j + len(c)] == c
                        and (j + len(c) >= len(toks) or toks[j + len(c)] in stops)), None)
            if hit is None:
                break
            left.remove(hit)
            j += len(hit)
        if not left:
            return i, j
        start = i + 1


def missing_signatures(program: str, signatures: list[str]) -> list[str]:
    """Signatures (first line shown) the program lacks unchanged or weakens with extra clauses."""
    toks = tokens(program)
    bad = []
    for sig in signatures:
        need = tokens(sig)
        head = sig.strip().splitlines()[0].strip()
        if need[-1] == "}" or need[0] == "datatype":
            i = find_sequence(toks, need)
            end = i + len(need)
        else:
            i, end = find_declaration(toks, need)
        if i < 0:
            bad.append(f"the declaration `{head}` with its specification is missing or changed")
            continue
        if need[-1] == "}":  # a fixed definition (spec function with its body): present is enough
            continue
        nxt = toks[end] if end < len(toks) else ""
        if need[0] == "datatype":
            if nxt in ("|", "(", "{", "."):
                bad.append(f"the declaration `{head}` is extended with other constructors or members")
        elif nxt in ("", "}", *DECL_KEYWORDS, "function", "class", "ghost", "static"):
            bad.append(f"the declaration `{head}` has no body")
        elif nxt not in ("{", "decreases"):
            bad.append(f"the declaration `{head}` has extra clauses after its specification (`{nxt}`)")
    return bad


def first_error(output: str) -> str:
    lines = [l for l in output.splitlines() if l.strip() and not NOISE.match(l)]
    for l in lines:
        # Dafny names a failed `include` without a file position: the program's include, its error
        if (re.match(r"^\S+\(\d+,\d+\): Error", l) or re.match(r'^Include of file ".*" failed', l)
                or re.search(r"\btimed out\b|\bout of resource\b", l, re.I)):
            return l.strip()[:300]
    for l in lines:
        if ERROR_LINE.match(l) and "0 errors" not in l:
            return l.strip()[:300]
    return ""


def hidden_test_line(error: str, test: str) -> str:
    """The line of the task's hidden test an error points at (what the oracle asserts there), or ''."""
    m = re.match(rf"^{re.escape(TEST_FILE)}\((\d+),\d+\)", error)
    lines = test.splitlines()
    if not m or not 1 <= int(m.group(1)) <= len(lines):
        return ""
    return f"the hidden test, line {m.group(1)}: {lines[int(m.group(1)) - 1].strip()}"


def _version_of(exe: str) -> str:
    """Dafny 4 answers `--version`, Dafny 2.3 `/version`."""
    pattern = r"\b(\d+\.\d+\.\d+(?:\.\d+)?)"
    return tool_version([exe, "--version"], pattern) or tool_version([exe, "/version"], pattern)


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # dafny resolves and type-checks
    SEMANTIC_FAIL = "verification_failed"  # the verifier (and the task's tests)

    def _find(self) -> tuple[str, str]:
        """(executable, version) of the preferred Dafny: a Dafny 4+ anywhere on PATH, else 2.3."""
        seen, found = set(), []
        for d in os.environ.get("PATH", "").split(":"):
            exe = Path(d or ".") / "dafny"
            if exe.is_file() and str(exe.resolve()) not in seen:
                seen.add(str(exe.resolve()))
                version = _version_of(str(exe))
                if version:
                    found.append((str(exe), version))
        modern = [f for f in found if int(f[1].split(".")[0]) >= 4]
        return (modern or found or [("", "")])[0]

    def probe(self) -> Probe:
        if not shutil.which("dafny"):
            return self.unavailable("dafny not on PATH (Debian package dafny, or Dafny 4 from its release)")
        exe, version = self._find()
        if not exe:
            return self.unavailable("dafny found but it reports no version")
        self._exe, self._major = exe, int(version.split(".")[0])
        if self._major >= 4:
            return self.available(f"Dafny {version}", toolchain=f"Dafny {version} CLI (dafny resolve / dafny verify)",
                                  dialect="Dafny 4 with --function-syntax:3 --quantifier-syntax:3 (tasks are Dafny 2.3)",
                                  exact=False, stand_in_for="")
        if not shutil.which("z3") and not Path("/usr/lib/dafny/z3").exists():
            return self.unavailable("z3 not found (Debian package z3)", version=version)
        return self.available(f"Dafny {version}")

    def _ensure(self):
        if not hasattr(self, "_exe"):
            self.probe()

    # --- oracle ---------------------------------------------------------------------------------
    def oracle_rules(self, task):
        o, problems = task.oracle, []
        for i, sig in enumerate(o["signatures"]):
            toks = tokens(sig)
            words = [t for t in toks[:4] if t not in ("ghost", "static")]
            if not words or words[0] not in DECL_KEYWORDS:
                problems.append((f"signatures[{i}]", f"must start with one of {', '.join(DECL_KEYWORDS)}"))
            if toks and toks[-1] == "{":
                problems.append((f"signatures[{i}]", "give the header and clauses only, or a whole definition"))
            if find_sequence(tokens(task.gold), toks) < 0:
                problems.append((f"signatures[{i}]", "the gold does not contain this declaration unchanged"))
        test, ttoks = o["test"], tokens(o["test"])
        checks = "assert" in ttoks or (o.get("run_main") is True and EXPECT_MARKER in test) or o.get("spec_only") is True
        if "method" not in ttoks or not checks:
            problems.append(("test", "the test must declare a method that asserts results"))
        if o.get("run_main") is True and not re.search(r"\bmethod\s+Main\b", strip_comments(test)):
            problems.append(("run_main", "a test that is run needs a `method Main`"))
        if cheats(test):
            problems.append(("test", cheats(test)[0]))
        if cheats(task.gold):
            problems.append(("signatures", f"the gold itself uses a forbidden construct: {cheats(task.gold)[0]}"))
        return problems

    # --- levels ---------------------------------------------------------------------------------
    def _cmd(self, level: str, files: list[str], time_limit: int, rlimit: int = DEFAULT_RLIMIT,
             run: bool = False) -> list[str]:
        self._ensure()
        if self._major >= 4:
            compat = ["--function-syntax:3", "--quantifier-syntax:3", "--use-basename-for-filename"]
            if level == "syntax":
                return [self._exe, "resolve", *compat, *files]
            if run:   # verifies, then runs Main (extra files as --input)
                return [self._exe, "run", *compat, f"--verification-time-limit:{time_limit}", "--cores:1", files[0],
                        *[a for f in files[1:] for a in ("--input", f)]]
            return [self._exe, "verify", *compat, f"--verification-time-limit:{time_limit}", "--cores:1", *files]
        if level == "syntax":
            return ["dafny", "/compile:0", "/noVerify", "/nologo", *files]
        # /compile:3 verifies, and only when everything verifies compiles and runs Main
        return ["dafny", "/compile:3" if run else "/compile:0", "/nologo", "/noCheating:1", f"/rlimit:{rlimit}", f"/timeLimit:{time_limit}",
                "/vcsCores:1", *files]

    def _joint_run(self, task, work: Path):
        """One Dafny run over the candidate and the task's test: resolve and verify together.

        Parse/resolution errors located in the candidate decide the syntax level; the rest of the
        same run decides the semantic level (saves a second mono + Boogie start per program).
        """
        (work / TEST_FILE).write_text(task.oracle["test"], encoding="utf-8")
        limit = int(task.oracle.get("time_limit_s", DEFAULT_TIME_LIMIT))
        rlimit = int(task.oracle.get("resource_limit", DEFAULT_RLIMIT))
        run = task.oracle.get("run_main") is True
        return self.run(self._cmd("semantic", [self.file_name, TEST_FILE], limit, rlimit, run), work)

    def _candidate_errors(self, output: str) -> list[str]:
        """Parse/resolution errors located in the candidate (the run stopped before verification)."""
        if not re.search(r"(parse|resolution/type) errors detected", output):
            return []
        prefix = re.compile(rf"^{re.escape(self.file_name)}\(\d+,\d+\): Error")
        return [l.strip()[:300] for l in output.splitlines() if prefix.match(l.strip())]

    def _resolve_alone(self, work: Path):
        return self.run(self._cmd("syntax", [self.file_name], 0), work)

    def levels(self, program, task, work):
        """With Dafny 2.3 one run resolves and verifies the candidate with the task's test: its
        resolution decides the syntax level and the same run the semantic one (one mono + Boogie
        start per program instead of two)."""
        syn, joint = self._syntax(program, task, work)   # a crash here is judge()'s harness_error
        if syn.status != "pass":
            return syn, None
        return syn, self._guarded(self.semantic, program, task, work, joint)

    def syntax(self, program, task, work):
        return self._syntax(program, task, work)[0]

    def _syntax(self, program, task, work):
        """(syntax verdict, the Dafny 2.3 joint run the semantic level can reuse, or None)."""
        self._ensure()
        if self._major >= 4:
            result = self._resolve_alone(work)
        else:
            result = self._joint_run(task, work)
            out = result.stdout + "\n" + result.stderr
            errors = self._candidate_errors(out)
            clash = any("uplicate" in e for e in errors)   # a name clash with the task's test
            only_bodies = errors and all(BODY_REQUIRED.search(e) for e in errors)
            inconclusive = not errors and result.returncode not in (0, 4)   # the test's errors, a crash
            if result.timed_out or clash or only_bodies or inconclusive:
                # Judge the program alone with the plain resolver: a time-out is in verification, a
                # clash involves the test, and /noCheating:1 stops at bodyless declarations.
                alone = self._resolve_alone(work)
                if alone.returncode == 0 and not alone.timed_out:
                    return self.verdict("pass", "parses and resolves", alone), result
                result = alone
            elif errors:
                return self.verdict("fail", errors[0], result), None
            elif result.returncode in (0, 4):
                return self.verdict("pass", "parses and resolves (resolver of the verification run)", result), result
        return self._resolution_verdict(result), None

    def _resolution_verdict(self, result):
        if result.timed_out:
            return self.verdict("fail", "dafny timed out while resolving", result)
        if result.returncode != 0:
            out = result.stdout + "\n" + result.stderr
            why = first_error(out)
            if not why:   # no Dafny error message: mono or Dafny itself failed, not the program
                return self.verdict("error", f"dafny exit {result.returncode} without an error message "
                                    f"(toolchain crash?): {out.strip()[-200:]}", result, reason="toolchain_crash")
            return self.verdict("fail", why, result)
        return self.verdict("pass", "parses and resolves", result)

    def semantic(self, program, task, work, shared=None):
        """`shared`: the joint Dafny 2.3 run of the syntax level (levels()), else verified here."""
        problems = cheats(program) + missing_signatures(program, task.oracle["signatures"])
        if problems:
            return self.verdict("fail", problems[0], duration_s=0.0)
        self._ensure()
        result = shared or self._joint_run(task, work)
        duration = 0.0 if shared else None
        if result.timed_out:
            return self.verdict("fail", "verification timed out (sandbox wall-clock limit)", result, duration)
        out = result.stdout + "\n" + result.stderr
        run = task.oracle.get("run_main") is True
        m = re.search(r"finished with (\d+) verified, (\d+) errors?", out)
        verified = bool(m and m.group(2) == "0" and int(m.group(1)) > 0)
        if run and verified and ("Running..." in out or self._major >= 4):   # Dafny 4 prints no "Running..."
            return self._run_verdict(task, result, out, duration, m.group(1))
        if result.returncode != 0 and not first_error(out):
            return self.verdict("error", f"dafny exit {result.returncode} without an error message (toolchain "
                                f"crash?): {out.strip()[-200:]}", result, duration, reason="toolchain_crash")
        if result.returncode != 0:
            why = first_error(out) or f"dafny exit {result.returncode}"
            expected = hidden_test_line(why, task.oracle["test"])   # the test is hidden: its text is the oracle's
            if TEST_FILE in why:
                why = "test method: " + why
            return self.verdict("fail", why, result, duration, expected=expected)
        if not verified:
            why = first_error(out)
            return self.verdict("fail", why or "the verifier reported no verified declarations",
                                result, duration, expected=hidden_test_line(why, task.oracle["test"]))
        if run:   # verified, yet Dafny did not reach the run: its compiler failed (ours, not the program's)
            return self.verdict("error", "verified, but the compiled test was not run: "
                                + (first_error(out) or out.strip()[-200:]), result, duration, reason="harness_error")
        return self.verdict("pass", f"verifies with the task's specification and test ({m.group(1)} verified)",
                            result, duration)

    def _run_verdict(self, task, result, out: str, duration, verified: str):
        """The verdict of a verified program whose test was also run (oracle run_main)."""
        ran = out.split("Running...", 1)[1] if "Running..." in out else re.split(r"finished with .*\n", out, 1)[-1]
        failed = re.search(rf"{EXPECT_MARKER} check (\d+)", ran)
        if failed:
            n = int(failed.group(1))
            line = next((l.strip() for l in task.oracle["test"].splitlines() if f"{EXPECT_MARKER} check {n}\\n" in l), "")
            return self.verdict("fail", f"test method: run-time check {n} of the hidden test failed", result, duration,
                                reason="wrong_output", expected=f"the hidden test, check {n}: {line}")
        if result.returncode != 0:
            tail = [l for l in ran.splitlines() if l.strip()][-3:]
            return self.verdict("fail", "the test run failed: " + " | ".join(tail)[:300], result, duration,
                                reason="runtime_error")
        return self.verdict("pass", f"verifies with the task's specification and test ({verified} verified) "
                            "and the test runs without a failed check", result, duration)

    # --- upstream -------------------------------------------------------------------------------
    def import_upstream(self, source: Path, verify_gold: bool | None = None):
        """MBPP-DFY as published (a clone of Mondego/dafny-synthesis or its MBPP-DFY-153 folder):
        see mbpp_dfy.py. With verify_gold (or DSLBENCH_DAFNY_VERIFY_GOLD=1), each gold is first
        verified with its harness under a wall-clock limit and skipped as gold_timeout / gold_fails."""
        from dslbench.upstream import NotThisBenchmark, Skip, convert_each
        from . import mbpp_dfy as module
        import sys
        vmod = sys.modules[type(self).__module__]
        folder, json_path = module.find_root(Path(source))
        if not (folder / "src").is_dir() or not any((folder / "src").glob("task_id_*.dfy")):
            raise NotThisBenchmark(f"{source}: not MBPP-DFY (no {module.FOLDER}/src/task_id_<id>.dfy; give a clone "
                                   "of Mondego/dafny-synthesis or its MBPP-DFY-153 folder)")
        if json_path is None:
            raise NotThisBenchmark(f"{source}: MBPP-DFY's descriptions ({module.JSON_NAME} in MBPP-san-DFY-228/) "
                                   "are not beside MBPP-DFY-153: give the whole clone")
        recs = module.records(folder, json_path)
        made = convert_each(recs, lambda tid, rec: module.convert(tid, rec, folder, vmod, Skip),
                            progress=True, total=len(recs))
        if verify_gold is None:
            verify_gold = settings.get("DSLBENCH_DAFNY_VERIFY_GOLD") == "1"
        if verify_gold:
            self.mutant_tally = [0, 0]   # (killed, generated) mutants of the verified golds
            made = self._verify_golds(made, Skip, mutants=lambda t: module.mutant_candidates(t["gold"], t, vmod._STRIP))
        return made

    def _verify_golds(self, made, Skip, wall_s: int | None = None, mutants=None):
        """Keep the tasks whose gold verifies (and runs) with its harness within the time limit; a
        hang cannot block the import (wall-clock timeout, niced Dafny, two at a time)."""
        from concurrent.futures import ThreadPoolExecutor
        import tempfile
        from dslbench.upstream import Imported
        wall = wall_s or float(settings.get("DSLBENCH_DAFNY_GOLD_WALL_S"))
        self._ensure()

        def joint(task, program, seconds):
            """(output, exit code) of the niced joint run of `program` with the task's harness; (None, None)
            when it did not finish within `seconds`."""
            with tempfile.TemporaryDirectory(prefix="dafny-gold-") as d:
                (Path(d) / self.file_name).write_text(program, encoding="utf-8")
                (Path(d) / TEST_FILE).write_text(task["oracle"]["test"], encoding="utf-8")
                cmd = ["nice", "-n", "10", *self._cmd("semantic", [self.file_name, TEST_FILE],
                                                      DEFAULT_TIME_LIMIT, DEFAULT_RLIMIT,
                                                      task["oracle"].get("run_main") is True)]
                proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
                try:
                    return proc.communicate(timeout=seconds)[0], proc.returncode
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)   # mono, Boogie and z3 with it: a hang cannot block the import
                    proc.communicate()
                    return None, None

        def killed(task, program) -> bool:
            """A real semantic kill: resolves, then fails verification or a run-time check."""
            out, _ = joint(task, program, min(wall, 120))
            if out is None or re.search(r"(parse|resolution/type) errors detected|timed out|out of resource", out):
                return False
            m = re.search(r"finished with (\d+) verified, (\d+) errors?", out)
            return bool(m and m.group(2) != "0") or EXPECT_MARKER in out

        def check(task):
            out, code = joint(task, task["gold"], wall)
            if out is None:
                return Skip(task["provenance"]["upstream_id"], "gold_timeout",
                            f"the gold did not verify within {wall:g} s")
            m = re.search(r"finished with (\d+) verified, (\d+) errors?", out)
            if code != 0 or not m or m.group(2) != "0" or EXPECT_MARKER in out:
                why = first_error(out) or (f"{EXPECT_MARKER} (a run-time check failed)" if EXPECT_MARKER in out
                                           else f"dafny exit {code}")
                reason = "gold_timeout" if re.search(r"timed out|out of resource", why, re.I) else "gold_fails"
                return Skip(task["provenance"]["upstream_id"], reason, why)
            if mutants is not None:
                tried = mutants(task)
                kept = [m for m in tried if killed(task, m["program"])]
                self.mutant_tally[0] += len(kept)
                self.mutant_tally[1] += len(tried)
                task = {**task, "mutants": kept}
            return task

        with ThreadPoolExecutor(max_workers=int(settings.get("DSLBENCH_DAFNY_GOLD_JOBS"))) as pool:
            results = list(pool.map(check, made.tasks))
        out = Imported([r for r in results if isinstance(r, dict)], list(made.skipped))
        out.skipped += [r for r in results if not isinstance(r, dict)]
        if mutants is not None:
            import sys
            print(f"dafny: {self.mutant_tally[0]}/{self.mutant_tally[1]} generated semantic mutants of the verified "
                  "golds are killed (kept as the tasks' mutants)", file=sys.stderr)
        return out
