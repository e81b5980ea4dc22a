"""How big the library is at one or more git revisions: all lines, and code lines alone.

Why: issue #22 asks that one composition root and one kind of extension point leave "the tree
smaller, not bigger". Raw line counts move with docstrings and comments; code lines (not blank, not
a comment, not a docstring) say whether the code itself shrank. Counts what installs as ``tot_mcp``
— ``server/``, ``kg_adapters/``, ``strategies/`` and ``prompts/`` — as committed, so a dirty work
tree does not count::

    python -m bench.tree_size a974028^ HEAD          # before the first #22 commit, and now
    python -m bench.tree_size HEAD --top 20          # the biggest modules by code lines
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ("server", "kg_adapters", "strategies", "prompts")
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True).stdout


def docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers of every module, class and function docstring."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
        ):
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: str) -> int:
    """Lines holding a token that is not a comment, not layout and not part of a docstring."""
    docs = docstring_lines(ast.parse(source))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _NOT_CODE:
            lines.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docs)
    return len(lines)


def measure(rev: str) -> tuple[int, int, dict[str, int]]:
    """(all lines, code lines, code lines per Python module) of the library at ``rev``."""
    names = _git("ls-tree", "-r", "--name-only", rev, *PARTS).decode().split()
    total, per = 0, {}
    for name in names:
        raw = _git("show", f"{rev}:{name}")
        try:
            text = raw.decode()
        except UnicodeDecodeError:  # a binary file (none today) is not source
            continue
        total += text.count("\n")
        if name.endswith(".py"):
            per[name] = code_lines(text)
    return total, sum(per.values()), per


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("revs", nargs="+", help="git revisions (e.g. a974028^ HEAD)")
    ap.add_argument(
        "--top", type=int, default=0, help="also list the N biggest modules of the last revision"
    )
    a = ap.parse_args(argv)
    print("| revision | all lines | code lines |\n|---|---|---|")
    per: dict[str, int] = {}
    for rev in a.revs:
        try:
            total, code, per = measure(rev)
        except subprocess.CalledProcessError as e:
            ap.exit(2, f"tree_size: git could not read {rev!r}: {e.stderr.decode().strip()}\n")
        print(f"| {rev} | {total:,} | {code:,} |")
    for name, n in sorted(per.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"{n:6,}  {name}")


if __name__ == "__main__":
    main()
