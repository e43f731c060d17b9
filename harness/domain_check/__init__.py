"""`tau-harness domain check`: prove a domain before anyone runs a model on it.

One module a job: `findings` (what a check reports, and the report), `data_checks` (the data
loads and validates), `tool_checks` (tool declarations and their listed schemas), `task_refs`
(tasks name only what exists), `gold_replay` (gold actions run cleanly, reach the task's
assertions, and twice give one state), `id_refs` (ids the gold names exist), `oracle_run` (the
oracle agent and scripted user reach reward 1), `inaction` (doing nothing earns nothing),
`suspicious` (legal but suspicious), `checker` (runs them all, timed), `render` (table, JSON).
"""
