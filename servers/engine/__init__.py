"""The domain-agnostic core: data loading, copy-on-write state, tools, episodes."""
