//! `subagents-http`: the stock `subagents` command (every subcommand) with the HTTP kind added;
//! its agents come from the JSON references named in `SUBAGENTS_HTTP_AGENTS` (files, `:`-separated).
fn main() {
    let mut cli = subagents_cli::Cli::new().kind(subagent_http::kind());
    let files = std::env::var("SUBAGENTS_HTTP_AGENTS").unwrap_or_default();
    for file in files.split(':').filter(|f| !f.is_empty()) {
        let read = std::fs::read_to_string(file).map_err(|e| e.to_string());
        match read.and_then(|t| subagent_http::reference_from_json(&t).map_err(|e| e.to_string())) {
            Ok(reference) => cli = cli.reference(reference),
            Err(e) => {
                eprintln!("subagents-http: {file}: {e}");
                std::process::exit(2);
            }
        }
    }
    std::process::exit(cli.run());
}
