//! [`CardVerification`]: how [`A2aResolver`](super::A2aResolver) checks agent card signatures,
//! and [`A2aClient`](super::A2aClient) those of the extended card.

use serde_json::Value;

use super::endpoint::read_body_limited;
use crate::error::A2aError;
use crate::signing::{
    CardSignatureError, CardTrust, TrustedKeys, Verified, add_jwks, card_signatures, verify_card,
};

/// The most bytes read from a `jku` JWK Set.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;

/// The card-signature policy of a resolver: the [`CardTrust`] level, the trusted public keys,
/// and the `jku` URLs (prefixes) whose JWK Sets may be fetched for a key id not among them.
///
/// The default, [`CardTrust::VerifyIfPresent`] with no keys, resolves every card as before and
/// fails only on a signature by a known key that does not hold: a client can only check
/// signatures whose keys it was given, and refusing signed cards it cannot check would break
/// peers that merely sign. Use [`CardTrust::Require`] to accept only cards signed by a key you
/// trust.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CardVerification {
    /// The policy.
    pub trust: CardTrust,
    /// Keys trusted for any card.
    pub keys: TrustedKeys,
    /// `jku` URL prefixes that may be fetched (e.g. `https://agents.example.com/`): a `jku`
    /// is fetched only when it equals a prefix or continues it at a `/`, at most
    /// [`MAX_JWKS_BYTES`], with the resolver's HTTP client and a 10 s timeout.
    pub jku_allow: Vec<String>,
}

impl CardVerification {
    /// A policy with this trust level and keys, no `jku` fetching.
    pub fn new(trust: CardTrust, keys: TrustedKeys) -> Self {
        Self {
            trust,
            keys,
            jku_allow: Vec::new(),
        }
    }

    /// Allows fetching JWK Sets under this URL prefix (builder style).
    #[must_use]
    pub fn allow_jku(mut self, prefix: impl Into<String>) -> Self {
        self.jku_allow.push(prefix.into());
        self
    }

    fn jku_allowed(&self, jku: &str) -> bool {
        self.jku_allow.iter().any(|p| {
            jku == p
                || jku
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| p.ends_with('/') || rest.starts_with('/'))
        })
    }

    /// Checks the signatures of the card fetched from `url` (its body). `Ok` when the card is
    /// acceptable under the policy.
    pub(crate) async fn check(
        &self,
        http: &reqwest::Client,
        url: &str,
        body: &[u8],
    ) -> Result<(), A2aError> {
        if self.trust == CardTrust::Ignore {
            return Ok(());
        }
        let Ok(card) = serde_json::from_slice::<Value>(body) else {
            // Not JSON: the card parser says so.
            return Ok(());
        };
        self.check_value(http, url, &card).await
    }

    /// [`check`](Self::check) for a card already parsed (e.g. the result of
    /// `GetExtendedAgentCard`); `url` names where it came from.
    pub(crate) async fn check_value(
        &self,
        http: &reqwest::Client,
        url: &str,
        card: &Value,
    ) -> Result<(), A2aError> {
        if self.trust == CardTrust::Ignore {
            return Ok(());
        }
        let mut keys = self.keys.clone();
        let mut verdict = verify_card(url, card, &keys)?;
        if let Verified::UnknownKeys(_) = verdict {
            // Keys from allowed `jku` URLs, for the signatures naming one.
            let sigs = card_signatures(card).unwrap_or_default();
            let mut fetched = false;
            for (info, _, _) in sigs.iter().take(4) {
                let Some(jku) = info.jku.as_deref().filter(|j| self.jku_allowed(j)) else {
                    continue;
                };
                match fetch_jwks(http, jku).await {
                    Ok(bytes) => fetched |= add_jwks(&mut keys, &bytes).is_ok(),
                    Err(e) => {
                        tracing::debug!(jku, error = %e, "could not fetch the card's JWK Set")
                    }
                }
            }
            if fetched {
                verdict = verify_card(url, card, &keys)?;
            }
        }
        match (verdict, self.trust) {
            (Verified::Signed { kid }, _) => {
                tracing::debug!(url, kid, "agent card signature verified");
                Ok(())
            }
            (Verified::Unsigned, CardTrust::Require) => Err(CardSignatureError::Untrusted {
                url: url.to_string(),
                detail: "the card is not signed".into(),
            }
            .into()),
            (Verified::UnknownKeys(kids), CardTrust::Require) => {
                Err(CardSignatureError::Untrusted {
                    url: url.to_string(),
                    detail: format!("signed by untrusted key(s) {}", kids.join(", ")),
                }
                .into())
            }
            (Verified::UnknownKeys(kids), _) => {
                tracing::debug!(url, kids = ?kids, "agent card signed by keys this client does not know; not verified");
                Ok(())
            }
            (Verified::Unsigned, _) => Ok(()),
        }
    }
}

async fn fetch_jwks(http: &reqwest::Client, jku: &str) -> Result<Vec<u8>, A2aError> {
    let resp = http
        .get(jku)
        .header(http::header::ACCEPT, "application/json")
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| A2aError::http(jku, e))?;
    if !resp.status().is_success() {
        return Err(A2aError::status(jku, resp.status().as_u16(), b""));
    }
    read_body_limited(resp, jku, MAX_JWKS_BYTES).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jku_prefixes_match_at_path_boundaries() {
        let v = CardVerification::default()
            .allow_jku("https://keys.example.com")
            .allow_jku("https://a.example.org/jwks/");
        assert!(v.jku_allowed("https://keys.example.com/jwks.json"));
        assert!(v.jku_allowed("https://keys.example.com"));
        assert!(!v.jku_allowed("https://keys.example.com.evil.net/jwks.json"));
        assert!(v.jku_allowed("https://a.example.org/jwks/x.json"));
        assert!(!v.jku_allowed("https://a.example.org/other.json"));
        assert!(!v.jku_allowed("http://keys.example.com/jwks.json"));
    }
}
