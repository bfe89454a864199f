"""Vega-Lite: the chart-intent matcher. The candidate spec's views normalised (repeats expanded, facet
channels lifted, layer encodings pushed down), what each channel shows once followed back through the
view's transforms, and the first difference from the oracle's intent view (the VIEW and CHANNEL_INTENT
grammar is in validator.py's docstring).
"""
from __future__ import annotations

import json

FACET_CHANNELS = ("row", "column", "facet")
IGNORED_CHANNELS = ("tooltip", "href", "description", "key")
COUNTING = ("count", "valid", "missing", "distinct")
SCALE_CATEGORY = {"linear": "quantitative", "log": "quantitative", "pow": "quantitative", "sqrt": "quantitative",
                  "symlog": "quantitative", "quantile": "quantitative", "quantize": "quantitative",
                  "threshold": "quantitative", "bin-ordinal": "quantitative", "identity": "quantitative",
                  "sequential": "quantitative", "time": "temporal", "utc": "temporal"}
CONCATS = ("concat", "hconcat", "vconcat")


def _norm_unit(unit) -> str | None:
    if isinstance(unit, dict):
        unit = unit.get("unit")
    if not isinstance(unit, str):
        return None
    return unit[3:] if unit.startswith("utc") else unit


def _view_kind(view: dict) -> str | None:
    kinds = [k for k in ("mark", "layer", "facet", "concat", "hconcat", "vconcat") if k in view]
    if len(kinds) != 1:
        return None
    return "unit" if kinds[0] == "mark" else kinds[0]


# --- the candidate's views, normalised ----------------------------------------------------------

def _substitute_repeat(node, key: str, value: str):
    if isinstance(node, dict):
        if set(node) == {"repeat"} and node["repeat"] == key:
            return value
        return {k: _substitute_repeat(v, key, value) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute_repeat(v, key, value) for v in node]
    return node


def views(spec: dict, encoding: dict | None = None, transforms: tuple = (), params: tuple = ()) -> dict:
    """A tree of {kind, ...} with repeats expanded, facet channels lifted into facet views, layer
    encodings pushed down to the layers and every ancestor's transforms and params kept in order."""
    transforms = transforms + tuple(t for t in spec.get("transform", []) or [] if isinstance(t, dict))
    params = params + tuple(p for p in spec.get("params", []) or [] if isinstance(p, dict))
    if "repeat" in spec and isinstance(spec.get("spec"), dict):
        rep, inner = spec["repeat"], spec["spec"]
        if isinstance(rep, list):
            children = [views(_substitute_repeat(inner, "repeat", f), encoding, transforms, params) for f in rep]
            return {"kind": "concat", "children": children}
        rows, cols, layers = rep.get("row") or [None], rep.get("column") or [None], rep.get("layer")
        children = []
        for r in rows:
            for c in cols:
                s = inner
                if r is not None:
                    s = _substitute_repeat(s, "row", r)
                if c is not None:
                    s = _substitute_repeat(s, "column", c)
                if layers:
                    children.append({"kind": "layer", "children": [
                        views(_substitute_repeat(s, "layer", f), encoding, transforms, params) for f in layers]})
                else:
                    children.append(views(s, encoding, transforms, params))
        if len(children) == 1:
            return children[0]
        kind = "vconcat" if rep.get("row") and not rep.get("column") else \
            "hconcat" if rep.get("column") and not rep.get("row") else "concat"
        return {"kind": kind, "children": children}
    if "layer" in spec:
        merged = {**(encoding or {}), **(spec.get("encoding") or {})}
        return {"kind": "layer", "children": [views(c, merged, transforms, params) for c in spec["layer"]
                                              if isinstance(c, dict)]}
    if "facet" in spec and isinstance(spec.get("spec"), dict):
        facet = spec["facet"]
        if not isinstance(facet, dict):
            facet = {}
        channels = {k: v for k, v in facet.items() if k in ("row", "column")} or {"facet": facet}
        return {"kind": "facet", "facet": channels, "transforms": transforms,
                "child": views(spec["spec"], None, transforms, params)}
    for kind in CONCATS:
        if kind in spec:
            return {"kind": kind, "children": [views(c, encoding, transforms, params) for c in spec[kind]
                                               if isinstance(c, dict)]}
    enc = {**(encoding or {}), **(spec.get("encoding") or {})}
    mark = spec.get("mark")
    unit = {"kind": "unit", "mark": mark.get("type") if isinstance(mark, dict) else mark,
            "mark_def": mark if isinstance(mark, dict) else {"type": mark},
            "encoding": {k: v for k, v in enc.items() if k not in FACET_CHANNELS}, "transforms": transforms,
            "params": params}
    facets = {k: v for k, v in enc.items() if k in FACET_CHANNELS}
    if facets:
        return {"kind": "facet", "facet": facets, "transforms": transforms, "child": unit}
    return unit


def default_type(fd: dict, channel: str) -> str:
    """Vega-Lite 5's type for a field definition that gives none (compile/channeldef defaultType)."""
    if channel in ("latitude", "longitude"):
        return "quantitative"
    if channel in ("row", "column", "facet", "shape", "strokeDash"):
        return "nominal"
    if channel == "order":
        return "ordinal"
    if isinstance(fd.get("sort"), list):
        return "ordinal"
    agg = fd.get("aggregate")
    if fd.get("timeUnit"):
        return "temporal"
    if fd.get("bin") or (agg and not isinstance(agg, dict)):
        return "quantitative"
    scale = fd.get("scale")
    if isinstance(scale, dict) and scale.get("type"):
        cat = SCALE_CATEGORY.get(scale["type"])
        if cat:
            return cat
    return "nominal"


def effective(fd: dict, channel: str, transforms: tuple) -> dict:
    """What a channel shows: its source field, aggregate, bin, time unit and type, following the
    field back through the view's transforms."""
    agg, bin_, unit = fd.get("aggregate"), bool(fd.get("bin")), _norm_unit(fd.get("timeUnit"))
    field = fd.get("field")
    if isinstance(field, dict):            # {repeat: ...} left unexpanded: not a field name
        field = None
    typ = fd.get("type") or default_type(fd, channel)
    if isinstance(agg, str) and agg in COUNTING:
        typ = "quantitative"       # Vega-Lite overrides any other type of a counting aggregate
    derived = False
    name = field
    # Follow the field back through the transforms (last producer first). What the encoding itself
    # says (aggregate, bin, timeUnit) wins over what a transform did before it.
    for t in reversed(transforms):
        if not isinstance(name, str):
            break
        produced = _produced(t, name)
        if produced is None:
            continue
        kind, info = produced
        if kind == "aggregate":
            agg = agg or info.get("op")
            name = info.get("field")
        elif kind == "bin":
            bin_, name = True, info
        elif kind == "timeUnit":
            unit = unit or _norm_unit(info[0])
            name = info[1]
        else:
            derived = True
            break
    field = name if isinstance(name, str) else None
    if agg == "count":
        field = None
    return {"field": field, "derived": derived, "aggregate": agg, "bin": bin_, "timeUnit": unit, "type": typ}


def _produced(t: dict, name: str):
    """(kind, info) when transform t outputs the field `name`, else None."""
    if "aggregate" in t and isinstance(t["aggregate"], list):
        for a in t["aggregate"]:
            if isinstance(a, dict) and a.get("as") == name:
                return "aggregate", a
        return None
    if "bin" in t and "as" in t:
        outs = t["as"] if isinstance(t["as"], list) else [t["as"]]
        return ("bin", t.get("field")) if name in outs else None
    if "timeUnit" in t and "as" in t:
        return ("timeUnit", (t["timeUnit"], t.get("field"))) if t["as"] == name else None
    outs = []
    for key in ("as",):
        v = t.get(key)
        outs += v if isinstance(v, list) else [v]
    for key in ("window", "joinaggregate"):
        for a in t.get(key, []) or []:
            if isinstance(a, dict):
                outs.append(a.get("as"))
    if "fold" in t:
        outs += t.get("as") or ["key", "value"]
    if "flatten" in t:
        outs += t.get("as") or t.get("flatten") or []
    return ("derived", None) if name in outs else None


def _data_bearing(fd) -> bool:
    if isinstance(fd, list):
        return any(_data_bearing(x) for x in fd)
    if not isinstance(fd, dict):
        return False
    if any(k in fd for k in ("field", "aggregate", "datum")):
        return True
    cond = fd.get("condition")
    return _data_bearing(cond) if cond is not None else False


def _as_list(v) -> list:
    return v if isinstance(v, list) else [v]


def _short(v) -> str:
    text = json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def check_channel(name: str, want: dict, fd, transforms: tuple, where: str) -> tuple[str, str] | None:
    """First difference of one channel as (what the chart does, what the intent expects), or None."""
    if not isinstance(fd, dict):
        return f"{where}: channel {name} is not a field definition", ""
    if not any(k in fd for k in ("field", "aggregate", "datum")) and isinstance(fd.get("condition"), dict):
        fd = fd["condition"]          # {condition: {param, field, type}, value: ...}
    eff = effective(fd, name, transforms)
    if "field" in want and eff["field"] not in _as_list(want["field"]) and not eff["derived"]:
        shown = f"field {eff['field']!r}" if eff["field"] else f"{eff['aggregate'] or 'no'} field ({_short(fd)})"
        return f"{where}: {name} shows {shown} (wrong field)", \
            f"{where}: {name} expected field {_as_list(want['field'])[0]!r}"
    if "aggregate" in want:
        w = want["aggregate"]
        got = eff["aggregate"]
        if got == "average":
            got = "mean"
        if (w or None) != (got or None) and not (w == "mean" and got == "average"):
            return (f"{where}: {name} aggregate is {got or 'none'} (wrong aggregate)",
                    f"{where}: {name} expected aggregate {w or 'none'}")
    if "bin" in want and bool(want["bin"]) != eff["bin"]:
        return (f"{where}: {name} is {'' if eff['bin'] else 'not '}binned (wrong binning)",
                f"{where}: {name} expected {'' if want['bin'] else 'not '}binned")
    if "timeUnit" in want and _norm_unit(want["timeUnit"]) != eff["timeUnit"]:
        return (f"{where}: {name} time unit is {eff['timeUnit'] or 'none'} (wrong time unit)",
                f"{where}: {name} expected time unit {want['timeUnit'] or 'none'}")
    if "type" in want and eff["type"] not in _as_list(want["type"]):
        return (f"{where}: {name} has type {eff['type']} (wrong type)",
                f"{where}: {name} expected type {' or '.join(_as_list(want['type']))}")
    if "scale" in want:
        scale = fd.get("scale") if isinstance(fd.get("scale"), dict) else {}
        for k, v in want["scale"].items():
            if scale.get(k) != v:
                return (f"{where}: {name} scale {k} is {_short(scale.get(k))} (wrong value)",
                        f"{where}: {name} expected scale {k} {_short(v)}")
    if "stack" in want:
        got = fd.get("stack", "zero")
        if got is True:
            got = "zero"
        if got is False:
            got = None
        if got != want["stack"]:
            return (f"{where}: {name} stack is {_short(got)} (wrong stack)",
                    f"{where}: {name} expected stack {_short(want['stack'])}")
    return None


def mark_prop(got: dict, prop: str, config: dict | None):
    """The value Vega-Lite resolves for a mark property: the mark definition's own value, else the
    top-level config for that mark type (config.<mark>, e.g. config.boxplot.extent), else config.mark
    for primitive marks (composite marks such as boxplot read only their own config)."""
    if prop in got["mark_def"]:
        return got["mark_def"][prop]
    config = config if isinstance(config, dict) else {}
    own = config.get(got["mark"]) if isinstance(got["mark"], str) else None
    if isinstance(own, dict) and prop in own:
        return own[prop]
    generic = config.get("mark")
    if got["mark"] not in COMPOSITE_MARKS and isinstance(generic, dict) and prop in generic:
        return generic[prop]
    return None


COMPOSITE_MARKS = {"boxplot", "errorbar", "errorband"}


def check_view(want: dict, got: dict, where: str, config: dict | None = None) -> tuple[str, str] | None:
    """First difference between the intent view and the candidate's normalised view as (what the chart
    does, what the intent expects), or None. `config` is the spec's top-level config (mark defaults)."""
    kind = _view_kind(want)
    gkind = got["kind"]
    if kind in CONCATS:
        if gkind not in CONCATS or (kind != "concat" and gkind != kind):
            return f"{where}: the chart is a {gkind} (wrong composition)", f"{where}: expected a {kind} of views"
        if len(got["children"]) != len(want[kind]):
            return (f"{where}: {len(got['children'])} concatenated views (wrong number)",
                    f"{where}: expected {len(want[kind])} concatenated views")
        for i, (w, g) in enumerate(zip(want[kind], got["children"])):
            problem = check_view(w, g, f"{where}.{kind}[{i}]", config)
            if problem:
                return problem
        return None
    if kind != gkind:
        names = {"unit": "single view", "layer": "layer", "facet": "facet (trellis)"}
        return (f"{where}: the chart is a {names.get(gkind, gkind)} (wrong kind of view)",
                f"{where}: expected a {names.get(kind, kind)}")
    if kind == "layer":
        if len(got["children"]) != len(want["layer"]):
            return (f"{where}: {len(got['children'])} layers (wrong number)",
                    f"{where}: expected {len(want['layer'])} layers")
        for i, (w, g) in enumerate(zip(want["layer"], got["children"])):
            problem = check_view(w, g, f"{where}.layer[{i}]", config)
            if problem:
                return problem
        return None
    if kind == "facet":
        have = set(got["facet"])
        need = set(want["facet"])
        if have != need:
            return (f"{where}: facets by {', '.join(sorted(have)) or 'nothing'} (wrong facet channels)",
                    f"{where}: expected facets by {', '.join(sorted(need))}")
        for ch, w in want["facet"].items():
            problem = check_channel(ch, w, got["facet"][ch], got["transforms"], where)
            if problem:
                return problem
        return check_view(want["spec"], got["child"], f"{where}.spec", config)
    # unit
    marks = _as_list(want["mark"])
    if got["mark"] not in marks:
        return f"{where}: mark is {got['mark']!r} (wrong mark)", f"{where}: expected mark {marks[0]!r}"
    for k, v in (want.get("mark_props") or {}).items():
        if mark_prop(got, k, config) != v:
            return (f"{where}: mark property {k} is {_short(mark_prop(got, k, config))} (wrong value)",
                    f"{where}: expected mark property {k} {_short(v)}")
    for i, p in enumerate(want.get("params") or []):
        if not any(_param_matches(p, q) for q in got["params"]):
            have = ", ".join(_param_kind(q) for q in got["params"]) or "none"
            return (f"{where}: a required selection parameter is missing (the chart has: {have})",
                    f"{where}: expected a {_param_kind(p)} selection parameter")
    enc = got["encoding"]
    wanted = want.get("encoding") or {}
    for ch, w in wanted.items():
        if ch not in enc or not _data_bearing(enc[ch]):
            return f"{where}: no {ch} encoding", f"{where}: expected a {ch} encoding with {_describe(w)}"
        problem = check_channel(ch, w, enc[ch], got["transforms"], where)
        if problem:
            return problem
    if not want.get("extra_channels"):
        extra = sorted(ch for ch, fd in enc.items()
                       if ch not in wanted and ch not in IGNORED_CHANNELS and _data_bearing(fd))
        if extra:
            return (f"{where}: unexpected {extra[0]} encoding {_short(enc[extra[0]])}",
                    f"{where}: expected only the channels {', '.join(wanted) or '(none)'}")
    return None


def _param_kind(p: dict) -> str:
    sel = p.get("select")
    kind = sel.get("type") if isinstance(sel, dict) else sel
    if kind is None:
        return "variable"
    enc = (p.get("select") or {}).get("encodings") if isinstance(p.get("select"), dict) else p.get("encodings")
    return f"{kind}" + (f" over {'/'.join(enc)}" if enc else "")


def _param_matches(want: dict, got: dict) -> bool:
    sel = got.get("select")
    kind = sel.get("type") if isinstance(sel, dict) else sel
    if kind != want.get("select"):
        return False
    opts = sel if isinstance(sel, dict) else {}
    for key in ("encodings", "fields"):
        if key in want and sorted(opts.get(key) or []) != sorted(want[key]):
            return False
    return True


def _describe(w: dict) -> str:
    parts = [f"{k}={v}" for k, v in w.items() if k in ("aggregate", "field", "type", "timeUnit")]
    return ", ".join(parts) or "a field"


def sort_channels(view: dict, out: list | None = None) -> list:
    out = [] if out is None else out
    kind = _view_kind(view)
    if kind == "unit":
        out += [ch for ch, w in (view.get("encoding") or {}).items() if w.get("sort")]
    elif kind == "layer":
        for v in view["layer"]:
            sort_channels(v, out)
    elif kind == "facet":
        sort_channels(view["spec"], out)
    elif kind in CONCATS:
        for v in view[kind]:
            sort_channels(v, out)
    return sorted(set(out))



def _title_text(spec: dict):
    t = spec.get("title")
    if isinstance(t, dict):
        t = t.get("text")
    if isinstance(t, list):
        t = " ".join(str(x) for x in t)
    return t
