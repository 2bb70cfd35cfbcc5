"""What takes part in a lifecycle node's transitions (rclpy's ``ManagedEntity``):
each entity added to the node (its lifecycle publishers, for one) runs its own
``on_*`` in the node's default callbacks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hprm_bridge.rclpy.lifecycle.state_machine import TransitionCallbackReturn


class ManagedEntity:
    def on_configure(self, state: Any) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state: Any) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: Any) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: Any) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state: Any) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: Any) -> TransitionCallbackReturn:
        return TransitionCallbackReturn.SUCCESS


class SimpleManagedEntity(ManagedEntity):
    """Enabled while its node is active."""

    def __init__(self) -> None:
        self._enabled = False

    def on_activate(self, state: Any) -> TransitionCallbackReturn:
        self._enabled = True
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state: Any) -> TransitionCallbackReturn:
        self._enabled = False
        return TransitionCallbackReturn.SUCCESS

    @property
    def is_activated(self) -> bool:
        return self._enabled

    @staticmethod
    def when_enabled(
        wrapped: Callable[..., Any] | None = None,
        *,
        when_not_enabled: Callable[[], Any] | None = None,
    ) -> Any:
        """The method does nothing (but call ``when_not_enabled``) while not enabled."""

        def decorator(method: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(method)
            def only_when_enabled(self: SimpleManagedEntity, *args: Any, **kwargs: Any) -> Any:
                if not self._enabled:
                    if when_not_enabled is not None:
                        when_not_enabled()
                    return None
                return method(self, *args, **kwargs)

            return only_when_enabled

        return decorator if wrapped is None else decorator(wrapped)
