"""Stage 07 (LoRA adaptation): the split, the training data, the loss mask, and the notebook end to end
on a reduced budget (real model, real peft training, real validation)."""
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from dslbench import lora
from dslbench.errors import UserError
from dslbench.store import RunStore
from dslbench.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]


def fake(i, difficulty, split="test"):
    return SimpleNamespace(id=f"t-{i:02d}", difficulty=difficulty, split=split)


def test_split_is_seeded_stratified_and_disjoint():
    tasks = [fake(i, d) for i, d in enumerate(["easy"] * 7 + ["medium"] * 10 + ["hard"] * 7)]
    train, test, how = lora.split_tasks(tasks, 0.3, seed=3)
    assert not {t.id for t in train} & {t.id for t in test}
    assert len(train) + len(test) == len(tasks)
    held = pd.Series([t.difficulty for t in test]).value_counts().to_dict()
    assert held == {"easy": 2, "medium": 3, "hard": 2}          # round(0.3 * n) of each difficulty
    again = lora.split_tasks(tasks, 0.3, seed=3)
    assert [t.id for t in again[1]] == [t.id for t in test]
    other = lora.split_tasks(tasks, 0.3, seed=4)
    assert [t.id for t in other[1]] != [t.id for t in test]
    assert "seed 3" in how
    with pytest.raises(UserError, match="held_out"):
        lora.split_tasks(tasks, 1.5, seed=0)


def test_a_pack_with_its_own_training_split_is_used_as_published():
    tasks = [fake(0, "easy", "dev"), fake(1, "easy", "train"), fake(2, "hard", "test"), fake(3, "easy", "test")]
    train, test, how = lora.split_tasks(tasks, 0.3, seed=0)
    assert [t.id for t in train] == ["t-00", "t-01"] and [t.id for t in test] == ["t-02", "t-03"]
    assert how == "the pack's own split"


def test_training_examples_are_gold_and_equivalents_as_fenced_replies():
    task = next(t for t in load_tasks(["jq"])["jq"] if t.equivalents)
    examples = lora.training_examples([task])
    assert len(examples) == 1 + len(task.equivalents)
    assert examples[0]["reply"] == f"```jq\n{task.gold.rstrip()}\n```"
    assert examples[1]["reply"].endswith(f"{task.equivalents[0].program.rstrip()}\n```")
    assert examples[0]["messages"][-1]["role"] == "user" and task.instruction.strip()[:40] in examples[0]["messages"][-1]["content"]


def test_settings_hash_changes_with_any_setting():
    a = lora.LoraSettings(dsl="jq")
    assert a.key() == lora.LoraSettings(dsl="jq").key()
    assert a.key() != lora.LoraSettings(dsl="jq", steps=31).key()
    assert a.key() != lora.LoraSettings(dsl="jq", rank=4).key()


def test_loss_mask_covers_the_reply_only():
    tokenizer, _ = lora.load_base()
    example = lora.training_examples(load_tasks(["jq"])["jq"][:1])[0]
    ids, labels = lora.encode(tokenizer, example, max_length=4096)
    reply = tokenizer(example["reply"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    assert len(ids) == len(labels)
    assert labels[-len(reply):] == reply and ids[-len(reply):] == reply
    assert set(labels[:-len(reply)]) == {-100}
    # cut to a short maximum: the reply's start survives, the prompt is dropped first
    ids, labels = lora.encode(tokenizer, example, max_length=16)
    assert len(ids) == 16 and labels == reply[:16]


def test_notebook_07_trains_generates_validates_and_resumes(tmp_path, monkeypatch):
    import papermill as pm
    monkeypatch.setenv("DSLBENCH_LLAMA_THREADS", os.environ.get("DSLBENCH_LLAMA_THREADS", "1"))
    run = tmp_path / "run"
    params = {"run_dir": str(run), "lora_steps": 3, "limit": 2, "max_tokens": 48, "n_boot": 200}
    t0 = time.perf_counter()
    pm.execute_notebook(str(ROOT / "notebooks" / "07_lora.ipynb"), str(tmp_path / "07.ipynb"), parameters=params,
                        cwd=str(ROOT), kernel_name="python3", progress_bar=False)
    print(f"notebook 07: {time.perf_counter() - t0:.0f} s")
    store = RunStore(run / "lora")
    gens = store.records("generations")
    assert sorted((g["method"], g["task_id"]) for g in gens) == sorted(
        (m, t) for m in (lora.BASE_METHOD, lora.METHOD) for t in {g["task_id"] for g in gens})
    assert len(gens) == 4 and all(g["model"] == lora.MODEL and g["generation_status"] == "ok" for g in gens)
    assert all(g["params"]["max_tokens"] == 48 and g["usage"]["completion_tokens"] <= 48 for g in gens)
    verdicts = store.records("verdicts")
    assert len(verdicts) == 4 and all(v["syntax"]["status"] in ("pass", "fail") for v in verdicts)
    paired = pd.read_csv(run / "tables" / "lora_paired.csv")
    assert list(paired["level"]) == ["syntax", "semantic"] and (paired["pairs"] == 2).all()
    losses = pd.read_csv(run / "tables" / "lora_losses.csv")
    assert list(losses["step"]) == [1, 2, 3] and (losses["loss"] > 0).all()
    adapters = list((run / "lora" / "adapters").glob("*/adapter_config.json"))
    assert len(adapters) == 1
    split = pd.read_csv(run / "tables" / "lora_split.csv")
    held = set(split.loc[split["part"] == "held out", "task_id"])
    assert {g["task_id"] for g in gens} <= held
    # a rerun with the same settings keeps every record and the trained adapter
    before = (run / "lora" / "generations.jsonl").read_bytes()
    pm.execute_notebook(str(ROOT / "notebooks" / "07_lora.ipynb"), str(tmp_path / "07b.ipynb"), parameters=params,
                        cwd=str(ROOT), kernel_name="python3", progress_bar=False)
    assert (run / "lora" / "generations.jsonl").read_bytes() == before
    assert pd.read_csv(run / "tables" / "lora_losses.csv").equals(losses)
    text = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                     for c in json.loads((tmp_path / "07b.ipynb").read_text())["cells"] for o in c.get("outputs", []))
    assert "Only 2 pairs" in text and "=== " in text
