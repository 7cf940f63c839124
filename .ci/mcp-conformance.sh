#!/usr/bin/env bash
# Runs the official MCP conformance suite (installed by .ci/setup-mcp.sh) and checks every
# scenario we claim in docs/mcp-conformance.md passes: no FAILURE in any of them (outside the
# baseline .ci/mcp-conformance/expected-failures.yaml).
#   server: the suite's server scenarios against `subagents mcp --listen` (the debug binary,
#           built when missing);
#   client: the suite's client scenarios against our MCP client, through the example
#           crates/subagent-mcp/examples/conformance_client.rs (built here; a no-op after the
#           test step, which builds it with the same flags). SCENARIO@VERSION runs a scenario at
#           that spec version (the suite's --spec-version), e.g. at 2026-07-28's stateless wire.
# Results (one directory and log per scenario) go to target/mcp-conformance/results/.
#   bash .ci/mcp-conformance.sh                      # every claimed scenario, server and client
#   bash .ci/mcp-conformance.sh server [SCENARIO...] # the server part (or just these)
#   bash .ci/mcp-conformance.sh client [SCENARIO...] # the client part (or just these)
#   bash .ci/mcp-conformance.sh SCENARIO...          # just these server scenarios
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="${root}/target/mcp-conformance"
bin="${SUBAGENTS_BIN:-${root}/target/debug/subagents}"
results="${suite}/results"

# What `subagents mcp` claims (docs/mcp-conformance.md, "Server: subagents mcp"). The other
# server scenarios call fixture tools, prompts or resources this server does not have.
server_claimed=(
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
# What our client claims (docs/mcp-conformance.md, "Client: conformance suite results"). The
# other client scenarios are OAuth flows and the skills extension, which the client does not
# implement.
client_claimed=(
  initialize
  tools_call
  tools_call@2026-07-28
  elicitation-sep1034-client-defaults
  sse-retry
  request-metadata
  sep-2322-client-request-state
  http-standard-headers
  http-custom-headers
  http-invalid-tool-headers
  json-schema-ref-no-deref
  json-schema-2020-12-preservation
  json-schema-2020-12-preservation@2026-07-28
)
parts=(server client)
case "${1:-}" in
  server) parts=(server); shift; [[ $# -gt 0 ]] && server_claimed=("$@") ;;
  client) parts=(client); shift; [[ $# -gt 0 ]] && client_claimed=("$@") ;;
  "") ;;
  *) parts=(server); server_claimed=("$@") ;;
esac

[[ -x "${suite}/node_modules/.bin/conformance" ]] || bash "${root}/.ci/setup-mcp.sh"
expected="${root}/.ci/mcp-conformance/expected-failures.yaml"
home="$(mktemp -d /tmp/subagents-mcp-conformance.XXXXXX)"
server=""
trap 'if [[ -n "${server}" ]]; then kill ${server} 2>/dev/null || true; wait ${server} 2>/dev/null || true; fi; rm -rf "${home}"' EXIT
rm -rf "${results}"
mkdir -p "${results}"
failed=0
ran=0

# One scenario: the suite (its bin: npx costs a second or two each) with ARGS...; logs to
# ${results}/NAME.log, prints a line.
run_one() {
  local name="$1"; shift
  local log="${results}/${name}.log"
  local verdict=ok
  if ! (cd "${suite}" && timeout 120 node_modules/.bin/conformance "$@" \
        --expected-failures "${expected}" > "${log}" 2>&1); then
    verdict=FAILED
    failed=$((failed + 1))
  fi
  ran=$((ran + 1))
  local summary
  summary="$(grep -E '^SKIPPED:|Passed:|Failed:|Warnings?:|Skipped:' "${log}" | tr -s ' \n' ' ' || true)"
  printf '  %-56s %s %s\n' "${name}" "${verdict}" "${summary}"
}

for part in "${parts[@]}"; do
  if [[ "${part}" == server ]]; then
    [[ -x "${bin}" ]] || (cd "${root}" && cargo build -q -p subagents-cli --bin subagents)
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    # No model (the scenarios never run an agent), no Ollama probe, an empty home.
    HOME="${home}" SUBAGENTS_OLLAMA_URL=http://127.0.0.1:9 \
      "${bin}" mcp --listen "127.0.0.1:${port}" --workspace "${home}" 2>"${home}/server.log" &
    server=$!
    for _ in $(seq 1 200); do
      if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then break; fi
      sleep 0.05
    done
    url="http://127.0.0.1:${port}/mcp"
    echo "server scenarios against subagents mcp --listen:"
    for scenario in "${server_claimed[@]}"; do
      run_one "${scenario}" server --url "${url}" --scenario "${scenario}" --suite all \
        -o "${results}/${scenario}"
    done
    kill "${server}" 2>/dev/null || true
    wait "${server}" 2>/dev/null || true
    server=""
  else
    # The same flags as the test step, so this is a no-op after it.
    (cd "${root}" && cargo build -q --workspace --all-features --example conformance_client)
    client="${root}/target/debug/examples/conformance_client"
    echo "client scenarios against our MCP client (examples/conformance_client):"
    for entry in "${client_claimed[@]}"; do
      scenario="${entry%@*}"
      version=()
      [[ "${entry}" == *@* ]] && version=(--spec-version "${entry#*@}")
      name="client-$(tr '/' '_' <<< "${entry}")"
      run_one "${name}" client --command "${client}" --scenario "${scenario}" \
        "${version[@]}" --timeout 30000 -o "${results}/${name}"
    done
  fi
done

if [[ ${failed} -gt 0 ]]; then
  echo "mcp-conformance: ${failed} of ${ran} claimed scenario(s) failed; logs in ${results}" >&2
  exit 1
fi
echo "mcp-conformance: all ${ran} claimed scenarios pass"
