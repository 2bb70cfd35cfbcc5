"""Evaluates rclpy.time / clock / duration / qos / task / names / context expressions
(argv[1]: a JSON list) and prints each result, or the exception's type, as JSON. Run
under real rclpy and under HPRM's: the outputs must be equal."""

import json
import sys

import rclpy
import rclpy.clock as clock
import rclpy.duration as duration
import rclpy.exceptions as exceptions
import rclpy.node
import rclpy.qos as qos
import rclpy.signals as signals
import rclpy.task as task
import rclpy.time as rtime
import rclpy.timer as timer
import rclpy.utilities as utilities
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.expand_topic_name import expand_topic_name
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from rclpy.time import Time
from rclpy.validate_full_topic_name import validate_full_topic_name
from rclpy.validate_namespace import validate_namespace
from rclpy.validate_node_name import validate_node_name
from rclpy.validate_topic_name import validate_topic_name

names = dict(Time=Time, Duration=Duration, QoSProfile=QoSProfile, HistoryPolicy=HistoryPolicy,
             ReliabilityPolicy=ReliabilityPolicy, DurabilityPolicy=DurabilityPolicy,
             qos_profile_sensor_data=qos_profile_sensor_data, qos=qos,
             duration=duration, Clock=Clock, ClockType=ClockType, exceptions=exceptions,
             rclpy=rclpy, signals=signals, utilities=utilities,
             expand_topic_name=expand_topic_name, validate_topic_name=validate_topic_name,
             validate_full_topic_name=validate_full_topic_name,
             validate_namespace=validate_namespace,
             validate_node_name=validate_node_name, clock=clock, task=task, rtime=rtime,
             timer=timer)  # fmt: skip
out = []
for expr in json.loads(sys.argv[1]):
    try:
        value = eval(expr, names)
        out.append(value if isinstance(value, (int, float, bool, str)) else repr(value))
    except Exception as exc:  # the kind of failure is what is compared
        out.append(f"raises {type(exc).__name__}")
print(json.dumps(out))
