//! `a2a-tck-sut`: the system under test for the A2A TCK (`a2aproject/a2a-tck`, branch
//! `1.0-dev`), built on `subagent_a2a::server`.
//!
//! Behaviour is keyed on the `messageId` prefix (or the same prefix at the start of the first
//! text part), as `scenarios/*.feature` of the TCK define; other messages complete the task
//! with an echo. Serves one agent at the root, with JSON-RPC and HTTP+JSON interfaces, and
//! gRPC on a second port with `--grpc-port N` (feature `grpc-server`).
//!
//! ```text
//! cargo run -p subagent-a2a --example a2a-tck-sut -- --port 9999
//! ```
//!
//! `TCK_STREAMING_TIMEOUT` (seconds, default 2) sets how long `test-resubscribe-message-id*`
//! tasks run (twice that).
//!
//! `--legacy-card` prepares the SUT for the TCK's `0.3.x` branch and stock 0.3 clients: the
//! 0.3 card at `agent-card.json` for requests without `A2A-Version`, 0.3 sends without
//! `blocking` answered at once, and a plain 0.3 `message/send` (no scenario prefix, not
//! streamed) leaves its task `working` and takes follow-up messages until
//! `TCK_CONVERSATION_IDLE` seconds (default 3) pass without one, then completes: the 0.3 TCK
//! checks a task right after a plain send, continues it and cancels it.
//!
//! Access options (shared with `a2a-tck-sut-store`, see [`Access`]): `--bearer-env NAME`
//! requires `Authorization: Bearer <token>` with the token held in the environment variable
//! `NAME`; `--extended-card` then offers an extended card (one more skill) to authenticated
//! callers; `--public-url URL` and `--grpc-public-addr HOST:PORT` set the addresses the card
//! lists, e.g. those of `a2a-auth-proxy`, through which the TCK runs as an authenticated
//! client (see `docs/a2a-conformance.md`):
//!
//! ```text
//! A2A_TCK_TOKEN=... a2a-tck-sut --port 9911 --grpc-port 9912 --bearer-env A2A_TCK_TOKEN \
//!     --extended-card --public-url http://127.0.0.1:9901 --grpc-public-addr 127.0.0.1:9902
//! ```
//!
//! Tasks live in memory here; `subagent-store`'s example `a2a-tck-sut-store` serves the same
//! agent with `--store sqlite:PATH` or `--store postgres://...` (it includes this file).

use std::time::Duration;

use subagent_a2a::server::{
    A2aServer, A2aServerBuilder, AgentInfo, AgentMount, HandlerError, HandlerRequest, ServerAuth,
    SinkError, TaskEventSink, handler_fn,
};
use subagent_a2a::types::ProtocolVersion;
use subagent_a2a::types::v1::{self, Artifact, Part, PartContent, TaskState};
use subagent_spi::CancellationToken;

/// The TCK agent's settings; [`answer`] runs it.
#[derive(Clone, Copy)]
struct TckAgent {
    streaming_timeout: Duration,
    /// 0.3 TCK mode (see the crate docs): how long a plain 0.3 task waits for follow-ups.
    v03_conversation: Option<Duration>,
}

fn artifact(id: &str, part: Part) -> Artifact {
    Artifact {
        artifact_id: id.to_string(),
        name: None,
        description: None,
        parts: vec![part],
        metadata: None,
        extensions: Vec::new(),
    }
}

/// Sends `part` as the whole artifact `id`, then completes the task.
async fn complete_with(ev: &TaskEventSink, id: &str, part: Part) -> Result<(), SinkError> {
    ev.artifact(artifact(id, part), false, true).await?;
    ev.complete(None).await
}

fn file_part(content: PartContent) -> Part {
    let mut p = Part::from_content(content);
    p.filename = Some("output.txt".into());
    p.media_type = Some("text/plain".into());
    p
}

/// The scenario a message asks for: its messageId, else its first text part.
fn scenario(req: &HandlerRequest) -> String {
    let id = &req.message.message_id;
    if id.starts_with("tck-") || id.starts_with("test-resubscribe-message-id") {
        return id.clone();
    }
    req.message
        .parts
        .iter()
        .find_map(|p| p.as_text())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Answers one message as the scenario it names asks (see the crate docs).
async fn answer(
    agent: TckAgent,
    req: HandlerRequest,
    ev: TaskEventSink,
    cancel: CancellationToken,
) -> Result<(), HandlerError> {
    let key = scenario(&req);
    let k = key.as_str();
    let sent = async {
        if k.starts_with("tck-message-response") {
            ev.reply_text("Direct message response").await?;
        } else if k.starts_with("tck-input-required") {
            ev.require_input("Please provide more input").await?;
        } else if k.starts_with("tck-reject-task") {
            ev.reject("rejected").await?;
        } else if k.starts_with("tck-artifact-text") {
            complete_with(&ev, "text-artifact", Part::text("Generated text content")).await?;
        } else if k.starts_with("tck-artifact-file-url") {
            let p = file_part(PartContent::Url("https://example.com/output.txt".into()));
            complete_with(&ev, "file-url-artifact", p).await?;
        } else if k.starts_with("tck-artifact-file") {
            // "Generated file content", base64.
            let p = file_part(PartContent::Raw("R2VuZXJhdGVkIGZpbGUgY29udGVudA==".into()));
            complete_with(&ev, "file-artifact", p).await?;
        } else if k.starts_with("tck-artifact-data") {
            let p = Part::data(serde_json::json!({"key": "value", "count": 42}));
            complete_with(&ev, "data-artifact", p).await?;
        } else if k.starts_with("tck-stream-002") {
            ev.complete(None).await?;
        } else if k.starts_with("tck-stream-artifact-file") {
            ev.working().await?;
            let p = file_part(PartContent::Raw("R2VuZXJhdGVkIGZpbGUgY29udGVudA==".into()));
            complete_with(&ev, "stream-file-artifact", p).await?;
        } else if k.starts_with("tck-stream-artifact-chunked") {
            ev.working().await?;
            ev.artifact(
                artifact("chunked-artifact", Part::text("chunk-1 ")),
                false,
                false,
            )
            .await?;
            ev.artifact(
                artifact("chunked-artifact", Part::text("chunk-2")),
                true,
                true,
            )
            .await?;
            ev.complete(None).await?;
        } else if k.starts_with("tck-stream-") {
            let text = if k.starts_with("tck-stream-001") {
                "Stream hello from TCK"
            } else if k.starts_with("tck-stream-003") {
                "Stream task lifecycle"
            } else if k.starts_with("tck-stream-ordering-001") {
                "Ordered output"
            } else if k.starts_with("tck-stream-artifact-text") {
                "Streamed text content"
            } else {
                "Stream output"
            };
            ev.working().await?;
            complete_with(&ev, "stream-artifact", Part::text(text)).await?;
        } else if k.starts_with("test-resubscribe-message-id") {
            ev.working().await?;
            tokio::select! {
                _ = tokio::time::sleep(agent.streaming_timeout * 2) => {}
                _ = cancel.cancelled() => {
                    ev.status(TaskState::Canceled, None).await?;
                    return Ok(());
                }
            }
            ev.complete(None).await?;
        } else if k.starts_with("tck-complete-task") {
            ev.complete(Some(ev.agent_text("Hello from TCK"))).await?;
        } else if let Some(idle) = agent
            .v03_conversation
            .filter(|_| req.version == ProtocolVersion::V03 && !req.streaming)
        {
            // Working, taking follow-ups, until `idle` passes without one.
            ev.working().await?;
            let mut inbox = ev.inbox(16);
            let mut last = req.text();
            loop {
                tokio::select! {
                    m = inbox.next() => match m {
                        Some(m) => {
                            last = m.parts.iter().filter_map(|p| p.as_text()).collect();
                        }
                        None => break,
                    },
                    _ = tokio::time::sleep(idle) => break,
                    _ = cancel.cancelled() => {
                        ev.status(TaskState::Canceled, None).await?;
                        return Ok(());
                    }
                }
            }
            let echo = format!("Echo: {last}");
            ev.complete(Some(ev.agent_text(echo))).await?;
        } else {
            let echo = format!("Echo: {}", req.text());
            ev.complete(Some(ev.agent_text(echo))).await?;
        }
        Ok::<(), subagent_a2a::server::SinkError>(())
    }
    .await;
    // A closed sink means the task was canceled meanwhile.
    let _ = sent;
    Ok(())
}

/// The TCK agent at the root, as every SUT serves it.
pub(crate) fn tck_mount() -> AgentMount {
    tck_mount_with(false)
}

/// The TCK agent; `v03_tck`: the 0.3 TCK mode of `--legacy-card` (see the crate docs).
pub(crate) fn tck_mount_with(v03_tck: bool) -> AgentMount {
    let secs: f64 = std::env::var("TCK_STREAMING_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .unwrap_or(2.0);
    let idle: f64 = std::env::var("TCK_CONVERSATION_IDLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .unwrap_or(3.0);
    let agent = TckAgent {
        streaming_timeout: Duration::from_secs_f64(secs),
        v03_conversation: v03_tck.then(|| Duration::from_secs_f64(idle)),
    };
    let handler = handler_fn(move |req, ev, cancel| answer(agent, req, ev, cancel));
    AgentMount::new("/", tck_info(), handler)
}

/// The TCK agent's public card.
fn tck_info() -> AgentInfo {
    AgentInfo::new(
        "TCK System Under Test",
        "An A2A agent implementing the TCK scenarios, built on subagent-a2a.",
    )
    // TCK 1.0-dev's CORE-SEND-003 requirement has no expected error, so its runner counts the
    // spec's ContentTypeNotSupportedError as a failure; the SUT accepts every media type (the
    // server's check is covered by our own tests).
    .with_input_modes(["*/*"])
    .with_skill(skill(
        "tck",
        "TCK scenarios",
        "Behaviour keyed on the messageId prefix (scenarios/*.feature).",
    ))
}

fn skill(id: &str, name: &str, description: &str) -> v1::AgentSkill {
    v1::AgentSkill {
        id: id.into(),
        name: name.into(),
        description: description.into(),
        tags: vec!["tck".into()],
        examples: Vec::new(),
        input_modes: Vec::new(),
        output_modes: Vec::new(),
        security_requirements: Vec::new(),
    }
}

/// The options both SUTs (this one and `a2a-tck-sut-store`) share: gRPC, credentials, the
/// extended card and the addresses the card lists; both offer push notifications.
#[derive(Default)]
pub(crate) struct Access {
    /// `--grpc-port N`: serve gRPC on 127.0.0.1:N (feature `grpc-server`).
    grpc_port: Option<u16>,
    /// `--bearer-env NAME`: callers must send `Authorization: Bearer <token>` with the token
    /// held in that environment variable (never printed).
    bearer: Option<String>,
    /// `--extended-card`: offer an extended card (the public one plus a skill) to
    /// authenticated callers; needs `--bearer-env`.
    extended_card: bool,
    /// `--public-url URL`: the base URL of the card's JSON-RPC and HTTP+JSON interfaces (e.g.
    /// a proxy's), instead of the request's `Host`.
    public_url: Option<String>,
    /// `--grpc-public-addr HOST:PORT`: the card's gRPC interface (default `127.0.0.1:N` of
    /// `--grpc-port`).
    grpc_public: Option<String>,
}

impl Access {
    /// The options' usage text.
    pub(crate) const USAGE: &'static str = "[--grpc-port N] [--bearer-env NAME] [--extended-card] \
        [--public-url URL] [--grpc-public-addr HOST:PORT]";

    /// Takes `flag` if it is one of these options (reading its value with `value`): `Ok(true)`;
    /// `Ok(false)` for other flags.
    pub(crate) fn take(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<String, String>,
    ) -> Result<bool, String> {
        match flag {
            "--grpc-port" => {
                let v = value()?;
                let p = v
                    .parse()
                    .map_err(|_| format!("invalid --grpc-port `{v}`"))?;
                self.grpc_port = Some(p);
            }
            "--bearer-env" => {
                let name = value()?;
                let token = std::env::var(&name)
                    .ok()
                    .filter(|t| !t.is_empty())
                    .ok_or(format!(
                        "--bearer-env: the environment variable `{name}` is unset or empty"
                    ))?;
                self.bearer = Some(token);
            }
            "--extended-card" => self.extended_card = true,
            "--public-url" => self.public_url = Some(value()?),
            "--grpc-public-addr" => self.grpc_public = Some(value()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Applies the options to the TCK agent and the server, which offers push notifications
    /// (to webhooks on this machine too: the TCK's receiver listens on `localhost`).
    pub(crate) fn apply(
        &self,
        mut mount: AgentMount,
        builder: A2aServerBuilder,
    ) -> Result<(AgentMount, A2aServerBuilder), String> {
        let mut builder = builder.push_notifications(true).push_allow_private(true);
        if let Some(p) = self.grpc_port {
            if !cfg!(feature = "grpc-server") {
                return Err("--grpc-port needs the `grpc-server` feature".into());
            }
            let addr = self
                .grpc_public
                .clone()
                .unwrap_or_else(|| format!("127.0.0.1:{p}"));
            builder = builder.grpc_url(addr);
        } else if self.grpc_public.is_some() {
            return Err("--grpc-public-addr needs --grpc-port".into());
        }
        if let Some(url) = &self.public_url {
            builder = builder.public_url(url.clone());
        }
        if let Some(token) = &self.bearer {
            mount = mount.with_auth(ServerAuth::bearer(token.clone()));
        }
        if self.extended_card {
            if self.bearer.is_none() {
                return Err("--extended-card needs --bearer-env (the extended card is for authenticated callers only)".into());
            }
            let mut extended = tck_info().with_skill(skill(
                "tck-extended",
                "TCK extended skill",
                "Listed on the extended card only, for authenticated callers.",
            ));
            extended.description = format!("{} (extended card)", extended.description);
            mount = mount.with_extended_card(extended);
        }
        Ok((mount, builder))
    }

    /// Serves gRPC on `--grpc-port`, if given, in the background (call within the runtime).
    pub(crate) async fn spawn_grpc(&self, server: &A2aServer, name: &str) -> std::io::Result<()> {
        #[cfg(feature = "grpc-server")]
        if let Some(p) = self.grpc_port {
            let grpc = tokio::net::TcpListener::bind(("127.0.0.1", p)).await?;
            eprintln!("{name} serving gRPC on 127.0.0.1:{p}");
            let s = server.clone();
            tokio::spawn(async move {
                if let Err(e) = s.serve_grpc(grpc, std::future::pending::<()>()).await {
                    eprintln!("gRPC server failed: {e}");
                }
            });
        }
        #[cfg(not(feature = "grpc-server"))]
        let _ = (server, name);
        Ok(())
    }
}

/// The command line, read as `--flag value` or `--flag=value` (both SUTs).
pub(crate) struct Flags {
    rest: std::iter::Skip<std::env::Args>,
    usage: String,
}

impl Flags {
    /// The process's arguments; `usage` ends the message of a missing value.
    pub(crate) fn new(usage: String) -> Self {
        Self {
            rest: std::env::args().skip(1),
            usage,
        }
    }

    /// The next flag, and a reader of its value (the `=value` part or the next argument).
    pub(crate) fn next_flag(
        &mut self,
    ) -> Option<(String, impl FnMut() -> Result<String, String> + '_)> {
        let a = self.rest.next()?;
        let (flag, mut inline) = match a.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (a, None),
        };
        let (rest, usage, name) = (&mut self.rest, &self.usage, flag.clone());
        let value = move || {
            inline
                .take()
                .or_else(|| rest.next())
                .ok_or(format!("{name} needs a value; {usage}"))
        };
        Some((flag, value))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port: u16 = 9999;
    let mut legacy_card = false;
    let mut access = Access::default();
    let mut signer = None;
    let usage = format!(
        "usage: a2a-tck-sut [--port N] [--legacy-card] [--card-signing-key FILE] {}",
        Access::USAGE
    );
    let mut flags = Flags::new(usage.clone());
    while let Some((flag, mut value)) = flags.next_flag() {
        match flag.as_str() {
            "--port" => {
                let v = value()?;
                port = v.parse().map_err(|_| format!("invalid --port `{v}`"))?;
            }
            "--legacy-card" => legacy_card = true,
            // Signs the cards (JWS, A2A §8.4) with a PEM or JWK private key (ES256 / EdDSA).
            "--card-signing-key" => {
                signer = Some(subagent_a2a::signing::CardSigner::from_file(value()?)?);
            }
            other => {
                if !access.take(other, &mut value)? {
                    return Err(format!("unknown argument `{other}`; {usage}").into());
                }
            }
        }
    }
    let (mount, mut builder) = access.apply(
        if legacy_card {
            tck_mount_with(true)
        } else {
            tck_mount()
        },
        A2aServer::builder(),
    )?;
    if let Some(s) = signer {
        eprintln!(
            "a2a-tck-sut signs its cards with {} key `{}`",
            s.alg(),
            s.kid()
        );
        builder = builder.card_signer(s);
    }
    let server = builder
        // For the 0.3.x TCK and stock 0.3 clients: header-less card requests get the 0.3 card
        // (see ServerConfig::legacy_card_discovery and docs/a2a-conformance.md).
        .legacy_card_discovery(legacy_card)
        // The 0.3 TCK sends plain `message/send`s and expects the task still running.
        .v03_blocking_by_default(!legacy_card)
        .mount(mount)
        .build()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        eprintln!("a2a-tck-sut listening on http://127.0.0.1:{port}");
        access.spawn_grpc(&server, "a2a-tck-sut").await?;
        server.serve(listener, std::future::pending::<()>()).await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
