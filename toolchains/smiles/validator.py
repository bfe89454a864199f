"""SMILES: syntax = RDKit parses and sanitizes; semantic = canonical molecular equivalence with the gold."""
import re
from pathlib import Path

from dslbench.toolchains import Toolchain

RUNNER = Path(__file__).with_name("run_smiles.py")
MATCHES = {"isomeric": "canonical isomeric SMILES", "flat": "canonical SMILES without stereo",
           "inchikey": "standard InChIKey"}


class Validator(Toolchain):
    SYNTAX_FAIL = "parse_error"      # RDKit parses
    SEMANTIC_FAIL = "wrong_output"  # canonical molecule equivalence

    PACKAGES = {"rdkit": "rdkit"}
    INSTALL_HINT = "PyPI package rdkit"

    def describe(self, versions):
        return f"RDKit {versions['rdkit']}"

    def _describe(self, work: Path, files: list[str]):
        result, report = self.run_runner([RUNNER], ["report.json", *files], work)
        # RDKit stamps its messages with the wall-clock time; drop it so logs are reproducible.
        result.stderr = re.sub(r"\[\d\d:\d\d:\d\d\] ", "", result.stderr)
        return result, report

    def syntax(self, program, task, work):
        result, report = self._describe(work, [self.file_name])
        if report is None:
            return self.verdict("error", f"RDKit runner failed (exit {result.returncode})", result)
        entry = report[self.file_name]
        if not entry["parsed"]:
            first = entry["error"].splitlines()[0] if entry["error"] else "unparseable"
            return self.verdict("fail", f"RDKit rejects '{entry['token'][:80]}': {first[:250]}", result)
        return self.verdict("pass", f"parsed: {entry['atoms']} heavy atoms", result)

    def semantic(self, program, task, work):
        (work / "gold.smi").write_text(task.gold, encoding="utf-8")
        result, report = self._describe(work, [self.file_name, "gold.smi"])
        if report is None or not report["gold.smi"]["parsed"]:
            return self.verdict("error", "the gold SMILES could not be canonicalized", result, reason="gold_broken")
        match = task.oracle.get("match", "isomeric")
        got, want = report[self.file_name][match], report["gold.smi"][match]
        if got != want:
            # the gold's canonical form is the answer itself: only in `expected`
            return self.verdict("fail", f"{MATCHES[match]} {got} differs from the gold's", result,
                                expected=f"{MATCHES[match]} {want}")
        return self.verdict("pass", f"same molecule ({MATCHES[match]} agree)", result)

    # --- upstream -------------------------------------------------------------------------------
    def import_upstream(self, source: Path):
        """ChEBI-20 as published in blender-nlp/MolT5 (ChEBI-20_data/*.txt). See chebi20.py."""
        from . import chebi20
        return chebi20.load(Path(source))
