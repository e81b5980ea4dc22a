#!/usr/bin/env bash
# Pack the Claude Desktop extension (MCP Bundle, server type "uv") with the official CLI:
#
#   scripts/pack_mcpb.sh                # validate manifest.json, pack dist/tot-mcp.mcpb, record its sha256 in server.json
#   scripts/pack_mcpb.sh --smoke        # ... then unpack it and run `uv run --directory <bundle> tot-mcp --check`
#   scripts/pack_mcpb.sh --out X.mcpb --no-record   # pack elsewhere, leave server.json alone (the tests do this)
#
# The bundle holds manifest.json, pyproject.toml, README.md and the Python packages pyproject.toml ships (the
# embedded KG and the prompt files included); Claude Desktop installs the dependencies from pyproject.toml with uv.
# MCPB=... overrides the CLI command (default: npx -y @anthropic-ai/mcpb@2.1.2; the first run needs the npm registry).
# The registry entry (server.json) must carry the sha256 of the exact file uploaded to the release: packing stamps
# the time into the zip, so every run gives a new hash, and this script writes it into server.json unless --no-record.
set -euo pipefail
cd "$(dirname "$0")/.."

out=dist/tot-mcp.mcpb
record=1
smoke=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --no-record) record=0; shift ;;
    --smoke) smoke=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "pack_mcpb.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
read -r -a MCPB_CMD <<< "${MCPB:-npx -y @anthropic-ai/mcpb@2.1.2}"
PYTHON="${PYTHON:-python3}"

# manifest.json and server.json must describe the version pyproject.toml builds.
"$PYTHON" - <<'EOF'
import json, sys, tomllib
version = tomllib.load(open("pyproject.toml", "rb"))["project"]["version"]
for name, found in (("manifest.json", json.load(open("manifest.json"))["version"]),
                    ("server.json", json.load(open("server.json"))["version"])):
    if found != version:
        sys.exit(f"pack_mcpb.sh: {name} has version {found}, pyproject.toml {version}: update it first")
EOF

"${MCPB_CMD[@]}" validate manifest.json

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
"$PYTHON" - "$stage" <<'EOF'
# Copy what the wheel is built from: the directories pyproject's [tool.setuptools.package-dir] maps to tot_mcp.*.
import shutil, sys, tomllib
from pathlib import Path
stage = Path(sys.argv[1])
dirs = set(tomllib.load(open("pyproject.toml", "rb"))["tool"]["setuptools"]["package-dir"].values())
for name in ("manifest.json", "pyproject.toml", "README.md"):
    shutil.copy2(name, stage / name)
packages = sorted(Path(d) for d in dirs if (Path(d) / "__init__.py").is_file())
if len(packages) != len(dirs):
    sys.exit("pack_mcpb.sh: a directory of pyproject's package-dir has no __init__.py")
for pkg in packages:
    shutil.copytree(pkg, stage / pkg.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
print("staged:", ", ".join(p.name for p in packages))
EOF

mkdir -p "$(dirname "$out")"
rm -f "$out"
"${MCPB_CMD[@]}" pack "$stage" "$out"
sha=$("$PYTHON" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$out")
echo "sha256 $sha  $out"

if [ "$record" = 1 ]; then
  "$PYTHON" - "$sha" <<'EOF'
import json, sys
path = "server.json"
data = json.load(open(path))
bundles = [p for p in data["packages"] if p["registryType"] == "mcpb"]
if len(bundles) != 1:
    sys.exit("pack_mcpb.sh: server.json needs exactly one mcpb package")
bundles[0]["fileSha256"] = sys.argv[1]
with open(path, "w") as f:
    json.dump(data, f, indent=2, ensure_ascii=False)
    f.write("\n")
print(f"server.json: fileSha256 = {sys.argv[1]} (upload this exact file to {bundles[0]['identifier']})")
EOF
fi

if [ "$smoke" = 1 ]; then
  unpacked="$stage/unpacked"
  "${MCPB_CMD[@]}" unpack "$out" "$unpacked"
  mkdir "$stage/cwd"  # run from elsewhere: uv must find the project through --directory, as Claude Desktop does
  (cd "$stage/cwd" && uv run --directory "$unpacked" tot-mcp --kg movies=embedded --check)
fi
