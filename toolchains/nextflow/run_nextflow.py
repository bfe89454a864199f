"""Runs inside the sandbox: judge one Nextflow script and write a JSON report.

usage: python run_nextflow.py syntax PROGRAM REPORT
       python run_nextflow.py semantic PROGRAM ORACLE.json REPORT
syntax: the real `nextflow` (preview run: compiles the script and builds the DAG, runs no task)
when it is on PATH, otherwise the Groovy 2.4 parser (CONVERSION phase, one JVM start) followed
by our DSL2 structure parser (nf_struct.py). semantic: the structure parser and the task's oracle.
Included modules present in the work directory (task context files) are parsed for arities.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nf_struct

JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:CICompilerCount=1 -Xss4m -Xmx384m -Xshare:auto"


def first_line(text, keys=("error", "unexpected", "expecting")):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if any(k in l.lower() for k in keys):
            return l[:300]
    return lines[0][:300] if lines else ""


def included_models(model):
    out = {}
    for inc in model["includes"].values():
        for cand in (inc["path"] + ".nf", inc["path"] + "/main.nf", inc["path"]):
            p = Path(cand)
            if p.is_file() and inc["path"] not in out:
                out[inc["path"]] = nf_struct.parse(p.read_text(encoding="utf-8"))
    return out


def groovy_parse(program):
    # user.home = the private work dir (JVM would use nobody's /nonexistent): @Grab then fails the same way
    # on every run (no network in the sandbox) instead of with a temp-file name in the message.
    env = dict(os.environ, JAVA_HOME=os.environ.get("JAVA_HOME", JAVA_HOME),
               JAVA_OPTS=f"-Duser.home={os.getcwd()} {JAVA_OPTS}")
    text = Path(program).read_text(encoding="utf-8")
    # Groovy 3 / Nextflow syntax that 2.4 lacks (see these three functions)
    joined = nf_struct.renamed_in_parameters(nf_struct.one_call_declarations(nf_struct.one_line_interpolations(text)))
    if joined != text:
        Path("groovy24").mkdir(exist_ok=True)
        program = os.path.join("groovy24", os.path.basename(program))
        Path(program).write_text(joined, encoding="utf-8")
    r = subprocess.run(["groovy", "parse_nf.groovy", program], capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            return {"judge": "groovy", "ok": rec["ok"], "error": rec["error"]}
    return {"judge": "groovy", "ok": None, "error": f"groovy exit {r.returncode}: {first_line(r.stderr)}"}


def nextflow_preview(program):
    env = dict(os.environ, NXF_HOME=os.environ.get("NXF_HOME") or os.path.abspath(".nextflow-home"), NXF_OFFLINE="true",
               NXF_DISABLE_CHECK_LATEST="true", NXF_ANSI_LOG="false")
    r = subprocess.run(["nextflow", "-q", "run", program, "-preview", "-stub-run"], capture_output=True, text=True,
                       env=env)
    if r.returncode == 0:
        return {"judge": "nextflow", "ok": True, "error": ""}
    return {"judge": "nextflow", "ok": False, "error": first_line(r.stdout + "\n" + r.stderr)}


def main():
    mode, program = sys.argv[1], sys.argv[2]
    text = Path(program).read_text(encoding="utf-8")
    if mode == "syntax":
        report_path = sys.argv[3]
        parse = nextflow_preview(program) if shutil.which("nextflow") else groovy_parse(program)
        report = {"parse": parse, "errors": []}
        if parse["ok"]:
            model = nf_struct.parse(text)
            report["errors"] = nf_struct.stub_errors(model, included_models(model))
    else:
        oracle, report_path = json.loads(Path(sys.argv[3]).read_text()), sys.argv[4]
        model = nf_struct.parse(text)
        found = nf_struct.check(model, oracle)
        # what is wrong (fed back to the model) apart from what the oracle wanted (never fed back by default)
        report = {"mismatches": [what for what, _ in found], "expected": [want for _, want in found],
                  "summary": {"processes": sorted(model["processes"]), "workflows": sorted(model["workflows"])}}
    Path(report_path).write_text(json.dumps(report, sort_keys=True))


main()
