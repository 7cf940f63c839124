use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::{Kind, SubagentError, SubagentReference, TaskCall, TaskContext, TaskOutcome};

/// A resolved agent: its name, description and protocol-specific configuration.
///
/// The trait is object-safe; protocol code gets its own type back with
/// [`downcast_ref`](trait.SubagentDefinition.html#method.downcast_ref) (no per-type `as_any`
/// is needed: `Any` is a supertrait). The kind is not repeated here: it is the
/// [`SubagentType`]'s that resolved the definition.
pub trait SubagentDefinition: Any + Send + Sync + fmt::Debug {
    /// The agent's name, as the model passes it in `subagent_type`.
    fn name(&self) -> &str;

    /// What the agent does and when to use it, shown to the model.
    fn description(&self) -> &str;

    /// The reference this definition was resolved from.
    fn reference(&self) -> &SubagentReference;

    /// The line listing this agent in the `Task` tool's description.
    ///
    /// Deprecated: the `Task` tool's wording is its own (it renders `- name: description`
    /// from [`name`](Self::name) and [`description`](Self::description)); an override here is
    /// no longer shown. To be removed in 0.4.
    #[deprecated(
        since = "0.3.1",
        note = "the Task tool renders its own listing from name() and description()"
    )]
    fn registration(&self) -> String {
        format!("- {}: {}", self.name(), self.description())
    }

    /// True when a `Task` call that does not set `run_in_background` should start this agent
    /// in the background (a Markdown agent's `background: true`). The default is `false`:
    /// calls run in the foreground unless they ask otherwise. A call's explicit
    /// `run_in_background` always wins.
    fn runs_in_background_by_default(&self) -> bool {
        false
    }

    /// The agent's own budget (a Markdown agent's `budget` frontmatter), if it has one: when
    /// the agent is started, its subtree gets at most this and at most what is left of the
    /// caller's budget (`subagent-core`'s `Budget::nested`). The default is `None`.
    fn budget(&self) -> Option<crate::BudgetLimits> {
        None
    }

    /// The JSON Schema of this agent's result when a `Task` call sets no
    /// [`output_schema`](crate::TaskCall::output_schema) (a Markdown agent's `outputSchema`
    /// frontmatter). The default is `None`: the agent answers with text.
    fn output_schema(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Implements [`SubagentDefinition`] for a struct whose `name` and `description` fields are
/// `String`s and whose `reference` field is a [`SubagentReference`]: the three accessors every
/// such definition writes alike. Further trait methods (e.g.
/// [`runs_in_background_by_default`](SubagentDefinition::runs_in_background_by_default)) go in
/// braces after the type; the others keep their defaults.
///
/// ```
/// use subagent_spi::{SubagentDefinition, SubagentReference, impl_subagent_definition};
///
/// #[derive(Debug)]
/// struct Recipe {
///     name: String,
///     description: String,
///     reference: SubagentReference,
///     background: bool,
/// }
///
/// impl_subagent_definition!(Recipe {
///     fn runs_in_background_by_default(&self) -> bool {
///         self.background
///     }
/// });
///
/// let r = Recipe {
///     name: "soup".into(),
///     description: "Makes soup".into(),
///     reference: SubagentReference::new("recipe:soup", "RECIPE"),
///     background: true,
/// };
/// assert_eq!((r.name(), r.description()), ("soup", "Makes soup"));
/// assert!(r.runs_in_background_by_default());
/// ```
#[macro_export]
macro_rules! impl_subagent_definition {
    ($ty:ty $({ $($more:tt)* })?) => {
        impl $crate::SubagentDefinition for $ty {
            fn name(&self) -> &str {
                &self.name
            }

            fn description(&self) -> &str {
                &self.description
            }

            fn reference(&self) -> &$crate::SubagentReference {
                &self.reference
            }

            $($($more)*)?
        }
    };
}

impl dyn SubagentDefinition {
    /// Downcasts to the protocol's own definition type.
    pub fn downcast_ref<T: SubagentDefinition>(&self) -> Option<&T> {
        (self as &dyn Any).downcast_ref::<T>()
    }
}

/// Turns references into definitions (reads a Markdown file, fetches an agent card...).
#[async_trait]
pub trait SubagentResolver: Send + Sync {
    /// True when this resolver handles the reference. The registry offers a resolver only
    /// references of its type's kind, so the default accepts all of them; override it to refuse
    /// some (a URI scheme you do not speak, say).
    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        let _ = reference;
        true
    }

    /// Resolves the reference. Errors should name the URI and the cause.
    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError>;
}

/// Runs tasks against definitions of one kind.
#[async_trait]
pub trait SubagentExecutor: Send + Sync {
    /// Runs one task and returns only its final text (plus status and usage).
    ///
    /// `call.resume`, when set, is a `session_id` from an earlier outcome of this executor;
    /// executors that cannot resume return [`SubagentError::Resume`]. The executor must watch
    /// `ctx.cancel` and return promptly once it is cancelled.
    async fn execute(
        &self,
        call: TaskCall,
        definition: Arc<dyn SubagentDefinition>,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError>;

    /// How a run of `definition` takes messages sent to it while it runs (Claude Code's
    /// `SendMessage`), in a few words the sender is shown, e.g. "it reads it at its next turn
    /// boundary"; `None` (the default) when runs of this kind cannot receive messages, and
    /// senders are told so. A kind that returns `Some` reads
    /// [`TaskContext::inbox`](crate::TaskContext::inbox).
    fn message_delivery(&self, definition: &dyn SubagentDefinition) -> Option<&'static str> {
        let _ = definition;
        None
    }
}

/// One kind of subagent: the unit of registration. Names the kind, bundles a resolver and an
/// executor, and may contribute default references (built-in agents) that user references can
/// override. This is the one place a kind is declared.
#[derive(Clone)]
pub struct SubagentType {
    kind: Kind,
    resolver: Arc<dyn SubagentResolver>,
    executor: Arc<dyn SubagentExecutor>,
    defaults: Vec<SubagentReference>,
}

impl fmt::Debug for SubagentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubagentType")
            .field("kind", &self.kind())
            .field("defaults", &self.defaults)
            .finish()
    }
}

impl SubagentType {
    /// Declares a kind with its resolver and executor.
    pub fn new(
        kind: impl Into<Kind>,
        resolver: Arc<dyn SubagentResolver>,
        executor: Arc<dyn SubagentExecutor>,
    ) -> Self {
        Self {
            kind: kind.into(),
            resolver,
            executor,
            defaults: Vec::new(),
        }
    }

    /// Adds default references this kind contributes (builder style).
    #[must_use]
    pub fn with_default_references(
        mut self,
        refs: impl IntoIterator<Item = SubagentReference>,
    ) -> Self {
        self.defaults.extend(refs);
        self
    }

    /// The kind.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// True when this type should resolve `reference`: the kinds match (ignoring case) and the
    /// resolver accepts it.
    pub fn accepts(&self, reference: &SubagentReference) -> bool {
        self.kind == reference.kind && self.resolver.can_resolve(reference)
    }

    /// The resolver.
    pub fn resolver(&self) -> &Arc<dyn SubagentResolver> {
        &self.resolver
    }

    /// The executor.
    pub fn executor(&self) -> &Arc<dyn SubagentExecutor> {
        &self.executor
    }

    /// The default references this kind contributes.
    pub fn default_references(&self) -> &[SubagentReference] {
        &self.defaults
    }
}
