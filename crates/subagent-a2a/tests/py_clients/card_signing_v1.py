"""Card signatures with the official a2a-sdk 1.x (`a2a.utils.signing`, PyJWT).

Usage:
  python card_signing_v1.py verify BASE_URL JWK   fetch BASE_URL's card with A2ACardResolver and
                                                  verify it with the public JWK (its `kid`);
                                                  then check that an altered copy is refused
  python card_signing_v1.py sign URL KID          sign a card with a new P-256 key; print
                                                  {"card": <card JSON>, "jwk": <public JWK>}

Prints `OK <check>` lines (verify) or one JSON line (sign); exits non-zero on failure.
"""

import asyncio
import json
import sys

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from google.protobuf.json_format import MessageToDict
from jwt.algorithms import ECAlgorithm
from jwt.api_jwk import PyJWK
from jwt.exceptions import PyJWKError

from a2a.client import A2ACardResolver
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils import signing


def fail(why: str) -> None:
    print(f"FAIL {why}", file=sys.stderr, flush=True)
    sys.exit(1)


async def verify(base: str, jwk_text: str) -> None:
    jwk = json.loads(jwk_text)

    def key_provider(kid, jku):
        if kid != jwk["kid"]:
            raise PyJWKError(f"unknown kid {kid}")
        return PyJWK(jwk)

    verifier = signing.create_signature_verifier(key_provider, ["ES256", "EdDSA"])
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base).get_agent_card(signature_verifier=verifier)
    print(f"OK verified {card.name} ({len(card.signatures)} signature(s))", flush=True)
    card.description = card.description + " (altered)"
    try:
        verifier(card)
    except signing.InvalidSignaturesError:
        print("OK altered card refused", flush=True)
    else:
        fail("the altered card verified")


def sign(url: str, kid: str) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    card = AgentCard(
        name="py-signed",
        description="Signed by the official Python SDK",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Echoes", tags=["echo"])],
    )
    signer = signing.create_agent_card_signer(
        pem, {"kid": kid, "alg": "ES256", "typ": "JOSE"}
    )
    card = signer(card)
    jwk = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    jwk["kid"] = kid
    print(json.dumps({"card": MessageToDict(card), "jwk": jwk}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "verify":
        asyncio.run(verify(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "sign":
        sign(sys.argv[2], sys.argv[3])
    else:
        fail(f"unknown mode {sys.argv[1]}")
