//! Runs a directory of Claude-style agents against an OpenAI-compatible endpoint.
//!
//! ```text
//! OPENAI_BASE_URL=http://127.0.0.1:11434/v1 SUBAGENTS_MODEL=qwen2.5 \
//!   cargo run -p subagent-claude --example run_agents -- <agents-dir> [agent-name] [prompt]
//! ```
//!
//! Environment:
//! - `OPENAI_BASE_URL` (required): the endpoint, e.g. `http://127.0.0.1:11434/v1` (Ollama),
//!   `http://127.0.0.1:8080/v1` (llama.cpp), `https://api.openai.com/v1`.
//! - `SUBAGENTS_MODEL` (required): the model id to send, e.g. `qwen2.5` or `gpt-4.1-mini`.
//! - `OPENAI_API_KEY` (optional): sent as a bearer token when set.
//! - `SUBAGENTS_ALLOW_WRITES=1` (optional): approve edits and commands for agents in the
//!   `default` permission mode; without it they are refused and agents can only read.
//!
//! Every agent (or only `agent-name`) gets `prompt` (default: a short self-introduction
//! request) and its final answer is printed. Tools are the built-in ones, confined to the
//! current directory. When no endpoint is configured or reachable the example prints what to set
//! and exits with code 2.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use subagent_claude::{ClaudeSubagentReferences, ClaudeSubagentType, scan_dir};
use subagent_core::FixedApprover;
use subagent_providers::OpenAiModel;
use subagent_runtime::ModelRegistry;
use subagent_spi::{TaskCall, TaskContext};

const SETUP: &str = "set OPENAI_BASE_URL to an OpenAI-compatible endpoint (e.g. \
http://127.0.0.1:11434/v1 for Ollama or http://127.0.0.1:8080/v1 for llama.cpp), SUBAGENTS_MODEL \
to a model it serves (e.g. qwen2.5), and OPENAI_API_KEY if it needs a key";

/// `host:port` of an http(s) URL, for a reachability check.
fn host_port(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    let authority = authority.rsplit('@').next()?;
    if authority.is_empty() {
        return None;
    }
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()) && !authority.ends_with(']'));
    Some(if has_port {
        authority.to_string()
    } else if scheme.eq_ignore_ascii_case("https") {
        format!("{authority}:443")
    } else {
        format!("{authority}:80")
    })
}

async fn reachable(url: &str) -> bool {
    let Some(addr) = host_port(url) else {
        return false;
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
}

fn unavailable(why: &str) -> ExitCode {
    eprintln!("run_agents: {why}; {SETUP}.");
    ExitCode::from(2)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: run_agents <agents-dir> [agent-name] [prompt]");
        return ExitCode::from(2);
    };
    let only = args.next().filter(|s| !s.is_empty() && s != "*");
    let prompt = args.next().unwrap_or_else(|| {
        "In two sentences: who are you and what kind of task should I give you?".to_string()
    });

    let base_url = std::env::var("OPENAI_BASE_URL").unwrap_or_default();
    let model_id = std::env::var("SUBAGENTS_MODEL").unwrap_or_default();
    if base_url.trim().is_empty() || model_id.trim().is_empty() {
        return unavailable("OPENAI_BASE_URL and SUBAGENTS_MODEL must both be set");
    }
    if !reachable(&base_url).await {
        return unavailable(&format!("no server answers at {base_url}"));
    }

    let model = match OpenAiModel::builder()
        .provider_name("openai-compatible")
        .base_url(base_url.trim())
        .api_key_opt(
            std::env::var("OPENAI_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
        )
        .model(model_id.trim())
        .build()
    {
        Ok(m) => Arc::new(m),
        Err(e) => return unavailable(&format!("cannot configure the model: {e}")),
    };
    // Every name an agent file may use (sonnet, opus, inherit...) routes to the one model.
    let mut models = ModelRegistry::new().with_model(model_id.trim(), model);
    for alias in ["sonnet", "opus", "haiku"] {
        models.alias(alias, model_id.trim());
    }
    models.set_default(model_id.trim());

    let approver = if std::env::var("SUBAGENTS_ALLOW_WRITES").as_deref() == Ok("1") {
        FixedApprover::allow_all()
    } else {
        FixedApprover::deny_all("set SUBAGENTS_ALLOW_WRITES=1 to approve edits and commands.")
    };
    let ty = ClaudeSubagentType::builder()
        .models(models)
        .approver(Arc::new(approver))
        .build();

    let report = match scan_dir(dir.clone()).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("run_agents: {e}");
            return ExitCode::FAILURE;
        }
    };
    for s in &report.skipped {
        eprintln!("skipped {}: {}", s.path.display(), s.reason);
    }
    for a in &report.loaded {
        for w in &a.warnings {
            eprintln!("warning {}: {w}", a.path.display());
        }
    }
    println!(
        "{} agents loaded from {} ({} skipped)",
        report.loaded.len(),
        dir.display(),
        report.skipped.len()
    );

    let mut failures = 0;
    for a in &report.loaded {
        let name = &a.definition.name;
        if only.as_ref().is_some_and(|o| !o.eq_ignore_ascii_case(name)) {
            continue;
        }
        let reference = ClaudeSubagentReferences::file(&a.path);
        let def = match ty.resolver().resolve(&reference).await {
            Ok(d) => d,
            Err(e) => {
                eprintln!("{name}: {e}");
                failures += 1;
                continue;
            }
        };
        let ctx = TaskContext::new().child(name.clone(), None);
        let call = TaskCall::new(name.clone(), "example run", prompt.clone());
        println!("\n=== {name} ===");
        match ty.executor().execute(call, def, ctx).await {
            Ok(out) => println!(
                "{}\n[{} · {} turns · {} in / {} out tokens]",
                out.text.trim(),
                out.status,
                out.usage.turns,
                out.usage.input_tokens,
                out.usage.output_tokens
            ),
            Err(e) => {
                eprintln!("{name} failed: {e}");
                failures += 1;
            }
        }
    }
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
