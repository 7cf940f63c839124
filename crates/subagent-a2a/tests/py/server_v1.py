"""A small A2A 1.0 test agent built on the official Python SDK (a2a-sdk 1.x).

Usage: python server_v1.py PORT [--no-streaming] [--compat] [--grpc GRPC_PORT]

Serves JSON-RPC at http://127.0.0.1:PORT/ and HTTP+JSON at http://127.0.0.1:PORT/rest, with
the card at /.well-known/agent-card.json. The behaviour is chosen by the first word of the
user's text:

  message X       -> a direct Message reply "echo: X"
  artifact X      -> a completed task with one text artifact "artifact: X"
  stream X        -> a task with three "step N" status updates, then an artifact, completed
  fail X          -> a task that fails with the message "cannot do that: X"
  ask X           -> input-required "What is your favourite colour?"; the next message on the
                     same task completes it with the artifact "favourite colour: <answer>"
  slow X          -> a task that works until it is cancelled (at most 60 s)
  was-cancelled T -> a Message reply "yes" when task T was cancelled here, else "no"

A cancel is also logged to stderr as "CANCELLED <task id>".

With --grpc GRPC_PORT the SDK's gRPC handler (a2a-sdk[grpc]) also serves the agent on
127.0.0.1:GRPC_PORT, listed on the card as its GRPC interface.
With --compat the SDK's 0.3 compatibility layer is enabled on both endpoints and the card also
lists them as protocolVersion 0.3 interfaces.
"""

import asyncio
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.agent_execution.context import RequestContext
from a2a.server.events.event_queue import EventQueue
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types import AgentInterface, AgentSkill, TaskState

from agent_common import SKILL, RecordsCancels, answer_question, direct_answer, run_command
from agent_v1 import card_and_handler, open_task, part


class TestAgent(RecordsCancels, AgentExecutor):
    updater_class = TaskUpdater

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        verb, _, rest = text.partition(' ')
        task_id = context.task_id or ''
        context_id = context.context_id or ''

        answer = direct_answer(verb, rest)
        if answer is not None:
            await event_queue.enqueue_event(new_text_message(answer, context_id=context_id))
            return

        updater = TaskUpdater(event_queue, task_id, context_id)
        if await open_task(context, event_queue):
            await answer_question(updater, part, text)
            return

        await run_command(updater, part, TaskState.TASK_STATE_WORKING, {}, verb, rest, text)


def main() -> None:
    port = int(sys.argv[1])
    streaming = '--no-streaming' not in sys.argv[2:]
    compat = '--compat' in sys.argv[2:]
    grpc_port = None
    if '--grpc' in sys.argv[2:]:
        grpc_port = int(sys.argv[sys.argv.index('--grpc') + 1])
    base = f'http://127.0.0.1:{port}'
    interfaces = [
        AgentInterface(protocol_binding='JSONRPC', protocol_version='1.0', url=f'{base}/'),
        AgentInterface(protocol_binding='HTTP+JSON', protocol_version='1.0', url=f'{base}/rest'),
    ]
    if grpc_port is not None:
        interfaces.append(
            AgentInterface(
                protocol_binding='GRPC', protocol_version='1.0', url=f'127.0.0.1:{grpc_port}'
            )
        )
    if compat:
        interfaces.append(
            AgentInterface(protocol_binding='JSONRPC', protocol_version='0.3', url=f'{base}/')
        )
    card, handler = card_and_handler(
        TestAgent(),
        dict(
            name='py-v1-agent',
            description='Test agent on the official A2A 1.x Python SDK.',
            skills=[AgentSkill(**SKILL)],
            supported_interfaces=interfaces,
        ),
        streaming=streaming,
    )
    routes = []
    routes += create_agent_card_routes(agent_card=card)
    routes += create_jsonrpc_routes(
        request_handler=handler, rpc_url='/', enable_v0_3_compat=compat
    )
    routes += create_rest_routes(
        request_handler=handler, path_prefix='/rest', enable_v0_3_compat=compat
    )
    app = Starlette(routes=routes)
    if grpc_port is None:
        uvicorn.run(app, host='127.0.0.1', port=port, log_level='warning')
        return

    async def both() -> None:
        import grpc

        from a2a.server.request_handlers import GrpcHandler
        from a2a.types import a2a_pb2_grpc

        server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(f'127.0.0.1:{grpc_port}')
        await server.start()
        http = uvicorn.Server(
            uvicorn.Config(app, host='127.0.0.1', port=port, log_level='warning')
        )
        await http.serve()
        await server.stop(None)

    asyncio.run(both())


if __name__ == '__main__':
    main()
