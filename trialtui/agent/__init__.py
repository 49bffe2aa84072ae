"""`trialtui mcp`: a coding agent's front end on a problem's one engine (session.py), as MCP tools (server.py)."""
