"""``ros2 launch`` of ported nodes: one HPRM federation from a launch file.

Porting a node in a launch file is a one-word change inside a
:class:`Federation`: ``launch_ros.actions.Node`` becomes :class:`PortedNode`,
with the same arguments (``package``, ``executable``, ``name``,
``namespace``, ``parameters``, ``remappings``, ``arguments``, ``output``...).
The federation starts an RTI, then one federate process per ported node
(``python -m hprm_bridge.porting`` around the node's own executable, so its
parameters and remappings reach it as ``--ros-args``, exactly as
``launch_ros`` builds them). Plain ``launch_ros.actions.Node`` entries in the
same file keep running as plain ROS 2 nodes::

    from launch import LaunchDescription
    from launch_ros.actions import Node
    from hprm_bridge.launch import Federation, PortedNode

    def generate_launch_description():
        return LaunchDescription([
            Federation([
                PortedNode(package="hprm_bridge", executable="camera", name="camera",
                           parameters=[{"width": 320}]),
                PortedNode(package="hprm_bridge", executable="detector"),
            ], coordination="decentralized", stp_offset="20 ms"),
            Node(package="demo_nodes_py", executable="listener"),
        ])

In XML (the ``launch.frontend.launch_extension`` entry point registers the
tags)::

    <launch>
      <hprm_federation coordination="centralized" timeout="5 s">
        <hprm_node pkg="hprm_bridge" exec="camera" name="camera">
          <param name="width" value="320"/>
        </hprm_node>
      </hprm_federation>
    </launch>

Shutdown is what ROS users expect: Ctrl-C (SIGINT to every process) stops
the federation at one tag, every node's shutdown runs, and the RTI waits for
that (``--signal-grace``) instead of vanishing under it. A federate that
fails (non-zero exit, or killed) ends the launch with a message naming it.
The private socket directory goes with the RTI, however the launch ends,
and with it the ported nodes' parameter files (launch_ros leaves a plain
node's dict parameters in /tmp).

Importable only where ROS 2's ``launch`` and ``launch_ros`` are.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import launch
import launch_ros.actions
import yaml
from launch.actions import ExecuteProcess, GroupAction, SetLaunchConfiguration
from launch.event_handlers import OnProcessExit
from launch.frontend import Entity, Parser, expose_action
from launch.substitutions import LaunchConfiguration

try:
    from hprm_bridge.bridge_config import BridgeConfig
    from hprm_bridge.porting import GATEWAY_NAME, check_federation, late_spec, rti_options
    from hprm_bridge.rclpy.node import NODE_SERVICES
    from hprm_core.launcher import rti_command
except ModuleNotFoundError as exc:
    # ros2 launch runs in the Python its script names (/usr/bin/python3), which need not be
    # the one HPRM's PyPI dependencies went into; the federates it starts run in it too.
    raise ModuleNotFoundError(
        f"HPRM needs {exc.name!r}, which the Python running this launch ({sys.executable}) "
        "cannot import: pip install -r requirements.txt into that Python, or start the "
        "launch with the Python that has them, e.g. .venv/bin/python $(command -v ros2) "
        "launch ... (README, 'ROS 2')",
        name=exc.name,
    ) from exc

__all__ = ["Federation", "PortedNode"]

_KEY = "hprm_federation."  # the launch configurations a federation sets for its nodes
SIGNAL_GRACE = "10 s"  # how long the RTI outlives Ctrl-C while the federation stops


def _config(name: str) -> LaunchConfiguration:
    return LaunchConfiguration(_KEY + name, default="")


class _FederateCommand(ExecuteProcess):
    """Sits between launch_ros' Node and ExecuteProcess in PortedNode's MRO:
    takes the command Node built (executable, arguments, ``--ros-args`` and
    what Node appends to it later) and puts the federate wrapper in front."""

    def __init__(self, *, cmd: list[Any], **kwargs: Any) -> None:
        federate: Any = self._federate_name
        wrapper = [sys.executable, "-m", "hprm_bridge.porting", cmd[0], federate,
                   "--rti", _config("rti"), "--federation", _config("id"),
                   "--listen-dir", _config("dir"), "--timeout", _config("timeout"),
                   "--stp-offset", self._stp_offset or _config("stp_offset"),
                   *(["--busy-poll", self._busy_poll] if self._busy_poll else []),
                   *(a for spec in self._late for a in ("--late", spec)),
                   *(a for spec in self._late_publishers for a in ("--late-publisher", spec)),
                   "--"]  # fmt: skip
        env = dict(kwargs.pop("additional_env", None) or {})
        env["HPRM_SECRET"] = _config("secret")
        env[NODE_SERVICES] = _config("node_services")
        env.setdefault("PYTHONUNBUFFERED", "1")
        super().__init__(cmd=wrapper + list(cmd[1:]), additional_env=env, **kwargs)


@expose_action("hprm_node")
class PortedNode(launch_ros.actions.Node, _FederateCommand):
    """A ``launch_ros.actions.Node`` that runs as a federate of the enclosing
    :class:`Federation` (same arguments). Its federate name is ``name``, or
    the executable's. Outside a Federation it refuses to start.

    ``stp_offset`` (decentralized) overrides the federation's for this node
    only: a node that waits for several inputs of one tag may need a longer
    one than a node with one input, which should not wait at all.
    ``busy_poll`` (e.g. ``"2 ms"`` or ``"forever"``) has the node's federate
    spin that long before it sleeps: a message then needs no kernel wake-up,
    at the price of a CPU while it spins (for a latency-critical node on a
    machine with cores to spare).
    ``late_subscriptions`` (``["/chatter:std_msgs/msg/String"]``) gives the federate a
    port for each topic from the start, for a subscription the node makes later on a
    topic other federates publish (``hprm-ros run --late``; without it such a
    subscription is refused, a federate's ports being fixed at the start);
    ``late_publishers`` the same for a publisher the node makes later on a topic it
    had none of (``--late-publisher``)."""

    def __init__(
        self,
        *,
        executable: Any,
        name: Any = None,
        stp_offset: str | None = None,
        busy_poll: str | None = None,
        late_subscriptions: list[str] | None = None,
        late_publishers: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("respawn") not in (None, False, "false", "False"):
            raise ValueError(
                "PortedNode: respawn is not offered: a federate cannot rejoin a running "
                "federation in either coordination (the others have moved on in logical "
                "time); a federate that dies ends the launch, naming it"
            )
        federate = _plain_text(name) if name is not None else _plain_text(executable)
        if name is None and isinstance(federate, str):
            federate = Path(federate).stem
        if isinstance(federate, str):
            try:
                check_federation([federate], durations={"stp_offset": stp_offset,
                                                        "busy_poll": busy_poll})  # fmt: skip
            except ValueError as exc:
                raise ValueError(f"PortedNode: {exc}") from None
            kwargs.setdefault("exec_name", federate)  # the launch log's label
        try:
            self._late = [late_spec(spec) for spec in late_subscriptions or ()]
        except ValueError as exc:
            raise ValueError(f"PortedNode: late_subscriptions: {exc}") from None
        try:
            self._late_publishers = [late_spec(spec) for spec in late_publishers or ()]
        except ValueError as exc:
            raise ValueError(f"PortedNode: late_publishers: {exc}") from None
        self._stp_offset = stp_offset
        self._busy_poll = busy_poll
        self._federate_name = federate
        self._name_from_executable = name is None
        super().__init__(executable=executable, name=name, **kwargs)

    def federate_name(self, context: launch.LaunchContext) -> str:
        from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions

        if isinstance(self._federate_name, str):
            return self._federate_name
        text = perform_substitutions(
            context, normalize_to_list_of_substitutions(self._federate_name)
        )
        return Path(text).stem if self._name_from_executable else text

    def execute(self, context: launch.LaunchContext) -> Any:
        if not context.launch_configurations.get(_KEY + "id"):
            raise RuntimeError(
                f"PortedNode {self.federate_name(context)!r} must be inside a "
                "hprm_bridge.launch.Federation (its RTI, its federation)"
            )
        self._params_dir = context.launch_configurations[_KEY + "dir"]
        return super().execute(context)

    def _create_params_file_from_dict(self, params: dict[str, Any]) -> str:
        """launch_ros writes a node's dict parameters to a file in /tmp that it
        never deletes (ros2/launch_ros#5: one per node and launch); a ported
        node's goes into its federation's private directory, which goes with
        the RTI however the launch ends."""
        fd, path = tempfile.mkstemp(prefix="launch_params_", suffix=".yaml", dir=self._params_dir)
        key = self.node_name if self.is_node_name_fully_specified() else "/**"
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump({key: {"ros__parameters": params}}, f, default_flow_style=False)
        return path


@expose_action("hprm_federation")
class Federation(launch.Action):
    """An RTI and its :class:`PortedNode` federates, as one launch action.

    ``coordination``: ``centralized`` (default) or ``decentralized``;
    ``stp_offset`` (decentralized) and ``timeout`` as durations (``"20 ms"``,
    ``"5 s"``); ``after``: ``{topic: duration}`` logical delays; ``output``:
    where the RTI's log goes (``screen`` by default, as the nodes'). Nodes
    publishing to each other get a one-microstep delay on the connections
    that close a loop (as ``hprm-ros run``). ``bridge=True`` adds the gateway
    federate (:mod:`hprm_bridge.gateway`): every topic the ported nodes leave
    open is carried to and from the plain ROS 2 nodes of the launch; a
    :class:`~hprm_bridge.bridge_config.BridgeConfig` or the path of its YAML
    file instead of True says which topics cross and how.
    ``bag_play`` (a rosbag2 bag) replays it into the nodes deterministically,
    ``bag_stamp`` naming the topics whose logical time is their header.stamp;
    ``bag_record`` (a new bag) records what the nodes publish and none of them
    subscribes to (:mod:`hprm_bridge.bag`; the launch ends when the bag does)."""

    def __init__(
        self,
        nodes: list[PortedNode],
        *,
        coordination: str = "centralized",
        stp_offset: str | None = None,
        timeout: str | None = None,
        after: dict[str, str] | None = None,
        bridge: bool | str | BridgeConfig = False,
        bag_play: str | None = None,
        bag_record: str | None = None,
        bag_stamp: list[str] | tuple[str, ...] = (),
        node_services: bool = False,
        output: str = "screen",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        for n in nodes:
            if not isinstance(n, PortedNode):
                raise TypeError(
                    f"Federation takes PortedNode actions, got {type(n).__name__} (a plain "
                    "launch_ros Node runs beside the federation, outside this list)"
                )
        durations = {"stp_offset": stp_offset, "timeout": timeout,
                     **{f"after[{t}]": d for t, d in (after or {}).items()}}  # fmt: skip
        named = [n._federate_name for n in nodes if isinstance(n._federate_name, str)]
        try:  # names given as substitutions are checked once known (execute)
            check_federation(named or ["_"], coordination=coordination, durations=durations)
        except ValueError as exc:
            raise ValueError(f"Federation: {exc}") from None
        if not nodes:
            raise ValueError("Federation: give at least one PortedNode")
        self.nodes = list(nodes)
        self.coordination = coordination
        self.stp_offset = stp_offset
        self.timeout = timeout
        self.after = dict(after or {})
        if isinstance(bridge, str | os.PathLike):
            bridge = BridgeConfig.load(bridge)  # refused here, naming the file and key
        self.bridge = bridge if isinstance(bridge, BridgeConfig) else bool(bridge)
        self.bag_play, self.bag_record, self.bag_stamp = bag_play, bag_record, list(bag_stamp)
        if node_services and not self.bridge:
            raise ValueError("Federation: node_services reach ROS 2 through the gateway: add "
                             "bridge=True")  # fmt: skip
        self.node_services = bool(node_services)
        self.output = output

    @classmethod
    def parse(cls, entity: Entity, parser: Parser) -> tuple[type, dict[str, Any]]:
        _, kwargs = super().parse(entity, parser)
        for attr in ("coordination", "stp_offset", "timeout", "output"):
            value = entity.get_attr(attr, optional=True)
            if value is not None:
                kwargs[attr] = value
        for flag in ("bridge", "node_services"):
            value = entity.get_attr(flag, data_type=bool, optional=True)
            if value is not None:
                kwargs[flag] = value
        kwargs["nodes"] = [parser.parse_action(child) for child in entity.children]
        return cls, kwargs

    def _boundary(self) -> dict[str, list[str]]:
        """The federates beside the nodes, by name: the gateway (``bridge``), the bag
        player and recorder (``bag_play``, ``bag_record``), without the RTI's address."""
        from hprm_bridge.bag.cli import boundary_federates

        extra = {}
        if self.bridge:
            extra[GATEWAY_NAME] = [sys.executable, "-m", "hprm_bridge.gateway", GATEWAY_NAME,
                              "--timeout", self.timeout or "",
                              "--stp-offset", self.stp_offset or ""]  # fmt: skip
            if isinstance(self.bridge, BridgeConfig):  # to the gateway as a YAML string
                extra[GATEWAY_NAME] += ["--config-yaml", yaml.safe_dump(self.bridge.to_dict())]
        if self.bag_play or self.bag_record:
            extra.update(boundary_federates(self.bag_play, self.bag_record, stamp=self.bag_stamp,
                                            stp_offset=self.stp_offset))  # fmt: skip
        return extra

    def rti_command(self, names: list[str], rti_dir: str, federation: str) -> list[str]:
        """The RTI's command line (the federates' are the nodes' own, wrapped)."""
        opts = [*rti_options(self.coordination, self.after), "--signal-grace", SIGNAL_GRACE]
        return rti_command(rti_dir, [",".join(names), *opts], federation)

    def execute(self, context: launch.LaunchContext) -> list[launch.Action]:
        names = [n.federate_name(context) for n in self.nodes]
        try:
            boundary = self._boundary()
        except ValueError as exc:
            raise RuntimeError(f"Federation: {exc}") from None
        names += list(boundary)
        try:
            check_federation(names, coordination=self.coordination)
        except ValueError as exc:
            raise RuntimeError(f"Federation: {exc}") from None
        rti_dir = tempfile.mkdtemp(prefix="hprm-launch-")
        os.chmod(rti_dir, 0o700)
        try:  # the directory goes with the RTI; until it runs, with us
            federation, secret = uuid.uuid4().hex, secrets.token_hex(32)
            rti = ExecuteProcess(
                cmd=self.rti_command(names, rti_dir, federation),
                name="hprm_rti",
                output=self.output,
                additional_env={"HPRM_SECRET": secret, "PYTHONUNBUFFERED": "1"},
                sigterm_timeout="15",  # it ends on its own once the federates have stopped
            )
            settings = {"rti": f"unix:{rti_dir}/rti.sock", "id": federation, "dir": rti_dir,
                        "secret": secret, "timeout": self.timeout or "",
                        "stp_offset": self.stp_offset or "",
                        "node_services": "1" if self.node_services else ""}  # fmt: skip
            federates: list[launch.Action] = list(self.nodes)
            watched = [(rti, "the HPRM RTI")]
            watched += [(n, f"HPRM federate {n.federate_name(context)}") for n in self.nodes]
            for name, cmd in boundary.items():  # the gateway, the bag player and recorder
                process = ExecuteProcess(
                    cmd=[*cmd, "--rti", settings["rti"], "--federation", federation,
                         "--listen-dir", rti_dir],
                    name=name, output=self.output,
                    additional_env={"HPRM_SECRET": secret, "PYTHONUNBUFFERED": "1"},
                )  # fmt: skip
                federates.append(process)
                watched.append((process, f"the HPRM {name} federate"))
            watch = [
                launch.actions.RegisterEventHandler(
                    OnProcessExit(target_action=action, on_exit=_on_exit(label))
                )
                for action, label in watched
            ]
            # The RTI removes the directory however it ends, but for a SIGKILL (the OOM
            # killer, a launch's last escalation): then the launch does, once it has exited
            watch.append(launch.actions.RegisterEventHandler(OnProcessExit(
                target_action=rti,
                on_exit=lambda _event, _context: shutil.rmtree(rti_dir, ignore_errors=True),
            )))  # fmt: skip
            group = [SetLaunchConfiguration(_KEY + k, v) for k, v in settings.items()]
            return [GroupAction([*group, *watch, rti, *federates], scoped=True, forwarding=True)]
        except BaseException:
            shutil.rmtree(rti_dir, ignore_errors=True)
            raise


def _plain_text(value: Any) -> Any:
    """A str, or a list of only text substitutions (as launch files parse
    ``name="talker"``), as a str; anything else as it is (known at execute)."""
    from launch.substitutions import TextSubstitution

    if isinstance(value, (list, tuple)) and all(isinstance(v, TextSubstitution) for v in value):
        return "".join(v.text for v in value)
    return value


def _on_exit(label: str) -> Any:
    """A federate (or the RTI) that fails ends the launch, naming it; one that
    stopped with the federation (exit 0, or the launch's own SIGINT) does not."""

    def handler(event: Any, context: launch.LaunchContext) -> Any:
        code = event.returncode
        if code == 0 or (code in (-signal.SIGINT, -signal.SIGTERM) and _shutting_down(context)):
            return None
        why = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"
        reason = f"{label} {why}"
        return [
            launch.actions.LogInfo(msg=f"[ERROR] {reason}: stopping the launch"),
            launch.actions.EmitEvent(event=launch.events.Shutdown(reason=reason)),
        ]

    return handler


def _shutting_down(context: launch.LaunchContext) -> bool:
    return bool(getattr(context, "is_shutdown", False))
