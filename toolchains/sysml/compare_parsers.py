"""Measure the two installable SysML v2 parsers on our tasks: which accept every gold program and
reject every syntax mutant, and how long a parse takes. Runs sandboxed (one process for all programs).

usage: python compare_parsers.py PROGRAMS.json OUT.json [DFA_CACHE.pkl]
PROGRAMS.json: [{"id": ..., "kind": "gold"|"syntax"|"semantic", "text": ...}]
"""
import json
import statistics
import sys
import threading
import time


def main():
    programs = json.load(open(sys.argv[1], encoding="utf-8"))
    cache = sys.argv[3] if len(sys.argv) > 3 else ""
    import run_sysml
    dfa_cache, parse_tree, SysMLSyntaxError = run_sysml._bare_sysmlpy()
    if cache:
        dfa_cache.load_dfa_cache(cache)
    dfa_cache.set_dfa_cache(enabled=False)
    import tree_sitter
    import tree_sitter_sysml
    ts = tree_sitter.Parser(tree_sitter.Language(tree_sitter_sysml.language()))
    rows = []
    for p in programs:
        t0 = time.perf_counter()
        try:
            parse_tree(p["text"])
            antlr_ok = True
        except SysMLSyntaxError:
            antlr_ok = False
        t1 = time.perf_counter()
        tree = ts.parse(p["text"].encode())
        t2 = time.perf_counter()
        rows.append({"id": p["id"], "kind": p["kind"], "sysmlpy": antlr_ok, "tree_sitter": not tree.root_node.has_error,
                     "sysmlpy_s": t1 - t0, "tree_sitter_s": t2 - t1})
    summary = {}
    for parser in ("sysmlpy", "tree_sitter"):
        golds = [r for r in rows if r["kind"] == "gold"]
        syn = [r for r in rows if r["kind"] == "syntax"]
        summary[parser] = {
            "golds_accepted": sum(r[parser] for r in golds), "golds": len(golds),
            "syntax_mutants_rejected": sum(not r[parser] for r in syn), "syntax_mutants": len(syn),
            "median_parse_s": statistics.median(r[parser + "_s"] for r in rows),
            "max_parse_s": max(r[parser + "_s"] for r in rows),
            "golds_rejected_ids": [r["id"] for r in golds if not r[parser]],
            "syntax_mutants_accepted_ids": [r["id"] for r in syn if r[parser]],
        }
    json.dump({"summary": summary, "rows": rows}, open(sys.argv[2], "w"), indent=1)


if __name__ == "__main__":
    sys.setrecursionlimit(20000)
    threading.stack_size(256 * 1024 * 1024)
    t = threading.Thread(target=main)
    t.start()
    t.join()
