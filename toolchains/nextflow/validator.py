"""Nextflow DSL2: syntax = the real `nextflow` (preview run) when on PATH, else a Groovy 2.4 parse plus
our DSL2 structure parser; semantic = structural oracle (processes, declarations, workflow wiring).

Oracle (every key optional, at least one check):
  params:    {name: expected default (normalized text) or null}
  includes:  {NAME: 'path/without/.nf'}
  processes: {NAME: {inputs: [shape...], outputs: [shape | {shape, emit, optional, pattern}],
                     directives: {name: regex or null}, script: [regex...], script_absent: [regex...],
                     when: bool}}
             shapes: val, path, file, env, stdin, stdout, each, eval or tuple(val,path,...)
  workflows: {main (the entry workflow) | NAME: {calls: [NAME...], take: n, emit: [name...],
              emit_from: {emit: source}, operators: [op...], forbidden_operators: [op...],
              feeds: [{from: source, to: NAME, arg: n, via: [op...], not_via: [op...]}],
              guards: [{call: NAME, param: name, when: bool}], unguarded: [NAME...]}}
  A source is a process/workflow name, channel.<factory>, params.<name> or take[i] (i from 0).
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain
from dslbench.upstream import Imported, Skip, convert_each

HERE = Path(__file__).parent
RUNNER_FILES = ("run_nextflow.py", "nf_struct.py", "parse_nf.groovy")
JAVA_HOME = Path("/usr/lib/jvm/java-17-openjdk-amd64")

PROCESS_KEYS = {"inputs", "outputs", "directives", "script", "script_absent", "when"}
WORKFLOW_KEYS = {"calls", "take", "emit", "emit_from", "operators", "forbidden_operators", "feeds", "guards",
                 "unguarded"}
SHAPE = re.compile(r"(val|path|file|env|stdin|stdout|each|eval|tuple\((val|path|file|env|stdin|stdout|eval)"
                   r"(,(val|path|file|env|stdin|stdout|eval))*\))")
SOURCE = re.compile(r"[A-Za-z_]\w*|channel\.\w+|params\.\w+|take\[\d+\]")


def _regex_problems(field, values):
    out = []
    for i, pat in enumerate(values):
        if not isinstance(pat, str):
            out.append((f"{field}[{i}]", "expected a regular expression string"))
            continue
        try:
            re.compile(pat)
        except re.error as e:
            out.append((f"{field}[{i}]", f"not a valid regular expression: {e}"))
    return out


def _str_list(field, value):
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return [(field, "expected a list of non-empty strings")]
    return []


def _java_version() -> str:
    release = JAVA_HOME / "release"
    if release.exists():
        m = re.search(r'JAVA_VERSION="([^"]+)"', release.read_text())
        if m:
            return m.group(1)
    return "?"


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # the Nextflow parser
    SEMANTIC_FAIL = "oracle_mismatch"  # module, dataflow and control-structure checks

    def probe(self) -> Probe:
        if shutil.which("nextflow"):
            out = subprocess.run(["nextflow", "-v"], capture_output=True, text=True, timeout=120,
                                 env={"PATH": "/usr/local/bin:/usr/bin:/bin", "NXF_OFFLINE": "true",
                                      "HOME": "/tmp"})
            m = re.search(r"version\s+(\S+)", out.stdout)
            if out.returncode == 0 and m:
                return Probe(self.dsl, "nextflow (preview run) + DSL2 structure parser", f"Nextflow {m.group(1)}",
                             True, dialect="Nextflow DSL2", stand_in_for="")   # the paper's kind of judge
        if not shutil.which("groovy"):
            return Probe(self.dsl, self.card["toolchain"], "", False,
                         "neither nextflow nor groovy is on PATH (Debian package groovy, with openjdk-17)")
        if not (JAVA_HOME / "bin" / "java").exists():
            return Probe(self.dsl, self.card["toolchain"], "", False, f"no JDK at {JAVA_HOME} (Debian openjdk-17)")
        jars = sorted(Path("/usr/share/groovy/lib").glob("groovy-[0-9]*.jar"))
        m = re.search(r"groovy-([\d.]+)\.jar", jars[0].name) if jars else None
        version = f"Groovy {m.group(1) if m else '?'} (OpenJDK {_java_version()}) + DSL2 structure parser"
        return Probe(self.dsl, self.card["toolchain"], version, True, dialect=self.card["dialect"])

    # --- oracle spec -------------------------------------------------------------------------------
    def check_oracle(self, task):
        o, problems = task.oracle, []
        unknown = set(o) - {"params", "includes", "processes", "workflows"}
        if unknown:
            problems.append((sorted(unknown)[0], "unknown oracle key (allowed: params, includes, processes, workflows)"))
        if not any(o.get(k) for k in ("params", "includes", "processes", "workflows")):
            problems.append(("", "give at least one of params, includes, processes, workflows"))
        for key in ("params", "includes"):
            if key in o and not isinstance(o[key], dict):
                problems.append((key, "expected a mapping"))
        for name, path in (o.get("includes") or {}).items():
            if not isinstance(path, str):
                problems.append((f"includes.{name}", "expected the module path as a string"))
        procs = o.get("processes") or {}
        if not isinstance(procs, dict):
            return problems + [("processes", "expected a mapping of process name to spec")]
        for name, spec in procs.items():
            f = f"processes.{name}"
            if not isinstance(spec, dict):
                problems.append((f, "expected a mapping"))
                continue
            for k in set(spec) - PROCESS_KEYS:
                problems.append((f"{f}.{k}", f"unknown key (allowed: {', '.join(sorted(PROCESS_KEYS))})"))
            for key in ("inputs", "outputs"):
                for i, d in enumerate(spec.get(key, []) if isinstance(spec.get(key, []), list) else [None]):
                    shape = d.get("shape") if isinstance(d, dict) else d
                    if not isinstance(shape, str) or not SHAPE.fullmatch(shape.replace(" ", "")):
                        problems.append((f"{f}.{key}[{i}]", "expected a shape such as path or tuple(val,path)"))
                    if isinstance(d, dict):
                        extra = set(d) - {"shape", "emit", "optional", "pattern"}
                        if extra:
                            problems.append((f"{f}.{key}[{i}]", f"unknown keys {sorted(extra)}"))
                        problems += _regex_problems(f"{f}.{key}[{i}].pattern", [d["pattern"]] if "pattern" in d else [])
            dirs = spec.get("directives", {})
            if not isinstance(dirs, dict):
                problems.append((f"{f}.directives", "expected a mapping of directive to regex or null"))
            else:
                problems += _regex_problems(f"{f}.directives", [v for v in dirs.values() if v is not None])
            for key in ("script", "script_absent"):
                if key in spec:
                    problems += _str_list(f"{f}.{key}", spec[key]) or _regex_problems(f"{f}.{key}", spec[key])
            if "when" in spec and not isinstance(spec["when"], bool):
                problems.append((f"{f}.when", "expected true or false"))
        wfs = o.get("workflows") or {}
        if not isinstance(wfs, dict):
            return problems + [("workflows", "expected a mapping of workflow name (main = entry) to spec")]
        for name, spec in wfs.items():
            f = f"workflows.{name}"
            if not isinstance(spec, dict):
                problems.append((f, "expected a mapping"))
                continue
            for k in set(spec) - WORKFLOW_KEYS:
                problems.append((f"{f}.{k}", f"unknown key (allowed: {', '.join(sorted(WORKFLOW_KEYS))})"))
            for key in ("calls", "emit", "operators", "forbidden_operators", "unguarded"):
                if key in spec:
                    problems += _str_list(f"{f}.{key}", spec[key])
            if "take" in spec and (not isinstance(spec["take"], int) or spec["take"] < 0):
                problems.append((f"{f}.take", "expected the number of take: channels"))
            for e, src in (spec.get("emit_from") or {}).items():
                if not isinstance(src, str) or not SOURCE.fullmatch(src):
                    problems.append((f"{f}.emit_from.{e}", "expected a source name"))
            for i, fd in enumerate(spec.get("feeds") or []):
                g = f"{f}.feeds[{i}]"
                if not isinstance(fd, dict):
                    problems.append((g, "expected a mapping with from, to"))
                    continue
                if set(fd) - {"from", "to", "arg", "via", "not_via"}:
                    problems.append((g, f"unknown keys {sorted(set(fd) - {'from', 'to', 'arg', 'via', 'not_via'})}"))
                if not isinstance(fd.get("from"), str) or not SOURCE.fullmatch(fd["from"]):
                    problems.append((f"{g}.from", "expected a source: NAME, channel.<factory>, params.<name>, take[i]"))
                if not isinstance(fd.get("to"), str) or not re.fullmatch(r"[A-Za-z_]\w*", fd["to"]):
                    problems.append((f"{g}.to", "expected the name of a called process or workflow"))
                if "arg" in fd and (not isinstance(fd["arg"], int) or fd["arg"] < 1):
                    problems.append((f"{g}.arg", "expected a 1-based input position"))
                for key in ("via", "not_via"):
                    if key in fd:
                        problems += _str_list(f"{g}.{key}", fd[key])
            for i, gd in enumerate(spec.get("guards") or []):
                g = f"{f}.guards[{i}]"
                if not isinstance(gd, dict) or not isinstance(gd.get("call"), str) or not isinstance(gd.get("param"), str):
                    problems.append((g, "expected {call: NAME, param: name, when: bool}"))
                elif "when" in gd and not isinstance(gd["when"], bool):
                    problems.append((f"{g}.when", "expected true or false"))
        return problems

    # --- levels ------------------------------------------------------------------------------------
    def _runner(self, work: Path, args: list[str]):
        env = {"JAVA_HOME": str(JAVA_HOME)}
        if os.environ.get("NXF_HOME"):   # a real nextflow's cached jar (must be outside /root)
            env["NXF_HOME"] = os.environ["NXF_HOME"]
        return self.run_runner([HERE / name for name in RUNNER_FILES], args, work, report=args[-1], env=env)

    def syntax(self, program, task, work):
        result, report = self._runner(work, ["syntax", self.file_name, "syntax.json"])
        if result.timed_out:
            return self.verdict("fail", "parse timed out", result)
        if report is None:
            return self.verdict("error", f"nextflow syntax runner failed (exit {result.returncode})", result)
        parse = report["parse"]
        if parse["ok"] is None:
            return self.verdict("error", f"{parse['judge']} did not run: {parse['error']}", result)
        if not parse["ok"]:
            return self.verdict("fail", f"{parse['judge']}: {parse['error']}", result)
        if report["errors"]:
            return self.verdict("fail", f"DSL2 structure: {report['errors'][0]}", result)
        return self.verdict("pass", f"{parse['judge']} parses it; DSL2 structure is valid", result)

    def semantic(self, program, task, work):
        (work / "oracle.json").write_text(json.dumps(task.oracle))
        result, report = self._runner(work, ["semantic", self.file_name, "oracle.json", "semantic.json"])
        if result.timed_out:
            return self.verdict("fail", "structure check timed out", result)
        if report is None:
            return self.verdict("error", f"nextflow structure runner failed (exit {result.returncode})", result)
        if report["mismatches"]:
            n = len(report["mismatches"])
            more = f" (+{n - 1} more)" if n > 1 else ""
            return self.verdict("fail", report["mismatches"][0][:300] + more, result,
                                expected=report["expected"][0][:300])
        return self.verdict("pass", "processes, declarations and workflow wiring match the oracle", result)

    # --- upstream: nf-core module folders ------------------------------------------------------------
    def import_upstream(self, source: Path) -> Imported:
        """Tasks from nf-core module folders: <tool>[/<subtool>]/main.nf + meta.yml under `source`.

        meta.yml `name` and `description` (and the documented input/output names) become the
        instruction, main.nf the gold, and the oracle is derived from the gold's process
        declarations. A malformed folder is skipped as `malformed_record` naming the folder and field;
        a main.nf the structure parser cannot read, or with other than one process, as `not_one_process`.
        """
        metas = sorted(Path(source).rglob("meta.yml"))
        if not metas:
            raise ValueError(f"{source}: no nf-core module folders (meta.yml + main.nf) found")
        return convert_each(((m.parent.relative_to(source).as_posix(), m) for m in metas), self._module_task,
                            progress=True, total=len(metas))

    def _module_task(self, rec: str, meta_path: Path):
        """One nf-core module folder as a task, or a Skip."""
        import yaml
        from . import nf_struct
        try:
            meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
        except yaml.YAMLError as e:
            raise ValueError(f"upstream record {rec}: meta.yml is not valid YAML: {e}") from None
        if not isinstance(meta, dict):
            raise ValueError(f"upstream record {rec}: meta.yml must be a mapping")
        for key in ("name", "description"):
            if not isinstance(meta.get(key), str) or not meta[key].strip():
                raise ValueError(f"upstream record {rec}: meta.yml field '{key}' is missing or empty")
        main = meta_path.parent / "main.nf"
        if not main.is_file():
            raise ValueError(f"upstream record {rec}: main.nf is missing next to meta.yml")
        gold = main.read_text(encoding="utf-8")
        model = nf_struct.parse(gold)
        if len(model["processes"]) != 1 or model["errors"]:
            why = model["errors"][0] if model["errors"] else f"{len(model['processes'])} processes (expected 1)"
            return Skip(rec, "not_one_process", why)
        (pname, proc), = model["processes"].items()
        outputs = [{"shape": o["shape"], **({"emit": o["emit"]} if o["emit"] else {})} for o in proc["outputs"]]
        io_doc = []
        for key in ("input", "output"):
            names = _documented(meta.get(key))
            if names:
                io_doc.append(f"{key.capitalize()}s: " + "; ".join(names) + ".")
        emits = ", ".join(o["emit"] for o in proc["outputs"] if o["emit"])
        instruction = (f"Write an nf-core style Nextflow DSL2 module: one process named {pname} "
                       f"(module {meta['name']}). {' '.join(meta['description'].split()).rstrip('.')}.\n"
                       + "\n".join(io_doc) + "\n"
                       f"Declare the inputs as {', '.join(i['shape'] for i in proc['inputs']) or 'none'} and the "
                       f"outputs as {', '.join(o['shape'] for o in proc['outputs'])}"
                       + (f" with emit names {emits}." if emits else "."))
        spec = {"inputs": [i["shape"] for i in proc["inputs"]], "outputs": outputs}
        n_out = len(proc["outputs"])
        return {
            "id": "nextflow-up-" + re.sub(r"[^a-z0-9]+", "-", meta["name"].lower()).strip("-"),
            "dsl": self.dsl, "domain": "Bioinformatics",
            "title": f"nf-core module {meta['name']}",
            "difficulty": "easy" if n_out <= 2 else "medium" if n_out <= 4 else "hard",
            "constructs": ["process", "input declarations", "output declarations", "emit"],
            "failure_modes": ["knowledge"],
            "instruction": instruction, "context": {}, "gold": gold,
            "oracle": {"processes": {pname: spec}},
            "provenance": {"source": "upstream", "benchmark": "nf-core/modules", "upstream_id": rec,
                           "licence": "MIT"},
            "split": "test", "mutants": []}

def _documented(node) -> list[str]:
    """'name (type): description' of every documented channel element in an nf-core meta.yml section
    (old layout: a list of {name: {type, description}}; current layout: nested lists per channel)."""
    out = []
    if isinstance(node, list):
        for item in node:
            out += _documented(item)
    elif isinstance(node, dict):
        for name, d in node.items():
            if isinstance(d, dict) and ("type" in d or "description" in d):
                desc = " ".join(str(d.get("description", "")).split())
                out.append(f"{name} ({d.get('type', '?')}): {desc}" if desc else f"{name} ({d.get('type', '?')})")
            else:
                out += _documented(d)
    return out


