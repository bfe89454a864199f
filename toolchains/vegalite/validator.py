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

import json
import shutil
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain

from .data_compare import compare_marks, compare_scales
from .intent import _short, _title_text, check_view, sort_channels, views

HERE = Path(__file__).resolve().parent
SYNTAX_RUNNER = HERE / "run_vegalite.py"
DATA_RUNNER = HERE / "run_vegalite.js"
VL_VERSION = "5.21"                   # vl-convert's Vega-Lite 5 (the same as the npm vega-lite pin)
GOLD_IN_WORK = ".gold.vl.json"
SYNTAX_REPORT = ".syntax-report.json"
DATA_REPORT = ".data-report.json"


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

    PACKAGES = {"vl-convert-python": None, "jsonschema": None}
    BINARIES = {"node": (["node", "--version"], r"(v\S+)")}
    INSTALL_HINT = "requirements.txt; node from Debian nodejs"

    def probe(self) -> Probe:
        """The declared parts, after the npm packages in node_modules (vega, Vega-Lite 5 with its schema)."""
        missing = [f"npm {pkg}" for pkg in ("vega", "vega-lite") if self._npm_version(pkg) is None]
        if missing:
            return self.unavailable(f"missing: {', '.join(missing)} (run `npm ci` in toolchains/vegalite)")
        vl = self._npm_version("vega-lite")
        if not vl.startswith("5.") or not self.schema_path.exists():
            return self.unavailable(f"npm vega-lite {vl} is not Vega-Lite 5 with its JSON schema")
        return super().probe()

    def describe(self, versions: dict[str, str]) -> str:
        return (f"vega-lite {self._npm_version('vega-lite')} (v5 schema, npm) + vl-convert-python "
                f"{versions['vl-convert-python']} (VL {VL_VERSION}) + jsonschema {versions['jsonschema']}; "
                f"vega {self._npm_version('vega')} on node {versions['node']}")

    # --- oracle spec ---------------------------------------------------------------------------
    def oracle_rules(self, task):
        o, problems = task.oracle, []
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
        result, report = self.run_runner([SYNTAX_RUNNER, self.schema_path],
                                         [SYNTAX_REPORT, self.schema_path.name, VL_VERSION, self.file_name], work,
                                         report=SYNTAX_REPORT)
        if result.timed_out:
            return self.verdict("fail", "validation timed out", result)
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
        for name in (".run_vegalite.js", DATA_REPORT):   # as run_runner does for a Python runner
            (work / name).unlink(missing_ok=True)
        shutil.copy(DATA_RUNNER, work / ".run_vegalite.js")
        result = self.run(["node", "--max-old-space-size=1024", ".run_vegalite.js", DATA_REPORT, GOLD_IN_WORK,
                           self.file_name], work, env={"NODE_PATH": str(self.node_modules)}, memory_mb=4096)
        report = self.read_report(work / DATA_REPORT, result)   # read whatever the exit: a cut-off run keeps the gold's
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

