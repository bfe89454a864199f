"""The `dslbench` command: doctor, generate, serve, validate, report, selfcheck, pipeline, book, batch."""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from . import settings
from .paths import runs_dir


def _common(p: argparse.ArgumentParser, run=True):
    if run:
        p.add_argument("--run", default=str(runs_dir() / "default"), help="run directory (default: runs/default)")
    p.add_argument("--dsl", action="append", default=[], help="restrict to this DSL (repeatable; default: all)")
    p.add_argument("--executor", default=None, help="process (default), thread, dask-local or tcp://scheduler:8786")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--no-progress", action="store_true")


def shard_arg(text: str) -> tuple[int, int]:
    """`K/N` of `selfcheck --shard`: the K-th of N disjoint shards, 0 <= K < N."""
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise argparse.ArgumentTypeError(f"{text!r}: give K/N with 0 <= K < N, e.g. 3/12")
    return int(k), int(n)


DOCTOR_WIDTH = 100   # a terminal's width: one short row per DSL, the details under --verbose / --json


def doctor_text(rows: list[dict], sandbox: str, verbose: bool = False, width: int = DOCTOR_WIDTH) -> str:
    """One row per DSL (available, version or why not); with `verbose`, every card field, wrapped."""
    import textwrap
    lines = [f"sandbox: {sandbox}", ""]
    if verbose:
        for r in rows:
            lines.append(f"{r['dsl']}: {'available' if r['available'] else 'UNAVAILABLE'}")
            for field in ("language", "domain", "toolchain", "version", "dialect", "reason"):
                if r.get(field):
                    lines += textwrap.wrap(str(r[field]), width, initial_indent=f"  {field + ':':11}",
                                           subsequent_indent=" " * 13)
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"
    name = max([len("dsl"), *(len(r["dsl"]) for r in rows)])
    lines.append(f"{'dsl':{name}}  ok   version (or why not)")
    for r in rows:
        detail = r["version"] if r["available"] else r["reason"]
        row = f"{r['dsl']:{name}}  {'yes' if r['available'] else 'NO ':3}  {detail}"
        lines.append(row if len(row) <= width else row[:width - 3] + "...")
    lines.append(f"\n{sum(bool(r['available']) for r in rows)} of {len(rows)} DSLs can be judged here; "
                 "details: `dslbench doctor --verbose`")
    return "\n".join(lines) + "\n"


def cmd_doctor(args) -> int:
    # not through pipeline.doctor: that would import pandas, a third of this command's time
    from .sandbox import sandbox_mode
    from .toolchains import availability
    rows, sandbox = availability(), sandbox_mode()
    if args.json:
        print(json.dumps({"sandbox": sandbox, "toolchains": rows}, indent=2))
    else:
        print(doctor_text(rows, sandbox, args.verbose), end="")
    return 0


def _check_options(args) -> None:
    """Refuse bad options before a run folder is touched."""
    from .errors import UserError
    from .executors import check_executor
    check_executor(args.executor)
    if getattr(args, "workers", None) is not None and args.workers < 1:
        raise UserError(f"option --workers: must be at least 1, got {args.workers}")
    if getattr(args, "limit", None) is not None and args.limit < 1:
        raise UserError(f"option --limit: must be at least 1 (omit it for all tasks), got {args.limit}")
    if getattr(args, "timeout", None) is not None and args.timeout <= 0:
        raise UserError(f"option --timeout: must be a positive number of seconds, got {args.timeout}")
    if getattr(args, "min_judged", None) is not None and not 0 <= args.min_judged <= 1:
        raise UserError(f"option --min-judged: must be a fraction between 0 and 1, got {args.min_judged}")


def cmd_generate(args) -> int:
    from .errors import UserError
    from .pipeline import run_generation
    _check_options(args)
    try:
        params = json.loads(args.params) if args.params else None
    except json.JSONDecodeError as e:
        raise UserError(f"option --params: not JSON ({e.msg} at column {e.colno})") from None
    summary = run_generation(args.run, args.dsl, args.model, args.limit, args.samples, args.method, params,
                             args.executor, args.workers, args.cache, progress=not args.no_progress,
                             retry_errors=not args.no_retry_errors, timeout=args.timeout,
                             api_base=args.api_base, api_key_env=args.api_key_env)
    print(summary.to_string(index=False) if not summary.empty else "no generations")
    return 0


RATE_VIEW = ["dsl", "model", "method", "records", "evaluated", "unavailable", "errors", "syntax_pct", "semantic_pct",
             "gap_pp", "judge_exact"]


def _print_rates(table) -> None:
    from . import metrics
    if table.empty:
        print("no verdicts")
        return
    print(metrics.rates(table)[RATE_VIEW].to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    samples = metrics.samples_per_task(table)
    if samples > 1:   # repeated sampling (--samples N): the unbiased pass@k, k up to N
        print(f"\nsemantic pass@k (%) over {samples} samples per task:")
        print(metrics.pass_at_k(table, metrics.default_ks(samples)).to_string(index=False,
                                                                             float_format=lambda x: f"{x:.2f}"))
    ex = metrics.exclusions(table, by=("dsl",))
    if len(ex):
        print("\nexcluded from the rates (by DSL, status and reason):")
        print(ex.to_string(index=False))


def cmd_validate(args) -> int:
    from .pipeline import run_validation
    _check_options(args)
    table = run_validation(args.run, args.dsl, args.executor, args.workers, progress=not args.no_progress,
                           min_judged=args.min_judged)
    _print_rates(table)
    return 0


def cmd_report(args) -> int:
    from .store import RunStore
    store = RunStore(args.run)
    paths = store.export()
    _print_rates(store.verdict_table())
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


def cmd_migrate(args) -> int:
    from .store import migrate_run
    done = migrate_run(args.run)
    print("\n".join(done) if done else f"{args.run}: nothing to migrate")
    return 0


def cmd_selfcheck(args) -> int:
    from .pipeline import selfcheck
    df = selfcheck(args.dsl, args.executor, args.workers, progress=not args.no_progress, shard=args.shard)
    if args.csv:
        df.to_csv(args.csv, index=False)
    bad = df[df["ok"] == False]  # noqa: E712 (None = unavailable, not judged)
    summary = df.groupby(["dsl", "program"]).agg(programs=("ok", "size"), ok=("ok", lambda s: int((s == True).sum())))  # noqa: E712
    print(summary.to_string())
    if len(bad):
        print("\nPrograms that did not get the verdict they must get:")
        print(bad[["dsl", "task_id", "program", "index", "syntax", "semantic", "syntax_diagnostics",
                   "semantic_diagnostics"]].to_string(index=False))
    return 1 if len(bad) else 0


def cmd_import(args) -> int:
    """Import an upstream benchmark: a summary of what was read, imported and skipped (by reason)."""
    from .errors import UserError
    from .upstream import import_upstream
    report = import_upstream(args.dsl_name, Path(args.source), Path(args.out), args.sample, args.seed,
                             verify_gold=args.verify)
    print(report.summary())
    if args.skipped_csv:
        import csv
        with open(args.skipped_csv, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["record", "reason", "detail"])
            w.writerows([s.record, s.reason, s.detail] for s in report.skipped)
        print(f"skipped records with reasons: {args.skipped_csv}")
    if not report.written:
        raise UserError(f"{args.source}: nothing could be imported as {args.dsl_name} tasks "
                        f"({report.read} record(s) read; reasons above)")
    out = Path(args.out).resolve()
    print(f"imported {len(report.written)} task(s) into {out / args.dsl_name}")
    if args.verify:
        return _verify_import(args.dsl_name, out)
    print(f"check the gold with: dslbench import --verify ...; run them with: "
          f"DSLBENCH_TASKS={out} dslbench generate --dsl {args.dsl_name} ...")
    return 0


def _verify_import(dsl: str, tree: Path) -> int:
    """Run the imported gold through both levels (the self-check on the imported tree)."""
    import os
    from .pipeline import selfcheck
    os.environ["DSLBENCH_TASKS"] = str(tree)
    df = selfcheck([dsl])
    # a mutant of a gold that fails says nothing about the oracle (the policy that rejects the gold
    # rejects it too): mutants count only where the task's gold, or placeholder, got its verdict
    golds = df[df["program"].isin(["gold", "placeholder_gold"])]
    sound = set(golds[golds["ok"] == True]["task_id"])  # noqa: E712
    figures = {}   # per kind of program: judged, as expected, unavailable (printed, and kept in the report)
    for kind in ("gold", "placeholder_gold", "syntax", "semantic"):
        rows = df[df["program"] == kind]
        if kind in ("syntax", "semantic"):
            rows = rows[rows["task_id"].isin(sound)]
        judged = rows[rows["ok"].notna()]
        figures[kind] = {"judged": len(judged), "as_expected": int((judged["ok"] == True).sum()),  # noqa: E712
                         "unavailable": len(rows) - len(judged)}
        stillborn = int((judged["syntax"] == "fail").sum()) if kind == "semantic" else 0
        if stillborn:      # a slip the toolchain already rejects never reaches the oracle: it says nothing about it
            figures[kind]["stillborn"] = stillborn
    for kind, what in (("gold", "gold through both levels"),
                       ("placeholder_gold", "placeholder gold (no upstream solution: must pass syntax, fail semantics)")):
        gold, f = df[df["program"] == kind], figures[kind]
        if gold.empty:
            continue
        line = f"{what}: {f['as_expected']}/{f['judged']} " + ("pass" if kind == "gold" else "as expected")
        if f["unavailable"]:
            unjudged = gold[gold["ok"].isna()]
            # the level that could not judge it: the syntax level, or the semantic one after a pass
            said = unjudged["syntax_diagnostics"].where(unjudged["syntax"] != "pass", unjudged["semantic_diagnostics"])
            why = said.fillna("").str.split("\n").str[0].str[:120].value_counts()
            line += f", {f['unavailable']} unavailable (" + "; ".join(f"{n}: {w}" for w, n in why.items()) + ")"
            passed = int((unjudged["syntax"] == "pass").sum())
            if passed:     # the semantic level could not judge these, the syntax level did
                f["unavailable_syntax_pass"] = passed
                line += f"; {passed} of the {f['unavailable']} pass the syntax level"
        print(line)
        for r in gold[gold["ok"] == False].itertuples():  # noqa: E712  (object column: True, False or None)
            print(f"  {r.task_id}: syntax {r.syntax} ({r.syntax_reason}), semantic {r.semantic} ({r.semantic_reason}): "
                  f"{(r.syntax_diagnostics or r.semantic_diagnostics or '')[:160]}")
    left_out = df[df["program"].isin(["syntax", "semantic"]) & ~df["task_id"].isin(sound)]
    for kind, what in (("syntax", "syntax mutants failing the syntax level"),
                       ("semantic", "semantic mutants killed by the semantic level")):
        f = figures[kind]
        if f["judged"]:
            print(f"{what}: {f['as_expected']}/{f['judged']} ({100 * f['as_expected'] / f['judged']:.1f} %)")
        if f.get("stillborn"):
            valid = f["judged"] - f["stillborn"]
            share = f" ({100 * f['as_expected'] / valid:.1f} %)" if valid else ""
            print(f"  {f['stillborn']} of them fail the syntax level already (stillborn: the oracle never sees them); "
                  f"of the {valid} that pass it, {f['as_expected']} are killed{share}")
    if len(left_out):
        print(f"not counted: {len(left_out)} mutant(s) of the {left_out['task_id'].nunique()} task(s) whose gold did not pass")
    missed = df[(df["program"] == "semantic") & (df["ok"] == False) & df["task_id"].isin(sound)]  # noqa: E712
    # what the oracle let through (equivalent, or a gap in the oracle), then what never reached it
    for title, rows in (("survivors", missed[missed["syntax"] != "fail"]), ("stillborn", missed[missed["syntax"] == "fail"])):
        if len(rows):
            print(f"{title}:")
        for r in rows.itertuples():
            print(f"  {r.task_id} mutant {r.index}: {r.note or '(no note)'}: syntax {r.syntax}, semantic {r.semantic}")
    from .upstream import write_report_file
    write_report_file(tree / dsl, {"verify": figures})
    return 0


def cmd_audit(args) -> int:
    """The reviewer's audit: draw the sample, mark a verdict, report agreement (lib/dslbench/audit.py)."""
    from . import audit, metrics
    from .book import task_page_path
    from .errors import UserError
    if args.audit_command == "sample":
        picked = audit.sample(args.run, args.per_dsl, args.seed, args.method)
        if picked.empty:
            raise UserError(f"{args.run}: no evaluated {args.method} verdicts to audit")
        picked["page"] = [task_page_path(r.dsl, r.task_id, r.model, r.method, r.sample, r.round)
                          for r in picked.itertuples()]
        cols = ["dsl", "task_id", "model", "method", "sample", "round", "syntax_status", "semantic_status",
                "semantic_reason", "page"]
        out = Path(args.run) / "audit_sample.csv"
        picked[cols].to_csv(out, index=False)
        print(picked[cols[:-1]].to_string(index=False))
        print(f"\n{len(picked)} verdicts over {picked['dsl'].nunique()} DSL(s) (seed {args.seed}): {out}\n"
              "mark each with: dslbench audit mark --run RUN --task ID --model M --agree|--disagree [--comment ...]")
        return 0
    if args.audit_command == "mark":
        from .store import RunStore
        table = metrics.with_rounds(RunStore(args.run).verdict_table())
        hit = table[(table["task_id"] == args.task) & (table["model"] == args.model) & (table["method"] == args.method)
                    & (table["sample"] == args.sample) & (table["round"] == args.round)]
        if hit.empty:
            raise UserError(f"{args.run}: no verdict for task {args.task}, model {args.model}, method {args.method}, "
                            f"sample {args.sample}, round {args.round}")
        entry = audit.mark(args.run, hit.iloc[0].to_dict(), args.level, args.agree, args.comment, args.reviewer)
        print(f"{'agree' if entry['agree'] else 'disagree'} with {entry['level']} {entry['verdict']} of "
              f"{entry['task_id']} ({entry['model']}): {audit.audit_path(args.run)}")
        return 0
    table = metrics.judge_agreement(audit.marks(args.run), level=args.level)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}") if len(table) else "no audit marks yet")
    return 0


def cmd_profile(args) -> int:
    from .analysis.profiler import main as profile_main
    return profile_main(args.argv)


def cmd_serve(args) -> int:
    """llama.cpp's own OpenAI-compatible server (through xllamacpp) on the embedded GGUF, in the foreground.

    Same parameters as the in-process model (local_model.model_params), so a run against this server
    gets the embedded model's replies."""
    import signal
    import threading
    import xllamacpp
    from .local_model import model_params
    params = model_params(threads=args.threads, port=args.port, alias=args.alias)
    params.hostnames = [args.host]
    server = xllamacpp.Server(params)
    print(f"serving {args.alias} at http://{args.host}:{args.port}/v1 (Ctrl-C stops); generate with\n"
          f"  dslbench generate --model openai/{args.alias} --api-base http://{args.host}:{args.port}/v1 ...",
          flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1):
        pass
    del server          # stops llama.cpp's HTTP and decoding threads
    return 0


def _notebook_params(items: list[str]) -> dict:
    """--param NAME=VALUE options as notebook parameters (each value read as YAML)."""
    import yaml
    return {name: yaml.safe_load(value) for name, _, value in (item.partition("=") for item in items)}


def cmd_pipeline(args) -> int:
    from .notebooks import run_pipeline
    _check_options(args)
    extra = _notebook_params(args.param)
    extra.update({k: v for k, v in (("api_base", args.api_base), ("api_key_env", args.api_key_env)) if v})
    executed = run_pipeline(args.run, dsls=args.dsl, models=args.model, limit=args.limit,
                            executor=args.executor, stages=args.stage, extra=extra,
                            sample=args.sample, seed=args.seed)
    print("executed notebooks:\n  " + "\n  ".join(map(str, executed)))
    status = cmd_report(args)
    if not args.no_book:
        args.batch = []
        cmd_book(args)
    return status


def cmd_book(args) -> int:
    import time
    from .book import build
    t0 = time.monotonic()
    run = args.run
    if getattr(args, "reference", False):
        from .reference import read_manifest, unpack
        manifest = read_manifest()
        run = unpack()
        print(f"reference run of {manifest['code_revision'][:12]} unpacked into {run}")
    html_root = build(run, [Path(b) for b in args.batch])
    print(f"book built in {time.monotonic() - t0:.1f} s: {html_root / 'index.html'}")
    if getattr(args, "check", False):
        from .book import check_built
        problems = check_built(html_root)
        print("\n".join(problems) if problems else "no broken link, missing image or raw traceback")
        return 1 if problems else 0
    return 0


REFERENCE_SAMPLE = 2   # tasks per DSL in the committed reference run (stratified by difficulty): about 85 min on 2 cores


def cmd_reference(args) -> int:
    from . import reference
    if args.action == "check":
        lines = reference.stale()
        manifest = reference.read_manifest()
        if not lines:
            print(f"reference run up to date: {sum(manifest['tasks_per_dsl'].values())} tasks over "
                  f"{len(manifest['tasks_per_dsl'])} DSLs, made at {manifest['code_revision'][:12]}")
            return 0
        print("reference run is stale (after a change to judging code only, `dslbench reference refresh` re-judges "
              "its programs and keeps it if no verdict changed; otherwise `dslbench reference build`):\n  "
              + "\n  ".join(lines))
        return 1
    if args.action == "refresh":
        lines = reference.refresh(executor=args.executor)
        if lines:
            print("still stale: rebuild with `dslbench reference build`:\n  " + "\n  ".join(lines))
            return 1
        print("reference run re-judged: no verdict changed; fingerprints updated in reference/manifest.json")
        return 0
    # build: the whole default pipeline on a stratified sample, then pack it into reference/
    import os
    from .notebooks import run_pipeline
    from .tasks import SAMPLE_ENV, SEED_ENV, load_tasks
    extra = _notebook_params(args.param)
    os.environ[SAMPLE_ENV], os.environ[SEED_ENV] = str(args.sample), str(args.seed)
    # fingerprints of the code and tasks the run is made with, taken before it starts: an edit made while
    # it runs then shows as stale instead of being stamped as the code that judged it
    made_with = reference.current_fingerprints({d: [t.id for t in ts] for d, ts in load_tasks().items()})
    run_pipeline(args.run, executor=args.executor, extra=extra, sample=args.sample, seed=args.seed)
    manifest = reference.pack(args.run, fingerprints=made_with)
    print(f"reference/ written: {manifest['records']} from {args.run}; stage seconds {manifest['stage_seconds']}")
    stale = reference.stale()
    if stale:
        print("changed while the run was made (dslbench reference refresh):\n  " + "\n  ".join(stale))
    return 0


def cmd_batch(args) -> int:
    from .batch import run_batch
    entries = run_batch(Path(args.grid), force=args.force)
    for e in entries:
        print(f"{e['status']:30} {e['output']}  {e['parameters']}")
    return 1 if any(e["status"].startswith("failed") for e in entries) else 0


def _terminate(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="dslbench", description="DSL-Bench: LLM code generation across DSLs")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("doctor", help="which DSL toolchains are available here, with versions")
    p.add_argument("--json", action="store_true", help="every field of every DSL as JSON")
    p.add_argument("--verbose", "-v", action="store_true", help="every card field per DSL, wrapped")
    p.set_defaults(fn=cmd_doctor)

    p = sub.add_parser("generate", help="generate model outputs for tasks (resumable)")
    _common(p)
    p.add_argument("--model", action="append", default=[], help="registry name or litellm string (repeatable)")
    p.add_argument("--limit", type=int, default=None, help="first N tasks per DSL")
    p.add_argument("--samples", type=int, default=1)
    p.add_argument("--method", default="baseline")
    p.add_argument("--params", default=None, help='decoding parameters as JSON, e.g. {"max_tokens": 256}')
    p.add_argument("--cache", default=None, help="generation cache directory")
    p.add_argument("--timeout", type=float, default=None,
                   help="overall deadline in seconds of one model call, retries included (default: 180)")
    p.add_argument("--no-retry-errors", action="store_true",
                   help="keep items whose model call failed earlier instead of trying them again")
    p.add_argument("--api-base", default=None,
                   help="server of the model(s), e.g. http://127.0.0.1:8000/v1 for `dslbench serve`, vLLM or Ollama "
                        "(overrides the registry and OPENAI_API_BASE; recorded and part of the cache key)")
    p.add_argument("--api-key-env", default=None, metavar="VAR",
                   help="name of the environment variable holding the server's API key (the key is never stored)")
    p.set_defaults(fn=cmd_generate)

    p = sub.add_parser("serve", help="serve the embedded model over an OpenAI-compatible API (llama.cpp's server)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--alias", default="smollm2-135m", help="model name the server answers to (default smollm2-135m)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: DSLBENCH_LLAMA_THREADS or all)")
    p.set_defaults(fn=cmd_serve)

    p = sub.add_parser("validate", help="validate the run's generations (resumable)")
    _common(p)
    p.add_argument("--min-judged", type=float, default=0.5,
                   help="fail (exit 3) when a DSL has fewer than this fraction of its records judged (default 0.5)")
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("migrate", help="set aside run files of an older record schema (nothing is deleted)")
    p.add_argument("--run", default=str(runs_dir() / "default"))
    p.set_defaults(fn=cmd_migrate)

    p = sub.add_parser("report", help="export Parquet tables and print pass rates")
    p.add_argument("--run", default=str(runs_dir() / "default"))
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("selfcheck", help="gold must pass, known-bad programs must fail their level")
    _common(p, run=False)
    p.add_argument("--shard", type=shard_arg, default=None, metavar="K/N",
                   help="check only every N-th task of each DSL in id order, from the K-th (K = 0..N-1)")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write one row per program judged")
    p.set_defaults(fn=cmd_selfcheck)

    p = sub.add_parser("import", help="convert an upstream benchmark's files into task files")
    p.add_argument("dsl_name", metavar="DSL")
    p.add_argument("source", help="the upstream file or folder, in its published layout")
    p.add_argument("--out", default="data/upstream", help="task tree to write into (default: data/upstream)")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="keep N tasks, drawn reproducibly and stratified by difficulty")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--verify", action="store_true", help="then run the imported gold through both levels")
    p.add_argument("--skipped-csv", default=None, metavar="FILE", help="write every skipped record and its reason")
    p.set_defaults(fn=cmd_import)

    p = sub.add_parser("audit", help="the reviewer's audit of the judges: sample, mark, report")
    asub = p.add_subparsers(dest="audit_command", required=True)
    a = asub.add_parser("sample", help="draw the audit sample (the same for the same run and seed)")
    a.add_argument("--run", default=str(runs_dir() / "default"))
    a.add_argument("--per-dsl", type=int, default=20, help="verdicts per DSL (default 20, as in the paper)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--method", default="baseline")
    a = asub.add_parser("mark", help="record agreement or disagreement with one verdict (appended to audit.jsonl)")
    a.add_argument("--run", default=str(runs_dir() / "default"))
    a.add_argument("--task", required=True)
    a.add_argument("--model", required=True)
    a.add_argument("--method", default="baseline")
    a.add_argument("--sample", type=int, default=0)
    a.add_argument("--round", type=int, default=0)
    a.add_argument("--level", default="semantic", choices=("syntax", "semantic"))
    verdict = a.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--agree", dest="agree", action="store_true")
    verdict.add_argument("--disagree", dest="agree", action="store_false")
    a.add_argument("--comment", default="")
    a.add_argument("--reviewer", default="")
    a = asub.add_parser("report", help="per-DSL judge agreement with 95 %% Wilson intervals")
    a.add_argument("--run", default=str(runs_dir() / "default"))
    a.add_argument("--level", default="semantic", choices=("syntax", "semantic"))
    for a in asub.choices.values():
        a.set_defaults(fn=cmd_audit)

    p = sub.add_parser("profile", add_help=False,
                       help="DSL-Profiler: triage a new DSL from a folder of example programs")
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p.set_defaults(fn=cmd_profile)

    p = sub.add_parser("pipeline", help="run the stage notebooks with papermill, in order")
    _common(p)
    p.add_argument("--model", action="append", default=[])
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--stage", action="append", default=[], help="only these stages, e.g. 02_generation")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="every stage uses a difficulty-stratified sample of N tasks per DSL (DSLBENCH_SAMPLE)")
    p.add_argument("--seed", type=int, default=None, help="seed of --sample (DSLBENCH_SEED, default 0)")
    p.add_argument("--no-book", action="store_true", help="do not build the book at the end")
    p.add_argument("--api-base", default=None, help="OpenAI-compatible server for raw model strings (stages 02 and 06)")
    p.add_argument("--api-key-env", default=None, help="environment variable holding that server's API key")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="extra notebook parameter (YAML value), e.g. max_tokens=256 or selfcheck=false")
    p.set_defaults(fn=cmd_pipeline)

    p = sub.add_parser("book", help="build the Jupyter Book supplement from a run")
    p.add_argument("--run", default=str(runs_dir() / "default"))
    p.add_argument("--batch", action="append", default=[], help="batch output folder(s) to index")
    p.add_argument("--reference", action="store_true",
                   help="build from the committed reference run (reference/, unpacked into runs/reference)")
    p.add_argument("--check", action="store_true",
                   help="then fail (exit 1) on a broken internal link, a missing image or a raw traceback")
    p.set_defaults(fn=cmd_book)

    p = sub.add_parser("reference", help="the committed reference run: check it against today's code, or rebuild it")
    p.add_argument("action", choices=["check", "refresh", "build"],
                   help="check: list tasks whose task file or judging code changed since it was made; refresh: "
                        "re-judge those and keep the run if no verdict changed; build: rerun the pipeline and repack")
    p.add_argument("--run", default=str(runs_dir() / "reference-build"), help="where build runs the pipeline")
    p.add_argument("--sample", type=int, default=REFERENCE_SAMPLE, help="tasks per DSL (stratified by difficulty)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--executor", default=None)
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="extra notebook parameter")
    p.set_defaults(fn=cmd_reference)

    from .batch import __doc__ as grid_format
    p = sub.add_parser("batch", help="run a notebook over a parameter grid (YAML) with papermill",
                       description=grid_format, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("grid", help="the grid file (format above)")
    p.add_argument("--force", action="store_true", help="rerun finished combinations too")
    p.set_defaults(fn=cmd_batch)

    args = parser.parse_args(argv)
    if args.command in ("generate", "validate", "selfcheck", "pipeline", "reference"):
        from .sandbox import sweep_leftovers
        sweep_leftovers()               # work folders a killed run left behind
        # SIGTERM (a scheduler, `kill`) ends the run like Ctrl-C: finished records kept, work folders removed
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print("interrupted: finished records are kept; rerun the same command to resume", file=sys.stderr)
        return 130
    except Exception as e:
        from .errors import UserError
        from .metrics import RunCannotJudge
        from .notebooks import StageFailed
        if isinstance(e, StageFailed):
            print(f"error: {e}", file=sys.stderr)
            return 3 if "RunCannotJudge" in str(e) else 1
        if isinstance(e, UserError):
            print(f"error: {e}", file=sys.stderr)
            return 2
        if isinstance(e, RunCannotJudge):
            print(f"error: {e}", file=sys.stderr)
            return 3
        raise


if __name__ == "__main__":
    sys.exit(main())
