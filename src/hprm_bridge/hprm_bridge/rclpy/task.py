"""``rclpy.task.Future``: what ``Client.call_async`` returns.

In an HPRM federate a future completes inside the node's own callbacks, at
the tag its reply arrives, never on another thread: so its done-callbacks
run at once, in the order they were added, like any other callback of the
node (rclpy hands them to the executor, which runs them soon after).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import greenlet


class Future:
    """As rclpy's: ``done()``, ``result()``, ``add_done_callback``; ``cancel()``
    drops the call's reply when it comes."""

    def __init__(self) -> None:
        self._done = False
        self._cancelled = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []

    def done(self) -> bool:
        return self._done

    def __await__(self) -> Any:
        """``await future`` in a coroutine callback: its result once done. To the task
        running the coroutine it yields itself, so that the task knows what it waits for
        (:func:`hprm_bridge.rclpy.logical_sleep.drive`); to anything else it yields None,
        as rclpy's does: an asyncio task takes that as "poll me again" (ros2/examples'
        ``client_asyncio`` awaits rclpy futures in asyncio tasks, spinning between)."""
        while not self._done:
            yield self if getattr(greenlet.getcurrent(), "hprm_driving", 0) else None
        return self.result()

    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        if not self._done:
            self._cancelled = True
            self._complete()

    def result(self) -> Any:
        """The response (None while not done); raises what ``set_exception`` set."""
        if self._exception is not None:
            raise self._exception
        return self._result

    def exception(self) -> BaseException | None:
        return self._exception

    def set_result(self, result: Any) -> None:
        self._result = result
        self._complete()

    def set_exception(self, exception: BaseException) -> None:
        self._exception = exception
        self._complete()

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def _complete(self) -> None:
        self._done = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)


class Task(Future):
    """rclpy's: a function or coroutine an executor runs, the future of its result
    (``Executor.create_task`` makes one). Calling one runs it to its end, as rclpy's
    executor would (its coroutine may await only futures already done, or it runs
    where a task may wait: :func:`hprm_bridge.rclpy.logical_sleep.drive`)."""

    def __init__(
        self, handler: Callable[..., Any], args: Any = None, kwargs: Any = None,
        executor: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self._handler = handler
        self._args = list(args or ())
        self._kwargs = dict(kwargs or {})
        self._executing = False

    def __call__(self) -> None:
        from hprm_bridge.rclpy.logical_sleep import drive

        if self._done or self._executing:
            return
        self._executing = True
        try:
            handler = self._handler  # a coroutine, or what makes its result
            done = handler if inspect.iscoroutine(handler) else handler(*self._args, **self._kwargs)
            self.set_result(drive(done))
        except Exception as exc:
            self.set_exception(exc)
        finally:
            self._executing = False

    def executing(self) -> bool:
        return self._executing
