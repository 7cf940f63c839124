"""What the a2a-sdk 1.x client scripts (client_v1.py, client_v1_push.py) share."""

import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest


def message(text: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])


async def client_for(base: str, binding: str, streaming: bool, http: httpx.AsyncClient):
    """A client discovering the agent at `base` and speaking `binding` (JSONRPC, HTTP+JSON or
    GRPC)."""
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


async def send_for_task(client, text: str, immediately: bool):
    """Sends `text` (returned at once when `immediately`); the task of the reply, or None."""
    req = SendMessageRequest(message=message(text))
    if immediately:
        req.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    task = None
    async for ev in client.send_message(req):
        if ev.HasField("task"):
            task = ev.task
    return task
