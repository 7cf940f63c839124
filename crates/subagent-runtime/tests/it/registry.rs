//! Model registry lookup: names, aliases, default, fallback factory, errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use subagent_runtime::{ModelFactory, ModelRegistry};
use subagent_spi::chat::{ChatRequest, ChatResponse};
use subagent_spi::{ChatModel, ModelError, async_trait};

struct Named(String);

#[async_trait]
impl ChatModel for Named {
    fn model_name(&self) -> &str {
        &self.0
    }
    async fn chat(&self, _request: ChatRequest) -> Result<ChatResponse, ModelError> {
        Err(ModelError::Config("not callable".into()))
    }
}

fn m(name: &str) -> Arc<dyn ChatModel> {
    Arc::new(Named(name.to_string()))
}

#[test]
fn names_aliases_and_default_resolve_case_insensitively() {
    let reg = ModelRegistry::new()
        .with_model("claude-sonnet-4-5", m("claude-sonnet-4-5"))
        .with_model("gpt-4.1", m("gpt-4.1"))
        .with_alias("Sonnet", "claude-sonnet-4-5")
        .with_alias("smart", "sonnet")
        .with_default("smart");
    assert_eq!(reg.resolve("GPT-4.1").unwrap().model_name(), "gpt-4.1");
    assert_eq!(
        reg.resolve("sonnet").unwrap().model_name(),
        "claude-sonnet-4-5"
    );
    assert_eq!(
        reg.resolve(" SMART ").unwrap().model_name(),
        "claude-sonnet-4-5"
    );
    assert_eq!(
        reg.resolve("default").unwrap().model_name(),
        "claude-sonnet-4-5"
    );
    assert_eq!(
        reg.default_model().unwrap().model_name(),
        "claude-sonnet-4-5"
    );
    assert_eq!(reg.default_name(), Some("smart"));
}

#[test]
fn unknown_names_list_the_known_ones() {
    let reg = ModelRegistry::new()
        .with_model("gpt-4.1", m("gpt-4.1"))
        .with_alias("haiku", "claude-haiku");
    let err = reg.resolve("opus").err().expect("unknown");
    match &err {
        ModelError::UnknownModel { name, known } => {
            assert_eq!(name, "opus");
            assert_eq!(known, &vec!["gpt-4.1".to_string(), "haiku".to_string()]);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("gpt-4.1, haiku"));
    // an alias to nothing also fails, naming what was asked
    let err = reg.resolve("haiku").err().expect("dangling alias");
    assert!(err.to_string().contains("`haiku`"), "{err}");
    // `default` without a default
    assert!(matches!(
        reg.resolve("default"),
        Err(ModelError::UnknownModel { .. })
    ));
}

#[test]
fn alias_cycles_are_reported() {
    let reg = ModelRegistry::new()
        .with_alias("a", "b")
        .with_alias("b", "a");
    let err = reg.resolve("a").err().expect("cycle");
    assert!(matches!(err, ModelError::Config(_)));
    assert!(err.to_string().contains("cycle"), "{err}");
}

#[test]
fn fallback_builds_spec_strings_once_and_passes_errors_through() {
    let built = Arc::new(AtomicUsize::new(0));
    let counter = built.clone();
    let factory: ModelFactory = Arc::new(move |spec: &str| {
        if let Some(rest) = spec.strip_prefix("fake:") {
            counter.fetch_add(1, Ordering::SeqCst);
            Some(Ok(m(rest)))
        } else if spec.starts_with("broken:") {
            Some(Err(ModelError::Config("FAKE_API_KEY is not set".into())))
        } else {
            None
        }
    });
    let reg = ModelRegistry::new()
        .with_alias("sonnet", "fake:claude-sonnet")
        .with_default("sonnet")
        .with_fallback(factory);
    assert_eq!(reg.resolve("fake:qwen").unwrap().model_name(), "qwen");
    assert_eq!(reg.resolve("fake:qwen").unwrap().model_name(), "qwen");
    assert_eq!(
        built.load(Ordering::SeqCst),
        1,
        "cached after the first build"
    );
    assert_eq!(
        reg.resolve("default").unwrap().model_name(),
        "claude-sonnet"
    );
    let err = reg.resolve("broken:x").err().expect("factory error");
    assert!(err.to_string().contains("FAKE_API_KEY"));
    assert!(matches!(
        reg.resolve("other"),
        Err(ModelError::UnknownModel { .. })
    ));
}

#[test]
fn a_stand_in_name_gets_the_default_model_with_the_reason_and_never_loops() {
    let mut reg = ModelRegistry::new().with_model("local", m("local"));
    reg.set_stand_in(Arc::new(|name: &str| {
        name.starts_with("claude-")
            .then(|| format!("`{name}` needs a key"))
    }));
    // Without a default there is nothing to stand in: the name is unknown.
    assert!(matches!(
        reg.resolve_noted("claude-x"),
        Err(ModelError::UnknownModel { .. })
    ));
    reg.set_default("local");
    let (model, why) = reg.resolve_noted("claude-x").expect("stands in");
    assert_eq!(model.model_name(), "local");
    assert_eq!(why.as_deref(), Some("`claude-x` needs a key"));
    assert_eq!(reg.resolve("claude-x").unwrap().model_name(), "local");
    let (_, why) = reg.resolve_noted("local").unwrap();
    assert!(why.is_none(), "a model of its own: no reason");
    // A default that is itself claimed does not stand in for anything (and does not recurse).
    reg.set_default("claude-default");
    assert!(reg.resolve_noted("claude-x").is_err());
}
