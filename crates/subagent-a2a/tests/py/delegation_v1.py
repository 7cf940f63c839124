"""An A2A 1.0 test agent on the official Python SDK (a2a-sdk 1.x) for issue 28's delegation
features: steering (SendMessage), typed results (output_schema) and nested streaming.

Usage: python delegation_v1.py PORT --gate-dir DIR

Serves JSON-RPC at http://127.0.0.1:PORT/ (streaming), the card (name `py-delegate`) at
/.well-known/agent-card.json. Every message it receives is logged to stderr as one line
`RECEIVED {json}`: the task and context ids the SDK gave the request, the state of the task it
continues (or null), the message as the SDK parsed it (MessageToDict: camelCase, data parts as
JSON) and the request's configuration. The behaviour is chosen by the first word of the text:

  ask GATE      -> working until the file DIR/GATE exists, then input-required "Which plan
                   should I follow?"; the next message on the same task completes it with the
                   artifact "following: <its text>"
  ask-now       -> input-required "Which plan should I follow?" at once; answered as `ask`
  work GATE     -> working until the file DIR/GATE exists, then completed with the artifact
                   "worked without asking" (it never asks, so it takes no follow-up)
  typed MODE    -> a typed result: the artifact `result` holds one data part. MODE valid: a
                   value valid under the test's schema; bad-once: first an invalid value, then
                   (any later message in the same context) a valid one; never: a text that is
                   not JSON, every time
  stream X      -> three rounds of a status update "phase N" and an artifact chunk "chunk-N "
                   (one artifact, appended), then completed
"""

import asyncio
import json
import os
import re
import sys

import uvicorn
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import get_message_text, new_data_part
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.agent_execution.context import RequestContext
from a2a.server.events.event_queue import EventQueue
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks.task_updater import TaskUpdater
from a2a.types import AgentInterface, AgentSkill, TaskState

from agent_v1 import card_and_handler, open_task, part

GATE_DIR = ''
# typed: the mode each context started with, and how many messages it has had.
TYPED: dict[str, list] = {}
VALID = {'answer': 42, 'source': 'py'}
INVALID = {'answer': 'forty-two', 'source': 'py'}


def log_received(context: RequestContext) -> None:
    current = context.current_task
    record = {
        'task_id': context.task_id,
        'context_id': context.context_id,
        'state': TaskState.Name(current.status.state) if current is not None else None,
        'message': MessageToDict(context.message) if context.message else None,
        'configuration': MessageToDict(context.configuration) if context.configuration else None,
    }
    print('RECEIVED ' + json.dumps(record), file=sys.stderr, flush=True)


async def wait_for_gate(name: str) -> None:
    """Waits (at most 60 s) until the test opens the gate `name`."""
    if not re.fullmatch(r'[A-Za-z0-9-]{1,64}', name):
        raise ValueError(f'bad gate name {name!r}')
    path = os.path.join(GATE_DIR, name)
    for _ in range(1200):
        if os.path.exists(path):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f'gate {name} never opened')


class DelegationAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        log_received(context)
        text = get_message_text(context.message).strip() if context.message else ''
        verb, _, rest = text.partition(' ')
        task_id = context.task_id or ''
        context_id = context.context_id or ''
        updater = TaskUpdater(event_queue, task_id, context_id)

        def say(s: str):
            return updater.new_agent_message([part(s)])

        if await open_task(context, event_queue):
            await updater.start_work()
            await updater.add_artifact([part(f'following: {text}')], name='answer')
            await updater.complete()
            return

        typed = TYPED.get(context_id)
        if typed is not None:
            # A later message in a typed context: the caller's retry.
            typed[1] += 1
            await self.typed(updater, typed[0], typed[1])
            return
        if verb == 'ask':
            await updater.start_work(say('working before the question'))
            await wait_for_gate(rest)
            await updater.requires_input(say('Which plan should I follow?'))
        elif verb == 'ask-now':
            await updater.start_work()
            await updater.requires_input(say('Which plan should I follow?'))
        elif verb == 'work':
            await updater.start_work(say('working'))
            await wait_for_gate(rest)
            await updater.add_artifact([part('worked without asking')], name='result')
            await updater.complete()
        elif verb == 'typed':
            TYPED[context_id] = [rest, 1]
            await self.typed(updater, rest, 1)
        elif verb == 'stream':
            await updater.start_work()
            for i in range(1, 4):
                await updater.update_status(TaskState.TASK_STATE_WORKING, say(f'phase {i}'))
                await updater.add_artifact(
                    [part(f'chunk-{i} ')],
                    artifact_id='out',
                    name='result',
                    append=i > 1,
                    last_chunk=i == 3,
                )
            await updater.complete()
        else:
            await updater.complete(say(f'unknown command: {text}'))

    async def typed(self, updater: TaskUpdater, mode: str, attempt: int) -> None:
        await updater.start_work()
        if mode == 'never':
            await updater.add_artifact([part('I cannot give JSON')], name='result')
        else:
            value = INVALID if mode == 'bad-once' and attempt == 1 else VALID
            await updater.add_artifact([new_data_part(value)], name='result')
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or '', context.context_id or '').cancel()


def main() -> None:
    global GATE_DIR
    port = int(sys.argv[1])
    GATE_DIR = sys.argv[sys.argv.index('--gate-dir') + 1]
    base = f'http://127.0.0.1:{port}'
    card, handler = card_and_handler(
        DelegationAgent(),
        dict(
            name='py-delegate',
            description='Delegation test agent on the official A2A 1.x Python SDK.',
            skills=[
                AgentSkill(
                    id='delegate',
                    name='Delegate',
                    description='Asks, works, answers typed and streams.',
                    tags=['test'],
                )
            ],
            supported_interfaces=[
                AgentInterface(protocol_binding='JSONRPC', protocol_version='1.0', url=f'{base}/'),
            ],
        ),
        output_modes=('text/plain', 'application/json'),
    )
    routes = []
    routes += create_agent_card_routes(agent_card=card)
    routes += create_jsonrpc_routes(request_handler=handler, rpc_url='/')
    uvicorn.run(Starlette(routes=routes), host='127.0.0.1', port=port, log_level='warning')


if __name__ == '__main__':
    main()
