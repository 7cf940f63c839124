#!/usr/bin/env bash
# Runs the official MCP conformance suite (installed by .ci/setup-mcp.sh) against
# `subagents mcp --listen` and checks every scenario we claim in docs/mcp-conformance.md
# passes: no FAILURE in any of them. Results (one JSON file per scenario) go to
# target/mcp-conformance/results/. Needs the debug binary (built when missing).
#   bash .ci/mcp-conformance.sh              # the claimed scenarios
#   bash .ci/mcp-conformance.sh SCENARIO...  # just these (e.g. to try one we do not claim)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="${root}/target/mcp-conformance"
bin="${SUBAGENTS_BIN:-${root}/target/debug/subagents}"
results="${suite}/results"

# What `subagents mcp` claims (docs/mcp-conformance.md, "Server: subagents mcp"). The other
# server scenarios call fixture tools, prompts or resources this server does not have.
claimed=(
  server-initialize
  server-session-lifecycle
  server-stateless
  ping
  completion-complete
  tools-list
  prompts-list
  resources-list
  server-sse-multiple-streams
  dns-rebinding-protection
  caching
  http-header-validation
  input-required-result-unsupported-methods
  input-required-result-validate-input
  tasks-capability-negotiation
  tasks-dispatch-and-envelope
  tasks-request-headers
)
if [[ $# -gt 0 ]]; then claimed=("$@"); fi

[[ -x "${suite}/node_modules/.bin/conformance" ]] || bash "${root}/.ci/setup-mcp.sh"
[[ -x "${bin}" ]] || (cd "${root}" && cargo build -q -p subagents-cli --bin subagents)

home="$(mktemp -d /tmp/subagents-mcp-conformance.XXXXXX)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
# No model (the scenarios never run an agent), no Ollama probe, an empty home.
HOME="${home}" SUBAGENTS_OLLAMA_URL=http://127.0.0.1:9 \
  "${bin}" mcp --listen "127.0.0.1:${port}" --workspace "${home}" 2>"${home}/server.log" &
server=$!
trap 'kill ${server} 2>/dev/null || true; wait ${server} 2>/dev/null || true; rm -rf "${home}"' EXIT
for _ in $(seq 1 200); do
  if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then break; fi
  sleep 0.05
done
url="http://127.0.0.1:${port}/mcp"

rm -rf "${results}"
mkdir -p "${results}"
failed=0
for scenario in "${claimed[@]}"; do
  out="${results}/${scenario}"
  if (cd "${suite}" && timeout 120 npx --no-install conformance server --url "${url}" \
        --scenario "${scenario}" --suite all -o "${out}" \
        --expected-failures "${root}/.ci/mcp-conformance/expected-failures.yaml" \
        > "${out}.log" 2>&1); then
    verdict=ok
  else
    verdict=FAILED
    failed=$((failed + 1))
  fi
  summary="$(grep -E 'Passed:|Failed:|Warnings?:|Skipped:' "${out}.log" | tr -s ' \n' ' ' || true)"
  printf '  %-48s %s %s\n' "${scenario}" "${verdict}" "${summary}"
done
if [[ ${failed} -gt 0 ]]; then
  echo "mcp-conformance: ${failed} claimed scenario(s) failed; logs in ${results}" >&2
  exit 1
fi
echo "mcp-conformance: all ${#claimed[@]} claimed scenarios pass"
