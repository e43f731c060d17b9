"""Agent-side tools of the mock domain."""

from __future__ import annotations

from tau_mcp.servers.domains.mock.models import Task, TaskStatus, User
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, assertion, tool


class MockTools(Toolkit):
    """Task management for the mock domain's users."""

    @tool(ToolKind.WRITE)
    def create_task(self, user_id: str, title: str, description: str = None) -> Task:  # type: ignore[assignment]
        """Create a pending task and assign it to a user.

        Args:
            user_id: Id of the user who will own the task.
            title: Short title of the task.
            description: Longer description (optional).
        """
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        new_id = f"task_{len(self.db.tasks) + 1}"
        created = Task(task_id=new_id, title=title, description=description, status="pending")
        self.db.tasks[new_id] = created
        self.db.users[user_id].tasks.append(new_id)
        return created

    @tool(ToolKind.READ)
    def get_users(self) -> list[User]:
        """List every user with the ids of their tasks."""
        return list(self.db.users.values())

    @tool(ToolKind.WRITE)
    def update_task_status(self, task_id: str, status: TaskStatus) -> Task:
        """Set a task's status.

        Args:
            task_id: Id of the task to change.
            status: New status, "pending" or "completed".
        """
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        record = self.db.tasks[task_id]
        record.status = status
        return record

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation to a human agent. Use it only when the user asks for a human,
        or when the policy and your tools cannot resolve the request.

        Args:
            summary: What the user needs, in a few sentences, for the human agent.
        """
        return "Transfer successful"

    # --- helpers for task setup and environment assertions ---------------------------------
    @assertion
    def assert_number_of_tasks(self, user_id: str, expected_number: int) -> bool:
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        return len(self.db.users.peek(user_id).tasks) == expected_number

    @assertion
    def assert_task_status(self, task_id: str, expected_status: TaskStatus) -> bool:
        if task_id not in self.db.tasks:
            raise ValueError(f"Task {task_id} not found")
        return self.db.tasks.peek(task_id).status == expected_status
