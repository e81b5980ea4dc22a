"""The README's test command (lint, then the tests) is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ci_runs_exactly_the_readme_command():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = re.search(r"```bash\n(pip install -e '\.\[test\]' .*)\n```", readme)
    assert command, "the README no longer shows the test command"
    assert command.group(1) in (REPO / ".ci" / "run").read_text(encoding="utf-8")
