#!/usr/bin/env bash
# Creates the Python virtual environments used by the A2A interop tests:
#   target/py/a2a-1x : the latest a2a-sdk 1.x from PyPI (+ http-server, signing and grpc extras, cryptography, uvicorn)
#   target/py/a2a-03 : a2a-sdk 0.3.26 (+ http-server extras, uvicorn)
#   target/py/otlp   : opentelemetry-proto, for the OTLP receiver of the trace-export test
#   target/py/mcp-2x : the official Python MCP SDK 2.x (mcp 2.3.0), for the MCP interop tests
#                    (the client's and the server's tasks)
# Idempotent: a venv whose stamp file matches the wanted requirement is left alone, so a second
# run takes well under a second. Set A2A_PY_FORCE=1 to rebuild both.
# Tests look for <workspace>/target/py/a2a-1x/bin/python and .../a2a-03/bin/python, or the
# paths in SUBAGENTS_A2A_PY_1X / SUBAGENTS_A2A_PY_03.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py_root="${root}/target/py"
python="${PYTHON:-python3}"

if ! command -v "${python}" >/dev/null 2>&1; then
  echo "setup-python: ${python} not found; install Python 3.10+ first" >&2
  exit 1
fi
if ! "${python}" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "setup-python: a2a-sdk needs Python >= 3.10, ${python} is $("${python}" --version 2>&1)" >&2
  exit 1
fi

# make_venv NAME CHECK PACKAGE REQUIREMENT...: a venv at target/py/NAME with REQUIREMENT
# installed, checked by running the Python statement CHECK, reported with PACKAGE's version.
make_venv() {
  local name="$1" check="$2" package="$3"
  shift 3
  local dir="${py_root}/${name}"
  local want="$*"
  local stamp="${dir}/.subagents-stamp"
  if [[ "${A2A_PY_FORCE:-}" != "1" && -x "${dir}/bin/python" && -f "${stamp}" \
        && "$(cat "${stamp}")" == "${want}" ]]; then
    echo "setup-python: ${name} ready (${want})"
    return 0
  fi
  echo "setup-python: creating ${dir} with: ${want}"
  rm -rf "${dir}"
  mkdir -p "${py_root}"
  "${python}" -m venv "${dir}"
  "${dir}/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  # shellcheck disable=SC2068
  "${dir}/bin/python" -m pip install --quiet --disable-pip-version-check $@
  "${dir}/bin/python" -c "${check}"
  echo "${want}" >"${stamp}"
  echo "setup-python: ${name} installed: $("${dir}/bin/python" -m pip show "${package}" | grep '^Version')"
}

a2a_check='import a2a, uvicorn, starlette, sse_starlette'
make_venv a2a-1x "${a2a_check}" a2a-sdk 'a2a-sdk[http-server,signing,grpc]>=1,<2' 'cryptography>=43' 'uvicorn>=0.30'
make_venv a2a-03 "${a2a_check}" a2a-sdk 'a2a-sdk[http-server]==0.3.26' 'uvicorn>=0.30'

# target/py/otlp : opentelemetry-proto (+ protobuf) for the small OTLP/HTTP receiver
# (crates/subagents-cli/tests/support/otlp_receiver.py) the trace-export test sends spans to.
# Tests look for target/py/otlp/bin/python, or the path in SUBAGENTS_OTLP_PY.
make_venv otlp 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' \
  opentelemetry-proto 'opentelemetry-proto>=1.20,<2'

# target/py/mcp-2x : the official Python MCP SDK 2.x, for the MCP client interop test
# (crates/subagent-mcp/tests/it/mcp_interop_py.rs runs tests/support/py_mcp_server.py with it).
# Tests look for target/py/mcp-2x/bin/python, or the path in SUBAGENTS_MCP_PY.
make_venv mcp-2x 'import mcp.server.mcpserver, mcp_types' mcp 'mcp==2.3.0'
