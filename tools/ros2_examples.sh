#!/usr/bin/env bash
# Runs the rclpy programs of a ros2/examples checkout (branch humble) ported, with
# hprm-ros run, and prints one line per case: PASS when the run ended 0 and printed
# what the example prints when it works, else FAIL with the run's last error line.
# Given a ros2/demos checkout (branch humble) too, its Python demos as well.
#   git clone -b humble https://github.com/ros2/examples
#   git clone -b humble https://github.com/ros2/demos
#   tools/ros2_examples.sh examples [demos]
# docs/ros2_examples.md has the last table and what each failure means.
set -u
ex=$(cd "${1:?usage: tools/ros2_examples.sh ROS2_EXAMPLES_CHECKOUT [ROS2_DEMOS_CHECKOUT]}" && pwd)/rclpy
demos=${2:+$(cd "$2" && pwd)}
here=$(cd "$(dirname "$0")/.." && pwd)
hprm_ros="${HPRM_ROS:-$here/.venv/bin/hprm-ros}"
export PYTHONPATH="$ex/executors${PYTHONPATH:+:$PYTHONPATH}"  # composed.py imports its package
t=$ex/topics; s=$ex/services; a=$ex/actions; x=$ex/executors/examples_rclpy_executors
pub=$t/minimal_publisher/examples_rclpy_minimal_publisher
sub=$t/minimal_subscriber/examples_rclpy_minimal_subscriber
srv=$s/minimal_service/examples_rclpy_minimal_service
cli=$s/minimal_client/examples_rclpy_minimal_client
asrv=$a/minimal_action_server/examples_rclpy_minimal_action_server
acli=$a/minimal_action_client/examples_rclpy_minimal_action_client

case_() {  # timeout, expected output, node files...
  local timeout=$1 expect=$2 out rc
  shift 2
  out=$(timeout 120 "$hprm_ros" run "$@" --timeout "$timeout" 2>&1)
  rc=$?
  local what
  what=$(for f in "$@"; do case $f in *.py) basename "$f" .py ;; esac; done | paste -sd+)
  if [ $rc -eq 0 ] && grep -q -- "$expect" <<<"$out"; then
    echo "PASS $what"
  else
    echo "FAIL $what (rc $rc): $(grep -E 'Error|error' <<<"$out" | tail -1 | cut -c1-200)"
  fi
}

case_ 2s 'I heard: "Hello World: 3"' "$pub/publisher_member_function.py" "$sub/subscriber_member_function.py"
case_ 2s 'I heard: "Hello World: 3"' "$pub/publisher_local_function.py" "$sub/subscriber_lambda.py"
case_ 2s 'I heard: "Hello World: 3"' "$pub/publisher_old_school.py" "$sub/subscriber_old_school.py"
for c in client client_async client_async_callback client_async_member_function; do
  case_ 3s "Result of add_two_ints: for 41 + 1 = 42" "$srv/service.py" "$cli/$c.py"
done
case_ 3s "Result of add_two_ints: for 41 + 1 = 42" "$srv/service_member_function.py" "$cli/client_async_member_function.py"
for server in server server_not_composable server_defer server_queue_goals server_single_goal; do
  case_ 20s "Goal succeeded" "$asrv/$server.py" "$acli/client.py"
done
case_ 20s "Goal succeeded" "$asrv/server.py" "$acli/client_not_composable.py"
case_ 20s "Goal successfully canceled" "$asrv/server.py" "$acli/client_cancel.py"
case_ 60s "B) result" "$asrv/server.py" "$acli/client_asyncio.py"
case_ 2s 'I heard: "Hello World: 1"' "$x/talker.py" "$x/listener.py"
case_ 3s "Publishing" "$x/custom_callback_group.py"
case_ 2s "I heard" "$x/composed.py"
case_ 2s "I heard" "$x/callback_group.py"
case_ 2s "I heard" "$x/custom_executor.py"
case_ 5s "guard callback called shutdown" "$ex/guard_conditions/examples_rclpy_guard_conditions/trigger_guard_condition.py"
# the publisher prints nothing: this repository's test listener reads its clouds
case_ 2s "CLOUD map 10000 points" "$t/pointcloud_publisher/examples_rclpy_pointcloud_publisher/pointcloud_publisher.py" \
  "$here/src/hprm_bridge/test/nodes/cloud_listener.py" --remap cloud_listener:points:=test_cloud

[ -n "$demos" ] || exit 0
d=$demos/demo_nodes_py/demo_nodes_py; q=$demos/quality_of_service_demo/rclpy
act=$demos/action_tutorials/action_tutorials_py/action_tutorials_py
mon=$demos/topic_monitor/topic_monitor/scripts
export PYTHONPATH="$q:$PYTHONPATH"  # the QoS demos import their package's common_nodes
case_ 3s 'I heard: \[Hello World: 2\]' "$d/topics/talker.py" "$d/topics/listener.py"
case_ 3s "I heard: \"b'" "$d/topics/talker.py" "$d/topics/listener_serialized.py"
case_ 3s 'I heard: \[Hello World: 2\]' "$d/topics/talker_qos.py" "$d/topics/listener_qos.py"
for c in add_two_ints_client add_two_ints_client_async; do
  case_ 3s "Result of add_two_ints: 5" "$d/services/add_two_ints_server.py" "$d/services/$c.py"
done
HPRM_MSG_PATH="$demos/action_tutorials" case_ 30s "Result: array" \
  "$act/fibonacci_action_server.py" "$act/fibonacci_action_client.py"
case_ 3s "Lifecycle publisher is active" "$demos/lifecycle_py/lifecycle_py/talker.py"
qd=$q/quality_of_service_demo_py
case_ 3s "I heard" "$qd/qos_overrides_talker.py" "$qd/qos_overrides_listener.py"
case_ 6s "QoSRequestedDeadlineMissedInfo" "$qd/deadline.py" \
  --arguments "deadline=350 --publish-for 3000 --pause-for 3000"
case_ 8s "QoSRequestedIncompatibleQoSInfo" "$qd/incompatible_qos.py" \
  --arguments "incompatible_qos=durability"
case_ 6s "I heard" "$qd/lifespan.py" --arguments "lifespan=1000 --publish-count 10 --subscribe-after 3000"
case_ 6s "QoSLivelinessChangedInfo" "$qd/liveliness.py" --arguments "liveliness=1000 --kill-publisher-after 2000"
# the monitor subscribes to topics, and publishes their reception rates, as it discovers
# them: their ports are declared (a federate's are fixed at the start); it spins its node
# on a thread of its own
case_ 5s "/topic1_data: Alive" "$mon/data_publisher.py" "$mon/topic_monitor.py" \
  --late topic_monitor=/topic1_data:std_msgs/msg/Header \
  --late-publisher topic_monitor=/reception_rate/topic1_data_:std_msgs/msg/Float32
