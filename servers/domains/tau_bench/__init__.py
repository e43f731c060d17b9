"""What the original τ-bench's two domains (`tau-bench-retail`, `tau-bench-airline`) share.

The original (sierra-research/tau-bench) keeps each domain's data as the dicts `json.load` returns,
calls a tool as `invoke(data=..., **arguments)` without validating the arguments, ends an episode
on a `respond` the user answers with `###STOP###` or on `transfer_to_human_agents`, and rewards
the data hash after replaying the gold actions plus the required outputs in the agent's replies.
These modules rebuild that on our engine: records (`records.py`), the data hash (`data_hash.py`),
tasks per split (`tasks.py`), the tools' calling convention (`toolkit.py`), the domain spec with
the data location (`spec.py`) and the original's reward_info (`reward.py`). See docs/taubench.md.
"""
