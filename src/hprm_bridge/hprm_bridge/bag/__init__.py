"""Deterministic replay of ROS 2 bags through ported nodes (``hprm-ros bag``).

- :mod:`.source`: a rosbag2 bag (sqlite3 or MCAP, via ``rosbags``; no ROS
  needed) as a stream of messages in a documented, stable order;
- :mod:`.player`: the federate that injects them at logical tags derived
  from their timestamps and records what the nodes publish;
- :mod:`.diff`: the first difference between two recorded bags.

Why it is deterministic: every message enters the federation at a tag fixed
by its timestamp, not by when a player process got round to sending it, and
the federation processes tags in order whatever the machine's load; rosbag2
itself cannot promise this (the play rate changes what nodes see;
equal timestamps have no defined order).
"""
