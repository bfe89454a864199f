"""The published supplement: build the book from a real (small) pipeline run, then drive headless
Chromium over it: screenshots of the index, a stage chapter with a figure and a per-task page;
figures, maths and tables must render, and no page may request anything outside the build folder."""
import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from conftest import run_cli
from dslbench import book, reference
from dslbench.batch import load_grid, run_batch
from dslbench.store import RunStore

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The book as published: built from the committed reference run (reference/), with no model call."""
    base = tmp_path_factory.mktemp("book")
    run = reference.unpack(base / "run")
    html_root = book.build(run, output=base / "out")
    return run, html_root


def test_published_book_has_no_broken_link_missing_image_or_traceback(built):
    run, root = built
    problems = book.check_built(root)
    assert not problems, "\n".join(problems[:40])
    manifest = reference.read_manifest()
    results = (root / "generated/results.html").read_text()
    assert "committed reference run" in results and "stratified sample" in results
    for dsl in manifest["tasks_per_dsl"]:                     # every DSL's card and outcomes, one click away
        assert (root / f"generated/dsls/{dsl}.html").exists() and f"outcomes/{dsl}.html" in results, dsl
    index = (root / "intro.html").read_text()                 # every task's log two clicks from the front page (index.html redirects here)
    assert 'href="tasks/search.html"' in index and 'href="tasks/index.html"' in index
    for nb in sorted((run / "notebooks").glob("0*.ipynb")):   # every stage's chapter
        assert (root / f"generated/stages/{nb.stem}.html").exists(), nb.stem


def test_book_has_every_part(built):
    run, root = built
    for page in ("index.html", "generated/results.html", "generated/stages/02_generation.html",
                 "generated/stages/03_validation.html", "generated/stages/07_lora.html", "generated/dsls/jq.html",
                 "reproduce.html", "threats.html",
                 "tasks/index.html", "vendor/require.js", "vendor/mathjax/tex-chtml.js"):
        assert (root / page).exists(), page
    card = (root / "generated/dsls/verilog.html").read_text()
    assert "Validation boundary" in card and "Icarus Verilog" in card


def test_book_reads_as_a_supplement(built):
    """Code collapsed, one parameters cell, the caveat box, a live task-log link, no linkified file
    names, no en dashes made from `--`, and the task sources page."""
    run, root = built
    stage = (root / "generated/stages/03_validation.html").read_text()
    assert "tag_hide-input" in stage and stage.count("tag_injected-parameters") == 1
    assert "tag_parameters" not in stage                       # the defaults cell is dropped, the run's values stay
    results = (root / "generated/results.html").read_text()
    assert "What these numbers can show" in results and "floor" in results
    assert "href='../tasks/index.html'" in results or 'href="../tasks/index.html"' in results
    assert "#../tasks" not in results
    for page in root.glob("generated/dsls/*.html"):
        assert not re.search(r'href="http://[\w-]+\.(py|sh|nf|gd|tf|json|yaml)"', page.read_text()), page.name
    reproduce = (root / "reproduce.html").read_text()
    assert "--verify" in reproduce and "\u2013verify" not in reproduce
    outcomes = (root / "generated/outcomes/jq.html").read_text()
    assert "final record(s)" in outcomes and re.search(r"syntax (pass|fail|error|unavailable)<", outcomes)
    assert "syntax_failed" in outcomes or "ok" in outcomes                  # the reason table
    assert "outcomes/jq.html" in results
    sources = (root / "generated/sources.html").read_text()
    assert "Task sources" in sources and "verilog" in sources
    assert (root / "_static" / "dslbench.css").exists()


def test_results_table_reaches_a_task_log_in_two_clicks(built):
    run, root = built
    results = root / "generated" / "results.html"
    table = RunStore(run).verdict_table()
    r = table.iloc[0]
    first = book.slice_index_path(r["dsl"], r["model"], r["method"])
    assert f"../{first}" in results.read_text()                                  # click 1
    task_href = Path(book.task_page_path(r["dsl"], r["task_id"], r["model"], r["method"], r["sample"])).name
    assert f"href='{task_href}'" in (root / first).read_text()                    # click 2
    page = (root / first).parent / task_href
    text = page.read_text()
    for part in ("Prompt as sent", "Raw model output", "Extracted program", "Gold solution",
                 r["syntax_command"].split()[0], r["syntax_status"]):
        assert part in text


def test_large_runs_are_paginated(built, tmp_path, monkeypatch):
    run, root = built
    table = RunStore(run).verdict_table()
    many = table.loc[table.index.repeat(7)].reset_index(drop=True)
    many["sample"] = range(len(many))
    monkeypatch.setattr(book, "PAGE_ROWS", 3)
    book.write_task_pages(many, tmp_path)
    pages = sorted(p.name for p in tmp_path.rglob("index-*.html"))
    assert pages, "slices longer than a page must be split"


def _host(request: str) -> str:
    """Host of a proxied request ('CONNECT host:443' or 'http://host/...'); '' for local paths."""
    if request.startswith("CONNECT "):
        return request.split()[1].rsplit(":", 1)[0]
    m = re.match(r"https?://([^/:]+)", request)
    return m.group(1) if m else ""


class _Recorder(http.server.SimpleHTTPRequestHandler):
    seen: list = []

    def log_message(self, *a):
        pass

    def do_GET(self):
        type(self).seen.append(self.path)
        if self.path.startswith("http"):      # a proxied request for another host: refuse it
            self.send_error(403)
            return
        super().do_GET()

    def do_CONNECT(self):                     # https through the proxy
        type(self).seen.append("CONNECT " + self.path)
        self.send_error(403)


@pytest.mark.skipif(not CHROMIUM, reason="Debian chromium is installed by install.sh; missing here")
def test_browser_renders_pages_offline(built):
    run, root = built
    _Recorder.seen = []
    handler = lambda *a, **k: _Recorder(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    table = RunStore(run).verdict_table()
    r = table.iloc[0]
    pages = {"index": "index.html", "stage": "generated/stages/03_validation.html",
             "results": "generated/results.html", "anova": "generated/stages/04_anova_mixed_model.html",
             "interventions": "generated/stages/06_interventions.html", "card": "generated/dsls/verilog.html",
             "outcomes": "generated/outcomes/verilog.html", "search": "tasks/search.html",
             "task": book.task_page_path(r["dsl"], r["task_id"], r["model"], r["method"], r["sample"])}
    shots = root.parents[1] / "screenshots"
    shots.mkdir(exist_ok=True)
    doms = {}

    def chromium(name, *args):
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               # the browser's own form-autofill lookups (the log browser has a search box)
                               "--disable-features=AutofillServerCommunication",
                               f"--user-data-dir={shots / ('profile-' + name)}", "--virtual-time-budget=8000",
                               f"--proxy-server=http://127.0.0.1:{port}", "--window-size=1280,1400", *args],
                              capture_output=True, text=True, timeout=120)
    try:
        # What the browser contacts by itself (component updates, time service) on a blank page is
        # its own business; anything beyond that came from our pages.
        chromium("blank", "--dump-dom", "about:blank")
        browser_own = {_host(p) for p in _Recorder.seen}
        _Recorder.seen = []
        for name, page in pages.items():
            url = f"http://127.0.0.1:{port}/{page}"
            chromium(name, f"--screenshot={shots / (name + '.png')}", url)
            doms[name] = chromium(name, "--dump-dom", url).stdout
    finally:
        server.shutdown()
    for name in pages:
        png = shots / f"{name}.png"
        assert png.exists() and png.stat().st_size > 10_000, f"screenshot {name} missing or blank"
        for error_text in ("Traceback (most recent call last)", "Error rendering", "Page not found", "404 Not Found"):
            assert error_text not in doms[name], f"{name}: {error_text}"
    assert "<table" in doms["results"] and "mjx-container" in doms["results"], "maths must be typeset by MathJax"
    images = re.findall(r'<img[^>]+src="([^"]+\.png)"', doms["stage"])
    assert images, "the stage chapter must show its figure"
    assert any(p.endswith(".png") and p.startswith("/_images/") for p in _Recorder.seen), "the figure must be loaded"
    assert "<table" in doms["stage"]
    assert "Extracted program" in doms["task"]
    outside = [p for p in _Recorder.seen if not p.startswith("/") and _host(p) not in browser_own]
    assert not outside, f"requests left the build folder: {outside}"
    missing = [p for p in _Recorder.seen if p.startswith("/") and p != "/favicon.ico"  # asked by the browser itself
               and not (root / p.split("?")[0].lstrip("/")).exists()]
    assert not missing, f"requests for files not in the build: {missing}"


@pytest.mark.skipif(not CHROMIUM, reason="chromium not installed")
def test_log_browser_finds_a_task_by_a_word_of_its_output(built, tmp_path):
    run, root = built
    table = RunStore(run).verdict_table()
    r = table[table["raw_output"].fillna("").str.len() > 0].iloc[0]
    word = max(re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", r["raw_output"]), key=len)
    href = book.task_page_path(r["dsl"], r["task_id"], r["model"], r["method"], r["sample"])[len("tasks/"):]

    def dom(fragment):
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
                               (root / "tasks" / "search.html").as_uri() + fragment],
                              capture_output=True, text=True, timeout=120).stdout
    found = dom(f"#q={word}&dsl={r['dsl']}")
    assert f'href="{href}"' in found, word
    assert re.search(r'id="count">\d+ of \d+ records', found)
    none = dom("#q=zzqqxx-no-such-word")
    assert 'id="count">0 of' in none and f'href="{href}"' not in none


def test_batch_runs_are_resumable_and_indexed(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(json.dumps({
        "notebook": "notebooks/03_validation.ipynb", "output_dir": str(tmp_path / "out"),
        "parameters": {"run_dir": [str(tmp_path / "a"), str(tmp_path / "b")], "selfcheck": [False, False]},
        "zip": True}))
    assert len(load_grid(grid)["combos"]) == 2
    first = run_batch(grid)
    assert [e["status"] for e in first] == ["finished", "finished"]
    again = run_batch(grid)
    assert all(e["status"].startswith("skipped") for e in again)
    nb = nbformat.read(tmp_path / "out" / first[0]["output"], as_version=4)
    assert nb.metadata["papermill"]["parameters"]["run_dir"] == str(tmp_path / "a")
    assert "selfcheck" in book.batch_md([tmp_path / "out"])


def test_viewer_shows_a_record_with_diff(built):
    from dslbench.viewer import TaskViewer
    run, _ = built
    v = TaskViewer(run)
    assert len(v.current) >= 2
    assert "Candidate vs gold" in v.body.value and "Prompt as sent" in v.body.value
    # search by a word of one record's output, a reason filter, a sort and the slice summary
    r = v.table[v.table["raw_output"].fillna("").str.len() > 0].iloc[0]
    word = max(re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", r["raw_output"]), key=len)
    v.search.value = word
    assert r["task_id"] in set(v.current["task_id"]) and len(v.current) <= len(v.table)
    assert "This slice" in v.summary.value and f"{len(v.current)} record(s)" in v.summary.value
    v.search.value = "zzqqxx-no-such-word"
    assert len(v.current) == 0 and "no records" in v.summary.value
    v.search.value = ""
    reason = r["semantic_reason"]
    v.reason.value = reason
    assert ((v.current["semantic_reason"] == reason) | (v.current["syntax_reason"] == reason)).all()
    v.reason.value = "(any)"
    v.sort.value = "semantic status"
    assert list(v.current["semantic_status"]) == sorted(v.current["semantic_status"])
    v.filters["dsl"].value = "verilog"
    assert set(v.current["dsl"]) == {"verilog"}
    v.next.click()
    assert v.position.value == min(1, v.position.max)
    # the reviewer's audit from the viewer: one appended mark on the shown record
    from dslbench import audit
    before = len(audit.marks(run))
    v.comment.value = "the trace differs only in a don't-care bit"
    v.disagree.click()
    m = audit.marks(run)
    assert len(m) == before + 1 and m.iloc[-1]["comment"].startswith("the trace") and not m.iloc[-1]["agree"]
    assert m.iloc[-1]["task_id"] == v.current.iloc[v.position.value]["task_id"] and "marked" in v.audit_status.value


def test_results_page_names_stand_in_judges_and_model_dependent_missingness():
    from dslbench.store import VERDICT_COLUMNS
    rows = []
    for m, missing in (("a", 1), ("b", 15)):
        for i in range(30):
            st = "unavailable" if i < missing else "pass"
            rows.append({**{c: None for c in VERDICT_COLUMNS}, "dsl": "cypher", "task_id": f"t{i}", "model": m,
                         "method": "baseline", "sample": 0, "syntax_status": st, "semantic_status": st,
                         "semantic_reason": "unsupported_by_judge" if st == "unavailable" else "ok",
                         "toolchain": "FalkorDB", "toolchain_version": "4.22", "judge_exact": True,
                         "judge_stand_in_for": "Neo4j 5"})
    page = book.results_md(pd.DataFrame(rows, columns=VERDICT_COLUMNS), "r")
    assert "(stand-in for Neo4j 5)" in page
    assert "Missing judgements differ by model" in page and "cypher: a: 1/30, b: 15/30" in page


def test_batch_help_describes_the_grid_format():
    r = run_cli("batch", "--help", timeout=120)
    assert r.returncode == 0
    for word in ("notebook:", "output_dir:", "parameters:", "zip: true", "batch.json"):
        assert word in r.stdout, word


def test_parameter_caveat_names_only_the_invocations_behind_the_results(tmp_path):
    """A resumed run keeps older invocations in run.json; each stage's results come from its last one."""
    import json as _json
    from dslbench.book import run_scope_md

    def scope(*calls):
        (tmp_path / "run.json").write_text("\n".join(_json.dumps({"stage": "pipeline", "params": c}) for c in calls))
        return "\n".join(run_scope_md(tmp_path))
    partial = scope({"stages": []}, {"stages": ["06_interventions", "07_lora"], "rounds": 1}, {"stages": ["07_lora"], "lora_steps": 10})
    assert "06_interventions: `rounds=1`" in partial and "07_lora: `lora_steps=10`" in partial
    assert "differ from the notebooks' defaults" not in scope({"stages": ["07_lora"], "lora_steps": 10}, {"stages": []})
