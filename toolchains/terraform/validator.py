"""Terraform HCL: syntax = terraform validate/plan offline; semantic = the task's Rego policy over the plan JSON.

With a terraform binary and a provider mirror holding hashicorp/aws 5.x (both detected, never
downloaded), one sandboxed runner call per program plans the configuration offline (fake
credentials, provider skip flags) and renders the plan as JSON; when the plan fails, `terraform
validate` tells a syntax failure from a plan-time one. Without them it falls back to python-hcl2
parsing plus a pseudo plan built from the parsed configuration, and says so in the probe and in
every verdict.

Oracle of a task:
  policy: Rego module (rego.v1 or v0 syntax); may `import data.dslbench.tf` (dslbench_lib.rego)
  rule: deny        (default) `deny` is a set of messages, the program passes when it is empty;
        document    IaC-Eval convention: no rule value of the package may be false;
        <name>      a boolean rule that must be true
  vars: {name: value}           values for the plan (-var-file), optional
  modules: {dir: {file: text}}  local module folders created next to the program, optional
"""
from __future__ import annotations

import csv
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from dslbench import settings
from dslbench.sandbox import sandbox_mode
from dslbench.toolchains import LevelVerdict, Probe, Toolchain, installed_versions

HERE = Path(__file__).parent
RUNNER, EVALUATOR, LIB = HERE / "run_terraform.py", HERE / "hcl_eval.py", HERE / "dslbench_lib.rego"
SCHEMA = HERE / "aws_schema.json.gz"      # hashicorp/aws 5.100.0 schema snapshot for the fallback (make_schema.py)
DEFAULT_TERRAFORM = "/usr/local/bin/terraform"
DEFAULT_MIRROR = "/opt/tf-plugins"
AWS = "registry.terraform.io/hashicorp/aws"
MODULE_DIR = re.compile(r"[^/.][^/]*(/[^/.][^/]*)*")     # relative, no '..' or hidden parts


def _platform() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{platform.system().lower()}_{arch}"


def _version_key(v: str):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


@functools.lru_cache(maxsize=None)
def find_terraform() -> tuple[str | None, str | None, str | None, str]:
    """(terraform binary, aws provider dir, aws version, why not) found on this machine; never downloads.

    The provider dir sits in a filesystem mirror: <mirror>/registry.terraform.io/hashicorp/aws/<version>/<os_arch>.
    """
    tf = settings.get("DSLBENCH_TERRAFORM") or shutil.which("terraform") or DEFAULT_TERRAFORM
    if not (Path(tf).is_file() and os.access(tf, os.X_OK)):
        return None, None, None, "no terraform binary (PATH, DSLBENCH_TERRAFORM or /usr/local/bin/terraform)"
    mirror = Path(settings.get("DSLBENCH_TF_PLUGINS") or DEFAULT_MIRROR)
    found = []
    for d in mirror.glob(f"{AWS}/*/{_platform()}"):
        if _version_key(d.parent.name)[:1] == (5,) and list(d.glob("terraform-provider-aws*")):
            found.append((_version_key(d.parent.name), d.parent.name, d))
    if not found:
        return tf, None, None, f"no hashicorp/aws 5.x provider for {_platform()} in the mirror {mirror} (DSLBENCH_TF_PLUGINS)"
    _, version, folder = max(found)
    return tf, str(folder), version, ""


@functools.lru_cache(maxsize=None)
def terraform_version(tf: str) -> str:
    out = subprocess.run([tf, "version", "-json"], capture_output=True, text=True, timeout=60,
                         env={"PATH": os.environ.get("PATH", ""), "CHECKPOINT_DISABLE": "1",
                              "TF_CLI_CONFIG_FILE": os.devnull})
    return json.loads(out.stdout)["terraform_version"]


def _first(text: str, n: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= n else line[: n - 3] + "..."


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # terraform validate
    SEMANTIC_FAIL = "oracle_mismatch"  # policy checks on the plan

    # --- which toolchain judges -------------------------------------------------------------------
    def _mode(self) -> str:
        tf, provider, _, _ = find_terraform()
        return "plan" if tf and provider else "parse"

    def probe(self) -> Probe:
        versions, problem = installed_versions({"regopy": None})
        if problem:
            return Probe(self.dsl, self.card["toolchain"], "", False, f"{problem} (it runs the Rego policies)")
        regopy = versions["regopy"]
        tf, provider, aws_version, why = find_terraform()
        if tf and provider:
            version = f"terraform {terraform_version(tf)}, hashicorp/aws {aws_version}, regopy {regopy}"
            return Probe(self.dsl, self.card["toolchain"], version, True,
                         dialect=f"Terraform {terraform_version(tf)} language, hashicorp/aws {aws_version} schema")
        fallback, missing = installed_versions({"python-hcl2": None})
        if missing:
            return Probe(self.dsl, self.card["toolchain"], "", False,
                         f"{why}; and the fallback parser python-hcl2 is not installed")
        _warm_hcl2()
        snapshot = _snapshot_version()
        schema = (f"arguments against a hashicorp/aws {snapshot} schema snapshot" if snapshot
                  else "no provider schema")
        return Probe(self.dsl, f"python-hcl2 fallback (weaker: {why})", f"python-hcl2 {fallback['python-hcl2']}, regopy {regopy}", True,
                     dialect=f"HCL2 syntax, Terraform language rules and {schema}; no provider-side validation, "
                             "policies judged on a pseudo plan from the parsed configuration",
                     exact=False)

    # --- oracle spec --------------------------------------------------------------------------------
    def oracle_rules(self, task):
        o, problems = task.oracle, []
        if not re.search(r"(?m)^\s*package\s+[\w.]+", o["policy"]):
            problems.append(("policy", "the Rego module has no package line"))
        else:
            problems += [("policy", p) for p in policy_problems(o["policy"], o.get("rule", "deny"))]
        for folder in o.get("modules", {}):
            if not isinstance(folder, str) or not MODULE_DIR.fullmatch(folder):
                problems.append((f"modules.{folder}", "must be a relative folder path without '..' or hidden parts"))
        return problems

    # --- the two levels -----------------------------------------------------------------------------
    def _prepare(self, task, work: Path) -> Path:
        aux = work / ".dslbench"
        aux.mkdir(exist_ok=True)
        shutil.copy(RUNNER, aux / RUNNER.name)
        shutil.copy(EVALUATOR, aux / EVALUATOR.name)
        for folder, files in (task.oracle.get("modules") or {}).items():
            target = work / folder
            target.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (target / name).write_text(text, encoding="utf-8")
        tf, provider, aws_version, _ = find_terraform()
        job = {"terraform": tf, "aws_provider_dir": provider, "mirror": str(Path(provider).parents[4]) if provider else "",
               "aws_version": aws_version, "vars": task.oracle.get("vars") or {},
               "rule": task.oracle.get("rule", "deny"),
               "schema": str(SCHEMA) if SCHEMA.exists() else None,
               # address-space cap for terraform and the provider (Go; about 3 GB is needed)
               "tf_memory_mb": int(self.card.get("terraform_memory_mb", 4096)),
               # DSLBENCH_TF_REATTACH=0: let terraform start the provider itself for every command
               "reattach": settings.get("DSLBENCH_TF_REATTACH") != "0"}
        (aux / "job.json").write_text(json.dumps(job), encoding="utf-8")
        # The policy is evaluated in the same sandboxed run, right after a successful plan.
        (aux / "policy.rego").write_text(task.oracle["policy"], encoding="utf-8")
        shutil.copy(LIB, aux / LIB.name)
        return aux

    def _report(self, path: Path, result=None):
        data = self.read_report(path, result)
        return data if isinstance(data, dict) else None

    # One sandboxed runner call judges both levels (levels()): it plans the configuration and, after a
    # successful plan, evaluates the policy on it. syntax() and semantic() alone make the same call.
    def levels(self, program, task, work):
        syn, report = self._plan(task, work)
        if syn.status != "pass":
            return syn, None
        return syn, self._guarded(self._policy, report, work)

    def syntax(self, program, task, work):
        return self._plan(task, work)[0]

    def semantic(self, program, task, work):
        return self._policy(self._plan(task, work)[1], work)

    def _plan(self, task, work) -> tuple[LevelVerdict, dict]:
        """The syntax verdict of one runner call (plan, or the fallback's parse) and its report."""
        aux = self._prepare(task, work)
        mode = self._mode()
        (aux / "report.json").unlink(missing_ok=True)
        (aux / "policy.json").unlink(missing_ok=True)
        result = self.run([Path(sys.executable).name, ".dslbench/run_terraform.py", mode], work)
        if result.timed_out:
            return self.verdict("fail", f"terraform timed out after {self.limits().timeout_s:.0f} s", result), {}
        report = self._report(aux / "report.json", result) if result.returncode == 0 else None
        if report is None or not isinstance(report.get("syntax"), dict):
            return self.verdict("error", f"terraform runner failed (exit {result.returncode}): "
                                         f"{_first(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else '')}",
                                result), {}
        syn = report["syntax"]
        prefix = "" if mode == "plan" else "[python-hcl2 fallback, weaker than terraform validate] "
        if syn.get("ok") is None:
            return self.verdict("error", prefix + _first(str(syn.get("diagnostics", ""))), result), report
        return self.verdict("pass" if syn["ok"] else "fail", prefix + _first(str(syn.get("diagnostics", ""))), result), report

    def _policy(self, report: dict, work: Path) -> LevelVerdict:
        """The semantic verdict: the plan of `report` and the policy evaluated right after it."""
        aux = work / ".dslbench"
        plan = report.get("plan") or {}
        if plan.get("network_reads"):
            # a lookup in the live account (an AMI, the zones): no plan offline, and no guess either
            return LevelVerdict("unavailable", "the plan reads AWS, which the offline judge cannot reach: "
                                + ", ".join(plan["network_reads"]), "python .dslbench/run_terraform.py plan  # plan step",
                                f"error: {plan.get('diagnostics', '')}", 0.0, sandbox_mode(), reason="needs_network")
        if not plan.get("ok"):
            errors = [str(e) for e in report.get("plan_errors") or [plan.get("diagnostics", "no plan")]]
            return LevelVerdict("fail", "terraform plan failed: " + _first(str(plan.get("diagnostics", "no plan"))),
                                "python .dslbench/run_terraform.py plan  # plan step",
                                "\n".join(f"error: {e}" for e in errors), 0.0, sandbox_mode())
        verdict, result = self._report(aux / "policy.json"), None
        if verdict is None:                      # normally judged in the plan run; else judge it now
            result = self.run([Path(sys.executable).name, ".dslbench/run_terraform.py", "policy"], work)
            verdict = self._report(aux / "policy.json", result) if result.returncode == 0 else None
        if verdict is None or verdict.get("ok") is None:
            why = (verdict or {}).get("diagnostics") or "policy runner failed" + (
                f" (exit {result.returncode})" if result else "")
            return self._policy_verdict("error", _first(str(why)), verdict, result)
        judged = verdict.get("judged", "")
        if verdict["ok"] is True:
            return self._policy_verdict("pass", f"policy satisfied ({judged})", verdict, result)
        messages = [str(m) for m in verdict.get("messages") or []] or ["policy not satisfied"]
        more = f" (+{len(messages) - 1} more)" if len(messages) > 1 else ""
        expected = str((verdict.get("expected") or [""])[0])     # the policy's wanted values, kept out of diagnostics
        return self._policy_verdict("fail", f"{_first(messages[0], 240)}{more} ({judged})", verdict, result,
                                    _first(expected, 240))

    def _policy_verdict(self, status, diagnostics, verdict, result, expected=""):
        if result is not None:
            return self.verdict(status, diagnostics, result, expected=expected)
        lines = [f"policy ({self.card.get('semantic_policy_engine', 'regopy')}) evaluated in the syntax run "
                 "(python .dslbench/run_terraform.py plan)"]
        v = verdict or {}
        # the log is not fed back to the model: it keeps each policy message whole
        messages = v.get("messages", [])
        lines += [f"  - {e or m}" for m, e in zip(messages, v.get("expected") or [""] * len(messages))]
        return LevelVerdict(status, diagnostics, "python .dslbench/run_terraform.py plan  # policy step",
                            "\n".join(lines), float((verdict or {}).get("seconds", 0.0)), sandbox_mode(),
                            expected=expected)

    # --- upstream: IaC-Eval CSV ------------------------------------------------------------------------
    def import_upstream(self, source: Path):
        return import_iac_eval(Path(source), self)


@functools.lru_cache(maxsize=None)
def _snapshot_version() -> str:
    import gzip
    try:
        with gzip.open(SCHEMA, "rb") as f:
            return str(json.loads(f.read()).get("provider_version", ""))
    except (OSError, ValueError):
        return ""


def _warm_hcl2() -> None:
    """python-hcl2 caches its compiled grammar next to its code; build it once outside the read-only sandbox."""
    try:
        import hcl2.parser
        hcl2.parser.parser()
    except Exception:  # noqa: BLE001 - only a speed-up
        pass


# builtins regopy (rego-cpp) 1.5 accepts but evaluates to undefined, where OPA computes them: a rule
# that calls one would come out false (measured: an IaC-Eval reference failed on net.cidr_is_valid)
UNEVALUATED_BUILTIN = re.compile(r"\bnet\.(cidr_\w+|lookup_ip_addr)\s*\(")


def policy_problems(policy: str, rule: str) -> list[str]:
    """Compile the policy with regopy against an empty plan; problems as messages."""
    unevaluated = UNEVALUATED_BUILTIN.search(policy)
    if unevaluated:
        line = policy.count("\n", 0, unevaluated.start()) + 1
        return [f"calls {unevaluated.group(0).rstrip('( ')} (line {line}), which regopy does not evaluate "
                "(it gives undefined where OPA computes a value)"]
    try:
        from regopy import Interpreter
    except ImportError:
        return []          # checked again at evaluation time; the probe reports regopy missing
    package = re.search(r"(?m)^\s*package\s+([\w.]+)", policy).group(1)
    rego = Interpreter()
    try:
        rego.add_module("dslbench_lib.rego", LIB.read_text(encoding="utf-8"))
        rego.add_module("policy.rego", policy)
        rego.set_input({"resource_changes": [], "configuration": {"root_module": {}}})
        out = rego.query(f"data.{package}")
    except Exception as e:  # noqa: BLE001 - RegoError and friends
        return [f"does not compile: {rego_error(str(e), policy)}"]
    if not out.ok():
        return [f"does not compile: {rego_error(str(out), policy)}"]
    doc = out.results[0].expressions[0] if out.results and out.results[0].expressions else None
    if rule not in ("document",) and not re.search(rf"(?m)^\s*(default\s+)?{re.escape(rule)}\b", policy):
        return [f"defines no rule '{rule}'"]
    if rule == "deny" and isinstance(doc, dict) and doc.get("deny") not in (None, []):
        pass  # a deny on an empty plan is fine (e.g. "no bucket"): nothing to check here
    return []


def rego_error(text: str, policy: str) -> str:
    """'line L:C: message' from rego-cpp's error tree (`(error N:file|offset|len (errormsg N:message) ...)`)."""
    msg = re.search(r"\(errormsg \d+:([^)]*)\)", text)
    where = re.search(r"\(error \d+:policy\.rego\|(\d+)\|", text)
    if not msg:
        return _first(text, 200)
    if where:
        offset = int(where.group(1))
        line = policy.count("\n", 0, offset) + 1
        col = offset - (policy.rfind("\n", 0, offset) + 1) + 1
        return f"policy line {line}:{col}: {msg.group(1)}"
    return msg.group(1)


# --- IaC-Eval -------------------------------------------------------------------------------------

IAC_EVAL_COLUMNS = ("Resource", "Prompt", "Rego intent", "Difficulty", "Reference output", "Intent")


def _difficulty(value: str) -> str | None:
    try:
        level = int(float(str(value).strip()))
    except ValueError:
        return None
    return {1: "easy", 2: "easy", 3: "medium", 4: "medium", 5: "hard", 6: "hard"}.get(level)


def import_iac_eval(source: Path, tc: Validator):
    """IaC-Eval's CSV (one row per task) -> Imported: task dicts, and every record not imported with a
    reason code (malformed_record, policy_unusable, needs_local_file, provider_version_unavailable).
    Only a file that is not an IaC-Eval CSV raises.

    Columns: Resource, Prompt, Rego intent, Difficulty (1-6), Reference output, Intent. The record
    number is its 1-based data row; `upstream_id` is "<file stem>:<row>".
    """
    files = sorted(source.glob("*.csv")) if source.is_dir() else [source]
    if not files:
        raise ValueError(f"{source}: no IaC-Eval CSV file")
    from dslbench.upstream import Imported, Skip
    out = Imported()
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in IAC_EVAL_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise ValueError(f"{path.name}: not an IaC-Eval CSV, missing column(s) {', '.join(missing)}")
            for row_no, row in enumerate(reader, start=1):
                where = f"{path.name} record {row_no} (Resource {row.get('Resource', '').strip()!r})"
                prompt, rego, gold = ((row.get(k) or "").strip() for k in ("Prompt", "Rego intent", "Reference output"))
                empty = [name for name, value in (("Prompt", prompt), ("Rego intent", rego),
                                                  ("Reference output", gold)) if not value]
                if empty:
                    out.skipped.append(Skip(where, "malformed_record", f"column '{empty[0]}' is empty"))
                    continue
                difficulty = _difficulty(row.get("Difficulty", ""))
                if difficulty is None:
                    out.skipped.append(Skip(where, "malformed_record", "column 'Difficulty' must be an integer 1-6, "
                                                                       f"got {row.get('Difficulty')!r}"))
                    continue
                if not re.search(r"(?m)^\s*package\s+[\w.]+", rego):
                    out.skipped.append(Skip(where, "policy_unusable", "Rego intent has no package line"))
                    continue
                problems = policy_problems(rego, "document")
                if problems:
                    out.skipped.append(Skip(where, "policy_unusable", f"Rego intent {problems[0]}"))
                    continue
                outside = needs_outside(gold)
                if outside:
                    out.skipped.append(Skip(where, *outside))
                    continue
                resources = [r.strip() for r in re.split(r"[,\s]+", row.get("Resource", "")) if r.strip()]
                intent = " ".join((row.get("Intent") or "").split())
                out.tasks.append({
                    "id": f"terraform-iaceval-{path.stem.lower().replace('_', '-')}-{row_no:04d}",
                    "dsl": tc.dsl, "domain": tc.card.get("domain", "DevOps/Infrastructure"),
                    "title": _first(f"{', '.join(resources) or 'Terraform'}: {intent or prompt}", 100),
                    "difficulty": difficulty, "constructs": resources or ["resource"], "failure_modes": [],
                    "instruction": prompt, "context": {}, "gold": gold + ("\n" if not gold.endswith("\n") else ""),
                    "oracle": {"policy": rego + "\n", "rule": "document"},
                    "provenance": {"source": "upstream", "benchmark": "IaC-Eval", "upstream_id": f"{path.stem}:{row_no}",
                                   # not verified here: the dataset card states it (the IaC-Eval code is MIT)
                                   "licence": "as published with the IaC-Eval dataset (see its dataset card)"},
                    "split": "test", "mutants": iac_eval_mutants(gold, row_no, f"{prompt}\n{intent}", resources),
                })
    return out


# functions that read a file next to the configuration (the dataset ships none), and an aws pin
FILE_READ = re.compile(r"\b(file|filebase64|filebase64sha\d+|filemd5|filesha\d+|templatefile)\s*\([^()\n]*\)")
AWS_PIN = re.compile(r'(?s)\brequired_providers\s*\{.*?\baws\s*=\s*\{[^}]*?\bversion\s*=\s*"([^"]+)"')


def needs_outside(gold: str) -> tuple[str, str] | None:
    """(reason, detail) when the reference cannot be judged here whatever it says: it reads a file the
    dataset does not ship, or pins an aws provider other than the one installed (init would fail)."""
    read = FILE_READ.search(gold)
    if read:
        return "needs_local_file", f"the reference reads {read.group(0)}, a file the dataset does not ship"
    pin = AWS_PIN.search(gold)
    have = find_terraform()[2] or _snapshot_version()
    if pin and have and not _runner().version_ok(pin.group(1), have):
        return ("provider_version_unavailable", f"the reference pins hashicorp/aws '{pin.group(1)}', which excludes "
                                                f"{have}, the version available offline")
    return None


@functools.lru_cache(maxsize=None)
def _runner():
    """run_terraform.py as a module: its version-constraint rule is the one init applies in the sandbox."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("dslbench_run_terraform", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# a one-line attribute whose value is a literal (`ttl = 300`, `type = "A"`), nested blocks included
LITERAL_ATTRIBUTE = re.compile(r'(?m)^([ \t]+)([A-Za-z_][\w-]*)([ \t]*=[ \t]*)("(?:[^"\\\n$%]|\\.)*"|-?\d+(?:\.\d+)?|true|false)[ \t]*$')


def resource_blocks(hcl: str) -> list[tuple[int, int, str]]:
    """(start, end, address) of each top-level `resource "type" "name" { ... }` block, its braces
    matched outside string literals; a block that does not close is left out."""
    out = []
    for m in re.finditer(r'(?m)^resource[ \t]+"([\w-]+)"[ \t]+"([\w-]+)"[ \t]*\{', hcl):
        depth, i, quoted = 1, m.end(), False
        while i < len(hcl) and depth:
            c = hcl[i]
            if quoted:
                quoted = c != '"' or hcl[i - 1] == "\\"
            elif c == '"':
                quoted = True
            elif c in "{}":
                depth += 1 if c == "{" else -1
            i += 1
        if depth == 0:
            out.append((m.start(), i, f"{m.group(1)}.{m.group(2)}"))
    return out


def iac_eval_mutants(gold: str, index: int, spec: str, resource_types: list[str]) -> list[dict]:
    """Up to 3 semantic slips in an IaC-Eval reference, each of a different kind, in a seeded order,
    each touching only what the task's own text (`spec`: prompt and intent) names: a resource block
    of a listed type dropped when nothing else refers to it, a literal value the text states changed
    (a number - 1, a boolean flipped, a string given a suffix), an attribute the text names dropped.
    A value or attribute the text leaves free is the author's choice, and a program that changes it
    still answers the prompt (an equivalent mutant, which would say nothing about the oracle)."""
    import random
    from dslbench.upstream import one_mutant_per_kind
    rng = random.Random(index)
    text = spec.lower()
    blocks = resource_blocks(gold)
    sites = [(m, address) for start, end, address in blocks for m in LITERAL_ATTRIBUTE.finditer(gold, start, end)]

    def named(word: str) -> bool:
        return bool(re.search(rf"(?<![\w.-]){re.escape(word.lower())}(?![\w-]|\.\w)", text))

    def attribute_named(name: str) -> bool:
        # `node_type` can only mean the attribute; a plain word (bucket, name, engine) only when quoted
        return named(name) if "_" in name else f'"{name.lower()}"' in text

    def stated(name: str, value: str) -> bool:
        if value in ("true", "false"):
            return attribute_named(name)             # a switch the text names is set as the text asks
        if value.startswith('"'):
            return len(value) > 3 and named(value[1:-1])
        return bool(re.search(rf"(?<![\w.]){re.escape(value)}(?!\d|\.\d)", text))    # "20 GB", "20GB"

    def dropped_resources():
        for start, end, address in rng.sample(blocks, len(blocks)):
            rest = gold[:start] + gold[end:]
            listed = address.split(".")[0] in resource_types or named(address.split(".")[0])
            if listed and len(blocks) > 1 and not re.search(rf"\b{re.escape(address)}\b", rest):
                yield f"resource {address} dropped", gold[:start] + gold[end:].lstrip("\n")

    def changed_values():
        # numbers and booleans first: a changed string is often an enumeration the provider rejects
        shuffled = rng.sample(sites, len(sites))
        for m, address in sorted(shuffled, key=lambda site: site[0].group(4).startswith('"')):
            value = m.group(4)
            if not stated(m.group(2), value):
                continue
            if value in ("true", "false"):
                new = "false" if value == "true" else "true"
            elif value.startswith('"'):
                new = value[:-1] + '-changed"'
            else:   # down, not up: a stated number is most often a minimum ("at least 20 GB")
                number = float(value) if "." in value else int(value)
                new = str(number - 1 if number > 1 else number + 1)
            yield (f"{address} {m.group(2)} = {value} changed to {new}",
                   gold[:m.start(4)] + new + gold[m.end(4):])

    def dropped_attributes():
        for m, address in rng.sample(sites, len(sites)):
            if attribute_named(m.group(2)) or stated(m.group(2), m.group(4)):
                yield f"{address} {m.group(2)} dropped", gold[:m.start()] + gold[m.end():].lstrip("\n")

    kinds = [dropped_resources, changed_values, dropped_attributes]
    rng.shuffle(kinds)
    return one_mutant_per_kind(gold, (kind() for kind in kinds))
