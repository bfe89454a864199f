"""Sandboxed LaTeX runner: compile a document with pdflatex and report its structure as JSON.

Runs inside the sandbox (copied into the work directory): it is the only place where the
candidate's document is compiled and its PDF is parsed.

    python run_latex.py semantic main.tex report.json ENV...

re-runs pdflatex (up to twice, while LaTeX asks for a rerun) with environment hooks that log every
\\begin{ENV} of the named environments, then reports what the .aux, .log and PDF say: document
class, loaded packages, table of contents entries, captions, labels, bibliography entries,
undefined references, environments in order, page count and size, and the text of each page.
"""
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

PDFLATEX = ["pdflatex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error"]
ENV_RE = re.compile(r"^[A-Za-z@]+\*?$")
MAX_TEXT = 200_000


def group(s: str, i: int):
    """The balanced {...} group starting at s[i] (after spaces): (content, index after it)."""
    while i < len(s) and s[i] in " \t\n":
        i += 1
    if i >= len(s) or s[i] != "{":
        return None, i
    depth, j = 0, i
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return s[i + 1:j], j + 1
        j += 1
    return None, len(s)


def groups(s: str, i: int, n: int):
    out = []
    for _ in range(n):
        g, i = group(s, i)
        if g is None:
            break
        out.append(g)
    return out, i


def detex(s: str) -> str:
    """Readable text of a TeX fragment from the .aux (titles, captions)."""
    s = re.sub(r"\\(nobreakspace|space)\s*(\{\})?", " ", s)
    s = s.replace("~", " ")
    s = re.sub(r"\\([&%$#_{}])", r"\1", s)
    s = re.sub(r"\\[A-Za-z@]+\*?\s*", "", s)
    s = s.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", s).strip()


def numberline(entry: str, kind: str = ""):
    """Split '\\numberline {1.2}Title' into ('1.2', 'Title'), and a part's 'II\\hspace {1em}Title' (the
    standard classes number parts that way; other entries keep such text as their title) into ('II', 'Title')."""
    m = re.match(r"\s*\\numberline\s*", entry)
    part = re.match(r"\s*([A-Za-z0-9.]+)\\hspace\s*\{[^{}]*\}", entry) if kind == "part" else None
    if part:
        return part.group(1), detex(entry[part.end():])
    if not m:
        return "", detex(entry)
    num, i = group(entry, m.end())
    return detex(num or ""), detex(entry[i:])


def read_aux(path: Path, out: dict, seen: set):
    if path in seen or not path.exists():
        return
    seen.add(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    for m in re.finditer(r"\\(@writefile|newlabel|bibcite|citation|@input)\s*(?=\{)", text):
        cmd = m.group(1)
        if cmd == "@writefile":
            args, _ = groups(text, m.end(), 2)
            if len(args) < 2:
                continue
            ext, body = args
            cl = re.match(r"\s*\\contentsline\s*", body)
            if not cl:
                continue
            args, _ = groups(body, cl.end(), 3)
            if len(args) < 3:
                continue
            kind, entry, page = args
            num, title = numberline(entry, kind)
            item = {"type": kind, "number": num, "text": title, "page": detex(page)}
            (out["toc"] if ext == "toc" else out["captions"]).append(item)
        elif cmd == "newlabel":
            args, i = groups(text, m.end(), 2)
            if len(args) == 2:
                inner, _ = groups(args[1], 0, 2)
                out["labels"][args[0]] = {"number": detex(inner[0]) if inner else "",
                                          "page": detex(inner[1]) if len(inner) > 1 else ""}
        elif cmd == "bibcite":
            args, _ = groups(text, m.end(), 2)
            if len(args) == 2:
                num, _ = group(args[1], 0)
                out["bibitems"].append({"key": args[0], "number": detex(num if num is not None else args[1])})
        elif cmd == "citation":
            args, _ = groups(text, m.end(), 1)
            if args:
                out["citations"] += [k.strip() for k in args[0].split(",") if k.strip()]
        elif cmd == "@input":
            args, _ = groups(text, m.end(), 1)
            if args and "/" not in args[0] and not args[0].startswith("."):
                read_aux(path.parent / args[0], out, seen)


def read_log(path: Path, out: dict):
    log = path.read_text(encoding="latin-1", errors="replace") if path.exists() else ""
    for line in log.splitlines():
        m = re.match(r"^(Document Class|Package|File): (\S+)", line)
        if m:
            if m.group(1) == "Document Class" and not out["class"]:
                out["class"] = m.group(2)   # the first: standalone (say) loads article after it
            name = re.sub(r"\.sty$", "", m.group(2))
            if name not in out["loaded"]:
                out["loaded"].append(name)
        m = re.match(r"^DSLBENCH-ENV (\S+)", line)
        if m:
            out["environments"].append(m.group(1))
        m = re.search(r"(Reference|Citation) `([^']*)' on page \S+ undefined", line)
        if m:
            out["undefined"].append(f"{m.group(1).lower()} {m.group(2)}")
        m = re.search(r"Label `([^']*)' multiply defined", line)
        if m:
            out["multiply_defined"].append(m.group(1))
        m = re.search(r"Output written on .*\((\d+) pages?", line)
        if m:
            out["pages"] = int(m.group(1))
    out["undefined"] = sorted(set(out["undefined"]))


def read_pdf(path: Path, out: dict):
    if not path.exists():
        return
    try:
        from pypdf import PdfReader
    except ImportError:
        out["pdf_error"] = "pypdf is not installed"
        return
    try:
        reader = PdfReader(str(path))
        total = 0
        for i, page in enumerate(reader.pages):
            if i == 0:
                box = page.mediabox
                out["page_size_pt"] = [round(float(box.width), 1), round(float(box.height), 1)]
            text = unicodedata.normalize("NFKC", page.extract_text() or "")
            total += len(text)
            out["page_text"].append(text if total < MAX_TEXT else text[:1000])
        out["pdf_pages"] = len(reader.pages)
    except Exception as e:  # a malformed PDF is reported, not crashed on
        out["pdf_error"] = f"{type(e).__name__}: {e}"[:300]


def first_error(log: str) -> str:
    for line in log.splitlines():
        if re.match(r"^(\S+:\d+: |! )", line):
            return line.strip()[:300]
    return ""


def compile_once(tex: str, job: str, hooks: str, env: dict):
    arg = hooks + "\\input{" + tex + "}"
    return subprocess.run([*PDFLATEX, f"-jobname={job}", arg], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def main():
    mode, tex, report_path, *envs = sys.argv[1:]
    assert mode == "semantic", mode
    job = Path(tex).stem
    env = dict(os.environ)
    hooks = "".join(f"\\AddToHook{{env/{e}/begin}}{{\\immediate\\write-1{{DSLBENCH-ENV {e}}}}}"
                    for e in envs if ENV_RE.match(e))
    report = {"ok": False, "runs": 0, "error": "", "class": "", "loaded": [], "toc": [], "captions": [],
              "labels": {}, "bibitems": [], "citations": [], "environments": [], "undefined": [],
              "multiply_defined": [], "pages": 0, "pdf_pages": 0, "page_size_pt": [], "page_text": [],
              "pdf_error": ""}
    log_path = Path(job + ".log")
    for run in range(2):
        aux = Path(job + ".aux")
        before = aux.read_bytes() if aux.exists() else b""
        proc = compile_once(tex, job, hooks, env)
        report["runs"] = run + 1
        log = log_path.read_text(encoding="latin-1", errors="replace") if log_path.exists() else ""
        if proc.returncode != 0:
            report["error"] = first_error(log) or f"pdflatex exit {proc.returncode}"
            break
        after = aux.read_bytes() if aux.exists() else b""
        if after == before and "Rerun to get" not in log:
            break
    if not report["error"]:
        report["ok"] = True
        aux_out = {"toc": report["toc"], "captions": report["captions"], "labels": report["labels"],
                   "bibitems": report["bibitems"], "citations": report["citations"]}
        read_aux(Path(job + ".aux"), aux_out, set())
        read_log(log_path, report)
        read_pdf(Path(job + ".pdf"), report)
    Path(report_path).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
