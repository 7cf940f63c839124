#!/usr/bin/env bash
# Installs the JavaScript peers of the A2A interop tests: the official @a2a-js/sdk (version
# pinned by crates/subagent-a2a/tests/js/package-lock.json) into tests/js/node_modules, with
# `npm ci`. Idempotent: skipped when node_modules matches the lock file.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${root}/crates/subagent-a2a/tests/js"
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-js: npm not found; install Node.js 20+ first" >&2
  exit 1
fi
stamp="${dir}/node_modules/.subagents-stamp"
version() { node -p "require('${dir}/node_modules/@a2a-js/sdk/package.json').version" 2>/dev/null || echo '?'; }
want="$(sha256sum "${dir}/package-lock.json" | cut -d' ' -f1)"
if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
  echo "setup-js: @a2a-js/sdk $(version) ready"
  exit 0
fi
(cd "${dir}" && npm ci --no-audit --no-fund --loglevel=error)
echo "${want}" > "${stamp}"
echo "setup-js: installed @a2a-js/sdk $(version)"
