"""What the SDK client scripts share: how they report, and the four checks (send, get, stream,
cancel) that client_v1.py and client_v03.py run, each through a small adapter for its SDK.

Each passed check prints one line `OK <check> <detail>`; the first failure prints `FAIL <why>`
on stderr and exits non-zero.
"""

import sys

# The usage extension our server declares in its card and reports in task metadata.
USAGE_URI = "https://subagents.dev/a2a/ext/usage/v1"


def fail(why: str) -> None:
    print(f"FAIL {why}", file=sys.stderr, flush=True)
    sys.exit(1)


def check(holds: bool, why: str) -> None:
    if not holds:
        fail(why)


def ok(name: str, detail: str) -> None:
    print(f"OK {name} {detail}", flush=True)


class Clients:
    """What an SDK adapter starts from: a client for plain calls and a streaming one; `get` and
    `cancel` send the SDK's `get_request` and `cancel_request` types."""

    get_request = cancel_request = None

    def __init__(self, client, streaming_client):
        self.client, self.streaming_client = client, streaming_client

    async def get(self, task_id: str):
        return await self.client.get_task(self.get_request(id=task_id))

    async def cancel(self, task_id: str):
        return await self.client.cancel_task(self.cancel_request(id=task_id))


async def send_get_stream_cancel(sdk) -> None:
    """Runs the checks against the test agent (see tests/server_interop_py.rs).

    `sdk` answers: `send(text, immediately)` -> the task of the reply, or None;
    `stream(text)` -> (the kinds of the events: "task", "status" or "artifact"; the last state
    seen); `get(id)` and `cancel(id)` -> the task; `completed` and `canceled`, its states;
    `name(state)` -> the state's name; `artifact_text(task)` -> the text of its artifacts;
    `card_extension_uris()` -> the extension URIs the card declares; `metadata(task)` -> the
    task's metadata as a mapping.
    """
    # send (blocking): a completed task with the echo artifact
    task = await sdk.send("hello", False)
    check(task is not None, "send: no task in the reply")
    check(task.status.state == sdk.completed, f"send: state {sdk.name(task.status.state)}")
    text = sdk.artifact_text(task)
    check(text == "echo: hello", f"send: artifact {text!r}")
    ok("send", task.id)

    # get: the same task, completed
    got = await sdk.get(task.id)
    same = got.id == task.id and got.status.state == sdk.completed
    check(same, f"get: {got.id} {sdk.name(got.status.state)}")
    ok("get", got.id)

    # usage: the usage extension's report in the task metadata, declared in the card
    uris = await sdk.card_extension_uris()
    check(USAGE_URI in uris, f"usage: the card declares {uris}")
    meta = sdk.metadata(got)
    report = meta.get(USAGE_URI) if meta else None
    check(report is not None, f"usage: metadata {meta}")
    ok_report = report["inputTokens"] == 12 and report["children"][0]["agent"] == "helper"
    check(ok_report, f"usage: report {report}")
    ok("usage", f"{int(report['inputTokens'])}+{int(report['outputTokens'])}")

    # stream: the task first, an artifact update, the last state completed
    kinds, last = await sdk.stream("stream me")
    check(kinds[:1] == ["task"], f"stream: events {kinds}")
    check(last == sdk.completed, f"stream: last state {sdk.name(last)}")
    check("artifact" in kinds, f"stream: no artifact update in {kinds}")
    ok("stream", ",".join(kinds))

    # cancel: a slow task returned at once, then canceled
    slow = await sdk.send("slow", True)
    check(slow is not None, "cancel: no task for the slow message")
    canceled = await sdk.cancel(slow.id)
    check(canceled.status.state == sdk.canceled, f"cancel: state {sdk.name(canceled.status.state)}")
    ok("cancel", slow.id)
