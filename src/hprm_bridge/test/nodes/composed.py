"""Three plain rclpy nodes (no HPRM import) in one process, spun by one executor, as
ros2/examples' ``composed``: a ticker publishes /chatter, an echo hears it and asks an
adder (a sibling's service) to double the count. Parameter ``executor:=multi``: a
MultiThreadedExecutor (ros2/examples' ``callback_group``), else a single-threaded one;
``summer:=false``: no adder in the process (another process serves /add_two_ints)."""

import rclpy
from example_interfaces.srv import AddTwoInts
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String


class Ticker(Node):
    def __init__(self):
        super().__init__("ticker")
        self.pub = self.create_publisher(String, "chatter", 10)
        self.n = 0
        self.create_timer(0.1, self.tick)

    def tick(self):
        if self.n < 3:
            self.n += 1
            self.pub.publish(String(data=f"tick {self.n}"))


class Summer(Node):
    def __init__(self):
        super().__init__("summer")
        self.create_service(AddTwoInts, "add_two_ints", self.add)

    def add(self, request, response):
        response.sum = request.a + request.b
        print(f"SUM {request.a} + {request.b}", flush=True)
        return response


class Echo(Node):
    def __init__(self):
        super().__init__("echo")
        self.cli = self.create_client(AddTwoInts, "add_two_ints")
        if not self.cli.wait_for_service(timeout_sec=10.0):
            raise RuntimeError("no /add_two_ints")
        self.create_subscription(String, "chatter", self.heard, 10)
        self.answers = 0

    def heard(self, msg):
        n = int(msg.data.split()[1])
        print(f"ECHO {msg.data}", flush=True)
        self.cli.call_async(AddTwoInts.Request(a=n, b=n)).add_done_callback(self.answered)

    def answered(self, future):
        self.answers += 1
        print(f"ANSWER {future.result().sum}", flush=True)
        if self.answers == 3:
            print("STOP", flush=True)
            raise SystemExit


def main():
    rclpy.init()
    nodes = [Ticker()]
    multi = nodes[0].declare_parameter("executor", "single").value == "multi"
    if nodes[0].declare_parameter("summer", True).value:
        nodes.append(Summer())
    nodes.append(Echo())
    executor = MultiThreadedExecutor() if multi else SingleThreadedExecutor()
    for node in nodes:
        executor.add_node(node)
    try:
        executor.spin()
    except SystemExit:
        pass
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
