"""Which open topics the gateway carries to plain ROS 2, and how: allow/deny lists and
per-topic entries, from a YAML file or built in Python.

By default every topic the ported nodes leave open (no publisher, or no subscriber, among
them) is bridged with the ``arrival`` tag policy. A configuration narrows or tunes that:
``deny`` patterns win over ``allow`` patterns (Python regular expressions matched against
the whole topic name), and an entry under ``topics`` sets one topic's tag policy, stamp
offset, lateness rule, queue depth and QoS. A topic that is not bridged keeps its port (the
federation's shape does not depend on the file) and carries nothing to or from ROS 2; the
gateway logs each such topic once.

YAML::

    allow: ["/camera/.*", "/cmd_vel"]      # default: [".*"]
    deny: ["/camera/debug/.*"]
    lateness: drop                          # header_stamp topics: drop | clamp | module:function
    topics:
      /camera/image_raw: {tag_policy: header_stamp, stamp_offset: "5 ms", depth: 5}
      /map: {qos: latched}                  # or {reliability: best_effort, durability: volatile}

QoS: by default the gateway's endpoint of a topic follows the plain ROS 2 endpoints it
discovers there (``match_qos`` of :mod:`hprm_bridge.wire.node`): a best-effort driver, a
latched map publisher or a transient-local subscriber is matched without configuration.
``qos`` fixes it instead: a profile name (``default``, ``sensor_data``, ``latched``,
``system_default``) or ``reliability`` / ``durability`` values; ``depth`` applies to both.

Python::

    config = BridgeConfig(deny=["/debug/.*"],
                          topics={"/scan": TopicRule(tag_policy="header_stamp")})
    Federation(nodes, bridge=config)          # or hprm-ros run --bridge-config FILE
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hprm_bridge.wire.qos import QoSProfile

__all__ = ["BridgeConfig", "TopicRule"]

TAG_POLICIES = ("arrival", "header_stamp")
LATENESS = ("drop", "clamp")  # or "module:function", a handler (late_handler)
_RULE_KEYS = ("tag_policy", "stamp_offset", "lateness", "depth", "qos")
_QOS_KEYS = ("reliability", "durability")


@dataclass(frozen=True)
class TopicRule:
    """One topic's settings (None: the configuration's default)."""

    tag_policy: str = "arrival"
    stamp_offset: str | int = 0  # a duration ("5 ms") or ns; header_stamp only
    lateness: str | None = None
    depth: int = 10
    qos: str | dict[str, str] | None = None  # None: follow the discovered ROS 2 endpoints

    def __post_init__(self) -> None:
        from hprm_core.tag import duration

        if self.tag_policy not in TAG_POLICIES:
            raise ValueError(f"tag_policy must be one of {TAG_POLICIES}, not {self.tag_policy!r}")
        if self.lateness is not None:
            check_lateness(self.lateness)
        if not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"depth must be a positive integer, not {self.depth!r}")
        duration(self.stamp_offset)  # raises naming the bad duration
        self.profile()  # raises naming the bad QoS

    def profile(self) -> QoSProfile | None:
        """The fixed QoS of the topic's ROS 2 endpoint, or None to match the remote ones."""
        from hprm_bridge.wire.qos import PROFILES, QOS_DEFAULT, Durability, Reliability

        if self.qos is None:
            return None
        if isinstance(self.qos, str):
            if self.qos not in PROFILES:
                raise ValueError(f"qos: unknown profile {self.qos!r} (known: {sorted(PROFILES)})")
            return PROFILES[self.qos].with_(depth=self.depth)
        if not isinstance(self.qos, dict) or set(self.qos) - set(_QOS_KEYS):
            raise ValueError(f"qos: expected a profile name or a mapping of {_QOS_KEYS}, "
                             f"not {self.qos!r}")  # fmt: skip
        try:
            return QOS_DEFAULT.with_(
                depth=self.depth,
                reliability=Reliability(self.qos.get("reliability", "reliable")),
                durability=Durability(self.qos.get("durability", "volatile")),
            )
        except ValueError as exc:
            raise ValueError(f"qos: {exc} (reliability: reliable | best_effort, "
                             "durability: volatile | transient_local)") from None  # fmt: skip

    @property
    def offset_ns(self) -> int:
        from hprm_core.tag import duration

        return duration(self.stamp_offset)


@dataclass(frozen=True)
class BridgeConfig:
    allow: list[str] = field(default_factory=lambda: [".*"])
    deny: list[str] = field(default_factory=list)
    lateness: str = "drop"
    topics: dict[str, TopicRule] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in ("allow", "deny"):
            for pattern in getattr(self, key):
                try:
                    re.compile(pattern)
                except (re.error, TypeError) as exc:
                    raise ValueError(
                        f"{key}: {pattern!r} is not a regular expression: {exc}"
                    ) from None
        check_lateness(self.lateness)
        for topic in self.topics:
            if not topic.startswith("/"):
                raise ValueError(f"topics: {topic!r}: give the absolute name (/chatter)")

    def bridged(self, topic: str) -> bool:
        """Whether `topic` crosses to ROS 2: allowed by a pattern and denied by none, or
        named under ``topics`` (an entry is an allow of its own)."""
        if any(re.fullmatch(p, topic) for p in self.deny):
            return False
        return topic in self.topics or any(re.fullmatch(p, topic) for p in self.allow)

    def rule(self, topic: str) -> TopicRule:
        rule = self.topics.get(topic, TopicRule())
        return rule if rule.lateness else replace(rule, lateness=self.lateness)

    def to_dict(self) -> dict[str, Any]:
        """The YAML file's content (how the configuration reaches the gateway's process)."""
        return {"allow": list(self.allow), "deny": list(self.deny), "lateness": self.lateness,
                "topics": {t: {k: getattr(r, k) for k in _RULE_KEYS if getattr(r, k) is not None}
                           for t, r in self.topics.items()}}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Any, where: str = "bridge config") -> BridgeConfig:
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a mapping (allow, deny, lateness, topics)")
        unknown = sorted(set(data) - {"allow", "deny", "lateness", "topics"})
        if unknown:
            raise ValueError(f"{where}: unknown key {', '.join(unknown)} "
                             "(known: allow, deny, lateness, topics)")  # fmt: skip
        topics = {}
        for topic, entry in (data.get("topics") or {}).items():
            entry = entry or {}
            bad = sorted(set(entry) - set(_RULE_KEYS)) if isinstance(entry, dict) else ["?"]
            if bad:
                raise ValueError(f"{where}: topics: {topic}: unknown key {', '.join(bad)} "
                                 f"(known: {', '.join(_RULE_KEYS)})")  # fmt: skip
            try:
                topics[topic] = TopicRule(**entry)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{where}: topics: {topic}: {exc}") from None
        try:
            return cls(allow=list(data.get("allow", [".*"])), deny=list(data.get("deny", [])),
                       lateness=data.get("lateness", "drop"), topics=topics)  # fmt: skip
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> BridgeConfig:
        """From a YAML file; errors name the file and the key."""
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise ValueError(f"{path}: cannot read the bridge config: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not valid YAML: {exc}") from None
        return cls.from_dict(data, str(path))


def check_lateness(rule: Any) -> str:
    """``rule`` if it is a lateness rule: ``drop``, ``clamp``, or a handler named
    ``module:function`` that imports; else a ValueError naming what is wrong."""
    if rule in LATENESS:
        return rule
    late_handler(rule)
    return rule


def late_handler(rule: Any) -> Callable[[str, Any, int, int], Any]:
    """The handler a ``module:function`` lateness rule names.

    A header-stamped message whose tag would lie behind its arrival (the
    federation may be past it) goes to ``function(topic, msg, stamp_ns,
    arrival_ns)`` (both on the federation's clock, as tags: the system clock
    plus the gateway's ``clock_offset``, 0 on the RTI's host), in the
    gateway's process: it returns the message to deliver
    at its arrival (this one, changed or not, or another), or None to drop it.
    The gateway counts it as late either way. Why a name, not a callable: the
    gateway is its own process, and the configuration reaches it as YAML."""
    import importlib

    module, colon, name = rule.partition(":") if isinstance(rule, str) else ("", "", "")
    if not colon or not module or not name.isidentifier():
        raise ValueError(f"lateness must be one of {LATENESS} or module:function, not {rule!r}")
    try:
        handler = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"lateness handler {rule!r} cannot be imported: {exc}") from None
    if not callable(handler):
        raise ValueError(f"lateness handler {rule!r} is not callable")
    return handler


# -- the same settings from the command line (hprm-ros run, python -m hprm_bridge.gateway)


def tag_policy_arg(text: str) -> tuple[str, tuple[str, int]]:
    """``TOPIC=header_stamp[:OFFSET]`` (or ``TOPIC=arrival``)."""
    from hprm_core.tag import duration

    topic, eq, rest = text.partition("=")
    policy, _, offset = rest.partition(":")
    if not eq or not topic.startswith("/") or policy not in TAG_POLICIES:
        raise argparse.ArgumentTypeError(
            f"expected /TOPIC=header_stamp[:OFFSET] or /TOPIC=arrival, got {text!r}"
        )
    try:
        return topic, (policy, duration(offset) if offset else 0)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def lateness_arg(text: str) -> str:
    """``--lateness``: drop, clamp or module:function (checked: the handler imports)."""
    try:
        return check_lateness(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def with_flags(
    config: BridgeConfig, policies: list[tuple[str, tuple[str, int]]], lateness: str | None
) -> BridgeConfig:
    """`config` with the command line's --tag-policy entries and --lateness on top."""
    topics = dict(config.topics)
    for topic, (policy, offset) in policies:
        topics[topic] = replace(topics.get(topic, TopicRule()), tag_policy=policy,
                                stamp_offset=offset)  # fmt: skip
    return BridgeConfig(config.allow, config.deny, lateness or config.lateness, topics)
