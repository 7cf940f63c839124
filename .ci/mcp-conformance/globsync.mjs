// fs.globSync for Node 20 (it arrived in Node 22): the conformance suite imports it. Patterns
// with `*`, `**` and `?` relative to `cwd` (or absolute), which is what the suite uses.
import { readdirSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";

function toRegExp(pattern) {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*" && pattern[i + 1] === "*") {
      re += ".*";
      i++;
      if (pattern[i + 1] === "/") i++;
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

export function globSync(patterns, options = {}) {
  const cwd = options.cwd ? String(options.cwd) : process.cwd();
  const out = [];
  for (const pattern of Array.isArray(patterns) ? patterns : [patterns]) {
    const abs = isAbsolute(pattern);
    const root = abs ? "/" : cwd;
    const re = toRegExp(abs ? relative("/", pattern) : pattern);
    let entries = [];
    try {
      entries = readdirSync(root, { recursive: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const rel = String(e).split(sep).join("/");
      if (re.test(rel)) out.push(abs ? join("/", rel) : rel);
    }
  }
  return out;
}
