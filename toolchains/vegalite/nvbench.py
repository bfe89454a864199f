"""Import nvBench (github TsinghuaDatabaseGroup/nvBench, SIGMOD 2021) as its authors publish it.

Layout of the repository: NVBench.json (records keyed by (NL, VIS) id: vis_query, chart, hardness,
db_id, vis_obj {x_name, y_name, x_data, y_data, classify}, nl_queries), nvBench_VegaLite/VIS_<n>.html
(one page per record, the same facts rendered), databases.zip. A clone or snapshot may lack the large
files, so the importer reads nvBench_VegaLite/ when it is there (the clone, or that folder itself) and
NVBench.json otherwise (the clone, or the file itself).

A page holds, in this order: `<h4>NL Queries: </h4><ol><li><p>...</p></li>...</ol>`, `<h4>VIS Query:
</h4><p>VQL</p>`, a properties cell `<b>(NL, VIS) ID: </b>KEY`, `Hardness`, `Chart`, `DB`, a sample
of the main table, and the chart as `var vlSpec1 = {...};`. Quirks: the spec is a Python dict literal
(single quotes), read with ast.literal_eval, never executed; its rows use the field names x_data,
y_data and classify, the real axis names are the encoding titles; the x channel carries a sort on
every page (the renderer's default), so only the key's suffix `@x_name@ASC` / `@y_name@DESC` (the
upstream's ORDER BY marker, as in NVBench.json) says a sort was asked; scales say `zero: 'false'` as
a string and a series colour has no type. The page's spec is not copied: the gold is our own spec.

A task's data is the query result (the vis_obj rows) written as data.json; the gold is the Vega-Lite
chart of that table (no aggregation: the values are already aggregated); the oracle's intent is its
mark, channels, field names and types, and the recorded sort. The instruction is the first NL query
followed by our description of the data file and the chart, since the query names neither. Semantic
mutants are single edits of the gold the semantic level must kill: another mark, the rows with the
first row's y filtered out, x and y (theta and colour) swapped, the sort reversed when that changes the order.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each

BENCHMARK = "nvBench"
LICENCE = "MIT"                       # the nvBench README's licence
PAGES = "nvBench_VegaLite"
PAGE = re.compile(r"^VIS_(\d+)\.html$")
CHARTS = {            # nvBench chart name -> (mark, x type rule, grouped by series)
    "bar": ("bar", "discrete", False), "stacked bar": ("bar", "discrete", True),
    "pie": ("arc", "discrete", False),
    "line": ("line", "line", False), "grouping line": ("line", "line", True),
    "scatter": ("point", "scatter", False), "grouping scatter": ("point", "scatter", True),
}
HARDNESS = {"easy": "easy", "medium": "medium", "hard": "hard", "extra hard": "hard"}
OTHER_MARK = {"bar": "line", "line": "bar", "point": "line", "arc": "bar"}
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$")


# --- reading the published layout ------------------------------------------------------------------

def load(source: Path) -> Imported:
    source = Path(source)
    pages = source / PAGES if (source / PAGES).is_dir() else source
    if pages.is_dir() and any(PAGE.match(p.name) for p in pages.iterdir()):
        files = sorted((p for p in pages.iterdir() if PAGE.match(p.name)), key=lambda p: int(PAGE.match(p.name)[1]))
        return convert_each(((p.name, p) for p in files), lambda name, path: to_task(name, read_page(path)),
                            progress=True, total=len(files))
    path = source / "NVBench.json" if source.is_dir() else source
    if not path.is_file() or path.suffix != ".json":
        raise NotThisBenchmark(f"{source}: no {PAGES}/VIS_<n>.html pages and no NVBench.json "
                               "(give the nvBench clone, its nvBench_VegaLite folder or NVBench.json)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise NotThisBenchmark(f"{path}: cannot read nvBench JSON: {e}") from None
    if not isinstance(data, dict):
        raise NotThisBenchmark(f"{path}: NVBench.json must be a JSON object keyed by record id, "
                               f"got {type(data).__name__}")
    return convert_each(((str(k), v) for k, v in data.items()), to_task, progress=True, total=len(data))


def _cell(text: str, label: str) -> str:
    m = re.search(rf"<b>{re.escape(label)}: </b>(.*?)</p>", text, re.S)
    if not m:
        raise ValueError(f"no {label!r} in the properties cell")
    return m.group(1).strip()


def read_page(path: Path) -> dict:
    """One VIS_<n>.html page as a record in NVBench.json's shape (plus the page's file name)."""
    text = path.read_text(encoding="utf-8")
    ol = re.search(r"<h4>NL Queries: </h4><ol>(.*?)</ol>", text, re.S)
    vql = re.search(r"<h4>VIS Query: </h4><p>(.*?)</p>", text, re.S)
    spec = re.search(r"var vlSpec1\s*=\s*(\{.*?\});\s*\n", text, re.S)
    if not spec:
        raise ValueError("no `var vlSpec1 = {...};` chart in the page")
    spec = ast.literal_eval(spec.group(1))      # a Python literal: data only, never code
    enc = spec["encoding"]
    x, y = (enc["color"], enc["theta"]) if "theta" in enc else (enc["x"], enc["y"])
    rows = spec["data"]["values"]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError("data.values is not a list of rows")
    # the rows, one series per classify value (in order of appearance), as NVBench.json has them
    series = {}
    for r in rows:
        s = series.setdefault(r.get("classify"), ([], []))
        s[0].append(r["x_data"])
        s[1].append(r["y_data"])
    classes = [c for c in series if c is not None]
    return {"chart": _cell(text, "Chart"), "hardness": _cell(text, "Hardness"), "db_id": _cell(text, "DB"),
            "key": _cell(text, "(NL, VIS) ID"), "file": f"{PAGES}/{path.name}",
            "vis_query": {"VQL": vql.group(1).strip() if vql else ""},
            "vis_obj": {"x_name": x.get("title", ""), "y_name": y.get("title", ""),
                        "x_data": [s[0] for s in series.values()], "y_data": [s[1] for s in series.values()],
                        "classify": classes},
            "nl_queries": re.findall(r"<li><p>(.*?)</p></li>", ol.group(1), re.S) if ol else []}


# --- one record -> one task ------------------------------------------------------------------------

def field_name(name) -> str:
    """An axis name as a Vega-Lite field name: dots, brackets, backslashes would be read as nesting."""
    return re.sub(r"[.\[\]\\]", "_", str(name).strip())


def to_task(record_id: str, rec) -> dict | Skip:
    """The task of one record (NVBench.json's shape); a Skip with a reason code when there is none.
    A malformed record raises ValueError/KeyError (convert_each skips it as malformed_record)."""
    if not isinstance(rec, dict):
        raise ValueError(f"expected an object, got {type(rec).__name__}")
    rid = str(rec.get("key", record_id))          # the upstream (NL, VIS) id
    vis, queries = rec["vis_obj"], rec["nl_queries"]
    if not isinstance(vis, dict):
        raise ValueError("vis_obj must be an object")
    if not isinstance(queries, list):
        raise ValueError("nl_queries must be a list of strings")
    queries = [q for q in queries if isinstance(q, str) and q.strip()]    # pages have empty <li> items
    if not queries:
        return Skip(record_id, "no_nl_query", "no non-empty NL query")
    hardness = HARDNESS.get(str(rec["hardness"]).strip().lower())
    if hardness is None:
        raise ValueError(f"unknown hardness {rec['hardness']!r} (Easy, Medium, Hard, Extra Hard)")
    xs, ys, classes = vis["x_data"], vis["y_data"], vis.get("classify") or []
    if not isinstance(xs, list) or not isinstance(ys, list) or not isinstance(classes, list):
        raise ValueError("vis_obj.x_data, y_data and classify must be lists")
    if xs and not isinstance(xs[0], list):          # a single series written flat
        xs, ys = [xs], [ys]
    if len(xs) != len(ys) or any(not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b)
                                 for a, b in zip(xs, ys)):
        raise ValueError("vis_obj.x_data and y_data must be lists of equally long lists (one per series)")
    if classes and len(classes) != len(xs):
        raise ValueError(f"vis_obj.classify names {len(classes)} series but x_data has {len(xs)}")
    chart = str(rec["chart"]).strip().lower()
    if chart not in CHARTS:
        return Skip(record_id, "unknown_chart", f"chart type {rec['chart']!r} (known: {', '.join(CHARTS)})")
    mark, x_rule, grouped = CHARTS[chart]
    if grouped and not classes:
        return Skip(record_id, "no_series_names", f"a {rec['chart']} chart without series names (classify)")
    if not grouped and len(xs) > 1:
        return Skip(record_id, "several_series", f"a {rec['chart']} chart with {len(xs)} series")
    x_name, y_name = field_name(vis["x_name"]), field_name(vis["y_name"])
    if not x_name or not y_name or x_name == y_name:
        return Skip(record_id, "same_field_names",
                    f"x and y need two distinct names, got {vis['x_name']!r} and {vis['y_name']!r}")
    group = next(n for n in ("group", "series", "series_name") if n not in (x_name, y_name))
    rows = []
    for i, (xa, ya) in enumerate(zip(xs, ys)):
        for x, y in zip(xa, ya):
            rows.append({x_name: x, y_name: y, **({group: classes[i]} if grouped else {})})
    if not rows:
        return Skip(record_id, "no_rows", "no data rows in vis_obj")
    if not all(isinstance(r[y_name], (int, float)) and not isinstance(r[y_name], bool) for r in rows):
        return Skip(record_id, "non_numeric_y", "y values are not all numbers")
    x_values = [r[x_name] for r in rows]
    numeric_x = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in x_values)
    dated_x = all(isinstance(v, str) and ISO_DATE.match(v) for v in x_values)
    if x_rule == "discrete":
        x_type = "nominal"
    elif x_rule == "line":
        x_type = "temporal" if dated_x else "quantitative" if numeric_x else "ordinal"
    else:
        x_type = "quantitative" if numeric_x else "temporal" if dated_x else "nominal"

    axis, order = read_sort(rid, vis.get("sort"))   # read_page gives no sort: a page's is its renderer's
    sort_channel = "color" if mark == "arc" else "x" if x_type in ("nominal", "ordinal") else None
    if sort_channel is None:
        axis = order = None                   # a quantitative or temporal axis has no order to ask for
    by_y = {"field": y_name, "op": "sum", "order": order}   # bars of a stack: by their total
    sort = (by_y if axis == "y" else order) if order else None
    if mark == "arc":
        encoding = {"theta": {"field": y_name, "type": "quantitative"}, "color": {"field": x_name, "type": "nominal"}}
    else:
        encoding = {"x": {"field": x_name, "type": x_type}, "y": {"field": y_name, "type": "quantitative"}}
        if grouped:
            encoding["color"] = {"field": group, "type": "nominal"}
    intent = json.loads(json.dumps(encoding))
    if sort:
        encoding[sort_channel]["sort"] = sort
        intent[sort_channel]["sort"] = True
    gold = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "data": {"url": "data.json"},
            "mark": mark, "encoding": encoding}

    kinds = {"bar": "stacked bar chart" if grouped else "bar chart", "arc": "pie chart (arc mark)",
             "line": "line chart", "point": "scatter plot (point mark)"}
    fields = f"`{x_name}` ({x_type}), `{y_name}` (quantitative) and `{group}` (nominal, the series)" if grouped \
        else f"`{x_name}` ({x_type}) and `{y_name}` (quantitative)"
    layout = f"theta = `{y_name}`, color = `{x_name}` (nominal)" if mark == "arc" else \
        f"x = `{x_name}` ({x_type}), y = `{y_name}` (quantitative)" + (f", color = `{group}` (nominal)" if grouped else "")
    sort_text = ""
    if sort:
        what = "the slices (and the colour legend)" if mark == "arc" else "the x axis"
        key = (f"the total of `{y_name}`" if grouped else f"`{y_name}`") if axis == "y" else f"`{x_name}`"
        sort_text = f" Order {what} by {key}, {order}."
    instruction = (f"{queries[0].strip()}\n\nThe query result is in `data.json`, a JSON array of rows with the "
                   f"fields {fields}; the values are already aggregated, plot them as they are. Draw a "
                   f"{kinds[mark]} with {layout}, and no other encodings.{sort_text}\n")
    vql = rec.get("vis_query")
    return {
        "id": "vegalite-nvbench-" + (re.sub(r"[^a-z0-9]+", "-", rid.lower()).strip("-") or "record"),
        "dsl": "vegalite", "domain": "Data Visualization",
        "title": f"nvBench {rid}: {rec['chart']} of {y_name} by {x_name}"[:120],
        "difficulty": hardness,
        "constructs": [mark, "encoding"] + (["sort"] if sort else []) + (["color series"] if grouped else []),
        "failure_modes": [],
        "instruction": instruction,
        "context": {"data.json": "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n"},
        "gold": json.dumps(gold, indent=2, ensure_ascii=False) + "\n",
        "oracle": {"intent": {"mark": mark, "encoding": intent}},
        "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": rid, "licence": LICENCE,
                       **({"upstream_file": rec["file"]} if "file" in rec else {}),
                       "db_id": str(rec.get("db_id", "")),
                       "vql": str(vql.get("VQL", "")) if isinstance(vql, dict) else ""},
        "split": "test",
        "mutants": mutants(gold, rows, x_name, y_name, sort_channel, axis, order),
    }


def read_sort(rid: str, sort) -> tuple[str | None, str | None]:
    """(axis, order) of the sort nvBench records: vis_obj.sort ('asc'/'desc', {'x'|'y': 'asc'|'desc'})
    or else the record id suffix '@x_name@ASC' / '@y_name@DESC'."""
    axis = order = None
    m = re.search(r"@([xy])_name@(asc|desc)$", rid, re.I)
    if m:
        axis, order = m.group(1).lower(), m.group(2).lower()
    if isinstance(sort, dict) and sort:
        k, v = next(iter(sort.items()))
        axis, order = str(k).lower()[:1], str(v).lower()
    elif isinstance(sort, str) and sort.strip():
        order = sort.strip().lower()
        axis = axis or "x"
    if order is None:
        return None, None
    order = {"asc": "ascending", "ascending": "ascending", "desc": "descending", "descending": "descending"}.get(order)
    if order is None or axis not in ("x", "y"):
        raise ValueError(f"cannot read the sort {sort!r}")
    return axis, order


# --- semantic mutants ------------------------------------------------------------------------------

def mutants(gold: dict, rows: list, x_name: str, y_name: str, sort_channel, axis, order) -> list[dict]:
    """Single edits of the gold that must pass syntax and fail the semantic level."""
    def edited(note, change):
        spec = json.loads(json.dumps(gold))
        change(spec, spec["encoding"])
        return {"level": "semantic", "program": json.dumps(spec, indent=2, ensure_ascii=False) + "\n", "note": note}

    out = [edited(f"mark {gold['mark']} -> {OTHER_MARK[gold['mark']]}",
                  lambda s, e: s.update(mark=OTHER_MARK[gold["mark"]]))]
    # every row with the first row's y filtered out: fewer drawn items. By y, a number: a date x is
    # parsed to a Date, which no `equal` string matches
    first = rows[0][y_name]
    out.append(edited(f"rows with {y_name} = {first!r} filtered out",
                      lambda s, e: s.update(transform=[{"filter": {"not": {"field": y_name, "equal": first}}}])))
    a, b = ("theta", "color") if gold["mark"] == "arc" else ("x", "y")

    def swap(s, e):
        e[a]["field"], e[b]["field"] = e[b]["field"], e[a]["field"]
    out.append(edited(f"{a} and {b} fields swapped", swap))
    if order and len(sort_keys(rows, x_name, y_name, axis)) > 1:
        other = {"ascending": "descending", "descending": "ascending"}[order]

        def reverse(s, e):
            sort = e[sort_channel]["sort"]
            e[sort_channel]["sort"] = {**sort, "order": other} if isinstance(sort, dict) else other
        out.append(edited(f"{sort_channel} order {order} -> {other}", reverse))
    return out


def sort_keys(rows: list, x_name: str, y_name: str, axis: str) -> set:
    """The distinct keys the sort orders by; reversing it changes the order only when all differ."""
    if axis == "x":
        keys = {json.dumps(r[x_name]) for r in rows}
        return keys
    totals = {}
    for r in rows:
        totals[json.dumps(r[x_name])] = totals.get(json.dumps(r[x_name]), 0) + r[y_name]
    values = list(totals.values())
    return set(values) if len(set(values)) == len(values) else set()
