"""Drives our A2A server with the official a2a-sdk 1.x client.

Usage: python client_v1.py BASE_URL BINDING   (BINDING: JSONRPC, HTTP+JSON or GRPC)

Discovers the agent from BASE_URL/.well-known/agent-card.json like any production client, then
runs four checks against the test agent (see tests/server_interop_py.rs): send, stream, get and
cancel. Prints one line `OK <check> <detail>` per passed check and exits non-zero on the first
failure, with the reason on stderr.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)


def fail(why: str) -> None:
    print(f"FAIL {why}", file=sys.stderr, flush=True)
    sys.exit(1)


def message(text: str) -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        parts=[Part(text=text)],
    )


def artifact_text(task) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


async def client_for(base: str, binding: str, streaming: bool, http: httpx.AsyncClient):
    extra = {}
    if binding == "GRPC":
        import grpc  # the a2a-sdk[grpc] extra

        extra["grpc_channel_factory"] = lambda url: grpc.aio.insecure_channel(url)
    cfg = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        httpx_client=http,
        **extra,
    )
    return await create_client(base, client_config=cfg)


async def main() -> None:
    base, binding = sys.argv[1], sys.argv[2]
    async with httpx.AsyncClient(timeout=30) as http:
        # send (blocking): a completed task with the echo artifact
        client = await client_for(base, binding, False, http)
        task = None
        async for ev in client.send_message(SendMessageRequest(message=message("hello"))):
            if ev.HasField("task"):
                task = ev.task
        if task is None:
            fail("send: no task in the reply")
        if task.status.state != TaskState.TASK_STATE_COMPLETED:
            fail(f"send: state {TaskState.Name(task.status.state)}")
        if artifact_text(task) != "echo: hello":
            fail(f"send: artifact {artifact_text(task)!r}")
        print(f"OK send {task.id}", flush=True)

        # get: the same task, completed
        got = await client.get_task(GetTaskRequest(id=task.id))
        if got.id != task.id or got.status.state != TaskState.TASK_STATE_COMPLETED:
            fail(f"get: {got.id} {TaskState.Name(got.status.state)}")
        print(f"OK get {got.id}", flush=True)

        # stream: task first, then updates, last one completed
        sclient = await client_for(base, binding, True, http)
        kinds = []
        last_state = None
        async for ev in sclient.send_message(SendMessageRequest(message=message("stream me"))):
            kind = ev.WhichOneof("payload")
            kinds.append(kind)
            if kind == "status_update":
                last_state = ev.status_update.status.state
            elif kind == "task":
                last_state = ev.task.status.state
        if not kinds or kinds[0] != "task":
            fail(f"stream: events {kinds}")
        if last_state != TaskState.TASK_STATE_COMPLETED:
            fail(f"stream: last state {last_state}")
        if "artifact_update" not in kinds:
            fail(f"stream: no artifact update in {kinds}")
        print(f"OK stream {','.join(kinds)}", flush=True)

        # cancel: a slow task returned at once, then canceled
        req = SendMessageRequest(
            message=message("slow"),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        slow = None
        async for ev in client.send_message(req):
            if ev.HasField("task"):
                slow = ev.task
        if slow is None:
            fail("cancel: no task for the slow message")
        canceled = await client.cancel_task(CancelTaskRequest(id=slow.id))
        if canceled.status.state != TaskState.TASK_STATE_CANCELED:
            fail(f"cancel: state {TaskState.Name(canceled.status.state)}")
        print(f"OK cancel {slow.id}", flush=True)


asyncio.run(main())
