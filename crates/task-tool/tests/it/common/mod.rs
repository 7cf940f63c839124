//! The in-process test kind lives in `subagent-testkit`.
#![allow(dead_code, unused_imports)]

pub(crate) use subagent_testkit::{FN_KIND as KIND, FnKind, fn_ref};

/// The background task id (`task_…`) a `Task` result names in its text.
pub(crate) fn task_id_in(text: &str) -> String {
    text.split_whitespace()
        .find(|w| w.starts_with("task_"))
        .unwrap_or_else(|| panic!("a task id in {text:?}"))
        .trim_end_matches('.')
        .to_string()
}
