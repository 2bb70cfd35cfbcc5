"""A node that relays a topic without decoding it (no HPRM import), as topic_tools'
relay does: a raw subscription of chatter gets each message's CDR bytes and publishes
them, as they are, on chatter_relay, which the node also hears decoded. Prints what
each side saw, then STOP after three."""

import rclpy
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import String


class RawRelay(Node):
    def __init__(self):
        super().__init__("raw_relay")
        self.out = self.create_publisher(String, "chatter", 10)
        self.relay = self.create_publisher(String, "chatter_relay", 10)
        self.create_subscription(String, "chatter", self.on_raw, 10, raw=True)
        self.create_subscription(String, "chatter_relay", self.on_relayed, 10)
        self.count = 0
        self.create_timer(0.1, self.tick)

    def tick(self):
        self.count += 1
        if self.count <= 3:
            self.out.publish(String(data=f"hello {self.count}"))

    def on_raw(self, data):
        back = deserialize_message(data, String).data
        same = bytes(data) == serialize_message(String(data=back))
        print(f"RAW {type(data).__name__} {back} cdr-as-rclpy {same}", flush=True)
        self.relay.publish(data)

    def on_relayed(self, msg):
        print(f"RELAYED {msg.data}", flush=True)
        if msg.data == "hello 3":
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    node = RawRelay()
    try:
        rclpy.spin(node)
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
