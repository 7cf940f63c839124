//! A third-party `subagents` command: every subcommand of the stock one, plus a kind of its own
//! (here the testkit's in-process `FN` kind with one agent, `shout`). Built as the package's
//! `custom_cli` binary with `--features custom-cli-example`.
use subagent_testkit::{FnKind, fn_ref};
use subagents::spi::TaskOutcome;

fn main() {
    let shout = |call: subagents::spi::TaskCall, _ctx| async move {
        Ok(TaskOutcome::completed(call.prompt.to_uppercase()))
    };
    let kind = FnKind::new().agent("shout", shout).into_type();
    let cli = subagents_cli::Cli::new()
        .kind(kind)
        .reference(fn_ref("shout?Shouts its prompt"));
    std::process::exit(cli.run());
}
