"""LaTeX: syntax = pdflatex compiles the document to a PDF without error (halt-on-error, no shell
escape, paranoid file access); semantic = document-structure intent read from the .aux, the .log
and the PDF text (sections in order, environments, captions, labels and resolved references,
bibliography, page count and size, text).

The oracle (all keys optional, at least one check):
  class: article                          document class (the log's "Document Class:")
  packages: [amsmath]                     packages/files that must be loaded (log "Package:"/"File:")
  forbidden_packages: [times]             ... that must not be loaded
  sections: [{level: section, title: Methods, number: "2", page: 1}, ...]
                                          table-of-contents entries required in this order
                                          (number/page optional); sections_exact: true also
                                          forbids further entries at the levels named
  environments: {itemize: 1, equation: {min: 2}, eqnarray: 0}
                                          \\begin{...} counts at compile time (env hooks)
  captions: [{type: figure, text: "...", number: "1"}, ...]
                                          captions (list-of-figures/tables/listings entries), in
                                          order per type; text is matched as a substring
  labels: {fig:plan: "1"}                 labels defined with these numbers
  references_resolved: true               no undefined reference/citation, no duplicate label
  bibitems: [key1, key2]                  exactly these thebibliography keys, in this order
  cited: [key1]                           keys cited with \\cite
  pages: 2 | {min: 1, max: 2}             page count of the PDF
  page_size: a4 | letter | a5 | [w_pt, h_pt]
  text: [...]  text_order: [...]  text_absent: [...]  page_text: [{page: 1, contains: [...]}]
                                          PDF text; compared without whitespace and hyphens
"""
import glob
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

from dslbench.toolchains import Probe, Toolchain, installed_versions

RUNNER = Path(__file__).with_name("run_latex.py")
FLAGS = ["-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error"]
# openin_any=p: no \input of absolute paths, dotfiles or parent directories; long log lines unwrapped.
TEX_ENV = {"openin_any": "p", "openout_any": "p", "max_print_line": "10000", "error_line": "254",
           "half_error_line": "238", "SOURCE_DATE_EPOCH": "0", "FORCE_SOURCE_DATE": "1"}
PAPER = {"a4": (595.3, 841.9), "letter": (612.0, 792.0), "a5": (419.5, 595.3)}
ENV_NAME = re.compile(r"^[A-Za-z@]+\*?$")


def squash(s: str) -> str:
    """Text without whitespace, hyphens and soft hyphens (line breaks and hyphenation differ)."""
    s = unicodedata.normalize("NFKC", s)
    return re.sub(r"[\s\-\u00ad\u2010\u2011]+", "", s)


def find_pdflatex() -> tuple[str | None, str]:
    """Prefer an upstream TeX Live installation (more packages) over Debian's texlive."""
    upstream = sorted(glob.glob("/usr/local/texlive/*/bin/*/pdflatex"))
    if upstream:
        return upstream[-1], "TeX Live (upstream)"
    path = shutil.which("pdflatex", path="/usr/local/bin:/usr/bin:/bin")
    return path, "Debian texlive"


def _first_error(log: str) -> str:
    """The first TeX error line; for an undefined control sequence also the source line shown by TeX."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^(\S+:\d+: |! )", line):
            msg = re.sub(r"^\./", "", line.strip())
            if msg.endswith("Undefined control sequence."):
                src = next((l.strip() for l in lines[i + 1:i + 8] if re.match(r"^l\.\d+ ", l)), "")
                msg += (" " + src) if src else ""
            return msg[:300]
    return ""


# one file from each collection beyond base + recommended that the prompt rules name as available
PROMISED_PACKAGES = ("enumitem.sty", "multirow.sty", "tikz.sty")


class Validator(Toolchain):
    SYNTAX_FAIL = "compile_error"      # pdflatex compiles
    SEMANTIC_FAIL = "oracle_mismatch"  # document-structure checks

    def probe(self) -> Probe:
        exe, kind = find_pdflatex()
        if not exe:
            return Probe(self.dsl, self.card["toolchain"], "", False,
                         "pdflatex not on PATH (Debian packages in toolchains/latex/apt.txt)")
        _, problem = installed_versions({"pypdf": "pypdf"})
        if problem:
            return self.unavailable(problem)
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
        first = out.splitlines()[0] if out else "pdfTeX ?"
        m = re.search(r"(pdfTeX \S+) \(TeX Live (\d+)", first)
        version = f"{m.group(1)} (TeX Live {m.group(2)}, {kind})" if m else f"{first.strip()} ({kind})"
        kernel = ""
        found = subprocess.run([str(Path(exe).with_name("kpsewhich")) if kind.startswith("TeX Live") else "kpsewhich",
                                "latex.ltx", *PROMISED_PACKAGES], capture_output=True, text=True, timeout=30).stdout.split()
        missing = [f for f in PROMISED_PACKAGES if not any(p.endswith("/" + f) for p in found)]
        if missing:   # the prompt rules promise them: judging without them would fail correct documents
            return self.unavailable(f"{', '.join(missing)} not found by kpsewhich: install texlive-latex-extra "
                                    "(toolchains/latex/apt.txt)")
        ltx = next((p for p in found if p.endswith("/latex.ltx")), "")
        if ltx:
            src = Path(ltx).read_text(encoding="latin-1", errors="replace")
            v = re.search(r"\\edef\\fmtversion\s*\{([^}]*)\}", src)
            p = re.search(r"\\def\\patch@level\{(\d+)\}", src)
            kernel = f"LaTeX2e <{v.group(1)}>" + (f" patch level {p.group(1)}" if p else "") if v else ""
        return Probe(self.dsl, f"pdflatex ({kind})", version, True,
                     dialect=f"{kernel or 'LaTeX2e'} on pdfTeX; packages: " + (
                         "Debian texlive-latex-base, -latex-recommended, -latex-extra, -pictures, -fonts-recommended"
                         if kind.startswith("Debian")
                         else f"TeX Live installation {Path(exe).parents[2]}"))

    def import_upstream(self, source: Path, verify_gold: bool = False):
        """TeXpert as published (data/TeXpert_Dataset.xlsx). See texpert.py. With verify_gold
        (`dslbench import --verify`), a gold that fails either level here is skipped with its reason."""
        from . import texpert
        return texpert.load(Path(source), self, check=verify_gold)

    # --- oracle spec ---------------------------------------------------------------------------
    def oracle_rules(self, task):
        o, problems = task.oracle, []
        if "sections_exact" in o and "sections" not in o:
            problems.append(("sections_exact", "must be a boolean, used together with sections"))
        for name in o.get("environments", {}):
            if not isinstance(name, str) or not ENV_NAME.match(name):
                problems.append((f"environments.{name}", "not an environment name"))
        return problems

    # --- levels --------------------------------------------------------------------------------
    def _env(self) -> dict:
        exe, _ = find_pdflatex()
        env = dict(TEX_ENV)
        # The venv first (the runner needs its pypdf), then an upstream TeX Live's bin directory.
        tex_bin = "" if str(Path(exe).parent) in ("/usr/bin", "/bin", "/usr/local/bin") else f"{Path(exe).parent}:"
        env["PATH"] = f"{Path(sys.executable).parent}:{tex_bin}/usr/local/bin:/usr/bin:/bin"
        return env

    def syntax(self, program, task, work):
        job = Path(self.file_name).stem
        result = self.run(["pdflatex", *FLAGS, self.file_name], work, env=self._env())
        if result.timed_out:
            return self.verdict("fail", f"pdflatex timed out after {self.limits().timeout_s:.0f} s", result)
        log_path = work / f"{job}.log"
        log = log_path.read_bytes()[:2_000_000].decode("latin-1") if log_path.exists() else ""
        if result.returncode != 0:
            err = _first_error(log) or _first_error(result.stdout) or f"pdflatex exit {result.returncode}"
            return self.verdict("fail", err, result)
        if not (work / f"{job}.pdf").exists():
            why = "no pages of output" if "No pages of output" in log else "no PDF written"
            return self.verdict("fail", f"pdflatex wrote no PDF ({why})", result)
        return self.verdict("pass", "compiles to a PDF", result)

    def semantic(self, program, task, work):
        o = task.oracle
        envs = sorted(o.get("environments", {}))
        result, r = self.run_runner([RUNNER], ["semantic", self.file_name, "dslbench-report.json", *envs], work,
                                    report="dslbench-report.json", env=self._env())
        if result.timed_out:
            return self.verdict("fail", f"compilation timed out after {self.limits().timeout_s:.0f} s", result)
        if r is None:
            return self.verdict("error", f"LaTeX runner failed (exit {result.returncode})", result)
        if not r["ok"]:
            return self.verdict("error", f"rerun with environment hooks failed: {r['error']}", result)
        if r["pdf_error"].startswith("pypdf is not installed"):
            return self.verdict("error", "pypdf is not importable inside the sandbox", result)
        if r["pdf_error"]:
            return self.verdict("fail", f"PDF could not be read: {r['pdf_error']}", result)
        problem, expected = self._compare(o, r)
        if problem:
            return self.verdict("fail", problem, result, expected=expected)
        return self.verdict("pass", f"document structure as required ({r['pages']} page(s), {r['runs'] + 1} pdflatex runs)",
                            result)

    @staticmethod
    def _compare(o: dict, r: dict) -> tuple[str, str]:
        """The first failed check as (what the document does, what the oracle expects); ("", "") when all hold.

        The first part is fed back to the model: it names the check and the document's own values, never
        the oracle's targets (required names, texts, numbers, counts), which go to the second part."""
        if "class" in o and r["class"] != o["class"]:
            return f"document class is {r['class'] or '?'} (wrong class)", f"expected document class {o['class']}"
        loaded = set(r["loaded"])
        for p in o.get("packages", []):
            if p not in loaded:
                return "a required package is not loaded", f"expected package {p} to be loaded"
        for p in o.get("forbidden_packages", []):
            if p in loaded:
                return f"package {p} is loaded but must not be", ""
        if "sections" in o:
            toc, pos = r["toc"], 0
            for s in o["sections"]:
                want = squash(s["title"])
                for j in range(pos, len(toc)):
                    e = toc[j]
                    if e["type"] == s["level"] and squash(e["text"]) == want:
                        if "number" in s and e["number"] != s["number"]:
                            return (f"{e['type']} '{e['text']}' is numbered '{e['number']}' (wrong number)",
                                    f"expected {s['level']} '{s['title']}' numbered '{s['number']}'")
                        if "page" in s and e["page"] != str(s["page"]):
                            return (f"{e['type']} '{e['text']}' starts on page {e['page']} (wrong page)",
                                    f"expected {s['level']} '{s['title']}' on page {s['page']}")
                        pos = j + 1
                        break
                else:
                    found = ", ".join(f"{e['type']} '{e['text']}'" for e in toc[:8]) or "none"
                    anywhere = next((e for e in toc if e["type"] == s["level"] and squash(e["text"]) == want), None)
                    if anywhere:
                        return (f"{anywhere['type']} '{anywhere['text']}' is out of order (contents entries: {found})",
                                "expected contents entries in this order: "
                                + ", ".join(f"{x['level']} '{x['title']}'" for x in o["sections"]))
                    return (f"a required {s['level']} is missing (contents entries: {found})",
                            f"expected {s['level']} '{s['title']}'")
            if o.get("sections_exact"):
                levels = {s["level"] for s in o["sections"]}
                got = [e for e in toc if e["type"] in levels]
                if len(got) != len(o["sections"]):
                    return (f"{len(got)} {'/'.join(sorted(levels))} entries (wrong number): "
                            + ", ".join(f"'{e['text']}'" for e in got[:10]),
                            f"expected exactly {len(o['sections'])} {'/'.join(sorted(levels))} entries")
        for name, want in o.get("environments", {}).items():
            n = r["environments"].count(name)
            lo, hi = (want, want) if isinstance(want, int) else (want.get("min", 0), want.get("max", 10 ** 9))
            if not lo <= n <= hi:
                exp = str(want) if isinstance(want, int) else f"{lo}..{hi if hi < 10 ** 9 else ''}"
                return (f"environment {name} begins {n} time(s) (wrong count)",
                        f"expected environment {name} {exp} time(s)")
        if "captions" in o:
            for typ in dict.fromkeys(c["type"] for c in o["captions"]):
                got = [c for c in r["captions"] if c["type"] == typ]
                pos = 0
                for c in (c for c in o["captions"] if c["type"] == typ):
                    for j in range(pos, len(got)):
                        if squash(c["text"]) in squash(got[j]["text"]):
                            if "number" in c and got[j]["number"] != c["number"]:
                                return (f"{typ} caption '{got[j]['text'][:60]}' is numbered {got[j]['number']} "
                                        f"(wrong number)",
                                        f"expected {typ} caption '{c['text']}' numbered {c['number']}")
                            pos = j + 1
                            break
                    else:
                        seen = "; ".join(f"'{g['text'][:60]}'" for g in got[:5]) or "none"
                        return (f"a required {typ} caption is missing (in order); {typ} captions: {seen}",
                                f"expected a {typ} caption containing '{c['text']}'")
        for name, num in o.get("labels", {}).items():
            if name not in r["labels"]:
                return f"label {name} is not defined", ""
            if r["labels"][name]["number"] != num:
                return (f"label {name} refers to '{r['labels'][name]['number']}' (wrong number)",
                        f"expected label {name} to refer to '{num}'")
        if o.get("references_resolved"):
            if r["undefined"]:
                return "undefined: " + ", ".join(r["undefined"][:5]), ""
            if r["multiply_defined"]:
                return "multiply defined labels: " + ", ".join(r["multiply_defined"][:5]), ""
        if "bibitems" in o:
            keys = [b["key"] for b in r["bibitems"]]
            if keys != o["bibitems"]:
                return f"bibliography keys {keys} (wrong keys or order)", f"expected bibliography keys {o['bibitems']}"
        for k in o.get("cited", []):
            if k not in r["citations"]:
                return "a required key is never cited", f"expected \\cite of {k}"
        if "pages" in o:
            p, n = o["pages"], r["pdf_pages"]
            lo, hi = (p, p) if isinstance(p, int) else (p.get("min", 1), p.get("max", 10 ** 9))
            if not lo <= n <= hi:
                exp = str(p) if isinstance(p, int) else f"{lo}..{hi if hi < 10 ** 9 else ''}"
                return f"{n} page(s) (wrong page count)", f"expected {exp} page(s)"
        if "page_size" in o:
            want = PAPER.get(o["page_size"], o["page_size"]) if isinstance(o["page_size"], str) else o["page_size"]
            got = r["page_size_pt"]
            if not got or abs(got[0] - want[0]) > 2 or abs(got[1] - want[1]) > 2:
                return f"page size {got} pt (wrong size)", f"expected page size {o['page_size']} {list(want)} pt"
        pages = [squash(t) for t in r["page_text"]]
        whole = "".join(pages)
        for i, t in enumerate(o.get("text", [])):
            if squash(t) not in whole:
                return f"required text {i + 1} is not found in the PDF", f"expected text '{t}' in the PDF"
        if "text_order" in o:
            pos = 0
            for i, t in enumerate(o["text_order"]):
                k = whole.find(squash(t), pos)
                if k < 0:
                    where = "in the PDF" if squash(t) not in whole else "in the required order"
                    return (f"required text {i + 1} (of {len(o['text_order'])}, in order) is not found {where}",
                            f"expected text '{t}' {where}")
                pos = k + len(squash(t))
        for t in o.get("text_absent", []):
            if squash(t) in whole:
                return f"text '{t}' appears in the PDF but must not", ""
        for e in o.get("page_text", []):
            page = pages[e["page"] - 1] if e["page"] <= len(pages) else ""
            for t in e["contains"]:
                if squash(t) not in page:
                    return f"a required text is not on page {e['page']}", f"expected text '{t}' on page {e['page']}"
        return "", ""


# --- the structure a reference states (TeXpert's derived oracles: texpert.py) ------------------------
SECTION_LEVELS = ("part", "chapter", "section", "subsection", "subsubsection")
COUNTED_ENVS = ("figure", "table", "tabular", "tabularx", "longtable", "itemize", "enumerate", "description",
                "equation", "align", "gather", "multline", "lstlisting", "verbatim", "abstract", "thebibliography")


def _strip_comments(tex: str) -> str:
    return re.sub(r"(?<!\\)%.*", "", tex)


def _brace_arg(s: str, i: int) -> tuple[str | None, int]:
    while i < len(s) and s[i] in " \t\n":
        i += 1
    if i >= len(s) or s[i] != "{":
        return None, i
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "\\":
            continue
        if s[j] == "{" and (j == 0 or s[j - 1] != "\\"):
            depth += 1
        elif s[j] == "}" and s[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return s[i + 1:j], j + 1
    return None, len(s)


def _plain(tex: str) -> str:
    tex = re.sub(r"\\([&%$#_{}])", r"\1", tex.replace("~", " "))
    tex = re.sub(r"\\[A-Za-z@]+\*?\s*", "", tex)
    return re.sub(r"\s+", " ", tex.replace("{", "").replace("}", "")).strip()


def derive_oracle(code: str) -> dict:
    """The structure a reference document states in its source: class, numbered sections in order,
    environment counts (as minimums), figure/table captions in order."""
    src = _strip_comments(code)
    oracle: dict = {}
    m = re.search(r"\\documentclass\s*(?:\[[^\]]*\])?\s*\{([A-Za-z0-9-]+)\}", src)
    if m:
        oracle["class"] = m.group(1)
    body = src.split("\\begin{document}", 1)[-1]
    sections = []
    own_macros = set(re.findall(r"\\(?:(?:re)?newcommand\*?\s*\{?|DeclareRobustCommand\*?\s*\{?|[egx]?def\s*)\\([A-Za-z@]+)", src))
    for m in re.finditer(r"(?:\\([A-Za-z@]+))?\\(" + "|".join(SECTION_LEVELS) + r")(\*?)\s*(?:\[[^\]]*\])?\s*(?=\{)",
                         body):
        title, _ = _brace_arg(body, m.end())
        # a sectioning command handed to a macro the document defines (\tocless\section{...}) may never
        # reach the contents
        if m.group(1) in own_macros or m.group(3) or title is None or not _plain(title):
            continue
        sections.append({"level": m.group(2), "title": _plain(title)})
    if sections:
        oracle["sections"] = sections
    counts = {e: len(re.findall(r"\\begin\s*\{" + re.escape(e) + r"\}", body)) for e in COUNTED_ENVS}
    envs = {e: {"min": n} for e, n in counts.items() if n}
    if envs:
        oracle["environments"] = envs
    captions, float_type, inside_sub = [], None, 0
    for m in re.finditer(r"\\(begin|end)\s*\{(figure|table|subfigure|subtable)\*?\}|\\caption\s*(?:\[[^\]]*\])?\s*(?=\{)",
                         body):
        if m.group(2) in ("figure", "table"):
            float_type = m.group(2) if m.group(1) == "begin" else float_type
            continue
        if m.group(2):   # a caption inside subfigure/subtable is a sub-caption, listed apart from the float's
            inside_sub = max(0, inside_sub + (1 if m.group(1) == "begin" else -1))
            continue
        text, _ = _brace_arg(body, m.end())
        if float_type and not inside_sub and text and _plain(text):
            captions.append({"type": float_type, "text": _plain(text)})
    if captions:
        oracle["captions"] = captions
    return oracle
