"""Build the read-only ANTLR prediction (DFA) cache the sandboxed runner loads.

sysmlpy's generated Python parser spends ~10-30 s of its first parse in a process building its
prediction DFA; sysmlpy can pickle the warmed DFA (its own `dfa_cache` module). We warm it here, once,
on our own trusted gold programs (never on model output) and store it in toolchains/sysml/.dfa-cache/,
which the sandbox reads but cannot write. Verdicts do not depend on the cache, only speed does.

usage: python warm_cache.py  (idempotent; run by toolchains/sysml/install.sh and lazily by probe())
"""
import glob
import os
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE_DIR = HERE / ".dfa-cache"


def main():
    import yaml
    os.environ["SYSSMLPY_DFA_CACHE"] = str(CACHE_DIR)
    from sysmlpy import dfa_cache
    from sysmlpy.antlr_parser import _parse_tree
    CACHE_DIR.mkdir(exist_ok=True)
    target = dfa_cache.cache_file()
    if os.path.isfile(target):
        print(target)
        return
    dfa_cache.set_dfa_cache(enabled=False)   # save once at the end, not after the first parse
    tasks = HERE.parent.parent / "data" / "tasks" / "sysml"
    for path in sorted(glob.glob(str(tasks / "*.yaml"))):
        task = yaml.safe_load(open(path, encoding="utf-8"))
        for text in [task["gold"]] + [m["program"] for m in task.get("mutants", [])]:
            try:
                _parse_tree(text)
            except Exception:
                pass
    dfa_cache.set_dfa_cache(enabled=True, directory=str(CACHE_DIR))
    dfa_cache._state["save_attempted"] = False   # parses above tried (disabled) saves
    if not dfa_cache.save_dfa_cache(target):
        sys.exit("could not save the DFA cache")
    os.chmod(target, 0o644)
    print(target)


if __name__ == "__main__":
    sys.setrecursionlimit(200000)
    threading.stack_size(512 * 1024 * 1024)
    t = threading.Thread(target=main)
    t.start()
    t.join()
