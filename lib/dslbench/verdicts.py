"""The verdict record: one status taxonomy and one reason taxonomy for all 18 DSLs.

Every level (syntax, semantic) of every verdict has a `status` and a `reason`. The reason is one
code of a closed set; each code belongs to exactly one status, so the status follows from the reason
and there is one place (REASONS below) that says whose fault an outcome is:

  pass         the program met the level                                         (reason ok)
  fail         the program's fault: counted in the denominator as a failure
  error        our fault (harness, gold, provider, sandbox): excluded and reported
  unavailable  no judge here (toolchain missing, construct the judge lacks): excluded and reported

A program that times out, exhausts a resource limit or is killed by a signal is the program's fault
(`fail`), whatever the validator made of the run: `settle` applies this rule from the run's exit
status, so no validator inspects return codes or signals on its own.

`verdict_record` is the one function that writes a verdict record (schema SCHEMA_VERSION).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field

SCHEMA_VERSION = 2          # 1: records without reasons or schema field (before the taxonomy)

STATUSES = ("pass", "fail", "unavailable", "error")

# reason code -> (status it implies, what it means). Closed: a validator may return only these.
REASONS: dict[str, tuple[str, str]] = {
    "ok": ("pass", "the level passed"),
    # the program's fault
    "no_program": ("fail", "no program in the model output"),
    "parse_error": ("fail", "the parser rejected the program"),
    "compile_error": ("fail", "the compiler / resolver / type checker rejected the program"),
    "runtime_error": ("fail", "the program crashed or raised when run (incl. killed by a signal)"),
    "wrong_output": ("fail", "the program ran but its outputs differ from the expected ones"),
    "oracle_mismatch": ("fail", "a structural / intent / policy check of the task failed"),
    "verification_failed": ("fail", "the proof or verification condition does not hold"),
    "timeout": ("fail", "the program did not finish within the time limit"),
    "resource_limit": ("fail", "the program exhausted a memory, CPU, file-size or process limit"),
    "syntax_failed": ("fail", "semantic level not run: the program failed the syntax level"),
    # ours: excluded from pass rates and reported
    "toolchain_crash": ("error", "the toolchain itself crashed on the program"),
    "harness_error": ("error", "our validator, runner or oracle set-up failed"),
    "gold_broken": ("error", "the task's gold program does not pass the oracle"),
    "provider_error": ("error", "the model call failed: no program to judge"),
    "sandbox_error": ("error", "the sandbox could not start the toolchain"),
    "not_run": ("error", "semantic level not run: the syntax level was not judged"),
    # no judge here
    "toolchain_unavailable": ("unavailable", "the DSL's toolchain is not installed or not usable here"),
    "unsupported_by_judge": ("unavailable", "the stand-in judge lacks a construct the program uses"),
    "needs_network": ("unavailable", "the program reads a live service (a cloud data source) the offline judge cannot reach"),
}

PROGRAM_FAULTS = tuple(r for r, (s, _) in REASONS.items() if s == "fail")
SYNTAX_REASONS = ("parse_error", "compile_error")             # what a syntax mutant must be killed by
ORACLE_REASONS = ("wrong_output", "oracle_mismatch", "verification_failed", "runtime_error")
DEFAULT_REASON = {"pass": "ok", "unavailable": "toolchain_unavailable", "error": "harness_error"}

# Signals that mean a limit was hit (the sandbox's rlimits or its kill), not a crash of the program.
LIMIT_SIGNALS = {9: "SIGKILL", 24: "SIGXCPU", 25: "SIGXFSZ"}
# What runtimes print when the address-space limit stops an allocation (they often abort after it).
OUT_OF_MEMORY = ("MemoryError", "std::bad_alloc", "cannot allocate memory", "Cannot allocate memory", "out of memory")
# What a runtime prints when it gives up on memory and carries on or exits cleanly (Go's runtime, Godot's
# allocator): its own words, never a quote of the program, so they count even in a plain rejection.
RUNTIME_OUT_OF_MEMORY = ("fatal error: out of memory", "runtime: out of memory", "alloc_static: Condition")


def now() -> str:
    """The timestamp of every record (UTC, milliseconds)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def status_of(reason: str) -> str:
    if reason not in REASONS:
        raise ValueError(f"unknown verdict reason {reason!r}; known: {', '.join(REASONS)}")
    return REASONS[reason][0]


@dataclass
class LevelVerdict:
    """Outcome of one validation level with its reason and provenance.

    `diagnostics` says what is wrong with the program in terms of the program itself (the toolchain's
    messages, the candidate's own outputs, which check failed); values only the oracle knows go to
    `expected`. `exit_code`, `signal` and `timed_out` describe the sandboxed run the verdict came from (when
    there was one) so that `settle` can apply the program's-fault rule in one place.
    """
    status: str
    diagnostics: str = ""
    command: str = ""
    log: str = ""
    duration_s: float = 0.0
    sandbox: str = ""
    reason: str = ""
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    limit_hit: str = ""         # a limit the sandbox saw the run reach (disk quota, output size)
    # what the oracle wanted (expected outputs, the gold's values, the failed requirement's target):
    # kept out of `diagnostics` so refinement feedback shows it only in its `tests` mode
    expected: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown verdict status {self.status!r}")
        if self.reason and status_of(self.reason) != self.status:
            raise ValueError(f"reason {self.reason!r} means {status_of(self.reason)!r}, not {self.status!r}")

    def to_dict(self) -> dict:
        return asdict(self)


def settle(level: str, v: LevelVerdict, syntax_fail: str = "parse_error", semantic_fail: str = "wrong_output") -> LevelVerdict:
    """The verdict with its final status and reason: the one place the fault rules live.

    - a run that timed out, hit a limit (SIGKILL, SIGXCPU, SIGXFSZ, MemoryError) or died by another
      signal is the program's fault: `fail` with timeout / resource_limit / runtime_error, unless the
      validator already named a program-fault reason or the toolchain crashed on its own;
    - otherwise a missing reason is the DSL's default for the status and level.
    """
    if v.status in ("pass", "unavailable") or v.reason in ("toolchain_crash", "sandbox_error", "provider_error",
                                                            "gold_broken"):
        v.reason = v.reason or DEFAULT_REASON[v.status]
        return v
    if v.status == "error" and v.exit_code in (126, 127) and not v.reason:
        # 126/127: the sandbox could not execute the toolchain or runner at all (e.g. not visible inside it)
        v.reason = "sandbox_error"
        return v
    if v.status == "error" or not v.reason:
        killed = _program_fault(v)
        if killed:
            note = {"timeout": "timed out", "resource_limit": "hit a resource limit",
                    "runtime_error": "was killed by a signal"}[killed]
            if v.status == "error":
                v.diagnostics = f"the program {note}" + (f" ({v.diagnostics})" if v.diagnostics else "")
            v.status, v.reason = "fail", killed
            return v
    if not v.reason:
        v.reason = (syntax_fail if level == "syntax" else semantic_fail) if v.status == "fail" else DEFAULT_REASON[v.status]
    return v


def _program_fault(v: LevelVerdict) -> str:
    if v.timed_out:
        return "timeout"
    if v.signal in LIMIT_SIGNALS or v.limit_hit or any(m in v.log for m in RUNTIME_OUT_OF_MEMORY):
        return "resource_limit"
    # A memory message explains a crash or a failed runner; in a plain rejection it may just quote the program.
    if (v.signal or v.status == "error") and any(m in v.log for m in OUT_OF_MEMORY):
        return "resource_limit"
    if v.signal:
        return "runtime_error"
    return ""


def level(status: str, reason: str, diagnostics: str) -> LevelVerdict:
    """A verdict made by the pipeline itself (no toolchain run)."""
    return LevelVerdict(status, diagnostics, reason=reason)


def not_run(syntax: LevelVerdict) -> LevelVerdict:
    """The semantic level when the syntax level did not pass."""
    if syntax.status == "fail":
        return level("fail", "syntax_failed", "not run: the program failed the syntax level")
    return level(syntax.status, syntax.reason if syntax.status == "unavailable" else "not_run",
                 f"not run: the syntax level was {syntax.status} ({syntax.reason})")


# --- the record --------------------------------------------------------------------------------

GENERATION_FIELDS = ("dsl", "task_id", "model", "method", "sample", "domain", "difficulty", "split",
                     "messages", "raw_output", "reasoning", "finish_reason", "program", "extraction_rule",
                     "prompt_version", "generation_status")
# Fields of intervention records (refinement round, retrieved chunks, ...) carried onto their verdicts.
INTERVENTION_FIELDS = ("round", "refines", "copied_from", "retrieved", "retrieval")


@dataclass
class Judge:
    """Who judged: the toolchain, its version and dialect, and whether it is the exact judge."""
    toolchain: str
    version: str
    dialect: str
    exact: bool
    validator: str = ""        # module.function behind the verdict, e.g. toolchains/jq/validator.py
    stand_in_for: str = ""     # the paper's judge when this one stands in for it (Probe.stand_in_for)

    @classmethod
    def from_probe(cls, probe: dict, validator: str = "") -> "Judge":
        return cls(probe.get("toolchain", ""), probe.get("version", ""), probe.get("dialect", ""),
                   bool(probe.get("exact", True)), validator, probe.get("stand_in_for") or "")


@dataclass
class VerdictRecord:
    """One verdict record as stored in verdicts.jsonl (plus the generation fields it judged)."""
    generation: dict
    judge: Judge
    syntax: dict
    semantic: dict
    run: str
    revision: str
    started: str
    finished: str
    schema: int = SCHEMA_VERSION
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        g = self.generation
        return {**{k: g.get(k) for k in GENERATION_FIELDS}, **{k: g[k] for k in INTERVENTION_FIELDS if k in g},
                "schema": self.schema, "run": self.run,
                "toolchain": self.judge.toolchain, "toolchain_version": self.judge.version,
                "dialect": self.judge.dialect, "judge_exact": self.judge.exact, "validator": self.judge.validator,
                "judge_stand_in_for": self.judge.stand_in_for,
                "temperature": (g.get("params") or {}).get("temperature"),   # pass@k needs to say what it sampled at
                "syntax": self.syntax, "semantic": self.semantic,
                "sandbox": self.syntax.get("sandbox") or self.semantic.get("sandbox") or "",
                "revision": self.revision, "started": self.started, "finished": self.finished, **self.extra}


def verdict_record(generation: dict, outcome: dict, run: str, revision: str) -> dict:
    """The verdict record of one generation from `pipeline.evaluate`'s outcome. The only writer."""
    judge = Judge.from_probe(outcome["probe"], outcome.get("validator", ""))
    return VerdictRecord(generation, judge, outcome["syntax"], outcome["semantic"], run, revision,
                         outcome["started"], outcome["finished"]).to_dict()
