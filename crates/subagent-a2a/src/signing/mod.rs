//! Agent card signatures (A2A §8.4): JWS (RFC 7515) with a detached payload, the card without
//! its `signatures` canonicalized with JCS (RFC 8785).
//!
//! - [`CardSigner`] signs (the server attaches its signatures to every card it serves when
//!   `ServerConfig::card_signer` is set). Keys: ES256 (P-256) or EdDSA (Ed25519), read from
//!   PEM (PKCS#8, SEC1) or a JWK; the `kid` is given or the key's RFC 7638 thumbprint; a `jku`
//!   may be named.
//! - [`TrustedKeys`] + [`verify_card`] check the signatures of a card (the client does it
//!   under its [`CardTrust`] policy).
//!
//! The payload: §8.4.1 drops fields holding a default value unless they are `REQUIRED` or
//! proto `optional`; the official Python SDK 1.x drops every empty string, list and object
//! (its releases before 1.3 also escaped non-ASCII text), and the official JavaScript SDK's
//! proto round trip drops empty `REQUIRED` lists too (`skills: []`). The forms agree on most
//! cards; where they differ (a security requirement without scopes, an empty `REQUIRED` field)
//! the signer adds a second signature over the Python form, and the verifier accepts any of
//! the forms, so each kind of verifier finds one signature that holds (as §8.4.3 asks: at
//! least one).

pub mod jcs;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Map, Value, json};

use crate::types::v1;

/// Why a key could not be read or a card not signed / verified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SigningError {
    /// A key (PEM or JWK) could not be read.
    #[error("card signing key: {0}")]
    Key(String),
    /// A key file could not be read.
    #[error("card signing key file `{path}`: {source}")]
    KeyFile {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The card is not a JSON object.
    #[error("the agent card is not a JSON object")]
    NotAnObject,
}

/// Why a card's signatures were not accepted. Each names the card's URL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CardSignatureError {
    /// A signature by a known key does not hold: the card was changed after signing, or signed
    /// with another key.
    #[error(
        "the agent card at {url} has a signature by key `{kid}` that does not verify (the card was altered or the key is wrong)"
    )]
    Invalid {
        /// The card's URL.
        url: String,
        /// The key id of the failing signature.
        kid: String,
    },
    /// The trust policy requires a verified signature and none was found.
    #[error("the agent card at {url} has no signature by a trusted key ({detail})")]
    Untrusted {
        /// The card's URL.
        url: String,
        /// What was found: no signatures, or the key ids that are not trusted.
        detail: String,
    },
    /// A signature is not a well-formed JWS.
    #[error("the agent card at {url} has a malformed signature: {message}")]
    Malformed {
        /// The card's URL.
        url: String,
        /// What is wrong.
        message: String,
    },
}

/// The algorithms accepted (the key type decides; `alg` must match it).
#[derive(Clone)]
enum Private {
    Es256(p256::ecdsa::SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
}

/// A public key a signature may be checked with.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Public {
    Es256(p256::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
}

impl Public {
    fn alg(&self) -> &'static str {
        match self {
            Public::Es256(_) => "ES256",
            Public::Ed25519(_) => "EdDSA",
        }
    }

    /// The public JWK (no `kid`).
    fn jwk(&self) -> Map<String, Value> {
        let v = match self {
            Public::Es256(k) => {
                let p = k.to_encoded_point(false);
                json!({
                    "kty": "EC", "crv": "P-256",
                    "x": B64.encode(p.x().map(|x| &x[..]).unwrap_or_default()),
                    "y": B64.encode(p.y().map(|y| &y[..]).unwrap_or_default()),
                })
            }
            Public::Ed25519(k) => {
                json!({"kty": "OKP", "crv": "Ed25519", "x": B64.encode(k.as_bytes())})
            }
        };
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    /// RFC 7638 thumbprint: SHA-256 of the required members in lexicographic order.
    fn thumbprint(&self) -> String {
        use sha2::Digest as _;
        let text = jcs::canonicalize(&Value::Object(self.jwk()));
        B64.encode(sha2::Sha256::digest(text.as_bytes()))
    }

    fn verify(&self, alg: &str, input: &[u8], sig: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier as _;
        match self {
            Public::Es256(k) if alg == "ES256" => {
                p256::ecdsa::Signature::from_slice(sig).is_ok_and(|s| k.verify(input, &s).is_ok())
            }
            Public::Ed25519(k) if alg == "EdDSA" || alg == "Ed25519" => {
                ed25519_dalek::Signature::from_slice(sig)
                    .is_ok_and(|s| k.verify_strict(input, &s).is_ok())
            }
            _ => false,
        }
    }
}

/// Signs agent cards with one key. The private key is never printed.
#[derive(Clone)]
pub struct CardSigner {
    key: Private,
    kid: String,
    jku: Option<String>,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner")
            .field("alg", &self.public().alg())
            .field("kid", &self.kid)
            .field("jku", &self.jku)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl CardSigner {
    /// Reads a private key: PEM (`PRIVATE KEY` PKCS#8 of a P-256 or Ed25519 key, or `EC PRIVATE
    /// KEY` SEC1) or a JWK with `d` (`EC`/`P-256` or `OKP`/`Ed25519`). The `kid` is the JWK's
    /// `kid`, else the key's RFC 7638 thumbprint; [`CardSigner::with_kid`] overrides it.
    pub fn from_pem_or_jwk(text: &str) -> Result<Self, SigningError> {
        let text = text.trim();
        let (key, kid) = if text.starts_with('{') {
            parse_private_jwk(text)?
        } else {
            (parse_private_pem(text)?, None)
        };
        let mut s = CardSigner {
            key,
            kid: String::new(),
            jku: None,
        };
        s.kid = kid.unwrap_or_else(|| s.public().thumbprint());
        Ok(s)
    }

    /// Reads the key from a file (see [`CardSigner::from_pem_or_jwk`]).
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self, SigningError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SigningError::KeyFile {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_pem_or_jwk(&text)
    }

    /// An ES256 signer from the 32 bytes of a P-256 secret scalar.
    pub fn es256_from_bytes(secret: &[u8]) -> Result<Self, SigningError> {
        let k = p256::ecdsa::SigningKey::from_slice(secret)
            .map_err(|e| SigningError::Key(format!("not a P-256 secret key: {e}")))?;
        let mut s = CardSigner {
            key: Private::Es256(k),
            kid: String::new(),
            jku: None,
        };
        s.kid = s.public().thumbprint();
        Ok(s)
    }

    /// An EdDSA signer from the 32-byte Ed25519 seed.
    pub fn ed25519_from_bytes(seed: &[u8]) -> Result<Self, SigningError> {
        let seed: [u8; 32] = seed
            .try_into()
            .map_err(|_| SigningError::Key("an Ed25519 seed has 32 bytes".into()))?;
        let mut s = CardSigner {
            key: Private::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed)),
            kid: String::new(),
            jku: None,
        };
        s.kid = s.public().thumbprint();
        Ok(s)
    }

    /// Sets the key id (`kid`) of the signatures (builder style).
    #[must_use]
    pub fn with_kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = kid.into();
        self
    }

    /// Names a JWK Set URL (`jku`) where verifiers can find the public key (builder style).
    #[must_use]
    pub fn with_jku(mut self, jku: impl Into<String>) -> Self {
        self.jku = Some(jku.into());
        self
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The JWS algorithm (`ES256` or `EdDSA`).
    pub fn alg(&self) -> &'static str {
        self.public().alg()
    }

    fn public(&self) -> Public {
        match &self.key {
            Private::Es256(k) => Public::Es256(*k.verifying_key()),
            Private::Ed25519(k) => Public::Ed25519(k.verifying_key()),
        }
    }

    /// The public key as a JWK (with `kid`, `alg` and `use`), for a JWK Set or a client's
    /// trusted keys.
    pub fn public_jwk(&self) -> Value {
        let p = self.public();
        let mut m = p.jwk();
        m.insert("kid".into(), Value::String(self.kid.clone()));
        m.insert("alg".into(), Value::String(p.alg().into()));
        m.insert("use".into(), Value::String("sig".into()));
        Value::Object(m)
    }

    /// The public key as a PEM `PUBLIC KEY` (SPKI).
    pub fn public_pem(&self) -> String {
        use ed25519_dalek::pkcs8::EncodePublicKey as _;
        let r = match self.public() {
            Public::Es256(k) => {
                p256::pkcs8::EncodePublicKey::to_public_key_pem(&k, p256::pkcs8::LineEnding::LF)
            }
            Public::Ed25519(k) => {
                k.to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            }
        };
        r.unwrap_or_default()
    }

    /// The signatures for a card given as JSON (any `signatures` it has are ignored): one over
    /// the A2A §8.4.1 payload, and, when the official Python SDK's payload differs, one over
    /// that.
    pub fn sign_value(&self, card: &Value) -> Result<Vec<v1::AgentCardSignature>, SigningError> {
        if !card.is_object() {
            return Err(SigningError::NotAnObject);
        }
        let spec = jcs::canonicalize(&jcs::spec_payload(card));
        let py = jcs::canonicalize(&jcs::python_payload(card));
        let mut out = vec![self.sign_payload(spec.as_bytes())];
        if py != spec {
            out.push(self.sign_payload(py.as_bytes()));
        }
        Ok(out)
    }

    /// Signs a serializable card (1.0 or 0.3): its JSON form, as [`CardSigner::sign_value`].
    pub fn sign<T: serde::Serialize>(
        &self,
        card: &T,
    ) -> Result<Vec<v1::AgentCardSignature>, SigningError> {
        let v = serde_json::to_value(card).map_err(|_| SigningError::NotAnObject)?;
        self.sign_value(&v)
    }

    fn sign_payload(&self, payload: &[u8]) -> v1::AgentCardSignature {
        let mut header = Map::new();
        header.insert("alg".into(), Value::String(self.alg().into()));
        header.insert("typ".into(), Value::String("JOSE".into()));
        header.insert("kid".into(), Value::String(self.kid.clone()));
        if let Some(jku) = &self.jku {
            header.insert("jku".into(), Value::String(jku.clone()));
        }
        let protected = B64.encode(jcs::canonicalize(&Value::Object(header)));
        let input = format!("{protected}.{}", B64.encode(payload));
        let signature = match &self.key {
            Private::Es256(k) => {
                use p256::ecdsa::signature::Signer as _;
                let s: p256::ecdsa::Signature = k.sign(input.as_bytes());
                B64.encode(s.to_bytes())
            }
            Private::Ed25519(k) => {
                use ed25519_dalek::Signer as _;
                B64.encode(k.sign(input.as_bytes()).to_bytes())
            }
        };
        v1::AgentCardSignature {
            protected,
            signature,
            header: None,
        }
    }
}

fn parse_private_pem(text: &str) -> Result<Private, SigningError> {
    use ed25519_dalek::pkcs8::DecodePrivateKey as _;
    if text.contains("BEGIN EC PRIVATE KEY") {
        return p256::SecretKey::from_sec1_pem(text)
            .map(|k| Private::Es256(k.into()))
            .map_err(|e| SigningError::Key(format!("not a P-256 SEC1 key: {e}")));
    }
    if let Ok(k) = <p256::ecdsa::SigningKey as p256::pkcs8::DecodePrivateKey>::from_pkcs8_pem(text)
    {
        return Ok(Private::Es256(k));
    }
    ed25519_dalek::SigningKey::from_pkcs8_pem(text)
        .map(Private::Ed25519)
        .map_err(|_| {
            SigningError::Key(
                "not a PEM P-256 (PKCS#8 or SEC1) or Ed25519 (PKCS#8) private key".into(),
            )
        })
}

fn b64_field(m: &Map<String, Value>, name: &str) -> Result<Vec<u8>, SigningError> {
    let s = m
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| SigningError::Key(format!("the JWK has no `{name}`")))?;
    B64.decode(s.trim_end_matches('='))
        .map_err(|e| SigningError::Key(format!("the JWK's `{name}` is not base64url: {e}")))
}

fn parse_private_jwk(text: &str) -> Result<(Private, Option<String>), SigningError> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| SigningError::Key(format!("not a JWK: {e}")))?;
    let m = v
        .as_object()
        .ok_or_else(|| SigningError::Key("a JWK is a JSON object".into()))?;
    let kid = m.get("kid").and_then(Value::as_str).map(str::to_string);
    let d = b64_field(m, "d")?;
    let key = match (
        m.get("kty").and_then(Value::as_str),
        m.get("crv").and_then(Value::as_str),
    ) {
        (Some("EC"), Some("P-256")) => Private::Es256(
            p256::ecdsa::SigningKey::from_slice(&d)
                .map_err(|e| SigningError::Key(format!("bad P-256 `d`: {e}")))?,
        ),
        (Some("OKP"), Some("Ed25519")) => {
            let seed: [u8; 32] = d
                .as_slice()
                .try_into()
                .map_err(|_| SigningError::Key("an Ed25519 `d` has 32 bytes".into()))?;
            Private::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed))
        }
        (kty, crv) => {
            return Err(SigningError::Key(format!(
                "unsupported JWK (kty {kty:?}, crv {crv:?}): ES256 (EC P-256) and EdDSA (OKP Ed25519) are supported"
            )));
        }
    };
    Ok((key, kid))
}

fn parse_public_jwk(m: &Map<String, Value>) -> Result<Public, SigningError> {
    match (
        m.get("kty").and_then(Value::as_str),
        m.get("crv").and_then(Value::as_str),
    ) {
        (Some("EC"), Some("P-256")) => {
            let coord = |name: &str| -> Result<p256::FieldBytes, SigningError> {
                let b: [u8; 32] = b64_field(m, name)?
                    .as_slice()
                    .try_into()
                    .map_err(|_| SigningError::Key(format!("a P-256 `{name}` has 32 bytes")))?;
                Ok(b.into())
            };
            let p = p256::EncodedPoint::from_affine_coordinates(&coord("x")?, &coord("y")?, false);
            p256::ecdsa::VerifyingKey::from_encoded_point(&p)
                .map(Public::Es256)
                .map_err(|e| SigningError::Key(format!("not a P-256 point: {e}")))
        }
        (Some("OKP"), Some("Ed25519")) => {
            let x: [u8; 32] = b64_field(m, "x")?
                .as_slice()
                .try_into()
                .map_err(|_| SigningError::Key("an Ed25519 `x` has 32 bytes".into()))?;
            ed25519_dalek::VerifyingKey::from_bytes(&x)
                .map(Public::Ed25519)
                .map_err(|e| SigningError::Key(format!("not an Ed25519 key: {e}")))
        }
        (kty, crv) => Err(SigningError::Key(format!(
            "unsupported JWK (kty {kty:?}, crv {crv:?})"
        ))),
    }
}

/// One trusted public key and its key id.
#[derive(Clone, PartialEq, Eq)]
struct TrustedKey {
    kid: String,
    key: Public,
}

/// The public keys a client trusts for card signatures, by key id.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TrustedKeys {
    keys: Vec<TrustedKey>,
}

impl std::fmt::Debug for TrustedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.keys
                    .iter()
                    .map(|k| format!("{} {}", k.key.alg(), k.kid)),
            )
            .finish()
    }
}

/// The most keys read from one JWK Set.
const MAX_KEYS: usize = 64;

impl TrustedKeys {
    /// No keys.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the keys in `text`: a JWK, a JWK Set (`{"keys": [...]}`) or a PEM `PUBLIC KEY`
    /// (P-256 or Ed25519). A key without `kid` is known by its RFC 7638 thumbprint; `kid`
    /// overrides the id of a single key. JWKs of other kinds in a set are skipped.
    pub fn add(&mut self, text: &str, kid: Option<&str>) -> Result<&mut Self, SigningError> {
        let text = text.trim();
        let mut found = Vec::new();
        if text.starts_with('{') {
            let v: Value = serde_json::from_str(text)
                .map_err(|e| SigningError::Key(format!("not a JWK or JWK Set: {e}")))?;
            match v.get("keys").and_then(Value::as_array) {
                Some(set) => {
                    for k in set.iter().filter_map(Value::as_object).take(MAX_KEYS) {
                        if let Ok(p) = parse_public_jwk(k) {
                            let id = k.get("kid").and_then(Value::as_str).map(str::to_string);
                            found.push((p, id));
                        }
                    }
                }
                None => {
                    let m = v
                        .as_object()
                        .ok_or_else(|| SigningError::Key("a JWK is a JSON object".into()))?;
                    let id = m.get("kid").and_then(Value::as_str).map(str::to_string);
                    found.push((parse_public_jwk(m)?, id));
                }
            }
        } else {
            use ed25519_dalek::pkcs8::DecodePublicKey as _;
            let p = match <p256::ecdsa::VerifyingKey as p256::pkcs8::DecodePublicKey>::from_public_key_pem(text) {
                Ok(k) => Public::Es256(k),
                Err(_) => Public::Ed25519(
                    ed25519_dalek::VerifyingKey::from_public_key_pem(text).map_err(|_| {
                        SigningError::Key(
                            "not a PEM P-256 or Ed25519 public key (SPKI `PUBLIC KEY`)".into(),
                        )
                    })?,
                ),
            };
            found.push((p, None));
        }
        let single = found.len() == 1;
        for (key, id) in found {
            let kid = match (kid, single) {
                (Some(k), true) => k.to_string(),
                _ => id.unwrap_or_else(|| key.thumbprint()),
            };
            self.keys.push(TrustedKey { kid, key });
        }
        Ok(self)
    }

    /// Adds keys (builder style; see [`TrustedKeys::add`]).
    pub fn with(mut self, text: &str, kid: Option<&str>) -> Result<Self, SigningError> {
        self.add(text, kid)?;
        Ok(self)
    }

    /// Adds a signer's public key under its kid (for tests and in-process peers).
    #[must_use]
    pub fn with_signer(mut self, signer: &CardSigner) -> Self {
        self.keys.push(TrustedKey {
            kid: signer.kid.clone(),
            key: signer.public(),
        });
        self
    }

    /// True when no key is known.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn by_kid<'a>(&'a self, kid: &'a str) -> impl Iterator<Item = &'a Public> + 'a {
        self.keys
            .iter()
            .filter(move |k| k.kid == kid)
            .map(|k| &k.key)
    }
}

/// One signature of a card, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureInfo {
    /// The `alg` of its protected header.
    pub alg: String,
    /// The `kid` (empty when absent).
    pub kid: String,
    /// The `jku`, when named.
    pub jku: Option<String>,
}

/// The signatures of a card as JSON (its `signatures` array), decoded; `Err` when one is not a
/// well-formed JWS.
pub fn card_signatures(card: &Value) -> Result<Vec<(SignatureInfo, String, Vec<u8>)>, String> {
    let Some(sigs) = card.get("signatures") else {
        return Ok(Vec::new());
    };
    let sigs = sigs.as_array().ok_or("`signatures` is not a list")?;
    let mut out = Vec::new();
    for (i, s) in sigs.iter().enumerate().take(MAX_KEYS) {
        let protected = s
            .get("protected")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("signature {i} has no `protected`"))?;
        let sig = s
            .get("signature")
            .and_then(Value::as_str)
            .and_then(|x| B64.decode(x.trim_end_matches('=')).ok())
            .ok_or_else(|| format!("signature {i} has no base64url `signature`"))?;
        let header: Value = B64
            .decode(protected.trim_end_matches('='))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .filter(Value::is_object)
            .ok_or_else(|| format!("signature {i}'s `protected` is not a base64url JSON object"))?;
        let unprotected = s.get("header");
        let field = |name: &str| {
            header
                .get(name)
                .or_else(|| unprotected.and_then(|h| h.get(name)))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        if header.get("b64").is_some_and(|b| b == &Value::Bool(false)) {
            return Err(format!(
                "signature {i} uses an unencoded payload (b64: false)"
            ));
        }
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("signature {i} has no `alg` in its protected header"))?
            .to_string();
        out.push((
            SignatureInfo {
                alg,
                kid: field("kid").unwrap_or_default(),
                jku: field("jku"),
            },
            protected.to_string(),
            sig,
        ));
    }
    Ok(out)
}

/// What [`verify_card`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// A signature by this key id holds.
    Signed {
        /// The key id.
        kid: String,
    },
    /// The card has no signatures.
    Unsigned,
    /// Signatures are present but none is by a known key (the key ids).
    UnknownKeys(Vec<String>),
}

/// Checks a card's signatures (the card as JSON, as received) against `keys`. A signature holds
/// over the A2A §8.4.1 payload or the Python SDK's (see the module docs). `Ok(Signed)` as soon
/// as one holds; `Err(Invalid)` when none holds and one by a known key failed.
pub fn verify_card(
    url: &str,
    card: &Value,
    keys: &TrustedKeys,
) -> Result<Verified, CardSignatureError> {
    let sigs = card_signatures(card).map_err(|message| CardSignatureError::Malformed {
        url: url.to_string(),
        message,
    })?;
    if sigs.is_empty() {
        return Ok(Verified::Unsigned);
    }
    let python = jcs::python_payload(card);
    let payloads = [
        B64.encode(jcs::canonicalize(&jcs::spec_payload(card))),
        B64.encode(jcs::canonicalize(&python)),
        // Python SDK releases before 1.3 serialized with `json.dumps` (ASCII escapes).
        B64.encode(jcs::python_serialize(&python)),
    ];
    let mut failed = None;
    let mut unknown = Vec::new();
    for (info, protected, sig) in &sigs {
        let mut known = false;
        for key in keys.by_kid(&info.kid) {
            known = true;
            if key.alg() != info.alg && !(info.alg == "Ed25519" && key.alg() == "EdDSA") {
                continue;
            }
            for p in &payloads {
                if key.verify(&info.alg, format!("{protected}.{p}").as_bytes(), sig) {
                    return Ok(Verified::Signed {
                        kid: info.kid.clone(),
                    });
                }
            }
        }
        if known {
            failed.get_or_insert_with(|| info.kid.clone());
        } else {
            unknown.push(info.kid.clone());
        }
    }
    match failed {
        Some(kid) => Err(CardSignatureError::Invalid {
            url: url.to_string(),
            kid,
        }),
        None => Ok(Verified::UnknownKeys(unknown)),
    }
}

/// Adds the keys of a JWK Set to `keys` (for a fetched `jku`), keeping the ids it declares.
pub fn add_jwks(keys: &mut TrustedKeys, jwks: &[u8]) -> Result<(), SigningError> {
    let text = std::str::from_utf8(jwks).map_err(|_| SigningError::Key("not UTF-8".into()))?;
    keys.add(text, None).map(|_| ())
}

/// How a client treats card signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CardTrust {
    /// Signatures are not looked at.
    Ignore,
    /// (Default.) A card's signatures are checked with the keys the client knows (its trusted
    /// keys, and JWK Sets at allowed `jku` URLs): a signature by a known key that does not hold
    /// fails the resolution; a card without signatures, or signed only by unknown keys, is
    /// accepted as unsigned.
    #[default]
    VerifyIfPresent,
    /// The card must carry a signature by a known key that holds.
    Require,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card() -> Value {
        json!({
            "name": "echo", "description": "Echoes", "version": "1.0.0",
            "supportedInterfaces": [{"url": "http://h/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true, "pushNotifications": false},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"]}]
        })
    }

    fn signed(signer: &CardSigner, mut c: Value) -> Value {
        let sigs = signer.sign_value(&c).unwrap();
        c["signatures"] = serde_json::to_value(sigs).unwrap();
        c
    }

    /// Whether `card` verifies as signed by one of `keys`.
    fn verifies(card: &Value, keys: &TrustedKeys) -> bool {
        matches!(verify_card("u", card, keys), Ok(Verified::Signed { .. }))
    }

    #[test]
    fn es256_and_ed25519_roundtrip_and_tamper() {
        for signer in [
            CardSigner::es256_from_bytes(&[7u8; 32]).unwrap(),
            CardSigner::ed25519_from_bytes(&[9u8; 32])
                .unwrap()
                .with_kid("ed"),
        ] {
            let keys = TrustedKeys::new().with_signer(&signer);
            let c = signed(&signer, card());
            assert_eq!(c["signatures"].as_array().unwrap().len(), 1);
            assert_eq!(
                verify_card("u", &c, &keys).unwrap(),
                Verified::Signed {
                    kid: signer.kid().into()
                }
            );
            let mut t = c.clone();
            t["description"] = "Evil".into();
            let e = verify_card("http://x/card", &t, &keys).unwrap_err();
            assert!(
                e.to_string().contains("http://x/card") && e.to_string().contains(signer.kid()),
                "{e}"
            );
            assert_eq!(
                verify_card("u", &c, &TrustedKeys::new()).unwrap(),
                Verified::UnknownKeys(vec![signer.kid().into()])
            );
            // Key order and whitespace do not matter; the JWK and PEM forms give the same key.
            let reordered: Value =
                serde_json::from_str(&serde_json::to_string_pretty(&c).unwrap()).unwrap();
            assert!(verifies(&reordered, &keys));
            let from_jwk = TrustedKeys::new()
                .with(&signer.public_jwk().to_string(), None)
                .unwrap();
            assert!(verifies(&c, &from_jwk));
            let from_pem = TrustedKeys::new()
                .with(&signer.public_pem(), Some(signer.kid()))
                .unwrap();
            assert!(verifies(&c, &from_pem));
        }
    }

    #[test]
    fn a_second_signature_covers_the_python_form() {
        let signer = CardSigner::es256_from_bytes(&[3u8; 32]).unwrap();
        let mut c = card();
        c["securityRequirements"] = json!([{"schemes": {"bearer": {}}}]);
        let c = signed(&signer, c);
        assert_eq!(c["signatures"].as_array().unwrap().len(), 2);
        let keys = TrustedKeys::new().with_signer(&signer);
        assert!(verifies(&c, &keys));
    }

    #[test]
    fn keys_from_pem_and_jwk() {
        let s = CardSigner::es256_from_bytes(&[5u8; 32]).unwrap();
        let mut jwk = s.public_jwk();
        jwk["d"] = B64.encode([5u8; 32]).into();
        jwk["kid"] = "k1".into();
        let back = CardSigner::from_pem_or_jwk(&jwk.to_string()).unwrap();
        assert_eq!(back.kid(), "k1");
        assert_eq!(back.public(), s.public());
        let pem = match &s.key {
            Private::Es256(k) => {
                p256::pkcs8::EncodePrivateKey::to_pkcs8_pem(k, p256::pkcs8::LineEnding::LF)
                    .unwrap()
                    .to_string()
            }
            Private::Ed25519(_) => unreachable!(),
        };
        let back = CardSigner::from_pem_or_jwk(&pem).unwrap();
        assert_eq!(back.kid(), s.kid());
        assert!(!format!("{back:?}").contains(pem.lines().nth(1).unwrap()));
        assert!(CardSigner::from_pem_or_jwk("nonsense").is_err());
        assert!(CardSigner::from_pem_or_jwk(r#"{"kty":"RSA","d":"AA"}"#).is_err());
    }

    #[test]
    fn rfc7638_thumbprint_example_shape() {
        // RFC 7638 §3.1 uses an RSA key; for EC the members are crv, kty, x, y in that order.
        let s = CardSigner::es256_from_bytes(&[1u8; 32]).unwrap();
        assert_eq!(s.kid().len(), 43);
    }
}
