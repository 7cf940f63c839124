//! Usage from a remote child across processes: `subagents serve` (one process) hosts a
//! coordinator that delegates to a leaf; `subagents call … --json` (another process) shows the
//! served run's tokens and its leaf in its usage tree, reported through the A2A usage extension.

use crate::common;
use common::OutputOk;

use common::{spawn_serve, subagents_in, team};
use subagent_testkit::Reply;

#[test]
fn call_json_shows_the_served_runs_usage_tree_and_cost() {
    let (rt, model_server) = common::scripted();
    model_server.push(
        Reply::task_call("leaf", "LEAF")
            .with_usage(100, 10)
            .with_model("m"),
    );
    model_server.push(
        Reply::text("the fact")
            .with_usage(4000, 1000)
            .with_model("m"),
    );
    model_server.push(Reply::text("coordinated").with_usage(7, 3).with_model("m"));

    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path();
    let serve = spawn_serve(&rt, root, |cmd| {
        cmd.args(["--model", &model_server.openai_model("m")])
            .arg("--agents")
            .arg(team());
    });
    let base = &serve.base;

    let cfg = root.join("subagents.toml");
    std::fs::write(&cfg, "[prices]\n\"m\" = { input = 1.0, output = 2.0 }\n").expect("config");
    let v = subagents_in(root)
        .arg("--config")
        .arg(&cfg)
        .args(["call", &format!("{base}/coordinator"), "go", "--json"])
        .json_ok();
    assert_eq!(v["text"], "coordinated", "{v}");
    let usage = &v["usage"];
    assert_eq!(usage["kind"], "A2A", "{v}");
    assert_eq!(usage["usage"]["input_tokens"], 107, "{v}");
    assert_eq!(usage["usage"]["output_tokens"], 13, "{v}");
    assert_eq!(usage["usage"]["turns"], 2, "{v}");
    let leaf = &usage["children"][0];
    assert_eq!(leaf["agent"], "leaf", "{v}");
    assert_eq!(leaf["kind"], "CLAUDE", "{v}");
    assert_eq!(leaf["usage"]["input_tokens"], 4000, "{v}");
    // Priced like a local run: 4000 in at $1/M + 1000 out at $2/M for the leaf.
    assert_eq!(leaf["usage"]["cost_usd"], 0.006, "{v}");
}
