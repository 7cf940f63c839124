#!/usr/bin/env bash
# The semver gate: the public API of the SPI (`subagent-spi`, the plugin contract) and of
# `subagent-core` (the stock policy plugins may use) against the last release, with
# cargo-semver-checks (rustdoc JSON on this stable toolchain). A change that would break a crate
# compiled against the release fails here unless the workspace version says it is a breaking
# release.
#
# The last release is the commit in .ci/semver-baseline: since 2026-11-27 the 0.3.0 cut (issue
# 29; the SPI's one planned break, docs/migrating-to-spi-0.3.md). No tags are pushed, so the
# commit is named; a fresh clone has the history. Move it when a release is cut.
set -euo pipefail
cd "$(dirname "$0")/.."
baseline="$(tr -d '[:space:]' < .ci/semver-baseline)"
if ! command -v cargo-semver-checks >/dev/null 2>&1; then
    cargo install --locked cargo-semver-checks
fi
if ! git cat-file -e "${baseline}^{commit}" 2>/dev/null; then
    echo "semver: the baseline ${baseline} is not in this clone (a shallow clone?)" >&2
    exit 1
fi
# The facade (`subagents`) is not gated: checked by hand on 2026-11-26 it took 12 minutes on
# this machine (rustdoc of every dependency, twice), a third of CI's budget. Its CHANGELOG
# records its changes; gating it needs a cached baseline rustdoc (`--baseline-rustdoc`).
for crate in subagent-spi subagent-core; do
    echo "semver: ${crate} against ${baseline}"
    cargo semver-checks check-release --package "${crate}" --baseline-rev "${baseline}"
done
