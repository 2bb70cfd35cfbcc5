"""The Cyclone DDS configuration the client generates for a domain.

Two jobs:

* ``ROS_LOCALHOST_ONLY=1`` must keep traffic on loopback *and* still discover
  a real Humble node (rclpy/rclcpp on rmw_cyclonedds_cpp) there. rmw only
  prepends ``<General><Interfaces><NetworkInterface address="127.0.0.1"/>``
  (``check_create_domain()`` in ``src/rmw_node.cpp``) and leaves the rest to
  the Cyclone it was built with, and Humble's Cyclone (0.10.x) and ours (the
  ``cyclonedds`` wheel, 11.x) decide differently about Linux's ``lo``, which
  usually lacks the ``MULTICAST`` flag:

  - 0.10 trusts the flag: "selected interface "lo" is not multicast-capable:
    disabling multicast", switches to participant index ``auto`` (each
    process listens on the fixed unicast port ``7410 + 250 d + 2 i``) and
    sends SPDP only to those ports on 127.0.0.1 (indices 0..8). Were ``lo``
    flagged ``MULTICAST``, it would multicast SPDP and use random ports.
  - 11 probes ``lo``, finds multicast works ("lo: presumed robust multicast
    support", Cyclone commit 3b66431d, "Try multicast on loopback when flag not
    set") and, with the same XML, multicasts SPDP to 239.255.0.1 from a random
    port, with participant index ``none``.

  So with rmw's XML alone neither side ever reaches a port the other listens
  on. We add what makes the 11.x side speak both dialects: participant index
  ``auto`` (we are reachable where a 0.10 peer looks) and 127.0.0.1 as a peer
  (our SPDP goes to every participant-index port, where a 0.10 peer listens),
  while Cyclone keeps multicast on ``lo`` when it works, which a 0.10 peer on a
  multicast-flagged ``lo``, another Cyclone 11 and our own nodes use.
  An index belongs to a process (its participants share the domain's
  sockets). ``MaxAutoParticipantIndex`` stays at Cyclone 11's 99 (capped so
  domain 232's ports stay below 65536) rather than 0.10's 9: a process of ours
  past index 8, where a 0.10 peer never looks, is still found, because our
  SPDP reaches the peer and Cyclone answers a new participant directly.
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

import logging
import os
import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

_log = logging.getLogger("hprm_bridge.wire")


@dataclass(frozen=True)
class DdsConfig:
    """Knobs of the generated Cyclone configuration (sizes are Cyclone strings)."""

    localhost_only: bool = False
    """Loopback only, discoverable by Humble nodes there (``ROS_LOCALHOST_ONLY=1``)."""
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


def localhost_only_from_env(env: Mapping[str, str] | None = None) -> bool:
    """ROS 2's rule: ``ROS_LOCALHOST_ONLY=1`` enables it, anything else does not.

    rmw compares with ``"1"`` and silently ignores anything else; we keep that
    rule (so a node here and a ROS node agree) but say so, because
    ``ROS_LOCALHOST_ONLY=true`` leaving traffic on every interface is a
    surprise worth a line in the log.
    """
    value = (env if env is not None else os.environ).get("ROS_LOCALHOST_ONLY", "")
    if value not in ("", "0", "1"):
        _log.warning(
            "ROS_LOCALHOST_ONLY=%r is not '1': localhost-only stays off, as ROS 2 does", value
        )
    return value == "1"


MAX_DOMAIN_ID = 232
"""ROS 2's highest domain id on Linux (ROS 2 docs, "The ROS_DOMAIN_ID"): the
last one whose ports (:func:`domain_ports`) start below 65536 - 250."""


def check_domain_id(domain_id: object, source: str = "domain_id") -> int:
    """``domain_id`` if it is a usable ROS domain id, else a clear error naming ``source``."""
    if isinstance(domain_id, bool) or not isinstance(domain_id, int):
        raise TypeError(f"{source} must be an int 0..{MAX_DOMAIN_ID}, got {domain_id!r}")
    if not 0 <= domain_id <= MAX_DOMAIN_ID:
        raise ValueError(
            f"{source}={domain_id} is out of range 0..{MAX_DOMAIN_ID} (ROS 2 advises 0..101 on "
            "Linux; each domain owns 250 UDP ports from 7400 + 250 * id)"
        )
    return domain_id


def domain_id_from_env(env: Mapping[str, str] | None = None) -> int:
    """``ROS_DOMAIN_ID`` (0 when unset or empty, as in rcl ``rcl_get_default_domain_id``)."""
    value = (env if env is not None else os.environ).get("ROS_DOMAIN_ID", "").strip()
    if not value:
        return 0
    try:
        domain = int(value, 10)
    except ValueError:
        raise ValueError(
            f"ROS_DOMAIN_ID={value!r} is not a decimal integer; set it to 0..{MAX_DOMAIN_ID} "
            "(0..101 on Linux) or unset it for domain 0"
        ) from None
    return check_domain_id(domain, "ROS_DOMAIN_ID")


_PORT_BASE = 7400
_DOMAIN_GAIN = 250
_PARTICIPANT_GAIN = 2
_UNICAST_DATA_OFFSET = 11
"""RTPS port mapping (DDSI-RTPS 2.x, 9.6.1.1) with Cyclone's defaults: domain d
owns UDP ports ``7400 + 250 d`` up to 250 more (multicast discovery and data,
then a unicast pair per participant index ``i``: ``+ 10 + 2 i`` and ``+ 11 + 2 i``)."""
_MAX_PARTICIPANT_INDEX = 99
"""Cyclone 11's ``Discovery/MaxAutoParticipantIndex`` default."""
LOOPBACK = "127.0.0.1"


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


DOMAIN_SHARD_ENV = "HPRM_DOMAIN_SHARD"
"""``K/N``: this is run K (0-based) of N that share the machine at once (pytest-xdist's
workers, say); :func:`random_domain_id` then picks only ids ``d`` with ``d % N == K``, so
that two runs never land in one domain and hear each other's ``/chatter``."""


def domain_shard(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """``(K, N)`` from ``HPRM_DOMAIN_SHARD`` (``(0, 1)``, every id, when it is unset).

    >>> domain_shard({"HPRM_DOMAIN_SHARD": "1/3"})
    (1, 3)
    """
    value = (env if env is not None else os.environ).get(DOMAIN_SHARD_ENV, "").strip()
    if not value:
        return 0, 1
    k, slash, n = value.partition("/")
    if slash and k.isdigit() and n.isdigit() and 0 <= int(k) < int(n) <= MAX_DOMAIN_ID // 2:
        return int(k), int(n)
    raise ValueError(
        f"{DOMAIN_SHARD_ENV}={value!r} is not K/N with 0 <= K < N <= {MAX_DOMAIN_ID // 2} "
        "(run K of N sharing this machine's domain ids)"
    )


def random_domain_id(avoid: Collection[int] = ()) -> int:
    """A random domain id for a test or benchmark, away from the user's graph.

    Never 0 (ROS 2's default, where the user's own nodes live), never one whose
    ports meet the ephemeral range (see :func:`in_ephemeral_range`), and only
    this run's share of the ids where ``HPRM_DOMAIN_SHARD`` splits them.
    """
    k, n = domain_shard()
    eph = ephemeral_ports()
    choices = [
        d
        for d in range(1, MAX_DOMAIN_ID + 1)
        if d % n == k and d not in avoid and not _overlap(domain_ports(d), eph)
    ]
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


def max_participant_index(domain_id: int) -> int:
    """Highest participant index (see :func:`generate`) whose ports exist in ``domain_id``.

    99 (Cyclone's default) except for domain 232, whose ports would pass 65535
    from index 63 on: Cyclone would then send discovery to port 65536 and log a
    failure every round.
    """
    top = (65535 - domain_ports(check_domain_id(domain_id)).start - _UNICAST_DATA_OFFSET) // (
        _PARTICIPANT_GAIN
    )
    return min(_MAX_PARTICIPANT_INDEX, top)


def generate(config: DdsConfig, domain_id: int) -> str:
    """The configuration string for ``dds_create_domain`` (XML, then ``CYCLONEDDS_URI``)."""
    interfaces = discovery = ""
    if config.localhost_only:
        interfaces = f'<Interfaces><NetworkInterface address="{LOOPBACK}"/></Interfaces>'
        discovery = (
            "<Discovery><ParticipantIndex>auto</ParticipantIndex>"
            f"<MaxAutoParticipantIndex>{max_participant_index(domain_id)}"
            f'</MaxAutoParticipantIndex><Peers><Peer address="{LOOPBACK}"/></Peers></Discovery>'
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
        f"{discovery}"
        f"{config.extra_xml}"
        "</Domain></CycloneDDS>"
    )
    env_uri = os.environ.get("CYCLONEDDS_URI", "").strip() if config.use_env_uri else ""
    return f"{xml},{env_uri}" if env_uri else xml
