//! [`FnKind`]: an in-process subagent kind whose agents are async closures, for tests that need
//! a real kind without a model or a network.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use subagent_spi::{
    Kind, SubagentError, SubagentKind, SubagentReference, SubagentType, TaskCall, TaskContext,
    TaskOutcome, async_trait,
};

/// The kind name of [`FnKind`].
pub const FN_KIND: Kind = Kind::from_static("FN");

type AgentFn = Arc<
    dyn Fn(TaskCall, TaskContext) -> BoxFuture<'static, Result<TaskOutcome, SubagentError>>
        + Send
        + Sync,
>;

/// A definition of the `FN` kind.
#[derive(Debug)]
pub struct FnDefinition {
    name: String,
    description: String,
    reference: SubagentReference,
}

subagent_spi::impl_subagent_definition!(FnDefinition);

/// The `FN` kind: agents are async closures registered by name.
///
/// References are `fn:NAME`, `fn:NAME?DESCRIPTION`, or `fn:KEY#NAME` (the function `KEY`
/// registered under another agent name); build them with [`fn_ref`]. The key `slow-resolve`
/// takes five seconds to resolve (for resolve-timeout tests).
///
/// ```
/// # async fn demo() {
/// use subagent_spi::{TaskOutcome, TaskContext};
/// use subagent_testkit::{FnKind, fn_ref};
/// let kind = FnKind::new()
///     .agent("echo", |call, _ctx| async move { Ok(TaskOutcome::completed(call.prompt)) })
///     .into_type();
/// # let _ = (kind, fn_ref("echo"));
/// # }
/// ```
#[derive(Default, Clone)]
pub struct FnKind {
    agents: HashMap<String, AgentFn>,
    /// Whether its runs take messages (`SendMessage`): see [`FnKind::receiving_messages`].
    receives: bool,
}

impl std::fmt::Debug for FnKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnKind")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl FnKind {
    /// An empty kind.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the function behind agent `name`.
    #[must_use]
    pub fn agent<F, Fut>(mut self, name: &str, f: F) -> Self
    where
        F: Fn(TaskCall, TaskContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<TaskOutcome, SubagentError>> + Send + 'static,
    {
        self.agents
            .insert(name.to_string(), Arc::new(move |c, x| Box::pin(f(c, x))));
        self
    }

    /// Declares that its agents take messages sent to them while they run (`SendMessage`): the
    /// functions read [`TaskContext::inbox`] themselves. Without it, senders are told the kind
    /// cannot receive messages.
    #[must_use]
    pub fn receiving_messages(mut self) -> Self {
        self.receives = true;
        self
    }

    /// The kind as a [`SubagentType`] (kind `FN`).
    pub fn into_type(self) -> SubagentType {
        SubagentType::from(self)
    }
}

/// A reference of the `FN` kind: `fn_ref("echo")`, `fn_ref("echo?Echoes its prompt")`.
pub fn fn_ref(spec: &str) -> SubagentReference {
    SubagentReference::new(format!("fn:{spec}"), FN_KIND)
}

fn key_of(uri: &str) -> &str {
    let spec = uri.trim_start_matches("fn:");
    let fname = spec.split_once('?').map_or(spec, |(f, _)| f);
    fname.split_once('#').map_or(fname, |(k, _)| k)
}

#[async_trait]
impl SubagentKind for FnKind {
    type Agent = FnDefinition;

    fn kind(&self) -> Kind {
        FN_KIND
    }

    async fn resolve(&self, r: &SubagentReference) -> Result<FnDefinition, SubagentError> {
        let spec = r
            .uri
            .strip_prefix("fn:")
            .ok_or_else(|| SubagentError::resolution(&r.uri, "expected fn:NAME"))?;
        let (fname, desc) = spec.split_once('?').unwrap_or((spec, "a test agent"));
        let (key, name) = fname.split_once('#').unwrap_or((fname, fname));
        if key == "slow-resolve" {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        }
        if !self.agents.contains_key(key) {
            return Err(SubagentError::resolution(
                &r.uri,
                format!("no function named `{key}`"),
            ));
        }
        Ok(FnDefinition {
            name: name.to_string(),
            description: desc.to_string(),
            reference: r.clone(),
        })
    }

    async fn run(
        &self,
        def: &FnDefinition,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let f = self
            .agents
            .get(key_of(&def.reference.uri))
            .ok_or_else(|| SubagentError::execution(&def.name, "function vanished"))?
            .clone();
        f(call, ctx).await
    }

    fn message_delivery(&self, _agent: &FnDefinition) -> Option<&'static str> {
        self.receives
            .then_some("the function reads it from its context's inbox")
    }
}
