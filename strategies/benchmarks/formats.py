"""Question-file parsers: MetaQA, PathQuestion and JSONL → :class:`BenchmarkQuestion`.

A malformed line never aborts a file: it is yielded as a :class:`BadLine` (with file and line
number) so the runner can report it and go on. PathQuestion's third column (the gold path) is read
only for its first element, the topic entity; the rest is supervision and is dropped here, so it can
never reach a method.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tot_mcp.kg_adapters.text import bracketed_mentions
from tot_mcp.strategies.methods import BenchmarkQuestion

FORMATS = ("metaqa", "pathquestion", "jsonl")


class FormatError(ValueError):
    """A line that does not follow its format; the message says what was expected."""


@dataclass(frozen=True)
class BadLine:
    source: str
    lineno: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.lineno}: {self.reason}"


def read_questions(path: str | Path, fmt: str) -> Iterator[BenchmarkQuestion | BadLine]:
    """Every question of the file in order (blank lines skipped). Raises OSError/FormatError only
    for the file as a whole (unreadable, unknown format)."""
    if fmt not in FORMATS:
        raise FormatError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    path = Path(path)
    parse = {"metaqa": parse_metaqa, "pathquestion": parse_pathquestion, "jsonl": parse_jsonl}[fmt]
    stem = path.stem
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            try:
                q = parse(line)
            except FormatError as e:
                yield BadLine(str(path), lineno, str(e))
                continue
            yield q.model_copy(update={"id": f"{stem}:{lineno}", "source": str(path)})


def parse_metaqa(line: str) -> BenchmarkQuestion:
    """``question<TAB>a|b|c`` with the topic entity in ``[...]``."""
    parts = line.split("\t")
    if len(parts) != 2:
        raise FormatError(
            f"expected 'question<TAB>answer|answer|...', got {len(parts)} tab-separated fields"
        )
    question, answers = parts[0].strip(), [a.strip() for a in parts[1].split("|") if a.strip()]
    mentions = bracketed_mentions(question)
    if not question or not answers:
        raise FormatError("empty question or answer list")
    if not mentions:
        raise FormatError("no [topic entity] in the question")
    return BenchmarkQuestion(id="", text=question, answers=answers, topic=mentions[0])


def parse_pq_answers(column: str) -> list[str]:
    """PathQuestion's answer column ``main(alt1/alt2/.../)`` → ``[main, alt...]`` without
    duplicates.

    Names may contain parentheses (``PG_(USA)(PG_(USA)/)``), so the split is at the ``(`` whose
    prefix is one of the ``/``-separated items inside — not the first ``(``."""
    col = column.strip()
    if not col.endswith("/)"):
        raise FormatError(f"answer column {col[:80]!r} does not end in '/)'")
    for m in re.finditer(r"\(", col):
        i = m.start()
        main, inner = col[:i], col[i + 1 : -1]
        items = [x for x in inner.split("/") if x]
        if main and main in items:
            return list(dict.fromkeys([main, *items]))
    raise FormatError(
        f"cannot split answer column {col[:80]!r}: no '(' whose prefix is one of the listed answers"
    )


def parse_pathquestion(line: str) -> BenchmarkQuestion:
    """``question<TAB>answer(...)<TAB>topic#r1#e1#...``: only the path's first element (the topic)
    is kept, and it is bracketed in the question so ``initialize`` links it."""
    parts = line.split("\t")
    if len(parts) != 3:
        raise FormatError(
            f"expected 'question<TAB>answer(...)<TAB>path', got {len(parts)} tab-separated fields"
        )
    question, answer_col, path = (p.strip() for p in parts)
    answers = parse_pq_answers(answer_col)
    topic = path.split("#", 1)[0].strip()
    if not question or not topic:
        raise FormatError("empty question or topic entity")
    text = mark_topic(question, topic)
    return BenchmarkQuestion(id="", text=text, answers=answers, topic=topic)


def mark_topic(question: str, topic: str) -> str:
    """Bracket the topic's first occurrence in the question (case-insensitive); prepend it if
    absent."""
    if bracketed_mentions(question):
        return question
    i = question.lower().find(topic.lower())
    if i < 0:
        return f"[{topic}] {question}"
    return f"{question[:i]}[{question[i : i + len(topic)]}]{question[i + len(topic) :]}"


def parse_jsonl(line: str) -> BenchmarkQuestion:
    """``{"question": str, "answers": [str] | str, "topic": str?}``."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise FormatError(f"not JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise FormatError("expected a JSON object")
    question, answers, topic = data.get("question"), data.get("answers"), data.get("topic")
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(question, str) or not question.strip():
        raise FormatError("'question' must be a non-empty string")
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise FormatError("'answers' must be a string or a list of strings")
    if topic is not None and (not isinstance(topic, str) or not topic.strip()):
        raise FormatError("'topic' must be a non-empty string when given")
    text = mark_topic(question.strip(), topic.strip()) if topic else question.strip()
    return BenchmarkQuestion(
        id="", text=text, answers=[a for a in answers if a.strip()], topic=topic
    )
