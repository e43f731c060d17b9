"""What the ATM image archive holds: scans of the envelopes of a few recorded deposits.

Deposits not listed here have no images (expired or never captured).
"""

from __future__ import annotations

_RENT_REFUND_SCAN = """
=== ATM DEPOSIT ENVELOPE SCAN ===
Envelope ID: {envelope}
Deposit Time: {time}
ATM Location: {location}

--- ENVELOPE CONTENTS ---
Item 1: Personal Check
  - Check Number: {check}
  - Drawn On: {bank}
  - Payee: {payee}
  - Amount: $875.00
  - Memo: "October rent refund"
  - Signature: Present and legible
  - Date on Check: {dated}

Item 2: Cash
  - Denomination breakdown:
    * 2 x $100 bills = $200.00
    * 3 x $20 bills = $60.00
  - Total Cash: $260.00

--- DEPOSIT SUMMARY ---
Check Total: $875.00
Cash Total: $260.00
GRAND TOTAL: $1,135.00

--- MACHINE RECORD ---
Amount Recorded by ATM: $385.00
DISCREPANCY DETECTED: $750.00 difference

--- IMAGE QUALITY ---
Envelope scan: CLEAR
Check front: CLEAR
Check back (endorsement): CLEAR - endorsed "For Deposit Only - {payee}"
Cash image: CLEAR - bills visible and countable
"""

_DISCREPANCY_NOTE = (
    "Images clearly show deposit contents totaling $1,135.00. ATM machine recorded only "
    "$385.00. Discrepancy of $750.00 confirmed via image review."
)

_MATCHING_SCAN = """
=== ATM DEPOSIT ENVELOPE SCAN ===
Envelope ID: ENV-2025-5847-00293
Deposit Time: 10:15 AM EST

--- ENVELOPE CONTENTS ---
Item 1: Personal Check
  - Check Number: 7392
  - Amount: $500.00

--- DEPOSIT SUMMARY ---
Check Total: $500.00
Cash Total: $0.00
GRAND TOTAL: $500.00

--- MACHINE RECORD ---
Amount Recorded by ATM: $500.00
No discrepancy detected.
"""

# transaction id -> (ATM, envelope scan, reviewer's note)
IMAGES: dict[str, tuple[str, str, str]] = {
    "btxn_834027370c20": (
        "ATM #3921",
        _RENT_REFUND_SCAN.format(
            envelope="ENV-2025-3921-00923",
            time="3:47 PM CST",
            location="Rho-Bank ATM #3921, Cedar Lane Branch, Austin, TX",
            check="7284",
            bank="First Texas Bank",
            payee="Derek Yamamoto",
            dated="11/03/2025",
        ),
        _DISCREPANCY_NOTE,
    ),
    "btxn_test_deposit_001": (
        "ATM #3921",
        _RENT_REFUND_SCAN.format(
            envelope="ENV-2025-3921-00847",
            time="2:34 PM EST",
            location="Rho-Bank ATM #3921, 742 Oak Avenue, Portland, OR",
            check="4821",
            bank="First National Bank",
            payee="Linda Patterson",
            dated="11/05/2025",
        ),
        _DISCREPANCY_NOTE,
    ),
    "btxn_test_atm_dep_partial": (
        "ATM #5847",
        _MATCHING_SCAN,
        "Images confirm deposit matches recorded amount. No discrepancy found.",
    ),
}
