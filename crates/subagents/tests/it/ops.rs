//! The command's operations besides runs, through the facade (issue 29): a message to a remote
//! A2A agent ([`A2aCall`]), pruning a store ([`prune_store`]) and the background tasks a store
//! keeps ([`Subagents::tasks`], [`Subagents::store_view`]); over real HTTP on 127.0.0.1, real
//! SQLite files and the scripted model server.

use crate::common;
use crate::common::Built as _;

#[cfg(feature = "store")]
use std::path::Path;
use std::time::Duration;

#[cfg(feature = "store")]
use subagent_testkit::{FnKind, fn_ref};
#[cfg(feature = "store")]
use subagents::{Dispatch, PruneError, PruneOptions, Subagents, TaskCall, prune_store};
use subagents::{TaskContext, TaskStatus};

// ---- call ----------------------------------------------------------------------------------

#[cfg(feature = "server")]
mod call {
    use super::*;
    use common::{bash_call, serve_a2a, team_builder, write_agent};
    use subagent_testkit::{Reply, ScriptedModelServer};
    use subagents::{A2aCall, CallError, ServeOptions};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_returns_the_answer_and_the_remote_task_s_ids() {
        let model = ScriptedModelServer::start().await;
        model.push(Reply::text("LEAF-ANSWER"));
        let served = team_builder(&model).built().await;
        let (url, _server) = serve_a2a(served, &ServeOptions::new().agents(["leaf"]), "leaf").await;

        let answer = A2aCall::new(&url, "look it up")
            .send(TaskContext::new())
            .await
            .expect("answers");
        assert_eq!(answer.outcome.status, TaskStatus::Completed, "{answer:?}");
        assert_eq!(answer.outcome.text, "LEAF-ANSWER");
        assert_eq!(answer.agent, "leaf");
        assert_eq!(answer.kind.as_str(), "A2A");
        // A completed task takes no reply: the session names its context (for a new task in
        // it), not the task.
        assert!(answer.context_id.is_some(), "{answer:?}");
        assert_eq!(answer.task_id, None, "{answer:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_question_without_an_approver_ends_needs_input_and_the_reply_continues_that_task() {
        let model = ScriptedModelServer::start().await;
        let dir = tempfile::tempdir().unwrap();
        let agents = write_agent(
            dir.path(),
            "worker",
            "---\nname: worker\ndescription: Runs commands.\ntools: Bash\nmodel: worker-model\n---\nWork.\n",
        );
        std::fs::create_dir_all(dir.path().join("work/out")).unwrap();
        let served = subagents::Subagents::builder()
            .named_model("worker-model", model.openai_model("worker-model"))
            .agents_dir(&agents)
            .workspace(dir.path().join("work"))
            .builtin_agents(false)
            .built()
            .await;
        let (url, _server) = serve_a2a(served, &ServeOptions::new(), "worker").await;
        model.push_for_model("worker-model", bash_call("touch out/asked.txt"));
        model.push_for_model("worker-model", Reply::text("touched it"));

        let first = A2aCall::new(&url, "touch the file")
            .send(TaskContext::new())
            .await
            .expect("answers");
        assert_eq!(first.outcome.status, TaskStatus::NeedsInput, "{first:?}");
        let task = first.task_id.clone().expect("the remote task's id");
        let context = first.context_id.clone().expect("its context");

        let reply = A2aCall::new(&url, "yes")
            .task_id(&task)
            .context_id(&context)
            .send(TaskContext::new())
            .await
            .expect("answers");
        assert_eq!(reply.outcome.status, TaskStatus::Completed, "{reply:?}");
        assert_eq!(reply.outcome.text, "touched it");
        assert_eq!(reply.context_id.as_deref(), Some(context.as_str()));
        assert!(dir.path().join("work/out/asked.txt").exists());
        // The reply went to the task that asked: the peer has that one task, completed.
        let list = common::a2a_rpc(&url, "ListTasks", serde_json::json!({})).await;
        let tasks = list["result"]["tasks"].as_array().expect("tasks");
        assert_eq!(tasks.len(), 1, "{list}");
        assert_eq!(tasks[0]["id"], task.as_str(), "{list}");
        assert_eq!(
            tasks[0]["status"]["state"], "TASK_STATE_COMPLETED",
            "{list}"
        );
    }

    /// A peer that accepts connections and never answers.
    async fn silent_peer() -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                open.push(s);
            }
        });
        (format!("http://user:hunter2@{addr}/agent"), held)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_silent_peer_is_a_timeout_naming_the_url_without_its_password() {
        let (url, _held) = silent_peer().await;
        let err = A2aCall::new(&url, "hello")
            .timeout(Duration::from_secs(1))
            .send(TaskContext::new())
            .await
            .expect_err("times out");
        let CallError::Timeout { url: named, after } = &err else {
            panic!("a timeout: {err:?}");
        };
        assert_eq!(*after, Duration::from_secs(1));
        assert!(!named.contains("hunter2"), "{named}");
        assert!(err.to_string().starts_with("no answer from "), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelling_stops_the_wait_for_the_agent_s_card() {
        let (url, _held) = silent_peer().await;
        let ctx = TaskContext::new();
        let cancel = ctx.cancel().clone();
        let call = tokio::spawn(A2aCall::new(&url, "hello").send(ctx));
        cancel.cancel();
        // The default timeout is five minutes: only the cancellation can end it.
        let err = call.await.unwrap().expect_err("cancelled");
        assert!(
            matches!(
                &err,
                CallError::Failed(subagents::SubagentError::Cancelled { .. })
            ),
            "{err:?}"
        );
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_agent_at_the_url_is_a_resolve_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let err = A2aCall::new(format!("http://{addr}/nobody"), "hello")
            .send(TaskContext::new())
            .await
            .expect_err("nobody there");
        assert!(matches!(err, CallError::Resolve(_)), "{err:?}");
    }
}

// ---- tasks and prune -----------------------------------------------------------------------

/// `sqlite:DIR/store.db`.
#[cfg(feature = "store")]
fn sqlite(dir: &Path) -> subagents::store::StoreUrl {
    format!("sqlite:{}", dir.join("store.db").display())
        .parse()
        .expect("url")
}

/// Runs `echo` (answers its prompt in capitals) and `fail` (fails) in the background on an
/// assembly with the store at `url`, waits for both and flushes; returns their task ids.
#[cfg(feature = "store")]
async fn two_finished_tasks(url: &subagents::store::StoreUrl) -> (String, String) {
    let kind = FnKind::new()
        .agent("echo", |call: TaskCall, _| async move {
            Ok(subagents::TaskOutcome::completed(
                call.prompt.to_uppercase(),
            ))
        })
        .agent("fail", |_, _| async move {
            Err(subagents::SubagentError::InvalidInput(
                "broken on purpose".into(),
            ))
        })
        .into_type();
    let agents = Subagents::builder()
        .builtin_agents(false)
        .kind(kind)
        .references([fn_ref("echo?Echoes"), fn_ref("fail?Fails")])
        .store(url.clone())
        .built()
        .await;
    let mut ids = Vec::new();
    for agent in ["echo", "fail"] {
        let call = TaskCall::new(agent, format!("{agent} it"), "quiet words").in_background(true);
        match agents
            .dispatch(call, &TaskContext::new())
            .await
            .expect("starts")
        {
            Dispatch::Background { task_id, .. } => ids.push(task_id),
            other => panic!("{other:?}"),
        }
    }
    agents
        .finish_background(&subagents::CancellationToken::new())
        .await;
    agents.flush().await.expect("flushed");
    (ids[0].clone(), ids[1].clone())
}

#[cfg(feature = "store")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_view_lists_shows_and_stops_the_tasks_another_assembly_kept() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite(dir.path());
    let (echo, fail) = two_finished_tasks(&url).await;

    let view = Subagents::store_view(url).build().await.expect("opens");
    assert!(view.agents().is_empty(), "no agent of its own");
    let tasks = view.tasks();
    let list = tasks.list(10).await.expect("lists");
    assert_eq!(list.len(), 2, "{list:?}");
    let listed = list
        .iter()
        .find(|t| t.task_id == echo)
        .expect("echo listed");
    assert_eq!(listed.agent, "echo");
    assert_eq!(listed.kind, "FN");
    assert_eq!(listed.description, "echo it");
    assert_eq!(listed.status, TaskStatus::Completed);
    assert_eq!(listed.output, None, "a listing carries no output");

    let shown = tasks.show(&echo).await.expect("shows");
    assert_eq!(shown.output.as_deref(), Some("QUIET WORDS"));
    assert_eq!(shown.error, None);
    // The JSON of `tasks show --json`.
    let json = serde_json::to_value(&shown).unwrap();
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "agent",
            "description",
            "elapsed_ms",
            "kind",
            "note",
            "output",
            "started_at",
            "status",
            "task_id"
        ],
        "{json}"
    );
    assert!(
        shown
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("earlier process"),
        "{shown:?}"
    );
    assert_eq!(json["status"], "completed");
    assert!(
        json["started_at"].as_u64().unwrap() > 1_600_000_000_000,
        "{json}"
    );

    let failed = tasks.show(&fail).await.expect("shows");
    assert_eq!(failed.status, TaskStatus::Failed);
    assert!(
        failed
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("broken on purpose"),
        "{failed:?}"
    );

    // Stopping a task that ended reports its end.
    let stopped = tasks.stop(&echo).await.expect("reports");
    assert_eq!(stopped.status, TaskStatus::Completed);
    assert_eq!(stopped.output.as_deref(), Some("QUIET WORDS"));

    let unknown = tasks.show("task_nope").await.expect_err("unknown");
    assert!(unknown.to_string().contains("task_nope"), "{unknown}");
}

#[cfg(feature = "store")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_counts_in_a_dry_run_then_drops_what_is_older_than_asked() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite(dir.path());
    two_finished_tasks(&url).await;
    // Their results are seconds old: the store's own bound (30 minutes) keeps them.
    let kept = prune_store(&url, &PruneOptions::new())
        .await
        .expect("prunes");
    assert_eq!(kept.tasks, 0, "{kept:?}");

    let dry = PruneOptions::new().older_than(Duration::ZERO).dry_run(true);
    let would = prune_store(&url, &dry).await.expect("counts");
    assert!(would.dry_run);
    assert_eq!(would.tasks, 2, "{would:?}");
    assert_eq!(would.store, url.redacted());
    let view = Subagents::store_view(url.clone()).build().await.unwrap();
    assert_eq!(
        view.tasks().list(10).await.unwrap().len(),
        2,
        "a dry run drops nothing"
    );
    drop(view);

    let done = prune_store(&url, &PruneOptions::new().older_than(Duration::ZERO))
        .await
        .expect("prunes");
    assert!(!done.dry_run);
    assert_eq!(done.tasks, 2, "{done:?}");
    let view = Subagents::store_view(url).build().await.unwrap();
    assert!(view.tasks().list(10).await.unwrap().is_empty());
}

#[cfg(feature = "store")]
#[tokio::test]
async fn prune_refuses_memory_and_creates_no_missing_file() {
    let err = prune_store(&"memory".parse().unwrap(), &PruneOptions::new())
        .await
        .expect_err("memory");
    assert!(matches!(err, PruneError::Memory), "{err:?}");

    let dir = tempfile::tempdir().unwrap();
    let url = sqlite(&dir.path().join("not-yet"));
    let report = prune_store(&url, &PruneOptions::new())
        .await
        .expect("nothing to do");
    assert_eq!((report.tasks, report.sessions, report.a2a_tasks), (0, 0, 0));
    assert!(
        !dir.path().join("not-yet").exists(),
        "no file or directory created"
    );
}
