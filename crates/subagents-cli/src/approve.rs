//! Who answers tool calls that must be approved: a prompt on the terminal, `--yes`, or nobody
//! (denied, with a message the model reads).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use indicatif::MultiProgress;
use subagents::async_trait;
use subagents::policy::FixedApprover;
use subagents::spi::{ApprovalDecision, ApprovalRequest, Approver};

use crate::args::PermissionArgs;
use crate::output::terminal_safe;

/// What the model reads when nobody can be asked.
pub(crate) const NO_TERMINAL: &str = "this run has no terminal to ask the user on, and it was not \
started with --yes. The user can allow such calls with a permission rule (permissions.allow in \
.claude/settings.json or [permissions] allow in subagents.toml), a --permission-mode, or --yes.";

/// True when a person can be asked: stdin and stderr are terminals.
pub(crate) fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The approver for a command: `--yes` approves everything; on a terminal (when `prompt` is
/// allowed) a prompt on stderr asks; otherwise every request is denied with [`NO_TERMINAL`].
pub(crate) fn approver(
    args: &PermissionArgs,
    prompt: bool,
    multi: Option<MultiProgress>,
) -> Arc<dyn Approver> {
    if args.yes {
        Arc::new(FixedApprover::allow_all())
    } else if prompt && interactive() {
        Arc::new(TerminalApprover {
            multi,
            one_at_a_time: tokio::sync::Mutex::new(()),
            always: std::sync::Mutex::new(std::collections::HashSet::new()),
        })
    } else {
        Arc::new(FixedApprover::deny_all(NO_TERMINAL))
    }
}

/// An approver that remembers the calls it denied, for the closing line of `run` and `task`
/// ([`Counted::closing_line`]): a denied call is otherwise told only to the model, and on a
/// pipe the progress line that shows it is cut short.
pub(crate) struct Counted {
    inner: Arc<dyn Approver>,
    /// How many calls were denied, per tool, in the order first seen.
    denied: std::sync::Mutex<Vec<(String, usize)>>,
}

impl Counted {
    /// Counts what `inner` denies.
    pub(crate) fn new(inner: Arc<dyn Approver>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            denied: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// "2 tool calls were denied (Bash ×2): ..." naming how to allow them; `None` when none
    /// was.
    pub(crate) fn closing_line(&self) -> Option<String> {
        let denied = self
            .denied
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let total: usize = denied.iter().map(|(_, n)| n).sum();
        if total == 0 {
            return None;
        }
        let tools = denied
            .iter()
            .map(|(tool, n)| {
                if *n == 1 {
                    terminal_safe(tool).into_owned()
                } else {
                    format!("{} ×{n}", terminal_safe(tool))
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let (calls, were) = if total == 1 {
            ("tool call was", "it")
        } else {
            ("tool calls were", "them")
        };
        let how = if interactive() {
            format!("answer yes when asked, or allow {were} with --yes")
        } else {
            format!("nobody could be asked (no terminal); allow {were} with --yes")
        };
        Some(format!(
            "subagents: {total} {calls} denied ({tools}): {how}, a --permission-mode (e.g. \
             acceptEdits), or a rule in permissions.allow of .claude/settings.json"
        ))
    }
}

#[async_trait]
impl Approver for Counted {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        let tool = request.tool.clone();
        let decision = self.inner.request(request).await;
        if !decision.is_allowed() {
            let mut denied = self
                .denied
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match denied.iter_mut().find(|(t, _)| *t == tool) {
                Some((_, n)) => *n += 1,
                None => denied.push((tool, 1)),
            }
        }
        decision
    }

    fn granted(&self, request: &ApprovalRequest) -> bool {
        self.inner.granted(request)
    }

    fn can_answer(&self, request: &ApprovalRequest) -> bool {
        self.inner.can_answer(request)
    }
}

/// For servers, which never prompt: an approve-everything approver with `--yes`, else none.
pub(crate) fn yes_approver(args: &PermissionArgs) -> Option<Arc<dyn Approver>> {
    args.yes
        .then(|| Arc::new(FixedApprover::allow_all()) as Arc<dyn Approver>)
}

/// Asks on stderr and reads the answer from stdin, one question at a time, with the live
/// progress display suspended while it asks. Parallel agents' questions wait their turn;
/// an "always" answer also answers the questions already waiting for the same rule.
pub(crate) struct TerminalApprover {
    multi: Option<MultiProgress>,
    one_at_a_time: tokio::sync::Mutex<()>,
    /// The session keys ([`ApprovalRequest::session_key`]) answered "always" here.
    always: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl TerminalApprover {
    fn answered_always(&self, request: &ApprovalRequest) -> bool {
        self.always
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&request.session_key())
    }
}

/// Who asks, as the path of agents from the root (`main › reviewer`), each name escaped.
fn asker(r: &ApprovalRequest) -> String {
    if r.agent_path.is_empty() {
        return "main".to_string();
    }
    r.agent_path
        .iter()
        .map(|a| terminal_safe(a).into_owned())
        .collect::<Vec<_>>()
        .join(" › ")
}

/// Why it asks, and the asking run's task id when it has one (two runs of the same agent in
/// parallel are told apart by it).
fn why(r: &ApprovalRequest) -> String {
    let mut why = terminal_safe(&r.reason).into_owned();
    if let Some(id) = &r.task_id {
        why.push_str(&format!(" (task {})", terminal_safe(id)));
    }
    why
}

/// The prompt for one request (terminal-safe): the first line names the asking agent's path
/// and the tool (`main › reviewer › Bash: git push`), or the remote agent's question.
pub(crate) fn prompt_text(r: &ApprovalRequest) -> String {
    let always = r
        .session_rule
        .as_deref()
        .map(|rule| format!(" ({})", terminal_safe(rule)))
        .unwrap_or_default();
    // A remote A2A agent's question (our A2A client asks with the task state as the tool).
    if matches!(r.tool.as_str(), "input-required" | "auth-required") {
        return format!(
            "\n? {} asks: {}\n  why: {}\n  answer? [y]es / [a]lways / [n]o: ",
            asker(r),
            terminal_safe(&r.summary),
            why(r),
        );
    }
    if r.person_only {
        return format!(
            "\n? {} wants to run {}: {}\n  why: {}\n  allow this call? [y]es / [n]o: ",
            terminal_safe(&r.path_text()),
            terminal_safe(&r.tool),
            terminal_safe(&r.summary),
            terminal_safe(&r.reason),
        );
    }
    format!(
        "\n? {} › {}: {}\n  why: {}\n  allow? [y]es once / [a]lways{always} / [n]o: ",
        asker(r),
        terminal_safe(&r.tool),
        terminal_safe(&r.summary),
        why(r),
    )
}

/// Reads an answer: `y`/`yes` once, `a`/`always` for the session, anything else no.
pub(crate) fn parse_answer(line: &str) -> ApprovalDecision {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::AllowOnce,
        "a" | "always" => ApprovalDecision::AllowSession,
        _ => ApprovalDecision::deny("the user said no."),
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn request(&self, request: ApprovalRequest) -> ApprovalDecision {
        let _turn = self.one_at_a_time.lock().await;
        // Answered "always" while this one waited its turn.
        if self.answered_always(&request) {
            return ApprovalDecision::AllowSession;
        }
        let key = request.session_key();
        let multi = self.multi.clone();
        let ask = move || {
            let text = prompt_text(&request);
            let read = || {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes());
                let _ = err.flush();
                drop(err);
                let mut line = String::new();
                match std::io::stdin().lock().read_line(&mut line) {
                    Ok(0) | Err(_) => ApprovalDecision::deny("the user did not answer."),
                    Ok(_) => parse_answer(&line),
                }
            };
            match &multi {
                Some(m) => m.suspend(read),
                None => read(),
            }
        };
        let decision = tokio::task::spawn_blocking(ask)
            .await
            .unwrap_or_else(|_| ApprovalDecision::deny("the prompt failed."));
        if decision == ApprovalDecision::AllowSession {
            self.always
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(key);
        }
        decision
    }

    fn granted(&self, request: &ApprovalRequest) -> bool {
        self.answered_always(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_prompt() {
        assert_eq!(parse_answer("Y\n"), ApprovalDecision::AllowOnce);
        assert_eq!(parse_answer("always"), ApprovalDecision::AllowSession);
        assert!(!parse_answer("").is_allowed());
        assert!(!parse_answer("nope").is_allowed());
        let r = ApprovalRequest::new(
            vec!["main".into(), "worker".into()],
            "Bash",
            "touch x\u{1b}[2J",
            "permission mode `default`",
        )
        .with_session_rule("Bash(touch:*)");
        let p = prompt_text(&r);
        assert!(p.contains("main › worker › Bash: touch x\\u{1b}[2J"), "{p}");
        assert!(p.contains("[a]lways (Bash(touch:*))"), "{p}");
        let p = prompt_text(&r.clone().with_task_id("task_7\u{202e}"));
        assert!(p.contains("main › worker › Bash: touch x"), "{p}");
        assert!(
            p.contains("why: permission mode `default` (task task_7\\u{202e})"),
            "{p}"
        );
        let q = ApprovalRequest::new(
            vec!["main".into(), "re\u{1b}[2Jmote".into()],
            "input-required",
            "Which branch?",
            "the remote A2A agent `remote` asks for input",
        );
        let p = prompt_text(&q);
        assert!(
            p.contains("main › re\\u{1b}[2Jmote asks: Which branch?"),
            "{p}"
        );
    }

    #[tokio::test]
    async fn always_answers_the_questions_already_waiting_for_the_same_rule() {
        let approver = TerminalApprover {
            multi: None,
            one_at_a_time: tokio::sync::Mutex::new(()),
            always: std::sync::Mutex::new(std::collections::HashSet::new()),
        };
        let waiting = ApprovalRequest::new(vec!["main".into(), "b".into()], "Bash", "touch b", "")
            .with_session_rule("Bash(touch:*)");
        let turn = approver.one_at_a_time.lock().await;
        // While another question is on screen, "always" is answered for its rule.
        approver
            .always
            .lock()
            .expect("lock")
            .insert("Bash(touch:*)".into());
        drop(turn);
        // No prompt (stdin is not read): the waiting question is answered by the rule.
        assert_eq!(
            approver.request(waiting).await,
            ApprovalDecision::AllowSession
        );
    }
}
