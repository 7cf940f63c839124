"""What the two SDK test agents (server_v1.py, server_v03.py) share: their commands, chosen by
the first word of the user's text (see server_v1.py), and their cancel handling. Each agent
passes what differs between the SDKs: how a text part is built, the working state, the task
updater class and the arguments of `requires_input`.
"""

import asyncio
import sys

CANCELLED: set[str] = set()

# The one skill both agents' cards list.
SKILL = dict(
    id='echo',
    name='Echo',
    description='Echoes and exercises A2A task states.',
    tags=['test'],
    examples=['message hello', 'artifact report'],
)


def direct_answer(verb: str, rest: str):
    """The text of a direct Message reply (`message`, `was-cancelled`), or None for a task."""
    if verb == 'message':
        return f'echo: {rest}'
    if verb == 'was-cancelled':
        return 'yes' if rest.strip() in CANCELLED else 'no'
    return None


async def answer_question(updater, part, text: str) -> None:
    """Completes a task that asked for input, with the answer as its artifact."""
    await updater.start_work()
    await updater.add_artifact([part(f'favourite colour: {text}')], name='answer')
    await updater.complete()


async def run_command(updater, part, working, ask: dict, verb: str, rest: str, text: str) -> None:
    """Runs the task commands: artifact, stream, fail, ask, slow (anything else completes with
    `unknown command`)."""

    def say(s: str):
        return updater.new_agent_message([part(s)])

    if verb == 'artifact':
        await updater.start_work()
        await updater.add_artifact([part(f'artifact: {rest}')], name='result')
        await updater.complete()
    elif verb == 'stream':
        await updater.start_work()
        for i in range(1, 4):
            await updater.update_status(working, say(f'step {i}'))
            await asyncio.sleep(0.05)
        await updater.add_artifact([part(f'streamed: {rest}')], name='result')
        await updater.complete()
    elif verb == 'fail':
        await updater.start_work()
        await updater.failed(say(f'cannot do that: {rest}'))
    elif verb == 'ask':
        await updater.start_work()
        await updater.requires_input(say('What is your favourite colour?'), **ask)
    elif verb == 'slow':
        await updater.start_work(say('working slowly'))
        for _ in range(600):
            if updater.task_id in CANCELLED:
                return
            await asyncio.sleep(0.1)
        await updater.complete(say('slow task finished'))
    else:
        await updater.complete(say(f'unknown command: {text}'))


class RecordsCancels:
    """The agents' cancel, as a base class before the SDK's AgentExecutor: records the cancel
    (logged to stderr as `CANCELLED <task id>`) and cancels the task with `updater_class` (the
    SDK's TaskUpdater)."""

    updater_class = None

    async def cancel(self, context, event_queue) -> None:
        task_id = context.task_id or ''
        CANCELLED.add(task_id)
        print(f'CANCELLED {task_id}', file=sys.stderr, flush=True)
        await self.updater_class(event_queue, task_id, context.context_id or '').cancel()
