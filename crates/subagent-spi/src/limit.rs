//! Limits named by an enum: what stopped a run or refused a call.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Whose limit a [`Limit`] is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitScope {
    /// The run's own limit (its definition's or its caller's): `max_turns=30`.
    Run,
    /// The budget shared by a delegated subtree: `budget_tokens=1000`.
    Budget,
    /// One agent's own budget (a per-agent budget): `budget_tokens=1000 (agent reviewer)`.
    Agent(String),
}

/// A limit that stopped a run ([`TaskOutcome::limit`](crate::TaskOutcome::limit)) or refused a
/// call ([`SubagentError::LimitReached`](crate::SubagentError::LimitReached)).
///
/// Shown, and carried on the wire, as the text it always was ([`Display`](fmt::Display) and
/// [`FromStr`] are inverses): `max_turns=30`, `max_tokens=5000`, `deadline`,
/// `budget_usd=0.5 (agent reviewer)`, `budget_time=60s`, `max_depth=3: ...`; a limit without
/// a variant of its own is [`Other`](Self::Other), its text as it came.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Limit {
    /// Model turns: `max_turns=N` (the run's) or `budget_turns=N` (a budget's).
    Turns {
        /// The limit.
        max: u32,
        /// Whose limit.
        scope: LimitScope,
    },
    /// Tokens (input + output): `max_tokens=N` or `budget_tokens=N`.
    Tokens {
        /// The limit.
        max: u64,
        /// Whose limit.
        scope: LimitScope,
    },
    /// Cost in USD, counted with the host's model prices: `budget_usd=X`.
    CostUsd {
        /// The limit (finite: a budget is spent only by crossing it).
        max: f64,
        /// Whose limit.
        scope: LimitScope,
    },
    /// Wall time of a budget: `budget_time=Xs`.
    Time {
        /// The limit.
        max: Duration,
        /// Whose limit.
        scope: LimitScope,
    },
    /// The run's deadline passed (its caller's timeout): `deadline`.
    Deadline,
    /// The nesting limit: `max_depth=N: a run at depth D may not delegate further`.
    Depth {
        /// The nesting limit.
        max: u32,
        /// The depth of the run that asked to delegate.
        depth: u32,
    },
    /// Any other limit, named in words (e.g. `max_background=4: ...`,
    /// `stalled: no progress for 600 s in ...`).
    Other(String),
}

// A cost limit is never NaN: a budget is spent only when its cost exceeds it.
impl Eq for Limit {}

impl Limit {
    /// A limit named in words, for a limit without a variant of its own.
    pub fn other(text: impl Into<String>) -> Self {
        Limit::Other(text.into())
    }

    /// The scope of a turn, token, cost or time limit.
    pub fn scope(&self) -> Option<&LimitScope> {
        match self {
            Limit::Turns { scope, .. }
            | Limit::Tokens { scope, .. }
            | Limit::CostUsd { scope, .. }
            | Limit::Time { scope, .. } => Some(scope),
            _ => None,
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, value, scope) = match self {
            Limit::Deadline => return f.write_str("deadline"),
            Limit::Depth { max, depth } => {
                return write!(
                    f,
                    "max_depth={max}: a run at depth {depth} may not delegate further"
                );
            }
            Limit::Other(text) => return f.write_str(text),
            Limit::Turns { max, scope } => ("turns", max.to_string(), scope),
            Limit::Tokens { max, scope } => ("tokens", max.to_string(), scope),
            Limit::CostUsd { max, scope } => ("usd", max.to_string(), scope),
            Limit::Time { max, scope } => ("time", format!("{}s", max.as_secs_f64()), scope),
        };
        match scope {
            LimitScope::Run => write!(f, "max_{what}={value}"),
            LimitScope::Budget => write!(f, "budget_{what}={value}"),
            LimitScope::Agent(agent) => write!(f, "budget_{what}={value} (agent {agent})"),
        }
    }
}

impl FromStr for Limit {
    type Err = std::convert::Infallible;

    /// Reads the text [`Display`](fmt::Display) writes; any other text is
    /// [`Other`](Limit::Other). Never fails.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parsed = parse(text).filter(|l| l.to_string() == text);
        Ok(parsed.unwrap_or_else(|| Limit::Other(text.to_string())))
    }
}

fn parse(text: &str) -> Option<Limit> {
    if text == "deadline" {
        return Some(Limit::Deadline);
    }
    if let Some(rest) = text.strip_prefix("max_depth=") {
        let (max, rest) = rest.split_once(": a run at depth ")?;
        let depth = rest.strip_suffix(" may not delegate further")?;
        return Some(Limit::Depth {
            max: max.parse().ok()?,
            depth: depth.parse().ok()?,
        });
    }
    let (name, value) = text.split_once('=')?;
    let (prefix, what) = name.split_once('_')?;
    let (value, scope) = match prefix {
        "max" => (value, LimitScope::Run),
        "budget" => match value.split_once(" (agent ") {
            Some((v, agent)) => (v, LimitScope::Agent(agent.strip_suffix(')')?.to_string())),
            None => (value, LimitScope::Budget),
        },
        _ => return None,
    };
    Some(match what {
        "turns" => Limit::Turns {
            max: value.parse().ok()?,
            scope,
        },
        "tokens" => Limit::Tokens {
            max: value.parse().ok()?,
            scope,
        },
        "usd" if scope != LimitScope::Run => Limit::CostUsd {
            max: value.parse().ok().filter(|v: &f64| v.is_finite())?,
            scope,
        },
        "time" if scope != LimitScope::Run => Limit::Time {
            max: Duration::try_from_secs_f64(value.strip_suffix('s')?.parse().ok()?).ok()?,
            scope,
        },
        _ => return None,
    })
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(text.parse().unwrap_or_else(|never| match never {}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_back_from_the_text_they_show() {
        let agent = || LimitScope::Agent("reviewer".into());
        for (limit, text) in [
            (
                Limit::Turns {
                    max: 30,
                    scope: LimitScope::Run,
                },
                "max_turns=30",
            ),
            (
                Limit::Tokens {
                    max: 5000,
                    scope: LimitScope::Run,
                },
                "max_tokens=5000",
            ),
            (
                Limit::Tokens {
                    max: 100,
                    scope: LimitScope::Budget,
                },
                "budget_tokens=100",
            ),
            (
                Limit::Turns {
                    max: 1,
                    scope: agent(),
                },
                "budget_turns=1 (agent reviewer)",
            ),
            (
                Limit::CostUsd {
                    max: 0.01,
                    scope: LimitScope::Budget,
                },
                "budget_usd=0.01",
            ),
            (
                Limit::Time {
                    max: Duration::from_millis(1500),
                    scope: agent(),
                },
                "budget_time=1.5s (agent reviewer)",
            ),
            (Limit::Deadline, "deadline"),
            (
                Limit::Depth { max: 3, depth: 3 },
                "max_depth=3: a run at depth 3 may not delegate further",
            ),
            (
                Limit::other("stalled: no progress for 600 s in the model call (turn 2)"),
                "stalled: no progress for 600 s in the model call (turn 2)",
            ),
        ] {
            assert_eq!(limit.to_string(), text);
            assert_eq!(text.parse::<Limit>().ok(), Some(limit.clone()), "{text}");
            let json = serde_json::to_string(&limit).expect("serializes");
            assert_eq!(json, format!("{text:?}"));
            assert_eq!(serde_json::from_str::<Limit>(&json).ok(), Some(limit));
        }
        // Text that only looks like a known limit stays as it came.
        for text in [
            "max_turns=x",
            "max_usd=1",
            "budget_turns=1 (agent x",
            "max_turns=007",
            "budget_usd=NaN",
            "",
        ] {
            assert_eq!(text.parse::<Limit>().ok(), Some(Limit::other(text)));
        }
    }
}
