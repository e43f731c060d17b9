"""What the tests share: data locations and the `needs_data` marker (`data`), the conformance
fixtures (`conformance`), the server in-process or in a subprocess (`server`), the harness's
backend (`tau_mcp.harness`), the fake model server, the step-wise policies (`gym`), and the outside
agent program the serve tests run (`mcp_agent_program`)."""
