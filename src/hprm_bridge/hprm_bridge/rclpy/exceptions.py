"""``rclpy.exceptions``: the exceptions (and messages) rclpy raises, so that
a node's ``except ParameterNotDeclaredException`` works unchanged."""

from __future__ import annotations

from typing import Any

__all__ = [
    "InvalidHandle",
    "InvalidNamespaceException",
    "InvalidNodeNameException",
    "InvalidParameterException",
    "InvalidParameterTypeException",
    "InvalidParameterValueException",
    "InvalidServiceNameException",
    "InvalidTopicNameException",
    "NameValidationException",
    "NoTypeSupportImportedException",
    "NotInitializedException",
    "ParameterAlreadyDeclaredException",
    "ParameterException",
    "ParameterImmutableException",
    "ParameterNotDeclaredException",
    "ParameterUninitializedException",
    "ROSInterruptException",
    "UnsupportedError",
]


class NoTypeSupportImportedException(Exception):
    """rclpy's, for code that names it; a federate's message classes need no type support."""

    def __init__(self, *args: Any) -> None:
        Exception.__init__(self, "no type_support imported")


class UnsupportedError(NotImplementedError):
    """A part of rclpy that HPRM federates do not offer (yet): the message
    names the call and why, instead of a silent no-op. HPRM's, not rclpy's."""


class InvalidHandle(RuntimeError):
    """As rclpy's: a publisher, client or timer used after its node's ``destroy_*``
    call (or ``destroy_node``) destroyed it."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} was destroyed: cannot use it")


class RCLError(RuntimeError):
    """rclpy's ``_rclpy.RCLError``: what rcl refuses, e.g. a lifecycle transition that
    the node's current state does not have."""


class NameValidationException(ValueError):
    """As rclpy's: a node name, namespace, topic or service name that ROS 2 refuses.
    A ValueError too (rclpy's graph queries raise that for a malformed topic)."""

    def __init__(self, name_type: str, name: str, error_msg: str, invalid_index: int = 0) -> None:
        super().__init__(f"Invalid {name_type}: {error_msg}:\n  '{name}'\n   "
                         f"{' ' * invalid_index}^")  # fmt: skip


class InvalidNamespaceException(NameValidationException):
    def __init__(self, name: str, error_msg: str, invalid_index: int = 0) -> None:
        super().__init__("namespace", name, error_msg, invalid_index)


class InvalidNodeNameException(NameValidationException):
    def __init__(self, name: str, error_msg: str, invalid_index: int = 0) -> None:
        super().__init__("node name", name, error_msg, invalid_index)


class InvalidTopicNameException(NameValidationException):
    def __init__(self, name: str, error_msg: str, invalid_index: int = 0) -> None:
        super().__init__("topic name", name, error_msg, invalid_index)


class InvalidServiceNameException(NameValidationException):
    def __init__(self, name: str, error_msg: str, invalid_index: int = 0) -> None:
        super().__init__("service name", name, error_msg, invalid_index)


class NodeNameNonExistentError(RCLError):
    """As rclpy's: a ``get_*_names_and_types_by_node`` query named a node the graph lacks."""


class ParameterException(Exception):
    def __init__(self, error_msg: str, parameters: Any, *args: Any) -> None:
        Exception.__init__(self, f"{error_msg}: {parameters}")


# rclpy's subclasses call Exception.__init__ with (message, parameters), so
# they print as that tuple; the same here, for logs that read alike.
class ParameterNotDeclaredException(ParameterException):
    def __init__(self, parameters: Any, *args: Any) -> None:
        Exception.__init__(self, "Invalid access to undeclared parameter(s)", parameters)


class ParameterAlreadyDeclaredException(ParameterException):
    def __init__(self, parameters: Any, *args: Any) -> None:
        Exception.__init__(self, "Parameter(s) already declared", parameters)


class InvalidParameterTypeException(ParameterException):
    def __init__(self, desired_parameter: Any, expected_type: Any, *args: Any) -> None:
        from hprm_bridge.rclpy.parameter import Parameter

        got = Parameter.Type.from_parameter_value(desired_parameter.value).name
        Exception.__init__(
            self,
            f"Trying to set parameter '{desired_parameter.name}' to "
            f"'{desired_parameter.value}' of type '{got}', expecting type '{expected_type}'",
        )


class InvalidParameterValueException(ParameterException):
    def __init__(self, parameter: Any, value: Any, reason: str, *args: Any) -> None:
        Exception.__init__(
            self, f"Invalid parameter value ({value}) for parameter. Reason: {reason}", parameter
        )


class ParameterImmutableException(ParameterException):
    def __init__(self, parameter: Any, *args: Any) -> None:
        Exception.__init__(self, "Attempted to modify read-only parameter", parameter)


class InvalidParameterException(ParameterException):
    def __init__(self, parameter: Any, *args: Any) -> None:
        Exception.__init__(self, "Invalid parameter name", parameter)


class ParameterUninitializedException(ParameterException):
    """A statically typed parameter read before it has a value."""

    def __init__(self, parameter_name: str, *args: Any) -> None:
        Exception.__init__(self, f"The parameter '{parameter_name}' is not initialized")


class NotInitializedException(Exception):
    def __init__(self, *args: object) -> None:
        Exception.__init__(self, "rclpy.init() has not been called", *args)


class ROSInterruptException(Exception):
    def __init__(self, *args: object) -> None:
        Exception.__init__(self, "rclpy.shutdown() has been called", *args)
