"""Mock domain records. Class names follow the reference: validation messages name them."""

from typing import Literal

from pydantic import BaseModel, ConfigDict

TaskStatus = Literal["pending", "completed"]


class Task(BaseModel):
    task_id: str
    title: str
    description: str | None = None
    status: TaskStatus


class User(BaseModel):
    user_id: str
    name: str
    tasks: list[str]


class MockDB(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tasks: dict[str, Task]
    users: dict[str, User]


class Notification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notification_id: str
    message: str
    status: Literal["unread", "read"] = "unread"
    task_id: str | None = None


class MockUserDB(BaseModel):
    model_config = ConfigDict(extra="forbid")
    notifications: dict[str, Notification] = {}
