"""Domain packages: one folder a domain (models, agent tools, user tools, spec)."""
