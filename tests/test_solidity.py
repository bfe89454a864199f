"""Solidity validator on the real toolchain (solc-js + py-evm): diagnostics, oracle strictness,
interface checks, hostile programs and the SolEval upstream loader. The full self-check of the
bundled tasks runs in test_validators.py."""
import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

from dslbench import pipeline, toolchains, upstream
from dslbench.tasks import TaskError, load_task_file, load_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "solidity"


@pytest.fixture(scope="module")
def tc():
    probe = toolchains.probe("solidity")
    if not probe.available:
        pytest.skip(f"solidity toolchain unavailable here: {probe.reason}")
    return toolchains.get("solidity")


def task(task_id: str):
    return next(t for t in load_tasks(["solidity"])["solidity"] if t.id == task_id)


def test_probe_names_compiler_and_evm(tc):
    probe = toolchains.probe("solidity")
    assert "solc-js 0.8.37 (node v" in probe.version
    assert "eth-tester 0.14.0b1 + py-evm 0.12.1b1" in probe.version
    assert "prague" in probe.dialect


def test_syntax_reports_first_error_with_location_and_keeps_warnings(tc):
    t = task("solidity-001")
    bad = t.gold.replace("count += amount;", "count += amount")
    out = pipeline.evaluate("solidity", t, bad)
    assert out["syntax"]["status"] == "fail"
    assert out["syntax"]["diagnostics"].startswith("ParserError: Expected ';'")
    assert "(program.sol:" in out["syntax"]["diagnostics"]
    # A missing pragma is only a warning: the program compiles, the warning is recorded.
    no_pragma = t.gold.replace("pragma solidity ^0.8.20;\n", "")
    out = pipeline.evaluate("solidity", t, no_pragma)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "pass"
    assert "warning" in out["syntax"]["diagnostics"] and "pragma" in out["syntax"]["diagnostics"]


def test_old_compiler_pragma_is_a_syntax_failure(tc):
    t = task("solidity-001")
    out = pipeline.evaluate("solidity", t, t.gold.replace("^0.8.20", "^0.4.24"))
    assert out["syntax"]["status"] == "fail"
    assert "requires different compiler version" in out["syntax"]["diagnostics"] \
        or "invalid solc version" in out["syntax"]["diagnostics"]  # the same refusal when forge judges


def test_interface_must_match_the_specification(tc):
    t = task("solidity-008")
    narrowed = t.gold.replace("function transfer(address to, uint256 amount)", "function transfer(address to, uint128 amount)")
    out = pipeline.evaluate("solidity", t, narrowed)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "fail"
    assert ("has no function transfer with the specified parameter types (it has transfer(address,uint128))"
            in out["semantic"]["diagnostics"])
    assert "transfer(address,uint256)" not in out["semantic"]["diagnostics"]
    assert "SimpleToken has a function transfer(address,uint256)" in out["semantic"]["expected"]
    renamed = t.gold.replace("contract SimpleToken", "contract Token")
    out = pipeline.evaluate("solidity", t, renamed)
    assert "contract SimpleToken is not defined (the program defines: Token)" in out["semantic"]["diagnostics"]


def test_non_terminating_code_fails_by_gas_not_by_hanging(tc):
    t = task("solidity-001")
    spin = t.gold.replace("count += 1;", "while (true) { count += 1; }")
    started = time.monotonic()
    out = pipeline.evaluate("solidity", t, spin)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "fail"
    assert "OutOfGas" in out["semantic"]["diagnostics"]
    assert time.monotonic() - started < 60


def test_a_gold_that_contradicts_its_oracle_is_an_error_not_a_verdict(tc):
    t = task("solidity-005")
    oracle = json.loads(json.dumps(t.oracle))
    oracle["scenarios"][0]["steps"][2]["returns"] = [251]
    broken = dataclasses.replace(t, oracle=oracle)
    out = pipeline.evaluate("solidity", broken, t.gold)
    assert out["semantic"]["status"] == "error"
    assert "the gold does not meet the oracle" in out["semantic"]["diagnostics"]
    assert "returned [250]" in out["semantic"]["diagnostics"] and "[251]" not in out["semantic"]["diagnostics"]
    assert "expected [251]" in out["semantic"]["expected"]


def test_expected_values_are_kept_out_of_the_diagnostics(tc):
    # The refinement loop feeds diagnostics back to the model: the scenario's expected values go to `expected`.
    t = task("solidity-005")
    m = [m for m in t.mutants if m.level == "semantic"][0]          # divides before it multiplies
    out = pipeline.evaluate("solidity", t, m.program)
    sem = out["semantic"]
    assert sem["status"] == "fail"
    assert "returned [1001, 0]" in sem["diagnostics"]              # the candidate's own output stays
    assert "976" not in sem["diagnostics"] and "expected" not in sem["diagnostics"]
    assert "step 7 (call split from $0): expected [976, 25]" in sem["expected"]


def test_verdicts_are_reproducible(tc):
    t = task("solidity-011")
    m = next(m for m in t.mutants if m.level == "semantic")
    a = pipeline.evaluate("solidity", t, m.program)
    b = pipeline.evaluate("solidity", t, m.program)
    for level in ("syntax", "semantic"):
        assert a[level]["status"] == b[level]["status"]
        assert a[level]["diagnostics"] == b[level]["diagnostics"]
        assert a[level]["log"] == b[level]["log"]
        assert "/tmp/dslbench" not in a[level]["log"]


@pytest.mark.parametrize("mutate, field, message", [
    (lambda o: o.pop("contract"), "contract", "name of the contract under test"),
    (lambda o: o["scenarios"][0]["steps"].insert(0, {"call": "count"}), "scenarios[0].steps[0]",
     "first step of a scenario must be a deploy"),
    (lambda o: o["scenarios"][0]["steps"][1].update({"from": 12}), "scenarios[0].steps[1].from", "account index"),
    (lambda o: o["scenarios"][0]["steps"][1].update({"args": ["$11"]}), "scenarios[0].steps[1].args[0]",
     "unknown reference"),
    (lambda o: o["scenarios"][0]["steps"][2].update({"reverts": {"error": "X"}}), "scenarios[0].steps[2].reverts",
     "cannot also expect returns or events"),
    (lambda o: o["scenarios"][0]["steps"][1].update({"to": "token"}), "scenarios[0].steps[1].to",
     "not deployed earlier"),
    (lambda o: o["scenarios"][1].update({"name": "counts up and down"}), "scenarios[1].name", "duplicate"),
    (lambda o: o.update({"support": ["Missing.sol"]}), "support[0]", "not a .sol context file"),
    (lambda o: o["scenarios"][0]["steps"][1].update({"events": [["Changed"]]}), "scenarios[0].steps[1].events",
     None),
])
def test_check_oracle_is_strict(mutate, field, message):
    tcs = toolchains.get("solidity")
    t = task("solidity-001")
    oracle = json.loads(json.dumps(t.oracle))
    mutate(oracle)
    problems = tcs.check_oracle(dataclasses.replace(t, oracle=oracle))
    if message is None:  # a call step may not expect events (only transactions emit them)
        assert problems and problems[0][0] == "scenarios[0].steps[1].events"
        return
    assert any(f == field and message in m for f, m in problems), problems


def test_malformed_task_file_names_file_line_and_field(tmp_path):
    folder = tmp_path / "solidity"
    folder.mkdir()
    data = yaml.safe_load((Path(task("solidity-001").path)).read_text())
    data["oracle"]["scenarios"][0]["steps"][2]["reverts"] = {"panic": "overflow"}
    path = folder / "solidity-001.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(TaskError) as err:
        load_task_file(path, toolchains.get("solidity").check_oracle)
    assert err.value.field == "oracle.scenarios[0].steps[2].reverts"
    assert err.value.line and err.value.line > 1
    assert "solidity-001.yaml" in str(err.value)


# --- SolEval upstream ------------------------------------------------------------------------------

@pytest.fixture
def soleval(tmp_path):
    root = tmp_path / "SolEval"
    shutil.copytree(FIXTURES / "soleval", root)
    return root


def test_soleval_loader_maps_function_records(soleval):
    tcs = toolchains.get("solidity")
    made = tcs.import_upstream(soleval)
    tasks = made.tasks
    assert [t["id"] for t in tasks] == [f"solidity-soleval-000{i}" for i in (1, 2, 3, 4, 5)]
    t = tasks[0]
    assert t["provenance"] == {"source": "upstream", "benchmark": "SolEval", "licence": "MIT",
                               "upstream_id": "/root/demo-vault/contracts/Vault.sol::Vault.deposit"}
    assert t["gold"].startswith("function deposit() external payable returns (uint256 credited) {")
    assert "credits the rest as shares" in t["instruction"]
    assert "function deposit() external  payable returns (uint256 credited)" in t["instruction"]
    o = t["oracle"]
    assert o["kind"] == "repository" and o["file"] == "contracts/Vault.sol" and o["unit"] == "Vault.sol"
    assert o["project"] == "" and o["match_path"] == "test/Vault.t.sol" and o["lines"] == "19-24"
    assert o["tests"] == "forge test --match-path test/Vault.t.sol in demo-vault (test/Vault.t.sol)"
    assert Path(o["repository"]) == (soleval / "repository" / "demo-vault").resolve()
    context = t["context"]["Vault.sol"]
    assert context.count(o["marker"]) == 1 and "function deposit()" not in context
    assert "function sweep" in context and t["failure_modes"] == []
    # one slip of each kind the body has, in the body only (not the signature)
    assert [m["note"] for m in t["mutants"]] == ["arithmetic: - -> + (line 3)"]
    assert "credited = msg.value + fee;" in t["mutants"][0]["program"]
    assert [m["note"] for m in tasks[1]["mutants"]] == ["arithmetic: + -> - (line 2)", "constant: 1000 -> 1001 (line 2)"]
    skipped = {s.record: s for s in made.skipped}
    assert {r: s.reason for r, s in skipped.items()} == {
        "/root/demo-vault/contracts/Vault.sol::Vault.Unauthorized": "not_a_function",
        "/root/demo-vault/contracts/Vault.sol::Vault.sweep": "no_comment",
        "/root/demo-vault/contracts/Vault.sol::Vault.withdraw": "no_context",
        "/root/missing-repo/contracts/Gone.sol::Gone.ping": "no_context",
        "/root/demo-ledger/lib/demo-ledger/src/OldLedger.sol::OldLedger.credit": "compiler_version",
        "/root/demo-ledger/lib/demo-ledger/src/Pinned.sol::Pinned.twice": "compiler_version",
        "/root/demo-ledger/lib/demo-ledger/src/Ledger.sol::Ledger.reset": "not_tested",
        "/root/demo-ledger/lib/demo-ledger/src/Notes.sol::Notes.write": "no_test",
        "/root/demo-proxy/lib/demo-proxy/src/Names.sol::Names.artifact": "needs_ffi"}
    ledger = "/root/demo-ledger/lib/demo-ledger/src/"
    assert skipped[ledger + "OldLedger.sol::OldLedger.credit"].detail == (
        "lib/demo-ledger/src/OldLedger.sol asks for solc ^0.6.0; every task is judged by solc 0.8.37")
    assert skipped[ledger + "Pinned.sol::Pinned.twice"].detail == (
        "its test test/Pinned.t.sol asks for solc 0.8.19; every task is judged by solc 0.8.37")
    assert skipped[ledger + "Ledger.sol::Ledger.reset"].detail.startswith(
        "test/Ledger.t.sol in demo-ledger/lib/demo-ledger never name reset")
    assert skipped[ledger + "Notes.sol::Notes.write"].detail.startswith(
        "no forge test Notes.t.sol in demo-ledger/lib/demo-ledger")
    # its package.json runs its tests with --ffi (as openzeppelin-foundry-upgrades does), which the judge turns off
    assert skipped["/root/demo-proxy/lib/demo-proxy/src/Names.sol::Names.artifact"].detail == (
        "the tests of demo-proxy/lib/demo-proxy need ffi (its package.json script 'forge:test' runs "
        "`FOUNDRY_PROFILE=default forge test -vvv --ffi --force`), which the judge turns off: a candidate could "
        "start programs through it")
    assert "not a function" in skipped["/root/demo-vault/contracts/Vault.sol::Vault.Unauthorized"].detail
    assert "do not hold function withdraw" in skipped["/root/demo-vault/contracts/Vault.sol::Vault.withdraw"].detail
    assert "no resolvable contract context" in skipped["/root/missing-repo/contracts/Gone.sol::Gone.ping"].detail
    # The dataset file itself works as the source too.
    assert tcs.import_upstream(soleval / "data" / "dataset.json").tasks[0]["oracle"] == o


def test_soleval_tasks_load_strictly_and_compile_in_the_repository(soleval, tmp_path, tc):
    written = upstream.import_upstream("solidity", soleval, tmp_path / "out").written
    assert [p.name for p in written][:2] == ["solidity-soleval-0001.yaml", "solidity-soleval-0002.yaml"]
    t = load_task_file(written[0], tc.check_oracle)
    out = pipeline.evaluate("solidity", t, t.gold)
    assert out["syntax"]["status"] == "pass", out["syntax"]
    assert out["syntax"]["diagnostics"].startswith("deposit spliced into contracts/Vault.sol: compiles")
    # the semantic level is SolEval's own: the project's forge test, with a fixed fuzz seed
    assert out["semantic"]["status"] == "pass", out["semantic"]
    assert out["semantic"]["diagnostics"] == "1 test(s) of test/Vault.t.sol pass"
    assert " test --root project --offline " in out["semantic"]["command"] and "--fuzz-seed 0" in out["semantic"]["command"]
    # the verdict's judge is the paper's kind (the repository's own tests), not the scenario stand-in
    assert out["probe"]["stand_in_for"] == "" and toolchains.probe("solidity").stand_in_for.startswith("Foundry")
    kept_fee = t.gold.replace("credited = msg.value - fee;", "credited = msg.value;")
    out = pipeline.evaluate("solidity", t, kept_fee)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "fail"
    assert out["semantic"]["diagnostics"] == "1 of 1 test(s) of test/Vault.t.sol fail: VaultTest.testDepositKeepsTheFee() (credited)"
    wrong = t.gold.replace("Fees.cut(msg.value, FEE_BPS)", "Fees.cut(msg.value)")
    out = pipeline.evaluate("solidity", t, wrong)
    assert out["syntax"]["status"] == "fail" and "TypeError" in out["syntax"]["diagnostics"]
    moved = dataclasses.replace(t, oracle={**t.oracle, "repository": str(tmp_path / "nowhere")})
    out = pipeline.evaluate("solidity", moved, t.gold)
    assert out["syntax"]["status"] == "unavailable" and "not on this machine" in out["syntax"]["diagnostics"]


def test_soleval_nested_project_resolves_imports_as_forge_does(soleval, tmp_path, tc):
    """SolEval unpacks each upstream project as lib/<project>/ of a wrapper: the project's own
    remappings.txt and forge's automatic `<dependency>/=lib/<dependency>/src/` must resolve its imports."""
    written = upstream.import_upstream("solidity", soleval, tmp_path / "out").written
    t = load_task_file(written[1], tc.check_oracle)
    assert t.oracle["file"] == "lib/demo-ledger/src/Ledger.sol" and t.title == "Ledger.credit (demo-ledger)"
    out = pipeline.evaluate("solidity", t, t.gold)
    assert out["syntax"]["status"] == "pass", out["syntax"]
    assert out["semantic"]["status"] == "pass" and out["semantic"]["diagnostics"] == "2 test(s) of Ledger.t.sol pass"
    # the project's sources for other compilers (its 0.6 file, a test pinned to 0.8.19) stay out of the build
    assert out["semantic"]["command"].endswith("--skip src/OldLedger.sol --skip test/Pinned.t.sol")
    out = pipeline.evaluate("solidity", t, t.gold.replace("Units.CENT", "Units.DIME"))
    assert out["syntax"]["status"] == "fail" and "DIME" in out["syntax"]["diagnostics"]
    out = pipeline.evaluate("solidity", t, t.gold.replace("1000", "100"))
    assert out["semantic"]["status"] == "fail"
    assert "LedgerTest.testCreditClampsAtOneThousand(uint256) (clamped)" in out["semantic"]["diagnostics"]
    # A candidate is untrusted: it may not start programs through forge's ffi cheatcode, although the
    # project's foundry.toml allows it.
    ffi = t.gold.replace("cents[who] = total;", 'cents[who] = total;\n        string[] memory cmd = new string[](1);\n'
                         '        cmd[0] = "true";\n        (bool ran,) = address(0x7109709ECfa91a80626fF3989D68f67F5b1DD12D)'
                         '.call(abi.encodeWithSignature("ffi(string[])", cmd));\n        require(ran, "ffi refused");')
    out = pipeline.evaluate("solidity", t, ffi)
    assert out["syntax"]["status"] == "pass" and out["semantic"]["status"] == "fail"
    assert "(ffi refused)" in out["semantic"]["diagnostics"]
    for m in t.mutants:     # the project's tests kill each generated slip
        out = pipeline.evaluate("solidity", t, m.program)
        assert (out["syntax"]["status"], out["semantic"]["status"]) == ("pass", "fail"), (m.note, out["semantic"])
    # An import line is candidate text: a file outside the task's repository is never staged.
    (soleval / "repository" / "Outside.sol").write_text("library Outside { uint256 internal constant X = 1; }\n")
    validator = sys.modules[type(tc).__module__]
    repo, stage = Path(t.oracle["repository"]), tmp_path / "stage"
    remappings = validator.project_remappings(repo, validator.projects(repo, t.oracle["file"]))
    assert remappings == ["units-08/=lib/demo-ledger/lib/units-08/contracts/"]
    validator._stage_imports('import "lib/../../Outside.sol";\nimport "../../Outside.sol";\nimport "units-08/Units.sol";',
                             t.oracle["file"], repo, remappings, stage)
    assert [f.relative_to(stage).as_posix() for f in stage.rglob("*.sol")] == [
        "lib/demo-ledger/lib/units-08/contracts/Units.sol"]


def test_soleval_pure_library_function_is_also_compared_with_the_gold(soleval, tmp_path, tc):
    """The project's tests leave gaps: an internal pure library function is also called beside the gold
    on fuzzed inputs (same reverts, same results, same memory arguments after the call)."""
    made = toolchains.get("solidity").import_upstream(soleval).tasks
    checks = {t["title"]: t["oracle"].get("same_as_gold") for t in made}
    assert checks == {"Vault.deposit (demo-vault)": None, "Ledger.credit (demo-ledger)": None,   # contracts
                      "Shares.split (demo-ledger)": {"library": "Shares", "parameters": ["uint256", "uint256"],
                                                     "results": ["uint256", "uint256"]},
                      "Shares.halve (demo-ledger)": {"library": "Shares", "parameters": ["uint256[] memory"],
                                                     "results": []},
                      "Shares.mix (demo-ledger)": {"library": "Shares", "parameters": ["uint8"], "results": ["bytes32"]}}
    written = upstream.import_upstream("solidity", soleval, tmp_path / "out").written
    split, halve, mix = (load_task_file(written[i], tc.check_oracle) for i in (2, 3, 4))
    out = pipeline.evaluate("solidity", split, split.gold)
    assert out["semantic"]["status"] == "pass", out["semantic"]
    assert out["semantic"]["diagnostics"] == ("3 test(s) of Shares.t.sol pass; it behaves as the gold on 1000 fuzzed "
                                              "inputs and at the integer parameters' powers of two")
    assert "**/{Shares.t.sol,DslbenchSameAsGold.t.sol}" in out["semantic"]["command"]
    # the project's test checks the fee only: a wrong rest passes it, and the comparison catches it
    out = pipeline.evaluate("solidity", split, split.gold.replace("rest = amount - fee;", "rest = amount - fee / 2;"))
    assert out["semantic"]["status"] == "fail"
    assert out["semantic"]["diagnostics"].startswith("3 test(s) of Shares.t.sol pass, but split differs from the "
                                                     "gold on fuzzed inputs (")
    assert out["semantic"]["diagnostics"].endswith("): other results than the gold (values returned or memory arguments)")
    out = pipeline.evaluate("solidity", split, split.gold.replace("if (bps > 10000) revert FeeTooHigh(bps);", ""))
    assert out["semantic"]["status"] == "fail" and out["semantic"]["diagnostics"].endswith(": returns where the gold reverts")
    # a difference at one exact input (2^77 + 1) random inputs never hit: the sweep of powers of two does
    odd = split.gold.replace("rest = amount - fee;", "rest = amount - fee;\n        if (amount >> 77 == 1 && amount & 0xff == 1) rest = 0;")
    out = pipeline.evaluate("solidity", split, odd)
    assert out["semantic"]["status"] == "fail", out["semantic"]
    assert out["semantic"]["diagnostics"] == (
        "3 test(s) of Shares.t.sol pass, but split differs from the gold at a boundary input "
        f"(a0 = {2 ** 77 + 1}): other results than the gold (values returned or memory arguments)")
    # halve returns nothing: what it leaves in its memory argument is compared
    out = pipeline.evaluate("solidity", halve, halve.gold.replace("i < values.length", "i + 1 < values.length"))
    assert out["semantic"]["status"] == "fail", out["semantic"]
    assert "3 test(s) of Shares.t.sol pass, but halve differs" in out["semantic"]["diagnostics"]
    # Whether costly code runs out of gas depends on the gas a call gets: both calls get the same, so the
    # gold agrees with itself (the project's gas limit is 10M; mix(100) needs more, mix(50) half of it).
    out = pipeline.evaluate("solidity", mix, mix.gold)
    assert out["semantic"]["status"] == "pass", out["semantic"]
    for m in split.mutants + halve.mutants:     # what the project's tests miss, the comparison kills
        out = pipeline.evaluate("solidity", split if m in split.mutants else halve, m.program)
        assert (out["syntax"]["status"], out["semantic"]["status"]) == ("pass", "fail"), (m.note, out["semantic"])
    # a type forge cannot fuzz, or a function that reads its call frame, is left to the project's tests
    loader = sys.modules["dslbench.plugins.solidity.soleval"]
    library = "library L {}"
    assert loader.same_as_gold("function f(S memory s) internal pure returns (uint256) {}", library, "L") is None
    assert loader.same_as_gold("function f() internal pure returns (bytes4) { return msg.sig; }", library, "L") is None
    assert loader.same_as_gold("function f(uint256 x) internal view returns (uint256) {}", library, "L") is None
    assert loader.same_as_gold("function f(uint256 x) private pure returns (uint256) {}", library, "L") is None
    assert loader.same_as_gold("function f(address payable a) internal pure returns (bool) {}", library, "L") is None
    assert loader.same_as_gold("function f(uint256 x) internal pure returns (uint256) {}", "contract L {}", "L") is None
    assert loader.same_as_gold("function f(bytes calldata b, uint8[3] memory k) internal pure returns (bytes32) {}",
                               library, "L") == {"library": "L", "parameters": ["bytes calldata", "uint8[3] memory"],
                                                 "results": ["bytes32"]}


def test_boundary_sweep_names_the_input_as_the_parameter_holds_it(tc):
    """The sweep reports (parameter, k, variant); the input is 2^k - 1, 2^k or 2^k + 1, negated for
    variants 3-5, cut to the parameter's width as Solidity's conversion cuts it."""
    validator = sys.modules["dslbench.plugins.solidity.validator"]

    def named(reason, typ):
        return validator._boundary_input(reason, {"parameters": ["bytes memory", typ]})
    assert named('DiffersAtBound("r", 1, 39, 1)', "int256") == "at a boundary input (a1 = 549755813888): r"
    assert named('DiffersAtBound("r", 1, 39, 4)', "int256") == "at a boundary input (a1 = -549755813888): r"
    assert named('DiffersAtBound("r", 1, 39, 4)', "int40") == "at a boundary input (a1 = -549755813888): r"
    assert named('DiffersAtBound("r", 1, 39, 1)', "int40") == "at a boundary input (a1 = -549755813888): r"  # wraps
    assert named('DiffersAtBound("r", 1, 8, 0)', "uint8") == "at a boundary input (a1 = 255): r"
    assert named('DiffersAtBound("r", 1, 256, 2)', "uint") == "at a boundary input (a1 = 1): r"
    assert named("EvmError: OutOfGas", "uint8") == "at a boundary input: EvmError: OutOfGas"
    # only integer parameters are swept, and only where the sweep's locals fit on the stack
    assert "a0 = uint8(_unsignedBound(k, j));" in validator._boundary_sweep({"parameters": ["uint8", "bytes memory"]})
    assert "a1 =" not in validator._boundary_sweep({"parameters": ["uint8", "bytes memory"]})
    assert validator._boundary_sweep({"parameters": ["bytes memory", "address"]}) == ""
    assert validator._boundary_sweep({"parameters": ["uint8"] * 5}) == ""


def test_verify_says_how_many_unavailable_golds_passed_syntax(tmp_path, monkeypatch, capsys):
    """Where the semantic level cannot judge a gold (its oracle's tool missing), --verify still reports
    that the syntax level passed it."""
    import pandas as pd
    from dslbench import cli
    rows = [{"task_id": f"t{i}", "program": "gold", "index": 0, "note": "", "ok": None, "syntax": "pass",
             "syntax_reason": "ok", "syntax_diagnostics": "compiles", "semantic": "unavailable",
             "semantic_reason": "toolchain_missing", "semantic_diagnostics": "forge is not installed"} for i in range(2)]
    monkeypatch.setattr("dslbench.pipeline.selfcheck", lambda dsls: pd.DataFrame(rows))
    monkeypatch.setenv("DSLBENCH_TASKS", str(tmp_path))    # _verify_import points it at the tree: restored after
    (tmp_path / "solidity").mkdir()
    assert cli._verify_import("solidity", tmp_path) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("gold through both levels"))
    assert line == ("gold through both levels: 0/0 pass, 2 unavailable (2: forge is not installed); "
                    "2 of the 2 pass the syntax level")
    report = json.loads((tmp_path / "solidity" / "import_report.json").read_text())
    assert report["verify"]["gold"] == {"judged": 0, "as_expected": 0, "unavailable": 2, "unavailable_syntax_pass": 2}


@pytest.mark.parametrize("pragma, allowed", [
    ("^0.8.4", True), (">=0.8.0 <0.9.0", True), ("^0.7.0 || ^0.8.0", True), ("~0.8.20", True), ("0.8", True),
    ("0.8.37", True), ("^0.6.0", False), ("0.6.12", False), ("<0.7.0", False), ("^0.8.38", False),
    (">=0.6.2 <0.8.0", False), ("~0.7", False)])
def test_soleval_pragma_check_follows_semver(pragma, allowed):
    validator = sys.modules[type(toolchains.get("solidity")).__module__]
    assert validator.pragma_allows(f"pragma solidity {pragma};\ncontract A {{}}\n", "0.8.37") == (allowed, pragma)


def test_soleval_malformed_record_is_named_and_skipped(soleval, tmp_path):
    """One bad record is skipped with its name and reason; the others are still imported."""
    dataset = soleval / "data" / "dataset.json"
    data = json.loads(dataset.read_text())
    del data["/root/demo-vault/contracts/Vault.sol"][1]["body"]
    dataset.write_text(json.dumps(data))
    made = toolchains.get("solidity").import_upstream(soleval)
    bad = [s for s in made.skipped if s.reason == "malformed_record"]
    assert [s.record for s in bad] == ["/root/demo-vault/contracts/Vault.sol[1]"]
    assert "lacks the field 'body'" in bad[0].detail
    dataset.write_text(json.dumps({"x.sol": {"identifier": "f"}}))
    made = toolchains.get("solidity").import_upstream(soleval)
    assert made.tasks == [] and [(s.record, s.reason) for s in made.skipped] == [("x.sol", "malformed_record")]
    assert "record list is a dict" in made.skipped[0].detail
    with pytest.raises(ValueError, match="no data/dataset.json"):
        toolchains.get("solidity").import_upstream(tmp_path / "empty")


@pytest.mark.skipif(not (shutil.which("forge") and shutil.which("solc")),
                    reason="forge and a native solc are not both on PATH here")
def test_forge_judges_syntax_when_it_can(tc):
    forge, note = tc._forge()
    if forge is None:
        pytest.skip(note)
    assert toolchains.probe("solidity").version.startswith(f"forge {forge['forge_version']} with solc")
    t = task("solidity-013")
    out = pipeline.evaluate("solidity", t, t.gold)
    assert out["syntax"]["status"] == out["semantic"]["status"] == "pass"
    assert "via forge" in out["syntax"]["diagnostics"] and out["syntax"]["command"].startswith("forge build")
    bad = next(m for m in t.mutants if m.level == "syntax")
    out = pipeline.evaluate("solidity", t, bad.program)
    assert out["syntax"]["status"] == "fail" and "TypeError" in out["syntax"]["diagnostics"]
