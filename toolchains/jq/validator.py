"""jq: syntax = libjq compiles the filter; semantic = JSON output equivalence with the gold filter."""
import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

from dslbench.toolchains import Toolchain

RUNNER = Path(__file__).with_name("run_jq.py")


def canonical(value) -> str:
    """One spelling per JSON value: key order and 1 vs 1.0 do not matter."""
    def norm(v):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return [norm(x) for x in v]
        return v
    return json.dumps(norm(value), sort_keys=True, separators=(",", ":"))


def _libjq_version() -> str:
    """The jq release the binding was built from (the extension records its build path, jq-X.Y.Z/src)."""
    spec = importlib.util.find_spec("jq")
    match = re.search(rb"jq-(\d+\.\d+(?:\.\d+)?)/src", Path(spec.origin).read_bytes()) if spec else None
    return match.group(1).decode() if match else "unknown"


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # libjq compiles the filter
    SEMANTIC_FAIL = "wrong_output"  # JSON output equivalence

    PACKAGES = {"jq": "jq"}
    INSTALL_HINT = "PyPI package jq"

    def describe(self, versions):
        return f"PyPI jq {versions['jq']} (libjq {_libjq_version()})"

    def oracle_rules(self, task):
        problems = []
        o = task.oracle
        for i, name in enumerate(o.get("input_files", [])):
            if name not in task.context:
                problems.append((f"input_files[{i}]", f"'{name}' is not a context file of the task"))
            else:
                try:
                    json.loads(task.context[name])
                except json.JSONDecodeError as e:
                    problems.append((f"input_files[{i}]", f"context file '{name}' is not JSON: {e}"))
        if not o.get("inputs") and not o.get("input_files"):
            problems.append(("inputs", "give at least one input (inputs or input_files)"))
        return problems

    def _inputs(self, task) -> list:
        values = [json.loads(task.context[n]) for n in task.oracle.get("input_files", [])]
        return values + list(task.oracle.get("inputs", []))

    def _run(self, mode: str, work: Path, files: list[str], inputs: list):
        (work / "inputs.json").write_text(json.dumps(inputs))
        return self.run_runner([RUNNER], [mode, "report.json", *files], work)

    def syntax(self, program, task, work):
        result, report = self._run("compile", work, [self.file_name], [])
        if result.timed_out:
            return self.verdict("fail", "jq compile timed out", result)
        if report is None:
            return self.verdict("error", f"jq runner failed (exit {result.returncode})", result)
        entry = report[self.file_name]
        if not entry["compiled"]:
            return self.verdict("fail", entry["error"].strip().splitlines()[0][:300], result)
        return self.verdict("pass", "compiles", result)

    def semantic(self, program, task, work):
        (work / "gold.jq").write_text(task.gold, encoding="utf-8")
        inputs = self._inputs(task)
        result, report = self._run("run", work, [self.file_name, "gold.jq"], inputs)
        if result.timed_out:
            return self.verdict("fail", f"timed out after {self.limits().timeout_s:.0f} s (non-terminating filter?)", result)
        if report is None:
            return self.verdict("error", f"jq runner failed (exit {result.returncode})", result)
        gold = report["gold.jq"]
        if not gold["compiled"] or not all(r["ok"] for r in gold["results"]):
            return self.verdict("error", "the gold filter does not run on the oracle inputs", result, reason="gold_broken")
        cand = report[self.file_name]["results"]
        unordered = task.oracle.get("order") == "unordered"
        for i, (c, g) in enumerate(zip(cand, gold["results"])):
            if not c["ok"]:
                return self.verdict("fail", f"input {i}: runtime error: {c['error'][:200]}", result)
            got, want = [canonical(v) for v in c["outputs"]], [canonical(v) for v in g["outputs"]]
            same = Counter(got) == Counter(want) if unordered else got == want
            if not same:
                order = " (order ignored)" if unordered else ""
                return self.verdict("fail", f"input {i}: output {_short(got)} differs from the gold's{order}", result,
                                    expected=f"input {i}: expected {_short(want)}")
        return self.verdict("pass", f"outputs equal on {len(inputs)} input(s)", result)


def _short(outputs: list[str]) -> str:
    text = "[" + ", ".join(outputs) + "]"
    return text if len(text) < 200 else text[:197] + "..."
