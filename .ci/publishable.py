#!/usr/bin/env python3
"""Fails when a crate meant for crates.io needs one that is not.

A package is publishable unless its manifest says `publish = false`. Cargo strips
dev-dependencies without a version when it packages a crate, but a normal or build dependency
(optional ones included: a feature can turn them on) must exist on the registry, so a
publishable crate must not depend on an unpublished one that way. Reads `cargo metadata`.
"""
import json
import subprocess
import sys

meta = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
)
members = {p["name"]: p for p in meta["packages"]}
unpublished = {n for n, p in members.items() if p.get("publish") == []}
problems = []
for name, pkg in sorted(members.items()):
    if name in unpublished:
        continue
    for dep in pkg["dependencies"]:
        if dep["name"] in unpublished and dep["kind"] in (None, "build"):
            how = "optional " if dep.get("optional") else ""
            problems.append(
                f"{name} ({pkg['manifest_path']}): {how}{dep['kind'] or 'normal'} dependency "
                f"on `{dep['name']}`, which has `publish = false`"
            )
for p in problems:
    print(f"error: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
publishable = sorted(set(members) - unpublished)
print(f"{len(publishable)} publishable crates, none needs an unpublished one: {', '.join(publishable)}")
