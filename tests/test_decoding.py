"""The decoding protocol (decoding.py): budgets from the golds, the cut after the first tagged block,
the repetition cut, reasoning kept apart; and that the cut never changes what extraction takes."""
from __future__ import annotations

import random

import pytest

from dslbench import decoding, toolchains
from dslbench.decoding import FENCE_CLOSED, REPETITION, StreamCut, cut_reply, split_reasoning, token_budget
from dslbench.prompting import extract_program
from dslbench.tasks import load_tasks

ALL = load_tasks()


def test_budget_from_the_longest_gold_with_margin_floor_and_card_override():
    assert token_budget({}, ["x" * 100]) == (512, "gold")                    # the floor
    longest = 3200                                                            # 1000 tokens at 3.2 chars/token
    budget, source = token_budget({}, ["x" * 10, "x" * longest])
    assert source == "gold" and budget == 2112 and budget % 64 == 0          # 2 x 1000 + 64, rounded up to 64
    assert token_budget({"decoding": {"max_tokens": 700}}, ["x" * longest]) == (700, "card")


def test_every_gold_fits_its_dsls_budget_in_the_embedded_models_tokens():
    from dslbench.local_model import count_tokens
    for dsl, tasks in ALL.items():
        budget, _ = token_budget(toolchains.get(dsl).card, [t.gold for t in tasks])
        worst = max(count_tokens(t.gold) for t in tasks)
        assert worst + 16 <= budget, f"{dsl}: a gold needs {worst} tokens, the budget is {budget}"


def reply_around(program: str, fence: str) -> str:
    return f"Here is the program.\n\n```{fence}\n{program.rstrip()}\n```\n\nIt does what the task asks.\n"


@pytest.mark.parametrize("dsl", sorted(ALL))
def test_golds_survive_the_cut_unchanged(dsl):
    # no gold triggers the repetition rule, and a reply holding it is cut only after its block
    tc = toolchains.get(dsl)
    for task in ALL[dsl]:
        full = reply_around(task.gold, tc.fence)
        cut, why = cut_reply(full, tc.fence_aliases)
        assert why == FENCE_CLOSED, task.id
        assert extract_program(cut, tc.fence_aliases) == extract_program(full, tc.fence_aliases), task.id


EXTRACTION_CASES = {
    "tagged then chatter": "```jq\n.a\n```\nMore text\n```jq\n.b\n```\n",
    "untagged block first": "```\nnot it\n```\n```jq\n.a\n```\ntrailing\n",
    "unclosed untagged block first": "```\nsketch\n```jq\n.a\n```\ntrailing\n",
    "alias tag": "~~~jq\n.a\n~~~\nafter\n",
    "closing fence with more on its line": "```jq\n.a\n```not a close\n.b\n```\nafter\n",
    "closed at the very end": "```jq\n.a\n```",
    "no tagged block": "```python\nprint(1)\n```\nafter\n",
    "nothing fenced": ".a | .b\n",
    "longer fence": "````jq\n```\n.a\n````\nafter\n",
}


@pytest.mark.parametrize("name", sorted(EXTRACTION_CASES))
def test_the_cut_never_changes_the_extracted_program(name):
    text = EXTRACTION_CASES[name]
    cut, why = cut_reply(text, ("jq",))
    assert text.startswith(cut)
    assert extract_program(cut, ("jq",)) == extract_program(text, ("jq",))
    if why is None:
        assert cut == text
    if name in ("closed at the very end", "no tagged block", "nothing fenced"):
        assert why is None


def test_repetition_is_cut_where_it_starts_to_degenerate():
    loop = "```verilog\nmodule m;\n" + "  assign y = a;\n" * 200
    cut, why = cut_reply(loop, ("verilog",))
    assert why == REPETITION and len(cut) < 500 and loop.startswith(cut)
    # a short repeated line, a separator, a table: below the threshold, no cut
    fine = "```latex\n" + "\\hline\n" * 20 + "=" * 80 + "\n```\n"
    assert cut_reply(fine, ("latex",)) == (fine, FENCE_CLOSED)


@pytest.mark.parametrize("seed", range(5))
def test_streaming_stops_where_the_post_hoc_cut_cuts(seed):
    rng = random.Random(seed)
    for text in (EXTRACTION_CASES["tagged then chatter"] * 3,
                 "Intro\n```jq\n" + "def f: 1;\n" * 100,
                 "```jq\n.a\n```\n" + "x" * 50):
        stream, pos, streamed = StreamCut(("jq",)), 0, ""
        while pos < len(text):
            n = rng.randint(1, 6)                  # tokens are a few characters long
            piece, pos = text[pos:pos + n], pos + n
            streamed += piece
            if stream.feed(piece):
                break
        # the stream stops at (or just past) the cut; cutting what it got gives the same text
        assert cut_reply(streamed, ("jq",)) == cut_reply(text, ("jq",))


def test_reasoning_is_split_from_the_answer():
    answer, reasoning = split_reasoning("<think>try ```jq\n.x\n```</think>\n```jq\n.a\n```\n")
    assert answer == "```jq\n.a\n```\n" and "```jq\n.x\n```" in reasoning
    answer, reasoning = split_reasoning("<think>still thinking when the budget ran out ```jq\n.x\n")
    assert answer == "" and reasoning.startswith("still thinking")
    assert split_reasoning("```jq\n.a\n```", "from the provider's field") == ("```jq\n.a\n```", "from the provider's field")

