//! `SendMessage` delivery overhead (issue 28): a message sent to a running background task by
//! the host (`TaskTool::send_message`: find the task, check it, queue the message) and taken
//! by the run at its turn boundary (`Inbox::take`), the child's own work excluded.
#![allow(missing_docs)]

mod common;

use std::sync::{Arc, Mutex};

use criterion::{Criterion, criterion_group, criterion_main};
use subagent_spi::*;
use subagent_testkit::{FnKind, fn_ref};
use task_tool::{Dispatch, TaskTool};

fn bench_send(c: &mut Criterion) {
    let rt = common::runtime(1);
    // The child hands its inbox out, then waits to be stopped.
    let slot: Arc<Mutex<Option<Arc<dyn MessageInbox>>>> = Arc::default();
    let kind = {
        let slot = slot.clone();
        FnKind::new()
            .agent("listener", move |_c, ctx| {
                let slot = slot.clone();
                async move {
                    *slot.lock().expect("slot") = ctx.messages().cloned();
                    ctx.cancel().cancelled().await;
                    Ok(TaskOutcome::with_status("stopped", TaskStatus::Cancelled))
                }
            })
            .receiving_messages()
            .into_type()
    };
    let (task, id, inbox) = rt.block_on(async {
        let task = TaskTool::builder()
            .subagent_type(kind)
            .subagent_reference(fn_ref("listener"))
            .build()
            .await
            .expect("builds");
        let call = TaskCall::new("listener", "d", "p")
            .in_background(true)
            .with_name("ears");
        let Ok(Dispatch::Background { task_id, .. }) =
            task.dispatch(call, &TaskContext::new()).await
        else {
            panic!("started");
        };
        let inbox = loop {
            if let Some(i) = slot.lock().expect("slot").clone() {
                break i;
            }
            tokio::task::yield_now().await;
        };
        (task, task_id, inbox)
    });
    let text = "Focus on the parser first; skip the tests for now.";
    c.bench_function("send_message_by_id_and_take", |b| {
        b.iter(|| {
            let r = task.send_message(&id, text).expect("delivered");
            std::hint::black_box(r);
            std::hint::black_box(inbox.take());
        })
    });
    c.bench_function("send_message_by_name_and_take", |b| {
        b.iter(|| {
            let r = task.send_message("ears", text).expect("delivered");
            std::hint::black_box(r);
            std::hint::black_box(inbox.take());
        })
    });
    rt.block_on(async {
        let _ = task.stop(&id).await;
    });
}

criterion_group!(benches, bench_send);
criterion_main!(benches);
