"""Robot logs: joint states and odometry from ROS 1 bags, ROS 2 bags and standalone MCAP files,
read and written without ROS installed.

Sources: a ROS 1 `.bag` file and a ROS 2 bag folder (sqlite3 or mcap storage, with its
metadata.yaml) through rosbags' AnyReader; a standalone `.mcap` file (ROS 2 profile, ros2msg
schemas, CDR messages) through the `mcap` library, decoded with rosbags' type system from the
schemas the file embeds. Only sensor_msgs/msg/JointState and nav_msgs/msg/Odometry topics are
read; every other topic is ignored.

Time stamps (s): a topic's messages are timed by their header stamp; a topic whose messages all
have a zero stamp (unstamped publishers) is timed by the log's receive time instead, and
`stamps` says which ("header" or "receive"). Zero stamps are accepted only before the first
nonzero one (a simulated clock starting at 0). Series are sorted by time. Times are float64
seconds: exact to the nanosecond for clocks below ~10^6 s (simulated time), to ~0.25 us for
wall-clock epoch stamps.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mcap.reader import make_reader
from mcap.writer import Writer as McapWriter
from rosbags.highlevel import AnyReader
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Ros2Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from robocal.errors import InputError

JOINT_STATE = "sensor_msgs/msg/JointState"
ODOMETRY = "nav_msgs/msg/Odometry"
FORMATS = ("ros1", "ros2", "ros2-sqlite3", "mcap")
SUPPORTED = "ROS 1 .bag file, ROS 2 bag folder (with metadata.yaml), ROS 2 .mcap file"
ROS1_MAGIC = b"#ROSBAG V2.0\n"
MCAP_MAGIC = b"\x89MCAP0\r\n"
NS = 1_000_000_000


@dataclass
class JointStates:
    """A sensor_msgs/JointState topic: positions (n, joints) in rad (m for prismatic joints), NaN
    where a message lacks a joint; velocities likewise, None when no message carries any."""

    times: np.ndarray
    names: list[str]
    positions: np.ndarray
    velocities: np.ndarray | None
    stamps: str = "header"


@dataclass
class Odometry:
    """A nav_msgs/Odometry topic reduced to the plane: poses (n, 3) x, y (m), yaw (rad, from the
    quaternion) and twists (n, 3) vx, vy (m/s), wz (rad/s) as published (child frame)."""

    times: np.ndarray
    poses: np.ndarray
    twists: np.ndarray
    stamps: str = "header"


@dataclass
class RobotLog:
    """The joint-state and odometry topics of one log, by topic name."""

    source: Path
    joint_states: dict[str, JointStates]
    odometry: dict[str, Odometry]

    def wheel_angles(self, left: str, right: str, topic: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(times (n,), angles (n, 2) rad) of two wheel joints, from the messages that carry both,
        on the one joint-state topic that has both (or on `topic`)."""
        if topic is not None and topic not in self.joint_states:
            listed = ", ".join(self.joint_states) or "none"
            raise InputError(self.source, f"no joint-state topic '{topic}' (joint-state topics: {listed})")
        topics = [topic] if topic is not None else [t for t, js in self.joint_states.items() if {left, right} <= set(js.names)]
        if len(topics) > 1:
            raise InputError(self.source, f"joints '{left}' and '{right}' are on several topics ({', '.join(topics)}): pass the topic")
        if not topics or not {left, right} <= set(self.joint_states[topics[0]].names):
            have = "; ".join(f"{t}: {', '.join(js.names)}" for t, js in self.joint_states.items() if topic in (None, t))
            raise InputError(self.source, f"no joint-state topic has both wheel joints '{left}' and '{right}' ({have or 'no joint-state topics'})")
        states = self.joint_states[topics[0]]
        angles = states.positions[:, [states.names.index(left), states.names.index(right)]]
        both = ~np.isnan(angles).any(axis=1)
        return states.times[both], angles[both]


def read_robot_log(path: str | Path) -> RobotLog:
    """Joint states and odometry of a ROS 1 bag, a ROS 2 bag folder or a standalone MCAP file; a
    corrupt or truncated log is an InputError naming it."""
    path = Path(path)
    messages: dict[str, tuple[str, list]] = {}
    for topic, msgtype, log_ns, message in _decoded(path):
        messages.setdefault(topic, (msgtype, []))[1].append((log_ns, message))
    joint_states, odometry = {}, {}
    for topic, (msgtype, items) in messages.items():
        times, stamps, order = _times(path, topic, items)
        items = [items[i][1] for i in order]
        if msgtype == JOINT_STATE:
            joint_states[topic] = _joint_states(path, topic, times, items, stamps)
        else:
            odometry[topic] = _odometry(times, items, stamps)
    return RobotLog(path, joint_states, odometry)


def _decoded(path: Path) -> Iterator[tuple[str, str, int, object]]:
    """(topic, message type, receive time in ns, message) of the joint-state and odometry
    messages, in log order; any failure of the libraries becomes an InputError naming the log."""
    if path.is_dir():
        if not (path / "metadata.yaml").is_file():
            raise InputError(path, f"not a ROS 2 bag folder: it has no metadata.yaml (supported: {SUPPORTED})")
        return _bag_messages(path, "ROS 2 bag")
    try:
        with path.open("rb") as handle:
            head = handle.read(len(ROS1_MAGIC))
            handle.seek(max(0, path.stat().st_size - len(MCAP_MAGIC)))
            tail = handle.read()
    except OSError as exc:
        raise InputError(path, f"cannot read robot log ({exc.strerror})") from None
    if path.suffix == ".bag" and head == ROS1_MAGIC:
        return _bag_messages(path, "ROS 1 bag")
    if head.startswith(MCAP_MAGIC[:6]):
        if tail != MCAP_MAGIC:
            raise InputError(path, "truncated MCAP file: it does not end with the MCAP magic")
        return _mcap_messages(path)
    if path.suffix == ".db3" or path.name == "metadata.yaml":
        raise InputError(path, "pass the ROS 2 bag folder (the one holding metadata.yaml), not a file in it")
    raise InputError(path, f"not a supported robot log (supported: {SUPPORTED})")


def _bag_messages(path: Path, kind: str) -> Iterator[tuple[str, str, int, object]]:
    try:
        # Bags without embedded definitions (old rosbag2 sqlite3) are decoded with the latest types.
        with AnyReader([path], default_typestore=get_typestore(Stores.LATEST)) as reader:
            connections = [c for c in reader.connections if c.msgtype in (JOINT_STATE, ODOMETRY)]
            if not connections:  # an empty selection would mean "all topics" to rosbags
                return
            for connection, log_ns, raw in reader.messages(connections=connections):
                yield connection.topic, connection.msgtype, log_ns, reader.deserialize(raw, connection.msgtype)
    except Exception as exc:  # rosbags, sqlite and the decompressors fail with their own exceptions
        raise InputError(path, f"not a readable {kind} ({type(exc).__name__}: {exc})") from None


def _mcap_messages(path: Path) -> Iterator[tuple[str, str, int, object]]:
    stores = {}  # schema id -> typestore of the definitions it embeds
    try:
        with path.open("rb") as handle:
            for schema, channel, message in make_reader(handle).iter_messages(log_time_order=True):
                if schema is None or schema.name not in (JOINT_STATE, ODOMETRY):
                    continue
                if schema.encoding != "ros2msg" or channel.message_encoding != "cdr":
                    raise ValueError(
                        f"topic '{channel.topic}' is {schema.encoding}/{channel.message_encoding}, only ros2msg schemas with cdr messages are supported"
                    )
                if schema.id not in stores:
                    stores[schema.id] = get_typestore(Stores.EMPTY)
                    stores[schema.id].register(get_types_from_msg(schema.data.decode(), schema.name))
                yield channel.topic, schema.name, message.log_time, stores[schema.id].deserialize_cdr(message.data, schema.name)
    except Exception as exc:  # mcap and rosbags fail with their own exceptions
        raise InputError(path, f"not a readable MCAP file ({type(exc).__name__}: {exc})") from None


def _times(path: Path, topic: str, items: list[tuple[int, Any]]) -> tuple[np.ndarray, str, np.ndarray]:
    """(sorted times in s, "header" or "receive", the order that sorts the messages)."""
    stamps = np.array([m.header.stamp.sec * NS + m.header.stamp.nanosec for _, m in items], dtype=np.int64)
    if (stamps == 0).all():
        chosen, source = np.array([log_ns for log_ns, _ in items], dtype=np.int64), "receive"
    else:
        first = int(np.argmax(stamps != 0))
        if (stamps[first:] == 0).any():
            k = first + int(np.argmax(stamps[first:] == 0))
            raise InputError(path, f"topic '{topic}': message {k + 1} has a zero header stamp after stamped messages")
        chosen, source = stamps, "header"
    order = np.argsort(chosen, kind="stable")
    chosen = chosen[order]
    return (chosen // NS).astype(float) + (chosen % NS) * 1e-9, source, order


def _joint_states(path: Path, topic: str, times: np.ndarray, messages: list, stamps: str) -> JointStates:
    names = list(dict.fromkeys(name for m in messages for name in m.name))
    index = {name: i for i, name in enumerate(names)}
    positions = np.full((len(messages), len(names)), np.nan)
    velocities = np.full((len(messages), len(names)), np.nan)
    for k, m in enumerate(messages):
        if len(set(m.name)) != len(m.name):
            raise InputError(path, f"topic '{topic}': a message at t = {times[k]:.9f} s names a joint twice")
        columns = [index[name] for name in m.name]
        for values, out, what in ((m.position, positions, "positions"), (m.velocity, velocities, "velocities")):
            if len(values) not in (0, len(columns)):
                raise InputError(path, f"topic '{topic}': a message at t = {times[k]:.9f} s has {len(m.name)} joint names but {len(values)} {what}")
            if len(values):
                out[k, columns] = values
    has_velocity = any(len(m.velocity) for m in messages)
    return JointStates(times, names, positions, velocities if has_velocity else None, stamps)


def _odometry(times: np.ndarray, messages: list, stamps: str) -> Odometry:
    poses, twists = np.empty((len(messages), 3)), np.empty((len(messages), 3))
    for k, m in enumerate(messages):
        p, q, v, w = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist.linear, m.twist.twist.angular
        yaw = np.arctan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y**2 + q.z**2))
        poses[k] = p.x, p.y, yaw
        twists[k] = v.x, v.y, w.z
    return Odometry(times, poses, twists, stamps)


# ---- writing ----------------------------------------------------------------------------------


def write_robot_log(path: str | Path, joint_states: dict[str, JointStates], odometry: dict[str, Odometry], *, format: str) -> None:
    """Write joint-state and odometry topics as a robot log; header stamp = receive time = the
    series' times (which must be >= 0). `format`: "ros1" (.bag file), "ros2" (rosbag2 folder, mcap
    storage), "ros2-sqlite3" (rosbag2 folder, sqlite3 storage, for distributions before Iron),
    "mcap" (standalone .mcap file, ROS 2 profile). A NaN position omits that joint from its
    message; Odometry poses are written at z = 0 with roll = pitch = 0."""
    if format not in FORMATS:
        raise ValueError(f"unknown robot-log format '{format}' (known: {', '.join(FORMATS)})")
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists already, not overwriting")
    store = get_typestore(Stores.ROS1_NOETIC if format == "ros1" else Stores.ROS2_HUMBLE)
    records = [(topic, JOINT_STATE, ns, msg) for topic, series in joint_states.items() for ns, msg in _joint_state_messages(store, series)]
    records += [(topic, ODOMETRY, ns, msg) for topic, series in odometry.items() for ns, msg in _odometry_messages(store, series)]
    records.sort(key=lambda record: record[2])
    topics = {topic: msgtype for topic, msgtype, _, _ in records}
    if format == "ros1":
        with Ros1Writer(path) as bag1:
            connections = {t: bag1.add_connection(t, msgtype, typestore=store) for t, msgtype in topics.items()}
            for topic, msgtype, ns, msg in records:
                bag1.write(connections[topic], ns, store.serialize_ros1(msg, msgtype))
    elif format.startswith("ros2"):
        storage = StoragePlugin.SQLITE3 if format == "ros2-sqlite3" else StoragePlugin.MCAP
        with Ros2Writer(path, version=Ros2Writer.VERSION_LATEST, storage_plugin=storage) as bag2:
            connections2 = {t: bag2.add_connection(t, msgtype, typestore=store) for t, msgtype in topics.items()}
            for topic, msgtype, ns, msg in records:
                bag2.write(connections2[topic], ns, store.serialize_cdr(msg, msgtype))
    else:
        with path.open("wb") as handle:
            writer = McapWriter(handle)
            writer.start(profile="ros2", library="robocal")
            schemas = {}
            for msgtype in set(topics.values()):
                definition = store.generate_msgdef(msgtype, ros_version=2)[0]
                schemas[msgtype] = writer.register_schema(msgtype, "ros2msg", definition.encode())
            channels = {t: writer.register_channel(t, "cdr", schemas[msgtype]) for t, msgtype in topics.items()}
            for topic, msgtype, ns, msg in records:
                writer.add_message(channels[topic], log_time=ns, data=bytes(store.serialize_cdr(msg, msgtype)), publish_time=ns)
            writer.finish()


def _stamps_ns(times: np.ndarray) -> np.ndarray:
    ns = np.rint(np.asarray(times, dtype=float) * NS).astype(np.int64)
    if np.any(ns < 0):
        raise ValueError("robot-log times must be >= 0 (ROS time stamps are unsigned)")
    return ns


def _header(store, ns: int, seq: int):
    """std_msgs/Header of the store's ROS version (ROS 1 headers also have a sequence number)."""
    header = store.types["std_msgs/msg/Header"]
    stamp = store.types["builtin_interfaces/msg/Time"](sec=ns // NS, nanosec=ns % NS)
    fields = {"seq": seq} if "seq" in header.__dataclass_fields__ else {}
    return header(**fields, stamp=stamp, frame_id="")


def _joint_state_messages(store, series: JointStates) -> Iterator[tuple[int, object]]:
    message = store.types[JOINT_STATE]
    velocities = series.velocities if series.velocities is not None else np.full_like(series.positions, np.nan)
    for k, ns in enumerate(_stamps_ns(series.times)):
        present = ~np.isnan(series.positions[k])
        yield (
            int(ns),
            message(
                header=_header(store, int(ns), k),
                name=[name for name, p in zip(series.names, present) if p],
                position=series.positions[k, present].astype(float),
                velocity=velocities[k, present].astype(float) if series.velocities is not None else np.empty(0),
                effort=np.empty(0),
            ),
        )


def _odometry_messages(store, series: Odometry) -> Iterator[tuple[int, object]]:
    t = store.types
    for k, ns in enumerate(_stamps_ns(series.times)):
        x, y, yaw = series.poses[k]
        vx, vy, wz = series.twists[k]
        pose = t["geometry_msgs/msg/Pose"](
            position=t["geometry_msgs/msg/Point"](x=float(x), y=float(y), z=0.0),
            orientation=t["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=float(np.sin(yaw / 2)), w=float(np.cos(yaw / 2))),
        )
        twist = t["geometry_msgs/msg/Twist"](
            linear=t["geometry_msgs/msg/Vector3"](x=float(vx), y=float(vy), z=0.0),
            angular=t["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=float(wz)),
        )
        yield (
            int(ns),
            t[ODOMETRY](
                header=_header(store, int(ns), k),
                child_frame_id="",
                pose=t["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
                twist=t["geometry_msgs/msg/TwistWithCovariance"](twist=twist, covariance=np.zeros(36)),
            ),
        )
