"""Does a method say it cannot answer when it cannot? Four kinds of dev question, built from the
dev KBs, run through tot-search (issue #35).

Hits@1 only rewards answers; it never asks whether a method notices that a question has no answer in
the KG. This benchmark does. From the dev samples in ``../shared/benchmarks`` it builds:

* ``made_up``: a real dev question whose ``[mention]`` is replaced by a name that is no label of the
  KG; half keep one word of the real mention and invent the others ("[Joely Vastrino]"), half are
  wholly invented.
* ``missing_relation``: a question about a real dev topic entity of the right type, asking for a
  relation the KG does not have ("who produced [Titanic]"). The phrasings come from one general list
  (:data:`PHRASINGS`); a KG keeps those none of whose key words starts a word of its relation IDs or
  labels, checked here, never picked by hand per dataset.
* ``typo``: a real dev question with one character edited in one word (4+ letters) of its mention.
* ``bare``: a real dev question with the brackets around its mention removed.

The first two have no answer: right is a status other than ``answered``/``partial`` with a one-line
``reason``. The last two keep their gold answers: right is Hits@1. Everything is drawn with a fixed
seed from dev questions only; nothing here is tuned on them.

    python -m bench.trust                  # build runs/trust/questions-*.jsonl, run, print tables
    python -m bench.trust --per-kind 20 --methods tot --kbs metaqa pq2
    python -m bench.trust --only-build        # write the question files only
    python -m bench.trust --from-files        # re-score the JSONL already in --runs

Each (method, KB) is one ``tot-search --format jsonl`` run (offline policy, default settings)
writing ``<runs>/<method>-<kb>.jsonl``; the tables are computed from those files and the question
files beside them (a record's ID is ``questions-<kb>:<line>``). A full run takes about 6 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.datasets import BENCHMARKS, DEV_SETS

KINDS = ("made_up", "missing_relation", "typo", "bare")
UNANSWERABLE = frozenset({"made_up", "missing_relation"})
METHODS = ("tot", "plan", "router")
DEFAULT_SEED = 35
LINKED = BENCHMARKS / "linked-metaqa"


@dataclass(frozen=True)
class KB:
    key: str
    kgs: tuple[tuple[str, str], ...]  # (name, spec) as tot-search --kg NAME=SPEC opens them
    questions: tuple[tuple[str, str], ...]  # (question file, its format)
    embedded: bool = False  # tot-search's default KG: no --kg flag


def _pq_kb(key: str) -> KB:
    d = DEV_SETS[key]
    return KB(key, ((key, str(BENCHMARKS / d.kb)),), ((str(BENCHMARKS / d.questions), d.fmt),))


KBS: dict[str, KB] = {
    "metaqa": KB(
        "metaqa",
        (("movies", "embedded"),),
        tuple(
            (str(BENCHMARKS / DEV_SETS[k].questions), "metaqa") for k in ("mqa1", "mqa2", "mqa3")
        ),
        embedded=True,
    ),
    **{k: _pq_kb(k) for k in ("pq2", "pq3", "pql2", "pql3")},
    "linked": KB(
        "linked",
        (("films", str(LINKED / "films.txt")), ("catalog", str(LINKED / "catalog.ttl"))),
        ((str(LINKED / "dev_2hop.txt"), "metaqa"), (str(LINKED / "dev_3hop.txt"), "metaqa")),
    ),
}


# -- relations a KG may lack -----------------------------------------------------------------------
@dataclass(frozen=True)
class Phrasing:
    template: str  # the entity goes where {} is, bracketed
    type: str  # person, work, place, org
    keys: tuple[str, ...]  # stems: a relation with a word starting with one could answer it


#: one general list across domains; a KG keeps a phrasing only if none of its keys starts a word
#: of its relations
PHRASINGS: tuple[Phrasing, ...] = (
    Phrasing("where was {} born", "person", ("birth", "born")),
    Phrasing("when did {} die", "person", ("death", "die", "dead")),
    Phrasing(
        "which university did {} attend",
        "person",
        ("educat", "universit", "school", "college", "alma", "institution", "study"),
    ),
    Phrasing("how tall is {}", "person", ("height", "tall")),
    Phrasing("what awards has {} won", "person", ("award", "prize", "honor", "honour", "won")),
    Phrasing(
        "who is {} married to",
        "person",
        ("spouse", "married", "marriage", "wife", "husband", "partner"),
    ),
    Phrasing("what religion does {} follow", "person", ("religio", "faith")),
    Phrasing("what languages does {} speak", "person", ("language", "speak", "spoken")),
    Phrasing("which political party does {} belong to", "person", ("party", "politic")),
    Phrasing("what is the net worth of {}", "person", ("worth", "wealth", "salary", "income")),
    Phrasing("who are the parents of {}", "person", ("parent", "father", "mother", "child")),
    Phrasing("what instrument does {} play", "person", ("instrument",)),
    Phrasing("who composed the music of {}", "work", ("compos", "music", "score", "soundtrack")),
    Phrasing("what was the budget of {}", "work", ("budget", "cost")),
    Phrasing("who produced {}", "work", ("produc",)),
    Phrasing("how much did {} earn at the box office", "work", ("gross", "box", "revenue", "earn")),
    Phrasing("which awards was {} nominated for", "work", ("award", "nominat", "prize")),
    Phrasing("how long is {}", "work", ("runtime", "length", "duration", "minute", "running")),
    Phrasing("which studio made {}", "work", ("studio", "company", "distribut", "production")),
    Phrasing("who edited {}", "work", ("edit",)),
    Phrasing("where was {} filmed", "work", ("filming", "location", "shot")),
    Phrasing(
        "who was the cinematographer of {}", "work", ("cinematograph", "photograph", "camera")
    ),
    Phrasing("what is the population of {}", "place", ("population", "inhabitant")),
    Phrasing("what is the capital of {}", "place", ("capital",)),
    Phrasing("what currency is used in {}", "place", ("currency",)),
    Phrasing("who is the mayor of {}", "place", ("mayor", "leader", "govern")),
    Phrasing("who founded {}", "org", ("found",)),
    Phrasing("where is {} headquartered", "org", ("headquarter", "location")),
    Phrasing("how many employees does {} have", "org", ("employ", "staff")),
)

#: words of an entity's own relations that say what it is: (forward cues, backward cues)
TYPE_CUES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "person": (
        frozenset(
            {
                "people",
                "person",
                "gender",
                "parents",
                "spouse",
                "children",
                "profession",
                "nationality",
                "religion",
                "ethnicity",
                "deceased",
            }
        ),
        frozenset({"directed", "written", "starred", "actors", "author", "composer"}),
    ),
    "work": (
        frozenset(
            {
                "film",
                "recording",
                "album",
                "release",
                "composition",
                "book",
                "directed",
                "written",
                "starred",
                "genre",
                "track",
            }
        ),
        frozenset(),
    ),
    "place": (frozenset({"location", "containedby", "geography"}), frozenset()),
    "org": (frozenset({"organization", "company", "business"}), frozenset()),
}


def words(text: str) -> list[str]:
    """Lower-case words of a relation ID or label (``__people__person__place_of_birth``,
    ``releaseYear``)."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text.rsplit(":", 1)[-1])
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def vocabulary_words(kgs) -> set[str]:
    """Every word of every relation ID and label of the KGs."""
    out: set[str] = set()
    for kg in kgs:
        out.update(w for rid in kg.relation_vocabulary() or () for w in words(rid))
        out.update(w for label in (kg.relation_labels() or {}).values() for w in words(label))
    return out


def missing_phrasings(vocab: set[str]) -> list[Phrasing]:
    """The phrasings none of whose key stems starts a word of the KG's relation vocabulary."""
    return [p for p in PHRASINGS if not any(w.startswith(k) for k in p.keys for w in vocab)]


def type_words(relation_id: str, forward: bool) -> set[str]:
    """The words of a relation that say what its subject (``forward``) or object is. A
    Freebase-style ID ``__domain__type__property`` names the subject's type in its middle part and
    what the object is to it in its last; a plain ID (``directed_by``) says both with all its
    words."""
    parts = [p for p in relation_id.rsplit(":", 1)[-1].split("__") if p]
    if len(parts) >= 3:
        return set(words(parts[-2] if forward else parts[-1]))
    return set(words(relation_id))


async def entity_type(kg, label: str) -> str | None:
    """What a dev topic entity is (person, work, place, org), from the words of its relations."""
    found = await kg.find_by_label(label, limit=1)
    if not found:
        return None
    rels = (await kg.get_relations([found[0].id])).relations
    fwd = {w for r in rels if r.direction.value == "forward" for w in type_words(r.id, True)}
    bwd = {w for r in rels if r.direction.value != "forward" for w in type_words(r.id, False)}
    scores = {t: len(fwd & f) + len(bwd & b) for t, (f, b) in TYPE_CUES.items()}
    best = max(scores, key=lambda t: scores[t])  # ties: the order of TYPE_CUES
    return best if scores[best] else None


# -- names that are not in the KG ------------------------------------------------------------------
CONSONANTS, VOWELS, ENDS = "bdfgklmnprstvz", "aeiou", ("", "", "n", "r", "s", "x", "th")
STOPWORDS = frozenset(
    {"the", "of", "and", "a", "an", "de", "la", "le", "in", "on", "to", "for", "von", "van"}
)


def invented_word(rng: random.Random) -> str:
    syllables = rng.randint(2, 3)
    stem = "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(syllables))
    return stem + rng.choice(ENDS)


def split_mention(mention: str) -> tuple[list[str], str]:
    """A mention's words and what joins them (PathQuestion names are ``snake_case``)."""
    sep = "_" if "_" in mention and " " not in mention else " "
    return [w for w in mention.split(sep) if w], sep


def styled(new_words: list[str], like: str, sep: str) -> str:
    """Invented words spelt like the mention they replace: lower-case if it is, else capitalised."""
    if like == like.lower():
        return sep.join(w.lower() for w in new_words)
    return sep.join(w if w[:1].isupper() else w.capitalize() for w in new_words)


async def is_label(kgs, name: str) -> bool:
    """True if some KG has an entity labelled ``name`` (same lookup key: how tot-search checks a
    topic)."""
    from tot_mcp.kg_adapters.text import key

    want = key(name)
    for kg in kgs:
        if await kg.find_by_label(name, limit=1):
            return True
        if any(key(h.entity.label) == want for h in await kg.search_entities(name, limit=5)):
            return True
    return False


async def made_up_name(kgs, mention: str, share_word: bool, rng: random.Random) -> str | None:
    """A name for ``mention``'s slot that is no label of ``kgs``: one of its words kept and the rest
    invented (``share_word``; None if it has no word to keep), or wholly invented, as many words."""
    ws, sep = split_mention(mention)
    keep = [
        i for i, w in enumerate(ws) if len(re.sub(r"\W", "", w)) >= 3 and w.lower() not in STOPWORDS
    ]
    if share_word and (len(ws) < 2 or not keep):
        return None
    for _ in range(20):
        if share_word:
            k = rng.choice(keep)
            new = [w if i == k else styled([invented_word(rng)], w, sep) for i, w in enumerate(ws)]
            name = sep.join(new)
        else:
            name = styled([invented_word(rng) for _ in ws], mention, sep)
        if not await is_label(kgs, name):
            return name
    return None


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def one_typo(word: str, rng: random.Random) -> str:
    """One deletion, insertion, substitution or swap of adjacent letters; the first letter stays."""
    i = rng.randrange(1, len(word))
    kind = rng.choice(("delete", "insert", "substitute", "swap"))
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    if kind == "insert":
        return word[:i] + rng.choice(LETTERS) + word[i:]
    if kind == "substitute":
        return word[:i] + rng.choice([c for c in LETTERS if c != word[i].lower()]) + word[i + 1 :]
    j = i + 1 if i + 1 < len(word) else i - 1
    a, b = sorted((i, j))
    if word[a] == word[b]:  # swapping two equal letters changes nothing: delete one instead
        return word[:i] + word[i + 1 :]
    return word[:a] + word[b] + word[a] + word[b + 1 :]


# -- building the question files -------------------------------------------------------------------
@dataclass
class Source:
    id: str
    text: str  # bracketed
    mention: str
    answers: list[str]


@dataclass
class Built:
    kb: str
    rows: dict[str, list[dict]] = field(default_factory=dict)  # kind -> JSONL objects


def load_sources(kb: KB) -> list[Source]:
    from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions

    out = []
    for path, fmt in kb.questions:
        for q in read_questions(path, fmt):
            if isinstance(q, BadLine):
                continue
            m = re.search(r"\[([^\[\]]+)\]", q.text)
            if m:
                out.append(Source(q.id, q.text, m.group(1), q.answers))
    return out


def swap_mention(text: str, new: str | None) -> str:
    """The question with its ``[mention]`` replaced by ``[new]``; unbracketed if ``new`` is None."""
    m = re.search(r"\[([^\[\]]+)\]", text)
    inner = m.group(1) if new is None else f"[{new}]"
    return text[: m.start()] + inner + text[m.end() :]


def quotas(per_kind: int, kbs: list[str]) -> dict[str, int]:
    base, extra = divmod(per_kind, len(kbs))
    return {k: base + (i < extra) for i, k in enumerate(kbs)}


async def build_kb(kb: KB, kgs: list, quota: dict[str, int], seed: int) -> Built:
    """Up to ``quota[kind]`` questions of each kind for one KB, deterministic in ``seed``."""
    sources = load_sources(kb)
    built = Built(kb.key)

    def pool(kind: str) -> list[Source]:
        items = list(sources)
        random.Random(f"{seed}:{kb.key}:{kind}").shuffle(items)
        return items

    def row(kind: str, question: str, answers: list[str], src: Source, **extra) -> dict:
        return {
            "question": question,
            "answers": answers,
            "kind": kind,
            "kb": kb.key,
            "from": src.id,
            **extra,
        }

    if quota.get("made_up"):
        rng, rows = random.Random(f"{seed}:{kb.key}:made_up:names"), []
        items = pool("made_up")
        for i in range(quota["made_up"]):
            share = i % 2 == 0  # half share one word with the real mention
            while items:
                src = items.pop()
                name = await made_up_name(kgs, src.mention, share, rng)
                if name:
                    rows.append(
                        row(
                            "made_up",
                            swap_mention(src.text, name),
                            [],
                            src,
                            name=name,
                            shares_word=share,
                        )
                    )
                    break
        built.rows["made_up"] = rows
    if quota.get("missing_relation"):
        keep = missing_phrasings(vocabulary_words(kgs))
        typed: dict[str, list[Source]] = {}
        seen = set()
        for src in sorted(sources, key=lambda s: s.id):
            if src.mention in seen:
                continue
            seen.add(src.mention)
            t = await entity_type(kgs[0], src.mention)
            if t:
                typed.setdefault(t, []).append(src)
        keep = [p for p in keep if typed.get(p.type)]
        rng, rows = random.Random(f"{seed}:{kb.key}:missing_relation"), []
        order = list(keep)
        rng.shuffle(order)
        for i in range(quota["missing_relation"] if order else 0):
            p = order[i % len(order)]
            src = rng.choice(typed[p.type])
            rows.append(
                row(
                    "missing_relation",
                    p.template.format(f"[{src.mention}]"),
                    [],
                    src,
                    phrasing=p.template,
                    type=p.type,
                )
            )
        built.rows["missing_relation"] = rows
    if quota.get("typo"):
        rng, rows = random.Random(f"{seed}:{kb.key}:typo:edits"), []
        items = pool("typo")
        while items and len(rows) < quota["typo"]:
            src = items.pop()
            ws, sep = split_mention(src.mention)
            long = [i for i, w in enumerate(ws) if sum(c.isalpha() for c in w) >= 4 and w.isalpha()]
            if not long:
                continue
            k = rng.choice(long)
            typo = sep.join(one_typo(w, rng) if i == k else w for i, w in enumerate(ws))
            if typo == src.mention or await is_label(kgs, typo):  # names another entity: skip
                continue
            rows.append(
                row(
                    "typo",
                    swap_mention(src.text, typo),
                    src.answers,
                    src,
                    name=typo,
                    true_topic=src.mention,
                )
            )
        built.rows["typo"] = rows
    if quota.get("bare"):
        rows = [
            row("bare", swap_mention(src.text, None), src.answers, src, true_topic=src.mention)
            for src in pool("bare")[: quota["bare"]]
        ]
        built.rows["bare"] = rows
    return built


def interleaved(built: Built) -> list[dict]:
    """The kinds one after another, so ``--limit`` keeps a mix."""
    lists = [built.rows.get(k, []) for k in KINDS]
    out = []
    for i in range(max((len(x) for x in lists), default=0)):
        out += [x[i] for x in lists if i < len(x)]
    return out


def open_kgs(kb: KB) -> list:
    from tot_mcp.kg_adapters.spec import make_spec, open_kg

    return [open_kg(make_spec(name, spec)) for name, spec in kb.kgs]


async def build(
    kbs: list[str],
    kinds: list[str],
    per_kind: int,
    seed: int = DEFAULT_SEED,
    opened: dict[str, list] | None = None,
) -> dict[str, list[dict]]:
    """The question objects per KB; ``opened`` (KB key → its KGs) saves loading a KG twice."""
    shares = quotas(per_kind, kbs)
    out = {}
    for key in kbs:
        kgs = opened[key] if opened and key in opened else open_kgs(KBS[key])
        built = await build_kb(KBS[key], kgs, {k: shares[key] for k in kinds}, seed)
        out[key] = interleaved(built)
    return out


# -- running and scoring ---------------------------------------------------------------------------
def tot_search() -> str:
    return shutil.which("tot-search") or str(Path(sys.executable).with_name("tot-search"))


def run_one(kb: KB, method: str, questions: Path, out: Path, limit: int | None) -> float:
    cmd = [
        tot_search(),
        "--questions",
        str(questions),
        "--format",
        "jsonl",
        "--method",
        method,
        "--out",
        str(out),
        "--quiet",
        "--no-trace",
    ]
    if not kb.embedded:
        for name, spec in kb.kgs:
            cmd += ["--kg", f"{name}={spec}"]
    if limit:
        cmd += ["--limit", str(limit)]
    out.unlink(missing_ok=True)
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def read_jsonl(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def joined(runs: Path, method: str, kb: str) -> list[tuple[dict, dict]]:
    """(question object, run record) pairs: a record's ID is ``questions-<kb>:<line>``."""
    qpath, rpath = runs / f"questions-{kb}.jsonl", runs / f"{method}-{kb}.jsonl"
    if not qpath.exists() or not rpath.exists():
        return []
    questions = {f"{qpath.stem}:{i}": q for i, q in enumerate(read_jsonl(qpath), 1)}
    return [(questions[r["id"]], r) for r in read_jsonl(rpath) if r["id"] in questions]


def right(kind: str, r: dict) -> bool:
    if kind in UNANSWERABLE:
        reason = (r.get("reason") or "").strip()
        refused = r.get("status") not in ("answered", "partial")
        return refused and bool(reason) and "\n" not in reason
    return r.get("hits1", 0.0) == 1.0


def linked_right(q: dict, r: dict) -> bool:
    """The run linked the question's real topic, confidently, as its best link (typo and bare
    questions)."""
    from tot_mcp.kg_adapters.text import key

    links = [li for li in r.get("links") or [] if li.get("confident")]
    return bool(links) and key(links[0]["label"]) == key(q.get("true_topic") or "")


def table(pairs_by_method: dict[str, list[tuple[dict, dict]]], kinds: list[str]) -> str:
    lines = [
        "| kind | method | n | right | median expansions | mean LLM calls | Hits@1 | linked@1 | "
        "0 expansions and 0 calls | statuses |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in kinds:
        for method, pairs in pairs_by_method.items():
            rs = [r for q, r in pairs if q["kind"] == kind]
            if not rs:
                continue
            if kind in UNANSWERABLE:
                linked = "–"
            else:
                rate = statistics.fmean(linked_right(q, r) for q, r in pairs if q["kind"] == kind)
                linked = f"{rate:.3f}"
            n = len(rs)
            mean_hits = statistics.fmean(r["hits1"] for r in rs)
            hits = "–" if kind in UNANSWERABLE else f"{mean_hits:.3f}"
            zero = (
                f"{sum(r['expansions'] == 0 and r['llm_calls'] == 0 for r in rs) / n:.3f}"
                if kind == "made_up"
                else "–"
            )
            statuses = Counter(r.get("status") or "?" for r in rs)
            lines.append(
                f"| {kind} | {method} | {n} | {sum(right(kind, r) for r in rs) / n:.3f} | "
                f"{statistics.median(r['expansions'] for r in rs):g} | "
                f"{statistics.fmean(r['llm_calls'] for r in rs):.1f} | {hits} | {linked} | {zero} "
                "| " + ", ".join(f"{s} {c}" for s, c in statuses.most_common()) + " |"
            )
    return "\n".join(lines)


def by_kb_table(runs: Path, methods: list[str], kbs: list[str], kinds: list[str]) -> str:
    lines = ["| method | KB | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
    for method in methods:
        for kb in kbs:
            pairs = joined(runs, method, kb)
            if not pairs:
                continue
            cells = []
            for kind in kinds:
                rs = [r for q, r in pairs if q["kind"] == kind]
                cells.append(f"{sum(right(kind, r) for r in rs)}/{len(rs)}" if rs else "–")
            lines.append(f"| {method} | {kb} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reasons_seen(pairs_by_method: dict[str, list[tuple[dict, dict]]], per: int = 3) -> str:
    """The commonest (status, reason) pairs per method on the unanswerable kinds, to read them."""
    out = []
    for method, pairs in pairs_by_method.items():
        seen = Counter(
            (q["kind"], r.get("status"), (r.get("reason") or "")[:120])
            for q, r in pairs
            if q["kind"] in UNANSWERABLE
        )
        for (kind, status, reason), c in seen.most_common(per):
            out.append(f"- {method} · {kind} · {status} ×{c}: {reason or '(no reason)'}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--kbs", nargs="+", choices=list(KBS), default=list(KBS))
    ap.add_argument(
        "--per-kind",
        type=int,
        default=40,
        help="questions of each kind, across the KBs (default 40)",
    )
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument(
        "--limit",
        type=int,
        default=None,
        help="only the first N questions of each KB's file (the kinds interleaved)",
    )
    ap.add_argument("--runs", type=Path, default=Path("runs/trust"))
    ap.add_argument("--only-build", action="store_true", help="write the question files and stop")
    ap.add_argument(
        "--from-files", action="store_true", help="re-score the JSONL already in --runs"
    )
    args = ap.parse_args(argv)
    if not BENCHMARKS.is_dir():
        print(
            f"bench.trust: {BENCHMARKS} not found (the data sits beside the repository)",
            file=sys.stderr,
        )
        return 2
    args.runs.mkdir(parents=True, exist_ok=True)
    if not args.from_files:
        started = time.perf_counter()
        files = asyncio.run(build(args.kbs, args.kinds, args.per_kind, args.seed))
        for kb, rows in files.items():
            path = args.runs / f"questions-{kb}.jsonl"
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            path.write_text(text, encoding="utf-8")
            counts = Counter(r["kind"] for r in rows)
            print(f"{path}: " + ", ".join(f"{k} {counts[k]}" for k in args.kinds), file=sys.stderr)
        print(f"built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        if args.only_build:
            return 0
        for method in args.methods:
            for kb in args.kbs:
                secs = run_one(
                    KBS[kb],
                    method,
                    args.runs / f"questions-{kb}.jsonl",
                    args.runs / f"{method}-{kb}.jsonl",
                    args.limit,
                )
                print(f"  {method} {kb}: {secs:.0f} s", file=sys.stderr, flush=True)
    pairs = {m: [p for kb in args.kbs for p in joined(args.runs, m, kb)] for m in args.methods}
    print(
        f"trust benchmark, seed {args.seed}, offline policy; right = refused with a one-line "
        "reason (made_up, missing_relation) or Hits@1 (typo, bare)\n"
    )
    print(table(pairs, args.kinds))
    print("\nright per KB\n")
    print(by_kb_table(args.runs, args.methods, args.kbs, args.kinds))
    print("\nmost common (status, reason) on the unanswerable kinds\n")
    print(reasons_seen(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
