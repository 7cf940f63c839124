//! Permission modes enforced on tools, and the approval policy for calls that need approval.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use subagent_spi::{TaskContext, Tool, ToolEffect, ToolError, ToolOutput};

use crate::definition::PermissionMode;

/// A tool call waiting for approval under `permissionMode: default` (edits and commands) or
/// `acceptEdits` (commands).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolRequest {
    /// The agent making the call.
    pub agent: String,
    /// The tool.
    pub tool: String,
    /// What the tool may do.
    pub effect: ToolEffect,
    /// The call's input.
    pub input: serde_json::Value,
    /// The agent's permission mode.
    pub mode: PermissionMode,
}

/// Decides tool calls that need approval.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum ApprovalPolicy {
    /// Approve every call (the default: the host chose the tool set, and headless runs have
    /// nobody to ask).
    #[default]
    AllowAll,
    /// Refuse every call that needs approval.
    DenyAll,
    /// Ask a function; `true` approves.
    Callback(Arc<dyn Fn(&ToolRequest) -> bool + Send + Sync>),
}

impl ApprovalPolicy {
    /// A callback policy.
    pub fn callback(f: impl Fn(&ToolRequest) -> bool + Send + Sync + 'static) -> Self {
        ApprovalPolicy::Callback(Arc::new(f))
    }

    fn approves(&self, req: &ToolRequest) -> bool {
        match self {
            ApprovalPolicy::AllowAll => true,
            ApprovalPolicy::DenyAll => false,
            ApprovalPolicy::Callback(f) => f(req),
        }
    }
}

impl fmt::Debug for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalPolicy::AllowAll => f.write_str("AllowAll"),
            ApprovalPolicy::DenyAll => f.write_str("DenyAll"),
            ApprovalPolicy::Callback(_) => f.write_str("Callback(..)"),
        }
    }
}

/// What a mode says about one effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Allow,
    Ask,
    Refuse,
}

fn decide(mode: PermissionMode, effect: ToolEffect) -> Decision {
    let safe = matches!(effect, ToolEffect::ReadOnly | ToolEffect::Delegate);
    match mode {
        PermissionMode::BypassPermissions | PermissionMode::DontAsk | PermissionMode::Auto => {
            Decision::Allow
        }
        _ if safe => Decision::Allow,
        PermissionMode::Plan => Decision::Refuse,
        PermissionMode::AcceptEdits if effect == ToolEffect::Edit => Decision::Allow,
        _ => Decision::Ask,
    }
}

/// A tool wrapped so its calls obey a permission mode and an approval policy. A refused call is
/// a [`ToolError::Denied`] the model reads as an error result.
struct GuardedTool {
    inner: Arc<dyn Tool>,
    mode: PermissionMode,
    policy: ApprovalPolicy,
    agent: String,
}

#[async_trait]
impl Tool for GuardedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> String {
        self.inner.description()
    }

    fn input_schema(&self) -> serde_json::Value {
        self.inner.input_schema()
    }

    fn effect(&self) -> ToolEffect {
        self.inner.effect()
    }

    async fn call(
        &self,
        input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        let effect = self.inner.effect();
        match decide(self.mode, effect) {
            Decision::Allow => {}
            Decision::Refuse => {
                return Err(ToolError::denied(
                    self.inner.name(),
                    format!(
                        "agent `{}` runs in permission mode `plan`, which allows only read-only \
                         tools, and `{}` {}. Do not retry; describe the change in your answer \
                         instead.",
                        self.agent,
                        self.inner.name(),
                        effect_phrase(effect)
                    ),
                ));
            }
            Decision::Ask => {
                let req = ToolRequest {
                    agent: self.agent.clone(),
                    tool: self.inner.name().to_string(),
                    effect,
                    input: input.clone(),
                    mode: self.mode,
                };
                if !self.policy.approves(&req) {
                    return Err(ToolError::denied(
                        self.inner.name(),
                        format!(
                            "the approval policy refused this call (agent `{}`, permission mode \
                             `{}`; `{}` {}). Do not retry the same call; continue without it or \
                             explain what you would have done.",
                            self.agent,
                            self.mode,
                            self.inner.name(),
                            effect_phrase(effect)
                        ),
                    ));
                }
            }
        }
        self.inner.call(input, ctx).await
    }
}

fn effect_phrase(effect: ToolEffect) -> &'static str {
    match effect {
        ToolEffect::Edit => "changes files",
        ToolEffect::Execute => "runs commands or reaches the network",
        _ => "is not read-only",
    }
}

/// Wraps each tool that the mode does not simply allow. Tools whose every call would be allowed
/// are passed through unwrapped.
pub(crate) fn guard_tools(
    tools: Vec<Arc<dyn Tool>>,
    mode: PermissionMode,
    policy: &ApprovalPolicy,
    agent: &str,
) -> Vec<Arc<dyn Tool>> {
    tools
        .into_iter()
        .map(|t| {
            let decision = decide(mode, t.effect());
            let pass = decision == Decision::Allow
                || (decision == Decision::Ask && matches!(policy, ApprovalPolicy::AllowAll));
            if pass {
                t
            } else {
                Arc::new(GuardedTool {
                    inner: t,
                    mode,
                    policy: policy.clone(),
                    agent: agent.to_string(),
                }) as Arc<dyn Tool>
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        use PermissionMode as M;
        use ToolEffect as E;
        assert_eq!(decide(M::Plan, E::ReadOnly), Decision::Allow);
        assert_eq!(decide(M::Plan, E::Delegate), Decision::Allow);
        assert_eq!(decide(M::Plan, E::Edit), Decision::Refuse);
        assert_eq!(decide(M::Plan, E::Execute), Decision::Refuse);
        assert_eq!(decide(M::Default, E::Edit), Decision::Ask);
        assert_eq!(decide(M::Default, E::Execute), Decision::Ask);
        assert_eq!(decide(M::Default, E::ReadOnly), Decision::Allow);
        assert_eq!(decide(M::AcceptEdits, E::Edit), Decision::Allow);
        assert_eq!(decide(M::AcceptEdits, E::Execute), Decision::Ask);
        for m in [M::BypassPermissions, M::DontAsk, M::Auto] {
            assert_eq!(decide(m, E::Execute), Decision::Allow);
        }
    }
}
