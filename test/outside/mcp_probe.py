"""An MCP client baton did not write: the Python `mcp` SDK, over Streamable HTTP.

Lists the tools, calls a few of them well and badly with the token in BATON_TOKEN, and prints one
JSON object: what the SDK saw, for test/outside/outsideClients.test.ts to judge.
Usage: BATON_TOKEN=... python mcp_probe.py http://127.0.0.1:PORT/mcp
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def outcome(result):
    """A tool result as data: whether the SDK marked it an error, its JSON text, and its structured content."""
    text = result.content[0].text if result.content else ""
    try:
        body = json.loads(text)
    except ValueError:
        body = {"unparsed": text}
    return {"isError": bool(result.is_error), "body": body, "structured": result.structured_content}


def hints(tool):
    """A tool's title and annotations as MCP names them."""
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    return {"title": tool.title, "annotations": annotations}


async def probe(url, token):
    report = {}
    headers = {"authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                report["server"] = init.server_info.name
                tools = (await session.list_tools()).tools
                report["tools"] = {tool.name: tool.input_schema for tool in tools}
                report["hints"] = {tool.name: hints(tool) for tool in tools}
                report["whoami"] = outcome(await session.call_tool("whoami", {}))
                # Name another actor: refused with the problem details HTTP gives.
                report["actor"] = outcome(await session.call_tool("object_take", {"key": "plan", "actor": "someone-else"}))
                # A NUL in a key, deep down: refused as invalid input, never a failure of the server.
                report["nul"] = outcome(await session.call_tool("object_create", {"key": "k", "content": {"a": {"b\u0000": 1}}}))
                # Both content and contentRef: the one-of rule the schema states.
                report["both"] = outcome(await session.call_tool("object_create", {"key": "k", "content": 1, "contentRef": "file:x"}))
                report["unknown"] = outcome(await session.call_tool("no_such_tool", {}))
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe(sys.argv[1], os.environ["BATON_TOKEN"]))))
