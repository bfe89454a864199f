"""Measure how the two embeddable engines run the Cypher tasks' gold queries: FalkorDB vs Kuzu.

usage: .venv/bin/python toolchains/cypher/compare_engines.py --kuzu-python PATH [--json OUT]

FalkorDB runs through the validator's sandboxed runner. Kuzu (PyPI `kuzu`, not a project
requirement) runs in a separate interpreter that has it installed (PATH), e.g. a throwaway venv:
`python3.11 -m venv /tmp/kuzu && /tmp/kuzu/bin/pip install kuzu==0.11.3`. Kuzu needs typed tables, so
each fixture graph is exported from FalkorDB and re-created in Kuzu with one node table per node's first
label (multi-label nodes keep only that label, as Kuzu allows one) and one relationship table per type.
A gold query counts as correct on Kuzu when it runs and its result (and, for write tasks, the check
queries' results) equals FalkorDB's, whose results were checked by hand against the fixtures.
Only trusted gold queries run here; this is a measurement tool, not part of validation.
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lib"))
from dslbench import toolchains  # noqa: E402
from dslbench.tasks import load_tasks  # noqa: E402

KUZU_SCRIPT = r'''
import json, sys, time
import kuzu

def kuzu_type(values):
    vs = [v for v in values if v is not None]
    if vs and all(isinstance(v, bool) for v in vs): return "BOOLEAN"
    if vs and all(isinstance(v, int) and not isinstance(v, bool) for v in vs): return "INT64"
    if vs and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs): return "DOUBLE"
    if vs and all(isinstance(v, list) for v in vs): return "STRING[]"
    return "STRING"

def build(conn, graph):
    tables = {}
    for n in graph["nodes"]:
        tables.setdefault(n["labels"][0], []).append(n)
    label_of = {n["id"]: n["labels"][0] for n in graph["nodes"]}
    for label, nodes in tables.items():
        keys = sorted({k for n in nodes for k in n["props"]})
        cols = "".join(f", {k} {kuzu_type([n['props'].get(k) for n in nodes])}" for k in keys)
        conn.execute(f"CREATE NODE TABLE `{label}`(nid INT64{cols}, PRIMARY KEY (nid))")
        for n in nodes:
            props = {"nid": n["id"], **n["props"]}
            conn.execute(f"CREATE (:`{label}` {{" + ", ".join(f"{k}: ${k}" for k in props) + "})", props)
    rels = {}
    for r in graph["rels"]:
        rels.setdefault(r["type"], []).append(r)
    for rtype, rs in rels.items():
        pairs = sorted({(label_of[r["src"]], label_of[r["dst"]]) for r in rs})
        keys = sorted({k for r in rs for k in r["props"]})
        cols = "".join(f", {k} {kuzu_type([r['props'].get(k) for r in rs])}" for k in keys)
        conn.execute(f"CREATE REL TABLE `{rtype}`(" + ", ".join(f"FROM `{a}` TO `{b}`" for a, b in pairs) + cols + ")")
        for r in rs:
            a, b = label_of[r["src"]], label_of[r["dst"]]
            sets = "".join(f", {k}: ${k}" for k in r["props"])
            conn.execute(f"MATCH (a:`{a}`), (b:`{b}`) WHERE a.nid = $s AND b.nid = $d "
                         f"CREATE (a)-[:`{rtype}` {{{sets[2:]}}}]->(b)", {"s": r["src"], "d": r["dst"], **r["props"]})

def plain(v):
    if isinstance(v, dict):
        if "_label" in v and "_id" in v:
            return {"~node": {"labels": [v["_label"]], "properties": {k: plain(x) for k, x in v.items()
                                                                  if not k.startswith("_") and k != "nid" and x is not None}}}
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if type(v).__name__ == "Decimal":          # Kuzu's sum() of INT64 is an INT128
        return int(v) if v == int(v) else float(v)
    return repr(v)

job = json.load(open(sys.argv[1]))
out = {}
for t in job["tasks"]:
    t0 = time.monotonic()
    db = kuzu.Database(":memory:")
    conn = kuzu.Connection(db)
    build(conn, job["graphs"][t["graph"]])
    t1 = time.monotonic()
    steps = []
    for q in t["steps"]:
        try:
            res = conn.execute(q)
            cols = res.get_column_names()
            rows = []
            while res.has_next():
                rows.append([plain(v) for v in res.get_next()])
            steps.append({"ok": True, "columns": cols, "rows": rows})
        except Exception as e:
            steps.append({"ok": False, "error": str(e).splitlines()[0][:300]})
            break
    out[t["id"]] = {"steps": steps, "load_s": t1 - t0, "query_s": time.monotonic() - t1}
json.dump(out, open(sys.argv[2], "w"))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kuzu-python", required=True, help="a Python interpreter that can import kuzu")
    ap.add_argument("--json", help="write the per-task table here")
    args = ap.parse_args()
    tc = toolchains.get("cypher")
    V = sys.modules[type(tc).__module__]
    tasks = load_tasks(["cypher"])["cypher"]

    # FalkorDB: export the graphs, and time each gold evaluation as the validator runs it.
    graphs, falkor = {}, {}
    for name in V.bundled_graphs():
        task = next(t for t in tasks if t.oracle["graph"] == name)
        work = V._workdir()
        items = [{"name": "dump", "graph": name, "steps": [
            "MATCH (n) RETURN id(n), labels(n), properties(n)",
            "MATCH (a)-[r]->(b) RETURN id(a), type(r), id(b), properties(r)"]}]
        _, report = tc._falkordb_run(work, task, "semantic", items, V.GRAPHS / f"{name}.cypher")
        shutil.rmtree(work, ignore_errors=True)
        nodes, rels = report["items"]["dump"]["steps"]
        graphs[name] = {"nodes": [{"id": i, "labels": ls, "props": p} for i, ls, p in nodes["rows"]],
                        "rels": [{"src": a, "type": t, "dst": b, "props": p} for a, t, b, p in rels["rows"]]}
    for task in tasks:
        work = V._workdir()
        steps = [V.strip_query(task.gold), *task.oracle.get("check", [])]
        t0 = time.monotonic()
        _, report = tc._falkordb_run(work, task, "semantic", [{"name": "gold", "graph": task.oracle["graph"],
                                                               "steps": steps}], V.GRAPHS / f"{task.oracle['graph']}.cypher")
        falkor[task.id] = {"steps": report["items"]["gold"]["steps"], "seconds": time.monotonic() - t0}
        shutil.rmtree(work, ignore_errors=True)

    # Kuzu, in its own interpreter.
    tmp = V._workdir()
    job = {"graphs": graphs, "tasks": [{"id": t.id, "graph": t.oracle["graph"],
                                        "steps": [V.strip_query(t.gold), *t.oracle.get("check", [])]} for t in tasks]}
    (tmp / "job.json").write_text(json.dumps(job))
    (tmp / "kuzu_job.py").write_text(KUZU_SCRIPT)
    t0 = time.monotonic()
    subprocess.run([args.kuzu_python, str(tmp / "kuzu_job.py"), str(tmp / "job.json"), str(tmp / "out.json")],
                   check=True)
    kuzu_total = time.monotonic() - t0
    kuzu = json.loads((tmp / "out.json").read_text())
    version = subprocess.run([args.kuzu_python, "-c", "import kuzu; print(kuzu.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for task in tasks:
        f, k = falkor[task.id], kuzu[task.id]
        f_ok = all(s["ok"] for s in f["steps"])
        k_runs = all(s["ok"] for s in k["steps"]) and len(k["steps"]) == len(f["steps"])
        why = next((s["error"] for s in k["steps"] if not s["ok"]), "")
        k_same = False
        if k_runs:
            check = task.oracle.get("check", [])
            diffs = []
            if not check:
                diffs.append(V.compare_results(k["steps"][0], f["steps"][0], V.ends_with_order_by(task.gold)))
            for i, q in enumerate(check, start=1):
                diffs.append(V.compare_results(k["steps"][i], f["steps"][i], V.ends_with_order_by(q)))
            k_same = all(d is None for d in diffs)
            why = next((f"{d[0]} (FalkorDB: {d[1]})" for d in diffs if d), "")
        rows.append({"task": task.id, "falkordb_runs": f_ok, "falkordb_s": round(f["seconds"], 3),
                     "kuzu_runs": k_runs, "kuzu_correct": k_same, "kuzu_query_s": round(k["query_s"], 4),
                     "kuzu_load_s": round(k["load_s"], 3), "kuzu_problem": why[:110]})
    for r in rows:
        print(f"{r['task']}  falkordb {'ok ' if r['falkordb_runs'] else 'ERR'} {r['falkordb_s']:6.2f}s   "
              f"kuzu {'correct' if r['kuzu_correct'] else ('wrong  ' if r['kuzu_runs'] else 'error  ')} "
              f"{r['kuzu_problem']}")
    n = len(rows)
    print(f"\nFalkorDB ({toolchains.probe('cypher').version}): {sum(r['falkordb_runs'] for r in rows)}/{n} golds run; "
          f"median {statistics.median(r['falkordb_s'] for r in rows):.2f} s per sandboxed evaluation "
          "(server start, fixture load, copy, query)")
    print(f"Kuzu {version}: {sum(r['kuzu_runs'] for r in rows)}/{n} golds run, "
          f"{sum(r['kuzu_correct'] for r in rows)}/{n} give FalkorDB's (hand-checked) result; median "
          f"{statistics.median(r['kuzu_load_s'] for r in rows):.2f} s to build the typed graph + "
          f"{statistics.median(r['kuzu_query_s'] for r in rows) * 1000:.1f} ms per gold, unsandboxed "
          f"({kuzu_total:.1f} s in all)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
