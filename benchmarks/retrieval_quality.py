"""Retrieval quality on the labelled queries of each deep-study DSL (data/rag/queries/<dsl>.yaml).

    .venv/bin/python benchmarks/retrieval_quality.py [--dsl ufl ...] [--mode bm25 dense hybrid]

Prints recall@k (share of queries with a relevant chunk in the top k), corpus size and build time.
Printed, not asserted: tests/test_interventions.py checks the numbers are well-formed.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

import pandas as pd  # noqa: E402

from dslbench import retrieval as R  # noqa: E402
from dslbench import toolchains  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dsl", nargs="*", default=None)
    ap.add_argument("--mode", nargs="*", default=["bm25", "dense", "hybrid"])
    a = ap.parse_args(argv)
    found = toolchains.discover()
    dsls = a.dsl or [d for d in R.DEEP_DSLS if d in found]
    pd.set_option("display.width", 200)
    print(R.quality(dsls, a.mode).to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
