"""Runs inside the sandbox: compile and run jq filters on JSON inputs, write results as JSON.

usage: python run_jq.py MODE OUT.json [PROGRAM_FILE ...]   (MODE: compile | run; inputs from inputs.json)
"""
import json
import sys

import jq


def run(program_text, inputs):
    results = []
    prog = jq.compile(program_text)
    for value in inputs:
        try:
            results.append({"ok": True, "outputs": prog.input_value(value).all()})
        except Exception as e:  # runtime error on this input
            results.append({"ok": False, "error": str(e)[:2000]})
    return results


def main():
    mode, out_path, programs = sys.argv[1], sys.argv[2], sys.argv[3:]
    inputs = json.load(open("inputs.json")) if mode == "run" else []
    report = {}
    for path in programs:
        text = open(path, encoding="utf-8").read()
        try:
            report[path] = {"compiled": True, "results": run(text, inputs)}
        except ValueError as e:  # compile error
            report[path] = {"compiled": False, "error": str(e)[:4000]}
    with open(out_path, "w") as f:
        json.dump(report, f)


main()
