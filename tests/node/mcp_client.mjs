// Drives a tau-server MCP endpoint with the official MCP TypeScript SDK client.
// usage: node mcp_client.mjs <mcp-url> <calls-json> [bearer-token]
// Prints one JSON line: {"protocol", "tools": [...], "results": [{"text", "isError"}]}.
// The SDK is resolved from NODE_PATH (the test installs it outside the repository).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const resolveSdk = (sub) => require.resolve(`@modelcontextprotocol/sdk/${sub}`, { paths: (process.env.NODE_PATH || "").split(":") });
const { Client } = await import(resolveSdk("client/index.js"));
const { StreamableHTTPClientTransport } = await import(resolveSdk("client/streamableHttp.js"));

const [url, callsJson, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "tau-node-check", version: "0.0.1" });
await client.connect(transport);

const listed = await client.listTools();
const results = [];
for (const [name, args] of JSON.parse(callsJson)) {
  const res = await client.callTool({ name, arguments: args });
  results.push({ text: res.content?.[0]?.text ?? null, isError: Boolean(res.isError) });
}
const resources = await client.listResources();
console.log(JSON.stringify({
  protocol: transport.protocolVersion ?? null,
  sessionId: transport.sessionId ?? null,
  tools: listed.tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? null, required: t.inputSchema?.required ?? [] })),
  resources: resources.resources.map((r) => r.uri),
  results,
}));
await transport.terminateSession().catch(() => {});
await client.close();
