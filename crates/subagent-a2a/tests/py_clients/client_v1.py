"""Drives our A2A server with the official a2a-sdk 1.x client.

Usage: python client_v1.py BASE_URL BINDING   (BINDING: JSONRPC, HTTP+JSON or GRPC)

Discovers the agent from BASE_URL/.well-known/agent-card.json like any production client, then
runs four checks against the test agent (see tests/server_interop_py.rs): send, stream, get and
cancel. Prints one line `OK <check> <detail>` per passed check and exits non-zero on the first
failure, with the reason on stderr.
"""

import asyncio
import sys

import httpx
from google.protobuf.json_format import MessageToDict
from a2a.types import CancelTaskRequest, GetTaskRequest, SendMessageRequest, TaskState

from checks import Clients, send_get_stream_cancel
from sdk1 import client_for, message, send_for_task

KINDS = {"task": "task", "status_update": "status", "artifact_update": "artifact"}


class Sdk(Clients):
    """The 1.x client, as checks.send_get_stream_cancel wants it."""

    completed = TaskState.TASK_STATE_COMPLETED
    get_request, cancel_request = GetTaskRequest, CancelTaskRequest
    canceled = TaskState.TASK_STATE_CANCELED

    @staticmethod
    def name(state) -> str:
        return "none" if state is None else TaskState.Name(state)

    @staticmethod
    def artifact_text(task) -> str:
        return "".join(p.text for a in task.artifacts for p in a.parts)

    def __init__(self, client, streaming_client, base: str, http):
        super().__init__(client, streaming_client)
        self.base, self.http = base, http

    async def send(self, text: str, immediately: bool):
        return await send_for_task(self.client, text, immediately)

    async def card_extension_uris(self) -> list:
        card = (await self.http.get(f"{self.base}/.well-known/agent-card.json")).json()
        return [e.get("uri") for e in card.get("capabilities", {}).get("extensions", [])]

    @staticmethod
    def metadata(task) -> dict:
        return MessageToDict(task.metadata)

    async def stream(self, text: str):
        kinds, last = [], None
        req = SendMessageRequest(message=message(text))
        async for ev in self.streaming_client.send_message(req):
            kind = ev.WhichOneof("payload")
            kinds.append(KINDS.get(kind, kind))
            if kind == "status_update":
                last = ev.status_update.status.state
            elif kind == "task":
                last = ev.task.status.state
        return kinds, last


async def main() -> None:
    base, binding = sys.argv[1], sys.argv[2]
    async with httpx.AsyncClient(timeout=30) as http:
        client = await client_for(base, binding, False, http)
        streaming_client = await client_for(base, binding, True, http)
        await send_get_stream_cancel(Sdk(client, streaming_client, base, http))


asyncio.run(main())
