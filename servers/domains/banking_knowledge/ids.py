"""Deterministic record ids: the same request always gets the same id, so a state reached by
the gold actions and one reached by an agent making the same requests hash the same.

Each id is a prefix of the sha256 of a seed text built from the request; the seeds and
prefixes are the reference's, since ids show in outputs and in the graded database.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def hex_id(seed: str, length: int = 16) -> str:
    """The first `length` hex digits of sha256(seed)."""
    return hashlib.sha256(seed.encode()).digest()[: length // 2].hex()


def transaction_id(user_id, card_type, merchant, amount, category) -> str:
    seed = ":".join(["transaction", user_id, card_type, merchant, f"{amount:.2f}", category])
    return f"txn_{hex_id(seed, 12)}"


def referral_id(referrer_id, account_type) -> str:
    return hex_id(":".join(["referral", referrer_id, account_type]))


def application_id(card_type, customer_name, annual_income, subscription) -> str:
    return hex_id(f"credit_card:{card_type}:{customer_name}:{annual_income}:{subscription}")


def verification_id(user_id, time_verified) -> str:
    suffix = time_verified.replace(" ", "_").replace(":", "").replace("-", "")
    return f"{user_id}_{suffix}"


def user_tool_id(tool_name: str) -> str:
    return hex_id(f"user_discoverable_tool:{tool_name}")


def user_tool_call_id(tool_name: str, arguments: dict[str, Any]) -> str:
    return hex_id(
        f"user_discoverable_tool_call:{tool_name}:{json.dumps(arguments, sort_keys=True)}"
    )


def agent_tool_id(tool_name: str) -> str:
    return hex_id(f"agent_discoverable_tool:{tool_name}")


def dispute_id(user_id, transaction_id) -> str:
    return f"dsp_{hex_id(f'dispute:{user_id}:{transaction_id}', 12)}"


def referral_link_id(user_id, card_name) -> str:
    return hex_id(f"referral_link:{user_id}:{card_name}")


def credit_card_order_id(account_id, user_id, reason) -> str:
    return f"ccord_{hex_id(f'credit_card_order:{account_id}:{user_id}:{reason}', 12)}"


def closure_reason_id(account_id, user_id) -> str:
    return f"clsr_{hex_id(f'closure_reason:{account_id}:{user_id}', 12)}"


def account_flag_id(account_id, flag_type, expiration_date) -> str:
    return f"ccflag_{hex_id(f'account_flag:{account_id}:{flag_type}:{expiration_date}', 12)}"


def credit_limit_request_id(account_id, user_id, amount) -> str:
    return f"cli_{hex_id(f'cli_request:{account_id}:{user_id}:{amount:.2f}', 12)}"


def debit_card_order_id(account_id, user_id, delivery_option) -> str:
    return f"dcord_{hex_id(f'debit_card_order:{account_id}:{user_id}:{delivery_option}', 12)}"


def debit_card_id(account_id, user_id, issue_date) -> str:
    return f"dbc_{hex_id(f'debit_card:{account_id}:{user_id}:{issue_date}', 12)}"
