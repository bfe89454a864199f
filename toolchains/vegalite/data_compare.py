"""Vega-Lite: the data comparison. The data each mark draws (from run_vegalite.js) compared with the
gold chart's as multisets of rows, and the order of sorted discrete scales (see validator.py's docstring).
"""
from __future__ import annotations

import json
import math
import re

from .intent import _short

REL_TOL = 1e-6
_NUMERIC = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")


def canon(v):
    """One comparable form per value: numbers (and numeric strings) as floats, dates tagged."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        return float(v) if _NUMERIC.match(v) else v
    if isinstance(v, dict) and "$date" in v:
        return ("date", float(v["$date"]))
    if isinstance(v, dict) and "$number" in v:
        return ("number", v["$number"])
    if isinstance(v, list):
        return tuple(canon(x) for x in v)
    return json.dumps(v, sort_keys=True)


def _sort_key(v):
    if v is None:
        return (0, "")
    if isinstance(v, bool):
        return (1, str(v))
    if isinstance(v, float):
        return (2, float(f"{v:.6g}"))
    if isinstance(v, tuple):
        return (3, tuple(_sort_key(x) for x in v))
    return (4, str(v))


def _close(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def _row(raw: dict) -> tuple:
    return tuple(sorted((k, canon(v)) for k, v in raw.items()))


def _row_key(row: tuple):
    return tuple((k, _sort_key(v)) for k, v in row)


def _show_row(row: tuple) -> str:
    def show(v):
        if isinstance(v, float):
            return f"{v:.12g}"
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "date":
            return f"date({v[1]:.0f})"
        if isinstance(v, tuple):
            return "[" + ", ".join(show(x) for x in v) + "]"
        return json.dumps(v)
    text = "{" + ", ".join(f"{k}: {show(v)}" for k, v in row if k != "$groups") + "}"
    groups = dict(row).get("$groups")
    if groups:
        text += " in group " + show(groups)
    return text if len(text) <= 160 else text[:157] + "..."


def _color_key(mark: dict) -> dict:
    """A mark whose colour comes from data through exactly one of fill/stroke has it as `color`:
    point marks are stroked and circles filled, yet both show the color channel."""
    driven = [p for p in ("fill", "stroke") if p in mark["props"]]
    if len(driven) != 1:
        return mark
    old = driven[0]
    ren = (lambda d: {("color" if k == old else k): v for k, v in d.items() if not (k in ("fill", "stroke") and k != old)})
    return {**mark, "props": ren(mark["props"]), "constants": ren(mark.get("constants", {})),
            "rows": [ren(r) for r in mark["rows"]]}


def compare_marks(got: list, want: list) -> tuple[str, str] | None:
    """First difference between the candidate's mark data and the gold's as (what the chart draws,
    what the gold chart draws), or None."""
    got, want = [_color_key(m) for m in got], [_color_key(m) for m in want]
    if len(got) != len(want):
        return (f"the chart draws {len(got)} mark(s) ({', '.join(m['marktype'] for m in got) or 'none'}), "
                f"not as many as the gold chart",
                f"the gold chart draws {len(want)} mark(s) ({', '.join(m['marktype'] for m in want)})")
    for i, (g, w) in enumerate(zip(got, want)):
        label = f"mark {i + 1} ({g['marktype']})"
        if g["marktype"] != w["marktype"]:
            return (f"mark {i + 1} is a {g['marktype']} mark (wrong mark type)",
                    f"mark {i + 1}: the gold's is a {w['marktype']} mark")
        gp, wp = set(g["props"]) | set(g.get("constants", {})), set(w["props"]) | set(w.get("constants", {}))
        if gp != wp:
            return (f"{label}: data drives {', '.join(sorted(gp)) or 'nothing'} (not the gold chart's properties)",
                    f"{label}: in the gold chart data drives {', '.join(sorted(wp))}")
        if g.get("truncated") or w.get("truncated"):
            if g.get("truncated") != w.get("truncated"):
                return (f"{label}: the chart draws {'over ' if g.get('truncated') else ''}{len(g['rows'])} items "
                        f"(not as many as the gold chart)",
                        f"{label}: the gold chart draws {'over ' if w.get('truncated') else ''}{len(w['rows'])} items")
        grows = sorted((_row(r) for r in g["rows"]), key=_row_key)
        wrows = sorted((_row(r) for r in w["rows"]), key=_row_key)
        if len(grows) != len(wrows):
            return (f"{label}: {len(grows)} items drawn (not as many as the gold chart)",
                    f"{label}: the gold chart draws {len(wrows)} items")
        for a, b in zip(grows, wrows):
            if not (len(a) == len(b) and all(ka == kb and _close(va, vb) for (ka, va), (kb, vb) in zip(a, b))):
                missing = _first_unmatched(wrows, grows)
                extra = _first_unmatched(grows, wrows)
                return (f"{label}: draws {_show_row(extra or a)}, which the gold chart does not",
                        f"{label}: the gold chart draws {_show_row(missing or b)} instead")
    return None


def _first_unmatched(rows: list, others: list):
    pool = list(others)
    for r in rows:
        for j, o in enumerate(pool):
            if len(r) == len(o) and all(ka == kb and _close(va, vb) for (ka, va), (kb, vb) in zip(r, o)):
                del pool[j]
                break
        else:
            return r
    return None


def compare_scales(got: dict, want: dict, channels: list) -> tuple[str, str] | None:
    for ch in channels:
        w = want[ch]
        g = got.get(ch)
        if g is None:
            return f"no {ch} scale", f"expected a {ch} scale ordered {_short(w['domain'])}"
        gd, wd = [canon(v) for v in g["domain"]], [canon(v) for v in w["domain"]]
        if len(gd) != len(wd) or not all(_close(a, b) for a, b in zip(gd, wd)):
            return f"{ch} order is {_short(g['domain'])} (wrong order)", f"expected {ch} order {_short(w['domain'])}"
    return None

