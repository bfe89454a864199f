"""Import TeXpert (github knowledge-verse-ai/TeXpert) as its authors publish it.

Layout: data/TeXpert_Dataset.xlsx with the sheets Simple, Average and Hard (250, 150 and 40 rows),
columns ID, Task Instructions, Verified LaTeX Code, Verified LaTeX Source LLM and Class (which only
repeats the sheet). Quirks: the Hard sheet spells the last column CLASS; the code is a Markdown
fence ("```latex" ... "```", sometimes with the code on the fence's own line: "```latex\\documentclass");
many verified answers are fragments (a table, an equation) rather than whole documents.

A task's instruction is the row's instruction, its gold the fenced code (fence removed), its oracle
the structure the gold states (validator.derive_oracle: class, numbered sections, environment
counts, captions). A fragment has no document to compile and compare: skipped (not_a_document).
Semantic mutants: the first numbered section taken out, the article/report class swapped, when the
oracle checks them. With `check` (dslbench import --verify) a gold that does not pass both levels
here is skipped with its reason: package_not_installed (from a TeX Live collection other than base,
recommended, latex-extra, pictures, bibtex-extra and science), missing_file (an image the gold includes),
needs_xelatex, gold_fails_syntax / gold_fails_semantic.
"""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each, dump_task

BENCHMARK = "TeXpert"
LICENCE = "see the TeXpert repository (no licence file)"
WORKBOOK = "TeXpert_Dataset.xlsx"
SHEETS = {"simple": "easy", "average": "medium", "hard": "hard"}
COLUMNS = ("id", "task instructions", "verified latex code")
FENCE = re.compile(r"^\s*```[ \t]*(?:latex|tex)?[ \t]*\n?(.*?)\n?\s*```\s*$", re.S | re.I)
CLASS_SWAP = {"article": "report", "report": "article"}


def find_workbook(source: Path) -> Path:
    if source.is_file():
        return source
    for folder in (source / "data", source):
        books = sorted(folder.glob("*.xlsx"), key=lambda p: p.name != WORKBOOK) if folder.is_dir() else []
        if books:
            return books[0]
    raise NotThisBenchmark(f"{source}: no data/{WORKBOOK} (give the TeXpert clone, its data folder or the workbook)")


def read_rows(path: Path) -> list[tuple[str, dict]]:
    """(record id `Sheet/ID`, {column (lower case): text}) per non-empty row of the known sheets."""
    import openpyxl
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # noqa: BLE001 - openpyxl raises zipfile, KeyError, InvalidFileException...
        raise NotThisBenchmark(f"{path}: not an Excel workbook ({type(e).__name__}: {e})") from None
    sheets = [s for s in wb.sheetnames if s.strip().lower() in SHEETS]
    if not sheets:
        raise NotThisBenchmark(f"{path.name}: none of the sheets Simple, Average, Hard (found: {', '.join(wb.sheetnames)})")
    out = []
    for sheet in sheets:
        rows = wb[sheet].iter_rows(values_only=True)
        header = [str(h).strip().lower() if h is not None else "" for h in next(rows, ())]  # CLASS or Class
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise NotThisBenchmark(f"{path.name} sheet {sheet}: missing column(s) {', '.join(missing)}")
        for n, row in enumerate(rows, start=2):
            cells = {h: ("" if v is None else str(v).strip()) for h, v in zip(header, row) if h}
            if any(cells.values()):
                out.append((f"{sheet}/{cells.get('id') or f'row {n}'}", {"sheet": sheet, **cells}))
    return out


def load(source: Path, tc, check: bool = False) -> Imported:
    validator = sys.modules[type(tc).__module__]      # derive_oracle and the section parser
    records = read_rows(find_workbook(Path(source)))

    def convert(record_id: str, row: dict):
        for column in COLUMNS:
            if not row.get(column):
                raise ValueError(f"empty '{column}'")
        sheet, rid = row["sheet"], row["id"]
        fenced = FENCE.match(row["verified latex code"])
        code = (fenced.group(1) if fenced else row["verified latex code"]).replace("\r\n", "\n").strip() + "\n"
        if "\\documentclass" not in code or "\\begin{document}" not in code:
            return Skip(record_id, "not_a_document", "a fragment (no \\documentclass or \\begin{document}): "
                                                     "nothing to compile and compare")
        oracle = validator.derive_oracle(code)
        # the Class column repeats the sheet (Simple/Average/Hard): the constructs come from the gold
        constructs = (["sectioning"] if "sections" in oracle else []) + list(oracle.get("environments", {})) \
            + (["captions"] if "captions" in oracle else [])
        return {
            "id": "latex-texpert-" + re.sub(r"[^a-z0-9]+", "-", f"{sheet}-{rid}".lower()).strip("-"),
            "dsl": "latex", "domain": "Document Processing",
            "title": f"TeXpert {sheet} {rid}", "difficulty": SHEETS[sheet.strip().lower()],
            "constructs": constructs or ["document"], "failure_modes": ["knowledge"],
            "instruction": row["task instructions"] + "\n", "gold": code, "oracle": oracle,
            "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": f"{sheet}/{rid}",
                           "licence": LICENCE},
            "split": "test", "mutants": mutants(code, oracle, validator),
        }

    made = convert_each(records, convert, progress=True, total=len(records))
    return check_golds(made, tc) if check else made


def mutants(code: str, oracle: dict, validator) -> list[dict]:
    """Edits of the gold that still compile and that the derived oracle must reject."""
    out = []
    start = code.find("\\begin{document}")
    body = code[start:]
    m = re.search(r"\\(" + "|".join(validator.SECTION_LEVELS) + r")\s*(?=\{)", body) if oracle.get("sections") else None
    if m:
        title, end = validator._brace_arg(body, m.end())
        if title is not None:
            out.append({"level": "semantic", "note": f"the first \\{m.group(1)} taken out",
                        "program": code[:start] + body[:m.start()] + body[end:]})
    if oracle.get("class") in CLASS_SWAP and "\\chapter" not in body:     # an article has no \chapter
        other = CLASS_SWAP[oracle["class"]]
        swapped = re.sub(r"(\\documentclass\s*(?:\[[^\]]*\])?\s*\{)" + oracle["class"] + r"\}",
                         lambda g: g.group(1) + other + "}", code, count=1)
        out.append({"level": "semantic", "note": f"class {oracle['class']} -> {other}", "program": swapped})
    return out


def check_golds(made: Imported, tc) -> Imported:
    """The tasks whose gold passes both levels here; the others skipped with the level that failed."""
    from dslbench import pipeline
    from dslbench.tasks import TaskError, load_task_file
    out = Imported(skipped=list(made.skipped))
    with tempfile.TemporaryDirectory(prefix="texpert-gold-") as d:
        folder = Path(d) / "latex"                     # the loader wants the folder named after the DSL
        folder.mkdir()
        for task in made.tasks:
            path = folder / f"{task['id']}.yaml"
            path.write_text(dump_task(task), encoding="utf-8")
            try:
                loaded = load_task_file(path, tc.check_oracle)
            except TaskError:
                out.tasks.append(task)                 # write_tasks skips it as invalid_task, with the reason
                continue
            got = pipeline.evaluate("latex", loaded, task["gold"])
            for level in ("syntax", "semantic"):
                if got[level]["status"] != "pass":
                    why = got[level]["diagnostics"]
                    out.skipped.append(Skip(task["provenance"]["upstream_id"], gold_reason(level, why), why[:300]))
                    break
            else:
                out.tasks.append(task)
    return out


def gold_reason(level: str, diagnostics: str) -> str:
    """Why a gold fails here: this TeX installation lacks what it loads (a package from another TeX
    Live collection), it includes a file nobody has, it needs XeTeX/LuaTeX, or it really fails."""
    # babel's "Unknown option 'french'": the language's texlive-lang-* collection is not installed
    if re.search(r"File `[^']+\.(sty|cls)' not found|File `example-image|Package babel Error: Unknown option", diagnostics):
        return "package_not_installed"
    if re.search(r"File `[^']+' not found", diagnostics):
        return "missing_file"
    if re.search(r"requires either XeTeX or LuaTeX|Fatal Package fontspec|Cannot be run with pdftex", diagnostics):
        return "needs_xelatex"
    return f"gold_fails_{level}"
