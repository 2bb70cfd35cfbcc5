"""An action client driven by asyncio (the shape of ros2/examples' ``client_asyncio``; no
HPRM import): its main runs an asyncio loop in which one task spins the node
(``spin_once``, then ``asyncio.sleep``) while others await rclpy futures: two goals
side by side, then one more. Prints the results and the feedback count."""

import asyncio
import contextlib

import rclpy
from example_interfaces.action import Fibonacci
from rclpy.action import ActionClient
from rclpy.node import Node

feedback = []


async def goal(client, order):
    handle = await client.send_goal_async(
        Fibonacci.Goal(order=order), feedback_callback=lambda f: feedback.append(order)
    )
    if not handle.accepted:
        return f"order {order}: rejected"
    res = await handle.get_result_async()
    return f"order {order}: status {res.status}, {list(res.result.sequence)}"


async def spinning(node):
    while rclpy.ok():
        rclpy.spin_once(node, timeout_sec=0.01)
        await asyncio.sleep(0.001)


async def run():
    rclpy.init()
    node = Node("asyncio_client")
    client = ActionClient(node, Fibonacci, "fibonacci")
    client.wait_for_server()
    spinner = asyncio.get_running_loop().create_task(spinning(node))
    for line in await asyncio.gather(goal(client, 3), goal(client, 4)):
        print("SIDE BY SIDE", line, flush=True)
    print("THEN", await goal(client, 2), flush=True)
    print(f"FEEDBACK {sorted(feedback)}", flush=True)
    spinner.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await spinner
    print("STOP", flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    asyncio.run(run())
