"""``rclpy.qos_overriding_options``: a publisher's or subscription's QoS set from outside
the node, through read-only parameters, as rclpy does when ``create_publisher(...,
qos_overriding_options=...)`` asks for it.

Each policy the options name becomes a parameter
``qos_overrides.<topic>.<publisher|subscription>[_<entity_id>].<policy>`` declared with
the profile's value (enums by their lower-case names, durations in ns); a value given
from outside (a params file's ``qos_overrides: {/chatter: {publisher: {depth: 3}}}``)
replaces it, and the entity gets the resulting profile. The resulting profile is what
the RTI matches (an overridden reliability may part a publisher from a subscription, as
under ROS 2: :mod:`hprm_bridge.rclpy.qos_compatibility`), what the graph queries and
deadlines see, and what plain ROS 2 sees through the gateway.

>>> QoSOverridingOptions.with_default_policies().policy_kinds
(<QoSPolicyKind.HISTORY: 32>, <QoSPolicyKind.DEPTH: 128>, <QoSPolicyKind.RELIABILITY: 16>)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from hprm_bridge import messages
from hprm_bridge.rclpy.duration import Duration
from hprm_bridge.rclpy.exceptions import ParameterAlreadyDeclaredException
from hprm_bridge.rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    LivelinessPolicy,
    QoSPolicyKind,
    QoSProfile,
    ReliabilityPolicy,
)

__all__ = ["InvalidQosOverridesError", "QoSOverridingOptions", "QosCallbackType"]
# and QosCallbackResult (module __getattr__)

QosCallbackType = Callable[[QoSProfile], Any]  # returns a QosCallbackResult


def __getattr__(name: str) -> Any:
    # rclpy's QosCallbackResult is rcl_interfaces' SetParametersResult (what the options'
    # callback returns): a message class, so looked up when first asked for
    if name == "QosCallbackResult":
        return messages.message_class("rcl_interfaces/msg/SetParametersResult")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_ENUMS = {QoSPolicyKind.HISTORY: HistoryPolicy, QoSPolicyKind.RELIABILITY: ReliabilityPolicy,
          QoSPolicyKind.DURABILITY: DurabilityPolicy,
          QoSPolicyKind.LIVELINESS: LivelinessPolicy}  # fmt: skip
_DURATIONS = (QoSPolicyKind.DEADLINE, QoSPolicyKind.LIFESPAN,
              QoSPolicyKind.LIVELINESS_LEASE_DURATION)  # fmt: skip


class InvalidQosOverridesError(Exception):
    """The options' callback refused the profile the overrides made."""


class QoSOverridingOptions:
    def __init__(
        self, policy_kinds: Iterable[QoSPolicyKind], *,
        callback: Callable[[QoSProfile], Any] | None = None, entity_id: str | None = None,
    ) -> None:  # fmt: skip
        self._policy_kinds = policy_kinds
        self._callback = callback
        self._entity_id = entity_id

    @property
    def policy_kinds(self) -> Iterable[QoSPolicyKind]:
        return self._policy_kinds

    @property
    def callback(self) -> Callable[[QoSProfile], Any] | None:
        return self._callback

    @property
    def entity_id(self) -> str | None:
        return self._entity_id

    @classmethod
    def with_default_policies(
        cls, *, callback: Callable[[QoSProfile], Any] | None = None,
        entity_id: str | None = None,
    ) -> QoSOverridingOptions:  # fmt: skip
        """History, depth and reliability: what integrators most often tune."""
        kinds = (QoSPolicyKind.HISTORY, QoSPolicyKind.DEPTH, QoSPolicyKind.RELIABILITY)
        return cls(kinds, callback=callback, entity_id=entity_id)


def declare_qos_parameters(
    kind: str, node: Any, topic: str, qos: QoSProfile, options: QoSOverridingOptions
) -> QoSProfile:
    """The profile of a ``kind`` ("publisher" or "subscription") of ``topic`` once the
    node's overrides apply (a copy: a shared preset such as ``qos_profile_sensor_data``
    is left as it is)."""
    kinds = [k for k in options.policy_kinds
             if not (k == QoSPolicyKind.LIFESPAN and kind == "subscription")]  # fmt: skip
    if not kinds and options.callback is None:
        return qos
    qos = copy.copy(qos)
    suffix = "" if options.entity_id is None else f"_{options.entity_id}"
    for policy in kinds:
        field = policy.name.lower()
        name = f"qos_overrides.{topic}.{kind}{suffix}.{field}"
        descriptor = messages.message_class("rcl_interfaces/msg/ParameterDescriptor")(
            description=f"QoS {field} of the {kind} of {topic} (entity id {options.entity_id})",
            read_only=True,
        )
        try:
            param = node.declare_parameter(name, _parameter_value(qos, policy), descriptor)
        except ParameterAlreadyDeclaredException:  # a second entity of the same id
            param = node.get_parameter(name)
        setattr(qos, field, _policy_value(policy, param.value))
    if options.callback is not None:
        result = options.callback(qos)
        if not result.successful:
            raise InvalidQosOverridesError(
                f"the QoS overrides of the {kind} of {topic} (entity id "
                f"{options.entity_id}) are refused: {result.reason}"
            )
    return qos


def _parameter_value(qos: QoSProfile, policy: QoSPolicyKind) -> Any:
    value = getattr(qos, policy.name.lower())
    if policy in _ENUMS:
        if value.name == "UNKNOWN":
            raise ValueError(f"the QoS profile's {policy.name.lower()} is UNKNOWN")
        return value.name.lower()
    if policy in _DURATIONS:
        return value.nanoseconds
    return value


def _policy_value(policy: QoSPolicyKind, value: Any) -> Any:
    if policy in _ENUMS:
        try:
            return _ENUMS[policy][str(value).upper()]
        except KeyError:
            raise RuntimeError(
                f"QoS override of {policy.name.lower()}: {value!r} is none of "
                f"{[p.name.lower() for p in _ENUMS[policy]]}"
            ) from None
    if policy in _DURATIONS:
        return Duration(nanoseconds=value)
    return value
