"""What the A2A 1.0 test agents on the official Python SDK (server_v1.py, delegation_v1.py)
share: text parts, opening a task, and their card and request handler.
"""

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks.inmemory_task_store import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, Part, Task, TaskState, TaskStatus


def part(text: str) -> Part:
    """A text part."""
    return Part(text=text)


async def open_task(context, event_queue) -> bool:
    """Enqueues a new task as submitted, with the user's message as its history. For a message
    that continues a task: whether that task was waiting for input (the message answers it)."""
    current = context.current_task
    if current is not None:
        return current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    await event_queue.enqueue_event(
        Task(
            id=context.task_id or '',
            context_id=context.context_id or '',
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message],
        )
    )
    return False


def card_and_handler(executor, card: dict, streaming: bool = True, output_modes=('text/plain',)):
    """The agent's card (`card`: its name, description, skills and interfaces; version 1.0.0,
    text in, no push notifications) and a request handler serving `executor` with an in-memory
    task store."""
    card = AgentCard(
        version='1.0.0',
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=list(output_modes),
        **card,
    )
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    return card, handler
