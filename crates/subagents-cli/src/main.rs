//! # subagents (the command)
//!
//! The `subagents` command is the library [`subagents_cli::Cli`] with nothing added: a crate
//! that adds a kind builds the same command with its kind registered (see the library's docs).

fn main() {
    std::process::exit(subagents_cli::Cli::new().run());
}
