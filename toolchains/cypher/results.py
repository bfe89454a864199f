"""Cypher: result-set comparison. The candidate's rows against the gold's (or the task's expected rows),
normalized: as multisets or in order, columns by position or in any order, lists kept or unordered.
"""
from __future__ import annotations

import json
import math
from collections import Counter


def canonical(value, list_order: str = "keep", flatten_temporal: bool = False):
    """One spelling per value: integral floats become ints, other floats keep 9 significant digits,
    maps are key-sorted; lists keep their order unless list_order == 'ignore'."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        if value.is_integer() and abs(value) < 2 ** 53:
            return int(value)
        return float(f"{value:.9g}")
    if isinstance(value, list):
        items = [canonical(v, list_order, flatten_temporal) for v in value]
        if list_order == "ignore":
            items.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return items
    if isinstance(value, dict):
        if flatten_temporal and set(value) == {"~temporal"}:
            return value["~temporal"]
        return {str(k): canonical(v, list_order, flatten_temporal) for k, v in value.items()}
    return repr(value)


def _key(row) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def _short(row) -> str:
    text = _key(row)
    return text if len(text) <= 160 else text[:157] + "..."


def compare_results(got: dict, want: dict, ordered: bool, list_order: str = "keep", columns: str = "position",
                    flatten_temporal: bool = False) -> tuple[str, str] | None:
    """None when equivalent, else (what is wrong with the result, what was expected instead): the second
    part holds the expected rows and counts, which must not reach the model as diagnostics.
    got/want: {"columns": [...], "rows": [[...]]}."""
    g = [[canonical(v, list_order, flatten_temporal) for v in row] for row in got["rows"]]
    w = [[canonical(v, list_order, flatten_temporal) for v in row] for row in want["rows"]]
    gw = len(got["columns"]) if got["columns"] else (len(g[0]) if g else 0)
    ww = len(want["columns"]) if want["columns"] else (len(w[0]) if w else 0)
    if (g or got["columns"]) and (w or want["columns"]) and gw != ww:
        return f"{gw} column(s) returned", f"{ww} column(s)"
    if columns == "any" and g and w and gw > 1:
        g = _best_permutation(g, w, ordered)
    if ordered:
        if len(g) != len(w):
            return f"{len(g)} row(s) returned", f"{len(w)} row(s)"
        for i, (a, b) in enumerate(zip(g, w)):
            if _key(a) != _key(b):
                return f"row {i + 1}: got {_short(a)}", f"row {i + 1}: expected {_short(b)}"
        return None
    cg, cw = Counter(map(_key, g)), Counter(map(_key, w))
    if cg == cw:
        return None
    missing, extra = cw - cg, cg - cw
    parts = [f"{len(g)} row(s) returned"] if len(g) != len(w) else []
    wanted = [f"{len(w)} row(s)"] if len(g) != len(w) else []
    if missing:
        parts.append("an expected row is missing")
        wanted.append(f"missing row {_short(json.loads(sorted(missing)[0]))}")
    if extra:
        parts.append(f"unexpected row {_short(json.loads(sorted(extra)[0]))}")
    return "; ".join(parts), "; ".join(wanted)


def _best_permutation(g: list, w: list, ordered: bool) -> list:
    """Reorder the candidate's columns to match the expected ones when some order does (CypherBench EX)."""
    from itertools import permutations
    width = len(w[0])
    if width > 6:
        return g
    want = [_key(r) for r in w] if ordered else Counter(map(_key, w))
    for perm in permutations(range(width)):
        cand = [[row[i] for i in perm] for row in g]
        keys = [_key(r) for r in cand]
        if (keys == want) if ordered else (Counter(keys) == want):
            return cand
    return g

