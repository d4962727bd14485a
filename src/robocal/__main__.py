from robocal.cli import main

main()
