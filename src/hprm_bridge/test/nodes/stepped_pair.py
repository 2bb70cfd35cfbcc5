"""Two plain rclpy nodes in one executor that the node file's main steps (no spin):
the main publishes on beta's publisher, which alpha hears at once; asks beta's service through
alpha's client with ``executor.spin_until_future_complete``; and waits, with
``executor.spin_once``, for beta's timer. Under rclpy and ported (one federate, the
main taking turns with both nodes) it prints the same."""

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import Int32


def main():
    rclpy.init()
    alpha, beta = rclpy.create_node("alpha"), rclpy.create_node("beta")
    heard, heard_at, ticks = [], [], []

    def on_count(msg):
        heard.append(msg.data)
        heard_at.append(alpha.get_clock().now())

    alpha.create_subscription(Int32, "count", on_count, 10)
    pub = beta.create_publisher(Int32, "count", 10)

    def add(request, response):
        response.sum = request.a + request.b
        return response

    beta.create_service(AddTwoInts, "add", add)
    client = alpha.create_client(AddTwoInts, "add")
    beta.create_timer(0.2, lambda: ticks.append(1))
    executor = SingleThreadedExecutor()
    executor.add_node(alpha)
    executor.add_node(beta)
    while pub.get_subscription_count() < 1 or not client.service_is_ready():
        executor.spin_once(timeout_sec=0.05)
    sent_at = beta.get_clock().now()
    for i in range(3):
        pub.publish(Int32(data=i))
    while len(heard) < 3:
        executor.spin_once(timeout_sec=0.5)
    print("HEARD", heard, flush=True)
    # at once, not at beta's next timer tick (200 ms on)
    print("PROMPT", all((t - sent_at).nanoseconds < 100_000_000 for t in heard_at), flush=True)
    future = client.call_async(AddTwoInts.Request(a=2, b=3))
    executor.spin_until_future_complete(future, timeout_sec=5.0)
    print("SUM", future.result().sum, flush=True)
    while len(ticks) < 2:
        executor.spin_once(timeout_sec=0.5)
    print("TICKS", len(ticks) >= 2, flush=True)
    print("STOP", flush=True)
    alpha.destroy_node()
    beta.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
