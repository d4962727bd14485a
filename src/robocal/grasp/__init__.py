"""Multi-contact grasp control of a torque-controlled hand (the DLR-Hand II).

- `hand`: the hand's kinematics, capsules and palm as controller and simulator see them;
- `contacts`: contacts, grasp matrix G and hand Jacobian J;
- `programs`: wrench estimation and torque optimization as convex programs (clarabel);
- `controller`: the grasp controller and its baselines, with the estimator / predictor
  interfaces a learned model plugs into;
- `mjcf`, `objects`, `grasps`, `simulation`: the MuJoCo hand, the test objects, the grasp
  generator and one evaluation trial;
- `evaluation`: the paper's protocol over objects x grasps x forces, metrics and figures.
"""
