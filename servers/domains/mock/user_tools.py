"""User-side tools of the mock domain: the user's notification inbox."""

from __future__ import annotations

from tau_mcp.servers.domains.mock.models import Notification
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, assertion, tool


class MockUserTools(Toolkit):
    """The simulated user's inbox of task notifications."""

    @tool(ToolKind.READ)
    def check_notifications(self) -> list[Notification]:
        """Show every notification in your inbox."""
        return list(self.db.notifications.values())

    @tool(ToolKind.WRITE)
    def dismiss_notification(self, notification_id: str) -> str:
        """Mark a notification as read.

        Args:
            notification_id: Id of the notification to dismiss.
        """
        if notification_id not in self.db.notifications:
            raise ValueError(f"Notification {notification_id} not found")
        self.db.notifications[notification_id].status = "read"
        return f"Notification {notification_id} dismissed"

    # --- helpers for task setup and environment assertions ---------------------------------
    def add_notification(
        self, notification_id: str, message: str, task_id: str | None = None
    ) -> Notification:
        note = Notification(notification_id=notification_id, message=message, task_id=task_id)
        self.db.notifications[notification_id] = note
        return note

    @assertion
    def assert_notification_status(self, notification_id: str, expected_status: str) -> bool:
        if notification_id not in self.db.notifications:
            raise ValueError(f"Notification {notification_id} not found")
        return self.db.notifications.peek(notification_id).status == expected_status
