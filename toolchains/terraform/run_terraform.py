"""Runs inside the sandbox: judge a Terraform configuration in the current directory.

usage: python run_terraform.py MODE          (job in .dslbench/job.json, report in .dslbench/)
  plan     terraform plan (validation included) -> show -json; on a failed plan, terraform validate
           decides whether the failure is a syntax one. Writes report.json and plan.json.
  parse    fallback without terraform: python-hcl2 parses, language-level checks, and a pseudo plan
           (hcl_eval.py) stands in for the plan JSON. Writes report.json and plan.json.
  policy   evaluate the task's Rego policy (regopy) over plan.json. Writes policy.json.

Everything printed is deterministic (no times, no temporary paths): it lands in verdict logs.
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

AUX = Path(".dslbench")
OVERRIDE = "zz_dslbench_override.tf"   # Terraform merges *_override.tf files into the blocks they name
PROVIDER = "zz_dslbench_provider.tf"   # used when the configuration has no provider "aws" block at all
# Offline planning: fake credentials, no STS/IAM/metadata calls, one retry at most.
SKIP_FLAGS = {"skip_credentials_validation": "true", "skip_requesting_account_id": "true",
              "skip_metadata_api_check": "true", "skip_region_validation": "true",
              "s3_use_path_style": "true", "max_retries": "1",
              "access_key": '"AKIAIOSFODNN7EXAMPLE"', "secret_key": '"dslbench-fake-secret-key"',
              "profile": "null", "token": "null"}
NOISE = ("Provider development overrides are in effect", "Value for undeclared variable",
         "Values for undeclared variables")


def write_json(name, obj):
    (AUX / name).write_text(json.dumps(obj, indent=1, sort_keys=True), encoding="utf-8")


# --- reading the configuration without terraform -----------------------------------------------

def _strip(text: str) -> str:
    """The text with comments and string/heredoc contents blanked (same length, same lines)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "#" or text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == '"':
            j, depth = i + 1, 0
            while j < n:
                if text[j] == "\\":
                    j += 2; continue
                if text.startswith("${", j):
                    depth += 1; j += 2; continue
                if text[j] == "}" and depth:
                    depth -= 1
                elif text[j] == '"' and not depth:
                    break
                elif text[j] == "\n" and not depth:
                    break
                j += 1
            out.append('"' + re.sub(r"[^\n]", "_", text[i + 1:j]) + '"'); i = j + 1
        elif text.startswith("<<", i) and re.match(r"<<-?([A-Za-z_]\w*)\s*\n", text[i:]):
            m = re.match(r"<<-?([A-Za-z_]\w*)\s*\n", text[i:])
            end = re.compile(r"^\s*" + re.escape(m.group(1)) + r"\s*$", re.M).search(text, i + m.end())
            j = end.end() if end else n
            out.append(re.sub(r"[^\n]", "_", text[i:j])); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


def aws_provider_aliases(files):
    """Aliases of the provider "aws" blocks (None = the default configuration), in file order."""
    aliases = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        blank = _strip(text)
        for m in re.finditer(r'(?m)^\s*provider\s+"(_*)"\s*\{', blank):
            if text[m.start(1):m.end(1)] != "aws":
                continue
            depth, j = 1, m.end()
            while j < len(blank) and depth:
                depth += {"{": 1, "}": -1}.get(blank[j], 0)
                j += 1
            body_blank, body = blank[m.end():j - 1], text[m.end():j - 1]
            alias = None
            for a in re.finditer(r'(?m)^\s*alias\s*=\s*"', body_blank):
                # only top-level alias attributes of the block (depth 0 inside the body)
                if body_blank[:a.start()].count("{") == body_blank[:a.start()].count("}"):
                    value = re.match(r'\s*alias\s*=\s*"([^"]*)"', body[a.start():].lstrip("\n"))
                    alias = value.group(1) if value else None
            aliases.append(alias)
    return aliases


def version_ok(constraint: str, version: str) -> bool:
    """Does `version` satisfy a Terraform version constraint string ("~> 5.0, >= 5.10")?"""
    def parse(v):
        parts = [int(p) for p in re.findall(r"\d+", v.split("-")[0])[:3]]
        return parts + [0] * (3 - len(parts)), len(parts)
    have, _ = parse(version)
    for clause in filter(None, (c.strip() for c in constraint.split(","))):
        m = re.match(r"(~>|>=|<=|!=|>|<|=)?\s*v?([\d.]+)", clause)
        if not m:
            continue
        op, (want, given) = m.group(1) or "=", parse(m.group(2))
        if op == "~>":
            upper = want[:max(given - 1, 1)]
            upper = upper[:-1] + [upper[-1] + 1]
            if not (have >= want and have[:len(upper)] < upper):
                return False
        elif not {"=": have == want, "!=": have != want, ">": have > want, ">=": have >= want,
                  "<": have < want, "<=": have <= want}[op]:
            return False
    return True


# --- terraform ---------------------------------------------------------------------------------

def base_env():
    env = dict(os.environ)
    env.update({"TF_CLI_CONFIG_FILE": str(AUX / "terraformrc"), "CHECKPOINT_DISABLE": "1",
                "TF_IN_AUTOMATION": "1", "TF_INPUT": "0", "NO_COLOR": "1",
                # Go garbage collection off: each command is short and its heap stays near 1 GB.
                "GOGC": "off", "GOMEMLIMIT": "1536MiB",
                "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY": "dslbench-fake-secret-key",
                "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
                "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"})
    return env


def go_limits(job):
    """Address-space cap for terraform and the provider (the sandbox itself has none: regopy's allocator,
    snmalloc, reserves more address space than any useful RLIMIT_AS allows)."""
    import resource
    mb = int(job.get("tf_memory_mb") or 0)

    def apply():
        if mb:
            resource.setrlimit(resource.RLIMIT_AS, (mb * 1024 * 1024, mb * 1024 * 1024))
    return apply


def terraform(job, *args, log, reattach=None, core_log=None):
    env = base_env()
    if reattach:
        env["TF_REATTACH_PROVIDERS"] = reattach
    if core_log:
        env.update({"TF_LOG_CORE": "DEBUG", "TF_LOG_PROVIDER": "OFF", "TF_LOG_PATH": str(core_log)})
    cmd = [job["terraform"], *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=go_limits(job))
    log.append({"cmd": " ".join(["terraform", *args]), "exit": proc.returncode})
    return proc


class Provider:
    """One aws provider process for the whole run (Terraform's debug reattach protocol).

    Terraform normally starts the 700 MB provider binary two or three times per command and asks each
    for its schema; one long-lived instance saves about a third of the CPU time. It can be configured
    only once, so it is used only for configurations with a single aws provider configuration.
    """

    def __init__(self, job):
        self.proc, self.reattach = None, None
        self.job = job
        binary = next(Path(job["aws_provider_dir"]).glob("terraform-provider-aws*"), None)
        if binary is None:
            return
        self.out = open(AUX / "provider.log", "wb")
        self.proc = subprocess.Popen([str(binary), "-debug"], stdout=self.out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=base_env(), preexec_fn=go_limits(job))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"TF_REATTACH_PROVIDERS='(\{.*\})'", (AUX / "provider.log").read_text(errors="replace"))
            if m:
                self.reattach = m.group(1)
                return
            time.sleep(0.02)

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def diag_text(d) -> str:
    where = ""
    rng = d.get("range") or {}
    if rng.get("filename"):
        where = f"{rng['filename']}:{rng.get('start', {}).get('line', '?')}: "
    detail = " ".join((d.get("detail") or "").split())
    summary = " ".join((d.get("summary") or "").split())
    return f"{where}{summary}" + (f": {detail}" if detail and detail != summary else "")


def json_lines(text):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                pass


def diag_key(d):
    """Diagnostics come from a concurrent graph walk: order them by place so that logs are reproducible."""
    rng = d.get("range") or {}
    start = rng.get("start") or {}
    return (rng.get("filename") or "~", start.get("line", 0), start.get("column", 0), diag_text(d))


def sorted_texts(diags):
    return list(dict.fromkeys(diag_text(d) for d in sorted(diags, key=diag_key)))


# The AWS SDK's words for a request that never left the machine: no network in the sandbox, or no
# region to send it to (none is configured here; the user's AWS configuration would give one).
NETWORK_FAILURE = re.compile(r"request send failed|dial tcp|no such host|network is unreachable"
                             r"|failed to resolve service endpoint")
DATA_ADDRESS = re.compile(r"(module\.[\w-]+(\[[^\]]*\])?\.)*data\.")


def network_reads(stdout) -> list[str]:
    """The data sources whose reads failed for want of a network, when that is every error of the
    plan; else []. Terraform itself names the failing block (`address`): a program's own strings
    (a precondition's message) cannot pose as one."""
    errors = [m.get("diagnostic", {}) for m in json_lines(stdout) if m.get("type") == "diagnostic"
              and m.get("diagnostic", {}).get("severity") == "error"]
    reads = [d.get("address") or "" for d in errors]
    if errors and all(DATA_ADDRESS.match(a) and NETWORK_FAILURE.search(d.get("summary") or "")
                      for a, d in zip(reads, errors)):
        return sorted(set(reads))
    return []


def plan_diagnostics(stdout):
    errors, warnings = [], []
    for msg in json_lines(stdout):
        if msg.get("type") == "diagnostic":
            d = msg.get("diagnostic", {})
            if any(n in (d.get("summary") or "") for n in NOISE):
                continue
            (errors if d.get("severity") == "error" else warnings).append(d)
    return sorted_texts(errors), sorted_texts(warnings)


def cli_config(job) -> str:
    return ('provider_installation {\n'
            '  dev_overrides {\n'
            f'    "registry.terraform.io/hashicorp/aws" = "{job["aws_provider_dir"]}"\n'
            '  }\n'
            '  filesystem_mirror {\n'
            f'    path    = "{job["mirror"]}"\n'
            '    exclude = ["registry.terraform.io/hashicorp/aws"]\n'
            '  }\n'
            '}\n'
            'disable_checkpoint = true\n')


def override_blocks(aliases) -> tuple[str, str]:
    """(override file, extra provider file) giving every aws provider configuration offline settings."""
    def block(alias):
        lines = [f'  alias = "{alias}"'] if alias else []
        lines += [f"  {k} = {v}" for k, v in SKIP_FLAGS.items()]
        return 'provider "aws" {\n' + "\n".join(lines) + "\n}\n"
    seen = list(dict.fromkeys(aliases))
    override = "".join(block(a) for a in seen)
    extra = "" if None in seen else block(None)
    return override, extra


def mode_plan(job):
    log = []
    report = {"judge": "terraform", "steps": log}
    (AUX / "terraformrc").write_text(cli_config(job), encoding="utf-8")
    tf_files = sorted(p for p in Path(".").glob("*.tf") if p.name not in (OVERRIDE, PROVIDER))
    aliases = aws_provider_aliases(tf_files)
    module_providers = aws_provider_aliases(sorted(p for p in Path(".").glob("*/**/*.tf") if AUX not in p.parents))
    override, extra = override_blocks(aliases)
    if override:
        Path(OVERRIDE).write_text(override, encoding="utf-8")
    if extra:
        Path(PROVIDER).write_text(extra, encoding="utf-8")
    var_args = []
    if job.get("vars"):
        (AUX / "vars.tfvars.json").write_text(json.dumps(job["vars"]), encoding="utf-8")
        var_args = ["-var-file=.dslbench/vars.tfvars.json"]
    plan_args = ["plan", "-input=false", "-lock=false", "-refresh=false", "-json", "-out=.dslbench/tfplan", *var_args]
    core_log = AUX / "core.log"
    # one provider process can be configured only once: share it only when there is one configuration
    shared = job.get("reattach", True) and set(aliases) <= {None} and not module_providers
    provider = Provider(job) if shared else None
    reattach = provider.reattach if provider else None
    try:
        proc = terraform(job, *plan_args, log=log, reattach=reattach, core_log=core_log)
        errors, warnings = plan_diagnostics(proc.stdout)
        if proc.returncode != 0 and any("Module not installed" in e for e in errors):
            terraform(job, "get", "-no-color", log=log)          # local modules only: nothing is downloaded
            core_log.unlink(missing_ok=True)
            proc = terraform(job, *plan_args, log=log, reattach=reattach, core_log=core_log)
            errors, warnings = plan_diagnostics(proc.stdout)
        report["warnings"] = warnings[:10]
        if proc.returncode == 0:
            show = terraform(job, "show", "-json", ".dslbench/tfplan", log=log, reattach=reattach)
            if show.returncode != 0:
                report["syntax"] = {"ok": None, "diagnostics": "terraform show failed: " + show.stderr.strip()[:300]}
                return report
            (AUX / "plan.json").write_text(show.stdout, encoding="utf-8")
            plan = json.loads(show.stdout)
            problem = provider_constraint_problem(plan, job)
            if problem:
                report["syntax"] = {"ok": False, "diagnostics": problem}
                report["plan"] = {"ok": False, "diagnostics": "not used: " + problem}
                return report
            n = len(plan.get("resource_changes", []))
            report["syntax"] = {"ok": True, "diagnostics": f"terraform plan succeeded ({n} resource change(s))"}
            report["plan"] = {"ok": True, "diagnostics": f"{n} resource change(s)"}
            return report
        plan_error = errors[0] if errors else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
        # Syntax failure or plan-time failure? terraform plan validates the configuration first
        # (the same validate walk as `terraform validate`) and logs when it starts planning.
        core = core_log.read_text(errors="replace") if core_log.exists() else ""
        if "plan calling Plan" in core:
            report["syntax"] = {"ok": True, "diagnostics": "configuration valid (terraform plan validated it); the plan failed"}
            report["plan"] = {"ok": False, "diagnostics": plan_error, "network_reads": network_reads(proc.stdout)}
            report["plan_errors"] = errors[:10]
            return report
        if "walking validate graph" in core and errors:
            report["syntax"] = {"ok": False, "diagnostics": hint(errors[0], job)}
            report["validate_errors"] = errors[:10]
            return report
        # Failed before validating (configuration loading, lock file, backend...): ask validate itself.
        for name in (OVERRIDE, PROVIDER):
            Path(name).unlink(missing_ok=True)
        val = terraform(job, "validate", "-json", "-no-color", log=log, reattach=reattach)
    finally:
        if provider:
            provider.close()
    try:
        result = json.loads(val.stdout)
    except json.JSONDecodeError:
        result = {"valid": False, "diagnostics": [{"severity": "error", "summary": (val.stderr.strip() or "validate failed")[:300]}]}
    val_errors = sorted_texts(d for d in result.get("diagnostics", []) if d.get("severity") == "error")
    if not result.get("valid") or val_errors:
        report["syntax"] = {"ok": False, "diagnostics": hint((val_errors or [plan_error])[0], job)}
        report["validate_errors"] = val_errors[:10]
    else:
        report["syntax"] = {"ok": True, "diagnostics": "terraform validate succeeded; terraform plan failed"}
        report["plan"] = {"ok": False, "diagnostics": plan_error}
        report["plan_errors"] = errors[:10]
    return report


def hint(message, job):
    if "Missing required provider" in message or "Inconsistent dependency lock file" in message:
        return message + f" [offline: only hashicorp/aws {job['aws_version']} is installed]"
    return message


def provider_constraint_problem(plan, job):
    """init would refuse a configuration whose aws version constraint excludes the only provider here."""
    version = job["aws_version"]
    for key, cfg in (plan.get("configuration", {}).get("provider_config") or {}).items():
        if cfg.get("full_name") == "registry.terraform.io/hashicorp/aws" and cfg.get("version_constraint"):
            if not version_ok(cfg["version_constraint"], version):
                return (f"provider hashicorp/aws constraint '{cfg['version_constraint']}' excludes {version}, "
                        "the provider version available offline (terraform init would fail)")
    return ""


# --- fallback: python-hcl2 ---------------------------------------------------------------------

def mode_parse(job):
    import hcl_eval
    files = sorted(p for p in Path(".").glob("*.tf"))
    return hcl_eval.judge(files, job, AUX)


# --- policy --------------------------------------------------------------------------------------

class PolicyError(Exception):
    pass


def rego_value(rego, query):
    """The value of a query whose result is JSON-safe (numbers, booleans, identifiers, base64 text).

    regopy 1.5 renders results as JSON without escaping strings, so a value holding a quote or a
    control character (common in plans: user data, policy documents) would not decode: queries
    only ever return counts, booleans, rule names, or messages encoded with base64.
    """
    out = rego.query(query)
    if not out.ok():
        raise PolicyError("Rego evaluation error: " + " ".join(str(out).split())[:400])
    if out.results and out.results[0].expressions:
        return out.results[0].expressions[0]
    return None          # undefined


def decode(texts):
    """Messages from base64; rego-cpp keeps strings built by sprintf JSON-escaped, so unescape those."""
    import base64
    out = []
    for t in texts or []:
        text = base64.b64decode(t).decode("utf-8", errors="replace")
        if "\\" in text:
            try:
                text = json.loads(f'"{text}"')
            except ValueError:
                pass
        out.append(text)
    return sorted(out)


def split_expected(message):
    """(what is wrong, what the policy expected) of one deny message.

    Task policies say what they wanted in the message itself ("x is a, expected b", "... (expected b)",
    "expected 6 subnets, found 5", "missing subnet ...: [values]"). The first part is fed back to the
    model and keeps only the program's own values; the second is the whole message, for the record.
    Messages in none of these forms are kept as they are, with no expected part.
    """
    m = re.fullmatch(r"expected (?:exactly )?(\S+) (.+?), found (.+)", message)
    if m:
        return f"found {m.group(3)} {m.group(2)} (wrong number)", message
    m = re.fullmatch(r"expected (?:exactly )?(?:one|\d+) (.+)", message)
    if m:
        return f"wrong number of {m.group(1)}", message
    m = re.fullmatch(r"(.+?) \(expected [^()]*\)", message) or re.fullmatch(r"(.+?), expected .+", message)
    if m:
        return m.group(1), message
    m = re.fullmatch(r"(missing [^:]+): .+", message)
    if m:
        return m.group(1), message
    return message, ""


def mode_policy(job):
    from regopy import Interpreter
    plan = json.loads((AUX / "plan.json").read_text(encoding="utf-8"))
    policy = (AUX / "policy.rego").read_text(encoding="utf-8")
    package = re.search(r"(?m)^\s*package\s+([\w.]+)", policy).group(1)
    rego = Interpreter()
    rego.add_module("dslbench_lib.rego", (AUX / "dslbench_lib.rego").read_text(encoding="utf-8"))
    rego.add_module("policy.rego", policy)
    rego.set_input(plan)
    rule = job.get("rule", "deny")
    doc = f"data.{package}"
    judged = "pseudo plan from the parsed configuration" if plan.get("dslbench_pseudo_plan") else "terraform plan JSON"
    try:
        if rule == "deny":
            n = rego_value(rego, f"count({doc}.deny)") or 0
            messages = decode(rego_value(rego, f"[base64.encode(m) | some m in {doc}.deny; is_string(m)]"))
            messages += ["(a deny entry that is not a string)"] * (n - len(messages))
            split = [split_expected(m) for m in messages]
            return {"ok": n == 0, "messages": [what for what, _ in split], "expected": [want for _, want in split],
                    "judged": judged}
        if rule == "document":
            # IaC-Eval convention: no value anywhere in the package document may be false.
            if rego_value(rego, f"count({doc})") is None:
                return {"ok": False, "messages": ["the policy package is undefined"], "judged": judged}
            bad = rego_value(rego, f"{{k | v := {doc}[k]; walk(v, [_, x]); x == false}}") or []
            return {"ok": not bad, "messages": [f"rule '{k}' is false" for k in sorted(bad)], "judged": judged}
        value = rego_value(rego, f"{doc}.{rule} == true")
        return {"ok": value is True, "messages": [] if value is True else [f"rule '{rule}' is not true"],
                "judged": judged}
    except PolicyError as e:
        return {"ok": None, "diagnostics": str(e), "judged": judged}


def print_report(report):
    for step in report.get("steps", []):
        print(f"$ {step['cmd']}  [exit {step['exit']}]")
    for key in ("syntax", "plan"):
        if key in report:
            print(f"{key}: {'ok' if report[key]['ok'] else 'FAILED'}: {report[key]['diagnostics']}")
    for w in report.get("warnings", []):
        print(f"warning: {w}")
    for e in report.get("validate_errors", [])[1:] + report.get("plan_errors", [])[1:]:
        print(f"error: {e}")


def print_policy(verdict):
    print(f"policy over the {verdict.get('judged', '?')}: "
          f"{'pass' if verdict.get('ok') else 'error' if verdict.get('ok') is None else 'FAILED'}")
    messages = verdict.get("messages", []) or [verdict.get("diagnostics", "")]
    wanted = verdict.get("expected") or [""] * len(messages)
    for m, e in zip(messages, wanted):
        if m:
            print(f"  - {e or m}")      # the whole message: logs are not fed back to the model


def run_policy(job):
    t0 = time.monotonic()
    try:
        verdict = mode_policy(job)
    except Exception as e:  # noqa: BLE001 - reported as an evaluation error, never as a verdict
        verdict = {"ok": None, "diagnostics": f"policy evaluation crashed: {type(e).__name__}: {e}"}
    verdict["seconds"] = round(time.monotonic() - t0, 3)
    write_json("policy.json", verdict)
    return verdict


def main():
    mode = sys.argv[1]
    job = json.loads((AUX / "job.json").read_text(encoding="utf-8"))
    if mode in ("plan", "parse"):
        report = mode_plan(job) if mode == "plan" else mode_parse(job)
        write_json("report.json", report)
        print_report(report)
        # The policy needs nothing but the plan: judge it in this same sandboxed run.
        if (report.get("plan") or {}).get("ok") and (AUX / "policy.rego").exists():
            print_policy(run_policy(job))
    elif mode == "policy":
        print_policy(run_policy(job))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
