"""Terraform HCL validator: the real terraform + aws provider (detected, never mocked), the Rego oracle,
the python-hcl2 fallback and the IaC-Eval loader. The full self-check of the bundled tasks runs in
tests/test_validators.py; these tests cover what it does not."""
import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains
from dslbench.tasks import TaskError, load_task_file, load_tasks
from dslbench.upstream import dump_task, write_tasks

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "terraform"
TASKS = {t.id: t for t in load_tasks(["terraform"])["terraform"]}


def _validator():
    return toolchains.get("terraform")


def _module(name):
    """A module of the toolchain folder (the runner guards main() behind __name__)."""
    folder = ROOT / "toolchains" / "terraform"
    spec = importlib.util.spec_from_file_location(f"tf_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def _real_terraform():
    probe = toolchains.probe("terraform")
    if not probe.available or "terraform" not in probe.version:
        pytest.skip(f"terraform + aws provider mirror not found here: {probe.toolchain} {probe.reason}")
    return probe


@pytest.fixture
def fallback(monkeypatch):
    """Hide terraform: the validator must fall back to python-hcl2 and say so."""
    monkeypatch.setenv("DSLBENCH_TERRAFORM", "/nonexistent/terraform")
    mod = sys.modules[type(_validator()).__module__]
    mod.find_terraform.cache_clear()
    toolchains.probe.cache_clear()
    yield
    monkeypatch.delenv("DSLBENCH_TERRAFORM")
    mod.find_terraform.cache_clear()
    toolchains.probe.cache_clear()


# --- the real toolchain -------------------------------------------------------------------------

def test_probe_reports_terraform_provider_and_regopy():
    probe = _real_terraform()
    assert probe.version.startswith("terraform 1.")
    assert "hashicorp/aws 5." in probe.version and "regopy" in probe.version
    assert "hashicorp/aws 5." in probe.dialect


def test_plan_time_failure_is_semantic_and_diagnostics_are_reproducible():
    """each.value inside a dynamic block validates but cannot plan: syntax pass, semantic fail, same text twice."""
    _real_terraform()
    task = TASKS["terraform-011"]
    mutant = next(m.program for m in task.mutants if "each.value" in m.program)
    first = pipeline.evaluate("terraform", task, mutant)
    second = pipeline.evaluate("terraform", task, mutant)
    assert (first["syntax"]["status"], first["semantic"]["status"]) == ("pass", "fail")
    assert "each.value cannot be used in this context" in first["semantic"]["diagnostics"]
    assert "main.tf:" in first["semantic"]["diagnostics"]
    for level in ("syntax", "semantic"):
        assert first[level]["diagnostics"] == second[level]["diagnostics"]
        assert first[level]["log"] == second[level]["log"]


def test_other_providers_fail_syntax_with_an_offline_hint():
    """Only hashicorp/aws is in the mirror; the program is not run against anything downloaded."""
    _real_terraform()
    program = ('provider "aws" {\n  region = "eu-west-1"\n}\n\n'
               'data "external" "probe" {\n  program = ["sh", "-c", "echo {}"]\n}\n')
    out = pipeline.evaluate("terraform", TASKS["terraform-001"], program)
    assert out["syntax"]["status"] == "fail"
    assert "hashicorp/external" in out["syntax"]["diagnostics"]
    assert "only hashicorp/aws" in out["syntax"]["diagnostics"]


def test_version_constraint_excluding_the_mirror_fails_like_init():
    _real_terraform()
    gold = TASKS["terraform-001"].gold.replace('version = "~> 5.0"', 'version = "~> 4.0"')
    out = pipeline.evaluate("terraform", TASKS["terraform-001"], gold)
    assert out["syntax"]["status"] == "fail"
    assert "'~> 4.0' excludes" in out["syntax"]["diagnostics"]


def test_version_constraints():
    version_ok = _module("run_terraform").version_ok
    assert version_ok("~> 5.0", "5.100.0") and version_ok(">= 5.10, < 6.0", "5.100.0")
    assert not version_ok("~> 4.0", "5.100.0") and not version_ok("~> 5.0.1", "5.100.0")
    assert version_ok("5.100.0", "5.100.0") and not version_ok("!= 5.100.0", "5.100.0")


def test_imported_iac_eval_task_is_judged_with_the_document_convention(tmp_path):
    """v0 Rego from IaC-Eval (import future.keywords) on the real plan: gold passes, a false rule fails."""
    _real_terraform()
    tasks = _validator().import_upstream(FIXTURES / "iac_eval_sample.csv").tasks
    path = write_tasks("terraform", tasks[:1], tmp_path)[0]
    task = load_task_file(path, _validator().check_oracle)
    out = pipeline.evaluate("terraform", task, task.gold)
    assert (out["syntax"]["status"], out["semantic"]["status"]) == ("pass", "pass"), out
    unversioned = task.gold.replace('status = "Enabled"', 'status = "Suspended"')
    out = pipeline.evaluate("terraform", task, unversioned)
    assert out["semantic"]["status"] == "fail"
    assert "rule 'has_versioning' is false" in out["semantic"]["diagnostics"]
    dropped = next(m["program"] for m in tasks[0]["mutants"] if m["note"].startswith("resource "))
    out = pipeline.evaluate("terraform", task, dropped)                  # still plans: the policy kills it
    assert (out["syntax"]["status"], out["semantic"]["status"]) == ("pass", "fail"), out


def test_policy_expected_values_go_to_expected_not_diagnostics():
    """Refinement feeds diagnostics back to the model: what a deny message says the policy expected stays out."""
    _real_terraform()
    task = TASKS["terraform-001"]
    wrong = task.gold.replace('bucket = "acme-build-artifacts"', 'bucket = "acme-artifacts"')
    sem = pipeline.evaluate("terraform", task, wrong)["semantic"]
    assert sem["status"] == "fail"
    assert sem["diagnostics"] == "bucket is named acme-artifacts (terraform plan JSON)"
    assert "acme-build-artifacts" not in sem["diagnostics"]
    assert sem["expected"] == "bucket is named acme-artifacts, expected acme-build-artifacts"
    # a semantic mutant of task 009: the missing subnet's values are the policy's, not the program's
    task = TASKS["terraform-009"]
    mutant = next(m.program for m in task.mutants if m.level == "semantic")
    sem = pipeline.evaluate("terraform", task, mutant)["semantic"]
    assert sem["status"] == "fail" and sem["diagnostics"].startswith("missing subnet (cidr, zone, Tier, public IP) (+")
    assert "10.20.10.0/24" not in sem["diagnostics"] and "10.20.10.0/24" in sem["expected"]


def test_deny_messages_split_into_what_and_expected():
    split = _module("run_terraform").split_expected
    assert split("instance_type is t3.large, expected t3.micro") == \
        ("instance_type is t3.large", "instance_type is t3.large, expected t3.micro")
    assert split("the aws provider sets no region (expected eu-west-1)")[0] == "the aws provider sets no region"
    assert split("expected 6 subnets, found 5")[0] == "found 5 subnets (wrong number)"
    assert split("expected exactly one aws_instance")[0] == "wrong number of aws_instance"
    assert split("missing subnet (cidr, zone): [\"10.0.0.0/24\", \"a\"]")[0] == "missing subnet (cidr, zone)"
    assert split("key rotation is not enabled") == ("key rotation is not enabled", "")


# --- oracle spec --------------------------------------------------------------------------------

def _task_dict(**oracle):
    data = yaml.safe_load((ROOT / "data" / "tasks" / "terraform" / "terraform-007.yaml").read_text())
    data["id"] = "terraform-900"
    data["oracle"] = oracle
    return data


@pytest.mark.parametrize("oracle, field, words", [
    ({"policy": "package t\nimport rego.v1\ndeny contains m if { m := }\n"}, "oracle.policy", "does not compile"),
    ({"policy": "deny contains 1 if true\n"}, "oracle.policy", "no package line"),
    ({"policy": "package t\nimport rego.v1\nallow := true\n"}, "oracle.policy", "no rule 'deny'"),
    ({"policy": "package t\nimport rego.v1\ndeny contains 1 if false\n", "rule": "Not A Rule"}, "oracle.rule", "boolean rule"),
    ({"policy": "package t\nimport rego.v1\ndeny contains 1 if false\n", "vars": ["x"]}, "oracle.vars", "map variable"),
    ({"policy": "package t\nimport rego.v1\ndeny contains 1 if false\n", "modules": {"../up": {"main.tf": ""}}},
     "oracle.modules.../up", "relative folder"),
    ({"policy": "package t\nimport rego.v1\ndeny contains 1 if false\n", "inputs": [1]}, "oracle.inputs", "unknown key"),
])
def test_malformed_oracle_is_rejected_with_file_line_and_field(tmp_path, oracle, field, words):
    folder = tmp_path / "terraform"
    folder.mkdir()
    path = folder / "terraform-900.yaml"
    path.write_text(dump_task(_task_dict(**oracle)))
    with pytest.raises(TaskError) as err:
        load_task_file(path, _validator().check_oracle)
    assert err.value.field == field and words in err.value.message
    assert err.value.line and err.value.line > 1 and "terraform-900.yaml" in err.value.path


def test_policy_compile_errors_point_at_the_policy_line(tmp_path):
    folder = tmp_path / "terraform"
    folder.mkdir()
    path = folder / "terraform-900.yaml"
    path.write_text(dump_task(_task_dict(policy="package t\nimport rego.v1\n\ndeny contains m if { m := }\n")))
    with pytest.raises(TaskError) as err:
        load_task_file(path, _validator().check_oracle)
    assert "policy line 4:" in err.value.message


# --- upstream: IaC-Eval ---------------------------------------------------------------------------

def test_iac_eval_loader_maps_fields_and_skips_unconvertible_records(tmp_path):
    tc = _validator()
    made = tc.import_upstream(FIXTURES / "iac_eval_sample.csv")
    tasks = made.tasks
    assert [t["id"] for t in tasks] == ["terraform-iaceval-iac-eval-sample-0001", "terraform-iaceval-iac-eval-sample-0002"]
    first, second = tasks
    assert first["instruction"].startswith("Create an S3 bucket called example-iac-logs")
    assert 'bucket = "example-iac-logs"' in first["gold"]
    assert first["oracle"]["rule"] == "document" and "has_versioning" in first["oracle"]["policy"]
    assert (first["difficulty"], second["difficulty"]) == ("easy", "medium")
    assert first["constructs"] == ["aws_s3_bucket", "aws_s3_bucket_versioning"]
    assert first["provenance"] == {"source": "upstream", "benchmark": "IaC-Eval", "upstream_id": "iac_eval_sample:1",
                                   "licence": first["provenance"]["licence"]}
    assert first["split"] == "test"
    # semantic slips of the reference, one of each kind; the bucket the versioning refers to is never dropped
    notes = sorted(m["note"] for m in first["mutants"])
    assert notes == ['aws_s3_bucket_versioning.logs status = "Enabled" changed to "Enabled-changed"',
                     "aws_s3_bucket_versioning.logs status dropped", "resource aws_s3_bucket_versioning.logs dropped"]
    assert all(m["level"] == "semantic" and m["program"] != first["gold"] for m in first["mutants"])
    assert tc.import_upstream(FIXTURES / "iac_eval_sample.csv").tasks[0]["mutants"] == first["mutants"]
    # record 3 has a Rego intent without a package line: skipped, with the record named
    [skip] = made.skipped
    assert "record 3" in skip.record and skip.reason == "policy_unusable" and "package" in skip.detail
    written = write_tasks("terraform", tasks, tmp_path)          # loads every file back strictly
    assert [p.name for p in written] == [f"{t['id']}.yaml" for t in tasks]
    assert load_task_file(written[1], tc.check_oracle).oracle["rule"] == "document"


def test_iac_eval_reference_that_needs_the_outside_world_is_skipped_and_mutants_touch_only_what_the_text_names():
    """A reference reading a file the dataset does not ship, or pinning an aws provider the offline
    mirror does not hold, is skipped with its reason: its gold would be judged wrong here. Mutants
    change only what the prompt or intent states: the free `visibility_timeout_seconds = 45` stays."""
    made = _validator().import_upstream(FIXTURES / "iac_eval_outside.csv")
    assert [(s.record.split(" (")[0], s.reason) for s in made.skipped] == [
        ("iac_eval_outside.csv record 1", "needs_local_file"), ("iac_eval_outside.csv record 2", "provider_version_unavailable")]
    assert 'file("~/.ssh/id_ed25519.pub")' in made.skipped[0].detail and "'~> 4.60'" in made.skipped[1].detail
    [task] = made.tasks
    assert sorted(m["note"] for m in task["mutants"]) == [
        "aws_sqs_queue.jobs message_retention_seconds = 3600 changed to 3599",   # a stated number goes down
        "aws_sqs_queue.jobs name dropped"]                                        # its value is stated
    sample = _validator().import_upstream(FIXTURES / "iac_eval_sample.csv").tasks[1]
    assert not any("example-events" in m["note"] for m in sample["mutants"])     # a name the prompt leaves free


def test_a_plan_that_must_read_aws_is_unavailable_not_failed():
    """Offline, a data source that reads the live account (an AMI lookup) cannot plan: the semantic
    level is `unavailable` (needs_network), never a guess. Terraform's own `address` decides: a
    postcondition whose message imitates a network error is still the program's failure."""
    _real_terraform()
    task = TASKS["terraform-001"]
    lookup = task.gold + ('\ndata "aws_ami" "linux" {\n  most_recent = true\n  owners      = ["amazon"]\n}\n\n'
                          'output "ami" {\n  value = data.aws_ami.linux.id\n}\n')
    out = pipeline.evaluate("terraform", task, lookup)
    assert out["syntax"]["status"] == "pass", out
    sem = out["semantic"]
    assert (sem["status"], sem["reason"]) == ("unavailable", "needs_network"), sem
    assert "data.aws_ami.linux" in sem["diagnostics"]
    regionless = lookup[lookup.index('data "aws_ami"'):]        # no provider block: no region to ask either
    assert 'provider "aws"' not in regionless
    sem = pipeline.evaluate("terraform", task, regionless)["semantic"]
    assert (sem["status"], sem["reason"]) == ("unavailable", "needs_network"), sem
    posing = task.gold + ('\ndata "aws_region" "here" {\n  lifecycle {\n    postcondition {\n      condition     = self.name == "mars-1"\n'
                          '      error_message = "request send failed: dial tcp: network is unreachable"\n    }\n  }\n}\n')
    sem = pipeline.evaluate("terraform", task, posing)["semantic"]
    assert sem["status"] == "fail", sem


def test_iac_eval_malformed_record_is_named_and_skipped():
    """One bad record is skipped with its name and reason; the others are still imported."""
    made = _validator().import_upstream(FIXTURES / "iac_eval_bad_difficulty.csv")
    bad = [s for s in made.skipped if s.reason == "malformed_record"]
    assert [s.record for s in bad] == ["iac_eval_bad_difficulty.csv record 2 (Resource 'aws_vpc')"]
    assert "Difficulty" in bad[0].detail
    with pytest.raises(ValueError, match="missing column.*Rego intent"):
        _validator().import_upstream(FIXTURES / "iac_eval_missing_column.csv")


# --- fallback without terraform ----------------------------------------------------------------------

def test_fallback_parser_is_used_and_recorded_without_terraform(fallback):
    probe = toolchains.probe("terraform")
    assert probe.available and "python-hcl2 fallback" in probe.toolchain
    assert "pseudo plan" in probe.dialect
    task = TASKS["terraform-010"]          # for_each over a local map, then over a resource map
    out = pipeline.evaluate("terraform", task, task.gold)
    assert (out["syntax"]["status"], out["semantic"]["status"]) == ("pass", "pass"), out
    assert out["syntax"]["diagnostics"].startswith("[python-hcl2 fallback")
    assert "pseudo plan from the parsed configuration" in out["semantic"]["diagnostics"]
    semantic = next(m.program for m in task.mutants if m.level == "semantic")
    assert pipeline.evaluate("terraform", task, semantic)["semantic"]["status"] == "fail"
    out = pipeline.evaluate("terraform", TASKS["terraform-020"],
                            next(m.program for m in TASKS["terraform-020"].mutants if 'type    = "string"' in m.program))
    assert out["syntax"]["status"] == "fail" and "quoted type constraints" in out["syntax"]["diagnostics"]
    out = pipeline.evaluate("terraform", task, task.gold.replace("resource \"aws_vpc\" \"main\" {", "resource \"aws_vpc\" {"))
    assert out["syntax"]["status"] == "fail"


def test_refers_in_follows_each_value_of_a_for_each_over_the_resource():
    """terraform-015: `for_each = aws_iam_user.u` with `user = each.value.name` refers to the user
    resource; `each.key` (a plain string) does not."""
    _real_terraform()
    task = TASKS["terraform-015"]
    program = task.equivalents[0].program
    assert "for_each = aws_iam_user.u" in program and "each.value.name" in program
    assert pipeline.evaluate("terraform", task, program)["semantic"]["status"] == "pass"
    by_key = program.replace("user     = each.value.name", "user     = each.key")
    sem = pipeline.evaluate("terraform", task, by_key)["semantic"]
    assert sem["status"] == "fail" and "do not refer to the user resource" in sem["diagnostics"]


def test_policies_calling_builtins_regopy_does_not_evaluate_are_refused():
    """regopy gives undefined for net.cidr_* where OPA computes a value: such a rule would come out false
    for a correct program, so the policy is refused (an imported record is skipped as policy_unusable)."""
    policy_problems = _module("validator").policy_problems
    cidr = 'package terraform.validation\n\ndefault valid := false\n\nvalid {\n    net.cidr_is_valid("10.0.0.0/16")\n}\n'
    assert policy_problems(cidr, "document") == [
        "calls net.cidr_is_valid (line 6), which regopy does not evaluate (it gives undefined where OPA computes a value)"]
    assert policy_problems(cidr.replace('net.cidr_is_valid("10.0.0.0/16")', 'startswith("10.0", "10")'), "document") == []
