"""The KG shipped inside the package, so ``tot-mcp`` works with no network and no files.

MetaQA's movie KB (CC BY 3.0, modified: deduplicated and reordered) — see ``data/NOTICE.md``.
"""

from __future__ import annotations

from importlib.resources import as_file, files

from .backends import Backend, NoOptions
from .base import Limits
from .memory import MemoryKG
from .triples_file import load_triples_file

DEFAULT_KG_NAME = "movies"
DESCRIPTION = (
    "MetaQA movie KB (CC BY 3.0, Zhang et al. 2018; modified: deduplicated). Movies with "
    "directed_by, written_by, starred_actors, release_year, in_language, has_genre, has_tags, "
    "has_imdb_rating, has_imdb_votes. Relations run movie→attribute: walk them backward to go from "
    "a person to their films."
)


def load_embedded(name: str = DEFAULT_KG_NAME, limits: Limits | None = None) -> MemoryKG:
    with as_file(files("tot_mcp.kg_adapters") / "data" / "metaqa_kb.txt.gz") as path:
        index = load_triples_file(path)
    return MemoryKG(name, index, description=DESCRIPTION, limits=limits)


BACKEND = Backend(
    kind="embedded",
    summary="the shipped movie KG (MetaQA: 43k entities, 9 relations)",
    target="none",
    options=NoOptions,
    open=lambda name, target, limits, options: load_embedded(name, limits),
)
