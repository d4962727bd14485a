"""Simulated self-contact data: a "true" robot touching its own bodies along drives planned with
the nominal model (the contact search of the contact-calibration paper, Sec. V; the procedure is
described in `robocal.simulation.contact.search`).

Modules, in the order a search uses them: `scene` (bodies and their batched signed distances),
`kernels` (compiled distance, bisection and torque kernels), `context` (options and the state of a
run), `pair` (a body pair's checks, obstacles and parked chains), `workspace` (random pools and
planned contacts), `planning` (drives the nominal model accepts), `detection` (drives executed on
the true model), `search` (`simulate_contacts`), `results` (`ContactSimulation`), `writer` (the
contact CSV), `dlr_hand` (`robocal simulate contact`) and `urdf_hand` (`robocal simulate contact
--robot HAND.urdf`: fingertips and pairs from a URDF's collisions, its truth perturbed in DH terms).
"""

from robocal.simulation.contact.context import (
    DEFAULT_COLLISION_MARGIN,
    DEFAULT_CONTACT_STIFFNESS,
    DEFAULT_MAX_DRIVE,
    DEFAULT_PARKING_CLEARANCE,
    DEFAULT_POOL_SIZE,
    DEFAULT_START_CLEARANCE,
    DEFAULT_TORQUE_THRESHOLD,
    SearchOptions,
)
from robocal.simulation.contact.dlr_hand import (
    DLR_FINGERS,
    DLR_GEOMETRY,
    DLR_PARAMETERS,
    DLR_ROBOT,
    SIGMA,
    DlrHandContacts,
    dlr_hand_pairs,
    perturbed_dlr_hand,
    simulate_dlr_hand,
)
from robocal.simulation.contact.kernels import all_distances, evaluate
from robocal.simulation.contact.results import FAILURES, REJECTIONS, ContactSample, ContactSimulation
from robocal.simulation.contact.search import simulate_contacts
from robocal.simulation.contact.writer import write_contact_csv

__all__ = [
    "DEFAULT_COLLISION_MARGIN",
    "DEFAULT_CONTACT_STIFFNESS",
    "DEFAULT_MAX_DRIVE",
    "DEFAULT_PARKING_CLEARANCE",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_START_CLEARANCE",
    "DEFAULT_TORQUE_THRESHOLD",
    "DLR_FINGERS",
    "DLR_GEOMETRY",
    "DLR_PARAMETERS",
    "DLR_ROBOT",
    "FAILURES",
    "REJECTIONS",
    "SIGMA",
    "ContactSample",
    "ContactSimulation",
    "DlrHandContacts",
    "SearchOptions",
    "all_distances",
    "dlr_hand_pairs",
    "evaluate",
    "perturbed_dlr_hand",
    "simulate_contacts",
    "simulate_dlr_hand",
    "write_contact_csv",
]
