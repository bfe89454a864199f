"""Inventory report: a small, ordinary Python program (reference sample of Python notation)."""
import csv
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Item:
    name: str
    price: float
    quantity: int = 0
    tags: list[str] = field(default_factory=list)

    def total(self) -> float:
        return self.price * self.quantity


def load_items(path: Path) -> list[Item]:
    items = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            tags = [t.strip() for t in row.get("tags", "").split(";") if t.strip()]
            items.append(Item(row["name"], float(row["price"]), int(row["quantity"]), tags))
    return items


def summarize(items: list[Item]) -> dict:
    by_tag = defaultdict(float)
    for item in items:
        for tag in item.tags or ["untagged"]:
            by_tag[tag] += item.total()
    best = max(items, key=lambda i: i.total(), default=None)
    return {
        "count": len(items),
        "value": round(sum(i.total() for i in items), 2),
        "by_tag": dict(sorted(by_tag.items())),
        "best": best.name if best else None,
    }


class Report:
    def __init__(self, title, items):
        self.title = title
        self.items = items

    def lines(self):
        yield self.title
        yield "=" * len(self.title)
        for i, item in enumerate(sorted(self.items, key=lambda x: x.name), start=1):
            yield f"{i:3d}. {item.name:<20} {item.quantity:>5} x {item.price:8.2f}"

    def __str__(self):
        return "\n".join(self.lines())


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(description="Summarize an inventory file")
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    items = load_items(args.path)
    if args.json:
        print(json.dumps(summarize(items), indent=2))
    else:
        print(Report("Inventory", items))
    return 0 if items else 1


if __name__ == "__main__":
    raise SystemExit(main())
