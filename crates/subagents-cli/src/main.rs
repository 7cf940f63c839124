//! # subagents (the command)
//!
//! The `subagents` command is the library [`subagents_cli::Cli`] with nothing added: a crate
//! that adds a kind builds the same command with its kind registered (see the library's docs).

/// jemalloc rather than the system allocator (feature `jemalloc`, default): see Cargo.toml.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    std::process::exit(subagents_cli::Cli::new().run());
}
