//! A kind whose agents named `bg…` run in the background by default (a Markdown agent's
//! `background: true`), for the tests of what each offered tool set says and does.

use subagent_spi::*;
use task_tool::{TaskTool, TaskToolBuilder};

pub(crate) const KIND: Kind = Kind::from_static("OFFER");

#[derive(Debug)]
pub(crate) struct Def {
    name: String,
    description: String,
    reference: SubagentReference,
}

impl_subagent_definition!(Def {
    fn runs_in_background_by_default(&self) -> bool {
        self.name.starts_with("bg")
    }
});

/// Answers at once, except `slow` and `listener`, which work until they are cancelled
/// (`listener` takes messages).
pub(crate) struct OfferKind;

#[async_trait]
impl SubagentKind for OfferKind {
    type Agent = Def;

    fn kind(&self) -> Kind {
        KIND
    }

    async fn resolve(&self, reference: &SubagentReference) -> Result<Def, SubagentError> {
        Ok(Def {
            name: reference.uri.clone(),
            description: "test agent".into(),
            reference: reference.clone(),
        })
    }

    fn message_delivery(&self, agent: &Def) -> Option<&'static str> {
        (agent.name == "listener").then_some("it reads it at its next step")
    }

    async fn run(
        &self,
        agent: &Def,
        call: TaskCall,
        ctx: TaskContext,
    ) -> Result<TaskOutcome, SubagentError> {
        if matches!(agent.name.as_str(), "slow" | "listener") {
            ctx.cancel().cancelled().await;
            return Ok(TaskOutcome::with_status("", TaskStatus::Cancelled));
        }
        Ok(TaskOutcome::completed(format!(
            "{} did {}",
            agent.name, call.prompt
        )))
    }
}

/// A `TaskTool` over [`OfferKind`] with the agents `names`, its builder first passed to `with`.
pub(crate) async fn offer_tool(
    names: &[&str],
    with: impl FnOnce(TaskToolBuilder) -> TaskToolBuilder,
) -> TaskTool {
    let refs = names.iter().map(|n| SubagentReference::new(*n, KIND));
    super::build_tool(SubagentType::from(OfferKind), refs, with).await
}
