//! An in-process test kind: agents are async closures registered by name.
#![allow(dead_code, missing_docs)]

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use subagent_spi::*;

pub const KIND: &str = "FN";

pub type AgentFn = Arc<
    dyn Fn(TaskCall, TaskContext) -> BoxFuture<'static, Result<TaskOutcome, SubagentError>>
        + Send
        + Sync,
>;

#[derive(Debug)]
pub struct FnDef {
    name: String,
    description: String,
    reference: SubagentReference,
}

impl SubagentDefinition for FnDef {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn kind(&self) -> &str {
        KIND
    }
    fn reference(&self) -> &SubagentReference {
        &self.reference
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Default, Clone)]
pub struct FnKind {
    agents: HashMap<String, AgentFn>,
}

impl FnKind {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn agent<F, Fut>(mut self, name: &str, f: F) -> Self
    where
        F: Fn(TaskCall, TaskContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<TaskOutcome, SubagentError>> + Send + 'static,
    {
        self.agents
            .insert(name.to_string(), Arc::new(move |c, x| Box::pin(f(c, x))));
        self
    }

    pub fn into_type(self) -> SubagentType {
        let me = Arc::new(self);
        SubagentType::new(me.clone(), me)
    }
}

/// `fn:NAME` or `fn:NAME?description`.
pub fn fn_ref(spec: &str) -> SubagentReference {
    SubagentReference::new(format!("fn:{spec}"), KIND)
}

#[async_trait]
impl SubagentResolver for FnKind {
    fn can_resolve(&self, r: &SubagentReference) -> bool {
        r.is_kind(KIND)
    }

    async fn resolve(
        &self,
        r: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
        let spec = r
            .uri
            .strip_prefix("fn:")
            .ok_or_else(|| SubagentError::resolution(&r.uri, "expected fn:NAME"))?;
        let (fname, desc) = spec.split_once('?').unwrap_or((spec, "a test agent"));
        // The function is keyed by the part before '#', the agent name is the whole.
        let (key, name) = match fname.split_once('#') {
            Some((k, n)) => (k, n),
            None => (fname, fname),
        };
        if key == "slow-resolve" {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        }
        if !self.agents.contains_key(key) {
            return Err(SubagentError::resolution(
                &r.uri,
                format!("no function named `{key}`"),
            ));
        }
        Ok(Arc::new(FnDef {
            name: name.to_string(),
            description: desc.to_string(),
            reference: r.clone(),
        }))
    }
}

#[async_trait]
impl SubagentExecutor for FnKind {
    fn kind(&self) -> &str {
        KIND
    }

    async fn execute(
        &self,
        call: TaskCall,
        def: Arc<dyn SubagentDefinition>,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let uri = &def.reference().uri;
        let spec = uri.trim_start_matches("fn:");
        let fname = spec.split_once('?').map_or(spec, |(f, _)| f);
        let key = fname.split_once('#').map_or(fname, |(k, _)| k);
        let f = self
            .agents
            .get(key)
            .ok_or_else(|| SubagentError::execution(def.name(), "function vanished"))?
            .clone();
        f(call, ctx).await
    }
}
