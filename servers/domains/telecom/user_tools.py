"""User-side tools of the telecom domain: what the customer can see and do on their phone.

The phone is a small simulation: settings feed a network search that decides the connection,
and read-outs (status bar, speed test, MMS check) are derived from the resulting state. The
order of reads and writes follows the reference, including where a bad argument is stored
before the call fails, because later calls and the database hash see it.
"""

from __future__ import annotations

from typing import Any, Literal

from tau_mcp.servers.domains.telecom.user_models import (
    APNNames,
    APNSettings,
    AppPermissions,
    MockPhoneAttributes,
    NetworkModePreference,
    NetworkStatus,
    NetworkTechnology,
    PerformanceLevel,
    SignalStrength,
    SimStatus,
    UserSurroundings,
    VpnDetails,
)
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, assertion, tool

_SIGNAL_ICONS = {
    SignalStrength.NONE: "📵 No Signal",
    SignalStrength.POOR: "📶¹ Poor",
    SignalStrength.FAIR: "📶² Fair",
    SignalStrength.GOOD: "📶³ Good",
    SignalStrength.EXCELLENT: "📶⁴ Excellent",
}

_SIM_TEXTS = {
    SimStatus.ACTIVE: "Your SIM card is active and working.",
    SimStatus.MISSING: "No SIM card detected in the phone.",
    SimStatus.LOCKED_PIN: "The SIM card is locked with a PIN code.",
    SimStatus.LOCKED_PUK: "The SIM card is locked with a PUK code.",
}

# Download speed range (min, max) in Mbps per network generation.
_TECH_SPEED = {
    NetworkTechnology.TWO_G: (0.1, 0.4),
    NetworkTechnology.THREE_G: (1.0, 5.0),
    NetworkTechnology.FOUR_G: (10.0, 100.0),
    NetworkTechnology.FIVE_G: (50.0, 500.0),
    NetworkTechnology.NONE: (0.0, 0.0),
}

# Share of the potential speed reached at each signal level.
_SIGNAL_FACTOR = {
    SignalStrength.POOR: 0.2,
    SignalStrength.FAIR: 0.5,
    SignalStrength.GOOD: 0.8,
    SignalStrength.EXCELLENT: 1.0,
    SignalStrength.NONE: 0.0,
}

# (upper bound exclusive, label, advice) for speed test read-outs.
_SPEED_BANDS = (
    (1, "Very Poor", "Connection is very slow. Basic web browsing might be difficult."),
    (5, "Poor", "Connection is slow. Web browsing may be sluggish, streaming difficult."),
    (25, "Fair", "Connection is okay for web browsing and some standard definition streaming."),
    (100, "Good", "Connection is good for most activities, including HD streaming."),
)
_TOP_BAND = ("Excellent", "Connection is very fast.")

# Which network generation each mode preference connects to (the 5G-preferred mode falls
# back to 4G where there is no 5G signal).
_MODE_TECH = {
    NetworkModePreference.FOUR_G_ONLY: NetworkTechnology.FOUR_G,
    NetworkModePreference.THREE_G_ONLY: NetworkTechnology.THREE_G,
    NetworkModePreference.TWO_G_ONLY: NetworkTechnology.TWO_G,
}


def _default_vpn() -> VpnDetails:
    """The VPN profile a connection uses. Its server performs poorly: the reference shares one
    profile object across its whole process, and the first broken-VPN task set up there
    degrades it for every later connection; the recorded fixtures (and any reference run that
    has set up such a task) show the degraded profile. See docs/divergences-telecom.md."""
    return VpnDetails(
        server_address="192.168.1.1",
        protocol="OpenVPN",
        server_performance=PerformanceLevel.POOR,
    )


class TelecomUserTools(Toolkit):
    """The customer's phone and surroundings."""

    def __init__(self, db: Any, episode: Any = None) -> None:
        super().__init__(db, episode)
        # One profile object per episode, handed to every connection (as in the reference).
        self.default_vpn_details = _default_vpn()

    @property
    def device(self) -> MockPhoneAttributes:
        return self.db.device

    @property
    def surroundings(self) -> UserSurroundings:
        return self.db.surroundings

    # --- status bar -------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_status_bar(self) -> str:
        """Read the icons at the top of your screen: signal bars, network type, mobile data
        (on, off, data saver), Wi-Fi, VPN and battery."""
        return f"Status Bar: {self._check_status_bar()}"

    def _check_status_bar(self) -> str:
        device = self.device
        parts = []
        if device.airplane_mode:
            parts.append("✈️ Airplane Mode")
        else:
            parts.append(_SIGNAL_ICONS.get(device.network_signal_strength, "📵 No Signal"))
            has_network = device.network_technology_connected != NetworkTechnology.NONE
            if has_network:
                parts.append(device.network_technology_connected.value)
            if device.data_enabled and has_network:
                parts.append("📱 Data Enabled")
                if device.data_saver_mode:
                    parts.append("🔽 Data Saver")
            else:
                parts.append("📵 Data Disabled")
        if device.wifi_enabled and device.wifi_connected:
            parts.append(
                f"📡 Connected to {device.wifi_ssid}" if device.wifi_ssid else "📡 Enabled"
            )
        if device.vpn_connected:
            parts.append("🔒 VPN Connected")
        parts.append(f"🔋 {device.battery_level}%")
        return " | ".join(parts)

    def _with_status_bar(self, text: str) -> str:
        return f"{text}\nStatus Bar: {self._check_status_bar()}"

    # --- network ----------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_network_status(self) -> str:
        """See how your phone is connected: airplane mode, SIM, cellular connection, signal,
        network type, mobile data and data roaming switches, and Wi-Fi."""
        device = self.device
        sim = self._check_sim_status()
        lines = [
            f"Airplane Mode: {'ON' if device.airplane_mode else 'OFF'}",
            f"SIM Card Status: {sim.value}",
            f"Cellular Connection: {device.network_connection_status.value}",
            f"Cellular Signal: {device.network_signal_strength.value}",
            f"Cellular Network Type: {device.network_technology_connected.value}",
            f"Mobile Data Enabled: {'Yes' if device.data_enabled else 'No'}",
            f"Data Roaming Enabled: {'Yes' if device.roaming_enabled else 'No'}",
            f"Wi-Fi Radio: {'ON' if device.wifi_enabled else 'OFF'}",
            f"Wi-Fi Connected: {'Yes' if device.wifi_connected else 'No'}",
        ]
        if device.wifi_connected:
            lines.append(f"Connected Wi-Fi Network: {device.wifi_ssid}")
        return "\n".join(lines)

    @tool(ToolKind.READ)
    def check_network_mode_preference(self) -> str:
        """See which kind of cellular network (5G, 4G, 3G, 2G) your phone is set to prefer."""
        return f"Network Mode Preference: {self.device.network_mode_preference.value}"

    @tool(ToolKind.WRITE)
    def set_network_mode_preference(self, mode: NetworkModePreference | str) -> str:
        """Choose which kind of cellular network your phone prefers; the phone then searches
        for a network again. Faster generations (4G/5G) give faster data.

        Args:
            mode: One of "4g_5g_preferred", "4g_only", "3g_only", "2g_only".
        """
        chosen = self._set_network_mode_preference(mode)
        if chosen is None:
            options = ", ".join(m.value for m in NetworkModePreference)
            return self._with_status_bar(
                f"Failed to set network mode: '{mode}' is not a valid option. "
                f"Please use one of: {options}"
            )
        return self._with_status_bar(f"Preferred Network Mode set to: {chosen.value}")

    def _set_network_mode_preference(self, mode: Any) -> Any:
        """The stored preference, or None for an unknown mode name. Non-string values are
        stored as given, like the reference does."""
        try:
            if isinstance(mode, str):
                mode = NetworkModePreference(mode)
            self.device.network_mode_preference = mode
            self.simulate_network_search()
            return mode
        except ValueError:
            return None

    def _get_mobile_data_working(self) -> bool:
        device, where = self.device, self.surroundings
        if device.airplane_mode or device.network_signal_strength == SignalStrength.NONE:
            return False
        if device.network_connection_status == NetworkStatus.NO_SERVICE:
            return False
        if where.is_abroad and (not device.roaming_enabled or not where.roaming_allowed):
            return False
        if not device.data_enabled:
            return False
        return not where.mobile_data_usage_exceeded

    @tool(ToolKind.READ)
    def run_speed_test(self) -> str:
        """Measure your mobile internet download speed and what it is good enough for."""
        speed, label = self._run_speed_test()
        if speed is None:
            return f"Speed test failed: {label or 'Could not determine speed'}."
        advice = next((a for _, name, a in _SPEED_BANDS if name == label), None)
        if advice is None:
            advice = _TOP_BAND[1] if label == _TOP_BAND[0] else ""
        return f"Speed Test Result: {speed:.2f} Mbps ({label}). {advice}"

    def _run_speed_test(self) -> tuple[float | None, str | None]:
        """(Mbps, label) of the mobile data connection, or (None, reason) without one."""
        if not self._get_mobile_data_working():
            return None, "No Connection"
        device = self.device
        factor = 1.0
        if (
            device.vpn_connected
            and device.vpn_details
            and device.vpn_details.server_performance == PerformanceLevel.POOR
        ):
            factor = 0.1
        if device.data_saver_mode:
            factor *= 0.2
        low, high = _TECH_SPEED.get(device.network_technology_connected, (0.0, 0.0))
        signal = _SIGNAL_FACTOR.get(device.network_signal_strength, 0.0)
        speed = round((low + high) / 2.0 * signal * factor, 2)
        for bound, label, _ in _SPEED_BANDS:
            if speed < bound:
                return speed, label
        return speed, _TOP_BAND[0]

    # --- airplane mode ----------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def toggle_airplane_mode(self) -> str:
        """Switch airplane mode on or off. On cuts every radio: cellular, Wi-Fi, Bluetooth."""
        now_on = self._toggle_airplane_mode()
        return self._with_status_bar(f"Airplane Mode is now {'ON' if now_on else 'OFF'}.")

    def _toggle_airplane_mode(self) -> bool:
        device = self.device
        was_on = device.airplane_mode
        device.airplane_mode = not was_on
        if was_on:
            device.network_connection_status = NetworkStatus.SEARCHING
            if device.wifi_enabled:
                self._drop_wifi_link()
        else:
            self._drop_wifi_link()
            if device.vpn_connected:
                self._disconnect_vpn()
        self.simulate_network_search()
        return device.airplane_mode

    def _drop_wifi_link(self) -> None:
        device = self.device
        device.wifi_connected = False
        device.wifi_ssid = None
        device.wifi_signal_strength = SignalStrength.NONE

    def turn_airplane_mode_on(self) -> str:
        if not self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now ON."

    def turn_airplane_mode_off(self) -> str:
        if self._toggle_airplane_mode():
            self._toggle_airplane_mode()
        return "Airplane Mode is now OFF."

    # --- SIM card ---------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_sim_status(self) -> str:
        """See whether your SIM card works, is missing, or is locked by a PIN or PUK code."""
        status = self._check_sim_status()
        return _SIM_TEXTS.get(status, f"Unknown SIM status: {status.value}")

    def _check_sim_status(self) -> SimStatus:
        if self.device.sim_card_missing:
            return SimStatus.MISSING
        return self.device.sim_card_status

    @tool(ToolKind.WRITE)
    def reseat_sim_card(self) -> str:
        """Take the SIM card out and put it back in; fixes a SIM the phone does not detect."""
        self.device.sim_card_missing = False
        self.simulate_network_search()
        return self._with_status_bar("SIM card re-seated successfully.")

    def unseat_sim_card(self) -> str:
        self.device.sim_card_missing = True
        self.simulate_network_search()
        return "SIM card un-seated successfully."

    def lock_sim_card(self, mode: Literal["pin", "puk"]) -> str:
        if mode == "pin":
            self.device.sim_card_status = SimStatus.LOCKED_PIN
        elif mode == "puk":
            self.device.sim_card_status = SimStatus.LOCKED_PUK
        self.simulate_network_search()
        return f"SIM card locked successfully in {mode} mode."

    # --- mobile data and roaming ------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def toggle_data(self) -> str:
        """Switch mobile (cellular) data on or off."""
        now_on = self._toggle_data()
        return self._with_status_bar(f"Mobile Data is now {'ON' if now_on else 'OFF'}.")

    def _toggle_data(self) -> bool:
        now_on = not self.device.data_enabled
        self.device.data_enabled = now_on
        self.simulate_network_search()
        return now_on

    def turn_data_on(self) -> str:
        self.device.data_enabled = True
        return "Data connection restored."

    def turn_data_off(self) -> str:
        if self._toggle_data():
            self._toggle_data()
        return "Data connection broken."

    @tool(ToolKind.WRITE)
    def toggle_roaming(self) -> str:
        """Switch data roaming on or off on the phone. Abroad, mobile data needs it on (and
        roaming enabled on the line by the carrier)."""
        now_on = self._toggle_roaming()
        return self._with_status_bar(f"Data Roaming is now {'ON' if now_on else 'OFF'}.")

    def _toggle_roaming(self) -> bool:
        now_on = not self.device.roaming_enabled
        self.device.roaming_enabled = now_on
        self.simulate_network_search()
        return now_on

    def turn_roaming_on(self) -> str:
        if not self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now ON."

    def turn_roaming_off(self) -> str:
        if self._toggle_roaming():
            self._toggle_roaming()
        return "Data Roaming is now OFF."

    @tool(ToolKind.READ)
    def check_data_restriction_status(self) -> str:
        """See whether Data Saver mode (which limits data use and speed) is on."""
        if self.device.data_saver_mode:
            return "Data Saver mode is ON (limits data usage)."
        return "Data Saver mode is OFF."

    @tool(ToolKind.WRITE)
    def toggle_data_saver_mode(self) -> str:
        """Switch Data Saver mode on or off. On saves data but slows the connection."""
        now_on = self._toggle_data_saver_mode()
        return self._with_status_bar(f"Data Saver Mode is now {'ON' if now_on else 'OFF'}.")

    def _toggle_data_saver_mode(self) -> bool:
        now_on = not self.device.data_saver_mode
        self.device.data_saver_mode = now_on
        return now_on

    def turn_data_saver_mode_on(self) -> str:
        if not self._toggle_data_saver_mode():
            self._toggle_data_saver_mode()
        return "Data Saver Mode is now ON."

    def turn_data_saver_mode_off(self) -> str:
        if self._toggle_data_saver_mode():
            self._toggle_data_saver_mode()
        return "Data Saver Mode is now OFF."

    # --- APN --------------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_apn_settings(self) -> str:
        """See the access point (APN) settings used for mobile data and picture messages."""
        settings = self.device.active_apn_settings.model_copy(deep=True)
        name = settings.apn_name.value or "Not Set"
        mmsc = settings.mmsc_url or "Not Set"
        return (
            f"Current APN Name: {name}\nMMSC URL (for picture messages): {mmsc}\n"
            "(These are technical settings, usually best left unchanged.)"
        )

    @tool(ToolKind.WRITE)
    def set_apn_settings(self, apn_settings: APNSettings | dict) -> str:
        """Replace the phone's access point (APN) settings; the phone then searches for a
        network again.

        Args:
            apn_settings: The new settings: apn_name ("internet" or "broken"),
                reset_at_reboot, mms_apn, mmsc_url, mms_proxy, mms_port.
        """
        if isinstance(apn_settings, dict):
            apn_settings = APNSettings(**apn_settings)
        self.device.active_apn_settings = apn_settings
        text = f"APN settings set to: {apn_settings.apn_name.value}"
        self.simulate_network_search()
        return self._with_status_bar(text)

    @tool(ToolKind.WRITE)
    def reset_apn_settings(self) -> str:
        """Restore the default access point (APN) settings. Takes effect when the phone
        restarts."""
        self.device.active_apn_settings.reset_at_reboot = True
        self.simulate_network_search()
        return self._with_status_bar("APN settings will reset at reboot.")

    def break_apn_settings(self) -> str:
        self.device.active_apn_settings.apn_name = APNNames.BROKEN
        self.simulate_network_search()
        return "APN settings broken. Please call reset_apn_settings() to fix."

    def break_apn_mms_setting(self) -> str:
        self.device.active_apn_settings.mmsc_url = None
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."

    # --- Wi-Fi ------------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_wifi_status(self) -> str:
        """See whether Wi-Fi is on, which network it is connected to and how strong it is."""
        device = self.device
        if not device.wifi_enabled:
            return "Wi-Fi is turned OFF."
        if device.wifi_connected:
            return (
                f"Wi-Fi is ON and connected to '{device.wifi_ssid}'. "
                f"Signal strength: {device.wifi_signal_strength.value}."
            )
        return "Wi-Fi is ON but not connected to any network."

    @tool(ToolKind.WRITE)
    def toggle_wifi(self) -> str:
        """Switch the Wi-Fi radio on or off (not possible in airplane mode)."""
        device = self.device
        if device.airplane_mode:
            return self._with_status_bar("Cannot change Wi-Fi settings while Airplane Mode is ON.")
        now_on = not device.wifi_enabled
        device.wifi_enabled = now_on
        if not now_on:
            self._drop_wifi_link()
        return self._with_status_bar(f"Wi-Fi is now {'ON' if now_on else 'OFF'}.")

    @tool(ToolKind.READ)
    def check_wifi_calling_status(self) -> str:
        """See whether Wi-Fi Calling (calls over Wi-Fi instead of the cellular network) is on."""
        return f"Wi-Fi Calling is currently turned {'ON' if self.device.wifi_calling_enabled else 'OFF'}."

    @tool(ToolKind.WRITE)
    def toggle_wifi_calling(self) -> str:
        """Switch Wi-Fi Calling on or off; it helps where the cellular signal is weak."""
        now_on = self._toggle_wifi_calling()
        return self._with_status_bar(f"Wi-Fi Calling is now {'ON' if now_on else 'OFF'}.")

    def _toggle_wifi_calling(self) -> bool:
        now_on = not self.device.wifi_calling_enabled
        self.device.wifi_calling_enabled = now_on
        return now_on

    def set_wifi_calling(self, enabled: bool, mms_over_wifi: bool | None = None) -> str:
        if self.device.wifi_calling_enabled != enabled:
            self._toggle_wifi_calling()
        text = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            self.device.wifi_calling_mms_over_wifi = mms_over_wifi
            text += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return text

    # --- VPN --------------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_vpn_status(self) -> str:
        """See whether a VPN is switched on or connected, with the connection's details."""
        device = self.device
        if device.vpn_connected:
            details = device.vpn_details.model_dump() if device.vpn_details else None
            if details:
                return f"VPN is ON and connected. Details: {details}"
            return "VPN is ON and connected (no specific details available)."
        if device.vpn_enabled_setting:
            return "VPN is turned ON in settings, but currently not connected."
        return "VPN is turned OFF."

    @tool(ToolKind.WRITE)
    def connect_vpn(self) -> str:
        """Connect your VPN."""
        device = self.device
        if device.vpn_connected:
            return "VPN already connected."
        device.vpn_connected = True
        device.vpn_details = self.default_vpn_details
        return self._with_status_bar("VPN connected successfully.")

    @tool(ToolKind.WRITE)
    def disconnect_vpn(self) -> str:
        """Disconnect the active VPN; traffic then goes directly over your connection."""
        if self._disconnect_vpn():
            return self._with_status_bar("VPN disconnected successfully.")
        return self._with_status_bar("No active VPN connection to disconnect.")

    def _disconnect_vpn(self) -> bool:
        device = self.device
        if not device.vpn_connected:
            return False
        device.vpn_connected = False
        device.vpn_details = None
        return True

    def break_vpn(self) -> str:
        self.connect_vpn()
        self.device.vpn_details.server_performance = PerformanceLevel.POOR
        return "VPN connection broken."

    # --- apps -------------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_installed_apps(self) -> str:
        """List the apps installed on your phone."""
        names = ", ".join(self.device.app_statuses.keys())
        return f"The following apps are installed on the phone: {names}"

    @tool(ToolKind.READ)
    def check_app_status(self, app_name: str) -> str:
        """Show an app's details, including the permissions it has.

        Args:
            app_name: Name of the app, e.g. "messaging" or "browser".
        """
        app = self.device.app_statuses.get(app_name)
        if not app:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app.model_copy(deep=True).permissions)
        lines = [f"Status for App: {app_name}"]
        if not granted:
            lines.append(" - Permissions: None granted.")
        else:
            lines.append(" - Permissions Granted:")
            lines.extend(f"   - {perm}" for perm in granted)
        return "\n".join(lines)

    @tool(ToolKind.READ)
    def check_app_permissions(self, app_name: str) -> str:
        """Show which permissions (sms, storage, phone, network) an app has.

        Args:
            app_name: Name of the app, e.g. "messaging" or "browser".
        """
        app = self.device.app_statuses.get(app_name)
        if not app:
            return f"App '{app_name}' not found on this phone."
        granted = _granted(app.permissions)
        if not granted:
            return f"App '{app_name}' currently has no permissions granted."
        return f"App '{app_name}' has permission for: {', '.join(granted)}."

    @tool(ToolKind.WRITE)
    def grant_app_permission(self, app_name: str, permission: str) -> str:
        """Give an app a permission it needs (e.g. the messaging app needs sms and storage to
        send picture messages).

        Args:
            app_name: Name of the app, e.g. "messaging".
            permission: The permission to grant, in lowercase: sms, storage, phone or network.
        """
        ok, text = self._grant_app_permission(app_name, permission)
        return self._with_status_bar(f"{'Success. ' if ok else 'Error. '}{text}")

    def _grant_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if not app:
            return False, f"App '{app_name}' not found. Cannot grant permission."
        known = list(app.permissions.model_dump().keys())
        if permission not in known:
            return (
                False,
                f"Permission '{permission}' not tracked for app '{app_name}', available permissions: {known}",
            )
        setattr(app.permissions, permission, True)
        return True, f"Permission '{permission}' granted to app '{app_name}'."

    def remove_app_permission(self, app_name: str, permission: str) -> tuple[bool, str]:
        app = self.device.app_statuses.get(app_name)
        permission = permission.lower()
        if not app:
            return False, f"App '{app_name}' not found. Cannot remove permission."
        if not hasattr(app.permissions, permission):
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        setattr(app.permissions, permission, False)
        return True, f"Permission '{permission}' removed from app '{app_name}'."

    # --- MMS --------------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def can_send_mms(self) -> str:
        """Check whether your messaging app can send picture (MMS) messages right now."""
        if self._can_send_mms():
            return "Your messaging app can send MMS messages."
        return "Your messaging app cannot send MMS messages."

    def _can_send_mms(self) -> bool:
        device = self.device
        if not self._get_mobile_data_working():
            return False
        if device.network_technology_connected == NetworkTechnology.TWO_G:
            return False
        # The carrier does not carry MMS over Wi-Fi calling.
        if device.wifi_calling_enabled and device.wifi_calling_mms_over_wifi:
            return False
        if device.active_apn_settings.mmsc_url is None:
            return False
        app = device.app_statuses.get("messaging")
        if app is None:
            return False
        return app.permissions.storage and app.permissions.sms

    # --- device -----------------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def reboot_device(self) -> str:
        """Restart your phone; it clears many temporary glitches and re-runs the network
        search (and applies a pending APN reset)."""
        lines = []
        if self.device.active_apn_settings.reset_at_reboot:
            lines.append("Resetting APN settings...")
            self.device.active_apn_settings = APNSettings()
        lines.append("Restarting network services...")
        self.device.network_connection_status = NetworkStatus.SEARCHING
        self.simulate_network_search()
        return self._with_status_bar("\n".join(lines))

    def simulate_network_search(self) -> None:
        """Decide the cellular connection from the SIM, mode preference, local signal,
        airplane mode, APN and whether the carrier has the line active."""
        device = self.device
        if self._check_sim_status() == SimStatus.ACTIVE:
            device.network_connection_status = NetworkStatus.CONNECTED
            pref = device.network_mode_preference
            signal = self.surroundings.signal_strength
            if pref == NetworkModePreference.FOUR_G_5G_PREFERRED:
                five_g = signal.get(NetworkTechnology.FIVE_G, SignalStrength.NONE)
                if five_g == SignalStrength.NONE:
                    tech = NetworkTechnology.FOUR_G
                    strength = signal.get(NetworkTechnology.FOUR_G, SignalStrength.NONE)
                else:
                    tech, strength = NetworkTechnology.FIVE_G, five_g
            else:
                tech = _tech_for_mode(pref)
                strength = signal.get(tech, SignalStrength.NONE)
            device.network_technology_connected = tech
            device.network_signal_strength = strength
        else:
            self._lose_service()
        if device.airplane_mode:
            self._lose_service()
        if device.active_apn_settings.apn_name == APNNames.BROKEN:
            self._lose_service()
        if not self.surroundings.line_active:
            self._lose_service()

    def _lose_service(self) -> None:
        device = self.device
        device.network_connection_status = NetworkStatus.NO_SERVICE
        device.network_technology_connected = NetworkTechnology.NONE
        device.network_signal_strength = SignalStrength.NONE

    # --- payments ---------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def check_payment_request(self) -> str:
        """See whether the carrier's agent has sent you a bill to pay."""
        request = self.surroundings.payment_request
        if request is None:
            return "No payment request has been made."
        return f"You have a payment request for bill {request.bill_id} of {request.amount_due} USD."

    @tool(ToolKind.WRITE)
    def make_payment(self) -> str:
        """Pay the bill the agent sent you a payment request for."""
        request = self.surroundings.payment_request
        if request is None:
            return "You do not have a payment request."
        request.paid = True
        return f"Payment of {request.amount_due} USD has been made for bill {request.bill_id}."

    # --- task setup -------------------------------------------------------------------------
    def set_user_info(self, name: str, phone_number: str) -> None:
        self.surroundings.name = name
        self.surroundings.phone_number = phone_number

    def set_user_location(self, abroad: bool) -> None:
        self.surroundings.is_abroad = abroad

    # --- environment assertions -------------------------------------------------------------
    @assertion
    def assert_airplane_mode_status(self, expected_status: bool) -> bool:
        return self.device.airplane_mode == expected_status

    @assertion
    def assert_service_status(self, expected_status: str) -> bool:
        return self.device.network_connection_status == NetworkStatus(expected_status)

    @assertion
    def assert_mobile_data_status(self, expected_status: bool) -> bool:
        return self._get_mobile_data_working() == expected_status

    @assertion
    def assert_mobile_roaming_status(self, expected_status: bool) -> bool:
        return self.device.roaming_enabled == expected_status

    @assertion
    def assert_mobile_data_saver_mode_status(self, expected_status: bool) -> bool:
        return self.device.data_saver_mode == expected_status

    @assertion
    def assert_internet_speed(
        self, expected_speed: float, expected_desc: str | None = None
    ) -> bool:
        speed, label = self._run_speed_test()
        speed = speed or 0.0
        if expected_desc is None:
            return speed >= expected_speed
        return speed >= expected_speed and label.lower() == expected_desc.lower()

    @assertion
    def assert_internet_not_excellent(self) -> bool:
        _, label = self._run_speed_test()
        return label.lower() != "excellent"

    @assertion
    def assert_can_send_mms(self, expected_status: bool) -> bool:
        return self._can_send_mms() == expected_status

    @assertion
    def assert_mobile_data_usage_exceeded(self, expected_status: bool) -> bool:
        return self.surroundings.mobile_data_usage_exceeded == expected_status


def _granted(permissions: AppPermissions) -> list[str]:
    return [
        name.replace("_", " ").lower()
        for name, allowed in permissions.model_dump().items()
        if allowed
    ]


def _tech_for_mode(mode: Any) -> NetworkTechnology:
    """The network generation a single-generation mode uses; 4G for anything else, including
    non-enum values a bad call may have stored."""
    try:
        return _MODE_TECH.get(mode, NetworkTechnology.FOUR_G)
    except TypeError:  # unhashable stored value
        return NetworkTechnology.FOUR_G
