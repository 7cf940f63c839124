//! The in-process test kind lives in `subagent-testkit`.
#![allow(dead_code, unused_imports)]

pub(crate) use subagent_testkit::{FN_KIND as KIND, FnKind, fn_ref};
