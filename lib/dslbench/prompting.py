"""The one prompt template and the one output-extraction rule, shared by every model and DSL.

DSL-specific wording comes only from the DSL's card (toolchains/<dsl>/toolchain.yaml: language,
fence, prompt.rules); the structure of the prompt and the extraction rule are the same for all.
"""
from __future__ import annotations

import re

PROMPT_VERSION = "baseline-v1"

SYSTEM = ("You are an expert {language} programmer. Solve the task with a complete {language} program. "
          "Reply with exactly one fenced code block (```{fence} ... ```) that contains the whole program, "
          "and nothing else.")


def build_messages(task, toolchain) -> list[dict]:
    """Zero-shot chat messages for a task: a system line and a user message with task, files and rules."""
    card = toolchain.card
    language = card.get("language", toolchain.dsl)
    parts = [f"Task ({task.domain}, {language}):\n{task.instruction.strip()}"]
    for name, content in task.context.items():
        parts.append(f"File `{name}`:\n```\n{content.rstrip()}\n```")
    rules = (card.get("prompt") or {}).get("rules", "").strip()
    if rules:
        parts.append("Requirements:\n" + rules)
    parts.append(f"Answer with one ```{toolchain.fence} code block only.")
    return [{"role": "system", "content": SYSTEM.format(language=language, fence=toolchain.fence)},
            {"role": "user", "content": "\n\n".join(parts)}]


FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([^\n`]*)\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)


def extract_program(raw: str, aliases: tuple[str, ...]) -> tuple[str, str]:
    """Return (program, rule) from a model reply.

    Rules, in order: the first fenced block tagged with the DSL's fence name (or an alias);
    else the first fenced block of any tag; else the whole reply, stripped.
    An unterminated fence runs to the end of the reply (models often stop mid-block).
    """
    wanted = {a.lower() for a in aliases}
    blocks = [(m.group(2).strip().split()[0].lower() if m.group(2).strip() else "", m.group(3))
              for m in FENCE.finditer(raw or "")]
    for tag, body in blocks:
        if tag in wanted:
            return body.strip("\n"), "tagged-fence"
    if blocks:
        return blocks[0][1].strip("\n"), "any-fence"
    return (raw or "").strip(), "whole-output"
