#!/usr/bin/env bash
# Installs the outside clients of test/outside/outsideClients.test.ts (schemathesis and the Python
# MCP SDK, at the versions in requirements.txt) into a virtual environment of their own, from PyPI.
# Does nothing when that environment already holds exactly these versions.
# Usage: test/outside/install.sh [venv]   (default: .baton/tools/outside-clients)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-${OUTSIDE_CLIENTS_VENV:-$here/../../.baton/tools/outside-clients}}"
if [ -x "$venv/bin/schemathesis" ] && cmp -s "$here/requirements.txt" "$venv/baton-requirements.txt"; then
  exit 0
fi
echo "installing schemathesis and the Python MCP SDK into $venv ($(tr '\n' ' ' < "$here/requirements.txt"))"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
cp "$here/requirements.txt" "$venv/baton-requirements.txt"
