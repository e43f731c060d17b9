"""The model-driven agents: a conversational one and a solo one that works a ticket alone."""

from __future__ import annotations

from tau_mcp.conversation import llm, reference_prompts
from tau_mcp.conversation.messages import STOP, ChatMessage
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming
from tau_mcp.harness.backends import ToolInfo
from tau_mcp.servers.engine.tasks import Task

CONVERSATION_GUIDANCE = """\
You are the customer-service representative for this business, talking with a customer.
The policy below is binding: follow it to the letter, and use only the tools you are given to
look up or change anything. Each turn, do exactly one of these: write a message to the
customer, or call one or more tools. Never mix the two in one turn. Tool arguments must be
valid JSON."""

SOLO_GUIDANCE = """\
You are resolving a support ticket on your own; no customer is on the line, so never write
messages, only call tools. Read the ticket, work through it with the tools as the policy
requires, and call `{done}` once the ticket is fully handled (this ends your session)."""

DONE_TOOL = "done"


def conversation_prompt(policy: str) -> str:
    return f"# How you work\n{CONVERSATION_GUIDANCE}\n\n# Policy\n{policy}"


def solo_prompt(policy: str, ticket: str) -> str:
    guidance = SOLO_GUIDANCE.format(done=DONE_TOOL)
    return f"# How you work\n{guidance}\n\n# Policy\n{policy}\n\n# Ticket\n{ticket}"


class LLMAgent(Agent):
    implementation = "llm"

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        if not context.llm:
            raise ValueError("the llm agent needs a model (--agent-llm)")
        self.texts = context.texts
        self.system = self.system_prompt()
        self.tool_schemas = [t.openai_schema() for t in context.tools]

    def system_prompt(self) -> str:
        if self.texts is not None:
            return reference_prompts.agent_system_prompt(self.texts, self.context.policy)
        return conversation_prompt(self.context.policy)

    def request_messages(self) -> list:
        """The system prompt and the agent's history, in the prompt set's wire layout."""
        messages = [{"role": "system", "content": self.system}, *self.history]
        if self.texts is not None:
            return [reference_prompts.wire_message(m) for m in messages]
        return messages

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.record(incoming)
        reply = await llm.generate(
            self.context.llm,
            self.request_messages(),
            tools=self.tool_schemas or None,
            **self._llm_args(),
        )
        self.history.append(reply)
        return reply

    def _llm_args(self) -> dict:
        # The trial's seed wins over a seed in --agent-llm-args, as in the reference.
        args = dict(self.context.llm_args)
        if self.context.seed is not None:
            args["seed"] = self.context.seed
        return args


class SoloAgent(LLMAgent):
    """Works the task's ticket with agent and user tools alone; calling `done` ends the run."""

    implementation = "solo"
    solo = True

    def __init__(self, context: AgentContext) -> None:
        reason = self.cannot_run(context.task)
        if reason:
            raise ValueError(f"task '{context.task.id}' has {reason}, so it cannot run solo")
        super().__init__(context)
        rules = self.texts.section("solo_agent") if self.texts is not None else {}
        self.done_name = rules.get("stop_function_name", DONE_TOOL)
        self.stop_token = rules.get("stop_token", STOP)
        self.tool_choice = rules.get("tool_choice", "required")
        done = context.stop_tool.openai_schema() if context.stop_tool is not None else None
        if done is None and self.texts is not None:
            done = reference_prompts.solo_done_tool(self.texts, context.domain)
        if done is None:
            done = ToolInfo(
                self.done_name,
                "Call this once the ticket is fully handled.",
                {"type": "object", "properties": {}},
            ).openai_schema()
        self.tool_schemas = [*self.tool_schemas, done]

    @classmethod
    def cannot_run(cls, task: Task) -> str | None:
        """The reference's rule for its solo agent: a task that starts from a history may hold
        only the agent's tool calls and their results (no customer, no text from the agent);
        any other needs a ticket and gold actions to be graded against."""
        if task.initial_state is not None:
            for message in task.initial_state.message_history or []:
                if message.role == "user":
                    return "a starting history with the customer's messages"
                if message.role == "assistant" and message.tool_calls is None:
                    return "a starting history with the agent's text messages"
            return None
        if not task.ticket:
            return "no ticket"
        if task.evaluation_criteria is None or not task.evaluation_criteria.actions:
            return "no gold actions"
        return None

    def system_prompt(self) -> str:
        if self.texts is not None:
            return reference_prompts.solo_system_prompt(
                self.texts, self.context.policy, self.context.task
            )
        return solo_prompt(self.context.policy, self.context.task.ticket or "")

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.record(incoming)
        reply = await llm.generate(
            self.context.llm,
            self.request_messages(),
            tools=self.tool_schemas,
            tool_choice=self.tool_choice,
            **self._llm_args(),
        )
        if reply.tool_calls and any(tc.name == self.done_name for tc in reply.tool_calls):
            # The stop call becomes the stop token in the agent's own history too.
            reply = reply.model_copy(update={"content": self.stop_token, "tool_calls": None})
        self.history.append(reply)
        return reply

    def is_stop(self, message: ChatMessage) -> bool:
        return message.content is not None and self.stop_token in message.content
