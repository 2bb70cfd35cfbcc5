"""hprm_bridge.backends on real ROS 2: what the gateway's backends do beyond
what test_gateway.py sees through a whole federation."""

import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

from hprm_bridge.wire.dds_config import random_domain_id

# A gateway backend (real rclpy) with two subscriptions for ported node /ported,
# fed by a plain rclpy node: /y with a compatible QoS, /x best effort against the
# backend's reliable subscription. LOOP: given an event loop (as the gateway gives
# its reactor), messages are taken in that loop's thread, else in the backend's.
_RCLPY_ARRIVALS = """
import selectors, threading, time
import rclpy
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import String
from hprm_bridge.backends.rclpy import RclpyBackend
from hprm_bridge.wire.qos import QoSProfile

class Loop:  # a small real event loop in a thread of its own, as the gateway's scheduler
    def __init__(self):
        self.sel, self.lock, self.running = selectors.DefaultSelector(), threading.Lock(), True
        self.thread = threading.Thread(target=self.run, name="the-loop")
        self.thread.start()
    def add_reader(self, f, callback):
        with self.lock:
            self.sel.register(f, selectors.EVENT_READ, callback)
    def remove_reader(self, f):
        with self.lock:
            self.sel.unregister(f)
    def run(self):
        while self.running:
            for key, _ in self.sel.select(0.01):
                with self.lock:  # not after remove_reader returned: the file may be closed
                    if key.fileobj in {k.fileobj for k in self.sel.get_map().values()}:
                        key.data()

loop = Loop() if LOOP else None
backend = RclpyBackend("gw", loop)
got, threads = [], set()
def arrived(data):
    got.append(data)
    threads.add(threading.current_thread().name)
for topic in ("/x", "/y"):
    backend.subscription("std_msgs/msg/String", topic, arrived, QoSProfile(depth=10),
                         match=False, owners=["/ported"])
rclpy.init()
plain = rclpy.create_node("plain")
best_effort = plain.create_publisher(String, "/x", qos_profile_sensor_data)
reliable = plain.create_publisher(String, "/y", 10)
spinning = True
def spin():  # the executor: the QoS-matching timer only; arrivals have their thread
    while spinning:
        backend.spin_once(0.05)
spinner = threading.Thread(target=spin)
spinner.start()
end = time.monotonic() + 4
while time.monotonic() < end:
    best_effort.publish(String(data="x"))
    reliable.publish(String(data="y"))
    rclpy.spin_once(plain, timeout_sec=0.05)
spinning = False
spinner.join()
backend.close()
if loop:
    loop.running = False
    loop.thread.join()
print("THREADS", sorted(threads), flush=True)
from hprm_bridge.raw_message import decode  # the backend hands over CDR bytes
print("GOT", len(got), sorted({decode("std_msgs/msg/String", m).data for m in got}), flush=True)
"""


@pytest.mark.ros2
@pytest.mark.parametrize("loop", [False, True], ids=["own thread", "caller's loop"])
def test_the_rclpy_backend_takes_arrivals_outside_rclpy_executor_and_warns_of_incompatible_qos(
    loop,
):
    """Messages into the federation bypass rclpy's executor: a thread of the
    backend's waits on the subscriptions alone, or, given an event loop, the
    rmw wakes that loop (an eventfd it writes per message) and the loop's own
    thread takes them. Either way they arrive, the subscriptions' QoS events
    are still handled (rclpy's own warning, under the ported node's name, as
    rclcpp words it), and close() stops what was started."""
    pytest.importorskip("rclpy", reason="needs a real ROS 2 Humble (source a Humble install)")
    env = dict(os.environ, ROS_DOMAIN_ID=str(random_domain_id()), ROS_LOCALHOST_ONLY="1")
    code = f"LOOP = {loop}\n" + textwrap.dedent(_RCLPY_ARRIVALS)
    r = subprocess.run([sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    got = [line for line in r.stdout.splitlines() if line.startswith("GOT ")]
    assert got, out
    count, topics = got[0].split(" ", 2)[1:]
    assert int(count) >= 20 and topics == "['y']", out
    assert f"THREADS {['the-loop'] if loop else ['gateway-ros2-in']}" in out, out
    assert (
        "[ported]: New publisher discovered on topic '/x', offering incompatible QoS. "
        "No messages will be received from it. Last incompatible policy: RELIABILITY"
    ) in out, out


def test_the_rmw_callback_counts_messages_into_the_eventfd_it_is_given():
    """As rmw calls it, from a thread of its own: ``callback(user_data, count)``
    with the eventfd's number as user data; the counts add up for the loop."""
    rmw_wake = pytest.importorskip(
        "hprm_bridge.backends._rmw_wake", reason="hprm_bridge built without a C compiler"
    )
    fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    try:
        callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t)(rmw_wake.callback)
        callback(fd, 3)
        callback(fd, 2)
        assert os.eventfd_read(fd) == 5
        with pytest.raises(BlockingIOError):
            os.eventfd_read(fd)  # nothing counted twice
    finally:
        os.close(fd)
