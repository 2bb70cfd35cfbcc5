#!/usr/bin/env bash
# Runs the rclpy programs of a ros2/examples checkout (branch humble) ported, with
# hprm-ros run, and prints one line per case: PASS when the run ended 0 and printed
# what the example prints when it works, else FAIL with the run's last error line.
#   git clone -b humble https://github.com/ros2/examples && tools/ros2_examples.sh examples
# docs/ros2_examples.md has the last table and what each failure means.
set -u
ex=$(cd "${1:?usage: tools/ros2_examples.sh ROS2_EXAMPLES_CHECKOUT}" && pwd)/rclpy
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
  what=$(for f in "$@"; do basename "$f" .py; done | paste -sd+)
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
case_ 2s "Publishing" "$t/pointcloud_publisher/examples_rclpy_pointcloud_publisher/pointcloud_publisher.py"
