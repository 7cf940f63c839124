//! `subagent-sandbox`: the namespace sandbox's helper of `subagent-tools`, for programs that do
//! not call `subagent_tools::sandbox_helper_main()` themselves. Name it in
//! `SandboxPolicy::helper` or `$SUBAGENTS_SANDBOX_HELPER`; it is not meant to be run by hand.

fn main() {
    subagent_tools::sandbox_helper_main();
    eprintln!(
        "subagent-sandbox is the sandbox helper of subagent-tools: a program names it in \
         SandboxPolicy::helper or $SUBAGENTS_SANDBOX_HELPER; it is not run by hand"
    );
    std::process::exit(2);
}
