"""What a stage notebook shows and keeps: Markdown text on its page and result tables beside the run.

Every notebook uses these two, so a page says things and saves tables the same way everywhere.
"""
from __future__ import annotations

from pathlib import Path


def say(text: str) -> None:
    """Show Markdown on the notebook's page (and in the book built from it)."""
    from IPython.display import Markdown, display
    display(Markdown(text))


def table_saver(run_dir, prefix: str):
    """save(df, name): keep a result table as <run>/tables/<prefix>_<name>.csv.

    A run opened read-only (a published reference run) still renders its pages: the table is then
    not saved and the page says why, instead of failing.
    """
    tables = Path(run_dir) / "tables"

    def save(df, name: str) -> None:
        try:
            tables.mkdir(parents=True, exist_ok=True)
            df.to_csv(tables / f"{prefix}_{name}.csv", index=False)
        except OSError as e:
            print(f"(not saved: {e})")
    return save
