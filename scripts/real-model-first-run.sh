#!/usr/bin/env bash
# The README's first run on the shared real model (`../shared/realmodel/setup.sh`: llama-server
# with Qwen2.5-Coder-1.5B-Instruct on 127.0.0.1:8080), timed with default flags: the README's
# calculator agent in a fresh directory, `subagents run "Use the calculator agent to compute
# 17 * 23, then tell me the result." --model openai-compatible:...`, no terminal (stdin
# /dev/null). Each round runs every binary given, in turn (ABAB...), and prints its wall time,
# exit code, the load average when it started and its answer; outputs stay in $OUT.
#
#   bash scripts/real-model-first-run.sh ROUNDS BIN [BIN...]
#   SPEC=openai-compatible:...@http://127.0.0.1:8080/v1 OUT=/tmp/first-run bash scripts/...
set -u
ROUNDS=$1; shift
SPEC=${SPEC:-openai-compatible:qwen2.5-coder-1.5b-instruct@http://127.0.0.1:8080/v1}
OUT=${OUT:-$(mktemp -d)}
DIR=$OUT/workdir
# shellcheck source=scripts/calculator-agent.sh
. "$(dirname "$0")/calculator-agent.sh"
PROMPT="Use the calculator agent to compute 17 * 23, then tell me the result."
for r in $(seq 1 "$ROUNDS"); do
  i=0
  for bin in "$@"; do
    i=$((i + 1))
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s.%N)
    (cd "$DIR" && HOME=$DIR XDG_DATA_HOME=$DIR/.data "$bin" run "$PROMPT" --model "$SPEC" \
      > "$OUT/run-$i-$r.out" 2> "$OUT/run-$i-$r.err" < /dev/null)
    code=$?
    end=$(date +%s.%N)
    printf 'bin %s round %s: %.1f s, exit %s, load %s, answer: %s\n' "$i" "$r" \
      "$(echo "$end - $start" | bc)" "$code" "$load" \
      "$(head -c 100 "$OUT/run-$i-$r.out" | tr '\n' ' ')"
  done
done
