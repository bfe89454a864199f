"""Import ChEBI-20 (Text2Mol / MolT5 text-to-molecule) as its authors publish it.

Layout (github blender-nlp/MolT5): ChEBI-20_data/{train,validation,test}.txt, each a tab-separated
file with the header `CID<TAB>SMILES<TAB>description`, read by the upstream with csv.QUOTE_NONE (a
quote in a description is a plain character). Quirk kept in the fixture: many SMILES carry a doubled
backslash (`C\\\\4`, `/C=C\\\\O`), an escaping artefact RDKit reads as one `\\`; the gold is written
with a single one once that is checked to be the same molecule.

A task's instruction is the upstream description (the benchmark's input), its gold the SMILES, its
oracle equivalence with the gold by standard InChIKey, the upstream's own exact-match rule
(evaluation/mol_translation_metrics.py compares Chem.MolToInchi). A gold RDKit gives no InChI for is
compared by canonical isomeric SMILES instead (an empty key would equal any other empty key). A few
semantic mutants (stereo dropped, terminal atom dropped, bond order raised, element swapped) are
kept when their InChIKey differs from the gold's, computed exactly as run_smiles.py does.
"""
from __future__ import annotations

import sys
from pathlib import Path

from dslbench.upstream import Imported, NotThisBenchmark, Skip, convert_each

BENCHMARK = "ChEBI-20 (Text2Mol / MolT5)"
# ChEBI annotations are CC BY 4.0; the MolT5 repository that publishes the split is BSD-3-Clause.
LICENCE = "CC-BY-4.0"
DATA = "ChEBI-20_data"
SPLITS = ("train", "validation", "test")
HEADER = ["CID", "SMILES", "description"]
# our schema has test and dev; the exact upstream split stays in provenance.upstream_split
OUR_SPLIT = {"train": "dev", "validation": "dev", "test": "test"}
MUTANTS_KEPT = 3
SWAPS = {"O": "S", "S": "O", "Cl": "Br", "Br": "Cl", "F": "Cl", "I": "Br"}


def find_data(source: Path) -> Path:
    """The folder holding the split files: the repository root or ChEBI-20_data/ itself."""
    source = Path(source)
    for folder in (source / DATA, source):
        if folder.is_dir() and any((folder / f"{s}.txt").is_file() for s in SPLITS):
            return folder
    raise NotThisBenchmark(f"{source}: no {DATA}/ with train.txt, validation.txt or test.txt "
                           "(give the MolT5 clone or its ChEBI-20_data folder)")


def read_split(path: Path) -> list[tuple[str, str]]:
    """(record id, raw line) per data line; the header must be the upstream's."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0].rstrip("\r").split("\t") != HEADER:
        raise NotThisBenchmark(f"{path}: first line is not the ChEBI-20 header CID<TAB>SMILES<TAB>description")
    split = path.stem
    return [(f"{split}:{n}", line.rstrip("\r")) for n, line in enumerate(lines[1:], start=2) if line.strip()]


def constructs(mol) -> list[str]:
    from rdkit import Chem
    found = []
    ring_info = mol.GetRingInfo()
    if any(a.GetIsAromatic() for a in mol.GetAtoms()):
        found.append("aromatic ring")
    elif ring_info.NumRings():
        found.append("ring")
    if ring_info.NumRings() >= 3:
        found.append("polycycle")
    if Chem.FindMolChiralCenters(mol, includeUnassigned=False, useLegacyImplementation=False):
        found.append("tetrahedral stereo")
    if any(b.GetStereo() != Chem.BondStereo.STEREONONE for b in mol.GetBonds()):
        found.append("double-bond stereo")
    if any(a.GetFormalCharge() for a in mol.GetAtoms()):
        found.append("formal charge")
    if len(Chem.GetMolFrags(mol)) > 1:
        found.append("disconnected components")
    if any(a.GetDegree() > 2 for a in mol.GetAtoms()):
        found.append("branch")
    return found or ["chain"]


def difficulty(mol) -> str:
    atoms = mol.GetNumAtoms()
    return "easy" if atoms <= 15 else "medium" if atoms <= 35 else "hard"


def radicals(mol) -> int:
    return sum(a.GetNumRadicalElectrons() for a in mol.GetAtoms())


def mutant_candidates(mol) -> list[tuple[str, object]]:
    """(note, mutated RDKit mol) edits of the gold, cheapest kinds first; unsanitizable ones dropped."""
    from rdkit import Chem
    out = []
    flat = Chem.MolFromSmiles(Chem.MolToSmiles(mol, isomericSmiles=False))
    if flat is not None and Chem.MolToSmiles(flat) != Chem.MolToSmiles(mol):
        out.append(("stereochemistry dropped", flat))
    edits = []
    for atom in mol.GetAtoms():
        if atom.GetDegree() == 1 and mol.GetNumAtoms() > 2:
            edits.append((f"terminal {atom.GetSymbol()} (atom {atom.GetIdx()}) dropped", "drop", atom.GetIdx()))
            break
    for bond in mol.GetBonds():
        a, b = bond.GetBeginAtom(), bond.GetEndAtom()
        if (bond.GetBondType() == Chem.BondType.SINGLE and not bond.IsInRing() and not bond.GetIsAromatic()
                and a.GetSymbol() == b.GetSymbol() == "C" and a.GetTotalNumHs() and b.GetTotalNumHs()):
            edits.append((f"C-C bond {bond.GetIdx()} made double", "double", bond.GetIdx()))
            break
    for atom in mol.GetAtoms():
        if atom.GetSymbol() in SWAPS and not atom.GetIsAromatic() and not atom.GetFormalCharge():
            edits.append((f"{atom.GetSymbol()} (atom {atom.GetIdx()}) swapped for {SWAPS[atom.GetSymbol()]}",
                          "swap", atom.GetIdx()))
            break
    for note, kind, idx in edits:
        rw = Chem.RWMol(mol)
        if kind == "drop":
            # the neighbour takes hydrogens in its place (a bracket atom would become a radical)
            neighbour = rw.GetAtomWithIdx(idx).GetNeighbors()[0]
            neighbour.SetNoImplicit(False)
            neighbour.SetNumExplicitHs(0)
            neighbour.SetChiralTag(Chem.ChiralType.CHI_UNSPECIFIED)
            rw.RemoveAtom(idx)
        elif kind == "double":
            rw.GetBondWithIdx(idx).SetBondType(Chem.BondType.DOUBLE)
        else:
            atom = rw.GetAtomWithIdx(idx)
            atom.SetAtomicNum(Chem.GetPeriodicTable().GetAtomicNumber(SWAPS[atom.GetSymbol()]))
        try:
            made = rw.GetMol()
            Chem.SanitizeMol(made)
        except Exception:  # noqa: BLE001 - RDKit raises several unrelated types for a bad edit
            continue
        if radicals(made) > radicals(mol):  # an edit no chemist would write
            continue
        out.append((note, made))
    return out


def load(source: Path, progress: bool = True) -> Imported:
    from rdkit import Chem, RDLogger
    from rdkit.Chem import inchi
    RDLogger.DisableLog("rdApp.*")  # parse failures are reported as skips, not as log noise

    source = Path(source)
    if source.is_file() and source.stem in SPLITS:  # one downloaded split file
        folder, present = source.parent, [source.stem]
    else:
        folder = find_data(source)
        present = [s for s in SPLITS if (folder / f"{s}.txt").is_file()]
    if not source.is_file() and len(present) < len(SPLITS):
        print(f"{folder}: no {', '.join(s + '.txt' for s in SPLITS if s not in present)}; "
              f"importing {', '.join(present)} only", file=sys.stderr)
    records = [r for s in present for r in read_split(folder / f"{s}.txt")]

    def key(mol) -> str:
        return inchi.MolToInchiKey(mol) or ""  # what run_smiles.py reports as `inchikey`

    def convert(record_id: str, line: str):
        split = record_id.split(":")[0]
        fields = line.split("\t")
        if len(fields) != 3:
            return Skip(record_id, "malformed_record", f"{len(fields)} tab-separated fields, expected 3")
        cid, smiles, description = (f.strip() for f in fields)
        if not cid.isdigit():
            return Skip(record_id, "malformed_record", f"CID {cid[:40]!r} is not a PubChem CID")
        where = f"{split}:CID {cid}"
        if not smiles:
            return Skip(where, "no_solution", "empty SMILES")
        if not description:
            return Skip(where, "no_description", "empty description")
        mol = Chem.MolFromSmiles(smiles)
        if mol is None:
            return Skip(where, "rdkit_parse_error", f"RDKit cannot parse {smiles[:80]}")
        gold = smiles.replace("\\\\", "\\")
        if gold != smiles:
            single = Chem.MolFromSmiles(gold)
            if single is None or Chem.MolToSmiles(single) != Chem.MolToSmiles(mol):
                return Skip(where, "ambiguous_backslash", "the SMILES with `\\\\` read as `\\` is another molecule")
        gold_key = key(mol)
        match = "inchikey" if gold_key else "isomeric"
        canon = Chem.MolToSmiles(mol)

        def same(other) -> bool:
            return key(other) == gold_key if match == "inchikey" else Chem.MolToSmiles(other) == canon

        mutants = []
        for note, m in mutant_candidates(mol):
            if not same(m) and len(mutants) < MUTANTS_KEPT:
                mutants.append({"level": "semantic", "program": Chem.MolToSmiles(m) + "\n", "note": note})
        task = {
            "id": f"chebi20-{cid}", "dsl": "smiles", "domain": "Cheminformatics",
            "title": f"ChEBI-20 CID {cid}", "difficulty": difficulty(mol), "constructs": constructs(mol),
            "failure_modes": ["knowledge"], "instruction": description + "\n", "gold": gold + "\n",
            "oracle": {"match": match},
            "provenance": {"source": "upstream", "benchmark": BENCHMARK, "upstream_id": cid,
                           "upstream_split": split, "licence": LICENCE},
            "split": OUR_SPLIT[split], "mutants": mutants,
        }
        if canon != gold:  # another spelling of the same molecule must pass too
            task["equivalents"] = [{"program": canon + "\n", "note": "RDKit canonical SMILES of the gold"}]
        return task

    return convert_each(records, convert, progress=progress, total=len(records))
