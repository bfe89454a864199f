"""The decoding protocol, one for every model: the token budget per DSL and where a reply ends.

- Budget: `max_tokens` per DSL from its gold programs (the longest, at CHARS_PER_TOKEN characters per
  token, times BUDGET_MARGIN, plus room for the fences), or the card's `decoding: {max_tokens: N}`,
  or the user's `max_tokens`, in that order of precedence (user first). Recorded in every generation.
- Reasoning: a thinking model's `<think>...</think>` (or the provider's separate reasoning content)
  is kept apart from the answer; only the answer is cut and extracted, both are recorded.
- Cut: a reply ends right after the line that closes its first block tagged with the DSL's fence
  (the block the extraction rule takes), or at the first point where it has repeated one span over
  and over (a degenerate continuation). The embedded model stops generating there; other models'
  replies are cut at the same character, so the recorded text is the same function of the tokens.
"""
from __future__ import annotations

import contextvars
import math
import re

from .prompting import FENCE

CHARS_PER_TOKEN = 3.2     # a conservative characters-per-token for code in the models' tokenizers
BUDGET_MARGIN = 2.0       # room for a longer correct program than the gold
BUDGET_OVERHEAD = 64      # fence lines and a sentence around the block
BUDGET_FLOOR = 512       # the previous fixed budget: no reply that closed its block under it is cut shorter
BUDGET_STEP = 64

# Degenerate repetition: the reply's tail has period L (1 <= L <= MAX_PERIOD) over at least
# max(MIN_REPEATS * L, MIN_REPEATED_CHARS) characters. No gold program comes near it (tested).
MAX_PERIOD = 200
MIN_REPEATS = 4
MIN_REPEATED_CHARS = 400

FENCE_CLOSED = "fence_closed"
REPETITION = "repetition"
PROTOCOL = "first-tagged-fence+repetition-v1"   # stored with cached replies that were cut by it

# The fences of the reply being generated in this thread (set by generation.generate around the
# litellm call), so that the embedded model can stop where cut_reply would cut; None: no early stop.
STREAM_FENCES: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar("stream_fences", default=None)


def token_budget(card: dict, golds: list[str]) -> tuple[int, str]:
    """(max_tokens, where it comes from: "card" or "gold") for a DSL."""
    override = (card.get("decoding") or {}).get("max_tokens")
    if override is not None:
        return int(override), "card"
    longest = max((len(g) for g in golds), default=0)
    tokens = BUDGET_MARGIN * longest / CHARS_PER_TOKEN + BUDGET_OVERHEAD
    return max(BUDGET_FLOOR, BUDGET_STEP * math.ceil(tokens / BUDGET_STEP)), "gold"


_THINK = re.compile(r"<(think|thinking|reasoning)>(.*?)(?:</\1>|\Z)", re.S | re.I)


def split_reasoning(text: str, reasoning: str | None = None) -> tuple[str, str]:
    """(answer, reasoning): thinking blocks are removed from the answer and joined into reasoning.

    An unterminated `<think>` runs to the end: the model never left its reasoning, so no answer.
    """
    parts = [reasoning] if reasoning else []
    parts += [m.group(2).strip() for m in _THINK.finditer(text)]
    return _THINK.sub("", text).lstrip("\n"), "\n\n".join(p for p in parts if p)


def fence_cut(text: str, fences: tuple[str, ...]) -> int | None:
    """Position right after the line closing the block the extraction rule takes, if it is tagged with
    one of the fences and closed by a whole line; else None.

    The extraction rule's own fence pattern is used, so a reply cut here extracts to the same program.
    """
    wanted = {f.lower() for f in fences}
    for m in FENCE.finditer(text):
        tag = m.group(2).strip().split()[0].lower() if m.group(2).strip() else ""
        if tag in wanted:
            # a match ending before the end of the text ended on a closing line; its newline comes next
            return m.end() + 1 if m.end() < len(text) and text[m.end()] == "\n" else None
    return None


class RepetitionGuard:
    """Fed a reply character by character; `cut` is the first position where its tail is degenerate.

    run[L] counts consecutive positions i with text[i] == text[i - L]; period L holds over the last
    run[L] + L characters. Linear in the reply (MAX_PERIOD comparisons per character).
    """

    def __init__(self):
        self.text: list[str] = []
        self.run = [0] * (MAX_PERIOD + 1)
        self.cut: int | None = None

    def feed(self, chunk: str) -> int | None:
        for ch in chunk:
            if self.cut is not None:
                break
            self.text.append(ch)
            i = len(self.text) - 1
            for period in range(1, min(MAX_PERIOD, i) + 1):
                if self.text[i - period] == ch:
                    self.run[period] += 1
                    if self.run[period] + period >= max(MIN_REPEATS * period, MIN_REPEATED_CHARS):
                        self.cut = i + 1
                        break
                else:
                    self.run[period] = 0
        return self.cut


def cut_reply(text: str, fences: tuple[str, ...]) -> tuple[str, str | None]:
    """(the reply as the protocol ends it, the rule that ends it: FENCE_CLOSED, REPETITION or None).

    A rule can end a reply exactly where it ended anyway (a block closed on the last line).
    """
    at_fence = fence_cut(text, fences)
    end = at_fence if at_fence is not None else len(text)
    at_repeat = RepetitionGuard().feed(text[:end])
    if at_repeat is not None:
        return text[:at_repeat], REPETITION
    if at_fence is not None:
        return text[:at_fence], FENCE_CLOSED
    return text, None


class StreamCut:
    """The same cut, applied while a reply streams in: `feed` returns why to stop, or None."""

    def __init__(self, fences: tuple[str, ...]):
        self.fences = fences
        self.guard = RepetitionGuard()
        self.text = ""

    def feed(self, chunk: str) -> str | None:
        self.text += chunk
        if self.guard.feed(chunk) is not None:
            return REPETITION
        if "\n" in chunk and fence_cut(self.text, self.fences) is not None:
            return FENCE_CLOSED
        return None
