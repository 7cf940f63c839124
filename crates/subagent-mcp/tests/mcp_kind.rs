//! The MCP kind against real MCP servers (placeholder; filled in below).
