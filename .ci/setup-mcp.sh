#!/usr/bin/env bash
# Installs the MCP peers of the tests and of the conformance step:
#   target/mcp-conformance : the official MCP conformance suite (@modelcontextprotocol/conformance,
#                            pinned by .ci/mcp-conformance/package-lock.json), with `npm ci`
# (The official MCP Python SDK venv, target/py/mcp-2x, comes from .ci/setup-python.sh.)
# Idempotent: skipped when what is installed matches the pins.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${root}/.ci/mcp-conformance"
dir="${root}/target/mcp-conformance"
python="${PYTHON:-python3}"

if ! command -v npm >/dev/null 2>&1; then
  echo "setup-mcp: npm not found; install Node.js 20+ first" >&2
  exit 1
fi
want="$(cat "${src}/package-lock.json" "${src}/globsync.mjs" | sha256sum | cut -d' ' -f1)"
stamp="${dir}/node_modules/.subagents-stamp"
if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  echo "setup-mcp: conformance suite ready"
else
  mkdir -p "${dir}"
  cp "${src}/package.json" "${src}/package-lock.json" "${dir}/"
  (cd "${dir}" && npm ci --no-audit --no-fund --loglevel=error)
  # The suite imports `fs.globSync`, which Node.js has only from 22: on an older Node, give
  # its bundle a small equivalent (.ci/mcp-conformance/globsync.mjs).
  if ! node -e 'process.exit(typeof require("fs").globSync === "function" ? 0 : 1)'; then
    bundle="${dir}/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    cp "${src}/globsync.mjs" "$(dirname "${bundle}")/globsync.mjs"
    "${python}" - "${bundle}" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
m = re.search(r'globSync as (\w+),', text)
if m:
    text = text.replace(m.group(0), '', 1)
    first, rest = text.split('\n', 1)
    text = first + '\nimport{globSync as ' + m.group(1) + '}from"./globsync.mjs";' + rest
    open(path, 'w').write(text)
PY
  fi
  echo "${want}" > "${stamp}"
  echo "setup-mcp: installed the conformance suite $(node -p "require('${dir}/node_modules/@modelcontextprotocol/conformance/package.json').version")"
fi
