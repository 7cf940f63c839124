//! The integration tests of `subagent-tools`, one test binary (`tests/it`): one module per area.
//!
//! `.ci/run` runs `sandbox` alone (`cargo test -p subagent-tools --test it -- sandbox::
//! --nocapture`) to report whether the Bash confinement tests ran or skipped for want of Landlock.

mod bash;
mod file_tools;
mod hostile_edit;
mod hostile_links;
mod protected_files;
mod sandbox;
mod todo;
mod web_fetch;
