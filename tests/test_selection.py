"""Domain-selection replay: corpus loading, screen, deduplication, clustering criterion, audit,
mapping, the decision log, and the notebook end to end on a small seeded sample."""
import json
import textwrap

import numpy as np
import pandas as pd
import pytest

from dslbench import generation as gen
from dslbench import selection as S
from dslbench.paths import repo_root

ROOT = repo_root()


def write(path, text):
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# --- corpus -------------------------------------------------------------------------------------

def test_bundled_corpus_loads_with_provenance():
    c = S.load_corpus(ROOT / "data/corpus/papers.csv")
    assert len(c) == 13309 and c["record_id"].is_unique
    assert (ROOT / "data/corpus/SOURCES.md").read_text().count("|") > 100


@pytest.mark.parametrize("body, message", [
    ("record_id,year\nx-1,2020\n", "papers.csv:1: header lacks column(s) title"),
    ("record_id,title,year\nx-1,A,2020\nx-1,B,2021\n", "papers.csv:3: field 'record_id' 'x-1' repeats line 2"),
    ("record_id,title,year\nx-1,A,20x0\n", "papers.csv:2: field 'year' is '20x0'"),
    ("record_id,title,year\nx-1,,2020\n", "papers.csv:2: field 'title' is empty (record x-1)"),
])
def test_bad_corpus_names_file_line_and_field(tmp_path, body, message):
    with pytest.raises(S.SelectionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        S.load_corpus(write(tmp_path / "papers.csv", body))


def test_keyword_screen():
    c = pd.DataFrame({"title": ["VerilogEval: Verilog code generation", "A survey of Python completion",
                                "Text-to-SQL with LLMs"]})
    assert S.keyword_screen(c, [r"verilog", r"\bsql\b"]).tolist() == [True, False, True]


# --- LLM extraction parsing and relevance -------------------------------------------------------

def test_parse_extraction_and_label_vocabulary():
    assert S.parse_extraction("Verilog | Hardware Design.\nmore") == ("verilog", "hardware design")
    assert S.parse_extraction("no separator") == ("no separator", "")
    assert S.parse_extraction("") == ("", "")
    assert S.normalize_label("The Smart Contracts") == "smart contract"
    assert S.normalize_label("data-science and analytics for the users") == "data science analytic user"
    assert S.normalize_label("Theorem proving") == "theorem proving"


def test_relevance_rule():
    lex, gp = ["verilog", "sql", "lean"], ["python", "none"]
    assert S.is_relevant("verilog", "anything", lex, gp)
    assert S.is_relevant("bigquery sql", "x", lex, gp)
    assert not S.is_relevant("python", "Verilog from Python", lex, gp)   # the model said general-purpose
    assert S.is_relevant("lemonade", "LeanDojo: Lean proofs", lex, gp)   # garbled answer, title names Lean
    assert not S.is_relevant("", "Lean proofs", lex, gp)                 # no answer: never relevant alone
    assert not S.is_relevant("cleanup", "Cleaning data", lex, gp)        # 'lean' inside a word does not count


# --- deduplication ------------------------------------------------------------------------------

def test_deduplicate_by_title_url_and_fuzzy_match():
    df = pd.DataFrame([
        {"record_id": "a-1", "title": "Large Language Models for Verilog Generation", "url": "https://arxiv.org/abs/2401.00001"},
        {"record_id": "b-1", "title": "Large language models for Verilog generation!", "url": ""},
        {"record_id": "c-1", "title": "A different title entirely", "url": "http://arxiv.org/pdf/2401.00001v2"},
        {"record_id": "d-1", "title": "Benchmarking LLMs on Cypher query generation tasks", "url": ""},
        {"record_id": "e-1", "title": "Benchmarking LLMs on Cypher query-generation task", "url": ""},
        {"record_id": "f-1", "title": "Analog circuit design with LLMs part 2", "url": ""},
        {"record_id": "g-1", "title": "Analog circuit design with LLMs part 3", "url": ""},
    ])
    d = S.deduplicate(df).set_index("record_id")
    assert d.loc["b-1", "group"] == "a-1" and d.loc["b-1", "reason"] == "same normalized title"
    assert d.loc["c-1", "group"] == "a-1" and d.loc["c-1", "reason"] == "same arXiv id / URL"
    assert d.loc["e-1", "group"] == "d-1" and d.loc["e-1", "reason"].startswith("fuzzy title match")
    assert d.loc["g-1", "group"] == "g-1"  # numbers differ: a different part, not a duplicate
    assert int(d["duplicate"].sum()) == 3


# --- clustering ---------------------------------------------------------------------------------

def test_choose_k_finds_planted_clusters():
    rng = np.random.default_rng(0)
    centres = np.eye(8)[:3] * 5
    X = np.vstack([c + rng.normal(0, 0.3, (40, 8)) for c in centres])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    k, table = S.choose_k(X, range(2, 7), seed=0)
    assert k == 3 and table["silhouette"].idxmax() == table.index[table["k"] == 3][0]
    assert S.choose_k(X, range(2, 7), seed=0)[0] == k  # deterministic


def test_top_terms_mark_each_cluster():
    terms = S.top_terms({0: ["verilog rtl design", "verilog testbench"], 1: ["sql queries", "text-to-sql parsing sql"]})
    assert terms[0][0] == "verilog" and terms[1][0] == "sql"


# --- audit --------------------------------------------------------------------------------------

AUDIT = {"min_share": 0.5, "split": True, "min_papers": 2, "overrides": [],
         "domains": {"Hardware": ["verilog"], "Query": [r"\bsql\b"], "Games": ["game"]}}


def _papers():
    titles = ["verilog a", "verilog b", "verilog c sql",        # cluster 0: Hardware
              "verilog d", "verilog e",                         # cluster 1: Hardware too -> merged
              "sql a", "sql b", "game engine sql",              # cluster 2: Query; 'game engine sql' stays (two matches)
              "misc x", "misc y", "a game z"]                   # cluster 3: unassigned; 'a game z' assigned, then dropped
    return pd.DataFrame({"record_id": [f"r{i}" for i in range(len(titles))], "title": titles, "label": ""}), \
        np.array([0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 3])


def test_audit_merges_splits_and_drops_small_domains():
    papers, clusters = _papers()
    out, decisions, domains = S.apply_audit(papers, clusters, {0: ["verilog"], 1: ["verilog"], 2: ["sql"], 3: ["misc"]}, AUDIT)
    d = decisions.set_index("cluster")
    assert d.loc[0, "action"] == "merged" and d.loc[1, "action"] == "merged" and d.loc[2, "action"] == "named"
    assert d.loc[3, "action"] == "unassigned" and pd.isna(d.loc[3, "domain"])
    o = out.set_index("title")
    assert o.loc["verilog c sql", "domain"] == "Hardware"       # matches two domains: no split
    assert o.loc["a game z", "decision"] == "below min_papers"  # Games has one paper < min_papers
    assert domains.set_index("domain")["papers"].to_dict() == {"Hardware": 5, "Query": 3}
    assert pd.isna(o.loc["misc x", "domain"])


def test_audit_split_moves_a_paper_and_override_pins_a_cluster():
    papers, clusters = _papers()
    papers.loc[2, "title"] = "sql only here"  # in the Hardware cluster but names only Query
    audit = {**AUDIT, "overrides": [{"top_terms": ["misc"], "domain": "Games", "reason": "reviewed: game papers"}]}
    out, decisions, domains = S.apply_audit(papers, clusters, {0: ["verilog"], 1: ["verilog"], 2: ["sql"], 3: ["misc", "x"]}, audit)
    o = out.set_index("title")
    assert o.loc["sql only here", "domain"] == "Query" and o.loc["sql only here", "decision"] == "split"
    d = decisions.set_index("cluster")
    assert d.loc[3, "action"] == "override" and d.loc[3, "domain"] == "Games" and d.loc[3, "why"] == "reviewed: game papers"


def test_bad_audit_file_names_the_field(tmp_path):
    p = write(tmp_path / "audit.yaml", """
        min_share: 0.3
        min_papers: 5
        domains:
          Hardware: ['verilog(']
        """)
    with pytest.raises(S.SelectionError, match=r"audit.yaml: field 'domains.Hardware': bad pattern"):
        S.load_audit(p)
    p = write(tmp_path / "audit2.yaml", "min_share: 0.3\ndomains: {A: [x]}\n")
    with pytest.raises(S.SelectionError, match="field 'min_papers' is missing"):
        S.load_audit(p)


# --- mapping ------------------------------------------------------------------------------------

def _cand(dsl, scores):
    return {"dsl": dsl, "scores": {c: {"score": s, "why": "because"} for c, s in zip(S.CRITERIA, scores)}}


def test_mapping_picks_highest_total_with_tie_break_and_threshold():
    data = {"min_total": 15, "domains": {
        "HW": {"paper_choice": "Verilog", "candidates": [_cand("VHDL", [4, 5, 4, 5, 4]), _cand("Verilog", [5, 5, 4, 5, 3])]},
        "Weak": {"paper_choice": None, "candidates": [_cand("X", [2, 2, 2, 2, 2])]}}}
    m = S.map_domains_to_dsls(data, ["HW", "Weak", "Missing"])
    chosen = m[m["chosen"]].set_index("domain")["dsl"].to_dict()
    assert chosen == {"HW": "Verilog"}  # tie at 22: equal benchmarkability, Verilog wins on centrality
    assert m.set_index("domain").loc["Weak", "note"] == "best total 10 < min_total 15"
    assert m.set_index("domain").loc["Missing", "note"] == "no candidates listed in the mapping file"


def test_bad_candidates_file_names_the_field(tmp_path):
    p = write(tmp_path / "c.yaml", """
        domains:
          HW:
            candidates:
              - dsl: Verilog
                scores: {domain_centrality: {score: 7, why: x}}
        """)
    with pytest.raises(S.SelectionError, match=r"domains.HW.candidates\[0\].scores.domain_centrality.score"):
        S.load_candidates(p)


def test_bundled_selection_data_is_consistent():
    cands = S.load_candidates(ROOT / "data/selection/dsl_candidates.yaml")
    audit = S.load_audit(ROOT / "data/selection/audit.yaml")
    assert set(audit["domains"]) <= set(cands["domains"])
    paper = {d: e["paper_choice"] for d, e in cands["domains"].items() if e.get("paper_choice")}
    assert len(paper) == 18
    for d, dsl in paper.items():
        assert dsl in [c["dsl"] for c in cands["domains"][d]["candidates"]], d
    lab = pd.read_csv(ROOT / "data/selection/labelled_sample.csv")
    assert set(lab["relevant"]) == {0, 1} and lab["record_id"].is_unique


# --- decision log -------------------------------------------------------------------------------

def test_decision_log_replays_without_calling_the_model(tmp_path, monkeypatch):
    spec = gen.resolve_model("smollm2-135m")
    params = {**gen.DEFAULT_PARAMS, "max_tokens": 16}
    title = "Synthesising RTL from specifications"
    key = gen.cache_key(spec, params, S.extraction_messages(title), 0)
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"key": key, "answer": "Verilog | hardware design"}) + "\n")

    def no_call(*a, **k):
        raise AssertionError("the model was called although the log holds the answer")
    monkeypatch.setattr(gen, "generate", no_call)
    out = S.llm_card_sort(pd.DataFrame({"record_id": ["r1"], "title": [title]}), "smollm2-135m",
                          log_path=log, cache=gen.GenerationCache(tmp_path / "cache"), progress=False)
    row = out.iloc[0]
    assert (row["source"], row["language"], row["label"]) == ("log", "verilog", "hardware design")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "x", "answer": "a"}\nnot json\n')
    with pytest.raises(S.SelectionError, match=r"bad.jsonl:2: unreadable decision record"):
        S.DecisionLog(bad).load()


def test_logged_decisions_are_what_the_embedded_model_answers(tmp_path):
    """The committed decision log is real model output: re-asking gives the same answers."""
    log = S.DecisionLog(ROOT / "data/selection/decisions/smollm2-135m.jsonl").load()
    assert len(log) > 100
    # entries spread over the whole log (3 from its start once passed while 29 % of it was stale)
    keys = sorted(log)
    sample = [log[k] for k in keys[::len(keys) // 8][:8]]
    fresh = S.llm_card_sort(pd.DataFrame({"record_id": [f"r{i}" for i in range(len(sample))],
                                          "title": [r["title"] for r in sample]}),
                            "smollm2-135m", log_path=None, cache=gen.GenerationCache(tmp_path / "c"), progress=False)
    assert fresh["source"].tolist() == ["model"] * len(sample)
    assert fresh["answer"].tolist() == [r["answer"] for r in sample]


# --- notebook -----------------------------------------------------------------------------------

def test_notebook_runs_on_a_small_sample(tmp_path):
    import papermill as pm
    run = tmp_path / "run"
    pm.execute_notebook(str(ROOT / "notebooks/01_domain_selection.ipynb"), str(tmp_path / "out.ipynb"),
                        parameters={"run_dir": str(run), "corpus_sample": 400, "k_min": 2, "k_max": 6},
                        cwd=str(ROOT), kernel_name="python3", progress_bar=False)
    sel = run / "selection"
    funnel = pd.read_csv(sel / "funnel.csv").set_index("step")
    assert funnel.loc["candidates", "replay"] == 400
    assert funnel.loc["candidates", "paper"] == 79844
    assert 0 < funnel.loc["deduplicated", "replay"] <= funnel.loc["relevant", "replay"] <= funnel.loc["keyword screened", "replay"]
    assert 2 <= funnel.loc["pre-audit clusters", "replay"] <= 6
    decisions = pd.read_parquet(sel / "decisions.parquet")
    assert {"prompt", "answer", "language", "label", "relevant", "source"} <= set(decisions.columns)
    assert (pd.read_csv(sel / "cluster_decisions.csv")["action"].isin(
        ["named", "merged", "unassigned", "override", "dropped"])).all()
    assert len(pd.read_csv(sel / "paper_comparison.csv")) == 18
    # the screen-only sensitivity replays the same steps from every screened title
    assert funnel.loc["relevant", "screen only"] == funnel.loc["keyword screened", "replay"]
    assert funnel.loc["deduplicated", "replay"] <= funnel.loc["deduplicated", "screen only"]
    assert (sel / "domains_screen_only.csv").exists()


def test_choose_k_on_tiny_samples_never_fails():
    X = np.eye(4, dtype=np.float32)
    k, table = S.choose_k(X[:2], range(8, 31))
    assert k == 1 and table.empty and S.cluster(X[:2], k).tolist() == [0, 0]
    k, table = S.choose_k(X, range(8, 31))
    assert 2 <= k <= 3 and set(table["k"]) == {2, 3}
