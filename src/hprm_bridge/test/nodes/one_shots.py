"""One-shot timers made in callbacks (no HPRM import): a 0.1 s timer, six times, makes a
0.05 s timer that prints, cancels itself and is dropped when the next replaces it. Then
STOP."""

import rclpy
from rclpy.node import Node


class OneShots(Node):
    def __init__(self):
        super().__init__("one_shots")
        self.n = 0
        self.shot = None
        self.ticker = self.create_timer(0.1, self.tick)

    def tick(self):
        self.n += 1
        self.shot = self.create_timer(0.05, lambda n=self.n: self.once(n))
        if self.n == 6:
            self.ticker.cancel()

    def once(self, n):
        self.shot.cancel()
        print(f"ONCE {n}", flush=True)
        if n == 6:
            print("STOP", flush=True)
            rclpy.shutdown()


def main():
    rclpy.init()
    try:
        rclpy.spin(OneShots())
    except Exception:  # rclpy's spin may raise once shut down from a callback
        return


if __name__ == "__main__":
    main()
