from robocal.cli import run

run()
