"""``rclpy.publisher.Publisher`` of a ported node: an output port of its reactor.

``publish()`` only queues the message: the node's last reaction at each tag sets
the port to the tuple of the tag's messages (a port holds one value per tag, and
two publishes in one callback would overwrite), so every message is delivered,
in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hprm_bridge.liveliness_change import GONE_ALIVE, GONE_LOST
from hprm_bridge.message_pickle import published
from hprm_bridge.rclpy.deadline import DeadlineWatch
from hprm_bridge.rclpy.exceptions import InvalidHandle, UnsupportedError
from hprm_bridge.rclpy.executors import ExternalShutdownException
from hprm_bridge.rclpy.liveliness import Lease
from hprm_bridge.rclpy.logical_sleep import main_is_over
from hprm_bridge.rclpy.qos import QoSProfile
from hprm_core import Output
from hprm_core.errors import AssemblyError

if TYPE_CHECKING:
    from hprm_bridge.rclpy.late_subscriptions import History


class Publisher:
    qos_profile: QoSProfile
    _destroyed = False
    _msg_class: type | None = None  # a node's publisher: what publish takes (none: internal)
    _deadline: DeadlineWatch | None = None  # its QoS deadline, watched (rclpy/deadline.py)
    _lease: Lease | None = None  # a manual liveliness's lease (rclpy/liveliness.py)
    _kick: Callable[[], None] | None = None  # a flush for a change made outside them
    # subscriptions of its process made after the start, (node, subscription) each, and
    # what a TRANSIENT_LOCAL one keeps for them (rclpy/late_subscriptions.py)
    _late: list[tuple[Any, Any]] | tuple[()] = ()
    _history: History | None = None
    # called after each publish where one may come from outside the node's turns: before
    # the start, a main that may never spin (main_loop.published_unspun); after it, the
    # node's physical action or a check (rclpy/outside_publishes.py)
    _outside: Callable[[], None] | None = None

    def __init__(self, topic: str, port: Output, msg_type: str) -> None:
        self.topic_name = topic
        self.msg_type = msg_type
        self._port = port
        self._queue: list[Any] = []

    def publish(self, msg: Any) -> None:
        """Queued until the callback ends, with its contents as they are now (as rclpy
        serializes it here: the message may be changed and published again). ``bytes``
        are a serialized message (CDR, as a raw subscription gets it), as rclpy takes
        them: decoded here, so every subscriber gets the message."""
        if self._destroyed:
            raise InvalidHandle(f"the publisher on {self.topic_name}")
        if main_is_over():
            raise ExternalShutdownException(
                f"publish on {self.topic_name} from the main after the federation stopped "
                "(rclpy: the publisher's context is invalid)"
            )
        cls = self._msg_class
        if cls is not None and not isinstance(msg, cls):  # one check when it is a message
            if not isinstance(msg, (bytes, bytearray, memoryview)):  # rclpy's words
                raise TypeError(f"Expected {cls!r}, got {type(msg)!r}")
            from hprm_bridge import raw_message

            msg = raw_message.decode(self.msg_type, msg)
        if self._lease is not None:  # before the message: alive again, if it was lost
            self._lease.published()
        msg = published(msg)
        self._queue.append(msg)
        if self._history is not None:
            self._history.keep(msg)
        if self._deadline is not None:
            self._deadline.seen()
        if self._outside is not None:
            self._outside()

    def destroy(self) -> None:
        """Its port stays (the federation's are fixed); ``publish`` refuses from now on.
        Its subscriptions hear it leave (:mod:`hprm_bridge.rclpy.liveliness`), at this
        tag's end, or a nanosecond later where another node's callback destroyed it."""
        self._destroyed = True
        if self._deadline is not None:
            self._deadline.stop()
        if self._kick is None:  # a node's internal publisher
            return
        alive = self._lease is None or self._lease.stop()
        self._queue.append(GONE_ALIVE if alive else GONE_LOST)
        self._kick()

    def borrow_loaned_array(self, shape: int | tuple[int, ...], dtype: Any = "uint8") -> Any:
        """A numpy array in this federate's shared-memory store, to build a large field in
        (an Image's ``data``, a PointCloud2's): published in a message, it crosses to the
        federates on this host as a reference, with no copy at all.

        HPRM's addition, named after rclcpp's ``borrow_loaned_message``: rclpy has no
        loans (ros2/rclpy#889), so a node that runs under both looks for it::

            loan = getattr(pub, "borrow_loaned_array", None)
            pixels = loan((480, 640, 3)) if loan else np.empty((480, 640, 3), np.uint8)
            render_into(pixels)
            msg.data = pixels.reshape(-1) if loan else array.array("B", pixels.tobytes())

        The array is the node's as long as it references it (no return call): its memory is
        reused only once no Python object points into it and every receiver is done with
        it. Write it before publishing; what is written after may reach some receivers. Its
        contents start undefined. Outside a running federation (in the node's constructor,
        or a program without a store) it is a plain ``numpy.empty`` array, which publishing
        copies.
        """
        reactor = self._port.container
        if reactor is not None:
            with contextlib.suppress(AssemblyError):  # not running (yet)
                return reactor.alloc_array(shape, dtype)
        import numpy as np

        return np.empty(shape, dtype)

    def get_subscription_count(self) -> int:
        """Subscriptions of the topic in the federation (:mod:`hprm_bridge.rclpy.graph`)."""
        count = getattr(self, "_subscription_count", None)
        if count is None:
            raise UnsupportedError(
                "Publisher.get_subscription_count of a node's internal publisher"
            )
        return int(count())

    def assert_liveliness(self) -> None:
        """A ``MANUAL_BY_TOPIC`` publisher's lease starts again, as a publish starts it
        (:mod:`hprm_bridge.rclpy.liveliness`); any other's liveliness needs nothing."""
        if self._destroyed:
            raise InvalidHandle(f"the publisher on {self.topic_name}")
        if self._lease is not None:
            self._lease.asserted()

    def wait_for_all_acked(self, timeout: Any = None) -> bool:
        """True: every message published reaches every subscriber of the federation, at
        its tag (nothing is lost between federates to wait for)."""
        return True
