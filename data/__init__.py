"""tau-mcp's own data files, installed as the package `tau_mcp.data`: the pin list of the
reference release (`reference_pins.json`) and the demo set (`demo/`). Found at run time with
`importlib.resources` (see `tau_mcp.servers.engine.data.bundled`), so an installed wheel and a checkout
read the same files."""
