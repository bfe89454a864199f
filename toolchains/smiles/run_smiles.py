"""Runs inside the sandbox: parse SMILES strings with RDKit and report canonical forms as JSON.

usage: python run_smiles.py OUT.json FILE [FILE ...]
"""
import json
import sys

import io
import logging
import re

from rdkit import Chem, rdBase
from rdkit.Chem import inchi

# Route RDKit's parse diagnostics into a buffer (without timestamps) so verdicts can quote them.
LOG = io.StringIO()
rdBase.LogToPythonLogger()
_handler = logging.StreamHandler(LOG)
_handler.setFormatter(logging.Formatter("%(message)s"))
logging.getLogger("rdkit").addHandler(_handler)
logging.getLogger("rdkit").propagate = False


def describe(text: str) -> dict:
    token = text.strip().split()[0] if text.strip() else ""
    LOG.seek(0)
    LOG.truncate()
    mol = Chem.MolFromSmiles(token) if token else None
    if mol is None:
        error = re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", LOG.getvalue().strip(), flags=re.M)
        return {"parsed": False, "token": token, "error": error or "empty input"}
    return {"parsed": True, "token": token,
            "isomeric": Chem.MolToSmiles(mol, isomericSmiles=True),
            "flat": Chem.MolToSmiles(mol, isomericSmiles=False),
            "inchikey": inchi.MolToInchiKey(mol) or "",
            "atoms": mol.GetNumAtoms()}


def main():
    out_path, files = sys.argv[1], sys.argv[2:]
    report = {f: describe(open(f, encoding="utf-8").read()) for f in files}
    with open(out_path, "w") as f:
        json.dump(report, f)


main()
