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

# make_venv NAME REQUIREMENT...
make_venv() {
  local name="$1"
  shift
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
  "${dir}/bin/python" -c 'import a2a, uvicorn, starlette, sse_starlette' 
  echo "${want}" >"${stamp}"
  echo "setup-python: ${name} installed: $("${dir}/bin/python" -m pip show a2a-sdk | grep '^Version')"
}

make_venv a2a-1x 'a2a-sdk[http-server,signing,grpc]>=1,<2' 'cryptography>=43' 'uvicorn>=0.30'
make_venv a2a-03 'a2a-sdk[http-server]==0.3.26' 'uvicorn>=0.30'

# target/py/otlp : opentelemetry-proto (+ protobuf) for the small OTLP/HTTP receiver
# (crates/subagents-cli/tests/support/otlp_receiver.py) the trace-export test sends spans to.
# Tests look for target/py/otlp/bin/python, or the path in SUBAGENTS_OTLP_PY.
otlp_dir="${py_root}/otlp"
otlp_want='opentelemetry-proto>=1.20,<2'
if [[ "${A2A_PY_FORCE:-}" != "1" && -x "${otlp_dir}/bin/python" && -f "${otlp_dir}/.subagents-stamp" \
      && "$(cat "${otlp_dir}/.subagents-stamp")" == "${otlp_want}" ]]; then
  echo "setup-python: otlp ready (${otlp_want})"
else
  echo "setup-python: creating ${otlp_dir} with: ${otlp_want}"
  rm -rf "${otlp_dir}"
  mkdir -p "${py_root}"
  "${python}" -m venv "${otlp_dir}"
  "${otlp_dir}/bin/python" -m pip install --quiet --disable-pip-version-check "${otlp_want}"
  "${otlp_dir}/bin/python" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2'
  echo "${otlp_want}" >"${otlp_dir}/.subagents-stamp"
  echo "setup-python: otlp installed: $("${otlp_dir}/bin/python" -m pip show opentelemetry-proto | grep '^Version')"
fi

# target/py/mcp-2x : the official Python MCP SDK 2.x, for the MCP client interop test
# (crates/subagent-mcp/tests/it/mcp_interop_py.rs runs tests/support/py_mcp_server.py with it).
# Tests look for target/py/mcp-2x/bin/python, or the path in SUBAGENTS_MCP_PY.
mcp_dir="${py_root}/mcp-2x"
mcp_want='mcp==2.3.0'
if [[ "${A2A_PY_FORCE:-}" != "1" && -x "${mcp_dir}/bin/python" && -f "${mcp_dir}/.subagents-stamp" \
      && "$(cat "${mcp_dir}/.subagents-stamp")" == "${mcp_want}" ]]; then
  echo "setup-python: mcp-2x ready (${mcp_want})"
else
  echo "setup-python: creating ${mcp_dir} with: ${mcp_want}"
  rm -rf "${mcp_dir}"
  mkdir -p "${py_root}"
  "${python}" -m venv "${mcp_dir}"
  "${mcp_dir}/bin/python" -m pip install --quiet --disable-pip-version-check "${mcp_want}"
  "${mcp_dir}/bin/python" -c 'import mcp.server.mcpserver, mcp_types'
  echo "${mcp_want}" >"${mcp_dir}/.subagents-stamp"
  echo "setup-python: mcp-2x installed: $("${mcp_dir}/bin/python" -m pip show mcp | grep '^Version')"
fi
