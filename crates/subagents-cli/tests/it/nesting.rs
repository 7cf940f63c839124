//! Nested delegation through the `subagents run` binary, over real HTTP with the scripted
//! model server (the same agent files as the facade's tests).

use crate::common;

use subagent_testkit::Reply;

#[test]
fn run_main_coordinator_leaf_answers_with_the_leaf_text() {
    let (_rt, server) = common::scripted();
    server.push(Reply::task_call("coordinator", "please"));
    server.push(Reply::task_call("leaf", "please"));
    server.push(Reply::text("LEAF-ANSWER-42"));
    server.push(Reply::text("the leaf says LEAF-ANSWER-42"));
    server.push(Reply::text("Final: LEAF-ANSWER-42"));
    let out = common::team_run(&server, "What is the answer?", &[])
        .assert()
        .success();
    let o = out.get_output();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("LEAF-ANSWER-42"), "{stdout}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    assert_eq!(
        reqs[1].tool_names(),
        ["Read", "SendMessage", "Task", "TaskOutput", "TaskStop"],
        "the coordinator is offered Task"
    );
    assert_eq!(reqs[2].tool_names(), ["Grep", "Read"], "the leaf is not");
    // Progress (plain lines on a pipe): one start and one finish per child, nested by depth.
    let stderr = String::from_utf8_lossy(&o.stderr);
    for agent in ["  coordinator: started", "    leaf: started"] {
        assert_eq!(
            stderr.matches(agent).count(),
            1,
            "{agent} once in:\n{stderr}"
        );
    }
    assert_eq!(stderr.matches("leaf: finished").count(), 1, "{stderr}");
}

#[test]
fn run_with_max_depth_1_does_not_offer_task_to_the_coordinator() {
    let (_rt, server) = common::scripted();
    server.push(Reply::task_call("coordinator", "please"));
    server.push(Reply::text("no delegation here"));
    server.push(Reply::text("done"));
    common::team_run(&server, "go", &["--max-depth", "1"])
        .assert()
        .success();
    let reqs = server.requests();
    assert_eq!(reqs[1].tool_names(), ["Read"]);
}
