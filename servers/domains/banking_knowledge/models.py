"""The banking database (db.json): one model with a table per kind of record.

Every table is `{data: {id: record}, notes: text}`, as the reference stores it. Records stay
plain JSON objects rather than typed models: the reference keeps them so, its tools print them
field by field in stored order (including fields only some records have, and whatever types a
caller stored), and the hash covers exactly what was stored. Tables are copied into an episode
record by record (`cow_records`, see servers/engine/cow.py).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

Record = dict[str, Any]


class DatabaseTable(BaseModel):
    """One table: records by id, and a note on the table's fields for whoever reads it."""

    cow_records: ClassVar[str] = "data"

    data: dict[str, Record] = Field(default_factory=dict)
    notes: str = ""


def _table() -> Any:
    return Field(default_factory=DatabaseTable)


class TransactionalDB(BaseModel):
    """Everything the agent and the customer can change: customers, their accounts and cards,
    their requests, and the logs the tasks are graded on (verifications, discoverable-tool
    use). Field order is the reference's, so snapshots list tables as it does."""

    users: DatabaseTable = _table()
    accounts: DatabaseTable = _table()
    debit_cards: DatabaseTable = _table()
    referrals: DatabaseTable = _table()
    credit_card_applications: DatabaseTable = _table()
    user_discoverable_tools: DatabaseTable = _table()
    user_discoverable_tool_calls: DatabaseTable = _table()
    verification_history: DatabaseTable = _table()
    credit_card_transaction_history: DatabaseTable = _table()
    cash_back_disputes: DatabaseTable = _table()
    bank_account_transaction_history: DatabaseTable = _table()
    credit_card_accounts: DatabaseTable = _table()
    agent_discoverable_tools: DatabaseTable = _table()
    task_config: DatabaseTable = _table()
    human_transfer_requests: DatabaseTable = _table()
    transaction_disputes: DatabaseTable = _table()
    credit_card_orders: DatabaseTable = _table()
    debit_card_orders: DatabaseTable = _table()
    credit_card_closure_reasons: DatabaseTable = _table()
    credit_card_account_flags: DatabaseTable = _table()
    credit_limit_increase_requests: DatabaseTable = _table()
    payment_history: DatabaseTable = _table()
    debit_card_disputes: DatabaseTable = _table()


TABLE_NAMES: tuple[str, ...] = tuple(TransactionalDB.model_fields)
