"""LoRA adaptation of the embedded model on CPU (the supplement's fine-tuning experiment, small scale).

The embedded GGUF (SmolLM2-135M-Instruct, Q4_1) is dequantised into a transformers model (float32), a
LoRA adapter (peft) is trained on the training part of one DSL's tasks (the gold and each equivalent
program, as the reply to the task's zero-shot prompt), and the base model and the adapted model answer
the held-out tasks with greedy decoding under the decoding protocol. Both sets of replies go into their
own run folder as methods `lora-base` and `lora` under one model name, are judged by the validation
stage, and are compared pairwise with the interventions' statistics. Base and adapted replies come from
the same float32 weights, so the difference is the adapter's alone (not the quantisation's).
"""
from __future__ import annotations

import hashlib
import json
import math
import random
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from . import decoding, toolchains
from .errors import UserError
from .pipeline import task_fields, generation_record, progress_bar
from .prompting import build_messages
from .store import RunStore, now, record_key
from .tasks import load_tasks

BASE_METHOD, METHOD = "lora-base", "lora"
MODEL = "transformers/smollm2-135m-instruct"   # the embedded GGUF, dequantised: one name for both methods
TRAIN_SPLITS = ("train", "dev")                # a task pack's own training data, where it has some


@dataclass(frozen=True)
class LoraSettings:
    """What determines the adapter (its hash names the saved adapter, so a changed setting retrains)."""
    dsl: str
    held_out: float = 0.3         # share of the tasks kept for evaluation when the pack has no training split
    seed: int = 0
    steps: int = 30               # optimiser steps, one example each
    rank: int = 8
    alpha: int = 16
    dropout: float = 0.05
    learning_rate: float = 5e-4
    max_length: int = 1024        # tokens of prompt + reply; longer examples are cut from the prompt's end
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def split_tasks(tasks: list, held_out: float, seed: int) -> tuple[list, list, str]:
    """(training tasks, held-out tasks, how they were split). A pack with its own training split
    (imported upstream data) is used as published; otherwise a seeded partition, stratified by
    difficulty, keeps `held_out` of each difficulty (at least one task) for evaluation."""
    own = [t for t in tasks if t.split in TRAIN_SPLITS]
    if own and len(own) < len(tasks):
        return own, [t for t in tasks if t.split not in TRAIN_SPLITS], "the pack's own split"
    if not 0 < held_out < 1:
        raise UserError(f"parameter held_out: a share in (0, 1), got {held_out}")
    rng = random.Random(seed)
    train, test = [], []
    for difficulty in sorted({t.difficulty for t in tasks}):
        group = sorted((t for t in tasks if t.difficulty == difficulty), key=lambda t: t.id)
        rng.shuffle(group)
        n = max(1, round(held_out * len(group))) if len(group) > 1 else 0
        test += group[:n]
        train += group[n:]
    return (sorted(train, key=lambda t: t.id), sorted(test, key=lambda t: t.id),
            f"seeded partition (seed {seed}, {held_out:.0%} of each difficulty held out)")


def training_examples(tasks: list) -> list[dict]:
    """One example per correct program of each training task: the gold and its equivalents."""
    out = []
    for task in tasks:
        tc = toolchains.get(task.dsl)
        messages = build_messages(task, tc)
        for program in [task.gold, *(e.program for e in task.equivalents)]:
            out.append({"task_id": task.id, "messages": messages,
                        "reply": f"```{tc.fence}\n{program.rstrip()}\n```"})
    return out


def load_base():
    """(tokenizer, float32 model) from the embedded GGUF, on the CPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from .local_model import gguf_path
    path = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    return tokenizer, model.eval()


def _prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def encode(tokenizer, example: dict, max_length: int) -> tuple[list[int], list[int]]:
    """(input ids, labels): the loss is on the reply and its end-of-turn token only, not the prompt."""
    prompt = _prompt_ids(tokenizer, example["messages"])
    reply = tokenizer(example["reply"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    keep = max(0, max_length - len(reply))
    prompt = prompt[:keep]           # a reply longer than max_length is trained on its start only
    ids = (prompt + reply)[:max_length]
    return ids, ([-100] * len(prompt) + reply)[:max_length]


def train(tokenizer, model, examples: list[dict], settings: LoraSettings, progress: bool = True):
    """The peft model after `settings.steps` AdamW steps over the examples in a seeded order, and the
    loss of each step ([{step, loss, task_id}])."""
    import torch
    from peft import LoraConfig, get_peft_model
    if not examples:
        raise UserError(f"LoRA on {settings.dsl}: no training examples (the training part is empty)")
    torch.manual_seed(settings.seed)
    config = LoraConfig(r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                        target_modules=list(settings.target_modules), task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, config)
    optimiser = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=settings.learning_rate)
    order = random.Random(settings.seed)
    queue: list[dict] = []
    losses = []
    peft_model.train()
    with progress_bar(settings.steps, "LoRA train", progress) as bar:
        for step in range(1, settings.steps + 1):
            if not queue:                               # one pass over the examples per epoch, reshuffled
                queue = list(examples)
                order.shuffle(queue)
            example = queue.pop()
            ids, labels = encode(tokenizer, example, settings.max_length)
            out = peft_model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
            out.loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            losses.append({"step": step, "loss": out.loss.item(), "task_id": example["task_id"]})
            bar.update(1)
    peft_model.eval()
    return peft_model, losses


def generate_reply(tokenizer, model, messages: list[dict], max_new_tokens: int, fences: tuple[str, ...]) -> dict:
    """A greedy reply, ended by the decoding protocol (closed fence, repetition); a GenerationResult dict."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList
    prompt = _prompt_ids(tokenizer, messages)

    class ProtocolStop(StoppingCriteria):
        def __init__(self):
            self.cut, self.seen, self.why = decoding.StreamCut(fences), 0, None

        def __call__(self, input_ids, scores, **kwargs):
            text = tokenizer.decode(input_ids[0][len(prompt):], skip_special_tokens=True)
            self.why = self.why or self.cut.feed(text[self.seen:])
            self.seen = len(text)
            return self.why is not None

    stop = ProtocolStop()
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                             max_new_tokens=max_new_tokens, do_sample=False, stopping_criteria=StoppingCriteriaList([stop]),
                             pad_token_id=tokenizer.eos_token_id)
    new = out[0][len(prompt):]
    text = tokenizer.decode(new, skip_special_tokens=True)
    answer, rule = decoding.cut_reply(text, fences)
    ended = len(new) and int(new[-1]) == tokenizer.eos_token_id
    finish = "stop" if (rule or ended) else "length"
    return {"text": answer, "status": "ok", "error": "", "cached": False,
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": int(len(new))},
            "duration_s": time.perf_counter() - t0, "attempts": 1, "model": MODEL,
            "params": {"temperature": 0, "max_tokens": max_new_tokens}, "finish_reason": finish,
            "provider_finish_reason": "stop" if ended else ("length" if rule is None else None)}


def run_lora(run_dir, settings: LoraSettings, limit: int | None = None, max_new_tokens: int | None = None,
             progress: bool = True) -> dict:
    """Train (or reload) the adapter and generate base and adapted replies for the held-out tasks into
    the run folder `run_dir` (its own folder: these are not the study's baseline records). Resumable:
    replies already stored are kept; the adapter is saved under adapters/<settings hash>."""
    tasks = load_tasks([settings.dsl], sampled=False)[settings.dsl]   # a per-DSL sample leaves nothing to hold out
    train_tasks, test_tasks, how = split_tasks(tasks, settings.held_out, settings.seed)
    test_tasks = test_tasks[:limit] if limit else test_tasks
    tc = toolchains.get(settings.dsl)
    budget, budget_from = ((max_new_tokens, "user") if max_new_tokens else
                           decoding.token_budget(tc.card, [t.gold for t in tasks]))
    store = RunStore(run_dir)
    adapter_dir = store.dir / "adapters" / settings.key()
    with store.writer("lora"):
        store.log_invocation("lora", {**asdict(settings), "limit": limit, "max_new_tokens": budget,
                                      "split": how, "train_tasks": [t.id for t in train_tasks],
                                      "held_out_tasks": [t.id for t in test_tasks]})
        done = store.keys("generations")
        todo = {method: [t for t in test_tasks if record_key(_item(t, method)) not in done]
                for method in (BASE_METHOD, METHOD)}
        examples = training_examples(train_tasks)
        summary = {"dsl": settings.dsl, "split": how, "train_tasks": len(train_tasks), "examples": len(examples),
                   "held_out_tasks": len(test_tasks), "max_new_tokens": budget, "adapter": str(adapter_dir)}
        if not any(todo.values()) and (adapter_dir / "losses.json").exists():
            return {**summary, "losses": json.loads((adapter_dir / "losses.json").read_text())}
        tokenizer, model = load_base()
        _generate_into(store, tokenizer, model, todo[BASE_METHOD], BASE_METHOD, budget, budget_from, progress)
        if (adapter_dir / "adapter_config.json").exists():
            from peft import PeftModel
            model = PeftModel.from_pretrained(model, str(adapter_dir)).eval()
            losses = json.loads((adapter_dir / "losses.json").read_text())
        else:
            model, losses = train(tokenizer, model, examples, settings, progress)
            with warnings.catch_warnings():   # peft looks for a config.json next to the GGUF: there is none
                warnings.filterwarnings("ignore", message="Could not find a config file")
                model.save_pretrained(str(adapter_dir))
            (adapter_dir / "losses.json").write_text(json.dumps(losses))
            (adapter_dir / "settings.json").write_text(json.dumps({**asdict(settings), "split": how,
                                                                   "trained": now()}, indent=1))
        _generate_into(store, tokenizer, model, todo[METHOD], METHOD, budget, budget_from, progress)
    return {**summary, "losses": losses}


def _item(task, method: str) -> dict:
    return {**task_fields(task), "model": MODEL, "method": method, "sample": 0}


def _generate_into(store: RunStore, tokenizer, model, tasks: list, method: str, budget: int, budget_from: str,
                   progress: bool) -> None:
    with progress_bar(len(tasks), f"generate ({method})", progress and bool(tasks)) as bar:
        for task in tasks:
            tc = toolchains.get(task.dsl)
            messages = build_messages(task, tc)
            res = generate_reply(tokenizer, model, messages, budget, tc.fence_aliases)
            store.append("generations", generation_record(_item(task, method), messages, res, budget_from))
            bar.update(1)


def loss_summary(losses: list[dict], window: int = 5) -> dict:
    """Mean training loss over the first and the last `window` steps."""
    if not losses:
        return {"first": math.nan, "last": math.nan}
    first = [x["loss"] for x in losses[:window]]
    last = [x["loss"] for x in losses[-window:]]
    return {"first": sum(first) / len(first), "last": sum(last) / len(last)}
