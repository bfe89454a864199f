"""Vega-Lite: checks of a task's oracle spec (the VIEW and CHANNEL_INTENT grammar in validator.py's
docstring): every key known, every mark, channel, type, aggregate and time unit one Vega-Lite 5 has.
"""
from __future__ import annotations

from .intent import CONCATS, FACET_CHANNELS, IGNORED_CHANNELS, _as_list, _view_kind

MARKS = ("arc", "area", "bar", "image", "line", "point", "rect", "rule", "text", "tick", "trail", "circle",
         "square", "geoshape", "boxplot", "errorbar", "errorband")
CHANNELS = ("x", "y", "x2", "y2", "xOffset", "yOffset", "theta", "theta2", "radius", "radius2", "longitude",
            "latitude", "longitude2", "latitude2", "color", "fill", "stroke", "opacity", "fillOpacity",
            "strokeOpacity", "strokeWidth", "strokeDash", "size", "angle", "shape", "text", "detail", "order",
            "xError", "yError", "xError2", "yError2", "key", "tooltip", "href", "url", "description",
            "row", "column", "facet")
TYPES = ("quantitative", "nominal", "ordinal", "temporal", "geojson")
AGGREGATES = ("argmax", "argmin", "average", "count", "distinct", "max", "mean", "median", "min", "missing",
              "product", "q1", "q3", "ci0", "ci1", "stderr", "stdev", "stdevp", "sum", "valid", "values",
              "variance", "variancep", "exponential", "exponentialb")
UNIT_PARTS = ("year", "quarter", "month", "week", "day", "dayofyear", "date", "hours", "minutes", "seconds",
              "milliseconds")
VIEW_KEYS = {"unit": {"mark", "mark_props", "encoding", "extra_channels", "params"}, "layer": {"layer"},
             "facet": {"facet", "spec"}, "concat": {"concat"}, "hconcat": {"hconcat"}, "vconcat": {"vconcat"}}
CHANNEL_KEYS = {"field", "type", "aggregate", "bin", "timeUnit", "scale", "stack", "sort"}
ORACLE_KEYS = {"intent", "data", "title"}


def _is_time_unit(unit: str) -> bool:
    u = unit[3:] if unit.startswith("utc") else unit
    if u.startswith("binned"):
        u = u[len("binned"):]
    parts = sorted(UNIT_PARTS, key=len, reverse=True)
    while u:
        for p in parts:
            if u.startswith(p):
                u = u[len(p):]
                break
        else:
            return False
    return True



def data_urls(spec, out=None) -> list:
    """Every data.url named anywhere in a spec (top level, layers, concatenations, lookups)."""
    out = [] if out is None else out
    if isinstance(spec, dict):
        data = spec.get("data")
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            out.append(data["url"])
        for k, v in spec.items():
            if k != "data":
                data_urls(v, out)
    elif isinstance(spec, list):
        for v in spec:
            data_urls(v, out)
    return out



def _check_view_spec(view, where: str) -> list[tuple[str, str]]:
    if not isinstance(view, dict):
        return [(where, "a view must be a mapping (mark/encoding, layer, facet+spec or concat)")]
    kind = _view_kind(view)
    if kind is None:
        return [(where, "a view has exactly one of mark, layer, facet, concat, hconcat, vconcat")]
    problems = [(f"{where}.{k}", f"unknown key for a {kind} view (allowed: {', '.join(sorted(VIEW_KEYS[kind]))})")
                for k in view if k not in VIEW_KEYS[kind]]
    if kind == "unit":
        for m in _as_list(view["mark"]):
            if m not in MARKS:
                problems.append((f"{where}.mark", f"{m!r} is not a Vega-Lite mark type"))
        if not isinstance(view.get("mark_props", {}), dict):
            problems.append((f"{where}.mark_props", "must be a mapping of mark property to value"))
        if not isinstance(view.get("extra_channels", False), bool):
            problems.append((f"{where}.extra_channels", "must be true or false"))
        params = view.get("params", [])
        if not isinstance(params, list):
            problems.append((f"{where}.params", "must be a list of {select: point|interval, encodings, fields}"))
        else:
            for i, p in enumerate(params):
                if not isinstance(p, dict) or p.get("select") not in ("point", "interval") or \
                        set(p) - {"select", "encodings", "fields"} or \
                        not all(isinstance(p.get(k, []), list) for k in ("encodings", "fields")):
                    problems.append((f"{where}.params[{i}]", "expected {select: point|interval, encodings: [...], "
                                                             "fields: [...]} (encodings, fields optional)"))
        enc = view.get("encoding", {})
        if not isinstance(enc, dict):
            return problems + [(f"{where}.encoding", "must be a mapping of channel to channel intent")]
        for ch, w in enc.items():
            if ch not in CHANNELS or ch in FACET_CHANNELS or ch in IGNORED_CHANNELS:
                problems.append((f"{where}.encoding.{ch}", "not a checkable encoding channel"
                                 + (" (facet channels go in a facet view)" if ch in FACET_CHANNELS else "")))
            problems += _check_channel_spec(w, f"{where}.encoding.{ch}", sortable=True)
    elif kind == "layer" or kind in CONCATS:
        children = view[kind]
        if not isinstance(children, list) or not children:
            return problems + [(f"{where}.{kind}", "must be a non-empty list of views")]
        for i, child in enumerate(children):
            problems += _check_view_spec(child, f"{where}.{kind}[{i}]")
    elif kind == "facet":
        facet = view["facet"]
        if not isinstance(facet, dict) or not facet or set(facet) - set(FACET_CHANNELS):
            problems.append((f"{where}.facet", "must map row, column or facet to a channel intent"))
        elif "facet" in facet and len(facet) > 1:
            problems.append((f"{where}.facet", "a wrapped facet cannot be combined with row/column"))
        else:
            for ch, w in facet.items():
                problems += _check_channel_spec(w, f"{where}.facet.{ch}", sortable=False)
        if "spec" not in view:
            problems.append((f"{where}.spec", "a facet view needs the inner view in spec"))
        else:
            problems += _check_view_spec(view["spec"], f"{where}.spec")
    return problems


def _check_channel_spec(w, where: str, sortable: bool) -> list[tuple[str, str]]:
    if not isinstance(w, dict):
        return [(where, "a channel intent is a mapping (field, type, aggregate, bin, timeUnit, scale, stack, sort)")]
    problems = [(f"{where}.{k}", f"unknown key (allowed: {', '.join(sorted(CHANNEL_KEYS))})")
                for k in w if k not in CHANNEL_KEYS]
    for f in _as_list(w.get("field", "x")):
        if not isinstance(f, str) or not f:
            problems.append((f"{where}.field", "a field name (or a list of names) is required"))
    for t in _as_list(w.get("type", "nominal")):
        if t not in TYPES:
            problems.append((f"{where}.type", f"{t!r} is not one of {', '.join(TYPES)}"))
    if w.get("aggregate") is not None and w["aggregate"] not in AGGREGATES:
        problems.append((f"{where}.aggregate", f"{w['aggregate']!r} is not a Vega-Lite aggregate op"))
    if "bin" in w and not isinstance(w["bin"], bool):
        problems.append((f"{where}.bin", "must be true or false"))
    if w.get("timeUnit") is not None and not (isinstance(w["timeUnit"], str) and _is_time_unit(w["timeUnit"])):
        problems.append((f"{where}.timeUnit", f"{w['timeUnit']!r} is not a Vega-Lite time unit"))
    if "scale" in w and not isinstance(w["scale"], dict):
        problems.append((f"{where}.scale", "must be a mapping of scale property to value"))
    if "stack" in w and w["stack"] not in ("zero", "normalize", "center", None):
        problems.append((f"{where}.stack", "must be zero, normalize, center or null"))
    if "sort" in w:
        if w["sort"] is not True:
            problems.append((f"{where}.sort", "only `sort: true` (order compared with the gold chart's) is allowed"))
        elif not sortable:
            problems.append((f"{where}.sort", "facet order cannot be compared; describe it in the instruction only"))
    return problems
