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

    # --- oracle rules beyond the card's oracle_schema: its regular expressions compile -----------------
    def oracle_rules(self, task):
        problems = []
        for name, spec in task.oracle.get("processes", {}).items():
            f = f"processes.{name}"
            patterns = [(f"{f}.{key}[{i}].pattern", d["pattern"]) for key in ("inputs", "outputs")
                        for i, d in enumerate(spec.get(key, [])) if isinstance(d, dict) and "pattern" in d]
            patterns += [(f"{f}.directives.{d}", v) for d, v in spec.get("directives", {}).items() if v is not None]
            patterns += [(f"{f}.{key}[{i}]", v) for key in ("script", "script_absent")
                         for i, v in enumerate(spec.get(key, []))]
            for field, pattern in patterns:
                try:
                    re.compile(pattern)
                except re.error as e:
                    problems.append((field, f"not a valid regular expression: {e}"))
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
        if not model["processes"] and model["workflows"] and not model["errors"]:
            return Skip(rec, "subworkflow", f"workflow {', '.join(model['workflows'])} and no process: a subworkflow, not a module")
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
            "split": "test", "mutants": _module_mutants(gold)}


def _module_mutants(gold: str) -> list[dict]:
    """Semantic slips of an nf-core module that its structural oracle must catch: an emit renamed, the
    last output declaration dropped, the first path input declared as a value."""
    from dslbench.upstream import one_mutant_per_kind
    outputs = re.search(r"(?m)^\s*output:\s*$", gold)
    inputs = re.search(r"(?m)^\s*input:\s*$", gold)

    def renamed():
        m = re.search(r"emit:\s*(\w+)", gold[outputs.end():]) if outputs else None
        if m:
            at = outputs.end() + m.start(1)
            yield f"emit {m.group(1)} renamed", gold[:at] + m.group(1) + "_out" + gold[at + len(m.group(1)):]

    def dropped():
        lines = gold.splitlines(keepends=True)
        emits = [i for i, line in enumerate(lines) if re.search(r"\bemit:\s*\w+", line)]
        if len(emits) >= 2:
            yield "last output declaration dropped", "".join(lines[:emits[-1]] + lines[emits[-1] + 1:])

    def as_value():
        end = outputs.start() if outputs and inputs and outputs.start() > inputs.end() else len(gold)
        m = re.search(r"\bpath\s*\(", gold[inputs.end():end]) if inputs else None
        if m:
            at = inputs.end() + m.start()
            yield "first path input declared as val", gold[:at] + "val(" + gold[at + len(m.group(0)):]

    return one_mutant_per_kind(gold, [renamed(), dropped(), as_value()])

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


