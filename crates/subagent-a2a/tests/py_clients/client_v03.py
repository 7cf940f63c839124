"""Drives an A2A 0.3 agent with the official a2a-sdk 0.3.26 client (JSON-RPC or HTTP+JSON).

Usage: python client_v03.py BASE_URL CARD_PATH [TRANSPORT]
  CARD_PATH: /.well-known/agent.json (the 0.3 card next to the 1.0 one), or
             /.well-known/agent-card.json on a server serving the 0.3 card there.
  TRANSPORT: JSONRPC (default: the card's preferred transport, the SDK's default) or
             HTTP+JSON (the client is limited to that transport, so it must be on the card).

Discovers the agent from its card like any production client, then runs four checks against
the test agent (see tests/server_interop_py.rs): send, stream, get and cancel. Prints one line
`OK <check> <detail>` per passed check and exits non-zero on the first failure.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    Message,
    MessageSendConfiguration,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TextPart,
    TransportProtocol,
)

from checks import Clients, fail, send_get_stream_cancel

KINDS = {
    "Task": "task",
    "TaskStatusUpdateEvent": "status",
    "TaskArtifactUpdateEvent": "artifact",
}


def message(text: str) -> Message:
    return Message(
        role=Role.user,
        message_id=str(uuid.uuid4()),
        parts=[Part(root=TextPart(text=text))],
    )


class Sdk(Clients):
    """The 0.3 client, as checks.send_get_stream_cancel wants it."""

    completed = TaskState.completed
    get_request, cancel_request = TaskQueryParams, TaskIdParams
    canceled = TaskState.canceled

    @staticmethod
    def name(state) -> str:
        return str(state)

    @staticmethod
    def artifact_text(task: Task) -> str:
        return "".join(
            p.root.text for a in (task.artifacts or []) for p in a.parts if hasattr(p.root, "text")
        )

    async def send(self, text: str, immediately: bool):
        config = MessageSendConfiguration(blocking=False) if immediately else None
        task = None
        async for ev in self.client.send_message(message(text), configuration=config):
            if isinstance(ev, tuple):
                task = ev[0]
        return task

    def __init__(self, client, streaming_client, card):
        super().__init__(client, streaming_client)
        self.card = card

    async def card_extension_uris(self) -> list:
        return [e.uri for e in (self.card.capabilities.extensions or [])]

    @staticmethod
    def metadata(task):
        return task.metadata or {}

    async def stream(self, text: str):
        kinds, final = [], None
        async for ev in self.streaming_client.send_message(message(text)):
            if isinstance(ev, tuple):
                final, update = ev
                kind = type(update).__name__ if update is not None else "Task"
                kinds.append(KINDS.get(kind, kind))
        return kinds, None if final is None else final.status.state


async def main() -> None:
    base, card_path = sys.argv[1], sys.argv[2]
    transport = sys.argv[3] if len(sys.argv) > 3 else None
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base, agent_card_path=card_path).get_agent_card()
        if not card.url.startswith("http"):
            fail(f"card: url {card.url!r}")

        def client(streaming: bool):
            cfg = ClientConfig(streaming=streaming, httpx_client=http)
            if transport == "HTTP+JSON":
                cfg.supported_transports = [TransportProtocol.http_json]
            return ClientFactory(cfg).create(card)

        c = client(False)
        used = type(c._transport).__name__
        print(f"OK transport {used}", flush=True)
        if transport == "HTTP+JSON" and used != "RestTransport":
            fail(f"transport: {used}")
        await send_get_stream_cancel(Sdk(c, client(True), card))


asyncio.run(main())
