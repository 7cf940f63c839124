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
    TransportProtocol,
    Message,
    MessageSendConfiguration,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TextPart,
)


def fail(why: str) -> None:
    print(f"FAIL {why}", file=sys.stderr, flush=True)
    sys.exit(1)


def message(text: str) -> Message:
    return Message(
        role=Role.user,
        message_id=str(uuid.uuid4()),
        parts=[Part(root=TextPart(text=text))],
    )


def artifact_text(task: Task) -> str:
    return "".join(
        p.root.text for a in (task.artifacts or []) for p in a.parts if hasattr(p.root, "text")
    )


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

        # send (blocking): a completed task with the echo artifact
        c = client(False)
        print(f"OK transport {type(c._transport).__name__}", flush=True)
        if transport == "HTTP+JSON" and type(c._transport).__name__ != "RestTransport":
            fail(f"transport: {type(c._transport).__name__}")
        task = None
        async for ev in c.send_message(message("hello")):
            if isinstance(ev, tuple):
                task = ev[0]
        if task is None:
            fail("send: no task in the reply")
        if task.status.state != TaskState.completed:
            fail(f"send: state {task.status.state}")
        if artifact_text(task) != "echo: hello":
            fail(f"send: artifact {artifact_text(task)!r}")
        print(f"OK send {task.id}", flush=True)

        # get
        got = await c.get_task(TaskQueryParams(id=task.id))
        if got.id != task.id or got.status.state != TaskState.completed:
            fail(f"get: {got.id} {got.status.state}")
        print(f"OK get {got.id}", flush=True)

        # stream: updates arrive, the task ends completed with the artifact
        s = client(True)
        updates = []
        final = None
        async for ev in s.send_message(message("stream me")):
            if isinstance(ev, tuple):
                final, update = ev
                updates.append(type(update).__name__ if update is not None else "Task")
        if final is None or final.status.state != TaskState.completed:
            fail(f"stream: final {final}")
        if updates[0] != "Task" or "TaskArtifactUpdateEvent" not in updates:
            fail(f"stream: events {updates}")
        print(f"OK stream {','.join(updates)}", flush=True)

        # cancel: a slow task returned at once (blocking=false), then canceled
        slow = None
        async for ev in c.send_message(
            message("slow"), configuration=MessageSendConfiguration(blocking=False)
        ):
            if isinstance(ev, tuple):
                slow = ev[0]
        if slow is None:
            fail("cancel: no task for the slow message")
        canceled = await c.cancel_task(TaskIdParams(id=slow.id))
        if canceled.status.state != TaskState.canceled:
            fail(f"cancel: state {canceled.status.state}")
        print(f"OK cancel {slow.id}", flush=True)


asyncio.run(main())
