"""Vega-Lite: syntax = JSON + the Vega-Lite v5 JSON schema + compilation to Vega (vl-convert);
semantic = chart-intent structural checks plus equality of the chart's computed data with the gold's.

Toolchain (all in the sandbox): `run_vegalite.py` (venv python: jsonschema against the v5 schema
shipped by npm vega-lite 5.21.0, then vl_convert.vegalite_to_vega at Vega-Lite 5.21) for syntax;
`run_vegalite.js` (node: npm vega-lite 5.21.0 compiles, npm vega 5.33 runs the dataflow headless,
no renderer) for the data each mark draws. The candidate spec is only parsed as JSON in this
process (never executed); the intent checks work on that parsed JSON.

Oracle spec (task.oracle):

  intent: VIEW            required: the chart the instruction asks for
  data: true              optional (default true): compare the computed mark data with the gold's
  title: TEXT             optional: the chart title (string, or the `text` of a title object)

VIEW is one of (every key not listed is an error):
  {mark: MARK | [MARK, ...], mark_props: {prop: value}, encoding: {CHANNEL: CHANNEL_INTENT},
   params: [{select: point|interval, encodings: [...], fields: [...]}], extra_channels: false}
                                                  a single view (unit); mark_props are compared
                                                  with the mark definition's properties, params
                                                  must each match a selection parameter of the
                                                  view or its ancestors (encodings/fields optional)
  {layer: [VIEW, ...]}                            layers, in drawing order
  {facet: {row|column|facet: CHANNEL_INTENT}, spec: VIEW}   a trellis (facet operator, or
                                                  row/column/facet channels of a unit: same thing)
  {concat|hconcat|vconcat: [VIEW, ...]}           concatenation (a repeat is expanded to its
                                                  concatenation / layers first); `concat` accepts
                                                  any of the three
CHANNEL_INTENT keys, each optional (an absent key is not checked):
  field: NAME | [NAME, ...]       source field; a field computed by a transform is resolved
                                  through aggregate/bin/timeUnit transforms to its source field;
                                  one computed by calculate/window/fold/... is accepted here (the
                                  data comparison judges it)
  type: TYPE | [TYPE, ...]        quantitative | nominal | ordinal | temporal | geojson; the
                                  candidate's type is the one it gives or Vega-Lite 5's default
  aggregate: OP | null            the aggregate op (encoding `aggregate` or an aggregate transform);
                                  null = none
  bin: true | false               binned (encoding `bin` or a bin transform)
  timeUnit: UNIT | null           time unit (encoding or timeUnit transform); `utc` prefix ignored
  scale: {prop: value}            properties of the channel's `scale`, e.g. {type: log}
  stack: VALUE                    the channel's `stack` (zero/normalize/center/null; default zero)
  sort: true                      the channel's discrete scale domain (e.g. bar order) must equal
                                  the gold chart's, in order

A unit's channels must be exactly the intent's: a missing one fails, and so does an extra
data-bearing channel (tooltip, href, description, key and constant `value` channels excepted)
unless extra_channels is true.

Data comparison: both charts run headless on the task's context files. Every mark Vega draws for
a view (role "mark": not axes, legends, headers) is paired with the gold's in drawing order; its
items' data tuples are projected onto the Vega encoding properties that read data (x, y, y2, fill,
theta angles, text...) plus the keys of the facet/series groups they are drawn in, and compared as
multisets of rows (numbers with relative tolerance 1e-6; numeric strings count as numbers). Field
names do not matter (sum_revenue and a transform's `total` compare equal); values, the
aggregation, binning, stacking, filtering and faceting they result from do.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain

HERE = Path(__file__).resolve().parent
SYNTAX_RUNNER = HERE / "run_vegalite.py"
DATA_RUNNER = HERE / "run_vegalite.js"
VL_VERSION = "5.21"                   # vl-convert's Vega-Lite 5 (the same as the npm vega-lite pin)
SCHEMA_IN_WORK = ".vega-lite-v5.schema.json"
GOLD_IN_WORK = ".gold.vl.json"
SYNTAX_REPORT = ".syntax-report.json"
DATA_REPORT = ".data-report.json"

MARKS = ("arc", "area", "bar", "image", "line", "point", "rect", "rule", "text", "tick", "trail", "circle",
         "square", "geoshape", "boxplot", "errorbar", "errorband")
CHANNELS = ("x", "y", "x2", "y2", "xOffset", "yOffset", "theta", "theta2", "radius", "radius2", "longitude",
            "latitude", "longitude2", "latitude2", "color", "fill", "stroke", "opacity", "fillOpacity",
            "strokeOpacity", "strokeWidth", "strokeDash", "size", "angle", "shape", "text", "detail", "order",
            "xError", "yError", "xError2", "yError2", "key", "tooltip", "href", "url", "description",
            "row", "column", "facet")
FACET_CHANNELS = ("row", "column", "facet")
IGNORED_CHANNELS = ("tooltip", "href", "description", "key")
TYPES = ("quantitative", "nominal", "ordinal", "temporal", "geojson")
AGGREGATES = ("argmax", "argmin", "average", "count", "distinct", "max", "mean", "median", "min", "missing",
              "product", "q1", "q3", "ci0", "ci1", "stderr", "stdev", "stdevp", "sum", "valid", "values",
              "variance", "variancep", "exponential", "exponentialb")
COUNTING = ("count", "valid", "missing", "distinct")
UNIT_PARTS = ("year", "quarter", "month", "week", "day", "dayofyear", "date", "hours", "minutes", "seconds",
              "milliseconds")
SCALE_CATEGORY = {"linear": "quantitative", "log": "quantitative", "pow": "quantitative", "sqrt": "quantitative",
                  "symlog": "quantitative", "quantile": "quantitative", "quantize": "quantitative",
                  "threshold": "quantitative", "bin-ordinal": "quantitative", "identity": "quantitative",
                  "sequential": "quantitative", "time": "temporal", "utc": "temporal"}
VIEW_KEYS = {"unit": {"mark", "mark_props", "encoding", "extra_channels", "params"}, "layer": {"layer"},
             "facet": {"facet", "spec"}, "concat": {"concat"}, "hconcat": {"hconcat"}, "vconcat": {"vconcat"}}
CHANNEL_KEYS = {"field", "type", "aggregate", "bin", "timeUnit", "scale", "stack", "sort"}
ORACLE_KEYS = {"intent", "data", "title"}
CONCATS = ("concat", "hconcat", "vconcat")
REL_TOL = 1e-6


# --- parsing helpers shared by check_oracle and the intent check --------------------------------

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


# --- data comparison ---------------------------------------------------------------------------

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


def _title_text(spec: dict):
    t = spec.get("title")
    if isinstance(t, dict):
        t = t.get("text")
    if isinstance(t, list):
        t = " ".join(str(x) for x in t)
    return t


# --- the validator -------------------------------------------------------------------------------

class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # JSON + the Vega-Lite schema
    SEMANTIC_FAIL = "oracle_mismatch"  # chart-intent checks

    @property
    def node_modules(self) -> Path:
        return self.folder / "node_modules"

    @property
    def schema_path(self) -> Path:
        return self.node_modules / "vega-lite" / "build" / "vega-lite-schema.json"

    def _npm_version(self, pkg: str) -> str | None:
        try:
            return json.loads((self.node_modules / pkg / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return None

    def probe(self) -> Probe:
        name = self.card["toolchain"]
        missing = []
        versions = {}
        for dist in ("vl-convert-python", "jsonschema"):
            try:
                versions[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                missing.append(f"PyPI {dist}")
        node = shutil.which("node")
        if not node:
            missing.append("node (Debian nodejs)")
        for pkg in ("vega", "vega-lite"):
            v = self._npm_version(pkg)
            if v is None:
                missing.append(f"npm {pkg} (run `npm ci` in toolchains/vegalite)")
            versions[pkg] = v
        if missing:
            return Probe(self.dsl, name, "", False, "missing: " + ", ".join(missing))
        if not versions["vega-lite"].startswith("5.") or not self.schema_path.exists():
            return Probe(self.dsl, name, "", False,
                         f"npm vega-lite {versions['vega-lite']} is not Vega-Lite 5 with its JSON schema")
        node_version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
        version = (f"vega-lite {versions['vega-lite']} (v5 schema, npm) + vl-convert-python {versions['vl-convert-python']} "
                   f"(VL {VL_VERSION}) + jsonschema {versions['jsonschema']}; vega {versions['vega']} on node {node_version}")
        return Probe(self.dsl, name, version, True, dialect=self.card["dialect"])

    # --- oracle spec ---------------------------------------------------------------------------
    def check_oracle(self, task):
        o = task.oracle
        problems = [(k, f"unknown key (allowed: {', '.join(sorted(ORACLE_KEYS))})") for k in o if k not in ORACLE_KEYS]
        if "intent" not in o:
            problems.append(("intent", "missing required field: the chart the instruction asks for"))
        else:
            problems += _check_view_spec(o["intent"], "intent")
        if "data" in o and not isinstance(o["data"], bool):
            problems.append(("data", "must be true or false"))
        if "title" in o and not isinstance(o["title"], str):
            problems.append(("title", "must be a string"))
        try:
            gold = json.loads(task.gold)
        except json.JSONDecodeError as e:
            return problems + [("", f"the gold is not JSON (line {e.lineno}: {e.msg})")]
        if not isinstance(gold, dict):
            return problems + [("", "the gold must be a Vega-Lite spec (a JSON object)")]
        for url in data_urls(gold):
            if url not in task.context:
                problems.append(("", f"the gold loads {url!r}, which is not a context file of the task"))
        if o.get("data", True) and not data_urls(gold) and "values" not in json.dumps(gold):
            problems.append(("data", "the gold loads no data: nothing to compare (set data: false)"))
        return problems

    # --- syntax --------------------------------------------------------------------------------
    def syntax(self, program, task, work):
        shutil.copy(SYNTAX_RUNNER, work / ".run_vegalite.py")
        shutil.copy(self.schema_path, work / SCHEMA_IN_WORK)
        result = self.run([Path(sys.executable).name, ".run_vegalite.py", SYNTAX_REPORT, SCHEMA_IN_WORK, VL_VERSION,
                           self.file_name], work)
        if result.timed_out:
            return self.verdict("fail", "validation timed out", result)
        report = _read_report(work / SYNTAX_REPORT)
        if report is None or self.file_name not in report:
            return self.verdict("error", f"syntax runner failed (exit {result.returncode})", result)
        entry = report[self.file_name]
        if not entry["ok"]:
            return self.verdict("fail", entry["error"], result)
        return self.verdict("pass", "valid Vega-Lite v5 JSON; compiles to Vega", result)

    # --- semantics -----------------------------------------------------------------------------
    def semantic(self, program, task, work):
        spec = json.loads(program)     # parsed only; the syntax level has accepted it
        problem = check_view(task.oracle["intent"], views(spec), "chart", spec.get("config"))
        if problem is None and "title" in task.oracle and _title_text(spec) != task.oracle["title"]:
            problem = (f"chart: title is {_short(_title_text(spec))} (wrong title)",
                       f"chart: expected title {_short(task.oracle['title'])}")
        if problem:
            return self.verdict("fail", f"intent: {problem[0]}", duration_s=0.0,
                                expected=f"intent: {problem[1]}" if problem[1] else "")
        channels = sort_channels(task.oracle["intent"])
        if not task.oracle.get("data", True) and not channels:
            return self.verdict("pass", "chart intent matches (no data comparison for this task)", duration_s=0.0)
        (work / GOLD_IN_WORK).write_text(task.gold, encoding="utf-8")
        shutil.copy(DATA_RUNNER, work / ".run_vegalite.js")
        result = self.run(["node", "--max-old-space-size=1024", ".run_vegalite.js", DATA_REPORT, GOLD_IN_WORK,
                           self.file_name], work, env={"NODE_PATH": str(self.node_modules)}, memory_mb=4096)
        report = _read_report(work / DATA_REPORT)
        gold = (report or {}).get(GOLD_IN_WORK)
        if gold is None or not gold["ok"]:
            why = gold["error"] if gold else f"exit {result.returncode}"
            return self.verdict("error", f"the gold chart does not run: {why}", result, reason="gold_broken")
        cand = report.get(self.file_name)
        if cand is None:
            if result.timed_out:
                return self.verdict("fail", f"the chart's dataflow timed out after {self.limits().timeout_s:.0f} s", result)
            return self.verdict("fail", f"the chart's dataflow was killed (exit {result.returncode}; memory?)", result)
        if not cand["ok"]:
            return self.verdict("fail", f"Vega cannot run the chart ({cand['stage']}): {cand['error'][:240]}", result)
        if task.oracle.get("data", True):
            problem = compare_marks(cand["marks"], gold["marks"])
            if problem:
                what, want = problem
                errors = [w for w in cand["warnings"] if w.startswith("error") or "Loading failed" in w]
                if errors and not errors[0] in gold["warnings"]:
                    what += f" ({errors[0][:160]})"
                return self.verdict("fail", f"data: {what}", result, expected=f"data: {want}")
        absent = [ch for ch in channels if ch not in gold["scales"]]
        if absent:
            return self.verdict("error", f"the gold chart has no top-level {absent[0]} scale whose order could be "
                                         f"compared (oracle: sort)", result, reason="gold_broken")
        problem = compare_scales(cand["scales"], gold["scales"], channels)
        if problem:
            return self.verdict("fail", f"sort: {problem[0]}", result, expected=f"sort: {problem[1]}")
        rows = sum(len(m["rows"]) for m in gold["marks"])
        return self.verdict("pass", f"chart intent matches; {len(gold['marks'])} mark(s), {rows} drawn item(s) equal "
                                    f"the gold chart's" + (f"; {', '.join(channels)} order equal" if channels else ""),
                            result)

    # --- upstream: nvBench ---------------------------------------------------------------------
    def import_upstream(self, source: Path):
        """nvBench as published (nvBench_VegaLite/VIS_<n>.html pages, or NVBench.json). See nvbench.py."""
        from . import nvbench
        return nvbench.load(Path(source))


def _read_report(path: Path):
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


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
