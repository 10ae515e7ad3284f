"""MAX_HEADER from a .config, as include/linux/netdevice.h computes it (@6.1.192, @6.12.117):

    #if defined(CONFIG_HYPERV_NET)                          LL_MAX_HEADER 128
    #elif defined(CONFIG_WLAN) || IS_ENABLED(CONFIG_AX25)
    # if defined(CONFIG_MAC80211_MESH)                      128
    # else                                                  96
    #else                                                   32
    MAX_HEADER = LL_MAX_HEADER (+ 48 if IS_ENABLED any of NET_IPIP, NET_IPGRE, IPV6_SIT,
    IPV6_TUNNEL)

defined() is true for =y only (=m defines CONFIG_X_MODULE); IS_ENABLED() for =y and =m."""

from __future__ import annotations

import pytest

from vnetrx.kernel.build import max_header_from_kconfig, max_header_of


def _config(**values: str) -> str:
    return "".join(f"CONFIG_{k}={v}\n" for k, v in values.items())


@pytest.mark.parametrize(("values", "max_header"), [
    ({}, 32),
    ({"NET_IPIP": "m"}, 80),  # each tunnel alone adds 48, built in or modular
    ({"NET_IPGRE": "y"}, 80),
    ({"IPV6_SIT": "m"}, 80),
    ({"IPV6_TUNNEL": "m"}, 80),
    ({"HYPERV_NET": "m"}, 32),  # defined(CONFIG_HYPERV_NET): a module does not count
    ({"HYPERV_NET": "y"}, 128),
    ({"WLAN": "y"}, 96),
    ({"AX25": "m"}, 96),  # IS_ENABLED(CONFIG_AX25): a module counts
    ({"AX25": "y"}, 96),
    ({"MAC80211_MESH": "y"}, 32),  # mesh alone: neither WLAN nor AX25
    ({"WLAN": "y", "MAC80211_MESH": "y"}, 128),
    ({"AX25": "m", "MAC80211_MESH": "y"}, 128),  # Ubuntu azure: no WLAN, still 128
    ({"WLAN": "m", "MAC80211_MESH": "y"}, 32),  # WLAN is a bool: "m" never happens, not "y"
    ({"HYPERV_NET": "y", "WLAN": "y", "IPV6_TUNNEL": "m"}, 176),
    ({"WLAN": "y", "NET_IPIP": "n"}, 96),  # a value other than y/m is "not set"
])
def test_max_header_rule(values: dict[str, str], max_header: int) -> None:
    assert max_header_of(values) == max_header
    assert max_header_from_kconfig(_config(**values) + "# CONFIG_AX25_DAMA_SLAVE is not set\n") \
        == max_header
