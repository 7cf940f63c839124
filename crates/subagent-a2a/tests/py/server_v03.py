"""A small A2A 0.3 test agent built on the official Python SDK (a2a-sdk 0.3.26).

Usage: python server_v03.py PORT [--no-streaming] [--rest]

Serves JSON-RPC at http://127.0.0.1:PORT/ with the 0.3 card at /.well-known/agent-card.json
(and /.well-known/agent.json). With --rest it serves the SDK's 0.3 HTTP+JSON routes too
(/v1/message:send, ...; the SDK's RESTAdapter) and lists HTTP+JSON in the card's
additionalInterfaces. Same commands as server_v1.py:

  message X, artifact X, stream X, fail X, ask X (then the answer), slow X, was-cancelled T

A cancel is also logged to stderr as "CANCELLED <task id>".
"""

import sys

import uvicorn

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.apps.rest.rest_adapter import RESTAdapter
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
    TextPart,
)
from a2a.utils import new_agent_text_message, new_task

from agent_common import SKILL, RecordsCancels, answer_question, direct_answer, run_command


def part(text: str) -> Part:
    return Part(root=TextPart(text=text))


class TestAgent(RecordsCancels, AgentExecutor):
    updater_class = TaskUpdater

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        verb, _, rest = text.partition(' ')
        current = context.current_task

        answer = direct_answer(verb, rest)
        if answer is not None:
            await event_queue.enqueue_event(
                new_agent_text_message(answer, context_id=context.context_id)
            )
            return

        if current is None:
            current = new_task(context.message)
            await event_queue.enqueue_event(current)
            updater = TaskUpdater(event_queue, current.id, current.context_id)
        else:
            updater = TaskUpdater(event_queue, current.id, current.context_id)
            if current.status.state == TaskState.input_required:
                await answer_question(updater, part, text)
                return

        await run_command(updater, part, TaskState.working, {'final': True}, verb, rest, text)


def main() -> None:
    port = int(sys.argv[1])
    streaming = '--no-streaming' not in sys.argv[2:]
    rest = '--rest' in sys.argv[2:]
    url = f'http://127.0.0.1:{port}/'
    interfaces = [AgentInterface(url=url, transport='JSONRPC')]
    if rest:
        interfaces.append(AgentInterface(url=url, transport='HTTP+JSON'))
    card = AgentCard(
        name='py-v03-agent',
        description='Test agent on the official A2A 0.3 Python SDK.',
        url=url,
        additional_interfaces=interfaces,
        version='1.0.0',
        protocol_version='0.3.0',
        preferred_transport='JSONRPC',
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(**SKILL)],
    )
    handler = DefaultRequestHandler(agent_executor=TestAgent(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    if rest:
        for (path, method), endpoint in RESTAdapter(card, handler).routes().items():
            app.router.add_route(path, endpoint, methods=[method])
    uvicorn.run(app, host='127.0.0.1', port=port, log_level='warning')


if __name__ == '__main__':
    main()
