"""An MCP server built with the official Python SDK (mcp 2.x), run over stdio by
tests/mcp_interop_py.rs: `deploy` asks the client to confirm (an `input_required` result on
2026-07-28, an `elicitation/create` request on 2025-11-25), `echo` answers at once."""

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve


class Confirm(BaseModel):
    confirm: bool


def ask_confirm(prompt: str) -> Elicit[Confirm]:
    return Elicit(f"Deploy {prompt}?", Confirm)


app = MCPServer("subagents-py-peer")


@app.tool()
def deploy(prompt: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)]) -> str:
    """Deploys after the user confirms."""
    if isinstance(answer, AcceptedElicitation):
        return f"deployed {prompt}: confirm={answer.data.confirm}"
    return f"not deployed: {answer.action}"


@app.tool()
def echo(prompt: str) -> str:
    """Echoes the prompt."""
    return f"py echo: {prompt}"


if __name__ == "__main__":
    app.run()
