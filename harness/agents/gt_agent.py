"""The ground-truth-guided agent: a model-driven agent that is also given the task's gold
actions as numbered resolution steps.

It tests the user simulator (a capable model following the steps should solve the task) and
gives an upper bound for an agent model. With reference texts it is the reference's
`llm_agent_gt`; without them it runs on our own prompt.
"""

from __future__ import annotations

from tau_mcp.conversation import reference_prompts
from tau_mcp.conversation.plan import describe, gold_actions
from tau_mcp.harness.agents.base import AgentContext
from tau_mcp.harness.agents.llm_agent import LLMAgent, conversation_prompt
from tau_mcp.servers.engine.tasks import Task

OWN_STEPS_HEADING = "# Resolution steps (do or ask the customer to do these, in order)"


def own_resolution_steps(context: AgentContext) -> str:
    lines = []
    for number, action in enumerate(gold_actions(context.task), start=1):
        who = "You" if action.requestor == "assistant" else "The customer"
        lines.append(f"{number}. {who}: {describe(action)}")
    return "\n".join(lines)


class GTAgent(LLMAgent):
    implementation = "gt"

    def __init__(self, context: AgentContext) -> None:
        reason = self.cannot_run(context.task)
        if reason:
            raise ValueError(
                f"task '{context.task.id}' has {reason}, so the gt agent cannot run it"
            )
        super().__init__(context)

    @classmethod
    def cannot_run(cls, task: Task) -> str | None:
        """The steps are the gold actions: a task with none gives the agent nothing to follow."""
        return None if gold_actions(task) else "no gold actions"

    def system_prompt(self) -> str:
        if self.texts is not None:
            return reference_prompts.gt_system_prompt(
                self.texts, self.context.policy, gold_actions(self.context.task)
            )
        steps = own_resolution_steps(self.context)
        return f"{conversation_prompt(self.context.policy)}\n\n{OWN_STEPS_HEADING}\n{steps}"
