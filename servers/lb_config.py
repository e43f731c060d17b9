"""An HAProxy configuration that puts several `tau-server serve` nodes behind one address with
episode affinity: `tau-server lb-config --server HOST:PORT ...` prints it.

HAProxy computes the episode key of `tau_mcp.servers.routing` for every request (the path's
episode id; `default` for the default endpoints; the `mcp-session-id` header on the Eval
Protocol path and its control routes; from the body, `episode_id` of a create and
`clientInfo._extra.session_id` of EP's `initialize`) and keeps, in a stick table, which node
each key lives on: a key is placed on a node (round robin) the first time it is seen, and an
episode id the server chose itself (the create's `Location` header) and an EP transport id (the
`initialize` answer's `Mcp-Session-Id`) are learned from the answer. Peers can share the table
between several HAProxy instances (see docs/scaling.md). A node that is down answers its
episodes with one JSON sentence (503) instead of sending them to a node that never held them.
"""

from __future__ import annotations

import json

HTTP_TIMEOUTS = {
    "connect": "5s",
    "client": "65s",
    "server": "300s",
    "http-keep-alive": "65s",
    "http-request": "10s",
}
DOWN_SENTENCE = (
    "the tau-server node holding this episode is down or unreachable; if it was restarted its "
    "episodes are lost: start a new episode"
)


def haproxy_config(
    servers: list[str],
    bind: str = "127.0.0.1:8080",
    *,
    max_connections: int = 4096,
    table_size: str = "2m",
    expire: str = "24h",
) -> str:
    """The configuration text: `servers` are the nodes' `host:port`, `bind` the public address."""
    if not servers:
        raise ValueError("give at least one --server HOST:PORT")
    for server in servers:
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"--server must be HOST:PORT, not '{server}'")
    down = json.dumps({"error": DOWN_SENTENCE})
    timeouts = "\n".join(f"    timeout {name} {value}" for name, value in HTTP_TIMEOUTS.items())
    nodes = "\n".join(
        f"    server node{i} {server} check inter 2s fall 2 rise 2"
        for i, server in enumerate(servers)
    )
    return f"""# tau-server nodes behind one address, each episode on one node (tau-server lb-config)
global
    maxconn {max_connections}

defaults
    mode http
    option http-keep-alive
{timeouts}
    # one JSON sentence, as tau-server answers errors
    http-error status 503 content-type application/json string '{down}'

frontend tau
    bind {bind}
    maxconn {max_connections}
    # the bodies that name their episode are read before routing (tau-server caps them too)
    option http-buffer-request
    acl episode_path path_reg ^/[^/]+/episodes/[^/]+
    acl create path_reg ^/[^/]+/episodes/?$
    acl default_mcp path_reg ^/[^/]+/(agent|user)/mcp/?$
    acl ep_path path_reg ^/[^/]+/(mcp/?|control/[^/]+)$
    acl has_session req.hdr(mcp-session-id) -m found
    http-request set-var(txn.key) path,field(4,/) if episode_path
    http-request set-var(txn.key) str(default) if default_mcp
    http-request set-var(txn.key) req.hdr(mcp-session-id) if ep_path has_session
    http-request set-var(txn.key) req.body,json_query('$.episode_id') if METH_POST create
    http-request set-var(txn.key) req.body,json_query('$.params.clientInfo._extra.session_id') if METH_POST ep_path !has_session
    default_backend nodes

backend nodes
    balance roundrobin
    # an episode's node being down is that episode's error, never a trip to another node
    option persist
    stick-table type string len 160 size {table_size} expire {expire}
    stick match var(txn.key)
    stick store-request var(txn.key)
    stick store-response res.hdr(location),field(4,/)
    stick store-response res.hdr(mcp-session-id)
{nodes}
"""
