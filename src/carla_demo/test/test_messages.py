"""The sim's Image messages carry the world's rendered pixels without a copy.

A copy of the 1.7 MB camera frame per message is most of what building the messages costs;
the world renders into an ``array.array`` (`world.byte_array`) that the message takes as it
is. Checked with both message classes a node can get: HPRM's (no ROS 2 needed) and rclpy's
generated ones (under a sourced ROS 2). Each runs in its own interpreter, since a process
has one ``sensor_msgs``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from hprm_bridge.bench import rclpy_missing

_CHECK = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    if sys.argv[1] == "hprm":
        from hprm_bridge import messages as hprm_messages
        hprm_messages.install()
    from carla_demo import messages
    from carla_demo.world import open_world

    def pixels_of(msg):
        return np.frombuffer(msg.data, np.uint8)

    with open_world(seed=0) as world:
        obs = world.reset()
    found = {"type": type(messages.image_msg(None, (1, 1), "mono8", 0, "x")).__module__}
    for name, pixels in [("camera", obs.camera), ("birdview", obs.birdview),
                         ("copy", obs.camera.copy()), ("part", obs.camera[:300])]:
        msg = messages.image_msg(pixels, pixels.shape, "rgb8", 0, name)
        found[name] = {
            "shared": bool(np.shares_memory(pixels_of(msg), pixels)),
            "equal": pixels_of(msg).tobytes() == pixels.tobytes(),
            "rows": msg.height,
        }
    print(json.dumps(found))
    """
)


def _check(classes: str) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", _CHECK, classes], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def _assert_adopted_only_whole_frames(found: dict) -> None:
    # the world's frames are taken as they are
    assert found["camera"] == {"shared": True, "equal": True, "rows": 600}
    assert found["birdview"] == {"shared": True, "equal": True, "rows": 15}
    # anything else is copied: a plain numpy frame, and part of a world's frame (the
    # message must not carry the rows it did not ask for)
    assert found["copy"] == {"shared": False, "equal": True, "rows": 600}
    assert found["part"] == {"shared": False, "equal": True, "rows": 300}


def test_hprm_messages_take_the_rendered_frame_without_a_copy():
    found = _check("hprm")
    assert found["type"] == "sensor_msgs.msg"
    _assert_adopted_only_whole_frames(found)


@pytest.mark.ros2
def test_rclpy_messages_take_the_rendered_frame_without_a_copy():
    missing = rclpy_missing()
    if missing is not None:
        pytest.skip(missing)
    found = _check("rclpy")
    assert found["type"].startswith("sensor_msgs.msg._image")  # rosidl's generated class
    _assert_adopted_only_whole_frames(found)


def test_values_come_in_the_order_asked_as_python_floats():
    """A JointState may name its values in any order; a name it lacks is an error naming it."""
    code = textwrap.dedent(
        """
        from hprm_bridge import messages as hprm_messages
        hprm_messages.install()
        from carla_demo import messages
        msg = messages.values_msg(("steer", "brake", "throttle"), (0.25, 1.0, 0.5), 7)
        got = messages.values(msg, messages.CONTROL_NAMES)
        print(got, [type(v).__name__ for v in got])
        try:
            messages.values(msg, ("throttle", "gear"))
        except ValueError as exc:
            print("refused:", exc)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "[0.5, 0.25, 1.0] ['float', 'float', 'float']",
        "refused: ['steer', 'brake', 'throttle'] lacks 'gear'",
    ]


_BYTES = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    if sys.argv[1] == "hprm":
        from hprm_bridge import porting
        porting.install_imports()
    from carla_demo import messages

    pixels = np.random.default_rng(0).integers(0, 256, (6, 4, 3), dtype=np.uint8)
    image = messages.image_msg(pixels, pixels.shape, "rgb8", 3_000_000_007, "camera")
    wrapped = messages.bytes_msg(image)
    got = []
    messages.image_callback("bytes", got.append)(wrapped)
    back = got[0]
    plain = print
    refused = None
    try:
        messages.image_type("pickle")
    except ValueError as exc:
        refused = str(exc)
    print(json.dumps({
        "wrapped": type(wrapped).__name__,
        "types": sorted({type(b).__name__ for b in wrapped.data}),
        "sizes": sorted({len(b) for b in wrapped.data}), "n": len(wrapped.data),
        "back": type(back).__name__, "stamp": messages.stamp_ns(back),
        "frame_id": back.header.frame_id, "shape": [back.height, back.width, back.step],
        "equal": messages.image_array(back, 3).tobytes() == pixels.tobytes(),
        "topic_is_plain": messages.image_callback("topic", plain) is plain,
        "types_by_transport": [messages.image_type(t).__name__ for t in messages.TRANSPORTS],
        "refused": refused,
    }))
    """
)


@pytest.mark.parametrize("classes", ["hprm", pytest.param("rclpy", marks=pytest.mark.ros2)])
def test_the_bytes_transport_carries_an_image_whole_in_a_byte_array(classes):
    """ros2-bytes, the paper's baseline layout: one 1-byte ``bytes`` per byte of the
    serialized Image (what rclpy's byte[] holds), unwrapped into the same Image."""
    if classes == "rclpy" and rclpy_missing() is not None:
        pytest.skip(rclpy_missing())
    r = subprocess.run([sys.executable, "-c", _BYTES, classes], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout.splitlines()[-1])
    assert found["wrapped"] == "ByteMultiArray" and found["back"] == "Image"
    assert found["types"] == ["bytes"] and found["sizes"] == [1]
    assert found["n"] > 6 * 4 * 3  # the pixels and the header, serialized
    assert found["stamp"] == 3_000_000_007 and found["frame_id"] == "camera"
    assert found["shape"] == [6, 4, 12] and found["equal"]
    assert found["topic_is_plain"]
    assert found["types_by_transport"] == ["Image", "Image", "ByteMultiArray"]
    assert found["refused"] == "transport must be one of topic, shm, bytes, not 'pickle'"
