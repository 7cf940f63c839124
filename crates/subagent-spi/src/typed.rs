//! Typed plugin traits: a kind with its own definition type ([`SubagentKind`]) and a tool with
//! its own input type ([`TypedTool`]). Each gets the erased trait the host uses through a
//! blanket impl, so plugin code never downcasts a definition nor parses a `serde_json::Value`.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{
    Kind, SubagentDefinition, SubagentError, SubagentExecutor, SubagentReference, SubagentResolver,
    SubagentType, TaskCall, TaskContext, TaskOutcome, Tool, ToolEffect, ToolError, ToolOutput,
};

/// One kind of subagent, typed: it resolves references into its own definition type
/// ([`Agent`](Self::Agent)) and runs tasks against that type. This is the one trait a kind
/// plugin implements.
///
/// Every `SubagentKind` is also a [`SubagentResolver`] and a [`SubagentExecutor`] (blanket
/// impls), and turns into the [`SubagentType`] hosts register with `SubagentType::from(kind)`
/// (or [`SubagentType::from_kind`] to keep a handle on it). The executor impl hands
/// [`run`](Self::run) the definition as `&Self::Agent`: the kind never downcasts. A definition
/// of another type (a host routing it to the wrong kind) ends in [`SubagentError::Execution`]
/// naming the agent and this kind.
///
/// ```
/// use subagent_spi::{
///     Kind, SubagentError, SubagentKind, SubagentReference, SubagentType, TaskCall,
///     TaskContext, TaskOutcome, async_trait, impl_subagent_definition,
/// };
///
/// #[derive(Debug)]
/// struct Echo {
///     name: String,
///     description: String,
///     reference: SubagentReference,
/// }
/// impl_subagent_definition!(Echo);
///
/// struct EchoKind;
///
/// #[async_trait]
/// impl SubagentKind for EchoKind {
///     type Agent = Echo;
///
///     fn kind(&self) -> Kind {
///         Kind::from_static("ECHO")
///     }
///
///     async fn resolve(&self, r: &SubagentReference) -> Result<Echo, SubagentError> {
///         let name = r.uri.strip_prefix("echo:").ok_or_else(|| {
///             SubagentError::resolution(&r.uri, "expected echo:NAME")
///         })?;
///         Ok(Echo { name: name.into(), description: "Echoes".into(), reference: r.clone() })
///     }
///
///     async fn run(
///         &self,
///         agent: &Echo,
///         call: TaskCall,
///         _ctx: TaskContext,
///     ) -> Result<TaskOutcome, SubagentError> {
///         Ok(TaskOutcome::completed(format!("{}: {}", agent.name, call.prompt)))
///     }
/// }
///
/// let ty = SubagentType::from(EchoKind);
/// assert_eq!(ty.kind().as_str(), "ECHO");
/// ```
#[async_trait]
pub trait SubagentKind: Send + Sync + 'static {
    /// The kind's own definition: what [`resolve`](Self::resolve) builds and
    /// [`run`](Self::run) gets.
    type Agent: SubagentDefinition;

    /// The kind's name, as references write it (`HTTP`, `MCP`, ...).
    fn kind(&self) -> Kind;

    /// True when this kind resolves the reference. Only references of this kind are offered,
    /// so the default accepts all; override it to refuse some (a URI scheme you do not speak).
    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        let _ = reference;
        true
    }

    /// Resolves a reference into a definition. Errors should name the URI and the cause
    /// ([`SubagentError::resolution`]).
    async fn resolve(&self, reference: &SubagentReference) -> Result<Self::Agent, SubagentError>;

    /// Runs one task against `agent` and returns its final text (plus status and usage).
    /// The contract is [`SubagentExecutor::execute`]'s: watch `ctx.cancel()`, return
    /// [`SubagentError::Resume`] for a `call.resume` this kind cannot continue.
    async fn run(
        &self,
        agent: &Self::Agent,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError>;

    /// How a run of `agent` takes messages sent to it while it runs; see
    /// [`SubagentExecutor::message_delivery`]. The default is `None`.
    fn message_delivery(&self, agent: &Self::Agent) -> Option<&'static str> {
        let _ = agent;
        None
    }

    /// References this kind contributes by default (built-in agents); user references of the
    /// same agent name override them. The default is none.
    fn default_references(&self) -> Vec<SubagentReference> {
        Vec::new()
    }
}

#[async_trait]
impl<K: SubagentKind> SubagentResolver for K {
    fn can_resolve(&self, reference: &SubagentReference) -> bool {
        SubagentKind::can_resolve(self, reference)
    }

    async fn resolve(
        &self,
        reference: &SubagentReference,
    ) -> Result<Arc<dyn SubagentDefinition>, SubagentError> {
        let agent = SubagentKind::resolve(self, reference).await?;
        Ok(Arc::new(agent))
    }
}

#[async_trait]
impl<K: SubagentKind> SubagentExecutor for K {
    async fn execute(
        &self,
        call: TaskCall,
        definition: Arc<dyn SubagentDefinition>,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        let agent = own_agent(self, &*definition)?;
        self.run(agent, call, ctx).await
    }

    fn message_delivery(&self, definition: &dyn SubagentDefinition) -> Option<&'static str> {
        let agent = definition.downcast_ref::<K::Agent>()?;
        SubagentKind::message_delivery(self, agent)
    }
}

/// The kind's own definition behind `definition`, or the one error for a definition of another
/// kind.
fn own_agent<'a, K: SubagentKind>(
    kind: &K,
    definition: &'a dyn SubagentDefinition,
) -> Result<&'a K::Agent, SubagentError> {
    definition.downcast_ref::<K::Agent>().ok_or_else(|| {
        let kind = kind.kind();
        SubagentError::execution(
            definition.name(),
            format!(
                "the {kind} kind was given a definition of another kind ({})",
                definition.reference().kind
            ),
        )
    })
}

impl SubagentType {
    /// The type of a [`SubagentKind`] shared behind `kind` (keep the `Arc` to reach the kind
    /// afterwards): its name, resolver, executor and default references.
    /// `SubagentType::from(kind)` does the same for a kind you do not keep.
    pub fn from_kind<K: SubagentKind>(kind: Arc<K>) -> Self {
        let defaults = kind.default_references();
        Self::new(kind.kind(), kind.clone(), kind).with_default_references(defaults)
    }
}

impl<K: SubagentKind> From<K> for SubagentType {
    fn from(kind: K) -> Self {
        Self::from_kind(Arc::new(kind))
    }
}

/// A tool, typed: its input is a Rust type, from which the adapter derives the JSON Schema the
/// model sees and into which it parses each call's input.
///
/// Every `TypedTool` is a [`Tool`] (blanket impl): [`Tool::input_schema`] is
/// `Input`'s schema (derived with `schemars`, without `$schema`, `title` and the type's own
/// doc comment, which is for Rust readers), and input that does not parse comes back to the
/// model as [`ToolError::InvalidInput`] naming the tool, what was wrong and the fields
/// expected, so it can correct the call.
///
/// ```
/// use subagent_spi::{TaskContext, Tool, ToolError, ToolOutput, TypedTool, async_trait};
///
/// /// Input of `Shout`.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct ShoutInput {
///     /// The text to shout.
///     text: String,
/// }
///
/// struct Shout;
///
/// #[async_trait]
/// impl TypedTool for Shout {
///     type Input = ShoutInput;
///
///     fn name(&self) -> &str {
///         "Shout"
///     }
///
///     fn description(&self) -> String {
///         "Repeats the text in capitals.".into()
///     }
///
///     async fn run(&self, input: ShoutInput, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text(input.text.to_uppercase()))
///     }
/// }
///
/// assert_eq!(Tool::input_schema(&Shout)["required"], serde_json::json!(["text"]));
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input: the JSON object the model sends, parsed.
    type Input: DeserializeOwned + JsonSchema + Send;

    /// Tool name, unique within an agent's tool set.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// What the tool may do; defaults to [`ToolEffect::Execute`] (the most guarded).
    fn effect(&self) -> ToolEffect {
        ToolEffect::Execute
    }

    /// Runs the tool with parsed input. `Err` is turned into an error result for the model.
    async fn run(&self, input: Self::Input, ctx: &TaskContext) -> Result<ToolOutput, ToolError>;

    /// What the input looks like, for the message a model gets when its input does not parse
    /// (`...; expected {hint}`). The default names the fields of `Input`'s schema, required
    /// ones marked; override it to show an example instead.
    fn input_hint(&self) -> String {
        shape_of(&crate::input_schema::<Self::Input>())
    }
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        TypedTool::name(self)
    }

    fn description(&self) -> String {
        TypedTool::description(self)
    }

    fn input_schema(&self) -> serde_json::Value {
        crate::input_schema::<T::Input>()
    }

    fn effect(&self) -> ToolEffect {
        TypedTool::effect(self)
    }

    async fn call(
        &self,
        input: serde_json::Value,
        ctx: &TaskContext,
    ) -> Result<ToolOutput, ToolError> {
        let input = serde_json::from_value::<T::Input>(input).map_err(|e| {
            ToolError::invalid(
                TypedTool::name(self),
                format!("{e}; expected {}", self.input_hint()),
            )
        })?;
        self.run(input, ctx).await
    }
}

/// "an object with fields `a` (required), `b`" from an object schema; "input matching the
/// tool's schema" for anything else.
fn shape_of(schema: &serde_json::Value) -> String {
    let Some(props) = schema.get("properties").and_then(|p| p.as_object()) else {
        return "input matching the tool's schema".to_string();
    };
    if props.is_empty() {
        return "an empty object".to_string();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let fields: Vec<String> = props
        .keys()
        .map(|k| {
            if required.contains(&k.as_str()) {
                format!("`{k}` (required)")
            } else {
                format!("`{k}`")
            }
        })
        .collect();
    format!("an object with fields {}", fields.join(", "))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use futures::executor::block_on;

    #[derive(Debug)]
    pub(crate) struct Note {
        name: String,
        description: String,
        reference: SubagentReference,
        loud: bool,
    }
    crate::impl_subagent_definition!(Note);

    #[derive(Debug)]
    struct Stranger {
        name: String,
        description: String,
        reference: SubagentReference,
    }
    crate::impl_subagent_definition!(Stranger);

    /// A typed kind for the SPI's own tests (also the executor of `fork`'s tests).
    pub(crate) struct Notes;

    #[async_trait]
    impl SubagentKind for Notes {
        type Agent = Note;

        fn kind(&self) -> Kind {
            Kind::from_static("NOTE")
        }

        fn can_resolve(&self, reference: &SubagentReference) -> bool {
            reference.uri.starts_with("note:")
        }

        async fn resolve(&self, r: &SubagentReference) -> Result<Note, SubagentError> {
            Ok(Note {
                name: r.uri.trim_start_matches("note:").into(),
                description: "takes notes".into(),
                reference: r.clone(),
                loud: r.metadata("loud").is_some(),
            })
        }

        async fn run(
            &self,
            agent: &Note,
            call: TaskCall,
            _ctx: TaskContext,
        ) -> Result<TaskOutcome, SubagentError> {
            let text = if agent.loud {
                call.prompt.to_uppercase()
            } else {
                call.prompt
            };
            Ok(TaskOutcome::completed(text))
        }

        fn message_delivery(&self, agent: &Note) -> Option<&'static str> {
            agent.loud.then_some("it shouts it back")
        }

        fn default_references(&self) -> Vec<SubagentReference> {
            vec![SubagentReference::new("note:builtin", "NOTE")]
        }
    }

    #[test]
    fn a_typed_kind_is_a_subagent_type_that_resolves_and_runs_its_own_definitions() {
        let ty = SubagentType::from(Notes);
        assert_eq!(ty.kind(), &Kind::new("note"));
        assert_eq!(ty.default_references().len(), 1);
        let r = SubagentReference::new("note:a", "NOTE").with_metadata("loud", "1");
        assert!(ty.accepts(&r));
        assert!(!ty.accepts(&SubagentReference::new("x:a", "NOTE")));
        assert!(!ty.accepts(&SubagentReference::new("note:a", "OTHER")));
        let def = block_on(ty.resolver().resolve(&r)).unwrap();
        assert_eq!(def.name(), "a");
        assert_eq!(
            ty.executor().message_delivery(&*def),
            Some("it shouts it back")
        );
        let out = block_on(ty.executor().execute(
            TaskCall::new("a", "d", "hi"),
            def,
            TaskContext::new(),
        ))
        .unwrap();
        assert_eq!(out.text, "HI");
    }

    #[test]
    fn a_definition_of_another_kind_is_one_clear_error() {
        let ty = SubagentType::from_kind(Arc::new(Notes));
        let stranger: Arc<dyn SubagentDefinition> = Arc::new(Stranger {
            name: "s".into(),
            description: "d".into(),
            reference: SubagentReference::new("x:s", "X"),
        });
        assert_eq!(ty.executor().message_delivery(&*stranger), None);
        let err = block_on(ty.executor().execute(
            TaskCall::new("s", "d", "p"),
            stranger,
            TaskContext::new(),
        ))
        .unwrap_err();
        assert!(matches!(err, SubagentError::Execution { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "agent `s` failed: the NOTE kind was given a definition of another kind (X)"
        );
    }

    /// Input of `Add`.
    #[derive(serde::Deserialize, JsonSchema)]
    struct AddInput {
        /// First term.
        a: i64,
        /// Second term.
        #[serde(default)]
        b: i64,
    }

    struct Add;

    #[async_trait]
    impl TypedTool for Add {
        type Input = AddInput;

        fn name(&self) -> &str {
            "Add"
        }

        fn description(&self) -> String {
            "Adds two numbers.".into()
        }

        fn effect(&self) -> ToolEffect {
            ToolEffect::ReadOnly
        }

        async fn run(&self, input: AddInput, _ctx: &TaskContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text((input.a + input.b).to_string()))
        }
    }

    #[test]
    fn a_typed_tool_derives_its_schema_and_parses_its_input() {
        let tool: Arc<dyn Tool> = Arc::new(Add);
        let spec = tool.spec();
        assert_eq!(spec.name, "Add");
        assert_eq!(tool.effect(), ToolEffect::ReadOnly);
        let schema = spec.input_schema;
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], serde_json::json!(["a"]));
        assert_eq!(schema["properties"]["a"]["description"], "First term.");
        for gone in ["$schema", "title", "description"] {
            assert!(schema.get(gone).is_none(), "{gone} in {schema}");
        }
        let ctx = TaskContext::new();
        let out = block_on(tool.call(serde_json::json!({"a": 2, "b": 3}), &ctx)).unwrap();
        assert_eq!(out.content, "5");
    }

    #[test]
    fn bad_tool_input_is_worded_for_the_model() {
        let ctx = TaskContext::new();
        let err = block_on(Tool::call(&Add, serde_json::json!({"b": 1}), &ctx)).unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "invalid input for tool `Add`: missing field `a`; expected an object with fields \
             `a` (required), `b`"
        );
        let err = block_on(Tool::call(&Add, serde_json::json!({"a": "two"}), &ctx)).unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid type: string \"two\", expected i64"),
            "{err}"
        );
    }
}
