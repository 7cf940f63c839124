//! Model names and aliases to configured models.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use subagent_spi::{ChatModel, ModelError};

/// Builds a model from a spec string (e.g. `openai:gpt-4.1`), or returns `None` when the string
/// is not a spec it understands. The CLI plugs the providers crate's `model_from_spec` in here.
pub type ModelFactory =
    Arc<dyn Fn(&str) -> Option<Result<Arc<dyn ChatModel>, ModelError>> + Send + Sync>;

/// Says which names the registry answers with its default model instead, and why (e.g. `sonnet`
/// without an Anthropic key): `Some(reason)` for such a name, `None` for the others.
pub type StandIn = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Maps model names and aliases to models.
///
/// Lookup ([`resolve`](Self::resolve)) is case-insensitive and goes:
/// 1. `default` (or an empty name) means the name set with [`set_default`](Self::set_default);
/// 2. aliases are followed (an alias may point at another alias, a registered name or a spec
///    string), up to 8 hops;
/// 3. a registered model with that name;
/// 4. a name the [`StandIn`] claims: the default model ([`resolve_noted`](Self::resolve_noted)
///    says why);
/// 5. the fallback [`ModelFactory`], if any (models it builds are cached, at most 64);
/// 6. otherwise [`ModelError::UnknownModel`] listing the registered names and aliases.
///
/// ```
/// # use std::sync::Arc;
/// # use subagent_runtime::ModelRegistry;
/// # fn demo(sonnet: Arc<dyn subagent_spi::ChatModel>) {
/// let mut reg = ModelRegistry::new();
/// reg.register("claude-sonnet-4-5", sonnet)
///     .alias("sonnet", "claude-sonnet-4-5")
///     .set_default("sonnet");
/// assert!(reg.resolve("SONNET").is_ok());
/// assert!(reg.resolve("default").is_ok());
/// assert!(reg.resolve("gpt-9").is_err());
/// # }
/// ```
#[derive(Default)]
pub struct ModelRegistry {
    /// lowercase name -> (name as registered, model)
    models: BTreeMap<String, (String, Arc<dyn ChatModel>)>,
    /// lowercase alias -> (alias as given, target)
    aliases: BTreeMap<String, (String, String)>,
    default: Option<String>,
    fallback: Option<ModelFactory>,
    stand_in: Option<StandIn>,
    built: Mutex<HashMap<String, Arc<dyn ChatModel>>>,
}

const MAX_ALIAS_HOPS: usize = 8;
const MAX_BUILT: usize = 64;

impl fmt::Debug for ModelRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelRegistry")
            .field(
                "models",
                &self.models.values().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("aliases", &self.aliases.values().collect::<Vec<_>>())
            .field("default", &self.default)
            .field("fallback", &self.fallback.is_some())
            .field("stand_in", &self.stand_in.is_some())
            .finish()
    }
}

impl ModelRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `model` under `name` (replacing a model of the same name, case-insensitively).
    pub fn register(&mut self, name: impl Into<String>, model: Arc<dyn ChatModel>) -> &mut Self {
        let name = name.into();
        self.models.insert(name.to_lowercase(), (name, model));
        self
    }

    /// Makes `alias` point at `target`: a registered name, another alias or a spec string for the
    /// fallback.
    pub fn alias(&mut self, alias: impl Into<String>, target: impl Into<String>) -> &mut Self {
        let alias = alias.into();
        self.aliases
            .insert(alias.to_lowercase(), (alias, target.into()));
        self
    }

    /// Sets what `default` resolves to.
    pub fn set_default(&mut self, name: impl Into<String>) -> &mut Self {
        self.default = Some(name.into());
        self
    }

    /// Sets the factory used for names that are neither registered nor aliases.
    pub fn set_fallback(&mut self, factory: ModelFactory) -> &mut Self {
        self.fallback = Some(factory);
        self
    }

    /// Sets which names are answered with the default model, with a reason (see [`StandIn`]).
    pub fn set_stand_in(&mut self, stand_in: StandIn) -> &mut Self {
        self.stand_in = Some(stand_in);
        self
    }

    /// [`register`](Self::register), builder style.
    #[must_use]
    pub fn with_model(mut self, name: impl Into<String>, model: Arc<dyn ChatModel>) -> Self {
        self.register(name, model);
        self
    }

    /// [`alias`](Self::alias), builder style.
    #[must_use]
    pub fn with_alias(mut self, alias: impl Into<String>, target: impl Into<String>) -> Self {
        self.alias(alias, target);
        self
    }

    /// [`set_default`](Self::set_default), builder style.
    #[must_use]
    pub fn with_default(mut self, name: impl Into<String>) -> Self {
        self.set_default(name);
        self
    }

    /// [`set_fallback`](Self::set_fallback), builder style.
    #[must_use]
    pub fn with_fallback(mut self, factory: ModelFactory) -> Self {
        self.set_fallback(factory);
        self
    }

    /// The name `default` points at, if set.
    pub fn default_name(&self) -> Option<&str> {
        self.default.as_deref()
    }

    /// Registered model names and aliases (plus `default` when set), sorted, as given.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .models
            .values()
            .map(|(n, _)| n.clone())
            .chain(self.aliases.values().map(|(a, _)| a.clone()))
            .collect();
        if self.default.is_some() {
            v.push("default".to_string());
        }
        v.sort();
        v.dedup();
        v
    }

    /// The model `name` refers to; see the type's docs for the lookup order.
    pub fn resolve(&self, name: &str) -> Result<Arc<dyn ChatModel>, ModelError> {
        self.resolve_noted(name).map(|(model, _)| model)
    }

    /// [`resolve`](Self::resolve), and why the default model answers for `name` when the
    /// [`StandIn`] claimed it (`None` when `name` resolved to a model of its own).
    pub fn resolve_noted(
        &self,
        name: &str,
    ) -> Result<(Arc<dyn ChatModel>, Option<String>), ModelError> {
        self.lookup(name, true)
    }

    /// The lookup; `stand_in`: whether the [`StandIn`] is asked (not when looking up the model
    /// that stands in).
    fn lookup(
        &self,
        name: &str,
        stand_in: bool,
    ) -> Result<(Arc<dyn ChatModel>, Option<String>), ModelError> {
        let asked = name.trim();
        let mut current = asked.to_string();
        for _ in 0..=MAX_ALIAS_HOPS {
            let key = current.to_lowercase();
            if key.is_empty() || key == "default" {
                match &self.default {
                    Some(d) if !d.trim().eq_ignore_ascii_case("default") => {
                        current = d.trim().to_string();
                        continue;
                    }
                    _ => return Err(self.unknown(asked)),
                }
            }
            if let Some((_, target)) = self.aliases.get(&key) {
                current = target.trim().to_string();
                continue;
            }
            if let Some((_, model)) = self.models.get(&key) {
                return Ok((model.clone(), None));
            }
            if stand_in && let Some(why) = self.stand_in.as_ref().and_then(|s| s(&current)) {
                return match self.lookup("default", false) {
                    Ok((model, _)) => Ok((model, Some(why))),
                    Err(_) => Err(self.unknown(asked)),
                };
            }
            return self
                .build(&current)
                .unwrap_or_else(|| Err(self.unknown(asked)))
                .map(|model| (model, None));
        }
        Err(ModelError::Config(format!(
            "model alias `{asked}` does not resolve within {MAX_ALIAS_HOPS} steps (an alias cycle?)"
        )))
    }

    /// The model `default` resolves to.
    pub fn default_model(&self) -> Result<Arc<dyn ChatModel>, ModelError> {
        self.resolve("default")
    }

    fn build(&self, spec: &str) -> Option<Result<Arc<dyn ChatModel>, ModelError>> {
        let factory = self.fallback.as_ref()?;
        {
            let cache = self.built.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(m) = cache.get(spec) {
                return Some(Ok(m.clone()));
            }
        }
        // The factory runs without the cache lock held.
        let built = factory(spec)?;
        if let Ok(model) = &built {
            let mut cache = self.built.lock().unwrap_or_else(|p| p.into_inner());
            if cache.len() >= MAX_BUILT {
                cache.clear();
            }
            cache.insert(spec.to_string(), model.clone());
        }
        Some(built)
    }

    fn unknown(&self, name: &str) -> ModelError {
        ModelError::UnknownModel {
            name: name.to_string(),
            known: self.names(),
        }
    }
}
