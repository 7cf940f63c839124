//! The integration tests of `task-tool`, one test binary (`tests/it`): one module per area.

mod common;

mod approval;
mod background_default;
mod budget;
mod concurrency;
mod described;
mod dispatch;
mod fork;
mod offered;
mod registration;
mod steer;
mod typed;
