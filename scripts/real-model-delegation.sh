#!/usr/bin/env bash
# Delegation on the shared real model (issue 31's measure, kept by issue 42): five "Use the
# calculator agent to compute A * B, then tell me the result." prompts, unforced, at
# temperature 0, with the README's calculator agent and --yes (its Bash call may run). Per
# prompt: delegated (the calculator ran), relayed (the main agent's answer carries the number
# the calculator answered), correct (the answer holds A * B: the 1.5B calculator often
# multiplies in its head, and wrongly, instead of running python3).
#
#   bash scripts/real-model-delegation.sh BIN LABEL [FLAGS...]     # e.g. --main-tools all
set -u
BIN=$1; LABEL=$2; shift 2
FLAGS=("$@")
SPEC=${SPEC:-openai-compatible:qwen2.5-coder-1.5b-instruct@http://127.0.0.1:8080/v1?temperature=0}
OUT=${OUT:-$(mktemp -d)}
DIR=$OUT/workdir
# shellcheck source=scripts/calculator-agent.sh
. "$(dirname "$0")/calculator-agent.sh"
tot_d=0; tot_r=0; tot_c=0
for pair in "17 23" "45 67" "38 29" "64 81" "123 45"; do
  set -- $pair; a=$1; b=$2; want=$((a * b))
  start=$(date +%s.%N)
  (cd "$DIR" && HOME=$DIR "$BIN" --store memory run \
    "Use the calculator agent to compute $a * $b, then tell me the result." \
    --model "$SPEC" --output-format stream-json --yes "${FLAGS[@]}" \
    > "$OUT/$LABEL-$a.jsonl" 2> "$OUT/$LABEL-$a.err" < /dev/null)
  end=$(date +%s.%N)
  read -r d r c <<< "$(python3 - "$want" "$OUT/$LABEL-$a.jsonl" <<'PY'
import json, re, sys
want, path = sys.argv[1], sys.argv[2]
child, main, ran = [], '', False
for line in open(path):
    try:
        v = json.loads(line)
    except ValueError:
        continue
    if v.get('type') == 'progress' and v.get('agent') == 'calculator':
        ran = True
        if v.get('event') == 'text_delta':
            child.append(v.get('text', ''))
    elif v.get('type') == 'result':
        main = v.get('text', '')
nums = lambda s: re.findall(r'\d+', s.replace(',', ''))
c = nums(''.join(child))
print(int(ran), int(ran and bool(c) and c[-1] in nums(main)), int(want in nums(main)))
PY
)"
  tot_d=$((tot_d + d)); tot_r=$((tot_r + r)); tot_c=$((tot_c + c))
  printf '%s %s*%s: delegated %s, relayed %s, correct %s, %.0f s\n' "$LABEL" "$a" "$b" "$d" "$r" "$c" \
    "$(echo "$end - $start" | bc)"
done
echo "$LABEL: delegated $tot_d/5, relayed $tot_r/5, correct $tot_c/5 (load $(cut -d' ' -f1-3 /proc/loadavg))"
