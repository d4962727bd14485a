"""Mobile bases: planar rigid motions, the differential-drive model, and the closed-form
calibration methods of the platform's case study (odometry from ground truth, laser pose by
AX = XB, both at once from the sensor's own motion, the motion center from motion capture).
The MAP refinement of the same models is the `odometry` measurement (robocal.measurements)."""
