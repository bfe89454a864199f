"""The one extraction rule and the one prompt template."""
from dslbench import toolchains
from dslbench.prompting import build_messages, extract_program
from dslbench.tasks import load_tasks

ALIASES = ("verilog", "sv")


def test_tagged_fence_wins_over_earlier_untagged():
    raw = "Here:\n```\nnot this\n```\nand\n```verilog\nmodule m; endmodule\n```\n"
    assert extract_program(raw, ALIASES) == ("module m; endmodule", "tagged-fence")


def test_any_fence_then_whole_output():
    assert extract_program("x\n```python\nprint(1)\n```", ALIASES) == ("print(1)", "any-fence")
    assert extract_program("  CCO \n", ALIASES) == ("CCO", "whole-output")
    assert extract_program("", ALIASES) == ("", "whole-output")


def test_unterminated_fence_runs_to_end():
    assert extract_program("```sv\nmodule m;\nendmodule", ALIASES) == ("module m;\nendmodule", "tagged-fence")


def test_prompt_contains_instruction_context_and_rules():
    task = next(t for t in load_tasks(["jq"])["jq"] if t.context)
    msgs = build_messages(task, toolchains.get("jq"))
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert task.instruction.strip() in user
    assert all(name in user for name in task.context)
    assert "```jq" in user and "jq 1.8" in user
