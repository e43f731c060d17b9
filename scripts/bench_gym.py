"""Throughput of the Gymnasium env: episodes of a gold plan on one task with the scripted user
(no model), in-process, one env. Prints episodes/s, steps/s and the mean reset and step times.

    python scripts/bench_gym.py --domain airline --task-id 19 --episodes 50
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import tau_mcp.harness.integrations.gym  # noqa: F401
from tau_mcp.conversation.plan import describe, gold_actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="mock")
    parser.add_argument("--task-id", default="create_task_1")
    parser.add_argument("--episodes", type=int, default=50)
    args = parser.parse_args()

    env = gym.make("tau-mcp/Agent-v0", domain=args.domain, task_id=args.task_id, user="scripted")
    task = env.unwrapped.driver.domain.task(args.task_id)
    plan = [describe(a) for a in gold_actions(task) if a.requestor == "assistant"]
    plan.append("That is all done. Goodbye.")
    resets, steps, rewards = [], [], []
    started = time.perf_counter()
    for episode in range(args.episodes):
        t0 = time.perf_counter()
        env.reset(seed=episode)
        resets.append(time.perf_counter() - t0)
        for action in plan:
            t0 = time.perf_counter()
            _, reward, terminated, truncated, _ = env.step(action)
            steps.append(time.perf_counter() - t0)
            if terminated or truncated:
                break
        rewards.append(reward)
    elapsed = time.perf_counter() - started
    env.close()
    print(f"{args.domain}/{args.task_id}: {args.episodes} episodes in {elapsed:.2f} s")
    print(f"episodes/s {args.episodes / elapsed:.1f}  steps/s {len(steps) / elapsed:.1f}")
    print(
        f"mean reset {statistics.mean(resets) * 1000:.1f} ms  "
        f"mean step {statistics.mean(steps) * 1000:.1f} ms  mean reward {statistics.mean(rewards):.2f}"
    )


if __name__ == "__main__":
    main()
