"""The customer's side of the telecom domain: the simulated phone and where its owner is.

Class and member names follow the reference: some tool texts show enum and model reprs, and
validation messages name the model.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SimStatus(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    ACTIVE = "active"
    MISSING = "missing"
    LOCKED_PIN = "locked_pin"
    LOCKED_PUK = "locked_puk"


class NetworkTechnology(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    NONE = "none"
    TWO_G = "2G"
    THREE_G = "3G"
    FOUR_G = "4G"
    FIVE_G = "5G"


class NetworkModePreference(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    FOUR_G_5G_PREFERRED = "4g_5g_preferred"
    FOUR_G_ONLY = "4g_only"
    THREE_G_ONLY = "3g_only"
    TWO_G_ONLY = "2g_only"


class SignalStrength(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    NONE = "none"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class PerformanceLevel(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    UNKNOWN = "unknown"
    POOR = "poor"
    FAIR = "fair"
    GOOD = "good"
    EXCELLENT = "excellent"


class NetworkStatus(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    CONNECTED = "connected"
    SEARCHING = "searching"
    NO_SERVICE = "no_service"
    EMERGENCY_ONLY = "emergency_only"


class APNNames(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    INTERNET = "internet"
    BROKEN = "broken"


class APNSettings(Strict):
    """One access point configuration of the phone's mobile data connection."""

    apn_name: APNNames = Field(APNNames.INTERNET, description="Name of the access point.")
    reset_at_reboot: bool = Field(
        False, description="True when the settings go back to defaults at the next restart."
    )
    mms_apn: str | None = Field("mms", description="Access point used for picture messages.")
    mmsc_url: str | None = Field(
        "http://mms.carrier.com/mms/wapenc",
        description="Address of the picture-message centre; picture messages need it.",
    )
    mms_proxy: str | None = Field(None, description="Proxy for picture messages, if any.")
    mms_port: int | None = Field(None, description="Port of that proxy, if any.")


class VpnDetails(Strict):
    server_address: str | None = None
    protocol: str | None = None
    server_performance: PerformanceLevel = Field(
        default=PerformanceLevel.UNKNOWN, validate_default=True
    )


class AppPermissions(Strict):
    sms: bool = False
    storage: bool = False
    phone: bool = False
    network: bool = False


class AppStatus(Strict):
    app_name: str
    permissions: AppPermissions = Field(default_factory=AppPermissions)


def _factory_apps() -> dict[str, AppStatus]:
    return {
        "messaging": AppStatus(
            app_name="messaging", permissions=AppPermissions(sms=True, storage=True, phone=True)
        ),
        "browser": AppStatus(
            app_name="browser", permissions=AppPermissions(network=True, storage=True)
        ),
    }


class MockPhoneAttributes(Strict):
    """Everything about the phone the tools can read or change."""

    sim_card_status: SimStatus = Field(default=SimStatus.ACTIVE, validate_default=True)
    sim_card_missing: bool = False
    airplane_mode: bool = False
    network_signal_strength: SignalStrength = Field(
        default=SignalStrength.GOOD, validate_default=True
    )
    network_technology_connected: NetworkTechnology = Field(
        default=NetworkTechnology.FIVE_G, validate_default=True
    )
    network_connection_status: NetworkStatus = Field(
        default=NetworkStatus.CONNECTED, validate_default=True
    )
    battery_level: int = 80
    data_enabled: bool = True
    roaming_enabled: bool = False
    network_mode_preference: NetworkModePreference = Field(
        default=NetworkModePreference.FOUR_G_5G_PREFERRED, validate_default=True
    )
    active_apn_settings: APNSettings = Field(default_factory=APNSettings)
    wifi_enabled: bool = False
    wifi_connected: bool = False
    wifi_ssid: str | None = None
    wifi_signal_strength: SignalStrength = Field(default=SignalStrength.NONE, validate_default=True)
    wifi_calling_enabled: bool = False
    wifi_calling_mms_over_wifi: bool = False
    data_saver_mode: bool = False
    vpn_enabled_setting: bool = False
    vpn_connected: bool = False
    vpn_details: VpnDetails | None = None
    app_statuses: dict[str, AppStatus] = Field(default_factory=_factory_apps)


class PaymentRequest(Strict):
    """A bill the carrier asked the customer to pay, and whether they did."""

    bill_id: str
    amount_due: float
    paid: bool = False


def _factory_signal() -> dict[NetworkTechnology, SignalStrength]:
    return {
        NetworkTechnology.TWO_G: SignalStrength.POOR,
        NetworkTechnology.THREE_G: SignalStrength.FAIR,
        NetworkTechnology.FOUR_G: SignalStrength.GOOD,
        NetworkTechnology.FIVE_G: SignalStrength.EXCELLENT,
    }


class UserSurroundings(Strict):
    """Facts about the phone's owner and place that the phone alone does not decide."""

    name: str | None = None
    phone_number: str | None = None
    is_abroad: bool = False
    roaming_allowed: bool = False
    signal_strength: dict[NetworkTechnology, SignalStrength] = Field(
        default_factory=_factory_signal
    )
    mobile_data_usage_exceeded: bool = False
    line_active: bool = True
    payment_request: PaymentRequest | None = None


class TelecomUserDB(Strict):
    device: MockPhoneAttributes = Field(default_factory=MockPhoneAttributes)
    surroundings: UserSurroundings = Field(default_factory=UserSurroundings)
