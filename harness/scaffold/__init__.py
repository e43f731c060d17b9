"""`tau-harness domain new`: a small working domain pack written from the template beside this
file (`template/`), to start a domain of one's own from (docs/own-domain.md)."""
