"""The Cyclone DDS configuration the client generates for a domain.

Two jobs:

* ``ROS_LOCALHOST_ONLY=1``: restrict DDS to the loopback interface exactly as
  rmw_cyclonedds_cpp does (``check_create_domain()`` in ``src/rmw_node.cpp``,
  humble: prepends ``<General><Interfaces><NetworkInterface
  address="127.0.0.1"/>`` to the configuration, then appends
  ``CYCLONEDDS_URI``).
* Large samples: with Cyclone's defaults a 10 MB sample is cut into ~7,500
  1,344-byte fragments whose bursts overflow the ~200 KB default socket
  receive buffer, and the writer throttles to a 500 kB unacknowledged window,
  so 10 MB and 50 MB images stall for hundreds of ms waiting on NACK/heartbeat
  rounds (the knobs are documented in the Cyclone DDS configuration reference,
  ``docs/manual/options.md``: ``General/MaxMessageSize``,
  ``General/FragmentSize``, ``Internal/SocketReceiveBufferSize``,
  ``Internal/Watermarks/WhcHigh``, ``Internal/NackDelay``,
  ``Internal/HeartbeatInterval``; the ROS 2 docs "DDS tuning information"
  give the same advice for rmw_cyclonedds). We send 64 KB datagrams, ask for a
  large receive buffer (``max``, so a kernel cap - ``net.core.rmem_max`` - is
  not an error), raise the writer's window and answer NACKs at once.

Every value is a :class:`DdsConfig` field; anything else can be layered on with
``extra_xml`` or the ``CYCLONEDDS_URI`` environment variable, which Cyclone
merges after ours (later fragments override earlier ones, as with rmw).
"""

from __future__ import annotations

import os
import random
from collections.abc import Collection
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class DdsConfig:
    """Knobs of the generated Cyclone configuration (sizes are Cyclone strings)."""

    localhost_only: bool = False
    """Loopback only (``ROS_LOCALHOST_ONLY=1``)."""
    max_message_size: str = "65500B"
    """Largest RTPS datagram (Cyclone default 14720B)."""
    fragment_size: str = "62000B"
    """Payload bytes per DATA_FRAG (Cyclone default 1344B)."""
    socket_receive_buffer: str = "32MiB"
    """Requested receive buffer; the kernel may cap it (Cyclone default: OS default)."""
    socket_send_buffer: str = "8MiB"
    """Requested send buffer (Cyclone default: OS default)."""
    whc_high: str = "4MB"
    """Writer unacknowledged-data high watermark (Cyclone default 500kB)."""
    nack_delay: str = "1ms"
    """Delay before answering a NACK with retransmits (Cyclone default 100ms)."""
    heartbeat_interval: str = "5ms"
    """Writer heartbeat period while data is unacknowledged (Cyclone default 100ms)."""
    extra_xml: str = ""
    """Raw XML placed inside ``<Domain>`` after the generated elements."""
    use_env_uri: bool = True
    """Append ``CYCLONEDDS_URI`` so users can override anything."""

    def with_(self, **changes: object) -> DdsConfig:
        """A copy with some knobs changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


def localhost_only_from_env(env: dict[str, str] | None = None) -> bool:
    """ROS 2's rule: ``ROS_LOCALHOST_ONLY=1`` enables it, anything else does not."""
    return (env if env is not None else os.environ).get("ROS_LOCALHOST_ONLY", "0") == "1"


def domain_id_from_env(env: dict[str, str] | None = None) -> int:
    """``ROS_DOMAIN_ID`` (0 when unset, as in rcl ``rcl_get_default_domain_id``)."""
    value = (env if env is not None else os.environ).get("ROS_DOMAIN_ID", "").strip()
    if not value:
        return 0
    domain = int(value)
    if not 0 <= domain <= 232:
        raise ValueError(f"ROS_DOMAIN_ID={value} out of range 0..232")
    return domain


_PORT_BASE = 7400
_DOMAIN_GAIN = 250
"""RTPS port mapping (DDSI-RTPS 2.x, 9.6.1.1) with Cyclone's defaults: domain d
owns UDP ports ``7400 + 250 d`` up to 250 more (multicast discovery and data,
then a unicast pair per participant on the host)."""


def domain_ports(domain_id: int) -> range:
    """The UDP ports Cyclone DDS may bind for ``domain_id``."""
    base = _PORT_BASE + _DOMAIN_GAIN * domain_id
    return range(base, base + _DOMAIN_GAIN)


def ephemeral_ports() -> range:
    """Linux's ephemeral port range, from which the kernel picks ports for any socket."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def in_ephemeral_range(domain_id: int) -> bool:
    """Do the domain's ports meet the ephemeral range?

    Any process's outgoing socket may then hold one of them, and creating the
    domain fails with "address in use" at random: that is why the ROS 2 docs
    advise ``ROS_DOMAIN_ID`` 0..101 on Linux.
    """
    return _overlap(domain_ports(domain_id), ephemeral_ports())


def _overlap(a: range, b: range) -> bool:
    return a.start < b.stop and b.start < a.stop


def random_domain_id(avoid: Collection[int] = ()) -> int:
    """A random domain id for a test or benchmark, away from the user's graph.

    Never 0 (ROS 2's default, where the user's own nodes live) and never one
    whose ports meet the ephemeral range (see :func:`in_ephemeral_range`).
    """
    eph = ephemeral_ports()
    choices = [d for d in range(1, 233) if d not in avoid and not _overlap(domain_ports(d), eph)]
    if not choices:
        raise RuntimeError("no free DDS domain id left below the ephemeral port range")
    return random.SystemRandom().choice(choices)


def domain_failure(domain_id: int) -> str:
    """Why creating ``domain_id`` probably failed, and what to do (for the error)."""
    ports, eph = domain_ports(domain_id), ephemeral_ports()
    text = (
        f"cannot create DDS domain {domain_id}: Cyclone DDS refused it (its log line "
        f"above says why; usually one of the domain's UDP ports {ports.start}.."
        f"{ports.stop - 1} is already in use, or CYCLONEDDS_URI is invalid)"
    )
    if _overlap(ports, eph):
        text += (
            f". Those ports meet this machine's ephemeral port range {eph.start}.."
            f"{eph.stop - 1}, where any program's sockets may hold them: use "
            "ROS_DOMAIN_ID 0..101, as the ROS 2 docs advise on Linux"
        )
    return text


def generate(config: DdsConfig) -> str:
    """The configuration string for ``dds_create_domain`` (XML, then ``CYCLONEDDS_URI``)."""
    interfaces = (
        '<Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>'
        if config.localhost_only
        else ""
    )
    xml = (
        "<CycloneDDS><Domain>"
        f"<General>{interfaces}"
        f"<MaxMessageSize>{config.max_message_size}</MaxMessageSize>"
        f"<FragmentSize>{config.fragment_size}</FragmentSize>"
        "</General>"
        "<Internal>"
        f'<SocketReceiveBufferSize min="default" max="{config.socket_receive_buffer}"/>'
        f'<SocketSendBufferSize min="default" max="{config.socket_send_buffer}"/>'
        f"<Watermarks><WhcHigh>{config.whc_high}</WhcHigh></Watermarks>"
        f"<NackDelay>{config.nack_delay}</NackDelay>"
        f'<HeartbeatInterval min="1ms" minsched="2ms">{config.heartbeat_interval}'
        "</HeartbeatInterval>"
        "</Internal>"
        f"{config.extra_xml}"
        "</Domain></CycloneDDS>"
    )
    env_uri = os.environ.get("CYCLONEDDS_URI", "").strip() if config.use_env_uri else ""
    return f"{xml},{env_uri}" if env_uri else xml
