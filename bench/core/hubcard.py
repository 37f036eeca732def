"""What the Hub reads from a dataset folder's README.md: its YAML front matter (licence, tags, and the
``configs`` that tell ``datasets.load_dataset(DIR)`` which files make which table), shared by the
cards ``bench labels`` and ``bench export`` write."""
from __future__ import annotations

import json
from typing import Iterable

# Licence identifiers the Hub knows, by how a DatasetSpec's licence text starts (case-insensitive).
_HUB_LICENSES = (("cc-by-nc-4.0", "cc-by-nc-4.0"), ("cc-by-4.0", "cc-by-4.0"), ("mit", "mit"),
                 ("apache-2.0", "apache-2.0"))


def hub_license(texts: Iterable[str]) -> str:
    """One Hub licence identifier for data that carries every licence in ``texts`` (DatasetSpec.license):
    their common identifier when they all start with the same known one, else ``other`` (the card
    then lists each dataset's own licence, which is what binds)."""
    found = set()
    for text in texts:
        lowered = text.strip().lower()
        found.add(next((hub for prefix, hub in _HUB_LICENSES if lowered.startswith(prefix)), "other"))
    return found.pop() if len(found) == 1 else "other"


def front_matter(license: str, pretty_name: str, tags: list[str], configs: list[tuple[str, str, bool]]) -> str:
    """The card's YAML header. ``configs``: (config name, data file glob in the folder, whether it is
    the default). Strings are written as JSON strings, which YAML reads as they are."""
    lines = ["---", f"license: {license}", f"pretty_name: {json.dumps(pretty_name)}", "tags:",
             *(f"- {json.dumps(tag)}" for tag in tags), "configs:"]
    for name, path, default in configs:
        lines += [f"- config_name: {json.dumps(name)}", *(["  default: true"] if default else []),
                  "  data_files:", "  - split: train", f"    path: {json.dumps(path)}"]
    return "\n".join([*lines, "---", ""])
