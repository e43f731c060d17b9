"""Step-wise interfaces for RL and rollout frameworks: Gymnasium environments (`gym/`) and a
verifiers environment (`verifiers_env`), both driving the same orchestrator, simulated users and
grader as `tau-harness run`, one policy message per step (see `stepwise`)."""
