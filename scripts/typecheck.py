"""Type-check the package as it installs, ``tot_mcp.*``, from the repository's top-level folders.

``pyproject.toml`` maps ``tot_mcp.server`` onto ``server/`` (and so on) for wheels and editable
installs; a static checker reads folders, not that mapping. This builds the installed shape in a
temporary directory out of symlinks to the folders (so errors name files a reader can open through
the link) and runs mypy on it:

    pip install mypy && python -m scripts.typecheck            # extra arguments go to mypy
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ("server", "kg_adapters", "strategies", "prompts")


def main(argv: list[str]) -> int:
    if (
        shutil.which("mypy") is None
        and subprocess.run(
            [sys.executable, "-m", "mypy", "--version"], capture_output=True
        ).returncode
        != 0
    ):
        print("typecheck: mypy is not installed (pip install mypy)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tot-mcp-types-") as tmp:
        package = Path(tmp) / "tot_mcp"
        package.mkdir()
        shutil.copy(REPO / "tot_mcp" / "__init__.py", package)
        for part in PARTS:
            (package / part).symlink_to(REPO / part, target_is_directory=True)
        config = ["--config-file", str(REPO / "pyproject.toml")]  # mypy runs in the temporary tree
        cmd = [
            sys.executable,
            "-m",
            "mypy",
            "-p",
            "tot_mcp",
            "--ignore-missing-imports",
            *config,
            *argv,
        ]
        return subprocess.run(cmd, cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
