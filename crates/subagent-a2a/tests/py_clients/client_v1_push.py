"""Push notifications from our A2A server to a webhook the official a2a-sdk 1.x client registers.

Usage: python client_v1_push.py BASE_URL BINDING   (BINDING: JSONRPC or HTTP+JSON)

Hosts a webhook (starlette + uvicorn, 127.0.0.1, a free port), starts a slow task (returned at
once), registers the webhook with the SDK's create_task_push_notification_config (a token and
Bearer authentication), checks get/list, cancels the task and waits for the canceled update.
Prints `OK <check> <detail>` per passed check and exits non-zero on the first failure.
"""

import asyncio
import json
import socket
import sys

import httpx
import uvicorn
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
)
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from checks import fail, ok
from sdk1 import client_for, send_for_task


received: list = []
arrived = asyncio.Event()


async def hook(request):
    body = await request.body()
    received.append((dict(request.headers), json.loads(body)))
    arrived.set()
    return Response(status_code=200)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def main() -> None:
    base, binding = sys.argv[1], sys.argv[2]
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=[Route("/hook", hook, methods=["POST"])]),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    webhook = f"http://127.0.0.1:{port}/hook"
    async with httpx.AsyncClient(timeout=30) as http:
        client = await client_for(base, binding, False, http)
        task = await send_for_task(client, "slow", True)
        if task is None:
            fail("send: no task")
        config = await client.create_task_push_notification_config(
            TaskPushNotificationConfig(
                task_id=task.id,
                id="py-hook",
                url=webhook,
                token="py-token",
                authentication=AuthenticationInfo(scheme="Bearer", credentials="py-secret"),
            )
        )
        if config.id != "py-hook" or config.url != webhook:
            fail(f"create: {config}")
        ok("create", config.id)
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="py-hook")
        )
        if got.url != webhook:
            fail(f"get: {got}")
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        if [c.id for c in listed.configs] != ["py-hook"]:
            fail(f"list: {listed}")
        ok("get-list", "py-hook")
        await client.cancel_task(CancelTaskRequest(id=task.id))
        deadline = asyncio.get_running_loop().time() + 20
        while True:
            states = [
                (body.get("statusUpdate") or {}).get("status", {}).get("state")
                for _, body in received
            ]
            if "TASK_STATE_CANCELED" in states:
                break
            if asyncio.get_running_loop().time() > deadline:
                fail(f"deliver: no canceled update, got {received}")
            arrived.clear()
            try:
                await asyncio.wait_for(arrived.wait(), 1)
            except asyncio.TimeoutError:
                pass
        for headers, _ in received:
            if headers.get("authorization") != "Bearer py-secret":
                fail(f"deliver: authorization {headers.get('authorization')!r}")
            if headers.get("x-a2a-notification-token") != "py-token":
                fail(f"deliver: token {headers.get('x-a2a-notification-token')!r}")
        ok("deliver", str(len(received)))
    server.should_exit = True
    await serving


asyncio.run(main())
