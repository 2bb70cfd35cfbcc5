"""A plain rclpy node file exercising what rclpy offers around a node: the
``--ros-args`` command line (remove_ros_args, --log-level), logger levels by
name, and message serialization. It prints what it sees; it is run both
under real rclpy and as HPRM ports it, and the two outputs must match."""

import array
import sys

import rclpy
from rclpy.logging import LoggingSeverity, get_logger
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from rclpy.utilities import remove_ros_args, timeout_sec_to_nsec
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String

ARGVS = [
    ["prog", "x", "--ros-args", "-p", "a:=1", "--", "y"],
    ["prog", "--ros-args", "-r", "a:=b", "--remap", "c"],
    ["prog", "-p", "--", "q"],
    ["prog", "--ros-args", "--log-level", "debug", "--enclave", "/e", "--", "w"],
    ["prog", "--ros-args", "--disable-rosout-logs", "--enable-stdout-logs", "-e", "/e"],
    ["prog", "a", "--ros-args", "-p", "b:=2", "--", "c", "--ros-args", "-r", "x:=y"],
    ["prog", "--ros-args", "--", "--ros-args", "-p", "b:=2", "z"],
    ["prog", "--ros-args", "--bogus", "--", "w"],
    ["prog", "--ros-args", "-p"],
    ["prog", "--ros-args", "--log-level"],
]


def show(f, *args):
    try:
        return repr(f(*args))
    except Exception as e:  # rclpy's and HPRM's classes differ in name, not in kind
        return "unknown-args" if "Unknown" in type(e).__name__ else "error"


def main():
    for argv in ARGVS:
        print("remove_ros_args", argv, "->", show(remove_ros_args, argv))
    print("timeouts", [timeout_sec_to_nsec(t) for t in (None, -1, 0, 0.5, 2)])
    for s in ("debug", "Warn", "FATAL", "unset", "warning", "loud"):
        print("severity", s, show(rclpy.logging.get_logging_severity_from_string, s))

    rclpy.init(args=sys.argv)
    node = Node("probe", namespace="/ns")
    log = node.get_logger()
    print("node logger", log.name)
    for name in ("ns.probe", "ns.probe.child", "ns.probe.child.grand", "other", "ns"):
        print("effective", name, int(get_logger(name).get_effective_level()))
    get_logger("other").set_level(LoggingSeverity.ERROR)
    print("same name, same level", int(get_logger("other").get_effective_level()))
    rclpy.logging.set_logger_level("other.sub", LoggingSeverity.DEBUG)
    print("set by name", int(rclpy.logging.get_logger_effective_level("other.sub.leaf")))
    rclpy.logging.set_logger_level("other.sub", LoggingSeverity.UNSET)
    print("unset: the parent's", int(rclpy.logging.get_logger_effective_level("other.sub")))
    print(
        "logged",
        [
            log.info("info line"),
            log.warning("warn line"),
            log.error("error line"),
            log.get_child("child").debug("child debug line"),
            log.debug("debug line"),
        ],
    )

    image = Image(height=1, width=3, encoding="rgb8", step=9, data=list(range(9)))
    image.header.frame_id = "cam"
    image.header.stamp.sec = 7
    for msg in (String(data="hi"), JointState(name=["a", "b"], position=[1.0, 2.5]), image):
        raw = serialize_message(msg)
        back = deserialize_message(raw, type(msg))
        print("cdr", type(msg).__name__, raw.hex())
        print("round trip", back == msg, type(back).__name__)
    joints = deserialize_message(serialize_message(JointState(position=[1.0])), JointState)
    joints.position.append(2.0)  # rclpy's sequences are array.array: they grow
    print("sequence", isinstance(joints.position, array.array), list(joints.position))
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
