"""Bridges to other frameworks: step-wise interfaces for RL and rollouts (Gymnasium
environments in `gym/`, a verifiers environment in `verifiers_env`, both driving the same
orchestrator, simulated users and grader as `tau-harness run`, see `stepwise`), and evaluation
frameworks (Eval Protocol dataset rows, Inspect tasks)."""
