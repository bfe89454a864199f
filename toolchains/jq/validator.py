"""jq: syntax = libjq compiles the filter; semantic = JSON output equivalence with the gold filter."""
import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

from dslbench.toolchains import Toolchain

RUNNER = Path(__file__).with_name("run_jq.py")


def canonical(value, keys: bool = True, order: bool = True) -> str:
    """One spelling per JSON value: key order and 1 vs 1.0 do not matter.

    keys=False is jqBench's keyless comparison: an object counts by its values alone, and then every
    array ignores its order unless order=True."""
    def norm(v):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            if keys:
                return {k: norm(x) for k, x in v.items()}
            return sorted((norm(x) for x in v.values()), key=_dump)
        if isinstance(v, list):
            items = [norm(x) for x in v]
            return items if keys or order else sorted(items, key=_dump)
        return v
    return _dump(norm(value))


def _dump(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def stream_match(want: list, got: list, keys: bool = True, order: bool = True, wrapping: bool = False) -> str | None:
    """How one input's output stream `got` matches the reference's `want`: 'exact', or with wrapping
    (jqBench's value match) 'wrapped' (the reference's outputs are `got` in one array) or 'unwrapped'
    (the other way round); None when it does not."""
    w, g = canonical(want, keys, order), canonical(got, keys, order)
    if w == g:
        return "exact"
    if wrapping and w == canonical([got], keys, order):
        return "wrapped"
    if wrapping and canonical([want], keys, order) == g:
        return "unwrapped"
    return None


def value_match(cand: list, references: list, keys: bool = True, order: bool = True,
                wrapping: bool = False) -> tuple[int, str] | None:
    """jqBench's rule: (index of the first reference the candidate matches, how) when it matches that
    reference in one way (stream_match) on every input, else None. `cand` and each reference are the
    runner's per-input results ({"outputs": [...]})."""
    for r, ref in enumerate(references):
        kinds = {stream_match(g["outputs"], c["outputs"], keys, order, wrapping) for c, g in zip(cand, ref)}
        if len(kinds) == 1 and None not in kinds:
            return r, kinds.pop()
    return None


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
        references = ["gold.jq"]
        for i, text in enumerate(task.oracle.get("references", []), start=1):
            references.append(f"reference{i}.jq")
            (work / references[-1]).write_text(text, encoding="utf-8")
        inputs = self._inputs(task)
        result, report = self._run("run", work, [self.file_name, *references], inputs)
        if result.timed_out:
            return self.verdict("fail", f"timed out after {self.limits().timeout_s:.0f} s (non-terminating filter?)", result)
        if report is None:
            return self.verdict("error", f"jq runner failed (exit {result.returncode})", result)
        for name in references:
            ref = report[name]
            if not ref["compiled"] or not all(r["ok"] for r in ref["results"]):
                what = "the gold filter" if name == "gold.jq" else f"reference {name[9:-3]}"
                return self.verdict("error", f"{what} does not run on the oracle inputs", result, reason="gold_broken")
        cand = report[self.file_name]["results"]
        if "references" in task.oracle or "wrapping" in task.oracle or "keys" in task.oracle:
            return self._value_match(task, cand, [report[r]["results"] for r in references], result)
        gold = report["gold.jq"]
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

    def _value_match(self, task, cand, references, result):
        """jqBench's rule (imported tasks): the candidate matches one reference filter in the same way
        (exact, wrapped or unwrapped) on every input."""
        for i, c in enumerate(cand):
            if not c["ok"]:
                return self.verdict("fail", f"input {i}: runtime error: {c['error'][:200]}", result)
        o = task.oracle
        keys, order, wrapping = o.get("keys") != "ignored", o.get("order") != "unordered", o.get("wrapping") == "lenient"
        matched = value_match(cand, references, keys, order, wrapping)
        if matched:
            which = "the gold" if matched[0] == 0 else f"reference {matched[0]}"
            return self.verdict("pass", f"outputs match {which} ({matched[1]}) on {len(cand)} input(s)", result)
        for i, (c, g) in enumerate(zip(cand, references[0])):
            if stream_match(g["outputs"], c["outputs"], keys, order, wrapping) is None:
                got = [canonical(v, keys, order) for v in c["outputs"]]
                want = [canonical(v, keys, order) for v in g["outputs"]]
                others = f" or any of {len(references) - 1} other reference(s)" if len(references) > 1 else ""
                return self.verdict("fail", f"input {i}: output {_short(got)} differs from the gold's{others}", result,
                                    expected=f"input {i}: expected {_short(want)}")
        return self.verdict("fail", "outputs match the gold on each input, but not in one way on all of them "
                            "(exact on some, wrapped in an array on others)", result)


    def import_upstream(self, source: Path):
        """jqBench's data folder as published (jqStack.jsonl, jqStackEasy.jsonl, jqSpider.jsonl). See jqbench.py."""
        from . import jqbench
        return jqbench.load(Path(source))


def _short(outputs: list[str]) -> str:
    text = "[" + ", ".join(outputs) + "]"
    return text if len(text) < 200 else text[:197] + "..."
