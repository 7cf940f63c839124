"""A client of the official MCP Python SDK 2.x (`mcp` on PyPI) that follows a `Task` call of
`subagents mcp` as an MCP task (the `io.modelcontextprotocol/tasks` extension, SEP-2663).

The SDK has no tasks client of its own; it has the extension hooks one is built on: a
`ClientExtension` advertises the extension and claims the `resultType: "task"` result of
`tools/call`, and its resolver follows the task with `tasks/get` (and `tasks/cancel`) sent
through the SDK's session. Everything on the wire (per-request `_meta`, `Mcp-Method` /
`Mcp-Name` headers, protocol negotiation) is the SDK's.

usage: mcp_tasks_client.py URL result|cancel AGENT PROMPT
Prints one JSON line: {"status": ..., "text": ..., "polls": N, "saw": [statuses]}.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict, Field, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
ANY = TypeAdapter(dict[str, Any])


class CreateTaskResult(types.Result):
    """The task handle a `tools/call` answers with (`resultType: "task"`)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TaskRequest(types.Request[dict[str, Any], str]):
    """`tasks/get` / `tasks/cancel`: the task id is mirrored in `Mcp-Name`."""

    name_param = "taskId"


class Tasks(ClientExtension):
    identifier = TASKS

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.report: dict[str, Any] = {"saw": [], "polls": 0}

    def claims(self):
        return (ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.follow),)

    async def request(self, ctx: ClaimContext, method: str, task_id: str) -> dict[str, Any]:
        return await ctx.session.send_request(
            TaskRequest(method=method, params={"taskId": task_id}), ANY
        )

    async def follow(self, handle: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        self.report["handle_status"] = handle.status
        self.report["task_id"] = handle.task_id
        interval = min((handle.poll_interval_ms or 1000) / 1000, 0.2)
        cancelled = False
        for _ in range(600):
            got = await self.request(ctx, "tasks/get", handle.task_id)
            self.report["polls"] += 1
            status = got["status"]
            if not self.report["saw"] or self.report["saw"][-1] != status:
                self.report["saw"].append(status)
            if status in ("completed", "failed", "cancelled"):
                self.report["status"] = status
                if status == "completed":
                    return types.CallToolResult.model_validate(got["result"])
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=json.dumps(got))], is_error=True
                )
            if self.mode == "cancel" and not cancelled:
                await self.request(ctx, "tasks/cancel", handle.task_id)
                cancelled = True
            await anyio.sleep(interval)
        raise RuntimeError("the task did not end within 600 polls")


async def main() -> None:
    url, mode, agent, prompt = sys.argv[1:5]
    tasks = Tasks(mode)
    async with Client(url, extensions=[tasks]) as client:
        result = await client.call_tool(
            "Task", {"description": prompt, "prompt": prompt, "subagent_type": agent}
        )
    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    print(json.dumps({**tasks.report, "text": text, "is_error": bool(result.is_error)}))


if __name__ == "__main__":
    anyio.run(main)
