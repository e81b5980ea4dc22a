"""Linked KGs in the wild: the MetaQA KB split into three KGs on three backends, joined by an
identifier and by labels, against the same dev questions over the single KB (issue #21 item 6).

Why. linked-MetaQA (``bench.linked_table``) splits the KB in two local files that share labels. Real
linked KGs differ more: a catalog behind a SPARQL endpoint whose titles read ``Title (Year)`` and
that shares only an IMDb-style identifier with a film KG, and a cast list in an on-disk store that
shares labels with the film KG but nothing at all with the catalog. A question such as "what genres
are the films [X] starred in" must then go cast → films (label) → catalog (identifier). This
benchmark measures what that costs against the one KB.

How. From ``../shared/benchmarks/metaqa/kb.txt`` (``head|relation|tail``; every head is a film) it
writes, into a work directory outside the repository (default ``$TOT_MCP_CACHE_DIR`` or
``~/.cache/tot-mcp`` + ``bench/linked3``; ``--work DIR``), once per KB version:

* ``films.txt`` (triples file, in-memory backend): ``directed_by``, ``written_by``, and one
  ``imdb_id`` per film, ``tt`` + 7 digits, a fixed permutation of the film's order of first
  appearance in kb.txt; labels as in kb.txt;
* ``catalog.ttl`` (Turtle, loaded with ``oxigraph load`` and served by ``oxigraph serve-read-only``
  on loopback): every film on a fresh IRI labelled ``Title (Year)`` (the first year in kb.txt;
  ``Title`` when it has none), its ``cat:imdb`` literal (label "IMDb ID") and every other relation
  of the KB (release year, language, genre, tags, IMDb rating, IMDb votes); languages, genres and
  tags are labelled nodes, the rest literals; every predicate has an ``rdfs:label``;
* ``cast.txt`` (``starred_actors``, labels as in kb.txt) → ``cast.store`` by ``tot-mcp load cast.txt
  --into``;
* ``linked3.toml`` (rewritten per run, since the endpoint's port changes): the three KGs and two
  ``[[link]]`` rules, catalog↔films ``identifier`` (``imdb`` in the catalog, ``imdb_id`` in films)
  and films↔cast ``label``; no rule between cast and catalog. ``tot-mcp --config linked3.toml
  --check`` tries every rule before the run.

Questions: only MetaQA **dev** samples (``{2,3}-hop/qa_dev_sample.txt`` and their ``_qtype.txt``),
never a test split. A question is kept when the relations of its qtype touch at least two of the
three KGs (director/writer: films; actor: cast; year/language/genre/tags/rating/votes: catalog;
``movie`` is the node the links join on). Slices, disjoint:

* ``films→catalog``: films and catalog, no cast (e.g. ``director_to_movie_to_year``): the identifier
  link;
* ``cast→films→catalog``: cast and catalog (e.g. ``actor_to_movie_to_genre``): both links,
  transitively, since no rule joins cast and catalog;
* ``cast↔films``: cast and films, no catalog (e.g. ``actor_to_movie_to_director``): the label link.

Each slice's questions are written in MetaQA format to ``WORK/questions/`` (with their qtypes) and
answered in this one process by the method ``tot-search --method`` runs (offline policy by default),
twice per question, alternating which goes first: over the single KB (``--kg movies=kb.txt``) and
over the three linked KGs exactly as ``tot-search --config WORK/linked3.toml --kg films=… --kg
catalog=sparql:URL --kg cast=store:DIR`` builds them
(``strategies.benchmarks.runner.run_questions``, so errors and missing topics are recorded as
tot-search records them). One JSONL per hop × slice × setting lands in ``WORK/runs/<time>/``. The
KGs and the embedder are loaded and one question is answered per setting before timing. The endpoint
is started here and stopped at the end.

    # 2-hop and 3-hop, first 100 of each slice
    python -m bench.linked3
    python -m bench.linked3 --hops 3 --slices cast→films→catalog --limit 20 --skip 20
    # just the data, the stores, the config and --check
    python -m bench.linked3 --build-only
    # a finished run's table again
    python -m bench.linked3 --table ~/.cache/tot-mcp/bench/linked3/runs/TIME
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO.parent / "shared" / "benchmarks"
METAQA = BENCHMARKS / "metaqa"
KB = METAQA / "kb.txt"
DATA_VERSION = 1  # bump when the generated files change shape

FILM_RELATIONS = ("directed_by", "written_by")
CAST_RELATIONS = ("starred_actors",)
CAT = "http://example.org/catalog/"
#: kb.txt relation → (catalog predicate, its label, node kind of the object: None = literal)
CATALOG_RELATIONS: dict[str, tuple[str, str, str | None]] = {
    "release_year": ("releaseYear", "release year", None),
    "in_language": ("language", "language", "language"),
    "has_genre": ("genre", "genre", "genre"),
    "has_tags": ("tag", "tag", "tag"),
    "has_imdb_rating": ("imdbRating", "IMDb rating", None),
    "has_imdb_votes": ("imdbVotes", "IMDb votes", None),
}
IMDB_PREDICATE, IMDB_LABEL = "imdb", "IMDb ID"
IMDB_RELATION = "imdb_id"  # in films.txt

#: a MetaQA qtype part → the KG holding that relation (``movie`` is the node the links join on)
QTYPE_KG = {
    "director": "films",
    "writer": "films",
    "actor": "cast",
    "year": "catalog",
    "language": "catalog",
    "genre": "catalog",
    "tags": "catalog",
    "tag": "catalog",
    "imdbrating": "catalog",
    "imdbvotes": "catalog",
    "rating": "catalog",
    "votes": "catalog",
}
SLICES = ("films→catalog", "cast→films→catalog", "cast↔films")
HOPS = (2, 3)


# -- the data --------------------------------------------------------------------------------------
def imdb_id(order: int) -> str:
    """The film's IMDb-style ID from its 0-based order of first appearance: ``tt`` + 7 digits, a
    fixed permutation of 0..9,999,999 (7,919 is prime and coprime to 10⁷), so distinct films get
    distinct IDs."""
    return f"tt{(order * 7_919 + 104_729) % 10_000_000:07d}"


def catalog_title(title: str, years: list[str]) -> str:
    return f"{title} ({years[0]})" if years else title


def _ttl_string(text: str) -> str:
    out = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{out}"'


def read_kb(path: Path) -> Iterator[tuple[str, str, str]]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split("|")
            if len(parts) != 3:
                raise ValueError(f"{path}:{lineno}: expected head|relation|tail, got {line!r}")
            yield parts[0], parts[1], parts[2]


@dataclass
class BuildReport:
    films: int = 0
    film_lines: int = 0
    catalog_triples: int = 0
    cast_lines: int = 0
    catalog_nodes: dict[str, int] = field(default_factory=dict)
    without_year: int = 0


def write_data(kb: Path, out: Path) -> BuildReport:
    """films.txt, catalog.ttl and cast.txt from ``kb`` into ``out`` (nothing else: no store, no
    config)."""
    out.mkdir(parents=True, exist_ok=True)
    triples = list(read_kb(kb))
    known = {r for _, r, _ in triples}
    unknown = known - set(FILM_RELATIONS) - set(CAST_RELATIONS) - set(CATALOG_RELATIONS)
    if unknown:
        raise ValueError(
            f"{kb}: relations this benchmark does not place in a KG: {', '.join(sorted(unknown))}"
        )
    films: dict[str, int] = {}
    years: dict[str, list[str]] = {}
    for h, r, t in triples:
        films.setdefault(h, len(films))
        if r == "release_year":
            years.setdefault(h, []).append(t)
    rep = BuildReport(films=len(films))

    with open(out / "films.txt", "w", encoding="utf-8") as fh:
        for h, r, t in triples:
            if r in FILM_RELATIONS:
                fh.write(f"{h}|{r}|{t}\n")
                rep.film_lines += 1
        for title, order in films.items():
            fh.write(f"{title}|{IMDB_RELATION}|{imdb_id(order)}\n")
            rep.film_lines += 1

    with open(out / "cast.txt", "w", encoding="utf-8") as fh:
        for h, r, t in triples:
            if r in CAST_RELATIONS:
                fh.write(f"{h}|{r}|{t}\n")
                rep.cast_lines += 1

    nodes: dict[
        tuple[str, str], str
    ] = {}  # (kind, label) → local name, numbered per kind in order of appearance
    # (films by their kb.txt title, so two films never merge even if one's "Title (Year)" is
    # another's title)
    counts: dict[str, int] = {}

    def node(kind: str, label: str, lines: list[str], key: tuple[str, str] | None = None) -> str:
        key = key or (kind, label)
        if key not in nodes:
            counts[kind] = counts.get(kind, 0) + 1
            nodes[key] = f"cat:{kind}{counts[kind]}"
            lines.append(f"{nodes[key]} rdfs:label {_ttl_string(label)} .")
        return nodes[key]

    lines = [
        f"@prefix cat: <{CAT}> .",
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
        "",
    ]
    lines.append(f"cat:{IMDB_PREDICATE} rdfs:label {_ttl_string(IMDB_LABEL)} .")
    for pred, label, _ in CATALOG_RELATIONS.values():
        lines.append(f"cat:{pred} rdfs:label {_ttl_string(label)} .")
    lines.append("")
    for title, order in films.items():  # every film is in the catalog, with its identifier
        iri = node("film", catalog_title(title, years.get(title, [])), lines, key=("title", title))
        lines.append(f"{iri} cat:{IMDB_PREDICATE} {_ttl_string(imdb_id(order))} .")
        rep.without_year += title not in years
    for h, r, t in triples:
        if r not in CATALOG_RELATIONS:
            continue
        pred, _, kind = CATALOG_RELATIONS[r]
        obj = node(kind, t, lines) if kind else _ttl_string(t)
        lines.append(f"{nodes[('title', h)]} cat:{pred} {obj} .")
        rep.catalog_triples += 1
    rep.catalog_nodes = dict(counts)
    (out / "catalog.ttl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rep


def _tool_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


TOT_MCP = [
    sys.executable,
    "-m",
    "tot_mcp.server.cli",
]  # `tot-mcp` from this checkout, whatever is on PATH


def load_cast_store(cast_txt: Path, store: Path) -> None:
    """``tot-mcp load cast.txt --into STORE`` (with its label index beside the store)."""
    for stale in (
        store,
        store.with_name(store.name + ".labels.sqlite"),
        store.with_name(store.name + ".load-state.json"),
    ):
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    subprocess.run(
        [*TOT_MCP, "load", str(cast_txt), "--into", str(store), "--quiet"],
        check=True,
        cwd=REPO,
        env=_tool_env(),
        stdin=subprocess.DEVNULL,
    )


def oxigraph_exe() -> str:
    exe = shutil.which("oxigraph")
    if exe is None:
        raise RuntimeError("the oxigraph binary is not installed (pip install oxigraph)")
    return exe


def load_catalog_store(catalog_ttl: Path, store: Path) -> None:
    """``oxigraph load`` the catalog into the store the endpoint serves read-only."""
    if store.exists():
        shutil.rmtree(store)
    subprocess.run(
        [oxigraph_exe(), "load", "--location", str(store), "--file", str(catalog_ttl)],
        check=True,
        capture_output=True,
    )


@dataclass
class Data:
    work: Path

    @property
    def films(self) -> Path:
        return self.work / "films.txt"

    @property
    def catalog(self) -> Path:
        return self.work / "catalog.ttl"

    @property
    def cast(self) -> Path:
        return self.work / "cast.txt"

    @property
    def cast_store(self) -> Path:
        return self.work / "cast.store"

    @property
    def catalog_store(self) -> Path:
        return self.work / "catalog.oxstore"

    @property
    def config(self) -> Path:
        return self.work / "linked3.toml"

    @property
    def manifest(self) -> Path:
        return self.work / "manifest.json"


def build(kb: Path, work: Path, *, force: bool = False, stores: bool = True, log=print) -> Data:
    """The data in ``work``, built unless a manifest says it was built from this very kb (path,
    size, mtime)."""
    data = Data(work)
    stat = kb.stat()
    want = {
        "version": DATA_VERSION,
        "kb": str(kb.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "stores": stores,
    }
    if not force and data.manifest.is_file():
        try:
            have = json.loads(data.manifest.read_text(encoding="utf-8"))
        except ValueError:
            have = {}
        if (
            {k: have.get(k) for k in want} == want
            and all(p.exists() for p in (data.films, data.catalog, data.cast))
            and (not stores or (data.cast_store.is_dir() and data.catalog_store.is_dir()))
        ):
            log(f"data: reusing {work} (built {have.get('built')})")
            return data
    work.mkdir(parents=True, exist_ok=True)
    data.manifest.unlink(missing_ok=True)
    started = time.perf_counter()
    rep = write_data(kb, work)
    log(
        f"data: {rep.films:,} films; films.txt {rep.film_lines:,} lines; catalog.ttl "
        f"{rep.catalog_triples:,} relation triples, nodes {rep.catalog_nodes} "
        f"({rep.without_year:,} films without a year); cast.txt {rep.cast_lines:,} lines"
    )
    if stores:
        load_cast_store(data.cast, data.cast_store)
        load_catalog_store(data.catalog, data.catalog_store)
    log(f"data: built in {time.perf_counter() - started:.1f} s into {work}")
    data.manifest.write_text(
        json.dumps(
            {**want, "built": time.strftime("%Y-%m-%d %H:%M:%S"), "report": rep.__dict__}, indent=1
        ),
        encoding="utf-8",
    )
    return data


def write_config(data: Data, catalog_url: str) -> Path:
    """``linked3.toml``: the three KGs (absolute paths) and the two link rules."""

    def q(s: str) -> str:
        return json.dumps(s)  # a TOML basic string is a JSON string for these characters

    data.config.write_text(
        "# written by bench/linked3.py for one run (the catalog endpoint's port changes between "
        "runs)\n"
        f'[kg.films]\nspec = {q(str(data.films))}\nbackend = "memory"\n\n'
        f"[kg.catalog]\nspec = {q('sparql:' + catalog_url)}\n\n"
        f"[kg.cast]\nspec = {q('store:' + str(data.cast_store))}\n\n"
        '[[link]]                 # the same IMDb ID on both sides; titles differ ("Title '
        '(Year)")\nfrom_kg = "catalog"\nto_kg = "films"\nkind = "identifier"\n'
        f'relation = "{IMDB_PREDICATE}"\nto_relation = "{IMDB_RELATION}"\n\n'
        "[[link]]                 # films and actors by exact label; no rule between cast and "
        "catalog\n"
        'from_kg = "films"\nto_kg = "cast"\nkind = "label"\n',
        encoding="utf-8",
    )
    return data.config


# -- the endpoint ----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({})
    )  # loopback: never through a proxy
    try:
        with opener.open(
            f"{url}?{urllib.parse.urlencode({'query': 'ASK { ?s ?p ?o }'})}", timeout=1
        ) as r:
            return r.status == 200
    except OSError:
        return False


class Endpoint:
    """``oxigraph serve-read-only`` over a loaded store on 127.0.0.1, stopped on exit (a context
    manager)."""

    def __init__(self, store: Path, port: int | None = None, timeout: float = 30.0) -> None:
        self.store, self.port, self.timeout = store, port or free_port(), timeout
        self.url = f"http://127.0.0.1:{self.port}/query"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Endpoint:
        self.proc = subprocess.Popen(
            [
                oxigraph_exe(),
                "serve-read-only",
                "--location",
                str(self.store),
                "--bind",
                f"127.0.0.1:{self.port}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + self.timeout
        while not _answers(self.url):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"oxigraph did not start on {self.url}: {self.stderr[:500]}")
            time.sleep(0.05)
        return self

    stderr = ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        err = proc.stderr.read() if proc.stderr else b""
        if proc.stderr:
            proc.stderr.close()
        self.stderr = err.decode(errors="replace")

    def __exit__(self, *exc) -> None:
        self.stop()


def check(config: Path, log=print) -> bool:
    """``tot-mcp --config CONFIG --check``: every KG opens and every link rule links its sample.
    Prints the rule lines; True when it passed."""
    res = subprocess.run(
        [*TOT_MCP, "--config", str(config), "--check"],
        cwd=REPO,
        env=_tool_env(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    for line in res.stdout.splitlines():
        if line.startswith(("link ", "OK")) or "FAILED" in line or "failed" in line:
            log(f"check: {line}")
    if res.returncode != 0:
        log(f"check: tot-mcp --check exited {res.returncode}: {res.stderr.strip()[-2000:]}")
    return res.returncode == 0


# -- the questions ---------------------------------------------------------------------------------
def kgs_of(qtype: str) -> frozenset[str]:
    """The KGs whose relations the qtype's path uses (``movie`` is where they join, not a
    relation)."""
    parts = qtype.strip().split("_to_")
    unknown = [p for p in parts if p != "movie" and p not in QTYPE_KG]
    if unknown:
        raise ValueError(f"qtype {qtype!r}: no KG for {', '.join(unknown)}")
    return frozenset(QTYPE_KG[p] for p in parts if p != "movie")


def slice_of(qtype: str) -> str | None:
    kgs = kgs_of(qtype)
    if len(kgs) < 2:
        return None
    if "catalog" in kgs:
        return "cast→films→catalog" if "cast" in kgs else "films→catalog"
    return "cast↔films"


def dev_files(metaqa: Path, hops: int) -> tuple[Path, Path]:
    folder = metaqa / f"{hops}-hop"
    questions, qtypes = folder / "qa_dev_sample.txt", folder / "qa_dev_sample_qtype.txt"
    assert "dev" in questions.name and "test" not in str(questions.relative_to(metaqa)), questions
    return questions, qtypes


def select(metaqa: Path, hops: int) -> dict[str, list[tuple[str, str]]]:
    """Every dev-sample line whose qtype touches at least two KGs, by slice, in file order: (line,
    qtype)."""
    qfile, tfile = dev_files(metaqa, hops)
    lines = qfile.read_text(encoding="utf-8").splitlines()
    qtypes = tfile.read_text(encoding="utf-8").splitlines()
    if len(lines) != len(qtypes):
        raise ValueError(f"{qfile} has {len(lines)} lines but {tfile} {len(qtypes)}")
    out: dict[str, list[tuple[str, str]]] = {s: [] for s in SLICES}
    for line, qt in zip(lines, qtypes):
        s = slice_of(qt)
        if s is not None and line.strip():
            out[s].append((line, qt.strip()))
    return out


def slug(name: str) -> str:
    """A slice's name in file names: ``cast→films→catalog`` → ``cast-films-catalog``."""
    return name.replace("→", "-").replace("↔", "-")


def slice_file_name(hops: int, name: str) -> str:
    return f"dev_{hops}hop_{slug(name)}.txt"


def write_slices(metaqa: Path, hops: int, folder: Path) -> dict[str, Path]:
    """Each slice of ``hops`` as a MetaQA question file (+ ``_qtype.txt``) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, items in select(metaqa, hops).items():
        path = folder / slice_file_name(hops, name)
        path.write_text("".join(f"{line}\n" for line, _ in items), encoding="utf-8")
        path.with_name(path.stem + "_qtype.txt").write_text(
            "".join(f"{qt}\n" for _, qt in items), encoding="utf-8"
        )
        paths[name] = path
    return paths


# -- the run ---------------------------------------------------------------------------------------
@dataclass
class Row:
    hops: int
    slice: str
    single: list = field(default_factory=list)  # RunRecord
    three: list = field(default_factory=list)

    def line(self) -> str:
        n = len(self.single)
        s_lat = statistics.median(r.latency_s for r in self.single) * 1000
        t_lat = statistics.median(r.latency_s for r in self.three) * 1000

        def hits(rs):
            return statistics.fmean(r.hits1 for r in rs)

        def errors(rs):
            return sum(1 for r in rs if r.error)

        def flags(rs):
            partial = sum(1 for r in rs if r.partial)
            return f"{partial} / {sum(1 for r in rs if r.status == 'below_tau')}"

        return (
            f"| {self.hops}-hop {self.slice} | {n} | {hits(self.single):.3f} | "
            f"{hits(self.three):.3f} | {s_lat:.0f} / {t_lat:.0f} ms | "
            f"{t_lat / s_lat if s_lat else float('nan'):.0f}× | {errors(self.single)} / "
            f"{errors(self.three)} | {flags(self.three)} | {flags(self.single)} |"
        )


HEADER = (
    "| slice | n | Hits@1 single KB | Hits@1 three KGs | median latency single / three | ratio | "
    "errors single / three | three-KG partial / below_tau | (single KB: partial / below_tau) |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def table_from(runs: Path) -> str:
    """The table again from a run's JSONL records (``WORK/runs/<time>``), without running
    anything."""
    from tot_mcp.strategies.benchmarks.runner import load_done

    lines = [HEADER]
    for hops in HOPS:
        for name in SLICES:
            single, three = (
                runs / f"{hops}hop-{slug(name)}-{key}.jsonl" for key in ("single", "three")
            )
            if single.is_file() and three.is_file():
                row = Row(hops, name, load_done(single), load_done(three))
                n = min(
                    len(row.single), len(row.three)
                )  # an interrupted run: the questions both answered
                row.single, row.three = row.single[:n], row.three[:n]
                if n:
                    lines.append(row.line())
    return "\n".join(lines)


async def run(args: argparse.Namespace, data: Data, url: str) -> list[Row]:
    from tot_mcp.strategies.settings import load_config
    from tot_mcp.kg_adapters.spec import make_spec
    from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions
    from tot_mcp.strategies.benchmarks.runner import run_questions
    from tot_mcp.strategies.embeddings import Embedder
    from tot_mcp.strategies.methods import MethodOptions, make_method
    from tot_mcp.strategies.system import build_system, freeze_loaded_objects

    started = time.perf_counter()
    embedder = Embedder()
    build = dict(embedder_factory=lambda: embedder, wait_for_builds=True)
    # films, catalog, cast: exactly as tot-mcp --config builds them (one composition root)
    three = build_system(config=load_config(data.config), **build)
    single = build_system([make_spec("movies", str(args.single))], **build)
    three_graph, members = three.graph, three.kgs
    settings = {
        "single": (list(single.kgs.values()), single.services),
        "three": (list(members.values()), three.services),
    }
    options = MethodOptions(llm=args.llm)
    methods = {
        k: make_method(args.method, options, services) for k, (_, services) in settings.items()
    }
    print(
        f"loaded the KGs and the embedder in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
        flush=True,
    )

    stamp = time.strftime("%Y%m%d-%H%M%S")
    runs = data.work / "runs" / stamp
    runs.mkdir(parents=True, exist_ok=True)
    qdir = data.work / "questions"
    plan: list[tuple[int, str, list]] = []
    for hops in args.hops:
        for name, path in write_slices(args.metaqa, hops, qdir).items():
            if name not in args.slices:
                continue
            qs = [q for q in read_questions(path, "metaqa") if not isinstance(q, BadLine)]
            plan.append((hops, name, qs[args.skip : args.skip + args.limit]))
    print(
        f"questions: {', '.join(f'{h}-hop {s} {len(qs)}' for h, s, qs in plan)}; files in {qdir}; "
        f"records in {runs}",
        file=sys.stderr,
        flush=True,
    )

    warm = next((qs[0] for _, _, qs in plan if qs), None)
    if (
        warm is not None
    ):  # the relevance index, the offline reasoner's KG statistics, first connections: untimed
        for key, (kgs, _) in settings.items():
            await run_questions([warm], methods[key], args.method, kgs)
    freeze_loaded_objects()  # as tot-search and tot-mcp do once loaded
    print(f"warmed up in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)

    print(
        f"method {args.method}, llm {args.llm}, {time.strftime('%Y-%m-%d')}; single KB "
        f"{args.single}; three KGs {data.config}"
    )
    print(HEADER, flush=True)
    rows = []
    for hops, name, qs in plan:
        row = Row(hops, name)
        stem = f"{hops}hop-{slug(name)}"
        for i, q in enumerate(qs):
            order = (
                ("single", "three") if i % 2 == 0 else ("three", "single")
            )  # alternate who goes first
            for key in order:
                kgs, _ = settings[key]
                (rec,) = await run_questions(
                    [q], methods[key], args.method, kgs, out=runs / f"{stem}-{key}.jsonl"
                )
                getattr(row, key).append(rec)
            if args.progress:
                print(f"  {stem} {i + 1}/{len(qs)}", file=sys.stderr, end="\r", flush=True)
        if qs:
            print(row.line(), flush=True)
            rows.append(row)
    st = three_graph.linker.stats()
    print(
        f"\nlink cache (three KGs): {st.lookups:,} lookups, hit rate {st.hit_rate:.3f}, "
        f"{st.entries:,} entries, {st.capped} capped; label links {st.label_links:,} made, "
        f"{st.refused:,} refused as another kind; total {time.perf_counter() - started:.0f} s"
    )
    for system in (single, three):
        await system.aclose()
    return rows


def tot_search_command(data: Data, url: str, question_file: Path) -> str:
    return (
        f"tot-search --config {data.config} --kg films={data.films} --kg catalog=sparql:{url} "
        f"--kg cast=store:{data.cast_store} --questions {question_file} --format metaqa --out "
        "three.jsonl"
    )


def main(argv: Iterable[str] | None = None) -> int:
    from tot_mcp.kg_adapters.environment import Environment

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--work",
        type=Path,
        default=None,
        help=(
            "where the data, stores, config and records go (default: <tot-mcp cache>/bench/linked3)"
        ),
    )
    ap.add_argument("--kb", type=Path, default=KB, help="the MetaQA KB (head|relation|tail)")
    ap.add_argument(
        "--metaqa", type=Path, default=METAQA, help="folder with {2,3}-hop/qa_dev_sample*.txt"
    )
    ap.add_argument(
        "--single", type=Path, default=None, help="the single-KB baseline file (default: --kb)"
    )
    ap.add_argument("--hops", type=int, nargs="+", choices=HOPS, default=list(HOPS))
    ap.add_argument("--slices", nargs="+", choices=SLICES, default=list(SLICES))
    ap.add_argument(
        "--limit", type=int, default=100, help="questions per slice (after --skip; default 100)"
    )
    ap.add_argument(
        "--skip", type=int, default=0, help="leave out the first N questions of each slice"
    )
    ap.add_argument("--method", default="tot")
    ap.add_argument(
        "--llm", default="offline", choices=["offline"], help="policy (offline only: no LLM)"
    )
    ap.add_argument(
        "--port", type=int, default=None, help="the catalog endpoint's port (default: a free one)"
    )
    ap.add_argument(
        "--rebuild", action="store_true", help="rebuild the data even if the manifest matches"
    )
    ap.add_argument(
        "--build-only", action="store_true", help="build the data and config, check them, and stop"
    )
    ap.add_argument("--no-check", action="store_true", help="skip tot-mcp --check before the run")
    ap.add_argument("--progress", action="store_true", help="a progress line on stderr")
    ap.add_argument(
        "--table",
        type=Path,
        metavar="RUNDIR",
        help="print the table of a finished run's records and stop",
    )
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.limit < 1 or args.skip < 0:
        ap.error("--limit must be ≥ 1 and --skip ≥ 0")
    if args.table is not None:
        print(table_from(args.table))
        return 0
    args.work = (
        (args.work or Environment.read().cache_dir / "bench" / "linked3").expanduser().resolve()
    )
    args.single = args.single or args.kb
    if args.work == REPO or REPO in args.work.parents:
        ap.error(f"--work {args.work} is inside the repository; benchmark data stays outside it")
    if not args.kb.is_file():
        print(
            f"bench.linked3: {args.kb} not found (the MetaQA KB sits in ../shared/benchmarks)",
            file=sys.stderr,
        )
        return 2

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        oxigraph_exe()
    except RuntimeError as e:
        log(f"bench.linked3: {e}")
        return 2
    data = build(args.kb, args.work, force=args.rebuild, log=log)
    with Endpoint(data.catalog_store, args.port) as endpoint:
        log(f"catalog endpoint: {endpoint.url} (oxigraph serve-read-only, pid {endpoint.proc.pid})")
        write_config(data, endpoint.url)
        if not args.no_check and not check(data.config, log):
            return 1
        if args.build_only:
            example = data.work / "questions" / slice_file_name(args.hops[0], args.slices[0])
            write_slices(args.metaqa, args.hops[0], example.parent)
            log(
                "the same run through the CLI, one slice:\n  "
                f"{tot_search_command(data, endpoint.url, example)}"
            )
            return 0
        asyncio.run(run(args, data, endpoint.url))
    return 0


if __name__ == "__main__":
    sys.exit(main())
