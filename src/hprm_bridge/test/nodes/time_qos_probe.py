"""Evaluates rclpy.time / rclpy.duration / rclpy.qos expressions (argv[1]:
a JSON list) and prints each result, or the exception's type, as JSON. Run
under real rclpy and under HPRM's: the outputs must be equal."""

import json
import sys

import rclpy.duration as duration
import rclpy.qos as qos
from rclpy.duration import Duration
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from rclpy.time import Time

names = dict(Time=Time, Duration=Duration, QoSProfile=QoSProfile, HistoryPolicy=HistoryPolicy,
             ReliabilityPolicy=ReliabilityPolicy, DurabilityPolicy=DurabilityPolicy,
             qos_profile_sensor_data=qos_profile_sensor_data, qos=qos,
             duration=duration)  # fmt: skip
out = []
for expr in json.loads(sys.argv[1]):
    try:
        value = eval(expr, names)
        out.append(value if isinstance(value, (int, float, bool, str)) else repr(value))
    except Exception as exc:  # the kind of failure is what is compared
        out.append(f"raises {type(exc).__name__}")
print(json.dumps(out))
